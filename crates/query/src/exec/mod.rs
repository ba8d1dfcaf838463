//! Execution of plans on the engine, through [`Access`]: the store itself (each call commits on its own)
//! or a transaction.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tabula_store::{
    Access, CellWrite, Condition, Direction, IndexRange, LatestRows, PkBound, PkValue, RangeRequest, ReadSpec, Row, StoreError, TimeRange,
    UpdateOp, Value,
};

use crate::error::{QueryError, Result};
use crate::expr::{increment_of, EvalCtx, Expr};
use crate::plan::*;
use crate::schema::TableSchema;
use crate::types::{Datum, SqlRow, SqlType};

mod foreign_key;
mod modify;
mod one_call;
mod pages;
mod scan;
mod upsert;
mod write;

pub use foreign_key::FkCheck;
pub use modify::{Enough, Modified};
pub use one_call::{key_update, upsert};
pub use pages::{latest, page_rows, FanOut, Pages, Reader};
pub use scan::{latest_read, latest_sql_rows, Resume};
pub use write::{check_row, prepare_row, PreparedRow};

/// Stops a running statement: a cancel request or a statement timeout.
#[derive(Default, Clone)]
pub struct Interrupt {
    pub cancelled: Arc<AtomicBool>,
    /// Shared with the streams the statement opens: a result read after its statement returned keeps the
    /// statement's deadline, and a cursor's stream is given each FETCH's.
    pub deadline: Arc<Deadline>,
    /// The server's memory budgets, which the rows a statement holds count against (`None`: unbounded).
    pub memory: Option<Arc<crate::memory::ServerMemory>>,
}

impl Interrupt {
    pub fn check(&self) -> Result<()> {
        if self.cancelled.load(Ordering::Relaxed) {
            return Err(QueryError::Cancelled);
        }
        if self.deadline.passed() {
            return Err(QueryError::StatementTimeout);
        }
        Ok(())
    }
}

/// When a statement times out (`None`: never).
#[derive(Default, Debug)]
pub struct Deadline(parking_lot::Mutex<Option<Instant>>);

impl Deadline {
    pub fn at(when: Option<Instant>) -> Deadline {
        Deadline(parking_lot::Mutex::new(when))
    }

    pub fn get(&self) -> Option<Instant> {
        *self.0.lock()
    }

    pub fn set(&self, when: Option<Instant>) {
        *self.0.lock() = when;
    }

    fn passed(&self) -> bool {
        self.get().is_some_and(|d| Instant::now() >= d)
    }
}

/// Counters of one scan, for EXPLAIN ANALYZE.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScanStats {
    pub examined: u64,
    pub returned: u64,
    pub engine_calls: u64,
    pub micros: u64,
    /// Transactions an UPDATE or DELETE outside a transaction block committed (see `modify`).
    pub batches: u64,
}

pub struct Executor<'a> {
    pub access: &'a dyn Access,
    /// Set when reading committed data outside a transaction: full scans then read partitions in parallel.
    pub store: Option<Reader>,
    /// The store's catalog, for Tabula's own views.
    pub system: Option<&'a tabula_store::Store>,
    pub ctx: EvalCtx<'a>,
    pub interrupt: &'a Interrupt,
    pub stats: std::cell::Cell<ScanStats>,
    /// The last value an INSERT drew for a generated partition-key column (the session's `currval`).
    pub drawn: std::cell::Cell<Option<i64>>,
    /// The tables, for what foreign keys need (`None`: no statement here writes a table that has some).
    pub catalog: Option<&'a dyn crate::planner::Catalog>,
    /// The foreign-key checks the statement's writes leave, for the session to run.
    pub pending: std::cell::RefCell<Vec<FkCheck>>,
    /// ON UPDATE actions within a table's own rows, put off to the statement's end
    /// (`Executor::settle_cascades`), and whether they are being run.
    cascades: std::cell::RefCell<Vec<foreign_key::Change>>,
    settling: std::cell::Cell<bool>,
}

