//! Reads: a plan's scan as engine calls (point get, batch get, range pages, a full scan fanned out over
//! partitions), rows filtered, projected, sorted and limited.

use std::borrow::Cow;

use super::pages::{all_versions, page_rows, FanOut, Pages};
use super::*;

/// Row keys read from an index at a time, then read as one multi-get.
const INDEX_PAGE: usize = 256;

/// The attribute columns a scan reads (`Scan::columns`, every one when `None`) as a latest-value read
/// takes them: their indices in the order of each row's cells, and the read naming them.
pub fn latest_read(scan: &Scan) -> (Vec<usize>, ReadSpec) {
    let t = &scan.table;
    let slots: Vec<usize> = match &scan.columns {
        Some(cs) => cs.iter().copied().filter(|&c| c < t.columns.len() && !t.is_pk(c)).collect(),
        None => t.attributes().collect(),
    };
    let spec =
        ReadSpec { columns: Some(slots.iter().map(|&c| t.column_name(c).to_string()).collect()), max_versions: Some(1), time_range: None };
    (slots, spec)
}

/// The rows of a latest-value page as SQL rows, each handed to `f` until it returns false (what `sql_rows`
/// makes of a one-version read): `slots[i]` is the column index of a row's `i`th cell; the `_version`
/// pseudo-column is the newest of the cells' versions.
pub fn latest_sql_rows(t: &TableSchema, page: LatestRows, slots: &[usize], mut f: impl FnMut(SqlRow) -> Result<bool>) -> Result<()> {
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
        if !f(out)? {
            break;
        }
    }
    Ok(())
}

/// A page of rows as the engine read it: each with its cells' versions, or the newest values laid flat
/// (in the order of [`latest_read`]'s slots).
pub(super) enum Page {
    Rows(Vec<Row>),
    Latest(LatestRows),
}

/// Where a scan stopped between two pages, for a later scan of the same plan to go on from (a batched
/// UPDATE or DELETE, each batch in a transaction of its own).
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// A range or full scan: where its next page starts.
    Range(Vec<PkBound>),
    /// An index scan: which of its key ranges, and the entry its next page starts after.
    Index { range: usize, after: Vec<u8> },
}

fn resume_range(pages: Pages, from: Option<&Resume>) -> Result<Pages> {
    match from {
        None => Ok(pages),
        Some(Resume::Range(start)) => Ok(pages.resumed(start.clone())),
        Some(Resume::Index { .. }) => Err(QueryError::Internal("a range scan resumed as an index scan".into())),
    }
}

