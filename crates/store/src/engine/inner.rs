//! The engine's shared state at work: the catalog, reads and range walks, writes that commit on their own,
//! and the maintenance of partitions.

use super::*;

impl Inner {
    /// Reads of the latest commit.
    pub(super) fn reader(&self) -> &dyn Read {
        &*self.kv
    }

    pub(super) fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.tables.read().get(name).cloned().ok_or_else(|| StoreError::UnknownTable(name.to_string()))
    }

    /// See [`Access::partition_starts`]. Empty for hash-prefixed tables, whose partitions cover hash buckets
    /// rather than key ranges.
    pub(super) fn partition_starts(&self, name: &str) -> Result<Vec<Vec<PkValue>>> {
        let t = self.table(name)?;
        if t.buckets > 0 {
            return Ok(Vec::new());
        }
        let parts = t.partitions.read();
        parts.iter().skip(1).map(|p| keys::decode_pk(&p.start[4..], &t.pk_types[..t.partition_key_len])).collect()
    }

    pub(super) fn load_catalog(&self) -> Result<()> {
        for (_, v) in self.kv.meta_scan(b"t")? {
            let (id, def) = TableDef::decode(&v)?;
            let (next_pid, parts) = match self.kv.meta_get(&catalog::partitions_key(id))? {
                Some(p) => partition::decode_all(&p)?,
                None => (2, vec![Partition::new(1, keys::table_prefix(id).to_vec(), keys::table_end(id).to_vec(), 0, 0)]),
            };
            self.install(id, def, parts, next_pid);
        }
        Ok(())
    }

    pub(super) fn install(&self, id: u32, def: TableDef, parts: Vec<Partition>, next_pid: u64) {
        let table = Table {
            id,
            pk_types: def.primary_key.iter().map(|c| c.ty).collect(),
            partition_key_len: def.partition_key_len,
            buckets: def.options.hash_prefix,
            partitions: RwLock::new(parts.into_iter().map(Arc::new).collect()),
            next_partition_id: AtomicU64::new(next_pid),
            seq: sequence::Sequence::new(id),
            seq_columns: (0..def.partition_key_len).filter(|&i| def.primary_key[i].auto_increment).collect(),
            retired: Arc::new(AtomicBool::new(false)),
            persisted: Mutex::new(Vec::new()),
            def: RwLock::new(def.clone()),
        };
        self.rules.write().insert(id, def.options.rules());
        self.tables.write().insert(def.name.clone(), Arc::new(table));
    }

    pub(super) fn create_table(&self, mut def: TableDef) -> Result<()> {
        def.validate()?;
        def.options.hidden_before = i64::MIN;
        def.options.stored_versions = def.options.max_versions;
        let _ddl = self.ddl.lock();
        if self.tables.read().contains_key(&def.name) {
            return Err(StoreError::TableExists(def.name));
        }
        let id = match self.kv.meta_get(catalog::NEXT_TABLE_ID)? {
            Some(v) => u32::from_be_bytes(v.as_slice().try_into().map_err(|_| StoreError::Corrupt("next table id".into()))?),
            None => 1,
        };
        let part = Partition::new(1, keys::table_prefix(id).to_vec(), keys::table_end(id).to_vec(), 0, 0);
        // An empty table's indexes (a TRUNCATE's new table) are complete, each in a key space of its own.
        for (i, ix) in def.indexes.iter_mut().enumerate() {
            ix.id = id + 1 + i as u32;
            ix.ready = true;
        }
        let next = id + 1 + def.indexes.len() as u32;
        self.kv.meta_write(
            &[
                (catalog::NEXT_TABLE_ID.to_vec(), Some(next.to_be_bytes().to_vec())),
                (catalog::table_key(&def.name), Some(def.encode(id))),
                (catalog::partitions_key(id), Some(partition::encode_all(2, &[&part]))),
            ],
            &[],
        )?;
        self.install(id, def, vec![part], 2);
        Ok(())
    }

    pub(super) fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        // The definition, partitions, auto-increment counters and rows go in one atomic write.
        let gone = self.drop_writes(&t, name)?;
        let mut ranges = Inner::index_ranges(&t);
        ranges.push((keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec()));
        self.kv.meta_write(&gone, &ranges)?;
        self.tables.write().remove(name);
        self.rules.write().remove(&t.id);
        Ok(())
    }

    /// Gives a table another name: its record moves, in one atomic write; its rows, partitions and counters
    /// are kept under its id and stay as they are.
    pub(super) fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        validate_name(to)?;
        let _ddl = self.ddl.lock();
        let t = self.table(from)?;
        self.rename_locked(&t, from, to)
    }

    /// `rename_table` of table `t` with the DDL lock held, to any name.
    pub(super) fn rename_locked(&self, t: &Table, from: &str, to: &str) -> Result<()> {
        if self.tables.read().contains_key(to) {
            return Err(StoreError::TableExists(to.to_string()));
        }
        let mut def = t.def.read().clone();
        def.name = to.to_string();
        self.kv.meta_write(&[(catalog::table_key(from), None), (catalog::table_key(to), Some(def.encode(t.id)))], &[])?;
        *t.def.write() = def;
        let mut tables = self.tables.write();
        if let Some(t) = tables.remove(from) {
            tables.insert(to.to_string(), t);
        }
        Ok(())
    }

    /// The catalog records a drop of table `t` (named `name`) deletes: its definition, partitions and
    /// auto-increment counters. Its rows go by a range deletion beside them.
    #[allow(clippy::type_complexity)]
    pub(super) fn drop_writes(&self, t: &Table, name: &str) -> Result<Vec<(Vec<u8>, Option<Vec<u8>>)>> {
        let mut gone = vec![(catalog::table_key(name), None), (catalog::partitions_key(t.id), None)];
        gone.extend(self.kv.meta_scan(&catalog::autoinc_key(t.id, &[]))?.into_iter().map(|(k, _)| (k, None)));
        Ok(gone)
    }

    pub(super) fn truncate_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        let pid = t.next_partition_id.fetch_add(1, Ordering::SeqCst);
        let part = Partition::new(pid, keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec(), 0, 0);
        let mut ranges = Inner::index_ranges(&t);
        ranges.push((keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec()));
        self.kv.meta_write(&[(catalog::partitions_key(t.id), Some(partition::encode_all(pid + 1, &[&part])))], &ranges)?;
        *t.partitions.write() = vec![Arc::new(part)];
        Ok(())
    }

    pub(super) fn alter(&self, name: &str, f: impl FnOnce(&mut TableDef) -> Result<()>) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        self.alter_locked(&t, f)
    }

    /// `alter` with the DDL lock held.
    pub(super) fn alter_locked(&self, t: &Table, f: impl FnOnce(&mut TableDef) -> Result<()>) -> Result<()> {
        let mut def = t.def.read().clone();
        f(&mut def)?;
        self.kv.meta_write(&[(catalog::table_key(&def.name), Some(def.encode(t.id)))], &[])?;
        self.rules.write().insert(t.id, def.options.rules());
        *t.def.write() = def;
        Ok(())
    }

    pub(super) fn set_options(&self, name: &str, options: TableOptions) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        let old = t.def.read().options;
        if options.hash_prefix != old.hash_prefix {
            return Err(StoreError::InvalidOption("hash_prefix cannot change after a table is created".into()));
        }
        options.validate()?;
        let mut new = TableOptions { hidden_before: old.hidden_before, stored_versions: old.stored_versions, ..options };
        if old.ttl >= 0 && new.ttl != old.ttl {
            let expired_now = self.config.clock.now_ms().saturating_sub(old.ttl.saturating_mul(1000));
            new.hidden_before = new.hidden_before.max(expired_now);
        }
        if new.max_versions > old.max_versions && old.stored_versions > old.max_versions {
            // Writes keep at most the old count while the table is compacted under it; only then is more shown.
            let interim = TableOptions { max_versions: old.max_versions, stored_versions: old.stored_versions, ..new };
            self.alter_locked(&t, |def| {
                def.options = interim;
                Ok(())
            })?;
            self.kv.compact(Some((&keys::table_prefix(t.id), &keys::table_end(t.id))))?;
            new.stored_versions = old.max_versions;
        }
        new.stored_versions = new.stored_versions.max(new.max_versions);
        self.alter_locked(&t, |def| {
            def.options = new;
            Ok(())
        })
    }

    /// Runs `f` in a fresh transaction and commits it, retrying when a concurrent transaction conflicts.
    /// `lock_keys` serialise writers of the same rows in this process so they rarely need to retry.
    pub(super) fn autocommit<T>(&self, lock_keys: &[Vec<u8>], mut f: impl FnMut(&mut WriteCtx) -> Result<T>) -> Result<T> {
        let mut stripes: Vec<usize> = lock_keys.iter().map(|k| stripe(k, self.stripes.len())).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let _guards: Vec<_> = stripes.iter().map(|&i| self.stripes[i].lock()).collect();
        crate::retry::on_conflict(
            || {
                let epoch = self.bulk_epoch.load(Ordering::SeqCst);
                let txn = self.kv.begin(false);
                let mut ctx = WriteCtx { txn: &*txn, kv: &*self.kv, deltas: Vec::new(), now: self.config.clock.now_ms() };
                let value = f(&mut ctx)?;
                let deltas = std::mem::take(&mut ctx.deltas);
                let _shared = self.commit_gate.read();
                if self.bulk_epoch.load(Ordering::SeqCst) != epoch {
                    // An ingest may have written these keys unseen by the conflict check: read again.
                    let _ = txn.rollback();
                    return Err(StoreError::Conflict);
                }
                if let Some(e) = retired_write(deltas.iter()) {
                    let _ = txn.rollback();
                    return Err(e);
                }
                txn.commit().map_err(StoreError::from)?;
                for d in deltas {
                    d.partition.add(d.bytes, d.rows, d.writes);
                }
                Ok(value)
            },
            |e| matches!(e, StoreError::Conflict),
        )
    }

    pub(super) fn get_row(&self, src: &dyn Read, t: &Table, pk: &[PkValue], read: &ReadSpec) -> Result<Option<Row>> {
        let key = t.key(pk)?;
        let filter = read_filter(t, read, self.config.clock.now_ms());
        let row = src.get_map(&key, |v| materialize(pk.to_vec(), v, &filter))?;
        t.partition_of(&key).reads.fetch_add(1, Ordering::Relaxed);
        row.transpose().map(Option::flatten)
    }

    pub(super) fn batch_get(&self, src: &dyn Read, t: &Table, pks: &[Vec<PkValue>], read: &ReadSpec) -> Result<Vec<Option<Row>>> {
        let keys = pks.iter().map(|pk| t.key(pk)).collect::<Result<Vec<_>>>()?;
        let values = src.multi_get(&keys.iter().map(Vec::as_slice).collect::<Vec<_>>())?;
        let filter = read_filter(t, read, self.config.clock.now_ms());
        values
            .into_iter()
            .zip(pks)
            .map(|(v, pk)| v.map(|v| materialize(pk.clone(), &v, &filter)).transpose().map(Option::flatten))
            .collect()
    }

    pub(super) fn get_range(&self, src: &dyn Read, t: &Table, req: &RangeRequest) -> Result<RangeResult> {
        let filter = read_filter(t, &req.read, self.config.clock.now_ms());
        let mut rows = Vec::new();
        let next_start = self.scan_range(src, t, req, |key, raw| {
            let Some(row) = materialize(t.decode_pk(key)?, raw, &filter)? else { return Ok(Step::Skip) };
            rows.push(row);
            Ok(Step::Row)
        })?;
        Ok(RangeResult { rows, next_start })
    }

    pub(super) fn get_range_latest(&self, src: &dyn Read, t: &Table, req: &RangeRequest) -> Result<LatestRows> {
        let width = req.read.columns.as_ref().map_or(0, |c| c.len());
        let mut page = LatestRows { key_len: t.pk_types.len(), width, ..LatestRows::default() };
        let mut failed = None;
        page.next_start = self.visit_range_latest(src, t, req, &mut |row| {
            page.keys.extend_from_slice(row.key);
            for i in 0..row.width() {
                match row.value(i) {
                    Ok(v) => page.cells.push(v.map(|v| row::Cell { version: row.version(i).unwrap_or_default(), value: v.to_value() })),
                    Err(e) => {
                        failed = Some(e);
                        return false;
                    }
                }
            }
            true
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(page),
        }
    }

    pub(super) fn visit_range_latest(
        &self,
        src: &dyn Read,
        t: &Table,
        req: &RangeRequest,
        visit: &mut dyn FnMut(&LatestRow<'_>) -> bool,
    ) -> Result<Option<Vec<PkValue>>> {
        let read = &req.read;
        let Some(columns) = read.columns.as_deref() else {
            return Err(StoreError::NotSupported("a latest-value range read names its columns".into()));
        };
        if read.max_versions.is_some_and(|n| n != 1) || read.time_range.is_some() {
            return Err(StoreError::NotSupported("a latest-value range read returns one version, of any time".into()));
        }
        let (rules, now) = (t.rules(), self.config.clock.now_ms());
        let (mut cells, mut key) = (Vec::with_capacity(columns.len()), Vec::with_capacity(t.pk_types.len()));
        self.scan_range(src, t, req, |k, raw| {
            if !row::locate_latest(raw, rules, now, columns, &mut cells)? {
                return Ok(Step::Skip);
            }
            key.clear();
            keys::decode_pk_into(&k[t.prefix_len()..], &t.pk_types, &mut key)?;
            Ok(if visit(&LatestRow::new(&key, raw, &cells)) { Step::Row } else { Step::Stop })
        })
    }

    /// Walks a range in key order (merging the hash buckets' iterators), handing each stored row's key and
    /// value to `visit`, which says whether it made a returned row (or stops the walk), up to the limit or
    /// byte budget. Returns where to resume when one of those cut the read short.
    pub(super) fn scan_range(
        &self,
        src: &dyn Read,
        t: &Table,
        req: &RangeRequest,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<Step>,
    ) -> Result<Option<Vec<PkValue>>> {
        let backward = req.direction == Direction::Backward;
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        keys::encode_bound(&mut lo, &req.start);
        keys::encode_bound(&mut hi, &req.end);
        if backward {
            std::mem::swap(&mut lo, &mut hi);
        }
        if lo > hi {
            return Err(StoreError::InvalidRange(if backward {
                "a backward range starts at its larger end".into()
            } else {
                "a forward range's start is after its end".into()
            }));
        }
        // A bound that ends in an infinity (or stops before the last key column) sits just before or after
        // every row under its prefix; only a complete key is a row itself, excluded by shifting past it.
        let complete = |b: &[PkBound]| b.len() >= t.pk_types.len() && b.iter().all(|v| matches!(v, PkBound::Value(_)));
        let (shift_lo, shift_hi) = (backward && complete(&req.end), backward && complete(&req.start));
        let limit = req.limit.unwrap_or(usize::MAX);
        let budget = req.budget_bytes.unwrap_or(self.config.scan_budget_bytes);
        let plen = t.prefix_len();
        // One iterator per hash bucket (one in all for plain tables), merged in key order.
        let mut iters: Vec<Box<dyn Cursor + '_>> = t
            .bucket_prefixes()
            .into_iter()
            .map(|p| {
                // Backward ranges are (end, start]: a complete key bound is shifted past its own row.
                let (mut l, mut u) = (p.clone(), p);
                l.extend_from_slice(&lo);
                u.extend_from_slice(&hi);
                if shift_lo {
                    l.push(0);
                }
                if shift_hi {
                    u.push(0);
                }
                let mut it = src.scan(l, u, true);
                if backward {
                    it.seek_to_last()
                } else {
                    it.seek_to_first()
                }
                it
            })
            .collect();
        let mut rows = 0usize;
        let mut bytes = 0usize;
        let mut scanned = 0u64;
        loop {
            let mut best: Option<usize> = None;
            for (i, it) in iters.iter().enumerate() {
                if !it.valid() {
                    continue;
                }
                best = match best {
                    None => Some(i),
                    Some(b) => {
                        let ord = it.key()[plen..].cmp(&iters[b].key()[plen..]);
                        if (ord.is_lt() && !backward) || (ord.is_gt() && backward) {
                            Some(i)
                        } else {
                            Some(b)
                        }
                    }
                };
            }
            let Some(b) = best else { break };
            let it = &mut iters[b];
            if rows >= limit || bytes >= budget {
                return Ok(Some(t.decode_pk(it.key())?));
            }
            scanned += 1;
            bytes += it.key().len() + it.value().len();
            match visit(it.key(), it.value())? {
                Step::Row => rows += 1,
                Step::Skip => {}
                Step::Stop => return Ok(None),
            }
            it.advance(backward);
        }
        for it in &iters {
            it.status()?;
        }
        let mut first = keys::table_prefix(t.id).to_vec();
        first.extend_from_slice(&lo);
        t.partition_of(&first).reads.fetch_add(scanned, Ordering::Relaxed);
        Ok(None)
    }

    pub(super) fn persist_partitions(&self) -> Result<()> {
        let tables: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        // Only what changed: an idle server writes nothing.
        let puts: Vec<_> = tables
            .iter()
            .filter_map(|t| {
                let record = partition::encode_all(t.next_partition_id.load(Ordering::SeqCst), &t.partitions.read());
                let mut persisted = t.persisted.lock();
                (*persisted != record).then(|| {
                    *persisted = record.clone();
                    (catalog::partitions_key(t.id), Some(record))
                })
            })
            .collect();
        if puts.is_empty() {
            return Ok(());
        }
        Ok(self.kv.meta_write(&puts, &[])?)
    }

    /// One round of partition maintenance: rates, splits, merges, persisted statistics.
    pub(super) fn maintain(&self) -> Result<()> {
        thread_local!(static LAST: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) });
        let now = Instant::now();
        let elapsed = LAST.with(|l| l.replace(Some(now))).map(|t| now.duration_since(t).as_secs_f64()).unwrap_or(1.0);
        let tables: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        for t in tables {
            let parts: Vec<Arc<Partition>> = t.partitions.read().clone();
            for p in &parts {
                p.tick(elapsed);
            }
            for p in &parts {
                let hot = p.write_rate() > self.config.split_write_rate;
                if (p.bytes.load(Ordering::Relaxed) > self.config.split_bytes || hot) && !self.still_one_value(&t, p)? {
                    self.split(&t, p)?;
                }
            }
            self.merge_idle(&t);
        }
        self.persist_partitions()
    }

    /// Whether a partition that a split found to be one partition-key value still is: nothing was written to
    /// it since, or its first and last rows still share that value (two seeks, whatever its size). Without
    /// this, a partition-key value past the split size was read whole every round, for ever: 348 MB under one
    /// key cost about 0.3 of a core while nothing happened.
    fn still_one_value(&self, t: &Table, p: &Partition) -> Result<bool> {
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
                ends.push(t.partition_key_prefix(it.key())?.to_vec());
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
    pub(super) fn split(&self, t: &Table, p: &Arc<Partition>) -> Result<()> {
        let src = self.reader();
        let writes = p.writes.load(Ordering::Relaxed);
        let scan = |f: &mut dyn FnMut(&[u8], i64) -> bool| -> Result<()> {
            p.split_scans.fetch_add(1, Ordering::Relaxed);
            let mut it = src.scan(p.start.clone(), p.end.clone(), false);
            it.seek_to_first();
            while it.valid() {
                let size = (it.key().len() + it.value().len()) as i64;
                if !f(t.partition_key_prefix(it.key())?, size) {
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
        let lid = t.next_partition_id.fetch_add(2, Ordering::SeqCst);
        let rid = lid + 1;
        let l = Arc::new(Partition::new(lid, p.start.clone(), split_key.clone(), left.0, left.1));
        let r = Arc::new(Partition::new(rid, split_key, p.end.clone(), total - left.0, right_rows));
        let mut parts = t.partitions.write();
        if let Some(i) = parts.iter().position(|q| Arc::ptr_eq(q, p)) {
            parts.splice(i..=i, [l, r]);
        }
        Ok(())
    }

    pub(super) fn merge_idle(&self, t: &Table) {
        let mut parts = t.partitions.write();
        let mut i = 0;
        while i + 1 < parts.len() {
            let (a, b) = (&parts[i], &parts[i + 1]);
            let idle = |p: &Partition| p.read_rate() + p.write_rate() < self.config.idle_rate;
            let small = a.bytes.load(Ordering::Relaxed).max(0) + b.bytes.load(Ordering::Relaxed).max(0) < self.config.merge_bytes;
            if small && idle(a) && idle(b) {
                let id = t.next_partition_id.fetch_add(1, Ordering::SeqCst);
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

pub(super) fn stripe(key: &[u8], n: usize) -> usize {
    // FNV-1a: cheap and spreads neighbouring keys.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in key {
        h = (h ^ *b as u64).wrapping_mul(0x100000001b3);
    }
    (h % n as u64) as usize
}

/// Turns a stored row into what a read returns, or `None` when nothing of it is visible.
pub(super) fn materialize(pk: Vec<PkValue>, raw: &[u8], filter: &ReadFilter) -> Result<Option<Row>> {
    Ok(row::read_visible(raw, filter)?.map(|columns| Row { pk, columns }))
}

/// A read's filter under the table's current rules, taken once per read rather than per row.
pub(super) fn read_filter<'a>(t: &Table, read: &'a ReadSpec, now_ms: i64) -> ReadFilter<'a> {
    ReadFilter {
        rules: t.rules(),
        now_ms,
        columns: read.columns.as_deref(),
        max_versions: read.max_versions.unwrap_or(1),
        time_range: read.time_range,
    }
}
