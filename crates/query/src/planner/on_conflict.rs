//! INSERT's ON CONFLICT clause: which unique constraints arbitrate (PostgreSQL's arbiter indexes, inferred
//! from a column list or named by `ON CONSTRAINT`), and DO UPDATE's assignments and WHERE.

use super::*;

impl Planner<'_> {
    pub(super) fn on_conflict(&mut self, table: &TableSchema, alias: Option<&str>, oc: &ast::OnConflict) -> Result<OnConflict> {
        let arbiters = oc.conflict_target.as_ref().map(|target| arbiters(table, target)).transpose()?;
        let du = match &oc.action {
            ast::OnConflictAction::DoNothing => return Ok(OnConflict::DoNothing { arbiters }),
            ast::OnConflictAction::DoUpdate(du) => du,
        };
        let Some(arbiters) = arbiters else {
            return Err(QueryError::Syntax("ON CONFLICT DO UPDATE requires inference specification or constraint name".into()));
        };
        // Existing row's columns first, then `excluded`'s.
        let offset = table.columns.len() + 1;
        let name = alias.map_or_else(|| tabula_store::value::public_part(&table.name).to_string(), str::to_string);
        let scope = Scope { tables: vec![(table, name, 0), (table, "excluded".to_string(), offset)] };
        let (version, assignments): (Vec<_>, Vec<_>) =
            self.assignments(&scope, table, &du.assignments)?.into_iter().partition(|(c, _)| *c == table.columns.len());
        let version = version.into_iter().next().map(|(_, e)| e);
        let filter = du.selection.as_ref().map(|w| self.predicate(&scope, w)).transpose()?;
        Ok(OnConflict::DoUpdate { arbiters, assignments, filter, version })
    }
}

/// The unique constraints a conflict target names. A column list infers, as PostgreSQL does, every unique
/// constraint (the primary key, a unique index usable by reads) whose columns are exactly those, in any
/// order; 42P10 when there is none. `ON CONSTRAINT` names the primary key or a UNIQUE constraint (a unique
/// index made by CREATE UNIQUE INDEX is not a constraint: 42704, as PostgreSQL says).
fn arbiters(table: &TableSchema, target: &ast::ConflictTarget) -> Result<Arbiters> {
    let has_key = !table.keyless();
    match target {
        ast::ConflictTarget::Columns(cols) => {
            let mut named = Vec::with_capacity(cols.len());
            for c in cols {
                let n = ident_name(c);
                let i = table.column_index(&n).filter(|&i| table.columns[i].hidden.is_none());
                named.push(i.ok_or(QueryError::UndefinedColumn(n))?);
            }
            named.sort_unstable();
            named.dedup();
            let same = |columns: &[usize]| {
                let mut columns = columns.to_vec();
                columns.sort_unstable();
                columns.dedup();
                columns == named
            };
            let arbiters = Arbiters {
                key: has_key && same(&table.pk),
                indexes: (0..table.indexes.len())
                    .filter(|&i| table.indexes[i].unique && table.indexes[i].ready && same(&table.indexes[i].columns))
                    .collect(),
            };
            if !arbiters.key && arbiters.indexes.is_empty() {
                return Err(QueryError::Engine {
                    sqlstate: "42P10",
                    message: "there is no unique or exclusion constraint matching the ON CONFLICT specification".into(),
                });
            }
            Ok(arbiters)
        }
        ast::ConflictTarget::OnConstraint(name) => {
            let name = object_name(name);
            let name = tabula_store::value::public_part(&name);
            if has_key && name == format!("{}_pkey", tabula_store::value::public_part(&table.name)) {
                return Ok(Arbiters { key: true, indexes: vec![] });
            }
            if let Some(i) = table.indexes.iter().position(|ix| ix.constraint && ix.name == name) {
                return Ok(Arbiters { key: false, indexes: vec![i] });
            }
            if table.checks.iter().any(|c| c.name == name) || table.foreign_keys.iter().any(|f| f.name == name) {
                return Err(QueryError::Engine {
                    sqlstate: "42809",
                    message: "constraint in ON CONFLICT clause has no associated index".into(),
                });
            }
            Err(QueryError::Engine {
                sqlstate: "42704",
                message: format!("constraint \"{name}\" for table \"{}\" does not exist", tabula_store::value::public_part(&table.name)),
            })
        }
    }
}