impl Executor<'_> {
    /// Turns an engine row into SQL rows: one, or one per version in history mode. Takes the row so that
    /// its values move into the SQL row rather than being copied.
    pub(super) fn sql_rows(&self, t: &TableSchema, row: Row, versions: &Versions, out: &mut Vec<SqlRow>) -> Result<()> {
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
    pub fn scan(&self, scan: &Scan, f: impl FnMut(SqlRow) -> Result<bool>) -> Result<()> {
        self.scan_from(scan, None, &mut || Ok(true), f).map(|_| ())
    }

    /// [`Self::scan`], from where an earlier scan of the same plan stopped (`from`). `page_done` runs after
    /// each page of a range, full or index scan has been handed to `f`, and stops the scan there when it
    /// returns false: the result is then where the scan would have gone on.
    pub fn scan_from(
        &self,
        scan: &Scan,
        from: Option<&Resume>,
        page_done: &mut dyn FnMut() -> Result<bool>,
        mut f: impl FnMut(SqlRow) -> Result<bool>,
    ) -> Result<Option<Resume>> {
        let started = Instant::now();
        let mut stopped = None;
        let t = &scan.table;
        let spec = self.read_spec(scan)?;
        let mut limit = self.eval_u64(&scan.limit)?;
        let mut stats = self.stats.get();
        let mut buf = Vec::new();
        // An index this transaction built after writing holds no entries its snapshot sees: the rows
        // come from a scan of the table, checked against the index's condition as well.
        let unreadable = matches!(&scan.access, AccessPath::IndexScan { index, .. } if !self.access.index_readable(&t.name, index));
        let filter: Cow<Option<Expr>> = match unreadable {
            true => Cow::Owned(Expr::and_all(scan.index_condition().into_iter().chain(scan.filter.clone()).collect())),
            false => Cow::Borrowed(&scan.filter),
        };
        // Only an index scan that reads rows by key reads them as latest values: other reads (a point get
        // among them) spend nothing on naming the columns again.
        let (slots, latest_spec) = match &scan.access {
            AccessPath::IndexScan { covering: false, .. } if !unreadable => latest_read(scan),
            _ => (Vec::new(), ReadSpec::default()),
        };
        // Feeds a page through the filter; false once the consumer or the limit is done.
        let mut feed = |page: Page, stats: &mut ScanStats| -> Result<bool> {
            let mut one = |r: SqlRow, stats: &mut ScanStats| -> Result<bool> {
                if let Some(flt) = filter.as_ref() {
                    if !flt.eval_predicate(&r, &self.ctx)? {
                        return Ok(true);
                    }
                }
                if limit == Some(0) {
                    return Ok(false);
                }
                stats.returned += 1;
                if let Some(l) = limit.as_mut() {
                    *l -= 1;
                }
                Ok(f(r)? && limit != Some(0))
            };
            match page {
                Page::Rows(rows) => {
                    for row in rows {
                        stats.examined += 1;
                        buf.clear();
                        self.sql_rows(t, row, &scan.versions, &mut buf)?;
                        for r in buf.drain(..) {
                            if !one(r, stats)? {
                                return Ok(false);
                            }
                        }
                    }
                }
                Page::Latest(rows) => {
                    let mut more = true;
                    latest_sql_rows(t, rows, &slots, |r| {
                        stats.examined += 1;
                        more = one(r, stats)?;
                        Ok(more)
                    })?;
                    if !more {
                        return Ok(false);
                    }
                }
            }
            Ok(limit != Some(0))
        };
        match &scan.access {
            AccessPath::PointGet { key } => {
                if let Some(pk) = super::key(t, key, &self.ctx)? {
                    stats.engine_calls += 1;
                    if let Some(row) = self.access.get_row(&t.name, &pk, &spec).map_err(store_err)? {
                        feed(Page::Rows(vec![row]), &mut stats)?;
                    }
                }
            }
            AccessPath::BatchGet { keys } => {
                let mut pks = Vec::with_capacity(keys.len());
                for k in keys {
                    if let Some(pk) = super::key(t, k, &self.ctx)? {
                        if !pks.contains(&pk) {
                            pks.push(pk);
                        }
                    }
                }
                if !pks.is_empty() {
                    stats.engine_calls += 1;
                    let rows: Vec<Row> = self.access.batch_get(&t.name, &pks, &spec).map_err(store_err)?.into_iter().flatten().collect();
                    feed(Page::Rows(rows), &mut stats)?;
                }
            }
            // The index unreadable (above): a scan of the table, unless the rows were to come in the
            // index's order.
            AccessPath::IndexScan { index, order, .. } if unreadable => {
                if order.is_some() {
                    return Err(QueryError::NotSupported(format!(
                        "a read in the order of index \"{index}\", built in this transaction after it wrote rows: commit first"
                    )));
                }
                // Every column: the plan's leave out those only the index's condition reads.
                let pages = Pages::all(&t.name, Direction::Forward, ReadSpec { columns: None, ..spec });
                stopped =
                    self.range(scan, resume_range(pages, from)?, &mut stats, &mut |rows, st| feed(Page::Rows(rows), st), page_done)?;
            }
            AccessPath::IndexScan { index, lookups, lower, upper, order, covering } => {
                // Entries hold each row's newest values: the planner reads older versions by key.
                if scan.versions != Versions::Latest {
                    return Err(QueryError::Internal("an index scan of older versions".into()));
                }
                let backward = *order == Some(Direction::Backward);
                let Some(ranges) = super::index_ranges(t, index, lookups, lower, upper, backward, &self.ctx)? else { return Ok(None) };
                // Under a LIMIT that every row meets, a first page of that many entries is likely the last.
                let page = match (&scan.filter, self.eval_u64(&scan.limit)?) {
                    (None, Some(l)) => (l as usize).clamp(1, INDEX_PAGE),
                    _ => INDEX_PAGE,
                };
                let (first, mut after) = match from {
                    None => (0, None),
                    Some(Resume::Index { range, after }) => (*range, Some(after.clone())),
                    Some(Resume::Range(_)) => return Err(QueryError::Internal("an index scan resumed as a range".into())),
                };
                'lookups: for (i, range) in ranges.iter().enumerate().skip(first) {
                    loop {
                        self.interrupt.check()?;
                        stats.engine_calls += 1;
                        // Index-only: the entries are the rows; otherwise they name rows, read by key at the
                        // same point as the entries.
                        let (rows, next) = if *covering {
                            let (rows, next) = self.access.index_rows(&t.name, index, range, after.as_deref(), page).map_err(store_err)?;
                            (Page::Rows(rows), next)
                        } else {
                            let (rows, next) =
                                self.access.index_latest(&t.name, index, range, after.as_deref(), page, &latest_spec).map_err(store_err)?;
                            (Page::Latest(rows), next)
                        };
                        if !feed(rows, &mut stats)? {
                            break 'lookups;
                        }
                        match next {
                            Some(n) if !page_done()? => {
                                stopped = Some(Resume::Index { range: i, after: n });
                                break 'lookups;
                            }
                            Some(n) => after = Some(n),
                            None => {
                                after = None;
                                break;
                            }
                        }
                    }
                }
            }
            AccessPath::RangeScan { start, end, direction } => {
                let pages = match (super::bound(t, start, &self.ctx)?, super::bound(t, end, &self.ctx)?) {
                    (Some(s), Some(e)) => Pages::new(&t.name, s, e, *direction, spec),
                    // A NULL bound matches nothing.
                    _ => Pages::empty(&t.name, *direction, spec),
                };
                stopped =
                    self.range(scan, resume_range(pages, from)?, &mut stats, &mut |rows, st| feed(Page::Rows(rows), st), page_done)?;
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
            AccessPath::FullScan { direction } => {
                // Outside a transaction a split table's partitions are read in parallel, unless a limit will
                // stop the scan early.
                let fan_out = match (&self.store, &scan.limit) {
                    (Some(store), None) => FanOut::start(store, &t.name, *direction, &spec, self.interrupt, all_versions)?,
                    _ => None,
                };
                match fan_out {
                    Some(mut parts) => {
                        while let Some(rows) = parts.next_page() {
                            stats.engine_calls += 1;
                            if !feed(Page::Rows(rows?), &mut stats)? {
                                parts.stop();
                                break;
                            }
                        }
                    }
                    None => {
                        let pages = Pages::all(&t.name, *direction, spec);
                        stopped = self.range(
                            scan,
                            resume_range(pages, from)?,
                            &mut stats,
                            &mut |rows, st| feed(Page::Rows(rows), st),
                            page_done,
                        )?;
                    }
                }
            }
        }
        stats.micros += started.elapsed().as_micros() as u64;
        self.stats.set(stats);
        Ok(stopped)
    }

    /// Feeds a range's pages to `feed` until it has had enough, or `page_done` stops it between two pages:
    /// then where the next page starts.
    pub(super) fn range(
        &self,
        scan: &Scan,
        mut pages: Pages,
        stats: &mut ScanStats,
        feed: &mut dyn FnMut(Vec<Row>, &mut ScanStats) -> Result<bool>,
        page_done: &mut dyn FnMut() -> Result<bool>,
    ) -> Result<Option<Resume>> {
        let rows = page_rows(scan.filter.is_some(), self.eval_u64(&scan.limit)?);
        while pages.more() {
            stats.engine_calls += 1;
            let Some(page) = pages.next_page(self.access, self.interrupt, rows, all_versions)? else { break };
            if !feed(page, stats)? {
                break;
            }
            if let Some(next) = pages.position() {
                if !page_done()? {
                    return Ok(Some(Resume::Range(next)));
                }
            }
        }
        Ok(None)
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
    pub(super) fn sort_keyed(&self, p: &SelectPlan, keyed: &mut [(Vec<Datum>, SqlRow)]) {
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
}
