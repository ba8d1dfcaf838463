//! Streaming reads: a cursor pulls engine pages (from [`crate::exec::Pages`], or [`crate::exec::FanOut`]
//! over a split table) as the client consumes rows, so memory stays bounded however many rows a scan
//! returns. Used for every read the planner marked to stream ([`SelectPlan::stream`]) that does not run in
//! a transaction which has written.
//!
//! When the projection only picks columns and nothing filters, a page is never copied: the engine lends
//! each row (`Access::visit_range_latest`) and the cursor lends its values on to the caller's encoder
//! ([`RowSource::next_rows`]), text and integers still in RocksDB's buffer. Other scans build owned rows.

use std::collections::VecDeque;

use tabula_store::{LatestRow, LatestRows};

use crate::error::{QueryError, Result};
use crate::exec::{bound, latest, latest_read, latest_sql_rows, page_rows, Executor, FanOut, Interrupt, Pages, Reader};
use crate::expr::{EvalCtx, Expr};
use crate::output::{lend_owned, RowSource};
use crate::plan::{AccessPath, Scan, SelectPlan};
use crate::types::SqlRow;
use crate::types::{Datum, DatumRef, Lent, SqlType};

/// Where an output column of a lent row comes from.
#[derive(Debug, Clone, Copy)]
enum Lend {
    /// The `n`th key column.
    Key(usize),
    /// The `n`th cell read, of a column of this type.
    Cell(usize, SqlType),
    /// The `_version` pseudo-column: the newest of the cells' versions.
    Version,
    /// A column the scan does not read.
    Null,
}

pub struct Cursor {
    store: Reader,
    /// The scan's range, read a page at a time.
    pages: Pages,
    /// A full scan of a split table: its partitions read in parallel, instead of `pages`.
    fan_out: Option<FanOut<LatestRows>>,
    scan: Scan,
    projection: Vec<Expr>,
    /// When the projection only picks distinct columns: their indices, so values move out of the row.
    picks: Option<Vec<usize>>,
    /// The picks are in table order: they move down within the row itself.
    picks_ascending: bool,
    /// When the projection only picks columns and nothing filters the rows: each output column's source, so
    /// rows are lent to the encoder straight from the engine's buffers.
    lend: Option<Vec<Lend>>,
    /// The read's columns (named in `spec`), as column indices: where each cell of an engine row goes.
    slots: Vec<usize>,
    buf: VecDeque<SqlRow>,
    skip: u64,
    remaining: Option<u64>,
    params: Vec<Datum>,
    now_us: i64,
    zone: crate::types::Zone,
    /// current_user, session_user, database: what the projection's expressions may ask for.
    names: [String; 3],
    interrupt: Interrupt,
}

