//! Sessions: the SQL entry point. A session parses, plans (with a plan cache per prepared statement),
//! runs statements in auto-commit or inside a transaction, and keeps its settings.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlparser::ast::Statement;
use tabula_store::Txn;

use crate::analytic::AnalyticPlan;
use crate::database::Database;
use crate::error::{QueryError, Result};
use crate::exec::{Deadline, Interrupt};
use crate::expr::EvalCtx;
use crate::output::{Notice, Output, TxnStatus};
use crate::parse::{parse, ParsedStatement};
use crate::plan::*;
use crate::planner::Planner;
use crate::settings::*;
use crate::types::{Datum, SqlType};
use copy::CopyIn;

mod access;
mod activity;
mod alter_type;
mod analytic;
mod batches;
mod check;
mod copy;
mod ddl;
mod dml;
mod explain;
mod foreign_key;
mod index;
mod joined;
mod sequence;
mod settings;
mod simple;
mod statements;
mod temp;
mod transaction;
mod vacuum;
mod view;

/// A parsed and planned statement, ready to run with parameters.
#[derive(Clone)]
pub struct Prepared {
    pub sql: String,
    stmt: Option<Box<Statement>>,
    /// `None` for an empty statement.
    route: Option<Route>,
    catalog_version: u64,
    pub param_types: Vec<SqlType>,
    pub columns: Vec<OutputColumn>,
}

impl Prepared {
    pub fn is_empty(&self) -> bool {
        self.route.is_none()
    }
}

/// Which engine runs a statement, decided once when it is prepared: the key-value executor whenever its
/// planner can plan the statement, else DataFusion for a query the planner handed on
/// (`Session::prepare_analytic` says which refusals hand a query on). EXPLAIN prints the decision.
#[derive(Clone)]
pub enum Route {
    KeyValue(Arc<Plan>),
    /// `reason`: what the key-value planner could not do, EXPLAIN's first line.
    Analytic {
        plan: Arc<AnalyticPlan>,
        reason: String,
        /// Planned again at each execution, with the parameters of its FROM functions' arguments written in
        /// (`analytic::table_args`).
        replan: bool,
    },
}

/// What a statement's reads see, chosen in one place ([`Session::read_from`]).
pub(super) enum ReadFrom {
    /// The latest committed data: no transaction is open.
    Store,
    /// The open transaction's snapshot: it has not written, so that is all it would read.
    Snapshot(crate::exec::Reader),
    /// The open transaction itself: it has written, and its own writes are in no snapshot.
    Txn,
}

pub struct Session {
    db: Arc<Database>,
    txn: Option<Txn>,
    failed: bool,
    pub user: String,
    pub database: String,
    settings: Settings,
    pub interrupt: Interrupt,
    copy: Option<CopyIn>,
    /// The open transaction's savepoints, oldest first, one per engine savepoint (`None`: released).
    savepoints: Vec<Option<String>>,
    /// The plan of the statement run last (for the slow-statement log).
    last_plan: Option<Arc<Plan>>,
    /// Set by a streamed result that ended in an error (see [`RowStream`]).
    stream_failed: Arc<std::sync::atomic::AtomicBool>,
    /// Cursors open in SQL (`DECLARE`).
    cursors: crate::cursors::Cursors,
    /// Statements prepared in SQL (`PREPARE`), by name.
    statements: HashMap<String, Arc<Prepared>>,
    /// `SET ROLE`: whose privileges the session has (`current_user`); `None`: its own user's.
    role: Option<String>,
    /// The session's user was no role when it logged in (trust takes any name): it is a superuser.
    unlisted: bool,
    /// NOTICEs of the statements run since the protocol layer last took them.
    notices: Vec<Notice>,
    /// What the session drew of each sequence (`currval`, `lastval`).
    sequences: crate::sequences::SessionSequences,
    /// Foreign-key checks put off until COMMIT, and `SET CONSTRAINTS`'s modes.
    deferred: parking_lot::Mutex<foreign_key::Deferred>,
    /// Its entry in `pg_stat_activity`.
    activity: crate::activity::Entry,
    /// Its number among the server's sessions: the owner of its temporary tables and advisory locks.
    number: u64,
    /// Its temporary tables.
    temp: crate::temp::TempTables,
}

