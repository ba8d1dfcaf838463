//! Execution of plans on the engine, through [`Access`]: the store itself (each call commits on its own)
//! or a transaction.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tabula_store::{
    Access, CellWrite, Condition, Direction, LatestRows, PkBound, PkValue, RangeRequest, ReadSpec, Row, StoreError, TimeRange, UpdateOp,
};

use crate::error::{QueryError, Result};
use crate::expr::{BinOp, EvalCtx, Expr};
use crate::plan::*;
use crate::schema::TableSchema;
use crate::types::{Datum, SqlRow, SqlType};

/// Rows fetched from the engine per range call.
const PAGE_ROWS: usize = 1024;

/// The rows of a latest-value page as SQL rows, each handed to `f` (what `sql_rows` makes of a one-version
/// read): `slots[i]` is the column index of a row's `i`th cell; the `_version` pseudo-column is the newest of
/// the cells' versions.
pub fn latest_sql_rows(t: &TableSchema, page: LatestRows, slots: &[usize], mut f: impl FnMut(SqlRow) -> Result<()>) -> Result<()> {
    let n = t.columns.len();
    let rows = page.len();
    let (mut keys, mut cells) = (page.keys.into_iter(), page.cells.into_iter());
    for _ in 0..rows {
        let mut out = vec![Datum::Null; n + 1];
        // Zip takes from the slots first, so each row takes exactly its own values.
        for (&ci, v) in t.pk.iter().zip(keys.by_ref()) {
            out[ci] = Datum::from_owned_pk(v);
        }
        let mut latest: Option<i64> = None;
        for (&ci, cell) in slots.iter().zip(cells.by_ref()) {
            let Some(cell) = cell else { continue };
            latest = Some(latest.map_or(cell.version, |l| l.max(cell.version)));
            out[ci] = Datum::from_owned_value(cell.value, t.column_type(ci))?;
        }
        out[n] = latest.map(Datum::Int).unwrap_or(Datum::Null);
        f(out)?;
    }
    Ok(())
}

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

/// (start, end) bounds of a partition's key range.
type KeyRanges = Vec<(Vec<PkBound>, Vec<PkBound>)>;

/// Counters of one scan, for EXPLAIN ANALYZE.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScanStats {
    pub examined: u64,
    pub returned: u64,
    pub engine_calls: u64,
    pub micros: u64,
}

