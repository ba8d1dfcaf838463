//! Tabula tables as DataFusion tables. A scan takes the filters DataFusion pushes down, turns them into
//! Tabula expressions and lets the key-value planner choose the access path ([`choose_access`]), so
//! `WHERE pk = 1` under a join or an aggregate is still one point get. Outside a transaction the rows
//! stream from a cursor (bounded memory); inside one they are read from the transaction's snapshot.

use std::fmt;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{SchemaProvider, Session as DfSession, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr as DfExpr, Operator, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, ReplaceChildrenOptions};
use parking_lot::Mutex;
use tabula_store::Txn;

use super::arrow::{column_field, datum_of, rows_to_batch, sql_type_of};
use super::Source;
use crate::cursor::Cursor;
use crate::error::QueryError;
use crate::exec::Reader;
use crate::exec::{Executor, Interrupt};
use crate::expr::{BinOp, EvalCtx, Expr};
use crate::plan::{OutputColumn, Scan, SelectPlan, Versions};
use crate::planner::{choose_access, needed_columns, streams};
use crate::schema::TableSchema;
use crate::types::SqlRow;
use crate::types::{Datum, SqlType};

/// Rows per record batch a scan produces.
const BATCH_ROWS: usize = 4096;

/// What a statement's scans read with: set per statement on DataFusion's session config.
#[derive(Default)]
pub struct ReadCtx {
    /// The session's open transaction, lent for the statement: scans read its snapshot and writes.
    pub txn: Option<Arc<Mutex<Option<Txn>>>>,
    /// Instead of a transaction: the read view of one that has not written (what it reads), which scans
    /// may stream from after the statement has given the transaction back.
    pub view: Option<Reader>,
    pub now_us: i64,
    /// The session's `TimeZone`.
    pub zone: crate::types::Zone,
    /// `current_user` (SET ROLE) and `session_user`.
    pub user: String,
    pub session_user: String,
    pub database: String,
    pub interrupt: Interrupt,
    /// The session's settings, for pg_settings.
    pub settings: crate::settings::Settings,
    /// The session's number and its temporary tables' private names, which the catalog lists for it alone.
    pub session: u64,
    pub temp_tables: Vec<String>,
}

pub fn df_err(e: QueryError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The `public` schema: every Tabula table, looked up live in the catalog.
#[derive(Debug)]
pub struct PublicSchema {
    pub db: Weak<dyn Source>,
    /// The zone its timestamptz columns are labelled with: the session's ([`super::zoned`]).
    pub zone: Arc<str>,
}

impl PublicSchema {
    fn db(&self) -> DfResult<Arc<dyn Source>> {
        self.db.upgrade().ok_or_else(|| DataFusionError::Execution("the database is shut down".into()))
    }
}

#[async_trait]
impl SchemaProvider for PublicSchema {
    fn table_names(&self) -> Vec<String> {
        self.db.upgrade().map(|db| db.table_names()).unwrap_or_default()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let db = self.db()?;
        if let Some(def) =
            db.sequences().relations().ok().and_then(|all| all.into_iter().find(|t| t.name == name)).and_then(|t| t.sequence.clone())
        {
            let relation = super::sequences::SequenceRelation { db: self.db.clone(), name: name.to_string(), def };
            return Ok(Some(Arc::new(relation)));
        }
        match db.table(name) {
            Ok(t) => Ok(Some(Arc::new(TabulaTable::new(self.db.clone(), t, &self.zone)))),
            Err(QueryError::UndefinedTable(_)) => Ok(None),
            Err(e) => Err(df_err(e)),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.db.upgrade().is_some_and(|db| db.table(name).is_ok())
    }
}

/// One Tabula table as DataFusion sees it: the declared columns, in order.
pub struct TabulaTable {
    db: Weak<dyn Source>,
    table: Arc<TableSchema>,
    schema: SchemaRef,
    /// The primary key, so that a query grouped by it may select the table's other columns, as
    /// PostgreSQL allows of columns that depend on a grouped key (`SELECT k, v ... GROUP BY k`). None for
    /// a table keyed by its hidden row id.
    constraints: Option<datafusion::common::Constraints>,
}

impl fmt::Debug for TabulaTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TabulaTable({})", self.table.name)
    }
}

impl TabulaTable {
    /// `zone`: the label of its timestamptz columns, the session's zone as Arrow names it.
    pub fn new(db: Weak<dyn Source>, table: Arc<TableSchema>, zone: &Arc<str>) -> Self {
        // The visible columns: a hidden row id is last, so a column's index is the same in both.
        let fields: Vec<_> = table
            .visible()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let f = column_field(c, !(c.not_null || table.is_pk(i)));
                match f.data_type() {
                    DataType::Timestamp(unit, Some(_)) => {
                        let ty = DataType::Timestamp(*unit, Some(zone.clone()));
                        f.with_data_type(ty)
                    }
                    _ => f,
                }
            })
            .collect();
        let visible = table.visible().len();
        let constraints = (!table.pk.is_empty() && table.pk.iter().all(|&i| i < visible))
            .then(|| datafusion::common::Constraints::new_unverified(vec![datafusion::common::Constraint::PrimaryKey(table.pk.clone())]));
        TabulaTable { db, schema: Arc::new(Schema::new(fields)), table, constraints }
    }

    pub fn name(&self) -> &str {
        &self.table.name
    }
}