impl Drop for Session {
    /// A session that ends inside a transaction rolls it back; DDL it undid makes the catalog's cache stale.
    fn drop(&mut self) {
        if let Some(t) = self.txn.take() {
            let ddl = t.did_ddl();
            let _ = t.rollback();
            if ddl {
                self.db.invalidate();
            }
        }
        let _ = self.drop_temp_tables();
        crate::analytic::Source::advisory(self.db.as_ref()).unlock_all(self.number);
    }
}

impl Session {
    /// A new session of `user` on `db`, connected to `database` (the name the client gave).
    pub fn new(db: &Arc<Database>, user: &str, database: &str) -> Session {
        let number = db.next_session_number();
        Session {
            db: db.clone(),
            txn: None,
            failed: false,
            user: user.to_string(),
            database: database.to_string(),
            settings: db.default_settings(),
            interrupt: Interrupt { memory: Some(db.memory().clone()), ..Interrupt::default() },
            copy: None,
            savepoints: Vec::new(),
            last_plan: None,
            stream_failed: Default::default(),
            cursors: Default::default(),
            statements: HashMap::new(),
            role: None,
            unlisted: db.roles().get(user).is_none(),
            notices: Vec::new(),
            sequences: Default::default(),
            deferred: Default::default(),
            activity: activity::register(db, user, database),
            number,
            temp: crate::temp::TempTables::new(number),
        }
    }

    /// What a statement's reads see.
    fn read_from(&self) -> ReadFrom {
        match &self.txn {
            None => ReadFrom::Store,
            Some(txn) => match txn.read_view() {
                Some(view) => ReadFrom::Snapshot(view),
                None => ReadFrom::Txn,
            },
        }
    }

