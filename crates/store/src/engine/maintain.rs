//! Partition maintenance: rates, splits (of a table on a partition-key boundary, of a global index between
//! two entries), merges of idle neighbours, values out of line left without a row, and the partitions
//! records written back when they changed.

use super::*;

/// What a split never cuts inside: the key prefix of one partition-key value of a table's rows; any one
/// entry of an index (an index has no partition key: equal values may go to two partitions).
/// It answers the length of the unit's prefix of a key.
type Unit<'a> = &'a dyn Fn(&[u8]) -> Result<usize>;

/// The key spaces of a table's global indexes' entries, each with its id and partitions (a local index's
/// entries count in the table's partitions).
fn index_spaces(t: &Table) -> Vec<(u32, Arc<Partitions>)> {
    let ids: Vec<u32> = t.def.read().indexes.iter().filter(|ix| !ix.local).map(|ix| ix.id).collect();
    ids.into_iter().map(|id| (id, t.index_parts(id))).collect()
}

impl Inner {
    pub(super) fn persist_partitions(&self) -> Result<()> {
        let tables: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        // Only what changed: an idle server writes nothing.
        let changed = |id: u32, parts: &Partitions| {
            let record = parts.record();
            let mut persisted = parts.persisted.lock();
            (*persisted != record).then(|| {
                *persisted = record.clone();
                (catalog::partitions_key(id), Some(record))
            })
        };
        let mut puts: Vec<_> = tables.iter().filter_map(|t| changed(t.id, &t.parts)).collect();
        for t in &tables {
            puts.extend(index_spaces(t).iter().filter_map(|(id, parts)| changed(*id, parts)));
        }
        if puts.is_empty() {
            return Ok(());
        }
        Ok(self.kv.meta_write(&puts, &[])?)
    }

