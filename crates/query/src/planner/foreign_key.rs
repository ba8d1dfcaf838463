//! FOREIGN KEY constraints, resolved against their parent when declared: the parent's primary key or the
//! columns of one of its UNIQUE indexes, of compatible types, named as PostgreSQL names them.

use sqlparser::ast::{ConstraintReferenceMatchKind, DeferrableInitial, ReferentialAction};

use super::*;
use crate::schema::{FkAction, ForeignKey};

impl Planner<'_> {
    /// A FOREIGN KEY of table `t` (`column`: the column whose REFERENCES declared it), checked against its
    /// parent (`t` itself when it names `t`) and named: given a name, it must be free among the table's
    /// constraints (42710); without one, `<table>_<columns>_fkey`, numbered from 1 while taken.
    pub(super) fn fk_def(
        &mut self,
        t: &TableSchema,
        c: &ast::ForeignKeyConstraint,
        column: Option<&str>,
        taken: &[String],
    ) -> Result<ForeignKey> {
        // PostgreSQL has not built MATCH PARTIAL either (0A000).
        if matches!(c.match_kind, Some(ConstraintReferenceMatchKind::Partial)) {
            return Err(QueryError::NotSupported("MATCH PARTIAL not yet implemented".into()));
        }
        let match_full = matches!(c.match_kind, Some(ConstraintReferenceMatchKind::Full));
        let action = |a: Option<ReferentialAction>| -> Result<FkAction> {
            match a {
                None | Some(ReferentialAction::NoAction) => Ok(FkAction::NoAction),
                Some(ReferentialAction::Restrict) => Ok(FkAction::Restrict),
                Some(ReferentialAction::Cascade) => Ok(FkAction::Cascade),
                Some(ReferentialAction::SetNull) => Ok(FkAction::SetNull),
                Some(ReferentialAction::SetDefault) => Ok(FkAction::SetDefault),
            }
        };
        let (on_delete, on_update) = (action(c.on_delete)?, action(c.on_update)?);
        let ch = c.characteristics.unwrap_or_default();
        if ch.enforced == Some(false) {
            return Err(QueryError::NotSupported("FOREIGN KEY ... NOT ENFORCED".into()));
        }
        let initially_deferred = ch.initially == Some(DeferrableInitial::Deferred);
        if initially_deferred && ch.deferrable == Some(false) {
            return Err(QueryError::Syntax("constraint declared INITIALLY DEFERRED must be DEFERRABLE".into()));
        }
        let deferrable = ch.deferrable.unwrap_or(initially_deferred);
        if deferrable && on_delete == FkAction::Restrict {
            return Err(QueryError::Syntax("a RESTRICT foreign key cannot be deferrable".into()));
        }
        let columns: Vec<String> = match column {
            Some(col) if c.columns.is_empty() => vec![col.to_string()],
            _ => c.columns.iter().map(ident_name).collect(),
        };
        let missing = |col: &str| QueryError::UndefinedColumn(format!("{col}\" referenced in foreign key constraint does not exist"));
        let child_cols =
            columns.iter().map(|n| t.visible().iter().position(|d| d.name == *n).ok_or_else(|| missing(n))).collect::<Result<Vec<_>>>()?;
        let parent_name = object_name(&c.foreign_table);
        let parent = if parent_name == t.name { Arc::new(t.clone()) } else { self.catalog.table(&parent_name)? };
        let parent_columns: Vec<String> = if c.referred_columns.is_empty() {
            if parent.keyless() {
                return Err(QueryError::Engine {
                    sqlstate: "42830",
                    message: format!("there is no primary key for referenced table \"{parent_name}\""),
                });
            }
            parent.pk.iter().map(|&i| parent.columns[i].name.clone()).collect()
        } else {
            c.referred_columns.iter().map(ident_name).collect()
        };
        let parent_cols = parent_columns
            .iter()
            .map(|n| parent.visible().iter().position(|d| d.name == *n).ok_or_else(|| missing(n)))
            .collect::<Result<Vec<_>>>()?;
        if parent_cols.len() != child_cols.len() {
            return Err(QueryError::Engine {
                sqlstate: "42830",
                message: "number of referencing and referenced columns for foreign key disagree".into(),
            });
        }
        let same_set = |a: &[usize]| {
            let (mut a, mut b) = (a.to_vec(), parent_cols.clone());
            a.sort_unstable();
            b.sort_unstable();
            a == b
        };
        if !same_set(&parent.pk) && !parent.indexes.iter().any(|i| i.unique && same_set(&i.columns)) {
            return Err(QueryError::Engine {
                sqlstate: "42830",
                message: format!("there is no unique constraint matching given keys for referenced table \"{parent_name}\""),
            });
        }
        let stem = || format!("{}_{}", t.name, columns.join("_"));
        let name = super::check::constraint_name(&t.name, c.name.as_ref(), stem, "fkey", taken)?;
        for (&a, &b) in child_cols.iter().zip(&parent_cols) {
            let (ta, tb) = (t.column_type(a), parent.column_type(b));
            if !(ta == tb || (ta.is_integer() && tb.is_integer()) || (ta.is_text() && tb.is_text())) {
                return Err(QueryError::Engine {
                    sqlstate: "42804",
                    message: format!("foreign key constraint \"{name}\" cannot be implemented"),
                }
                .with_message(format!(
                    "Key columns \"{}\" and \"{}\" are of incompatible types: {ta} and {tb}.",
                    t.column_name(a),
                    parent.column_name(b)
                )));
            }
        }
        Ok(ForeignKey {
            name,
            columns,
            parent: parent_name,
            parent_columns,
            on_delete,
            on_update,
            deferrable,
            initially_deferred,
            match_full,
        })
    }
}