    /// Whose privileges the session has: the role SET ROLE chose, else its user.
    pub fn current_user(&self) -> &str {
        self.role.as_deref().unwrap_or(&self.user)
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// The plan of the last statement, as EXPLAIN prints it.
    pub fn last_plan(&self) -> Option<String> {
        self.last_plan.as_ref().map(|p| p.to_string())
    }

    /// The plan of the last statement, to print later (a streamed result's slow-statement log line).
    pub fn last_plan_shared(&self) -> Option<Arc<crate::plan::Plan>> {
        self.last_plan.clone()
    }

    pub fn txn_status(&self) -> TxnStatus {
        match (&self.txn, self.failed) {
            (None, _) => TxnStatus::Idle,
            (Some(_), false) => TxnStatus::InTransaction,
            (Some(_), true) => TxnStatus::Failed,
        }
    }

    fn savepoint_index(&self, name: &str) -> Result<usize> {
        self.savepoints.iter().rposition(|s| s.as_deref() == Some(name)).ok_or_else(|| QueryError::UndefinedSavepoint(name.to_string()))
    }

    pub(super) fn note_error(&mut self) {
        if self.txn.is_some() {
            self.failed = true;
        }
    }

    /// Parses and plans one statement for the extended protocol. Parameter types the client gave win;
    /// the others are inferred from where they are used.
    pub fn prepare(&mut self, sql: &str, param_types: &[Option<SqlType>]) -> Result<Prepared> {
        self.absorb_stream_failure();
        self.arm_timeout();
        let r = (|| {
            self.db.check_size(sql)?;
            let mut stmts = parse(sql)?;
            if stmts.len() > 1 {
                return Err(QueryError::Syntax("cannot insert multiple commands into a prepared statement".into()));
            }
            if let Some(s) = stmts.first() {
                self.check_not_failed(s)?;
            }
            self.prepare_parsed(sql, stmts.pop(), param_types)
        })()
        .map_err(|e| e.located(sql));
        self.interrupt.deadline = Arc::default();
        if r.is_err() {
            self.note_error();
        }
        r
    }

    fn prepare_parsed(&self, sql: &str, stmt: Option<ParsedStatement>, param_types: &[Option<SqlType>]) -> Result<Prepared> {
        let version = self.db.catalog_version();
        let Some(stmt) = stmt else {
            return Ok(Prepared {
                sql: sql.into(),
                stmt: None,
                route: None,
                catalog_version: version,
                param_types: vec![],
                columns: vec![],
            });
        };
        let given: Vec<SqlType> = param_types.iter().map(|t| t.unwrap_or(SqlType::Unknown)).collect();
        let stmt = self.temp_names(stmt)?;
        let (stmt, view_checks) = self.through_views(stmt)?;
        // Only a plain INSERT or UPDATE takes a view's CHECK OPTION among its checks.
        let checked_apart = |what: &str| -> Result<()> {
            match view_checks.first() {
                Some(c) => Err(QueryError::FeatureNotSupported(format!("{what} through view \"{}\" WITH CHECK OPTION", c.view))),
                None => Ok(()),
            }
        };
        let (plan, params, stmt) = match stmt {
            ParsedStatement::Reset { table, options } => (Plan::SetOptions { table, set: vec![], reset: options }, given, None),
            ParsedStatement::SetConstraints { names, deferred } => (Plan::SetConstraints { names, deferred }, given, None),
            ParsedStatement::Maintenance(m) => (Plan::Maintenance(m), given, None),
            ParsedStatement::Sequence(s) => (Plan::Sequence(s), given, None),
            ParsedStatement::Fetch(f) => {
                let columns = if f.move_only { vec![] } else { self.cursors.columns(&f.name)? };
                (Plan::Fetch { name: f.name, direction: f.direction, move_only: f.move_only, columns }, given, None)
            }
            ParsedStatement::Ast(s) if crate::joined::target(&s).is_some() => {
                let (plan, params) = self.plan_joined(&s, param_types, view_checks.clone())?;
                (plan, params, Some(s))
            }
            ParsedStatement::Ast(s) if matches!(&*s, Statement::Explain { statement, .. } if crate::joined::target(statement).is_some()) => {
                let Statement::Explain { statement, analyze, .. } = &*s else { unreachable!() };
                let (plan, params) = self.plan_joined(statement, param_types, view_checks.clone())?;
                (Plan::Explain { plan: Box::new(plan), analyze: *analyze }, params, Some(s))
            }
            ParsedStatement::Ast(s)
                if crate::subqueries::has_subquery(&s) || view_checks.iter().any(|c| crate::subqueries::holds_subquery(&c.condition)) =>
            {
                let (plan, param_types) = self.plan_with_subqueries(&s, given.clone(), view_checks.clone())?;
                (plan, param_types, Some(s))
            }
            ParsedStatement::Ast(s) => {
                let mut planner = Planner::new(self.db.as_ref(), given.clone());
                planner.zone = self.zone();
                planner.view_checks = view_checks.clone();
                let planned = planner.plan(&s);
                if planned.is_ok() && !planner.view_checks.is_empty() {
                    checked_apart("this write")?;
                }
                if let Err(e) = &planned {
                    if !view_checks.is_empty() && e.is_analytic_retry() {
                        checked_apart("a write the analytic engine plans")?;
                    }
                }
                match planned {
                    // The parameters are those of the cursor's query, whichever engine runs it.
                    Ok(plan @ Plan::DeclareCursor { .. }) => {
                        let Plan::DeclareCursor { query, .. } = &plan else { unreachable!() };
                        let inner = self.prepare_query(query, param_types)?;
                        (plan, inner.param_types, Some(s))
                    }
                    // The parameters of INSERT ... SELECT are those of the query too, which runs later.
                    Ok(plan @ Plan::InsertSelect { .. }) => {
                        let Plan::InsertSelect { query, .. } = &plan else { unreachable!() };
                        let inner = self.prepare_query(query, param_types)?.param_types;
                        let own = planner.params;
                        let merged = (0..own.len().max(inner.len()))
                            .map(|i| match own.get(i) {
                                Some(t) if *t != SqlType::Unknown => *t,
                                _ => inner.get(i).copied().unwrap_or(SqlType::Unknown),
                            })
                            .collect();
                        (plan, merged, Some(s))
                    }
                    Ok(Plan::ExecutePrepared { name, args, .. }) => {
                        let columns =
                            self.statements.get(&name).ok_or_else(|| QueryError::UndefinedPreparedStatement(name.clone()))?.columns.clone();
                        (Plan::ExecutePrepared { name, args, columns }, planner.params, Some(s))
                    }
                    Ok(plan) => (plan, planner.params, Some(s)),
                    Err(e) if !view_checks.is_empty() => return Err(e),
                    Err(e) => return self.prepare_analytic(sql, s, e, &given, version),
                }
            }
        };
        // Parameters nothing typed are text, as PostgreSQL's unknown literals become.
        let param_types = params.into_iter().map(|t| if t == SqlType::Unknown { SqlType::Text } else { t }).collect();
        let columns = plan.output_columns();
        Ok(Prepared { sql: sql.into(), stmt, route: Some(Route::KeyValue(Arc::new(plan))), catalog_version: version, param_types, columns })
    }

    /// Runs a prepared statement. Its plan is reused unless DDL ran since it was made.
    pub fn execute(&mut self, p: &Prepared, params: &[Datum]) -> Result<Output> {
        self.absorb_stream_failure();
        self.statement_started(&p.sql);
        let mut out = self.execute_here(p, params);
        // Outside a transaction block the statement was a transaction of its own, now ended.
        if self.txn.is_none() && self.temp.has_actions() {
            if let (Err(e), Ok(_)) = (self.temp_on_commit(), &out) {
                out = Err(e);
            }
        }
        let out = match out.map_err(|e| self.typed_values(e)) {
            Ok(Output::Stream { columns, cursor }) => {
                Ok(Output::Stream { columns, cursor: cursor.flag_errors(self.stream_failed.clone()) })
            }
            out => out,
        };
        self.statement_ended(out)
    }

    /// A streamed result that ended in an error fails the transaction it ran in, before the next statement.
    fn absorb_stream_failure(&mut self) {
        if self.stream_failed.swap(false, Ordering::Relaxed) {
            self.note_error();
        }
    }

    fn execute_here(&mut self, p: &Prepared, params: &[Datum]) -> Result<Output> {
        if p.is_empty() {
            return Ok(Output::Empty);
        }
        self.run_bound(p, params, |s, params| s.execute_bound(p, params))
    }

    /// Runs a prepared statement whose parameters are bound to its types, under the running statement's
    /// timeout (a cursor's query runs under its DECLARE's).
    fn execute_bound(&mut self, p: &Prepared, params: &[Datum]) -> Result<Output> {
        let plan = match &p.route {
            None => return Ok(Output::Empty),
            Some(Route::Analytic { plan, .. }) => {
                self.last_plan = None;
                return self.run_analytic(p, &plan.clone(), params);
            }
            Some(Route::KeyValue(plan)) => plan,
        };
        let plan = if p.catalog_version == self.db.catalog_version() || p.stmt.is_none() {
            plan.clone()
        } else {
            let fresh = match &p.stmt {
                Some(s) if !matches!(plan.as_ref(), Plan::SetOptions { reset, .. } if !reset.is_empty()) => {
                    let mut planner = Planner::new(self.db.as_ref(), p.param_types.clone());
                    planner.zone = self.zone();
                    Arc::new(planner.plan(s)?)
                }
                _ => plan.clone(),
            };
            fresh
        };
        self.last_plan = Some(plan.clone());
        self.run(&plan, params)
    }

    /// Binds parameters to a prepared statement's types and runs it under the statement timeout; an error
    /// fails the open transaction.
    fn run_bound(&mut self, p: &Prepared, params: &[Datum], f: impl FnOnce(&mut Self, &[Datum]) -> Result<Output>) -> Result<Output> {
        if params.len() != p.param_types.len() {
            return Err(QueryError::Syntax(format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                p.param_types.len()
            )));
        }
        // A parameter sent as text (declared text, or unknown) is read as its statement's type, a timestamptz
        // in the session's zone.
        let zone = self.zone();
        let params: Vec<Datum> = params
            .iter()
            .zip(&p.param_types)
            .map(|(d, t)| match d {
                Datum::Text(_) => d.clone().cast_in(SqlType::Unknown, *t, &zone),
                _ => d.clone().cast(*t),
            })
            .collect::<Result<_>>()?;
        // A simple query's statement has been timed since its planning began.
        if self.interrupt.deadline.get().is_none() {
            self.arm_timeout();
        }
        let r = f(self, &params);
        self.interrupt.deadline = Arc::default();
        if r.is_err() {
            self.note_error();
        }
        r
    }