#[async_trait]
impl TableProvider for TabulaTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn constraints(&self) -> Option<&datafusion::common::Constraints> {
        self.constraints.as_ref()
    }

    fn supports_filters_pushdown(&self, filters: &[&DfExpr]) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match to_expr(f, &self.table) {
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[DfExpr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let read = state.config().get_extension::<ReadCtx>().unwrap_or_default();
        let db = self.db.upgrade().ok_or_else(|| DataFusionError::Execution("the database is shut down".into()))?;
        let t = &self.table;
        let mut conjuncts = Vec::new();
        for f in filters {
            let e = to_expr(f, t).ok_or_else(|| DataFusionError::Internal(format!("filter {f} was not accepted for pushdown")))?;
            conjuncts.extend(e.conjuncts());
        }
        let (access, residual) = choose_access(t, conjuncts);
        let cols: Vec<usize> = projection.cloned().unwrap_or_else(|| (0..t.visible().len()).collect());
        let exprs: Vec<Expr> =
            cols.iter().map(|&i| Expr::Column { index: i, ty: t.columns[i].ty, name: t.columns[i].name.clone() }).collect();
        let filter = Expr::and_all(residual);
        let needed = needed_columns(t, &exprs, filter.as_ref(), &[]);
        let mut access = access;
        crate::planner::cover(t, &mut access, needed.as_deref(), &Versions::Latest);
        let scan = Scan {
            table: t.clone(),
            access,
            filter,
            limit: limit.map(|l| Expr::literal(Datum::Int(l as i64))),
            versions: Versions::Latest,
            columns: needed,
            ranks: vec![],
        };
        let columns = cols.iter().map(|&i| OutputColumn { name: t.columns[i].name.clone(), ty: t.columns[i].ty, source: None }).collect();
        let stream = streams(Some(&scan), &[]);
        let plan =
            SelectPlan { scan: Some(scan), projection: exprs, columns, sort: vec![], offset: None, limit: None, lock: false, stream };
        let schema = Arc::new(self.schema.project(&cols)?);
        Ok(Arc::new(TabulaScanExec::new(db, plan, schema, read)))
    }
}

/// DataFusion's filter expression as a Tabula expression over the table's row, when it has one that
/// evaluates the same way. Casts between integer widths and between string kinds are no-ops for Tabula.
pub fn to_expr(e: &DfExpr, t: &TableSchema) -> Option<Expr> {
    Some(match e {
        DfExpr::Column(c) => {
            let index = t.column_index(&c.name)?;
            Expr::Column { index, ty: t.columns[index].ty, name: c.name.clone() }
        }
        DfExpr::Literal(v, _) => {
            let (d, ty) = datum_of(v)?;
            Expr::Literal(d, ty)
        }
        DfExpr::BinaryExpr(b) => {
            let op = match b.op {
                Operator::Eq => BinOp::Eq,
                Operator::NotEq => BinOp::NotEq,
                Operator::Lt => BinOp::Lt,
                Operator::LtEq => BinOp::LtEq,
                Operator::Gt => BinOp::Gt,
                Operator::GtEq => BinOp::GtEq,
                Operator::And => BinOp::And,
                Operator::Or => BinOp::Or,
                _ => return None,
            };
            Expr::Binary { op, left: Box::new(to_expr(&b.left, t)?), right: Box::new(to_expr(&b.right, t)?) }
        }
        DfExpr::Not(e) => Expr::Not(Box::new(to_expr(e, t)?)),
        DfExpr::IsNull(e) => Expr::IsNull { expr: Box::new(to_expr(e, t)?), negated: false },
        DfExpr::IsNotNull(e) => Expr::IsNull { expr: Box::new(to_expr(e, t)?), negated: true },
        DfExpr::InList(l) => Expr::InList {
            expr: Box::new(to_expr(&l.expr, t)?),
            list: l.list.iter().map(|e| to_expr(e, t)).collect::<Option<_>>()?,
            negated: l.negated,
        },
        DfExpr::Between(b) => Expr::Between {
            expr: Box::new(to_expr(&b.expr, t)?),
            low: Box::new(to_expr(&b.low, t)?),
            high: Box::new(to_expr(&b.high, t)?),
            negated: b.negated,
        },
        DfExpr::Like(l) if l.escape_char.is_none() => Expr::Like {
            expr: Box::new(to_expr(&l.expr, t)?),
            pattern: Box::new(to_expr(&l.pattern, t)?),
            negated: l.negated,
            case_insensitive: l.case_insensitive,
        },
        DfExpr::Cast(c) => {
            let inner = to_expr(&c.expr, t)?;
            let from = inner.ty();
            let to = sql_type_of(&c.field.data_type().clone());
            let stringy = |d: &DataType| matches!(d, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
            if (from.is_integer() && to.is_integer()) || (from.is_text() && stringy(c.field.data_type())) {
                inner
            } else if from.is_integer() && to == SqlType::Float8 {
                Expr::Cast { expr: Box::new(inner), ty: SqlType::Float8 }
            } else {
                return None;
            }
        }
        _ => return None,
    })
}

/// The scan node in DataFusion's physical plan: prints the access path Tabula chose.
pub struct TabulaScanExec {
    db: Arc<dyn Source>,
    plan: SelectPlan,
    schema: SchemaRef,
    read: Arc<ReadCtx>,
    properties: Arc<PlanProperties>,
}

impl TabulaScanExec {
    fn new(db: Arc<dyn Source>, plan: SelectPlan, schema: SchemaRef, read: Arc<ReadCtx>) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        TabulaScanExec { db, plan, schema, read, properties: Arc::new(properties) }
    }

    fn scan(&self) -> &Scan {
        self.plan.scan.as_ref().expect("a table scan")
    }

    /// Reads every row now: in the transaction, or by key lookups that do not stream.
    fn materialize(&self) -> Result<Vec<SqlRow>, QueryError> {
        let r = &self.read;
        let ctx = EvalCtx {
            params: &[],
            now_us: r.now_us,
            user: &r.user,
            session_user: &r.session_user,
            database: &r.database,
            zone: r.zone,
            sequences: None,
        };
        match (&r.txn, &r.view) {
            (Some(txn), _) => {
                let guard = txn.lock();
                let txn = guard.as_ref().ok_or_else(|| QueryError::Internal("the transaction is gone".into()))?;
                Executor::new(txn, ctx, &r.interrupt).select(&self.plan)
            }
            (None, Some(view)) => Executor::new(view.as_ref(), ctx, &r.interrupt).select(&self.plan),
            (None, None) => {
                let store = self.db.store().clone();
                let mut ex = Executor::new(store.as_ref(), ctx, &r.interrupt);
                ex.store = Some(store.clone());
                ex.select(&self.plan)
            }
        }
    }
}

