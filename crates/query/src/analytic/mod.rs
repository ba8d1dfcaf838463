//! Analytics on Apache DataFusion: what the key-value planner leaves — aggregates, GROUP BY, DISTINCT,
//! joins, subqueries, CTEs, window functions, set operations, functions it does not know — and the
//! PostgreSQL catalog that tools read.
//!
//! # The life of an analytic statement
//! 1. The key-value [`planner`](crate::planner) refuses the statement with [`QueryError::Analytic`]
//!    (or does not know a table or function it names); the session hands its SQL text here.
//! 2. DataFusion's sqlparser parses it (PostgreSQL dialect) and datafusion-pg-catalog's rewrite rules
//!    turn PostgreSQL-only syntax (`::regclass`, `OPERATOR(pg_catalog.~)`, ...) into what DataFusion plans.
//! 3. DataFusion plans it against the catalog `tabula`: schema `public` holds Tabula's tables
//!    ([`provider`]), `pg_catalog`, `information_schema` and `tabula` describe them ([`catalog`]).
//! 4. Filters DataFusion pushes into a table scan go through the same access-path planner as plain
//!    queries: a key equality under a join is still a point get, a key range a range scan.
//! 5. Outside a transaction scans stream from cursors; inside one they read the transaction's snapshot
//!    (its own writes included), lent to DataFusion for the statement.
//! 6. Result batches become rows of PostgreSQL-typed values ([`arrow`]).

mod age;
mod array_in;
pub mod arrow;
mod bpchar;
pub mod catalog;
mod columnar;
mod date_trunc;
mod errors;
mod extract;
mod format;
mod function_set;
mod guarded;
mod integers;
mod justify;
mod letter_case;
mod limits;
mod literals;
mod make_time;
mod math;
mod mode;
mod numbers;
mod pg_typeof;
mod plan_rewrite;
pub mod provider;
mod quotient;
mod rewrite;
pub(crate) mod search_path;
mod sequences;
mod session_udfs;
mod variance;
pub use session_udfs::SessionInfo;
mod at_time_zone;
pub(crate) mod single_row;
mod stop;
pub mod table_args;
mod text_operand;
mod text_udf;
mod timestamp_text;
mod to_char;
mod uuid;
mod width_bucket;
mod zoned;

use columnar::{arrays, columnar};
pub use errors::map_err;
pub use function_set::scalar_functions;
use function_set::{checked_udfs, pg_functions};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionState;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{AggregateUDF, LogicalPlan, ScalarUDF};
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};
use datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use sqlparser::ast::Statement;

use crate::error::{QueryError, Result};
use crate::exec::Interrupt;
use crate::plan::OutputColumn;
use crate::planner::Catalog;
use crate::types::SqlRow;
use crate::types::{Datum, SqlType};
use catalog::{GeneratedSchema, PgCatalogSchema, CATALOG};
use provider::PublicSchema;
pub use provider::ReadCtx;
use text_udf::TextUdf;

/// What the analytic engine reads of the SQL layer's shared state (the crate's `Database`): the catalog's
/// tables, the store and the roles. A trait, so that this module does not name the database that holds it.
pub trait Source: Catalog + Send + Sync {
    fn store(&self) -> &Arc<tabula_store::Store>;
    fn roles(&self) -> &crate::roles::Registry;
    fn activity(&self) -> &Arc<crate::activity::Activity>;
    fn advisory(&self) -> &crate::advisory::AdvisoryLocks;
    /// The tables' names, sorted (no sequence's).
    fn table_names(&self) -> Vec<String>;
    fn sequences(&self) -> &dyn crate::sequences::SequenceSource;
    /// A view's schema (`crate::views`), by name.
    fn view(&self, name: &str) -> Option<Arc<crate::schema::TableSchema>>;
}

/// DataFusion, set up once per database.
pub struct Analytics {
    ctx: SessionContext,
    /// PostgreSQL's rounding, quotients and averages, which the plan calls where DataFusion's differ
    /// (`numbers`).
    numbers: numbers::NumberFunctions,
    /// Always `Some` until dropped.
    runtime: Option<tokio::runtime::Runtime>,
    rewriter: rewrite::Rewriter,
    /// The server's memory ceiling, and where each statement's budget comes from.
    memory: Arc<crate::memory::ServerMemory>,
    /// For the functions that are registered for each statement.
    db: Weak<dyn Source>,
}

