//! Stopping a running DataFusion plan from inside, batch by batch.
//!
//! Dropping a statement's future stops DataFusion only where it yields to the runtime, and an operator
//! that keeps receiving ready batches never yields: `SELECT count(*) FROM t a, t b, t c, t d` over 500
//! rows pulls 62.5 billion rows through a cross join into an aggregate within one poll, and went on at
//! full CPU for hours after its client had gone or its statement_timeout had passed. So every operator
//! of the physical plan is wrapped ([`Stoppable`]): each batch it passes on first checks the statement's
//! cancel, timeout and reader-gone flags, and the first one set ends the plan with its error. The check
//! is an atomic load (and a clock read under a timeout) per batch of up to 8,192 rows.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Statistics;
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
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
    fn check(&self) -> Result<()> {
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
