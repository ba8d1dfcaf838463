//! Reads: a plan's scan as engine calls (point get, batch get, range pages, a full scan fanned out over
//! partitions), rows filtered, projected, sorted and limited.

use super::*;

/// Rows fetched from the engine per range call.
pub(super) const PAGE_ROWS: usize = 1024;

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

/// (start, end) bounds of a partition's key range.
pub(super) type KeyRanges = Vec<(Vec<PkBound>, Vec<PkBound>)>;

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
    pub(super) fn parallel_ranges(&self, scan: &Scan) -> Result<Option<KeyRanges>> {
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
    pub(super) fn parallel_scan(
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
    pub(super) fn range(
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