/// An analytic statement planned by DataFusion: reused by prepared statements until DDL runs.
#[derive(Debug, Clone)]
pub struct AnalyticPlan {
    plan: LogicalPlan,
    pub columns: Vec<OutputColumn>,
    /// DataFusion's type for each `$n`, where it inferred one.
    pub param_types: Vec<Option<DataType>>,
    /// The Tabula tables it reads (subqueries' included): SELECT on each is checked at every execution.
    pub tables: Vec<String>,
}

/// The Tabula tables a plan scans, in its subqueries too.
fn read_tables(plan: &LogicalPlan) -> Result<Vec<String>> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut tables = Vec::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            if let Ok(p) = datafusion::catalog::default_table_source::source_as_provider(&scan.source) {
                if let Some(t) = p.downcast_ref::<provider::TabulaTable>() {
                    tables.push(t.name().to_string());
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .map_err(map_err)?;
    tables.sort();
    tables.dedup();
    Ok(tables)
}

impl Analytics {
    pub fn new(db: Weak<dyn Source>, memory: Arc<crate::memory::ServerMemory>) -> Result<Analytics> {
        let mut config = SessionConfig::new()
            .with_default_catalog_and_schema(CATALOG, "public")
            .with_information_schema(false)
            .with_target_partitions(2);
        // DataFusion's planners disagree on the nullability of some expressions (a CASE over non-NULL
        // columns under DISTINCT or GROUP BY is non-NULL to the logical planner, nullable to the physical
        // one), and this check then fails the statement with an internal error. Nullability is not used to
        // compute anything; the option exists to work around such planner bugs.
        config.options_mut().execution.skip_physical_aggregate_schema_check = true;
        // A constant with a fraction (`1.5`, `1e3`) is a numeric, as in PostgreSQL: exact, with the places
        // it is written with (`price * 1.1` is 1.650, not the double 1.6500000000000001).
        config.options_mut().sql_parser.parse_float_as_decimal = true;
        // Columns keep where the text names them: an unknown one's error gives its position (psql's caret).
        config.options_mut().sql_parser.collect_spans = true;
        let mut ctx = SessionContext::new_with_config(config);
        ctx.register_expr_planner(Arc::new(literals::BooleanLiterals)).map_err(map_err)?;
        let catalog = ctx.catalog(CATALOG).ok_or_else(|| QueryError::Internal("no default catalog".into()))?;
        catalog.register_schema("public", Arc::new(PublicSchema { db: db.clone(), zone: "UTC".into() })).map_err(map_err)?;
        datafusion_pg_catalog::setup_pg_catalog(&ctx, CATALOG, EmptyContextProvider).map_err(|e| map_err(*e))?;
        let list = ctx.state().catalog_list().clone();
        let weak_list = Arc::downgrade(&list);
        let inner = catalog.schema("pg_catalog").ok_or_else(|| QueryError::Internal("pg_catalog was not set up".into()))?;
        catalog
            .register_schema("pg_catalog", Arc::new(PgCatalogSchema { inner, db: db.clone(), list: weak_list.clone() }))
            .map_err(map_err)?;
        catalog
            .register_schema("information_schema", Arc::new(GeneratedSchema::information_schema(db.clone(), weak_list.clone())))
            .map_err(map_err)?;
        catalog.register_schema("tabula", Arc::new(GeneratedSchema::tabula(db.clone(), weak_list))).map_err(map_err)?;
        ctx.register_udf(ScalarUDF::new_from_impl(uuid::GenRandomUuid::new()));
        ctx.register_udf(ScalarUDF::new_from_impl(array_in::ArrayIn::new()));
        ctx.register_udf(ScalarUDF::new_from_impl(pg_typeof::PgTypeof::new()));
        // PostgreSQL's units and types; `date_part` replaces DataFusion's.
        ctx.register_udf(ScalarUDF::new_from_impl(extract::Extract::numeric()));
        ctx.register_udf(ScalarUDF::new_from_impl(extract::Extract::date_part()));
        ctx.register_udf(ScalarUDF::new_from_impl(to_char::ToChar::new()));
        for udf in pg_functions() {
            ctx.register_udf(udf);
        }
        ctx.register_udf(ScalarUDF::new_from_impl(text_operand::TextOperand::new()));
        ctx.register_udaf(AggregateUDF::new_from_impl(single_row::Rows::new()));
        ctx.register_udaf(AggregateUDF::new_from_impl(mode::Mode::new()));
        // `every(b)` is PostgreSQL's name for `bool_and(b)`.
        ctx.register_udaf((*datafusion::functions_aggregate::bool_and_or::bool_and_udaf()).clone().with_aliases(["every"]));
        ctx.register_udaf((*datafusion::functions_aggregate::variance::var_samp_udaf()).clone().with_aliases(["variance"]));
        ctx.register_udf(ScalarUDF::new_from_impl(single_row::Check::new()));
        for udf in checked_udfs() {
            ctx.register_udf(udf);
        }
        for udf in catalog::catalog_udfs(db.clone()) {
            ctx.register_udf(udf);
        }
        ctx.register_udf(ScalarUDF::new_from_impl(TextUdf::constant("version", crate::expr::version_string())));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tabula-analytics")
            .thread_stack_size(crate::depth::STACK_BYTES)
            .enable_all()
            .build()
            .map_err(|e| QueryError::Internal(format!("cannot start the analytic runtime: {e}")))?;
        let numbers = numbers::NumberFunctions::new();
        Ok(Analytics { ctx, numbers, runtime: Some(runtime), rewriter: rewrite::Rewriter::new(), memory, db })
    }

    /// DataFusion's session state for one statement: the shared catalog plus this statement's reads
    /// and this session's settings, with a memory pool of its own ([`crate::memory`]). Run under `watch`, its
    /// operators stop once it is set ([`stop`]); EXPLAIN's plans are shown without that wrapping.
    fn state(&self, read: ReadCtx, info: &SessionInfo, watch: Option<stop::Watch>) -> Result<SessionState> {
        let shared = self.ctx.runtime_env();
        let runtime = RuntimeEnv {
            memory_pool: Arc::new(self.memory.statement_pool()),
            disk_manager: shared.disk_manager.clone(),
            cache_manager: shared.cache_manager.clone(),
            object_store_registry: shared.object_store_registry.clone(),
        };
        let zoned = zoned::ZonedCatalogs { inner: self.ctx.state().catalog_list().clone(), zone: read.zone.arrow_name().into() };
        let mut builder =
            SessionStateBuilder::new_from_existing(self.ctx.state()).with_runtime_env(Arc::new(runtime)).with_catalog_list(Arc::new(zoned));
        let stop_watch = watch.clone().unwrap_or_else(|| stop::Watch::of(read.interrupt.clone()));
        let checkpoint = Arc::new(stop::Checkpoint(stop_watch.clone()));
        if let Some(analyzer) = builder.analyzer() {
            analyzer.rules = stop::with_checkpoints(&analyzer.rules, &(checkpoint.clone() as _));
        }
        if let Some(optimizer) = builder.optimizer() {
            optimizer.rules = stop::with_checkpoints(&optimizer.rules, &(checkpoint.clone() as _));
        }
        if let Some(physical) = builder.physical_optimizers() {
            physical.rules = stop::with_checkpoints(&physical.rules, &(checkpoint as _));
        }
        if let Some(watch) = watch {
            builder = builder.with_physical_optimizer_rule(Arc::new(stop::StopRule(watch)));
        }
        let mut state = builder.build();
        // Each sort keeps this much back to merge its spilled runs (DataFusion's default is 10 MiB): a
        // sixteenth of a small budget, so that the sorts of a statement fit in it with room to work.
        let options = state.config_mut().options_mut();
        options.execution.sort_spill_reservation_bytes = (self.memory.statement_limit() / 16).min(10 << 20);
        // A sort over the budget sorts its partitions together, so that it spills and merges its runs
        // within the budget. Sorted apart, both partitions' sorters filled the budget and the merge of
        // their outputs (which cannot spill) then failed with 53200.
        options.optimizer.repartition_sorts = false;
        // `'...'::timestamptz`, `now()` and the session's zone in DataFusion's own functions.
        let zone: Arc<str> = read.zone.arrow_name().into();
        options.execution.time_zone = Some(zone.to_string());
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(age::Age::new(zone.clone())))).map_err(map_err)?;
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(date_trunc::DateTrunc::new(zone.clone())))).map_err(map_err)?;
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(at_time_zone::AtTimeZone::new(zone)))).map_err(map_err)?;
        state.config_mut().set_extension(Arc::new(read));
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(TextUdf::setting(info.settings.clone())))).map_err(map_err)?;
        for udf in session_udfs::all(info, &self.db, stop_watch) {
            state.register_udf(Arc::new(udf)).map_err(map_err)?;
        }
        for (name, user) in [("current_user", &info.user), ("session_user", &info.session_user)] {
            state.register_udf(Arc::new(ScalarUDF::new_from_impl(TextUdf::constant(name, user.clone())))).map_err(map_err)?;
        }
        for udf in sequences::udfs(&self.db, &info.sequences) {
            state.register_udf(Arc::new(udf)).map_err(map_err)?;
        }
        for udf in search_path::udfs(&info.settings) {
            state.register_udf(Arc::new(udf)).map_err(map_err)?;
        }
        if !search_path::schemas(&info.settings).iter().any(|s| s == "public") {
            for udf in catalog::qualified_definitions(self.db.clone()) {
                state.register_udf(Arc::new(udf)).map_err(map_err)?;
            }
        }
        Ok(state)
    }

    /// Runs a future on DataFusion's runtime from synchronous code, stopping it on cancel or timeout.
    fn block_on<T: Send + 'static>(
        &self,
        interrupt: &Interrupt,
        fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let runtime = self.runtime.as_ref().ok_or_else(|| QueryError::Internal("the analytic engine is shut down".into()))?;
        let handle = runtime.spawn(async move {
            let _ = tx.send(fut.await);
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(r) => return r,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = interrupt.check() {
                        handle.abort();
                        return Err(e);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(QueryError::Internal("the analytic statement stopped without a result".into()))
                }
            }
        }
    }

    /// Plans one statement, as the session parsed it: the workspace's sqlparser is DataFusion's, so the
    /// statement is handed over as it is, never printed and parsed again.
    pub fn plan(&self, stmt: &Statement, read: ReadCtx, info: &SessionInfo) -> Result<AnalyticPlan> {
        if let Some(refusal) = rewrite::refusal(stmt) {
            return Err(QueryError::NotSupported(refusal));
        }
        let db = self.db.upgrade().ok_or_else(|| QueryError::Internal("the database is shut down".into()))?;
        let stmt = crate::views::expand(stmt.clone(), &|n| db.view(n))?;
        let stmt = self.rewriter.rewrite(stmt);
        let interrupt = read.interrupt.clone();
        let zone = read.zone;
        let state = self.state(read, info, None)?;
        let plan = self.block_on(&interrupt, async move {
            state.statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(stmt))).await.map_err(map_err)
        })?;
        let plan = integers::as_postgres(plan).map_err(map_err)?;
        let plan = numbers::as_postgres(plan, &self.numbers).map_err(map_err)?;
        let plan = bpchar::as_postgres(plan).map_err(map_err)?;
        let plan = zoned::local_casts(plan, zone).map_err(map_err)?;
        let columns =
            plan.schema().fields().iter().map(|f| OutputColumn { name: f.name().clone(), ty: arrow::sql_type(f), source: None }).collect();
        let types: Vec<(usize, Option<DataType>)> = plan
            .get_parameter_types()
            .map_err(map_err)?
            .into_iter()
            .filter_map(|(name, ty)| name.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()).filter(|i| *i >= 1).map(|i| (i, ty)))
            .collect();
        // Indexed by `$n`: numbers the plan no longer uses (rewritten away) stay untyped.
        let mut param_types = vec![None; types.iter().map(|(i, _)| *i).max().unwrap_or(0)];
        for (i, ty) in types {
            param_types[i - 1] = ty;
        }
        let tables = read_tables(&plan)?;
        Ok(AnalyticPlan { plan, columns, param_types, tables })
    }

    /// Starts a planned statement whose rows stream to the client (outside a transaction).
    pub fn execute_stream(
        &self,
        plan: &AnalyticPlan,
        params: &[(Datum, SqlType)],
        read: ReadCtx,
        info: &SessionInfo,
    ) -> Result<AnalyticRows> {
        let logical = self.bind(plan, params)?;
        let interrupt = read.interrupt.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let watch = stop::Watch { interrupt: interrupt.clone(), gone: stop.clone() };
        let state = self.state(read, info, runnable(&logical).then_some(watch))?;
        let runtime =
            self.runtime.as_ref().ok_or_else(|| QueryError::Internal("the analytic engine is shut down".into()))?.handle().clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        let (stopped, watched) = (stop.clone(), interrupt.clone());
        let finished = Arc::new(AtomicBool::new(false));
        let ended = finished.clone();
        std::thread::Builder::new()
            .name("tabula-df-stream".into())
            .stack_size(crate::depth::STACK_BYTES)
            .spawn(move || {
                runtime.block_on(async move {
                    use futures::StreamExt;
                    let mut stream = match DataFrame::new(state, logical).execute_stream().await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = tx.send(Err(map_err(e)));
                            return;
                        }
                    };
                    loop {
                        // Between batches, DataFusion's operators may work long (a join's build, a recursive
                        // query): the statement is dropped, and its work with it, once the reader has gone or
                        // the statement was cancelled or timed out.
                        let next = tokio::select! {
                            b = stream.next() => b,
                            _ = wait_for_stop(&stopped, &watched) => return,
                        };
                        let Some(b) = next else {
                            ended.store(true, Ordering::Relaxed);
                            return;
                        };
                        let failed = b.is_err();
                        // A full channel waits for the client; a dropped receiver ends the statement.
                        if tx.send(b.map_err(map_err)).is_err() || failed {
                            return;
                        }
                    }
                })
            })
            .map_err(|e| QueryError::Internal(format!("cannot start the analytic stream: {e}")))?;
        let types = plan.columns.iter().map(|c| c.ty).collect();
        Ok(AnalyticRows { rx, types, buf: Default::default(), interrupt, done: false, stop, finished })
    }

    fn bind(&self, plan: &AnalyticPlan, params: &[(Datum, SqlType)]) -> Result<LogicalPlan> {
        let mut logical = plan.plan.clone();
        if !params.is_empty() {
            // Only the parameters the plan still has: the rewrite may have dropped some.
            let values = params
                .iter()
                .take(plan.param_types.len())
                .enumerate()
                .map(|(i, (d, ty))| arrow::scalar(d, *ty, plan.param_types.get(i).and_then(|t| t.as_ref())))
                .collect::<Result<Vec<ScalarValue>>>()?;
            logical = logical.with_param_values(ParamValues::from(values)).map_err(map_err)?;
        }
        Ok(logical)
    }

    /// Runs a planned statement with its parameters; the rows come back typed as `plan.columns` says.
    pub fn execute(&self, plan: &AnalyticPlan, params: &[(Datum, SqlType)], read: ReadCtx, info: &SessionInfo) -> Result<Vec<SqlRow>> {
        let logical = self.bind(plan, params)?;
        let interrupt = read.interrupt.clone();
        let watch = stop::Watch { interrupt: interrupt.clone(), gone: Default::default() };
        let state = self.state(read, info, runnable(&logical).then_some(watch))?;
        // The rows are held until the statement ends (it runs inside a transaction): they count against
        // its memory budget, so a huge result fails with 53200 instead of exhausting the server.
        let pool = state.runtime_env().memory_pool.clone();
        let batches = self.block_on(&interrupt, async move {
            use futures::StreamExt;
            let held = MemoryConsumer::new("result rows").register(&pool);
            let mut stream = DataFrame::new(state, logical).execute_stream().await.map_err(map_err)?;
            let mut batches = Vec::new();
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(map_err)?;
                held.try_grow(batch.get_array_memory_size()).map_err(map_err)?;
                batches.push(batch);
            }
            Ok(batches)
        })?;
        let types: Vec<SqlType> = plan.columns.iter().map(|c| c.ty).collect();
        let mut rows = Vec::new();
        for b in &batches {
            arrow::batch_to_rows(b, &types, &mut rows)?;
        }
        Ok(rows)
    }
}

