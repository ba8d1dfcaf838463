//! SELECT, INSERT, UPDATE and DELETE on the key-value route: in the session's transaction, as one engine
//! call where the plan's [`WriteCall`] says that is atomic on its own, or in a fresh transaction retried on
//! conflicts.

use std::sync::Arc;

use sqlparser::ast::Statement;
use tabula_store::{Access, Store};

use super::{ReadFrom, Route, Session};
use crate::cursor::Cursor;
use crate::error::{QueryError, Result};
use crate::exec::Executor;
use crate::exec::Reader;
use crate::expr::Expr;
use crate::output::{Output, RowStream};
use crate::plan::*;
use crate::planner::Planner;
use crate::types::SqlRow;
use crate::types::{Datum, SqlType};
use crate::view_writes::ViewCheck;

impl Session {
    /// All rows of a query, planned by whichever engine takes it (the source of INSERT ... SELECT).
    pub(super) fn query_rows(&mut self, query: &sqlparser::ast::Query, params: &[Datum]) -> Result<Vec<SqlRow>> {
        Ok(self.subquery_rows(query, params)?.1)
    }

    /// A query's columns and all its rows (a subquery's, see [`crate::subqueries`]).
    pub(super) fn subquery_rows(&mut self, query: &sqlparser::ast::Query, params: &[Datum]) -> Result<(Vec<OutputColumn>, Vec<SqlRow>)> {
        let p = self.prepare_query(query, &vec![None; params.len()])?;
        let params = &params[..p.param_types.len().min(params.len())];
        let out = match &p.route {
            Some(Route::Analytic { plan, .. }) => self.run_analytic(&p, &plan.clone(), params)?,
            Some(Route::KeyValue(plan)) => self.run(&plan.clone(), params)?,
            None => return Ok((p.columns, vec![])),
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
            let reader: Option<Reader> = match self.read_from() {
                ReadFrom::Store => Some(self.db.store().clone()),
                ReadFrom::Snapshot(view) => Some(view),
                ReadFrom::Txn => None,
            };
            if let (true, Some(reader)) = (s.stream, reader) {
                let names = [self.current_user(), &self.user, &self.database];
                let cursor = Cursor::new(reader, s, params, now_us, self.zone(), names, &self.interrupt)?;
                return Ok((Output::Stream { columns: s.columns.clone(), cursor: RowStream::new(cursor) }, None));
            }
        }
        if let Some(txn) = &self.txn {
            return self.exec_on(txn, plan, params, now_us);
        }
        let call = match plan {
            Plan::Insert(i) => i.call,
            Plan::Update(u) => u.call,
            Plan::Select(_) => WriteCall::Single,
            _ => WriteCall::ReadModifyWrite,
        };
        let store = self.db.store().clone();
        let ctx = self.ctx(params, now_us);
        // The one-call writes the planner chose; `None`: a NULL value they cannot express, the general path.
        let done = match (plan, call) {
            (Plan::Insert(i), WriteCall::Upsert) => crate::exec::upsert(&store, i, &ctx)?.map(|n| format!("INSERT 0 {n}")),
            (Plan::Update(u), WriteCall::KeyUpdate) => crate::exec::key_update(&store, u, &ctx)?.map(|n| format!("UPDATE {n}")),
            _ => None,
        };
        if let Some(tag) = done {
            return Ok((Output::Command { tag }, None));
        }
        if call == WriteCall::Single {
            return self.exec_on_store(&store, plan, params, now_us);
        }
        if matches!(plan, Plan::Update(_) | Plan::Delete(_)) {
            return self.run_batched(plan, params, now_us);
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
        store: &Arc<Store>,
        plan: &Plan,
        params: &[Datum],
        now_us: i64,
    ) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let mut ex = Executor::new(store.as_ref(), self.ctx(params, now_us), &self.interrupt);
        ex.store = Some(store.clone());
        ex.system = Some(store);
        ex.catalog = Some(self.db.as_ref());
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
        ex.catalog = Some(self.db.as_ref());
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
                if let (Some(v), Some(s)) = (ex.drawn.get(), crate::sequences::of_table(&i.table)) {
                    self.sequences.lock().drawn(&s.name, v);
                }
                dml_output(format!("INSERT 0 {n}"), &i.returning, rows)
            }
            Plan::Update(u) => {
                let m = ex.update(u, None, None)?;
                dml_output(format!("UPDATE {}", m.count), &u.returning, m.returned)
            }
            Plan::Delete(d) => {
                let m = ex.delete(d, None, None)?;
                dml_output(format!("DELETE {}", m.count), &d.returning, m.returned)
            }
            _ => return Err(QueryError::Internal("not a DML plan".into())),
        };
        self.settle_foreign_keys(&ex)?;
        Ok((out, Some(ex.stats.get())))
    }

    /// A write whose subqueries run at each execution, before it is planned: an UPDATE or DELETE with
    /// subqueries, or a write through a view WITH CHECK OPTION whose condition has one. Typed now with
    /// NULLs where their results will be.
    pub(super) fn plan_with_subqueries(
        &self,
        s: &Statement,
        given: Vec<SqlType>,
        view_checks: Vec<ViewCheck>,
    ) -> Result<(Plan, Vec<SqlType>)> {
        let mut planner = Planner::new(self.db.as_ref(), given);
        planner.zone = self.zone();
        planner.view_checks = view_checks
            .iter()
            .map(|c| ViewCheck { view: c.view.clone(), condition: crate::subqueries::placeholder(&c.condition) })
            .collect();
        let typed = planner.plan(&crate::subqueries::placeholder(s))?;
        checks_taken(&planner)?;
        let param_types: Vec<SqlType> = planner.params.iter().map(|t| if *t == SqlType::Unknown { SqlType::Text } else { *t }).collect();
        let columns = typed.output_columns();
        Ok((Plan::WithSubqueries { statement: Box::new(s.clone()), param_types: param_types.clone(), columns, view_checks }, param_types))
    }

    /// Runs a [`Plan::WithSubqueries`]: its subqueries first (in the statement's transaction), then the
    /// statement planned with their results, as PostgreSQL evaluates an uncorrelated subquery once.
    pub(super) fn with_subqueries(
        &mut self,
        statement: &Statement,
        param_types: &[SqlType],
        view_checks: &[ViewCheck],
        params: &[Datum],
    ) -> Result<Output> {
        let stmt = match crate::subqueries::has_subquery(statement) {
            true => crate::subqueries::substitute(statement, |q| self.subquery_rows(q, params))?,
            false => statement.clone(),
        };
        let mut checks = Vec::with_capacity(view_checks.len());
        for c in view_checks {
            let condition = crate::subqueries::substitute(&c.condition, |q| self.subquery_rows(q, params))?;
            checks.push(ViewCheck { view: c.view.clone(), condition });
        }
        let mut planner = Planner { zone: self.zone(), ..Planner::new(self.db.as_ref(), param_types.to_vec()) };
        planner.view_checks = checks;
        let plan = planner.plan(&stmt)?;
        checks_taken(&planner)?;
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

/// 0A000 unless the planner bound every view CHECK OPTION it was given (a plain INSERT, UPDATE or DELETE
/// does; what is planned otherwise could not check them).
pub(super) fn checks_taken(planner: &Planner) -> Result<()> {
    match planner.view_checks.first() {
        Some(c) => Err(QueryError::FeatureNotSupported(format!("this write through view \"{}\" WITH CHECK OPTION", c.view))),
        None => Ok(()),
    }
}

pub(super) fn dml_output(tag: String, returning: &Option<Returning>, rows: Vec<SqlRow>) -> Output {
    match returning {
        Some(r) => Output::Rows { columns: r.columns.clone(), rows, tag },
        None => Output::Command { tag },
    }
}