/// About what a row takes in memory: its values and what text and bytes hold on the heap.
fn row_bytes(r: &SqlRow) -> usize {
    let heap: usize = r
        .iter()
        .map(|d| match d {
            Datum::Text(s) => s.len(),
            Datum::Bytes(b) => b.len(),
            _ => 0,
        })
        .sum();
    std::mem::size_of::<SqlRow>() + r.len() * std::mem::size_of::<Datum>() + heap
}

fn store_err(e: StoreError) -> QueryError {
    e.into()
}

impl<'a> Executor<'a> {
    pub fn new(access: &'a dyn Access, ctx: EvalCtx<'a>, interrupt: &'a Interrupt) -> Self {
        Executor {
            access,
            store: None,
            system: None,
            ctx,
            interrupt,
            stats: Default::default(),
            drawn: Default::default(),
            catalog: None,
            pending: Default::default(),
            cascades: Default::default(),
            settling: Default::default(),
        }
    }

    fn eval_const(&self, e: &Expr) -> Result<Datum> {
        e.eval(&[], &self.ctx)
    }

    /// A `_version = v` value, in ms.
    fn eval_version(&self, e: &Option<Expr>) -> Result<Option<i64>> {
        Ok(e.as_ref().map(|e| self.eval_const(e)).transpose()?.map(|d| d.cast(SqlType::Int8)).transpose()?.and_then(|d| d.as_int()))
    }

    /// A LIMIT or OFFSET value.
    pub fn eval_limit(&self, e: &Expr) -> Result<Option<u64>> {
        self.eval_u64(&Some(e.clone()))
    }

    /// An engine row as SQL rows (latest versions).
    fn eval_u64(&self, e: &Option<Expr>) -> Result<Option<u64>> {
        let Some(e) = e else { return Ok(None) };
        match self.eval_const(e)? {
            Datum::Null => Ok(None),
            Datum::Int(i) if i >= 0 => Ok(Some(i as u64)),
            Datum::Int(_) => Err(QueryError::InvalidParameterValue("LIMIT and OFFSET must not be negative".into())),
            d => Err(QueryError::DatatypeMismatch(format!("argument of LIMIT must be type bigint, not type {}", d.natural_type()))),
        }
    }

    fn read_spec(&self, scan: &Scan) -> Result<ReadSpec> {
        let t = &scan.table;
        let columns = scan.columns.as_ref().map(|cs| cs.iter().map(|c| t.column_name(*c).to_string()).collect());
        Ok(match &scan.versions {
            Versions::Latest => ReadSpec { columns, max_versions: Some(1), time_range: None },
            Versions::AsOf(e) => {
                let ms = self
                    .eval_const(e)?
                    .as_int()
                    .ok_or_else(|| QueryError::InvalidParameterValue("as_of must be a number of milliseconds".into()))?;
                ReadSpec {
                    columns,
                    max_versions: Some(1),
                    time_range: Some(TimeRange::Range { start: i64::MIN, end: ms.saturating_add(1) }),
                }
            }
            Versions::History { latest_n, after_or_equal, before } => {
                let n = match latest_n {
                    Some(e) => {
                        let n = self.eval_const(e)?.as_int().unwrap_or(0);
                        if n < 1 {
                            return Err(QueryError::InvalidParameterValue(format!("latest_n must be at least 1, got {n}")));
                        }
                        n.min(u32::MAX as i64) as u32
                    }
                    None => u32::MAX,
                };
                let start = after_or_equal.as_ref().map(|e| self.eval_const(e)).transpose()?.and_then(|d| d.as_int()).unwrap_or(i64::MIN);
                let end = before.as_ref().map(|e| self.eval_const(e)).transpose()?.and_then(|d| d.as_int()).unwrap_or(i64::MAX);
                let time_range = (after_or_equal.is_some() || before.is_some()).then_some(TimeRange::Range { start, end });
                ReadSpec { columns, max_versions: Some(n), time_range }
            }
        })
    }
}

