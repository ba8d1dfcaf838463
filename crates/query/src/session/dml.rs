//! SELECT, INSERT, UPDATE and DELETE on the key-value route: in the session's transaction, as one engine
//! call where that is atomic on its own (the fast paths), or in a fresh transaction retried on conflicts.

use sqlparser::ast::Statement;
use tabula_store::{Access, Condition, Store, StoreError, UpdateOp};

use super::Session;
use crate::error::{QueryError, Result};
use crate::exec::{increment_of, Executor};
use crate::expr::Expr;
use crate::output::{Output, RowStream};
use crate::plan::*;
use crate::planner::Planner;
use crate::types::SqlRow;
use crate::types::{Datum, SqlType};

impl Session {
    /// All rows of a query, planned by whichever engine takes it (the source of INSERT ... SELECT).
    pub(super) fn query_rows(&mut self, query: &sqlparser::ast::Query, params: &[Datum]) -> Result<Vec<SqlRow>> {
        Ok(self.subquery_rows(query, params)?.1)
    }

    /// A query's columns and all its rows (a subquery's, see [`crate::subqueries`]).
    pub(super) fn subquery_rows(&mut self, query: &sqlparser::ast::Query, params: &[Datum]) -> Result<(Vec<OutputColumn>, Vec<SqlRow>)> {
        let p = self.prepare_query(query, &vec![None; params.len()])?;
        let params = &params[..p.param_types.len().min(params.len())];
        let out = match (&p.analytic, &p.plan) {
            (Some(a), _) => self.run_analytic(&p, &a.clone(), params)?,
            (None, Some(plan)) => self.run(&plan.clone(), params)?,
            (None, None) => return Ok((p.columns, vec![])),
        };
        let rows = match out {
            Output::Rows { rows, .. } => rows,
            Output::Stream { cursor, .. } => cursor.collect::<Result<_>>()?,
            _ => vec![],
        };
        Ok((p.columns, rows))
    }