pub struct Executor<'a> {
    pub access: &'a dyn Access,
    /// Set when reading committed data outside a transaction: full scans then read partitions in parallel.
    pub store: Option<&'a tabula_store::Store>,
    /// The store's catalog, for Tabula's own views.
    pub system: Option<&'a tabula_store::Store>,
    pub ctx: EvalCtx<'a>,
    pub interrupt: &'a Interrupt,
    pub stats: std::cell::Cell<ScanStats>,
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
        Executor { access, store: None, system: None, ctx, interrupt, stats: Default::default() }
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

    /// A key value for a key column, or `None` when it is NULL (matching nothing).
    fn key_value(&self, t: &TableSchema, pos: usize, e: &Expr) -> Result<Option<PkValue>> {
        let ty = t.column_type(t.pk[pos]);
        let d = self.eval_const(e)?;
        if d.is_null() {
            return Ok(None);
        }
        let d = match (&d, ty.pk_type()) {
            (Datum::Int(_), Some(tabula_store::PkType::Integer)) => d,
            _ => d.cast(ty)?,
        };
        Ok(d.to_pk(ty))
    }

    fn key(&self, t: &TableSchema, exprs: &[Expr]) -> Result<Option<Vec<PkValue>>> {
        let mut out = Vec::with_capacity(exprs.len());
        for (pos, e) in exprs.iter().enumerate() {
            match self.key_value(t, pos, e)? {
                Some(v) => out.push(v),
                None => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    fn bound(&self, t: &TableSchema, b: &[KeyBound]) -> Result<Option<Vec<PkBound>>> {
        let mut out = Vec::with_capacity(b.len());
        for (pos, k) in b.iter().enumerate() {
            out.push(match k {
                KeyBound::InfMin => PkBound::InfMin,
                KeyBound::InfMax => PkBound::InfMax,
                KeyBound::Value(e) => match self.key_value(t, pos, e)? {
                    Some(v) => PkBound::Value(v),
                    None => return Ok(None),
                },
            });
        }
        Ok(Some(out))
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

    /// Turns an engine row into SQL rows: one, or one per version in history mode. Takes the row so that
    /// its values move into the SQL row rather than being copied.
    fn sql_rows(&self, t: &TableSchema, row: Row, versions: &Versions, out: &mut Vec<SqlRow>) -> Result<()> {
        let n = t.columns.len();
        let mut base = vec![Datum::Null; n + 1];
        for (pos, &ci) in t.pk.iter().enumerate() {
            base[ci] = Datum::from_pk(&row.pk[pos]);
        }
        match versions {
            Versions::Latest | Versions::AsOf(_) => {
                if matches!(versions, Versions::AsOf(_)) && row.columns.is_empty() {
                    return Ok(());
                }
                let mut latest: Option<i64> = None;
                for (name, cells) in row.columns {
                    let Some(cell) = cells.into_iter().next() else { continue };
                    latest = Some(latest.map_or(cell.version, |l: i64| l.max(cell.version)));
                    if let Some(ci) = t.column_index(&name).filter(|i| *i < n && !t.is_pk(*i)) {
                        base[ci] = Datum::from_owned_value(cell.value, t.column_type(ci))?;
                    }
                }
                base[n] = latest.map(Datum::Int).unwrap_or(Datum::Null);
                out.push(base);
            }
            Versions::History { .. } => {
                let mut versions: Vec<i64> = row.columns.iter().flat_map(|(_, cells)| cells.iter().map(|c| c.version)).collect();
                versions.sort_unstable_by(|a, b| b.cmp(a));
                versions.dedup();
                for v in versions {
                    let mut r = base.clone();
                    for (name, cells) in &row.columns {
                        if let (Some(ci), Some(cell)) =
                            (t.column_index(name).filter(|i| *i < n && !t.is_pk(*i)), cells.iter().find(|c| c.version == v))
                        {
                            r[ci] = Datum::from_value(&cell.value, t.column_type(ci))?;
                        }
                    }
                    r[n] = Datum::Int(v);
                    out.push(r);
                }
            }
        }
        Ok(())
    }

    /// Runs a scan, calling `f` with each row that passes the filter until it returns `false`.
    pub fn scan(&self, scan: &Scan, mut f: impl FnMut(SqlRow) -> Result<bool>) -> Result<()> {
        let started = Instant::now();
        let t = &scan.table;
        let spec = self.read_spec(scan)?;
        let mut limit = self.eval_u64(&scan.limit)?;
        let mut stats = self.stats.get();
        let mut buf = Vec::new();
        // Feeds engine rows through the filter; false once the consumer or the limit is done.
        let mut feed = |rows: Vec<Row>, stats: &mut ScanStats| -> Result<bool> {
            for row in rows {
                stats.examined += 1;
                buf.clear();
                self.sql_rows(t, row, &scan.versions, &mut buf)?;
                for r in buf.drain(..) {
                    if let Some(flt) = &scan.filter {
                        if !flt.eval_predicate(&r, &self.ctx)? {
                            continue;
                        }
                    }
                    if limit == Some(0) {
                        return Ok(false);
                    }
                    stats.returned += 1;
                    if let Some(l) = limit.as_mut() {
                        *l -= 1;
                    }
                    if !f(r)? {
                        return Ok(false);
                    }
                }
            }
            Ok(limit != Some(0))
        };
        match &scan.access {
            AccessPath::PointGet { key } => {
                if let Some(pk) = self.key(t, key)? {
                    stats.engine_calls += 1;
                    if let Some(row) = self.access.get_row(&t.name, &pk, &spec).map_err(store_err)? {
                        feed(vec![row], &mut stats)?;
                    }
                }
            }
            AccessPath::BatchGet { keys } => {
                let mut pks = Vec::with_capacity(keys.len());
                for k in keys {
                    if let Some(pk) = self.key(t, k)? {
                        if !pks.contains(&pk) {
                            pks.push(pk);
                        }
                    }
                }
                if !pks.is_empty() {
                    stats.engine_calls += 1;
                    let rows: Vec<Row> = self.access.batch_get(&t.name, &pks, &spec).map_err(store_err)?.into_iter().flatten().collect();
                    feed(rows, &mut stats)?;
                }
            }
            AccessPath::RangeScan { start, end, direction } => {
                if let (Some(s), Some(e)) = (self.bound(t, start)?, self.bound(t, end)?) {
                    self.range(scan, s, e, *direction, &spec, &mut stats, &mut feed)?;
                }
            }
            AccessPath::System(view) => {
                let store = self.system.ok_or_else(|| QueryError::Internal("system views need the store".into()))?;
                for r in view.rows(store)? {
                    stats.examined += 1;
                    if let Some(flt) = &scan.filter {
                        if !flt.eval_predicate(&r, &self.ctx)? {
                            continue;
                        }
                    }
                    stats.returned += 1;
                    if !f(r)? {
                        break;
                    }
                }
            }
            AccessPath::FullScan { direction } if scan.limit.is_none() && self.parallel_ranges(scan)?.is_some() => {
                let ranges = self.parallel_ranges(scan)?.unwrap();
                self.parallel_scan(scan, ranges, *direction, &spec, &mut stats, &mut feed)?;
            }
            AccessPath::FullScan { direction } => {
                let (s, e) = match direction {
                    Direction::Forward => (vec![PkBound::InfMin], vec![PkBound::InfMax]),
                    Direction::Backward => (vec![PkBound::InfMax], vec![PkBound::InfMin]),
                };
                self.range(scan, s, e, *direction, &spec, &mut stats, &mut feed)?;
            }
        }
        stats.micros += started.elapsed().as_micros() as u64;
        self.stats.set(stats);
        Ok(())
    }

    /// Key ranges of the table's partitions, when there are several and the store can be read directly.
    fn parallel_ranges(&self, scan: &Scan) -> Result<Option<KeyRanges>> {
        let Some(store) = self.store else { return Ok(None) };
        let starts = store.partition_starts(&scan.table.name).map_err(store_err)?;
        if starts.is_empty() {
            return Ok(None);
        }
        let bound = |vals: &Vec<PkValue>| {
            let mut b: Vec<PkBound> = vals.iter().cloned().map(PkBound::Value).collect();
            b.push(PkBound::InfMin);
            b
        };
        let mut ranges = Vec::with_capacity(starts.len() + 1);
        let mut lo = vec![PkBound::InfMin];
        for s in &starts {
            ranges.push((lo, bound(s)));
            lo = bound(s);
        }
        ranges.push((lo, vec![PkBound::InfMax]));
        Ok(Some(ranges))
    }

    /// Reads each partition's range on its own thread, then passes the rows on in key order.
    fn parallel_scan(
        &self,
        scan: &Scan,
        ranges: Vec<(Vec<PkBound>, Vec<PkBound>)>,
        direction: Direction,
        spec: &ReadSpec,
        stats: &mut ScanStats,
        feed: &mut dyn FnMut(Vec<Row>, &mut ScanStats) -> Result<bool>,
    ) -> Result<()> {
        let store = self.store.expect("parallel scans read the store");
        let table = scan.table.name.as_str();
        let interrupt = self.interrupt;
        let results: Vec<Result<Vec<Row>>> = std::thread::scope(|s| {
            let handles: Vec<_> = ranges
                .into_iter()
                .map(|(lo, hi)| {
                    s.spawn(move || -> Result<Vec<Row>> {
                        let (mut start, end) = match direction {
                            Direction::Forward => (lo, hi),
                            Direction::Backward => (hi, lo),
                        };
                        let mut rows = Vec::new();
                        loop {
                            interrupt.check()?;
                            let req = RangeRequest {
                                start,
                                end: end.clone(),
                                direction,
                                limit: Some(PAGE_ROWS),
                                read: spec.clone(),
                                budget_bytes: None,
                            };
                            let res = store.get_range(table, &req).map_err(store_err)?;
                            rows.extend(res.rows);
                            match res.next_start {
                                Some(n) => start = n.into_iter().map(PkBound::Value).collect(),
                                None => return Ok(rows),
                            }
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(QueryError::Internal("scan thread panicked".into())))).collect()
        });
        let mut parts = results.into_iter().collect::<Result<Vec<_>>>()?;
        if direction == Direction::Backward {
            parts.reverse();
        }
        for rows in parts {
            stats.engine_calls += 1;
            if !feed(rows, stats)? {
                break;
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn range(
        &self,
        scan: &Scan,
        mut start: Vec<PkBound>,
        end: Vec<PkBound>,
        direction: Direction,
        spec: &ReadSpec,
        stats: &mut ScanStats,
        feed: &mut dyn FnMut(Vec<Row>, &mut ScanStats) -> Result<bool>,
    ) -> Result<()> {
        let page_limit = match (&scan.filter, self.eval_u64(&scan.limit)?) {
            (None, Some(l)) => (l as usize).clamp(1, PAGE_ROWS),
            _ => PAGE_ROWS,
        };
        loop {
            self.interrupt.check()?;
            let req = RangeRequest { start, end: end.clone(), direction, limit: Some(page_limit), read: spec.clone(), budget_bytes: None };
            stats.engine_calls += 1;
            let res = match self.access.get_range(&scan.table.name, &req) {
                Ok(r) => r,
                // Contradictory bounds (`k > 5 AND k < 3`): nothing matches.
                Err(StoreError::InvalidRange(_)) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            if !feed(res.rows, stats)? {
                return Ok(());
            }
            match res.next_start {
                Some(next) => start = next.into_iter().map(PkBound::Value).collect(),
                None => return Ok(()),
            }
        }
    }

    pub fn select(&self, p: &SelectPlan) -> Result<Vec<SqlRow>> {
        let offset = self.eval_u64(&p.offset)?.unwrap_or(0);
        let limit = self.eval_u64(&p.limit)?;
        let mut rows: Vec<SqlRow> = Vec::new();
        let mut held = self.interrupt.memory.clone().map(crate::memory::HeldRows::new);
        let hold = |held: &mut Option<crate::memory::HeldRows>, r: &SqlRow| -> Result<()> {
            match held {
                Some(h) => h.add(row_bytes(r)).map_err(|message| QueryError::Engine { sqlstate: "53200", message }),
                None => Ok(()),
            }
        };
        let mut skipped = 0u64;
        if !p.sort.is_empty() {
            // Sorted with their keys. Under a LIMIT only the first offset + limit rows can be returned: the
            // rows are cut back to those whenever twice as many are held, so that memory follows the limit,
            // not the table. The sort is stable, so cutting early keeps the rows a full sort would.
            let keep = limit.map(|l| l.saturating_add(offset) as usize);
            let mut keyed: Vec<(Vec<Datum>, SqlRow)> = Vec::new();
            let keys = |r: &SqlRow| p.sort.iter().map(|(e, _)| e.eval(r, &self.ctx)).collect::<Result<Vec<_>>>();
            match &p.scan {
                // A SELECT without FROM: one empty row.
                None => keyed.push((keys(&Vec::new())?, Vec::new())),
                Some(scan) => self.scan(scan, |r| {
                    hold(&mut held, &r)?;
                    keyed.push((keys(&r)?, r));
                    if let Some(k) = keep.filter(|k| keyed.len() >= 2 * k + 1024) {
                        self.sort_keyed(p, &mut keyed);
                        for (_, gone) in keyed.drain(k..) {
                            if let Some(h) = &mut held {
                                h.release(row_bytes(&gone));
                            }
                        }
                    }
                    Ok(true)
                })?,
            }
            self.sort_keyed(p, &mut keyed);
            rows = keyed.into_iter().map(|(_, r)| r).skip(offset as usize).take(limit.unwrap_or(u64::MAX) as usize).collect();
        } else {
            match &p.scan {
                None => rows.push(Vec::new()),
                Some(scan) => self.scan(scan, |r| {
                    if skipped < offset {
                        skipped += 1;
                        return Ok(true);
                    }
                    if limit.is_some_and(|l| rows.len() as u64 >= l) {
                        return Ok(false);
                    }
                    hold(&mut held, &r)?;
                    rows.push(r);
                    Ok(limit.is_none_or(|l| (rows.len() as u64) < l))
                })?,
            }
            if p.scan.is_none() {
                rows = rows.into_iter().skip(offset as usize).take(limit.unwrap_or(u64::MAX) as usize).collect();
            }
        }
        if let (true, Some(scan)) = (p.lock, &p.scan) {
            for r in &rows {
                self.access.lock_row(&scan.table.name, &self.pk_of(&scan.table, r)?).map_err(store_err)?;
            }
        }
        rows.into_iter().map(|r| p.projection.iter().map(|e| e.eval(&r, &self.ctx)).collect()).collect()
    }

    /// Sorts rows by their ORDER BY keys (stable: equal keys keep their scan order).
    fn sort_keyed(&self, p: &SelectPlan, keyed: &mut [(Vec<Datum>, SqlRow)]) {
        keyed.sort_by(|a, b| {
            for (i, (_, asc)) in p.sort.iter().enumerate() {
                let o = a.0[i].sort_cmp(&b.0[i]);
                let o = if *asc { o } else { o.reverse() };
                if o.is_ne() {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
    }

    fn pk_of(&self, t: &TableSchema, row: &SqlRow) -> Result<Vec<PkValue>> {
        t.pk.iter().map(|&c| row[c].to_pk(t.column_type(c)).ok_or_else(|| QueryError::Internal("row without its key".into()))).collect()
    }

    fn returning(&self, r: &Option<Returning>, row: &SqlRow, out: &mut Vec<SqlRow>) -> Result<()> {
        if let Some(ret) = r {
            out.push(ret.exprs.iter().map(|e| e.eval(row, &self.ctx)).collect::<Result<_>>()?);
        }
        Ok(())
    }

    /// Reads one row by key, as a SQL row.
    fn get(&self, t: &TableSchema, pk: &[PkValue]) -> Result<Option<SqlRow>> {
        let spec = ReadSpec::default();
        let Some(row) = self.access.get_row(&t.name, pk, &spec).map_err(store_err)? else { return Ok(None) };
        let mut out = Vec::new();
        self.sql_rows(t, row, &Versions::Latest, &mut out)?;
        Ok(out.pop())
    }

    pub fn insert(&self, p: &InsertPlan) -> Result<(u64, Vec<SqlRow>)> {
        let t = &p.table;
        let n = t.columns.len();
        let mut rows = Vec::with_capacity(p.rows.len());
        for exprs in &p.rows {
            let values = exprs.iter().map(|e| self.eval_const(e)).collect::<Result<Vec<_>>>()?;
            rows.push(prepare_row(t, &p.targets, values)?);
        }
        let mut returned = Vec::new();
        // Plain multi-row inserts: one existence check and one atomic write for all rows.
        if matches!(p.on_conflict, OnConflict::Error) && rows.len() > 1 {
            let writes: Vec<(Vec<Option<PkValue>>, Vec<CellWrite>)> = rows.iter().map(|r| (r.pk.clone(), r.cells.clone())).collect();
            let pks = self.access.insert_rows(&t.name, &writes).map_err(|e| match e {
                StoreError::RowExists => QueryError::UniqueViolation(t.name.clone()),
                e => e.into(),
            })?;
            for (mut r, pk) in rows.into_iter().zip(pks) {
                r.fill_pk(t, &pk, self.ctx.now_us / 1000);
                self.returning(&p.returning, &r.row, &mut returned)?;
            }
            return Ok((p.rows.len() as u64, returned));
        }
        let mut count = 0;
        for mut prepared in rows {
            self.interrupt.check()?;
            let result = self.access.put_row(&t.name, &prepared.pk, &prepared.cells, &Condition::expect_not_exist());
            let pk = prepared.pk.clone();
            match result {
                Ok(outcome) => {
                    prepared.fill_pk(t, &outcome.pk, self.ctx.now_us / 1000);
                    count += 1;
                    self.returning(&p.returning, &prepared.row, &mut returned)?;
                }
                Err(StoreError::RowExists) => match &p.on_conflict {
                    OnConflict::Error => {
                        // PostgreSQL's DETAIL names the key: Key (a, b)=(x, 1) already exists.
                        let cols: Vec<&str> = t.pk.iter().map(|&c| t.columns[c].name.as_str()).collect();
                        let vals: Vec<String> =
                            t.pk.iter().map(|&c| prepared.row[c].to_pg_text(t.column_type(c)).unwrap_or_else(|| "null".into())).collect();
                        return Err(QueryError::UniqueViolation(t.name.clone()).with_message(format!(
                            "Key ({})=({}) already exists.",
                            cols.join(", "),
                            vals.join(", ")
                        )));
                    }
                    OnConflict::DoNothing { .. } => {}
                    OnConflict::DoUpdate { assignments, filter, version } => {
                        let Some(pk) = pk.into_iter().collect::<Option<Vec<PkValue>>>() else { continue };
                        let Some(existing) = self.get(t, &pk)? else { continue };
                        // Row layout: existing columns, existing _version, then `excluded`'s columns and the
                        // version the insert would have written at.
                        let mut combined = existing.clone();
                        combined.extend(prepared.row.iter().take(n).cloned());
                        combined.push(Datum::Int(prepared.version.unwrap_or(self.ctx.now_us / 1000)));
                        if let Some(f) = filter {
                            if !f.eval_predicate(&combined, &self.ctx)? {
                                continue;
                            }
                        }
                        let version = match version {
                            Some(e) => e.eval(&combined, &self.ctx)?.cast(SqlType::Int8)?.as_int(),
                            None => None,
                        };
                        let updated = self.apply_update(t, &pk, &existing, &combined, assignments, version)?;
                        count += 1;
                        self.returning(&p.returning, &updated, &mut returned)?;
                    }
                },
                Err(e) => return Err(e.into()),
            }
        }
        Ok((count, returned))
    }

    /// Applies SET assignments to one existing row; returns the row as it is after.
    fn apply_update(
        &self,
        t: &TableSchema,
        pk: &[PkValue],
        before: &SqlRow,
        eval_row: &SqlRow,
        assignments: &[(usize, Expr)],
        version: Option<i64>,
    ) -> Result<SqlRow> {
        let mut ops = Vec::with_capacity(assignments.len());
        let mut after = before.clone();
        for (col, e) in assignments {
            let name = t.columns[*col].name.clone();
            // `n = n + k`: the engine's atomic increment, immune to concurrent writers.
            if let (Some(k), None) = (increment_of(e, *col), version) {
                // NULL + NULL-able: an increment of NULL is NULL, which the general path below gives.
                if let Some(k) = self.eval_const(&k)?.cast(SqlType::Int8)?.as_int() {
                    ops.push((name, UpdateOp::Add(k)));
                    continue;
                }
            }
            let v = e.eval(eval_row, &self.ctx)?.cast(t.column_type(*col))?;
            if v.is_null() && t.columns[*col].not_null {
                return Err(QueryError::NotNull { table: t.name.clone(), column: name });
            }
            after[*col] = v.clone();
            ops.push((
                name,
                match v.to_value() {
                    Some(value) => UpdateOp::Put { value, version },
                    None => UpdateOp::DeleteAll,
                },
            ));
        }
        let outcome = self.access.update_row(&t.name, pk, &ops, &Condition::expect_exist()).map_err(store_err)?;
        for (name, v) in outcome.increments {
            if let Some(ci) = t.column_index(&name) {
                after[ci] = Datum::Int(v).cast(t.column_type(ci))?;
            }
        }
        after[t.columns.len()] = Datum::Int(version.unwrap_or(outcome.version));
        Ok(after)
    }

    pub fn update(&self, p: &UpdatePlan) -> Result<(u64, Vec<SqlRow>)> {
        let t = &p.scan.table;
        let version = self.eval_version(&p.version)?;
        let mut targets = Vec::new();
        self.scan(&p.scan, |r| {
            targets.push(r);
            Ok(true)
        })?;
        let mut count = 0;
        let mut returned = Vec::new();
        for row in targets {
            self.interrupt.check()?;
            let pk = self.pk_of(t, &row)?;
            match self.apply_update(t, &pk, &row, &row, &p.assignments, version) {
                Ok(after) => {
                    count += 1;
                    self.returning(&p.returning, &after, &mut returned)?;
                }
                // Deleted meanwhile: nothing to update.
                Err(QueryError::Store(StoreError::RowNotFound)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((count, returned))
    }

    pub fn delete(&self, p: &DeletePlan) -> Result<(u64, Vec<SqlRow>)> {
        let t = &p.scan.table;
        let mut targets = Vec::new();
        self.scan(&p.scan, |r| {
            targets.push(r);
            Ok(true)
        })?;
        let version = self.eval_version(&p.version)?;
        let mut count = 0;
        let mut returned = Vec::new();
        for row in targets {
            self.interrupt.check()?;
            let pk = self.pk_of(t, &row)?;
            let res = match version {
                Some(v) => {
                    let ops: Vec<(String, UpdateOp)> =
                        t.attributes().map(|i| (t.columns[i].name.clone(), UpdateOp::DeleteVersion(v))).collect();
                    // Only rows that have that version count.
                    let had = self
                        .access
                        .get_row(&t.name, &pk, &ReadSpec { columns: None, max_versions: Some(1), time_range: Some(TimeRange::Exact(v)) })
                        .map_err(store_err)?
                        .is_some_and(|r| !r.columns.is_empty());
                    if !had {
                        continue;
                    }
                    self.access.update_row(&t.name, &pk, &ops, &Condition::expect_exist()).map(|_| ())
                }
                None => self.access.delete_row(&t.name, &pk, &Condition::expect_exist()).map(|_| ()),
            };
            match res {
                Ok(()) => {
                    count += 1;
                    self.returning(&p.returning, &row, &mut returned)?;
                }
                Err(StoreError::RowNotFound) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok((count, returned))
    }
}

/// A row about to be inserted: its SQL values, key (generated columns `None`) and cells.
pub struct PreparedRow {
    pub row: SqlRow,
    pub pk: Vec<Option<PkValue>>,
    pub cells: Vec<CellWrite>,
    pub version: Option<i64>,
}

impl PreparedRow {
    /// Records the key the engine wrote (generated values included) and the version the cells got.
    fn fill_pk(&mut self, t: &TableSchema, pk: &[PkValue], now_ms: i64) {
        for (pos, &c) in t.pk.iter().enumerate() {
            self.row[c] = Datum::from_pk(&pk[pos]);
        }
        let n = t.columns.len();
        self.row[n] = self.version.or_else(|| (!self.cells.is_empty()).then_some(now_ms)).map(Datum::Int).unwrap_or(Datum::Null);
    }
}

/// Turns values for target columns (`_version` is `columns.len()`) into a row to insert: typed, with NOT
/// NULL checked and the cells to write.
pub fn prepare_row(t: &TableSchema, targets: &[usize], values: Vec<Datum>) -> Result<PreparedRow> {
    let n = t.columns.len();
    let mut row = vec![Datum::Null; n + 1];
    let mut version = None;
    for (v, &target) in values.into_iter().zip(targets) {
        if target == n {
            version = match v {
                Datum::Null => None,
                d => d.cast(SqlType::Int8)?.as_int(),
            };
        } else {
            row[target] = v.cast(t.column_type(target))?;
        }
    }
    for (i, c) in t.columns.iter().enumerate() {
        if row[i].is_null() && c.not_null && !c.identity {
            return Err(QueryError::NotNull { table: t.name.clone(), column: c.name.clone() });
        }
    }
    let pk = t.pk.iter().map(|&c| row[c].to_pk(t.column_type(c))).collect();
    let cells = t
        .attributes()
        .filter(|&i| !row[i].is_null())
        .map(|i| CellWrite { column: t.columns[i].name.clone(), value: row[i].to_value().unwrap(), version })
        .collect();
    Ok(PreparedRow { row, pk, cells, version })
}

/// A WHERE clause over attribute columns as the engine's column condition, when it can be one exactly:
/// comparisons of a stored column with a constant, under AND, OR and NOT. A missing cell fails the
/// comparison, as NULL does in SQL. `None` when the clause needs the general path.
pub fn column_condition(t: &TableSchema, e: &Expr, ctx: &EvalCtx) -> Result<Option<tabula_store::ColumnCondition>> {
    use tabula_store::CompareOp;
    let storable = |ty: SqlType| {
        matches!(
            ty,
            SqlType::Int2
                | SqlType::Int4
                | SqlType::Int8
                | SqlType::Float4
                | SqlType::Float8
                | SqlType::Text
                | SqlType::Varchar
                | SqlType::Bool
                | SqlType::Bytea
                | SqlType::Timestamp
                | SqlType::Timestamptz
                | SqlType::Date
        )
    };
    let cmp = |op: BinOp, negate: bool| -> Option<CompareOp> {
        let op = if negate {
            match op {
                BinOp::Eq => BinOp::NotEq,
                BinOp::NotEq => BinOp::Eq,
                BinOp::Lt => BinOp::GtEq,
                BinOp::LtEq => BinOp::Gt,
                BinOp::Gt => BinOp::LtEq,
                BinOp::GtEq => BinOp::Lt,
                _ => return None,
            }
        } else {
            op
        };
        Some(match op {
            BinOp::Eq => CompareOp::Eq,
            BinOp::NotEq => CompareOp::Ne,
            BinOp::Lt => CompareOp::Lt,
            BinOp::LtEq => CompareOp::Le,
            BinOp::Gt => CompareOp::Gt,
            BinOp::GtEq => CompareOp::Ge,
            _ => return None,
        })
    };
    fn go(
        t: &TableSchema,
        e: &Expr,
        ctx: &EvalCtx,
        negate: bool,
        storable: &dyn Fn(SqlType) -> bool,
        cmp: &dyn Fn(BinOp, bool) -> Option<tabula_store::CompareOp>,
    ) -> Result<Option<tabula_store::ColumnCondition>> {
        use tabula_store::ColumnCondition as C;
        Ok(match e {
            Expr::Binary { op: BinOp::And | BinOp::Or, left, right } => {
                let (Some(l), Some(r)) = (go(t, left, ctx, negate, storable, cmp)?, go(t, right, ctx, negate, storable, cmp)?) else {
                    return Ok(None);
                };
                // De Morgan under NOT.
                let and = matches!(e, Expr::Binary { op: BinOp::And, .. }) != negate;
                Some(if and { C::And(vec![l, r]) } else { C::Or(vec![l, r]) })
            }
            Expr::Not(inner) => go(t, inner, ctx, !negate, storable, cmp)?,
            Expr::Binary { op, left, right } if op.is_comparison() => {
                let (col, c, op) = match (left.as_ref(), right.as_ref()) {
                    (Expr::Column { index, .. }, c) if c.is_constant() => (*index, c, *op),
                    (c, Expr::Column { index, .. }) if c.is_constant() => (*index, c, op.flip()),
                    _ => return Ok(None),
                };
                if col >= t.columns.len() || t.is_pk(col) || !storable(t.column_type(col)) {
                    return Ok(None);
                }
                let Some(value) = c.eval(&[], ctx)?.cast(t.column_type(col))?.to_value() else { return Ok(None) };
                let Some(op) = cmp(op, negate) else { return Ok(None) };
                Some(C::Single { column: t.columns[col].name.clone(), op, value, pass_if_missing: false, latest_version_only: true })
            }
            _ => None,
        })
    }
    go(t, e, ctx, false, &storable, &cmp)
}

/// `col + k` or `k + col` (or `col - k`) with a constant integer `k`: the amount to add.
pub fn increment_of(e: &Expr, col: usize) -> Option<Expr> {
    // Only bigint: the engine adds in i64, and a narrower column could leave its range.
    let is_col = |e: &Expr| matches!(e, Expr::Column { index, ty: SqlType::Int8, .. } if *index == col);
    let unwrap_cast = |e: &Expr| match e {
        Expr::Cast { expr, .. } => (**expr).clone(),
        e => e.clone(),
    };
    let e = unwrap_cast(e);
    match &e {
        Expr::Binary { op: BinOp::Add, left, right } => {
            if is_col(left) && right.is_constant() && right.ty().is_integer() {
                Some((**right).clone())
            } else if is_col(right) && left.is_constant() && left.ty().is_integer() {
                Some((**left).clone())
            } else {
                None
            }
        }
        Expr::Binary { op: BinOp::Sub, left, right } if is_col(left) && right.is_constant() && right.ty().is_integer() => {
            Some(Expr::Neg(right.clone()))
        }
        _ => None,
    }
}