impl Cursor {
    /// A cursor over the rows of a plan the planner made to stream ([`SelectPlan::stream`]), read from `store`.
    pub fn new(
        store: Reader,
        plan: &SelectPlan,
        params: &[Datum],
        now_us: i64,
        zone: crate::types::Zone,
        // current_user, session_user, database
        [user, session_user, database]: [&str; 3],
        interrupt: &Interrupt,
    ) -> Result<Cursor> {
        let Some(scan) = plan.scan.as_ref().filter(|_| plan.stream) else {
            return Err(QueryError::Internal("a cursor over a plan that does not stream".into()));
        };
        let ctx = EvalCtx { params, now_us, user, session_user, database, zone, sequences: None };
        let ex = Executor::new(store.as_ref(), EvalCtx { params, now_us, user, session_user, database, zone, sequences: None }, interrupt);
        let eval_u64 = |e: &Option<Expr>| -> Result<Option<u64>> { Ok(e.as_ref().map(|e| ex_u64(&ex, e)).transpose()?.flatten()) };
        let skip = eval_u64(&plan.offset)?.unwrap_or(0);
        let remaining = eval_u64(&plan.limit)?;
        // Rows come as the newest cell of each attribute the scan reads, in this order.
        let t = &scan.table;
        let (slots, spec) = latest_read(scan);
        let table = &scan.table.name;
        let (pages, fan_out) = match &scan.access {
            AccessPath::RangeScan { start, end, direction } => match (bound(t, start, &ctx)?, bound(t, end, &ctx)?) {
                (Some(s), Some(e)) => (Pages::new(table, s, e, *direction, spec), None),
                // A NULL bound matches nothing: an empty cursor.
                _ => (Pages::empty(table, *direction, spec), None),
            },
            // A full scan of a split table reads its partitions in parallel, a few pages ahead each.
            AccessPath::FullScan { direction } => match FanOut::start(&store, table, *direction, &spec, interrupt, latest)? {
                Some(f) => (Pages::empty(table, *direction, spec), Some(f)),
                None => (Pages::all(table, *direction, spec), None),
            },
            _ => return Err(QueryError::Internal("a cursor over a plan that does not stream".into())),
        };
        let mut picks = Vec::with_capacity(plan.projection.len());
        for e in &plan.projection {
            match e {
                Expr::Column { index, .. } if !picks.contains(index) => picks.push(*index),
                _ => break,
            }
        }
        let picks = (picks.len() == plan.projection.len()).then_some(picks);
        let picks_ascending = picks.as_ref().is_some_and(|p| p.windows(2).all(|w| w[0] < w[1]));
        let lend = picks.as_ref().filter(|_| scan.filter.is_none()).map(|picks| {
            picks
                .iter()
                .map(|&c| {
                    if c == t.columns.len() {
                        Lend::Version
                    } else if let Some(pos) = t.pk.iter().position(|&k| k == c) {
                        Lend::Key(pos)
                    } else if let Some(slot) = slots.iter().position(|&s| s == c) {
                        Lend::Cell(slot, t.column_type(c))
                    } else {
                        Lend::Null
                    }
                })
                .collect()
        });
        Ok(Cursor {
            lend,
            slots,
            picks,
            picks_ascending,
            pages,
            fan_out,
            store,
            scan: scan.clone(),
            projection: plan.projection.clone(),
            buf: VecDeque::new(),
            skip,
            remaining,
            params: params.to_vec(),
            now_us,
            zone,
            names: [user.to_string(), session_user.to_string(), database.to_string()],
            interrupt: interrupt.clone(),
        })
    }

    /// Whether more rows may come.
    fn more(&self) -> bool {
        self.pages.more() || self.fan_out.as_ref().is_some_and(FanOut::more)
    }

    /// Rows to ask the engine for: without a filter, a LIMIT bounds how much to read.
    fn page_rows(&self) -> usize {
        page_rows(self.scan.filter.is_some(), self.remaining.map(|n| n + self.skip))
    }

    /// Reads the next page into `buf`, through the filter.
    fn fetch(&mut self) -> Result<()> {
        let page = match &mut self.fan_out {
            Some(f) => f.next_page().transpose()?,
            None => self.pages.next_page(self.store.as_ref(), &self.interrupt, self.page_rows(), latest)?,
        };
        // `None`: the range, or every partition, is read.
        let Some(rows) = page else { return Ok(()) };
        let ctx = eval_ctx(&self.params, self.now_us, self.zone, &self.names);
        let (buf, filter) = (&mut self.buf, &self.scan.filter);
        latest_sql_rows(&self.scan.table, rows, &self.slots, |r| {
            if let Some(f) = filter {
                if !f.eval_predicate(&r, &ctx)? {
                    return Ok(true);
                }
            }
            buf.push_back(r);
            Ok(true)
        })
    }

    /// Reads one engine page and lends each row, as `lend` picks its columns, to `f` (see [`Lend`]).
    fn lend_page(&mut self, lend: &[Lend], f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
        if self.remaining == Some(0) {
            return Ok(false);
        }
        let rows = self.page_rows();
        let (skip, remaining) = (&mut self.skip, &mut self.remaining);
        let mut failed: Option<QueryError> = None;
        let more = self.pages.visit_page(self.store.as_ref(), &self.interrupt, rows, &mut |row| {
            if *skip > 0 {
                *skip -= 1;
                return true;
            }
            if let Err(e) = lend_row(lend, row, f) {
                failed = Some(e);
                return false;
            }
            match remaining.as_mut() {
                Some(n) => {
                    *n -= 1;
                    *n > 0
                }
                None => true,
            }
        })?;
        match failed {
            Some(e) => {
                self.pages.stop();
                Err(e)
            }
            None => Ok(more),
        }
    }
}