    /// Starts the statement's `statement_timeout`. PostgreSQL times a statement from its arrival, so its
    /// planning counts: DataFusion's may be long, and stops there too (`analytic::stop`).
    fn arm_timeout(&mut self) {
        let timeout = self.setting("statement_timeout").and_then(parse_duration_ms).unwrap_or(0);
        // A cell of this statement's own: the streams it opens keep it after it returns.
        self.interrupt.deadline = Arc::new(Deadline::at((timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout))));
    }

    fn ctx<'a>(&'a self, params: &'a [Datum], now_us: i64) -> EvalCtx<'a> {
        let sequences: (&dyn crate::sequences::SequenceSource, _) = (self.db.as_ref(), &*self.sequences);
        EvalCtx {
            params,
            now_us,
            user: self.current_user(),
            session_user: &self.user,
            database: &self.database,
            zone: self.zone(),
            sequences: Some(sequences),
        }
    }

    fn run(&mut self, plan: &Plan, params: &[Datum]) -> Result<Output> {
        if self.failed && !matches!(plan, Plan::Rollback | Plan::Commit | Plan::RollbackToSavepoint(_)) {
            return Err(QueryError::InFailedTransaction);
        }
        self.check_access(plan)?;
        match plan {
            Plan::Savepoint(name) => {
                let txn = self.txn.as_ref().ok_or(QueryError::NoTransaction("SAVEPOINT"))?;
                txn.savepoint();
                self.savepoints.push(Some(name.clone()));
                Ok(Output::Command { tag: "SAVEPOINT".into() })
            }
            Plan::ReleaseSavepoint(name) => {
                self.txn.as_ref().ok_or(QueryError::NoTransaction("RELEASE SAVEPOINT"))?;
                let i = self.savepoint_index(name)?;
                // The engine keeps its savepoints; released ones stay on its stack without a name.
                self.savepoints[i..].iter_mut().for_each(|s| *s = None);
                Ok(Output::Command { tag: "RELEASE".into() })
            }
            Plan::RollbackToSavepoint(name) => {
                let txn = self.txn.as_ref().ok_or(QueryError::NoTransaction("ROLLBACK TO SAVEPOINT"))?;
                let i = self.savepoint_index(name)?;
                let ddl = txn.did_ddl();
                for _ in i..self.savepoints.len() {
                    let r = txn.rollback_to_savepoint();
                    if ddl {
                        self.db.invalidate();
                    }
                    r?;
                }
                // The savepoint stays, as in PostgreSQL: it can be rolled back to again.
                txn.savepoint();
                self.savepoints.truncate(i + 1);
                self.failed = false;
                Ok(Output::Command { tag: "ROLLBACK".into() })
            }
            Plan::LockShared { names } => {
                self.txn.as_ref().ok_or(QueryError::NoTransaction("LOCK TABLE"))?;
                for n in names {
                    crate::planner::Catalog::table(&*self.db, n)?;
                }
                Ok(Output::Command { tag: "LOCK TABLE".into() })
            }
            Plan::Begin => {
                if self.txn.is_none() {
                    let txn = self.db.store().begin_with_view();
                    txn.limit_size();
                    self.txn = Some(txn);
                    self.failed = false;
                    self.savepoints.clear();
                }
                Ok(Output::Command { tag: "BEGIN".into() })
            }
            Plan::Commit => self.commit(),
            Plan::Rollback => self.rollback(),
            // Statements prepared in SQL and those of the protocol share one namespace, as in PostgreSQL.
            Plan::Deallocate(Some(name)) if self.statements.remove(name).is_some() => Ok(Output::Command { tag: "DEALLOCATE".into() }),
            Plan::Deallocate(name) => self.deallocate(name),
            Plan::PrepareStatement { name, param_types, statement } => self.prepare_statement(name, param_types, statement),
            Plan::ExecutePrepared { name, args, .. } => self.execute_prepared(name, args, params),
            Plan::DeclareCursor { name, hold, query } => self.declare_cursor(name, *hold, query, params),
            Plan::Fetch { name, direction, move_only, .. } => self.fetch(name, *direction, *move_only),
            Plan::CloseCursor(name) => self.close_cursor(name),
            Plan::SetVariable { name, value } => self.set(name, value.as_deref()),
            Plan::SetConfig { name, value, if_exists } => self.set_config(plan, name, value, *if_exists),
            Plan::ShowVariable { name } if name == "all" => self.show_all(plan),
            Plan::ShowVariable { name } => self.show(name),
            Plan::Reset { name: Some(name) } => self.reset(name),
            Plan::Reset { name: None } => self.reset_all(),
            Plan::Discard { what } if what.eq_ignore_ascii_case("all") => self.discard_all(),
            Plan::Discard { what } => {
                if matches!(what.to_lowercase().as_str(), "temp" | "temporary") {
                    self.drop_temp_tables()?;
                }
                Ok(Output::Command { tag: format!("DISCARD {}", what.to_uppercase()) })
            }
            Plan::Access(statement) => self.run_access(statement),
            Plan::CreateTable(c) => self.create_table(c),
            Plan::DropTable { names, if_exists, cascade } => self.drop_tables(names, *if_exists, *cascade),
            Plan::Truncate { names, cascade, restart_identity } => self.truncate(names, *cascade, *restart_identity),
            Plan::SetOptions { table, set, reset } => self.set_options(table, set, reset),
            Plan::AddColumn { table, column, if_not_exists } => self.add_column(table, column, *if_not_exists),
            Plan::DropColumn { table, column, if_exists } => self.drop_column(table, column, *if_exists),
            Plan::AddPrimaryKey { table, columns, partition_key_len } => self.add_primary_key(table, columns, *partition_key_len),
            Plan::RenameTable { table, to } => self.rename_table(table, to),
            Plan::AlterOwner { table, owner } => self.alter_owner(table, owner),
            Plan::CreateIndex {
                table,
                name,
                columns,
                unique,
                constraint,
                if_not_exists,
                descending,
                nulls_not_distinct,
                local,
                include,
            } => {
                let kind = crate::session::index::IndexKind {
                    unique: *unique,
                    constraint: *constraint,
                    descending: descending.clone(),
                    nulls_not_distinct: *nulls_not_distinct,
                    local: *local,
                    include: include.clone(),
                };
                self.create_index(table, name.as_deref(), columns, kind, *if_not_exists)
            }
            Plan::DropConstraint { table, name, if_exists } => self.drop_constraint(table, name, *if_exists),
            Plan::AddCheck { table, check, validate } => self.add_check(table, check, *validate),
            Plan::AddForeignKey { table, fk, validate } => self.add_foreign_key(table, fk, *validate),
            Plan::SetConstraints { names, deferred } => self.set_constraints(names.as_deref(), *deferred),
            Plan::Maintenance(m) => self.maintain(m),
            Plan::Sequence(s) => self.run_sequence(s),
            Plan::DropSequence { names, if_exists, cascade } => self.drop_sequences(names, *if_exists, *cascade),
            Plan::CreateView { name, columns, query, or_replace, check } => self.create_view(name, columns, query, *or_replace, *check),
            Plan::DropView { names, if_exists, cascade } => self.drop_views(names, *if_exists, *cascade),
            Plan::DropIndex { names, if_exists } => self.drop_indexes(names, *if_exists),
            Plan::RenameIndex { name, to } => self.rename_index(name, to),
            Plan::RenameColumn { table, from, to } => self.rename_column(table, from, to),
            Plan::AlterColumn { table, column, change } => self.alter_column(table, column, change),
            Plan::AlterSchemaOwner { schema, owner } => self.alter_schema_owner(schema, owner),
            Plan::Explain { plan, analyze } => self.explain(plan, *analyze, params),
            Plan::CopyFrom { table, targets, defaults, format, checks } => self.copy_from(table, targets, defaults, format, checks),
            Plan::CopyTo { select, format } => self.copy_to(select, format, params),
            Plan::Select(_) | Plan::Insert(_) | Plan::Update(_) | Plan::Delete(_) => self.run_dml(plan, params, true).map(|(o, _)| o),
            Plan::InsertSelect { insert, query, defaults } => self.insert_select(insert, query, defaults, params),
            Plan::WithSubqueries { statement, param_types, view_checks, .. } => {
                self.with_subqueries(statement, param_types, view_checks, params)
            }
            Plan::Joined(j) => self.run_joined(j, params),
        }
    }
}
