//! Streaming reads: a cursor pulls engine pages as the client consumes rows, so memory stays bounded
//! however many rows a scan returns. Used for auto-commit SELECTs whose order the scan gives.
//!
//! When the projection only picks columns and nothing filters, a page is never copied: the engine lends
//! each row (`Access::visit_range_latest`) and the cursor lends its values on to the caller's encoder
//! ([`RowSource::next_rows`]), text and integers still in RocksDB's buffer. Other scans build owned rows.

use std::collections::VecDeque;
use std::sync::Arc;

use tabula_store::{Access, Direction, LatestRow, LatestRows, PkBound, RangeRequest, ReadSpec, StoreError};

use crate::error::{QueryError, Result};
use crate::exec::{latest_sql_rows, Executor, Interrupt};
use crate::expr::{EvalCtx, Expr};
use crate::output::{lend_owned, RowSource};
use crate::plan::{AccessPath, KeyBound, Scan, SelectPlan, Versions};
use crate::types::SqlRow;
use crate::types::{Datum, DatumRef, Lent, SqlType};

/// What a cursor reads from: the store (the latest committed data) or a transaction's [`tabula_store::ReadView`].
pub type Reader = Arc<dyn Access + Send + Sync>;

/// Rows per engine page while streaming.
const PAGE: usize = 512;

/// Pages of one partition's range, read ahead by its own thread.
type PageRx = std::sync::mpsc::Receiver<Result<LatestRows>>;

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
    /// Full scans over several partitions: one reader thread per partition, consumed in key order.
    partitions: VecDeque<PageRx>,
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
    spec: ReadSpec,
    direction: Direction,
    next: Option<Vec<PkBound>>,
    end: Vec<PkBound>,
    buf: VecDeque<SqlRow>,
    skip: u64,
    remaining: Option<u64>,
    params: Vec<Datum>,
    now_us: i64,
    /// current_user, session_user, database: what the projection's expressions may ask for.
    names: [String; 3],
    interrupt: Interrupt,
}

impl Cursor {
    /// A cursor for a plan that can stream (a range or full scan of latest versions, in scan order), reading
    /// from `store`; `None` for other plans.
    pub fn try_new(
        store: Reader,
        plan: &SelectPlan,
        params: &[Datum],
        now_us: i64,
        // current_user, session_user, database
        [user, session_user, database]: [&str; 3],
        interrupt: &Interrupt,
    ) -> Result<Option<Cursor>> {
        let Some(scan) = &plan.scan else { return Ok(None) };
        if !plan.sort.is_empty() || scan.versions != Versions::Latest {
            return Ok(None);
        }
        let ctx = EvalCtx { params, now_us, user, session_user, database };
        let (start, end, direction) = match &scan.access {
            AccessPath::RangeScan { start, end, direction } => {
                let bound = |b: &[KeyBound]| -> Result<Option<Vec<PkBound>>> {
                    let mut out = Vec::with_capacity(b.len());
                    for (pos, k) in b.iter().enumerate() {
                        out.push(match k {
                            KeyBound::InfMin => PkBound::InfMin,
                            KeyBound::InfMax => PkBound::InfMax,
                            KeyBound::Value(e) => {
                                let ty = scan.table.column_type(scan.table.pk[pos]);
                                let d = e.eval(&[], &ctx)?;
                                if d.is_null() {
                                    return Ok(None);
                                }
                                let d = if matches!(d, Datum::Int(_)) && ty.is_integer() { d } else { d.cast(ty)? };
                                match d.to_pk(ty) {
                                    Some(v) => PkBound::Value(v),
                                    None => return Ok(None),
                                }
                            }
                        });
                    }
                    Ok(Some(out))
                };
                match (bound(start)?, bound(end)?) {
                    (Some(s), Some(e)) => (Some(s), e, *direction),
                    // A NULL bound matches nothing: an empty cursor.
                    _ => (None, vec![], *direction),
                }
            }
            AccessPath::FullScan { direction: Direction::Forward } => {
                (Some(vec![PkBound::InfMin]), vec![PkBound::InfMax], Direction::Forward)
            }
            AccessPath::FullScan { direction: Direction::Backward } => {
                (Some(vec![PkBound::InfMax]), vec![PkBound::InfMin], Direction::Backward)
            }
            _ => return Ok(None),
        };
        let ex = Executor::new(store.as_ref(), EvalCtx { params, now_us, user, session_user, database }, interrupt);
        let eval_u64 = |e: &Option<Expr>| -> Result<Option<u64>> { Ok(e.as_ref().map(|e| ex_u64(&ex, e)).transpose()?.flatten()) };
        let skip = eval_u64(&plan.offset)?.unwrap_or(0);
        let remaining = eval_u64(&plan.limit)?;
        // Rows come as the newest cell of each attribute the scan reads, in this order.
        let t = &scan.table;
        let slots: Vec<usize> = match &scan.columns {
            Some(cs) => cs.iter().copied().filter(|&c| c < t.columns.len() && !t.is_pk(c)).collect(),
            None => t.attributes().collect(),
        };
        let spec = ReadSpec {
            columns: Some(slots.iter().map(|&c| t.column_name(c).to_string()).collect()),
            max_versions: Some(1),
            time_range: None,
        };
        // A full scan of a split table reads its partitions in parallel, a few pages ahead each.
        let mut partitions = VecDeque::new();
        if matches!(scan.access, AccessPath::FullScan { .. }) {
            let starts = store.partition_starts(&scan.table.name)?;
            if !starts.is_empty() {
                let bound = |vals: &Vec<tabula_store::PkValue>| {
                    let mut b: Vec<PkBound> = vals.iter().cloned().map(PkBound::Value).collect();
                    b.push(PkBound::InfMin);
                    b
                };
                let mut ranges = Vec::new();
                let mut lo = vec![PkBound::InfMin];
                for st in &starts {
                    ranges.push((lo, bound(st)));
                    lo = bound(st);
                }
                ranges.push((lo, vec![PkBound::InfMax]));
                if direction == Direction::Backward {
                    ranges.reverse();
                }
                for (lo, hi) in ranges {
                    let (tx, rx) = std::sync::mpsc::sync_channel(2);
                    let (store, table, spec, interrupt) = (store.clone(), scan.table.name.clone(), spec.clone(), interrupt.clone());
                    std::thread::spawn(move || {
                        let (mut start, end) = if direction == Direction::Forward { (lo, hi) } else { (hi, lo) };
                        loop {
                            if let Err(e) = interrupt.check() {
                                let _ = tx.send(Err(e));
                                return;
                            }
                            let req = RangeRequest {
                                start,
                                end: end.clone(),
                                direction,
                                limit: Some(PAGE),
                                read: spec.clone(),
                                budget_bytes: None,
                            };
                            match store.get_range_latest(&table, &req) {
                                Ok(mut page) => {
                                    let next = page.next_start.take();
                                    // The consumer went away: stop reading.
                                    if tx.send(Ok(page)).is_err() {
                                        return;
                                    }
                                    match next {
                                        Some(n) => start = n.into_iter().map(PkBound::Value).collect(),
                                        None => return,
                                    }
                                }
                                Err(e) => {
                                    let _ = tx.send(Err(e.into()));
                                    return;
                                }
                            }
                        }
                    });
                    partitions.push_back(rx);
                }
            }
        }
        let next = if partitions.is_empty() { start } else { None };
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
        Ok(Some(Cursor {
            lend,
            slots,
            picks,
            picks_ascending,
            partitions,
            store,
            scan: scan.clone(),
            projection: plan.projection.clone(),
            spec,
            direction,
            next,
            end,
            buf: VecDeque::new(),
            skip,
            remaining,
            params: params.to_vec(),
            now_us,
            names: [user.to_string(), session_user.to_string(), database.to_string()],
            interrupt: interrupt.clone(),
        }))
    }

