//! Statements DataFusion plans and runs (the analytic route): a query the key-value planner deferred or
//! could not plan, with the session's transaction lent for its reads.

use std::sync::Arc;

use sqlparser::ast::Statement;
use tabula_store::Txn;

use super::explain::explain_rows;
use super::{Prepared, ReadFrom, Route, Session};
use crate::analytic::{table_args, AnalyticPlan, ReadCtx, SessionInfo};
use crate::error::{QueryError, Result};
use crate::output::{Output, RowStream};
use crate::parse::max_placeholder;
use crate::plan::OutputColumn;
use crate::types::{Datum, SqlType};

impl Session {
    /// A query the key-value planner refused, planned by DataFusion instead. `refusal` is what the
    /// planner said: reported as it is when DataFusion cannot run the query either, unless the planner
    /// only deferred (`Analytic`), in which case DataFusion's own error is the answer.
    pub(super) fn prepare_analytic(
        &self,
        sql: &str,
        stmt: Box<Statement>,
        refusal: QueryError,
        given: &[SqlType],
        version: u64,
    ) -> Result<Prepared> {
        let is_query = match stmt.as_ref() {
            Statement::Query(_) => true,
            Statement::Explain { statement, .. } => matches!(statement.as_ref(), Statement::Query(_)),
            _ => false,
        };
        // The key-value planner knows no function in FROM: its "relation does not exist" is no answer when
        // DataFusion knows the function and refuses the statement for a reason of its own.
        let from_function = matches!(refusal.root(), QueryError::UndefinedTable(t) if table_args::functions_in_from(&stmt).contains(t));
        let deferred = matches!(refusal.root(), QueryError::Analytic(_)) || from_function;
        let retry = refusal.is_analytic_retry();
        // DataFusion would run a locking read without its locks: the planner's refusal stands.
        let locking = match stmt.as_ref() {
            Statement::Query(q) => !q.locks.is_empty(),
            Statement::Explain { statement, .. } => matches!(statement.as_ref(), Statement::Query(q) if !q.locks.is_empty()),
            _ => false,
        };
        if !is_query || locking || !(deferred || retry) {
            return Err(refusal);
        }
        let analytics = match self.db.analytics() {
            Ok(a) => a,
            Err(e) if deferred => return Err(e),
            Err(_) => return Err(refusal),
        };
        let (mut plan, replan) = match analytics.plan(&stmt, self.read_ctx(None), &self.session_info()) {
            Ok(p) => (p, false),
            // Parameters in a FROM function's arguments: planned at each execution, with their values.
            Err(e) if !table_args::params_in_from(&stmt).is_empty() => {
                let types: Vec<SqlType> = given.iter().map(|t| if *t == SqlType::Unknown { SqlType::Text } else { *t }).collect();
                let stand_in = table_args::with_values(&stmt, &types, None)?;
                match analytics.plan(&stand_in, self.read_ctx(None), &self.session_info()) {
                    Ok(p) => (p, true),
                    Err(_) if deferred => return Err(e),
                    Err(_) => return Err(refusal),
                }
            }
            Err(e) if deferred => return Err(e),
            // A function the key-value planner does not know, which the analytic engine has but refuses
            // for these arguments (`to_char` of a number): its reason is the true one.
            Err(e)
                if matches!(refusal.root(), QueryError::UndefinedFunction(_))
                    && matches!(e.root(), QueryError::NotSupported(_) | QueryError::FeatureNotSupported(_)) =>
            {
                return Err(e)
            }
            // DataFusion typed the expression the key-value planner could not run and found no operator for
            // it (`1 = ANY(ARRAY['a'])`): that is the answer PostgreSQL gives, not "not supported".
            // So is a unit PostgreSQL does not know (`extract(fortnight from ts)`, 22023) or does not have for
            // the type (`extract(hour from date)`, its own 0A000).
            Err(e)
                if matches!(
                    e.root(),
                    QueryError::UndefinedOperator(_) | QueryError::InvalidParameterValue(_) | QueryError::FeatureNotSupported(_)
                ) && matches!(refusal.root(), QueryError::NotSupported(_)) =>
            {
                return Err(e)
            }
            Err(_) => return Err(refusal),
        };
        // Output columns named as PostgreSQL names them (DataFusion prints expressions instead).
        if let Statement::Query(q) = stmt.as_ref() {
            if let Some(names) = crate::planner::output_names(q).filter(|n| n.len() == plan.columns.len()) {
                plan.columns.iter_mut().zip(names).for_each(|(c, n)| c.name = n);
            }
        }
        // Every `$n` the client wrote counts, also those in parts the rewrite for DataFusion dropped.
        let count = plan.param_types.len().max(max_placeholder(&stmt)).max(given.len());
        let param_types = (0..count)
            .map(|i| match (given.get(i), plan.param_types.get(i).and_then(|t| t.as_ref())) {
                (Some(g), _) if *g != SqlType::Unknown => *g,
                (_, Some(t)) => crate::analytic::arrow::sql_type_of(t),
                _ => SqlType::Text,
            })
            .collect();
        let columns = if matches!(stmt.as_ref(), Statement::Explain { .. }) {
            vec![OutputColumn { name: "QUERY PLAN".into(), ty: SqlType::Text, source: None }]
        } else {
            plan.columns.clone()
        };
        let reason = match refusal.root() {
            QueryError::Analytic(what) => what.clone(),
            e => e.to_string(),
        };
        Ok(Prepared {
            sql: sql.into(),
            stmt: Some(stmt),
            route: Some(Route::Analytic { plan: Arc::new(plan), reason, replan }),
            columns,
            catalog_version: version,
            param_types,
        })
    }

