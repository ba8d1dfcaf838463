//! `ALTER TABLE ... ALTER COLUMN c TYPE t [USING expr]` between types stored differently: the table is
//! rebuilt with each version of the column's cells converted (`Store::rebuild_converting`), its indexes
//! built again; in a transaction, undone with it. The first value that does not convert fails the
//! statement with its own error (22P02, 22001, 22003, ...), and the table is left as it was. The foreign
//! keys of the column are checked again over the converted rows. A USING may read the row's other columns
//! (their newest values).

use super::Session;
use crate::error::{QueryError, Result};
use crate::expr::Expr;
use crate::foreign_key::ForeignKey;
use crate::output::Output;
use crate::planner::Catalog;
use crate::schema::ColumnDef;
use crate::types::{Datum, SqlType};
use tabula_store::{Convert, RebuildError};

impl Session {
    /// The conversion, then each foreign key the column is part of, on either side, checked again over the
    /// converted rows (23503), as PostgreSQL adds such keys back after its rewrite. With foreign keys to
    /// check, a statement outside a transaction block runs in a transaction of its own, so that a failed
    /// check leaves the table as it was.
    pub(super) fn convert_column(
        &mut self,
        table: &str,
        column: &str,
        ty: SqlType,
        max_chars: Option<u32>,
        numeric: Option<(u32, u32)>,
        using: Option<&Expr>,
    ) -> Result<Output> {
        self.not_under_a_view(table, "ALTER COLUMN TYPE")?;
        let schema = self.db.table(table)?;
        let mut keys: Vec<(String, ForeignKey)> = schema
            .foreign_keys
            .iter()
            .filter(|fk| fk.columns.iter().any(|c| c == column))
            .map(|fk| (table.to_string(), fk.clone()))
            .collect();
        for (child, f) in self.db.referencing(table)? {
            let fk = &child.foreign_keys[f];
            if fk.parent_columns.iter().any(|c| c == column) && !keys.iter().any(|(t, k)| *t == child.name && k.name == fk.name) {
                keys.push((child.name.clone(), fk.clone()));
            }
        }
        let own = self.txn.is_none() && !keys.is_empty();
        if own {
            self.txn = Some(self.db.store().begin());
        }
        let done = self.convert_rows(table, column, ty, max_chars, numeric, using).and_then(|out| {
            keys.iter().try_for_each(|(child, fk)| self.verify_foreign_key(child, fk))?;
            Ok(out)
        });
        if !own {
            return done;
        }
        let t = self.txn.take().expect("the statement's own transaction");
        let ended = match &done {
            Ok(_) => t.commit(),
            Err(_) => t.rollback(),
        };
        self.db.invalidate();
        let out = done?;
        ended?;
        Ok(out)
    }

    fn convert_rows(
        &mut self,
        table: &str,
        column: &str,
        ty: SqlType,
        max_chars: Option<u32>,
        numeric: Option<(u32, u32)>,
        using: Option<&Expr>,
    ) -> Result<Output> {
        let schema = self.db.table(table)?;
        let i = schema.column_index(column).ok_or_else(|| QueryError::UndefinedColumn(column.to_string()))?;
        let old = schema.columns[i].ty;
        let new = ColumnDef { ty, max_chars, numeric, ..schema.columns[i].clone() };
        let mut altered = (*schema).clone();
        altered.columns[i] = new.clone();
        let mut def = self.db.store().table(table)?;
        def.user_meta = altered.encode();
        // A key column's values become keys of the new type.
        for k in def.primary_key.iter_mut().filter(|k| k.name == column) {
            k.ty = ty.pk_type().ok_or_else(|| QueryError::Internal(format!("key column \"{column}\" of type {ty}")))?;
        }
        let now_us = self.db.store().clock().now_ms() * 1000;
        let width = schema.columns.len() + 1;
        // The context owns its strings, so the session stays free for the rebuild; a USING that draws from
        // a sequence is refused there (0A000).
        let (user, session_user, database) = (self.current_user().to_string(), self.user.clone(), self.database.clone());
        let result = {
            let ctx = crate::expr::EvalCtx {
                params: &[],
                now_us,
                user: &user,
                session_user: &session_user,
                database: &database,
                zone: self.zone(),
                sequences: None,
            };
            // The other columns a USING reads, with their types.
            let mut reads = Vec::new();
            if let Some(e) = using {
                e.columns(&mut reads);
            }
            reads.sort_unstable();
            reads.dedup();
            reads.retain(|&j| j != i && j < schema.columns.len());
            let reads: Vec<(usize, &str, SqlType)> =
                reads.iter().map(|&j| (j, schema.columns[j].name.as_str(), schema.columns[j].ty)).collect();
            type Other<'o> = &'o dyn Fn(&str) -> Option<tabula_store::value::Value>;
            let convert =
                |v: &tabula_store::value::Value, other: Other| -> std::result::Result<_, Box<dyn std::error::Error + Send + Sync>> {
                    let d = Datum::from_value(v, old)?;
                    let d = match using {
                        Some(e) => {
                            let mut row = vec![Datum::Null; width];
                            row[i] = d;
                            for &(j, name, ty) in &reads {
                                if let Some(v) = other(name) {
                                    row[j] = Datum::from_value(&v, ty)?;
                                }
                            }
                            e.eval(&row, &ctx)?
                        }
                        None => d,
                    };
                    Ok(new.fit(d)?.to_value())
                };
            let convert = Convert { column, f: &convert };
            self.ddl().rebuild_converting(def, &convert)
        };
        self.db.invalidate();
        match result {
            Ok(()) => Ok(Output::Command { tag: "ALTER TABLE".into() }),
            Err(RebuildError::Convert(e)) => match e.downcast::<QueryError>() {
                Ok(q) => Err(*q),
                Err(e) => Err(QueryError::Internal(e.to_string())),
            },
            Err(RebuildError::Store(e)) => Err(e.into()),
            // A key column's values that collide, or went NULL, once converted: PostgreSQL's errors.
            Err(RebuildError::Null(c)) => Err(QueryError::Engine {
                sqlstate: "23502",
                message: format!("column \"{c}\" of relation \"{table}\" contains null values"),
            }),
            Err(RebuildError::Duplicate(key)) => {
                let names: Vec<&str> = schema.pk.iter().map(|&c| altered.columns[c].name.as_str()).collect();
                let values: Vec<String> = key
                    .iter()
                    .zip(&schema.pk)
                    .map(|(v, &c)| Datum::from_pk(v).to_pg_text(altered.columns[c].ty).unwrap_or_default())
                    .collect();
                Err(QueryError::Engine { sqlstate: "23505", message: format!("could not create unique index \"{table}_pkey\"") }
                    .with_message(format!("Key ({})=({}) is duplicated.", names.join(", "), values.join(", "))))
            }
        }
    }
}