/// Lends one engine row to `f`, its columns as `lend` picks them: text and integers borrowed from the
/// engine's buffer, other values converted.
fn lend_row(lend: &[Lend], row: &LatestRow<'_>, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<()> {
    let one = |l: &Lend| -> Result<Lent<'_>> {
        Ok(match *l {
            Lend::Key(pos) => Datum::lend_pk(&row.key[pos]),
            Lend::Cell(slot, ty) => match row.value(slot)? {
                Some(v) => Datum::lend_value(v, ty)?,
                None => Lent::Ref(DatumRef::Null),
            },
            Lend::Version => Lent::Ref((0..row.width()).filter_map(|i| row.version(i)).max().map_or(DatumRef::Null, DatumRef::Int)),
            Lend::Null => Lent::Ref(DatumRef::Null),
        })
    };
    // The usual row: a few columns, all lent as they lie, in an array on the stack.
    const INLINE: usize = 16;
    let mut refs = [DatumRef::Null; INLINE];
    for (i, l) in lend.iter().enumerate() {
        match (i < INLINE).then(|| one(l)).transpose()? {
            Some(Lent::Ref(r)) => refs[i] = r,
            // A converted value or a wide row: keep what is lent so far (each value is read once), and go on
            // with a vector.
            first => {
                let mut vals: Vec<Lent<'_>> = refs[..i].iter().map(|&r| Lent::Ref(r)).collect();
                vals.push(match first {
                    Some(v) => v,
                    None => one(l)?,
                });
                for l in &lend[i + 1..] {
                    vals.push(one(l)?);
                }
                let refs: Vec<DatumRef<'_>> = vals.iter().map(Lent::as_ref).collect();
                return f(&refs);
            }
        }
    }
    f(&refs[..lend.len()])
}

impl RowSource for Cursor {
    fn next_rows(&mut self, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
        // Pages of partition readers and filtered or computed rows go through owned rows.
        if self.fan_out.is_none() && self.buf.is_empty() {
            if let Some(lend) = self.lend.take() {
                let r = self.lend_page(&lend, f);
                self.lend = Some(lend);
                return r;
            }
        }
        let row = self.next();
        lend_owned(row, f)
    }
}

fn ex_u64(ex: &Executor, e: &Expr) -> Result<Option<u64>> {
    ex.eval_limit(e)
}

impl Iterator for Cursor {
    type Item = Result<SqlRow>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.remaining == Some(0) {
                return None;
            }
            if let Some(r) = self.buf.pop_front() {
                if self.skip > 0 {
                    self.skip -= 1;
                    continue;
                }
                if let Some(n) = self.remaining.as_mut() {
                    *n -= 1;
                }
                if let Some(picks) = &self.picks {
                    let mut r = r;
                    // Columns picked in table order (the usual case) are moved down within the row itself.
                    if self.picks_ascending && picks.last().is_none_or(|&l| l < r.len()) {
                        for (to, &from) in picks.iter().enumerate() {
                            r.swap(to, from);
                        }
                        r.truncate(picks.len());
                        return Some(Ok(r));
                    }
                    return Some(Ok(picks
                        .iter()
                        .map(|&i| r.get_mut(i).map(|d| std::mem::replace(d, Datum::Null)).unwrap_or(Datum::Null))
                        .collect()));
                }
                let ctx = eval_ctx(&self.params, self.now_us, self.zone, &self.names);
                return Some(self.projection.iter().map(|e| e.eval(&r, &ctx)).collect());
            }
            if !self.more() {
                return None;
            }
            if let Err(e) = self.fetch() {
                self.pages.stop();
                self.fan_out = None;
                return Some(Err(e));
            }
        }
    }
}

/// An evaluation context from a cursor's fields (its rows buffer stays free to borrow).
fn eval_ctx<'a>(
    params: &'a [Datum],
    now_us: i64,
    zone: crate::types::Zone,
    [user, session_user, database]: &'a [String; 3],
) -> EvalCtx<'a> {
    EvalCtx { params, now_us, user, session_user, database, zone, sequences: None }
}

impl std::fmt::Debug for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cursor on {}", self.scan.table.name)
    }
}