/// Whether a plan runs a statement, rather than showing one (EXPLAIN).
fn runnable(plan: &LogicalPlan) -> bool {
    !matches!(plan, LogicalPlan::Explain(_) | LogicalPlan::Analyze(_))
}

impl Drop for Analytics {
    fn drop(&mut self) {
        // The database may be dropped on a server worker thread, where blocking on a runtime's shutdown panics.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Rows of an analytic statement, produced as the client reads them: a thread runs the DataFusion stream
/// a couple of batches ahead, so memory stays bounded however many rows the statement returns.
pub struct AnalyticRows {
    rx: std::sync::mpsc::Receiver<Result<datafusion::arrow::record_batch::RecordBatch>>,
    types: Vec<SqlType>,
    buf: std::collections::VecDeque<SqlRow>,
    interrupt: Interrupt,
    done: bool,
    /// Set when the reader goes: the producing thread stops (see `execute_stream`).
    stop: Arc<AtomicBool>,
    /// Set by the producing thread once the stream has ended: a thread gone without it (a panic in an
    /// operator) ended the statement with an error, never with a short result.
    finished: Arc<AtomicBool>,
}

impl Drop for AnalyticRows {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Resolves once the statement's reader has gone, or it was cancelled or timed out: checked every
/// [`STOP_CHECK`], the same period as a blocked reader's own checks.
async fn wait_for_stop(stop: &AtomicBool, interrupt: &Interrupt) {
    loop {
        tokio::time::sleep(STOP_CHECK).await;
        if stop.load(Ordering::Relaxed) || interrupt.check().is_err() {
            return;
        }
    }
}

const STOP_CHECK: Duration = Duration::from_millis(20);

impl std::fmt::Debug for AnalyticRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AnalyticRows")
    }
}

impl Iterator for AnalyticRows {
    type Item = Result<SqlRow>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.buf.pop_front() {
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            match self.rx.recv_timeout(STOP_CHECK) {
                Ok(Ok(batch)) => {
                    // Batches that keep coming must not keep a cancelled or timed-out statement going.
                    if let Err(e) = self.interrupt.check() {
                        self.done = true;
                        return Some(Err(e));
                    }
                    let mut rows = Vec::with_capacity(batch.num_rows());
                    if let Err(e) = arrow::batch_to_rows(&batch, &self.types, &mut rows) {
                        self.done = true;
                        return Some(Err(e));
                    }
                    self.buf.extend(rows);
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = self.interrupt.check() {
                        // Dropping the receiver stops the producing thread at its next batch.
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    self.done = true;
                    // The producer also stops on its own once the statement is interrupted: say why, rather
                    // than end as if the result were complete.
                    if let Err(e) = self.interrupt.check() {
                        return Some(Err(e));
                    }
                    if !self.finished.load(Ordering::Relaxed) {
                        return Some(Err(QueryError::Internal("the analytic statement stopped before its last row".into())));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(finished: bool) -> AnalyticRows {
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        // The producer is gone: after the end of its stream, or in the middle of it (a panic).
        drop(tx);
        let finished = Arc::new(AtomicBool::new(finished));
        let stop = Arc::new(AtomicBool::new(false));
        AnalyticRows { rx, types: vec![], buf: Default::default(), interrupt: Interrupt::default(), done: false, stop, finished }
    }

    #[test]
    fn a_stream_that_ended_is_complete() {
        assert!(rows(true).next().is_none());
    }

    #[test]
    fn a_producer_gone_before_the_end_is_an_error_not_a_short_result() {
        let mut r = rows(false);
        assert!(matches!(r.next(), Some(Err(QueryError::Internal(_)))));
        assert!(r.next().is_none());
    }
}
