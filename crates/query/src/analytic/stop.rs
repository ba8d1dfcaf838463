//! Stopping a running DataFusion plan from inside, batch by batch.
//!
//! Dropping a statement's future stops DataFusion only where it yields to the runtime, and an operator
//! that keeps receiving ready batches never yields: `SELECT count(*) FROM t a, t b, t c, t d` over 500
//! rows pulls 62.5 billion rows through a cross join into an aggregate within one poll, and went on at
//! full CPU for hours after its client had gone or its statement_timeout had passed. So every operator
//! of the physical plan is wrapped ([`Stoppable`]): each batch it passes on first checks the statement's
//! cancel, timeout and reader-gone flags, and the first one set ends the plan with its error. The check
//! is an atomic load (and a clock read under a timeout) per batch of up to 8,192 rows.
//!
//! Planning is stopped too, between the rules that analyse and optimise a plan ([`with_checkpoints`]): a
//! rule is synchronous code within one poll, and some cost the square of an expression's depth
//! (DataFusion works out a binary expression's type from its operands' each time it asks), so a chain of
//! 4,000 additions took 16 s to plan, and went on planning after its statement_timeout had answered.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Statistics;
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::{AnalyzerRule, OptimizerConfig, OptimizerRule};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;

use crate::error::QueryError;
use crate::exec::Interrupt;

/// What stops one statement: a cancel request or its timeout, or its reader gone.
#[derive(Clone, Default)]
pub struct Watch {
    pub interrupt: Interrupt,
    /// Set when the reader of a streamed result has gone.
    pub gone: Arc<AtomicBool>,
}

impl Watch {
    /// Watching a cancel request and a timeout only: nothing reads the statement's rows yet.
    pub fn of(interrupt: Interrupt) -> Watch {
        Watch { interrupt, gone: Arc::default() }
    }

    pub fn check(&self) -> Result<()> {
        if self.gone.load(Ordering::Relaxed) {
            return Err(DataFusionError::External(Box::new(QueryError::Cancelled)));
        }
        self.interrupt.check().map_err(|e| DataFusionError::External(Box::new(e)))
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Watch")
    }
}

/// A rule that changes nothing and fails once the statement is to stop: one runs before each rule of the
/// analyser and of the logical and physical optimisers.
#[derive(Debug)]
pub struct Checkpoint(pub Watch);

impl AnalyzerRule for Checkpoint {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        self.0.check().map(|()| plan)
    }

    fn name(&self) -> &str {
        "tabula_checkpoint"
    }
}

impl OptimizerRule for Checkpoint {
    fn rewrite(&self, plan: LogicalPlan, _config: &dyn OptimizerConfig) -> Result<Transformed<LogicalPlan>> {
        self.0.check().map(|()| Transformed::no(plan))
    }

    fn name(&self) -> &str {
        "tabula_checkpoint"
    }
}

impl PhysicalOptimizerRule for Checkpoint {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        self.0.check().map(|()| plan)
    }

    fn name(&self) -> &str {
        "tabula_checkpoint"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `rules` with `checkpoint` before each.
pub fn with_checkpoints<R: ?Sized>(rules: &[Arc<R>], checkpoint: &Arc<R>) -> Vec<Arc<R>> {
    rules.iter().flat_map(|rule| [checkpoint.clone(), rule.clone()]).collect()
}

/// The last physical optimizer rule of a statement: wraps every operator in a [`Stoppable`].
#[derive(Debug)]
pub struct StopRule(pub Watch);

impl PhysicalOptimizerRule for StopRule {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let wrapped: Arc<dyn ExecutionPlan> = Arc::new(Stoppable { input: node, watch: self.0.clone() });
            Ok(Transformed::yes(wrapped))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tabula_stoppable"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// One operator whose batches are checked against the statement's [`Watch`] as they pass.
#[derive(Debug)]
struct Stoppable {
    input: Arc<dyn ExecutionPlan>,
    watch: Watch,
}

impl DisplayAs for Stoppable {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Stoppable")
    }
}

impl ExecutionPlan for Stoppable {
    fn name(&self) -> &str {
        "Stoppable"
    }

    /// Invisible to DataFusion's downcasts: the operator is what it wraps.
    fn downcast_delegate(&self) -> Option<&dyn ExecutionPlan> {
        Some(self.input.as_ref())
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children.pop().ok_or_else(|| DataFusionError::Internal("Stoppable needs its input".into()))?;
        Ok(Arc::new(Stoppable { input, watch: self.watch.clone() }))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        self.watch.check()?;
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let watch = self.watch.clone();
        let checked = input.map(move |batch| {
            watch.check()?;
            batch
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, checked)))
    }

    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(partition)]
    }

    fn statistics_from_inputs(&self, input_stats: &[Arc<Statistics>], _args: &StatisticsArgs) -> Result<Arc<Statistics>> {
        input_stats.first().cloned().ok_or_else(|| DataFusionError::Internal("Stoppable has no input statistics".into()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use tabula_kv::memory::MemoryEngine;
    use tabula_store::{Store, StoreConfig};

    use crate::analytic::{errors::map_err, ReadCtx, SessionInfo};
    use crate::error::QueryError;
    use crate::exec::Interrupt;

    /// The analyser, the logical optimiser and the physical one each stop at their next rule once the
    /// statement is cancelled.
    #[test]
    fn planning_stops_between_rules_once_the_statement_is_cancelled() {
        let store = Store::open(Arc::new(MemoryEngine::new()), StoreConfig { maintenance_interval: None, ..StoreConfig::default() });
        let db = crate::Database::new(Arc::new(store.unwrap())).unwrap();
        let analytics = db.analytics().unwrap();
        let interrupt = Interrupt::default();
        let read = ReadCtx {
            txn: None,
            view: None,
            now_us: 0,
            zone: crate::types::Zone::UTC,
            user: "tabula".into(),
            session_user: "tabula".into(),
            database: "tabula".into(),
            interrupt: interrupt.clone(),
            settings: Default::default(),
            session: 0,
            temp_tables: vec![],
        };
        let info = SessionInfo {
            settings: Default::default(),
            user: "tabula".into(),
            session_user: "tabula".into(),
            sequences: Default::default(),
            pid: 1,
            number: 1,
            client: None,
            server: None,
        };
        let state = analytics.state(read, &info, None).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let sql = "SELECT value % 7, count(*) FROM generate_series(1, 100) GROUP BY 1 ORDER BY 2";
        let plan = runtime.block_on(state.create_logical_plan(sql)).unwrap();
        let analyzed = state.analyzer().execute_and_check(plan.clone(), state.config_options(), |_, _| {}).unwrap();
        let optimized = state.optimize(&plan).unwrap();
        runtime.block_on(state.create_physical_plan(&plan)).unwrap();

        interrupt.cancelled.store(true, Ordering::Relaxed);
        let stopped = [
            state.analyzer().execute_and_check(plan.clone(), state.config_options(), |_, _| {}).map(|_| ()),
            state.optimizer().optimize(analyzed, &state, |_, _| {}).map(|_| ()),
            runtime.block_on(state.query_planner().create_physical_plan(&optimized, &state)).map(|_| ()),
        ];
        for (phase, result) in ["analyser", "optimiser", "physical planner"].iter().zip(stopped) {
            let e = result.expect_err(phase);
            assert!(matches!(map_err(e), QueryError::Cancelled), "{phase}");
        }
    }
}