    /// Whether more rows may come.
    fn more(&self) -> bool {
        self.next.is_some() || !self.partitions.is_empty()
    }

    fn fetch(&mut self) -> Result<()> {
        let rows: LatestRows = if let Some(rx) = self.partitions.front() {
            match rx.recv() {
                Ok(page) => page?,
                // That partition's reader is done: go on with the next.
                Err(_) => {
                    self.partitions.pop_front();
                    return Ok(());
                }
            }
        } else {
            let Some(start) = self.next.take() else { return Ok(()) };
            self.interrupt.check()?;
            let req = self.page_request(start);
            let mut page = match self.store.get_range_latest(&self.scan.table.name, &req) {
                Ok(r) => r,
                Err(tabula_store::StoreError::InvalidRange(_)) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            self.next = page.next_start.take().map(|n| n.into_iter().map(PkBound::Value).collect());
            page
        };
        let ctx = eval_ctx(&self.params, self.now_us, &self.names);
        let (buf, filter) = (&mut self.buf, &self.scan.filter);
        latest_sql_rows(&self.scan.table, rows, &self.slots, |r| {
            if let Some(f) = filter {
                if !f.eval_predicate(&r, &ctx)? {
                    return Ok(());
                }
            }
            buf.push_back(r);
            Ok(())
        })
    }
}

impl Cursor {
    /// The engine read of the next page, from `start`.
    fn page_request(&self, start: Vec<PkBound>) -> RangeRequest {
        // Without a filter, a LIMIT bounds how much to read.
        let want = match (&self.scan.filter, self.remaining) {
            (None, Some(n)) => ((n + self.skip) as usize).clamp(1, PAGE),
            _ => PAGE,
        };
        RangeRequest {
            start,
            end: self.end.clone(),
            direction: self.direction,
            limit: Some(want),
            read: self.spec.clone(),
            budget_bytes: None,
        }
    }

    /// Reads one engine page and lends each row, as `lend` picks its columns, to `f` (see [`Lend`]).
    fn lend_page(&mut self, lend: &[Lend], f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
        if self.remaining == Some(0) {
            return Ok(false);
        }
        let Some(start) = self.next.take() else { return Ok(false) };
        self.interrupt.check()?;
        let req = self.page_request(start);
        let (skip, remaining) = (&mut self.skip, &mut self.remaining);
        let mut failed: Option<QueryError> = None;
        let visited = self.store.visit_range_latest(&self.scan.table.name, &req, &mut |row| {
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
        });
        match visited {
            Ok(next) => self.next = next.map(|n| n.into_iter().map(PkBound::Value).collect()),
            Err(StoreError::InvalidRange(_)) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        match failed {
            Some(e) => {
                self.next = None;
                Err(e)
            }
            None => Ok(true),
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
        if self.partitions.is_empty() && self.buf.is_empty() {
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
                let ctx = eval_ctx(&self.params, self.now_us, &self.names);
                return Some(self.projection.iter().map(|e| e.eval(&r, &ctx)).collect());
            }
            if !self.more() {
                return None;
            }
            if let Err(e) = self.fetch() {
                self.next = None;
                self.partitions.clear();
                return Some(Err(e));
            }
        }
    }
}

/// An evaluation context from a cursor's fields (its rows buffer stays free to borrow).
fn eval_ctx<'a>(params: &'a [Datum], now_us: i64, [user, session_user, database]: &'a [String; 3]) -> EvalCtx<'a> {
    EvalCtx { params, now_us, user, session_user, database }
}

impl std::fmt::Debug for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cursor on {}", self.scan.table.name)
    }
}