    /// One round of partition maintenance: rates, splits, merges, persisted statistics.
    pub(super) fn maintain(&self) -> Result<()> {
        thread_local!(static LAST: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) });
        thread_local!(static SWEPT: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) });
        let now = Instant::now();
        let elapsed = LAST.with(|l| l.replace(Some(now))).map(|t| now.duration_since(t).as_secs_f64()).unwrap_or(1.0);
        let tables: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        // What compactions left behind, now and then (tables where compactions drop nothing are skipped).
        if SWEPT.with(|s| s.get()).is_none_or(|t| now.duration_since(t) >= self.config.sweep_interval) {
            SWEPT.with(|s| s.set(Some(now)));
            for t in &tables {
                self.sweep(t)?;
            }
        }
        for t in tables {
            self.maintain_space(&t.parts, &|key: &[u8]| Ok(t.partition_key_prefix(key)?.len()), elapsed)?;
            for (_, parts) in index_spaces(&t) {
                self.maintain_space(&parts, &|key: &[u8]| Ok(key.len()), elapsed)?;
            }
        }
        self.persist_partitions()
    }

    /// Rates, splits and merges of the partitions of one key space.
    fn maintain_space(&self, set: &Partitions, unit: Unit, elapsed: f64) -> Result<()> {
        let parts: Vec<Arc<Partition>> = set.list.read().clone();
        for p in &parts {
            p.tick(elapsed);
        }
        for p in &parts {
            let hot = p.write_rate() > self.config.split_write_rate;
            if (p.bytes.load(Ordering::Relaxed) > self.config.split_bytes || hot) && !self.still_one_value(unit, p)? {
                self.split(set, unit, p)?;
            }
        }
        self.merge_idle(set);
        Ok(())
    }

    /// Whether a partition that a split found to be one partition-key value still is: nothing was written to
    /// it since, or its first and last rows still share that value (two seeks, whatever its size). Without
    /// this, a partition-key value past the split size was read whole every round, for ever: 348 MB under one
    /// key cost about 0.3 of a core while nothing happened.
    fn still_one_value(&self, unit: Unit, p: &Partition) -> Result<bool> {
        let mut single = p.single_value.lock();
        let Some((prefix, seen_writes)) = single.as_mut() else { return Ok(false) };
        let writes = p.writes.load(Ordering::Relaxed);
        if writes == *seen_writes {
            return Ok(true);
        }
        let src = self.reader();
        let mut it = src.scan(p.start.clone(), p.end.clone(), false);
        let mut ends = Vec::with_capacity(2);
        for last in [false, true] {
            if last {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            if it.valid() {
                ends.push(it.key()[..unit(it.key())?].to_vec());
            }
            it.status()?;
        }
        if ends.len() == 2 && ends.iter().all(|e| e == prefix) {
            *seen_writes = writes;
            return Ok(true);
        }
        *single = None;
        Ok(false)
    }

    /// Splits a partition near the middle of its bytes, on a partition-key boundary: the first
    /// partition-key value whose middle lies past half of the bytes starts the right half (the last value
    /// when none does). Two streaming passes that keep nothing per key: with a one-column primary key every
    /// row is a partition-key value of its own, millions of them.
    pub(super) fn split(&self, set: &Partitions, unit: Unit, p: &Arc<Partition>) -> Result<()> {
        let src = self.reader();
        let writes = p.writes.load(Ordering::Relaxed);
        let scan = |f: &mut dyn FnMut(&[u8], i64) -> bool| -> Result<()> {
            p.split_scans.fetch_add(1, Ordering::Relaxed);
            let mut it = src.scan(p.start.clone(), p.end.clone(), false);
            it.seek_to_first();
            while it.valid() {
                let size = (it.key().len() + it.value().len()) as i64;
                if !f(&it.key()[..unit(it.key())?], size) {
                    break;
                }
                it.advance(false);
            }
            Ok(it.status()?)
        };
        let (mut total, mut total_rows) = (0i64, 0i64);
        scan(&mut |_, size| {
            total += size;
            total_rows += 1;
            true
        })?;
        // The current value's key, bytes and rows; the bytes and rows of the values before it.
        let mut current: Option<(Vec<u8>, i64, i64)> = None;
        let (mut before, mut before_rows, mut index) = (0i64, 0i64, 0usize);
        let mut cut: Option<(Vec<u8>, i64, i64)> = None;
        scan(&mut |prefix, size| {
            if let Some((_, b, r)) = current.as_mut().filter(|c| c.0 == prefix) {
                *b += size;
                *r += 1;
                return true;
            }
            if let Some((k, b, r)) = current.take() {
                if index > 0 && before + b / 2 >= total / 2 {
                    cut = Some((k, before, before_rows));
                    return false;
                }
                before += b;
                before_rows += r;
                index += 1;
            }
            current = Some((prefix.to_vec(), size, 1));
            true
        })?;
        let Some((split_key, left_bytes, left_rows)) =
            cut.or_else(|| current.clone().filter(|_| index > 0).map(|(k, _, _)| (k, before, before_rows)))
        else {
            // One partition-key value is never split (it is the smallest unit, as in Tablestore).
            *p.single_value.lock() = current.map(|(k, _, _)| (k, writes));
            return Ok(());
        };
        let left = (left_bytes, left_rows);
        let right_rows = total_rows - left_rows;
        let lid = set.next_id.fetch_add(2, Ordering::SeqCst);
        let rid = lid + 1;
        let l = Arc::new(Partition::new(lid, p.start.clone(), split_key.clone(), left.0, left.1));
        let r = Arc::new(Partition::new(rid, split_key, p.end.clone(), total - left.0, right_rows));
        let mut parts = set.list.write();
        if let Some(i) = parts.iter().position(|q| Arc::ptr_eq(q, p)) {
            parts.splice(i..=i, [l, r]);
        }
        Ok(())
    }

    pub(super) fn merge_idle(&self, set: &Partitions) {
        let mut parts = set.list.write();
        let mut i = 0;
        while i + 1 < parts.len() {
            let (a, b) = (&parts[i], &parts[i + 1]);
            let idle = |p: &Partition| p.read_rate() + p.write_rate() < self.config.idle_rate;
            let small = a.bytes.load(Ordering::Relaxed).max(0) + b.bytes.load(Ordering::Relaxed).max(0) < self.config.merge_bytes;
            if small && idle(a) && idle(b) {
                let id = set.next_id.fetch_add(1, Ordering::SeqCst);
                let merged = Partition::new(
                    id,
                    a.start.clone(),
                    b.end.clone(),
                    a.bytes.load(Ordering::Relaxed) + b.bytes.load(Ordering::Relaxed),
                    a.rows.load(Ordering::Relaxed) + b.rows.load(Ordering::Relaxed),
                );
                parts.splice(i..=i + 1, [Arc::new(merged)]);
            } else {
                i += 1;
            }
        }
    }
}