impl fmt::Debug for TabulaScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TabulaScanExec({})", self.scan().table.name)
    }
}

impl DisplayAs for TabulaScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let s = self.scan();
        write!(f, "TabulaScan: {} on {}", s.access, s.table.name)?;
        if let Some(flt) = &s.filter {
            write!(f, " filter={flt}")?;
        }
        if let Some(l) = &s.limit {
            write!(f, " limit={l}")?;
        }
        if self.plan.stream {
            write!(f, " streamed")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for TabulaScanExec {
    fn name(&self) -> &str {
        "TabulaScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn ExecutionPlan>>) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(&self, _partition: usize, _context: Arc<TaskContext>) -> DfResult<SendableRecordBatchStream> {
        let schema = self.schema.clone();
        // A lent transaction that has written is read through: its own writes are in no snapshot.
        if self.read.txn.is_some() || !self.plan.stream {
            let rows = self.materialize().map_err(df_err)?;
            let batches = rows.chunks(BATCH_ROWS).map(|c| rows_to_batch(&schema, c)).collect::<Result<Vec<_>, _>>().map_err(df_err)?;
            return Ok(Box::pin(MemoryStream::try_new(batches, schema, None)?));
        }
        let r = &self.read;
        let reader: Reader = r.view.clone().unwrap_or_else(|| self.db.store().clone());
        let cursor = Cursor::new(reader, &self.plan, &[], r.now_us, r.zone, [&r.user, &r.session_user, &r.database], &r.interrupt)
            .map_err(df_err)?;
        // The cursor blocks on the engine: it runs on its own thread, a couple of batches ahead.
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
        let batch_schema = schema.clone();
        std::thread::Builder::new()
            .name("tabula-df-scan".into())
            .stack_size(crate::depth::STACK_BYTES)
            .spawn(move || stream_cursor(cursor, batch_schema, tx))
            .map_err(|e| DataFusionError::Execution(e.to_string()))?;
        let stream = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

fn stream_cursor(cursor: Cursor, schema: SchemaRef, tx: tokio::sync::mpsc::Sender<DfResult<RecordBatch>>) {
    let mut rows = Vec::with_capacity(BATCH_ROWS);
    for r in cursor {
        match r {
            Ok(row) => rows.push(row),
            Err(e) => {
                let _ = tx.blocking_send(Err(df_err(e)));
                return;
            }
        }
        if rows.len() == BATCH_ROWS {
            let batch = rows_to_batch(&schema, &rows).map_err(df_err);
            rows.clear();
            if tx.blocking_send(batch).is_err() {
                return; // the consumer stopped (a LIMIT was reached, or the statement ended)
            }
        }
    }
    if !rows.is_empty() {
        let _ = tx.blocking_send(rows_to_batch(&schema, &rows).map_err(df_err));
    }
}