    /// Runs a read or write: in the open transaction, straight on the store when one engine call does it
    /// atomically, or in a fresh transaction retried on write conflicts.
    /// `stream`: a SELECT may come back as a cursor that reads as the client consumes.
    pub(super) fn run_dml(&mut self, plan: &Plan, params: &[Datum], stream: bool) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let autocommit_write = self.txn.is_none() && !matches!(plan, Plan::Select(_));
        let out = self.run_dml_once(plan, params, stream)?;
        if autocommit_write {
            self.commit_durably()?;
        }
        Ok(out)
    }

    /// Returns once what this session committed survives a power loss, unless `synchronous_commit` is off:
    /// then the store's background sync makes it durable within its interval, as PostgreSQL's WAL writer does.
    pub(super) fn commit_durably(&self) -> Result<()> {
        if self.settings.get("synchronous_commit").map(String::as_str) != Some("off") {
            self.db.store().sync_wal()?;
        }
        Ok(())
    }

    pub(super) fn run_dml_once(&mut self, plan: &Plan, params: &[Datum], stream: bool) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let now_us = self.db.store().clock().now_ms() * 1000;
        if let (Plan::Select(s), true) = (plan, stream) {
            // Rows stream from the latest data outside a transaction, and from its snapshot in one that has
            // not written (which is all it would read). Rows read FOR UPDATE in a transaction go through it.
            let reader: Option<crate::cursor::Reader> = match &self.txn {
                None => Some(self.db.store().clone()),
                Some(_) if s.lock => None,
                Some(txn) => txn.read_view().map(|v| v as crate::cursor::Reader),
            };
            if let Some(reader) = reader {
                let cursor = crate::cursor::Cursor::try_new(
                    reader,
                    s,
                    params,
                    now_us,
                    [self.current_user(), &self.user, &self.database],
                    &self.interrupt,
                )?;
                if let Some(cursor) = cursor {
                    return Ok((Output::Stream { columns: s.columns.clone(), cursor: RowStream::new(cursor) }, None));
                }
            }
        }
        if let Some(txn) = &self.txn {
            return self.exec_on(txn, plan, params, now_us);
        }
        if let Some(fast) = self.fast_upsert(plan, params, now_us)? {
            return Ok((fast, None));
        }
        if let Some(fast) = self.fast_update(plan, params, now_us)? {
            return Ok((fast, None));
        }
        if single_call(plan) {
            let store = self.db.store().clone();
            return self.exec_on_store(store.as_ref(), plan, params, now_us);
        }
        tabula_store::retry::on_conflict(
            || {
                let txn = self.db.store().begin();
                let o = self.exec_on(&txn, plan, params, now_us)?;
                txn.commit()?;
                Ok(o)
            },
            |e| matches!(e, QueryError::SerializationFailure),
        )
    }

    /// Runs on committed data, outside any transaction: full scans may read partitions in parallel.
    pub(super) fn exec_on_store(
        &self,
        store: &Store,
        plan: &Plan,
        params: &[Datum],
        now_us: i64,
    ) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let mut ex = Executor::new(store, self.ctx(params, now_us), &self.interrupt);
        ex.store = Some(store);
        ex.system = Some(store);
        self.exec_with(ex, plan)
    }

    pub(super) fn exec_on(
        &self,
        access: &dyn Access,
        plan: &Plan,
        params: &[Datum],
        now_us: i64,
    ) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let mut ex = Executor::new(access, self.ctx(params, now_us), &self.interrupt);
        ex.system = Some(self.db.store().as_ref());
        self.exec_with(ex, plan)
    }

    pub(super) fn exec_with(&self, ex: Executor, plan: &Plan) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let out = match plan {
            Plan::Select(s) => {
                let rows = ex.select(s)?;
                Output::Rows { columns: s.columns.clone(), tag: format!("SELECT {}", rows.len()), rows }
            }
            Plan::Insert(i) => {
                let (n, rows) = ex.insert(i)?;
                dml_output(format!("INSERT 0 {n}"), &i.returning, rows)
            }
            Plan::Update(u) => {
                let (n, rows) = ex.update(u)?;
                dml_output(format!("UPDATE {n}"), &u.returning, rows)
            }
            Plan::Delete(d) => {
                let (n, rows) = ex.delete(d)?;
                dml_output(format!("DELETE {n}"), &d.returning, rows)
            }
            _ => return Err(QueryError::Internal("not a DML plan".into())),
        };
        Ok((out, Some(ex.stats.get())))
    }

    /// A one-row `INSERT ... ON CONFLICT (key) DO UPDATE SET c = <EXCLUDED values> | c = c + k`: one engine
    /// write that inserts the row or updates the stored one, instead of a transaction that tries, reads
    /// and updates.
    pub(super) fn fast_upsert(&self, plan: &Plan, params: &[Datum], now_us: i64) -> Result<Option<Output>> {
        let Plan::Insert(i) = plan else { return Ok(None) };
        let OnConflict::DoUpdate { assignments, filter: None, version: None } = &i.on_conflict else { return Ok(None) };
        if i.rows.len() != 1 || i.returning.is_some() {
            return Ok(None);
        }
        let t = &i.table;
        let n = t.columns.len();
        let ctx = self.ctx(params, now_us);
        let values = i.rows[0].iter().map(|e| e.eval(&[], &ctx)).collect::<Result<Vec<_>>>()?;
        let prepared = crate::exec::prepare_row(t, &i.targets, values)?;
        let Some(pk) = prepared.pk.iter().cloned().collect::<Option<Vec<_>>>() else { return Ok(None) };
        // Assignments may read EXCLUDED (columns after the stored row and its _version), or add to themselves.
        let mut combined = vec![Datum::Null; n + 1];
        combined.extend(prepared.row.iter().take(n).cloned());
        let mut ops = Vec::with_capacity(assignments.len());
        for (col, e) in assignments {
            let name = t.columns[*col].name.clone();
            if let (Some(k), None) = (crate::exec::increment_of(e, *col), prepared.version) {
                // Adding NULL gives NULL: left to the general path.
                if let Some(k) = k.eval(&[], &ctx)?.cast(SqlType::Int8)?.as_int() {
                    ops.push((name, UpdateOp::Add(k)));
                    continue;
                }
            }
            let mut reads = Vec::new();
            e.columns(&mut reads);
            if reads.iter().any(|&c| c <= n) {
                return Ok(None);
            }
            let v = e.eval(&combined, &ctx)?.cast(t.column_type(*col))?;
            if v.is_null() && t.columns[*col].not_null {
                return Err(QueryError::NotNull { table: t.name.clone(), column: name });
            }
            ops.push((
                name,
                match v.to_value() {
                    Some(value) => UpdateOp::Put { value, version: prepared.version },
                    None => UpdateOp::DeleteAll,
                },
            ));
        }
        self.db.store().upsert_row(&t.name, &pk, &prepared.cells, &ops)?;
        Ok(Some(Output::Command { tag: "INSERT 0 1".into() }))
    }

    /// `UPDATE t SET c = const | c = c + k ... WHERE <full key>`: one conditional engine write, no read.
    pub(super) fn fast_update(&self, plan: &Plan, params: &[Datum], now_us: i64) -> Result<Option<Output>> {
        let Plan::Update(u) = plan else { return Ok(None) };
        let AccessPath::PointGet { key } = &u.scan.access else { return Ok(None) };
        if u.returning.is_some() {
            return Ok(None);
        }
        let t = &u.scan.table;
        let ctx = self.ctx(params, now_us);
        // Column predicates become the engine's column condition, checked inside the one row write.
        let column = match &u.scan.filter {
            None => None,
            Some(f) => match crate::exec::column_condition(t, f, &ctx)? {
                Some(c) => Some(c),
                None => return Ok(None),
            },
        };
        let version =
            u.version.as_ref().map(|e| e.eval(&[], &ctx)).transpose()?.map(|d| d.cast(SqlType::Int8)).transpose()?.and_then(|d| d.as_int());
        let mut ops = Vec::new();
        for (col, e) in &u.assignments {
            let name = t.columns[*col].name.clone();
            let k = match (increment_of(e, *col), version) {
                (Some(k), None) => k.eval(&[], &ctx)?.cast(SqlType::Int8)?.as_int(),
                _ => None,
            };
            if let Some(k) = k {
                ops.push((name, UpdateOp::Add(k)));
            } else if e.is_constant() {
                let v = e.eval(&[], &ctx)?.cast(t.column_type(*col))?;
                if v.is_null() && t.columns[*col].not_null {
                    return Err(QueryError::NotNull { table: t.name.clone(), column: name });
                }
                ops.push((
                    name,
                    match v.to_value() {
                        Some(value) => UpdateOp::Put { value, version },
                        None => UpdateOp::DeleteAll,
                    },
                ));
            } else {
                return Ok(None);
            }
        }
        let mut pk = Vec::new();
        for (pos, e) in key.iter().enumerate() {
            let ty = t.column_type(t.pk[pos]);
            let d = e.eval(&[], &ctx)?;
            if d.is_null() {
                return Ok(Some(Output::Command { tag: "UPDATE 0".into() }));
            }
            let d = if matches!(d, Datum::Int(_)) && ty.is_integer() { d } else { d.cast(ty)? };
            match d.to_pk(ty) {
                Some(v) => pk.push(v),
                None => return Ok(Some(Output::Command { tag: "UPDATE 0".into() })),
            }
        }
        let cond = Condition { row: tabula_store::RowExistence::ExpectExist, column };
        match self.db.store().update_row(&t.name, &pk, &ops, &cond) {
            Ok(_) => Ok(Some(Output::Command { tag: "UPDATE 1".into() })),
            Err(StoreError::RowNotFound | StoreError::ConditionFailed(_)) => Ok(Some(Output::Command { tag: "UPDATE 0".into() })),
            Err(e) => Err(e.into()),
        }
    }

    /// An UPDATE or DELETE with subqueries: they run first, and the statement is planned with their results.
    pub(super) fn with_subqueries(&mut self, statement: &Statement, param_types: &[SqlType], params: &[Datum]) -> Result<Output> {
        let stmt = crate::subqueries::substitute(statement, |q| self.subquery_rows(q, params))?;
        let plan = Planner::new(self.db.as_ref(), param_types.to_vec()).plan(&stmt)?;
        self.run(&plan, params)
    }

    /// `INSERT ... SELECT`: the query's rows, then one INSERT of them.
    pub(super) fn insert_select(
        &mut self,
        insert: &InsertPlan,
        query: &sqlparser::ast::Query,
        defaults: &[Expr],
        params: &[Datum],
    ) -> Result<Output> {
        let rows = self.query_rows(query, params)?;
        let width = insert.targets.len() - defaults.len();
        if let Some(r) = rows.iter().find(|r| r.len() != width) {
            let more = if r.len() > width { "expressions than target columns" } else { "target columns than expressions" };
            return Err(QueryError::Syntax(format!("INSERT has more {more}")));
        }
        let mut insert = insert.clone();
        insert.rows = rows
            .into_iter()
            .map(|r| {
                let given = r.into_iter().zip(&insert.targets).map(|(d, &t)| Expr::Literal(d, insert.table.column_type(t)));
                given.chain(defaults.iter().cloned()).collect()
            })
            .collect();
        self.run_dml(&Plan::Insert(insert), params, false).map(|(o, _)| o)
    }
}

/// Statements one engine call does atomically: reads, and single-row inserts without DO UPDATE.
fn single_call(plan: &Plan) -> bool {
    match plan {
        Plan::Select(_) => true,
        // A plain multi-row INSERT is one atomic engine call too.
        Plan::Insert(i) => match i.on_conflict {
            OnConflict::Error => true,
            OnConflict::DoNothing { .. } => i.rows.len() == 1,
            OnConflict::DoUpdate { .. } => false,
        },
        _ => false,
    }
}

fn dml_output(tag: String, returning: &Option<Returning>, rows: Vec<SqlRow>) -> Output {
    match returning {
        Some(r) => Output::Rows { columns: r.columns.clone(), rows, tag },
        None => Output::Command { tag },
    }
}
