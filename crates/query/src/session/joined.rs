//! UPDATE ... FROM and DELETE ... USING in the session: the join's query, then one keyed write per row,
//! in one transaction (see [`crate::joined`]).

use std::collections::HashSet;

use sqlparser::ast::{Statement, TableFactor};

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::plan::{JoinedWrite, Plan};
use crate::planner::{Catalog, Planner};
use crate::types::{Datum, SqlType};

/// How many times a joined write outside a transaction block runs again after a serialization failure,
/// as a statement's own transaction is retried.
const RETRIES: usize = 8;

impl Session {
    /// Plans a joined write: its query is prepared as any query (for its parameters' types); its keyed
    /// write is planned once, its values and key typed by the columns they go to. The statement's
    /// parameters, as the query types them.
    pub(super) fn plan_joined(
        &self,
        stmt: &Statement,
        given: &[Option<SqlType>],
        view_checks: Vec<crate::view_writes::ViewCheck>,
    ) -> Result<(Plan, Vec<SqlType>)> {
        let (target, _) = crate::joined::target(stmt).ok_or_else(|| QueryError::Internal("not a joined write".into()))?;
        let TableFactor::Table { name, .. } = &target.relation else {
            return Err(QueryError::NotSupported("only plain tables can be updated".into()));
        };
        let table = self.db.table(&crate::schema::table_name(name))?;
        let columns_of = |name: &str| self.db.table(name).ok().map(|t| t.visible().iter().map(|c| c.name.clone()).collect());
        let split = crate::joined::split(stmt, &table, &columns_of)?;
        if let Some(probe) = &split.probe {
            self.prepare_query(probe, given)?;
        }
        let query = self.prepare_query(&split.query, given)?;
        let mut params = query.param_types;
        params.resize(split.params.max(params.len()), SqlType::Text);
        // RETURNING's values from the other tables have the types the query gives them.
        let mut write_params = params.clone();
        let first = query.columns.len() - split.returned;
        let before = split.params + split.targets.len() + split.keys;
        write_params.resize(before, SqlType::Unknown);
        write_params.extend(query.columns[first..].iter().map(|c| c.ty));
        let mut planner = Planner::new(self.db.as_ref(), write_params);
        planner.zone = self.zone();
        // A view's CHECK OPTION is checked on each row the write changes.
        if view_checks.iter().any(|c| crate::subqueries::holds_subquery(&c.condition)) {
            return Err(QueryError::FeatureNotSupported(
                "an UPDATE ... FROM through a view WITH CHECK OPTION whose condition has a subquery".into(),
            ));
        }
        planner.view_checks = view_checks;
        let write = planner.plan(&split.write)?;
        super::dml::checks_taken(&planner)?;
        let write_types: Vec<SqlType> = planner.params.iter().map(|t| if *t == SqlType::Unknown { SqlType::Text } else { *t }).collect();
        // What the join computes must be assignable to its column, as any UPDATE's value.
        for (((column, untyped), from), to) in split.targets.iter().zip(&query.columns[split.keys..]).zip(&write_types[split.params..]) {
            if !untyped && !crate::planner::assignable(from.ty, *to) {
                return Err(QueryError::DatatypeMismatch(format!(
                    "column \"{column}\" is of type {to} but expression is of type {}",
                    from.ty
                )));
            }
        }
        let joined =
            JoinedWrite { query: split.query, write, write_types, keys: split.keys, params: split.params, returned: split.returned };
        Ok((Plan::Joined(Box::new(joined)), params))
    }

    /// Runs a joined write: in the session's transaction, or in one of its own retried on serialization
    /// failures (the statement is atomic either way).
    pub(super) fn run_joined(&mut self, j: &JoinedWrite, params: &[Datum]) -> Result<Output> {
        if self.txn.is_some() {
            return self.joined_rows(j, params);
        }
        let mut attempt = 0;
        loop {
            self.txn = Some(self.db.store().begin_with_view());
            let result = self.joined_rows(j, params);
            let end = if result.is_ok() { Plan::Commit } else { Plan::Rollback };
            let ended = self.run(&end, &[]);
            match (result, ended) {
                (Ok(out), Ok(_)) => return Ok(out),
                (Err(QueryError::SerializationFailure), _) | (Ok(_), Err(QueryError::SerializationFailure)) if attempt < RETRIES => {
                    attempt += 1;
                }
                (Err(e), _) | (Ok(_), Err(e)) => return Err(e),
            }
        }
    }

    fn joined_rows(&mut self, j: &JoinedWrite, params: &[Datum]) -> Result<Output> {
        let (_, rows) = self.subquery_rows(&j.query, params)?;
        let mut written = HashSet::new();
        let (mut count, mut returned, mut columns) = (0u64, Vec::new(), None);
        for row in rows {
            self.interrupt.check()?;
            let (key, values) = row.split_at(j.keys);
            let (values, foreign) = values.split_at(values.len() - j.returned);
            // A row the join matches again keeps what the first match wrote.
            if !written.insert(format!("{key:?}")) {
                continue;
            }
            let mut p = params.to_vec();
            p.resize(j.params, Datum::Null);
            for (d, ty) in values.iter().chain(key).chain(foreign).zip(&j.write_types[j.params..]) {
                p.push(d.clone().cast(*ty)?);
            }
            match self.run_dml_once(&j.write, &p, false)?.0 {
                Output::Command { tag } => count += affected(&tag),
                Output::Rows { columns: c, rows, tag } => {
                    count += affected(&tag);
                    returned.extend(rows);
                    columns = Some(c);
                }
                _ => return Err(QueryError::Internal("a keyed write answered a stream".into())),
            }
        }
        let verb = if matches!(j.write, Plan::Delete(_)) { "DELETE" } else { "UPDATE" };
        let tag = format!("{verb} {count}");
        let columns = columns.unwrap_or_else(|| j.write.output_columns());
        Ok(if columns.is_empty() { Output::Command { tag } } else { Output::Rows { columns, rows: returned, tag } })
    }
}

/// The row count of a command tag (`UPDATE 3`).
fn affected(tag: &str) -> u64 {
    tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}