/// The key a point or batch get reads: each key column's value, or `None` when one is NULL (matching nothing).
pub fn key(t: &TableSchema, exprs: &[Expr], ctx: &EvalCtx) -> Result<Option<Vec<PkValue>>> {
    let mut out = Vec::with_capacity(exprs.len());
    for (pos, e) in exprs.iter().enumerate() {
        match key_value(t, pos, e, ctx)? {
            Some(v) => out.push(v),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// The ranges an index scan reads, one per distinct lookup (its constants as the columns store them), none
/// covered by another (a lookup of `(1)` covers one of `(1, 2)`), so that no row comes twice; `None` when
/// a bound is NULL, which matches nothing. A lookup with a NULL is left out for the same reason.
pub fn index_ranges(
    t: &TableSchema,
    index: &str,
    lookups: &[Vec<Expr>],
    lower: &Option<(bool, Expr)>,
    upper: &Option<(bool, Expr)>,
    backward: bool,
    ctx: &EvalCtx,
) -> Result<Option<Vec<IndexRange>>> {
    let ix = t.indexes.iter().find(|i| i.name == index).ok_or_else(|| QueryError::Internal(format!("index {index} is gone")))?;
    let value = |e: &Expr, col: usize| -> Result<Option<Value>> {
        let d = e.eval(&[], ctx)?;
        if d.is_null() {
            return Ok(None);
        }
        // An integer is stored as an i64 whatever the column's width, and text as it is: no cast, which
        // could fail where a comparison only answers false.
        let ty = t.column_type(col);
        let d =
            if (ty.is_integer() && matches!(d, Datum::Int(_))) || (ty.is_text() && matches!(d, Datum::Text(_))) { d } else { d.cast(ty)? };
        Ok(d.to_value())
    };
    let next = lookups.first().map_or(0, Vec::len);
    let bound = |b: &Option<(bool, Expr)>| -> Result<Option<Option<(Value, bool)>>> {
        match b {
            None => Ok(Some(None)),
            Some((incl, e)) => Ok(value(e, ix.columns[next])?.map(|v| Some((v, *incl)))),
        }
    };
    let (Some(lower), Some(upper)) = (bound(lower)?, bound(upper)?) else { return Ok(None) };
    let mut ranges: Vec<IndexRange> = Vec::with_capacity(lookups.len());
    'lookups: for l in lookups {
        let mut eq = Vec::with_capacity(l.len());
        for (e, &col) in l.iter().zip(&ix.columns) {
            match value(e, col)? {
                Some(v) => eq.push(Some(v)),
                None => continue 'lookups,
            }
        }
        ranges.push(IndexRange { eq, lower: lower.clone(), upper: upper.clone(), backward });
    }
    // Lookups differ in length only without bounds (ORs): one covers another that starts with it.
    let covers = |a: &IndexRange, b: &IndexRange| b.eq.starts_with(&a.eq) && a.eq.len() <= b.eq.len();
    let mut kept: Vec<IndexRange> = Vec::with_capacity(ranges.len());
    for r in &ranges {
        if !kept.iter().any(|k| covers(k, r)) && !ranges.iter().any(|o| covers(o, r) && o.eq.len() < r.eq.len()) {
            kept.push(r.clone());
        }
    }
    Ok(Some(kept))
}

/// One end of a range scan as the engine takes it, or `None` when a value in it is NULL (matching nothing).
pub fn bound(t: &TableSchema, b: &[KeyBound], ctx: &EvalCtx) -> Result<Option<Vec<PkBound>>> {
    let mut out = Vec::with_capacity(b.len());
    for (pos, k) in b.iter().enumerate() {
        out.push(match k {
            KeyBound::InfMin => PkBound::InfMin,
            KeyBound::InfMax => PkBound::InfMax,
            KeyBound::Value(e) => match key_value(t, pos, e, ctx)? {
                Some(v) => PkBound::Value(v),
                None => return Ok(None),
            },
        });
    }
    Ok(Some(out))
}

/// The value of the `pos`th key column, cast to its type, or `None` when it is NULL or out of its range.
fn key_value(t: &TableSchema, pos: usize, e: &Expr, ctx: &EvalCtx) -> Result<Option<PkValue>> {
    let ty = t.column_type(t.pk[pos]);
    let d = e.eval(&[], ctx)?;
    if d.is_null() {
        return Ok(None);
    }
    let d = match (&d, ty.pk_type()) {
        (Datum::Int(_), Some(tabula_store::PkType::Integer)) => d,
        _ => d.cast(ty)?,
    };
    Ok(d.to_pk(ty))
}