    /// What a statement's DataFusion scans read with: the lent transaction, the clock, the user.
    pub(super) fn read_ctx(&self, txn: Option<Arc<parking_lot::Mutex<Option<Txn>>>>) -> ReadCtx {
        ReadCtx {
            txn,
            view: None,
            now_us: self.db.store().clock().now_ms() * 1000,
            zone: self.zone(),
            user: self.current_user().to_string(),
            session_user: self.user.clone(),
            database: self.database.clone(),
            interrupt: self.interrupt.clone(),
            settings: self.settings.clone(),
            session: self.number,
            temp_tables: self.temp.live(&|p| self.db.relation(p).is_ok()),
        }
    }

    pub(super) fn session_info(&self) -> SessionInfo {
        // One read of the activity entry, under its lock once.
        let (pid, client, server) = self.activity.read(|b| (b.pid, b.client, b.server));
        SessionInfo {
            settings: self.settings.clone(),
            user: self.current_user().to_string(),
            session_user: self.user.clone(),
            sequences: self.sequences.clone(),
            pid,
            number: self.number,
            client,
            server,
        }
    }

    /// Runs a DataFusion statement, lending it the open transaction for its reads.
    pub(super) fn run_analytic(&mut self, p: &Prepared, plan: &AnalyticPlan, params: &[Datum]) -> Result<Output> {
        if self.failed {
            return Err(QueryError::InFailedTransaction);
        }
        let analytics = self.db.analytics()?;
        let fresh;
        let replan = matches!(p.route, Some(Route::Analytic { replan: true, .. }));
        let plan = if p.catalog_version == self.db.catalog_version() && !replan {
            plan
        } else {
            let stmt = p.stmt.as_deref().ok_or_else(|| QueryError::Internal("an analytic statement without its statement".into()))?;
            let bound;
            let stmt = if replan {
                bound = table_args::with_values(stmt, &p.param_types, Some(params))?;
                &bound
            } else {
                stmt
            };
            let mut planned = analytics.plan(stmt, self.read_ctx(None), &self.session_info())?;
            // The names the client was told when the statement was prepared (PostgreSQL's, not DataFusion's).
            if planned.columns.len() == p.columns.len() {
                planned.columns.iter_mut().zip(&p.columns).for_each(|(c, named)| c.name = named.name.clone());
            }
            fresh = planned;
            &fresh
        };
        self.check_tables(&plan.tables)?;
        let typed: Vec<(Datum, SqlType)> = params.iter().cloned().zip(p.param_types.iter().copied()).collect();
        let explain = matches!(p.stmt.as_deref(), Some(Statement::Explain { .. }));
        // Rows stream from the store or a snapshot; a transaction that has written is lent to the scans.
        let snapshot = match self.read_from() {
            ReadFrom::Store => Some(None),
            ReadFrom::Snapshot(view) => Some(Some(view)),
            ReadFrom::Txn => None,
        };
        if let (false, Some(view)) = (explain, snapshot) {
            let mut read = self.read_ctx(None);
            read.view = view;
            let rows = analytics.execute_stream(plan, &typed, read, &self.session_info())?;
            return Ok(Output::Stream { columns: plan.columns.clone(), cursor: RowStream::from_rows(rows) });
        }
        let lent = self.txn.take().map(|t| Arc::new(parking_lot::Mutex::new(Some(t))));
        let read = self.read_ctx(lent.clone());
        let r = analytics.execute(plan, &typed, read, &self.session_info());
        if let Some(l) = lent {
            self.txn = l.lock().take();
        }
        let rows = r?;
        if explain {
            let reason = match &p.route {
                Some(Route::Analytic { reason, .. }) => reason.as_str(),
                _ => "",
            };
            return Ok(explain_rows(reason, rows));
        }
        Ok(Output::Rows { columns: plan.columns.clone(), tag: format!("SELECT {}", rows.len()), rows })
    }
}
