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

    /// Table `name`, for a read or write outside any transaction: not one a transaction made private.
    pub(super) fn usable_table(&self, name: &str) -> Result<Arc<Table>> {
        let t = self.table(name)?;
        t.usable_by(0)?;
        Ok(t)
    }

    /// See [`Access::partition_starts`]. Empty for hash-prefixed tables, whose partitions cover hash buckets
    /// rather than key ranges.
    pub(super) fn partition_starts(&self, name: &str) -> Result<Vec<Vec<PkValue>>> {
        let t = self.table(name)?;
        if t.buckets > 0 {
            return Ok(Vec::new());
        }
        let parts = t.parts.list.read();
        parts.iter().skip(1).map(|p| keys::decode_pk(&p.start[4..], &t.pk_types[..t.partition_key_len])).collect()
    }

    pub(super) fn load_catalog(&self) -> Result<()> {
        for (_, v) in self.kv.meta_scan(b"t")? {
            let (id, def) = TableDef::decode(&v)?;
            let parts = match self.kv.meta_get(&catalog::partitions_key(id))? {
                Some(p) => Partitions::decode(&p)?,
                None => Partitions::whole(keys::table_prefix(id).to_vec(), keys::table_end(id).to_vec()),
            };
            let mut index_parts = HashMap::new();
            for ix in &def.indexes {
                if let Some(p) = self.kv.meta_get(&catalog::partitions_key(ix.id))? {
                    index_parts.insert(ix.id, Arc::new(Partitions::decode(&p)?));
                }
            }
            self.install(id, def, parts, index_parts);
        }
        Ok(())
    }

    pub(super) fn install(&self, id: u32, def: TableDef, parts: Partitions, index_parts: HashMap<u32, Arc<Partitions>>) {
        let table = Table {
            id,
            pk_types: def.primary_key.iter().map(|c| c.ty).collect(),
            partition_key_len: def.partition_key_len,
            buckets: def.options.hash_prefix,
            parts,
            index_parts: RwLock::new(index_parts),
            seq: sequence::Sequence::new(id),
            seq_columns: (0..def.partition_key_len).filter(|&i| def.primary_key[i].auto_increment).collect(),
            retired: Arc::new(AtomicBool::new(false)),
            private_to: AtomicU64::new(0),
            building_writes: AtomicU64::new(0),
            def: RwLock::new(Arc::new(def.clone())),
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
        if id >= keys::OUTSIDE_BIT {
            return Err(StoreError::NotSupported("more than 2^31 tables and indexes created over the store's life".into()));
        }
        let parts = Partitions::whole(keys::table_prefix(id).to_vec(), keys::table_end(id).to_vec());
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
                (catalog::partitions_key(id), Some(parts.record())),
            ],
            &[],
        )?;
        self.install(id, def, parts, HashMap::new());
        Ok(())
    }

    pub(super) fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        // The definition, partitions, auto-increment counters and rows go in one atomic write.
        let gone = self.drop_writes(&t, name)?;
        let mut ranges = Inner::index_ranges(&t);
        ranges.extend(keys::table_ranges(t.id));
        self.kv.meta_write(&gone, &ranges)?;
        self.tables.write().remove(name);
        self.rules.write().remove(&t.id);
        Ok(())
    }

    /// Gives a table another name: its record moves, in one atomic write; its rows, partitions and counters
    /// are kept under its id and stay as they are.
    pub(super) fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        crate::value::validate_table_name(to)?;
        let _ddl = self.ddl.lock();
        let t = self.table(from)?;
        self.rename_locked(&t, from, to)
    }

    /// `rename_table` of table `t` with the DDL lock held, to any name.
    pub(super) fn rename_locked(&self, t: &Table, from: &str, to: &str) -> Result<()> {
        if self.tables.read().contains_key(to) {
            return Err(StoreError::TableExists(to.to_string()));
        }
        let mut def = TableDef::clone(&t.def.read());
        def.name = to.to_string();
        self.kv.meta_write(&[(catalog::table_key(from), None), (catalog::table_key(to), Some(def.encode(t.id)))], &[])?;
        *t.def.write() = Arc::new(def);
        let mut tables = self.tables.write();
        if let Some(t) = tables.remove(from) {
            tables.insert(to.to_string(), t);
        }
        Ok(())
    }

    /// The catalog records a drop of table `t` (named `name`) deletes: its definition, its and its indexes'
    /// partitions and its auto-increment counters. Its rows go by a range deletion beside them.
    #[allow(clippy::type_complexity)]
    pub(super) fn drop_writes(&self, t: &Table, name: &str) -> Result<Vec<(Vec<u8>, Option<Vec<u8>>)>> {
        let mut gone = vec![(catalog::table_key(name), None), (catalog::partitions_key(t.id), None)];
        gone.extend(t.def.read().indexes.iter().map(|ix| (catalog::partitions_key(ix.id), None)));
        gone.extend(self.kv.meta_scan(&catalog::autoinc_key(t.id, &[]))?.into_iter().map(|(k, _)| (k, None)));
        Ok(gone)
    }

    pub(super) fn truncate_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        let mut ranges = Inner::index_ranges(&t);
        ranges.extend(keys::table_ranges(t.id));
        let mut records =
            vec![(catalog::partitions_key(t.id), Some(t.parts.reset(keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec())))];
        for ix in t.def.read().indexes.iter().filter(|ix| !ix.local) {
            let parts = t.index_parts(ix.id);
            records.push((
                catalog::partitions_key(ix.id),
                Some(parts.reset(keys::table_prefix(ix.id).to_vec(), keys::table_end(ix.id).to_vec())),
            ));
        }
        self.kv.meta_write(&records, &ranges)?;
        Ok(())
    }

    pub(super) fn alter(&self, name: &str, f: impl FnOnce(&mut TableDef) -> Result<()>) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        self.alter_locked(&t, f)
    }

    /// `alter` with the DDL lock held.
    pub(super) fn alter_locked(&self, t: &Table, f: impl FnOnce(&mut TableDef) -> Result<()>) -> Result<()> {
        let mut def = TableDef::clone(&t.def.read());
        f(&mut def)?;
        self.kv.meta_write(&[(catalog::table_key(&def.name), Some(def.encode(t.id)))], &[])?;
        self.rules.write().insert(t.id, def.options.rules());
        *t.def.write() = Arc::new(def);
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
            self.sweep(&t)?;
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
                let mut ctx = WriteCtx {
                    txn: &*txn,
                    kv: &*self.kv,
                    deltas: Vec::new(),
                    now: self.config.clock.now_ms(),
                    inline_max: self.config.inline_value_bytes,
                    written: 0,
                };
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
        // Decoded inside the engine's lookup (no copy of the value), out-of-line values read after it.
        let mut outside = Vec::new();
        let found = src.get_map(&key, |v| row::read_visible(v, &filter, &mut outside))?.transpose()?.flatten();
        t.partition_of(&key).reads.fetch_add(1, Ordering::Relaxed);
        let Some(mut columns) = found else { return Ok(None) };
        fill_outside(src, &key, &mut columns, &outside)?;
        Ok(Some(Row { pk: pk.to_vec(), columns }))
    }

    pub(super) fn batch_get(&self, src: &dyn Read, t: &Table, pks: &[Vec<PkValue>], read: &ReadSpec) -> Result<Vec<Option<Row>>> {
        let keys = pks.iter().map(|pk| t.key(pk)).collect::<Result<Vec<_>>>()?;
        let values = src.multi_get(&keys.iter().map(Vec::as_slice).collect::<Vec<_>>())?;
        let filter = read_filter(t, read, self.config.clock.now_ms());
        values
            .into_iter()
            .zip(pks)
            .zip(&keys)
            .map(|((v, pk), key)| v.map(|v| materialize(src, key, pk.clone(), &v, &filter)).transpose().map(Option::flatten))
            .collect()
    }

    pub(super) fn get_range(&self, src: &dyn Read, t: &Table, req: &RangeRequest) -> Result<RangeResult> {
        let filter = read_filter(t, &req.read, self.config.clock.now_ms());
        let mut rows = Vec::new();
        let next_start = self.scan_range(src, t, req, |key, raw| {
            let Some(row) = materialize(src, key, t.decode_pk(key)?, raw, &filter)? else { return Ok(Step::Skip) };
            rows.push(row);
            Ok(Step::Row)
        })?;
        Ok(RangeResult { rows, next_start })
    }

    pub(super) fn get_range_latest(&self, src: &dyn Read, t: &Table, req: &RangeRequest) -> Result<LatestRows> {
        let width = req.read.columns.as_ref().map_or(0, |c| c.len());
        let mut page = LatestRows { key_len: t.pk_types.len(), width, ..LatestRows::default() };
        let mut failed = None;
        page.next_start = self.visit_range_latest(src, t, req, &mut |row| match page.push(row) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
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
        let columns = latest_columns(&req.read)?;
        let (rules, now) = (t.rules(), self.config.clock.now_ms());
        let (mut cells, mut key) = (Vec::with_capacity(columns.len()), Vec::with_capacity(t.pk_types.len()));
        let mut outside: Vec<Option<Value>> = Vec::new();
        self.scan_range(src, t, req, |k, raw| {
            if !row::locate_latest(raw, rules, now, columns, &mut cells)? {
                return Ok(Step::Skip);
            }
            read_outside(src, k, raw, columns, &cells, &mut outside)?;
            key.clear();
            keys::decode_pk_into(&k[t.prefix_len()..], &t.pk_types, &mut key)?;
            Ok(if visit(&LatestRow::new(&key, raw, &cells, &outside)) { Step::Row } else { Step::Stop })
        })
    }

    /// The rows named by `pks` (a page of index entries, read from the same `src`), newest value of each of
    /// `read.columns`, in the order of `pks`; a row with nothing visible left is left out.
    pub(super) fn batch_get_latest(&self, src: &dyn Read, t: &Table, pks: Vec<Vec<PkValue>>, read: &ReadSpec) -> Result<LatestRows> {
        let columns = latest_columns(read)?;
        let mut page = LatestRows { key_len: t.pk_types.len(), width: columns.len(), ..LatestRows::default() };
        let keys = pks.iter().map(|pk| t.key(pk)).collect::<Result<Vec<_>>>()?;
        let values = lookup::read_rows(src, &keys)?;
        let (rules, now) = (t.rules(), self.config.clock.now_ms());
        let (mut cells, mut outside) = (Vec::with_capacity(columns.len()), Vec::new());
        for ((raw, key), pk) in values.into_iter().zip(&keys).zip(&pks) {
            let Some(raw) = raw else { continue };
            if !row::locate_latest(&raw, rules, now, columns, &mut cells)? {
                continue;
            }
            read_outside(src, key, &raw, columns, &cells, &mut outside)?;
            page.push(&LatestRow::new(pk, &raw, &cells, &outside))?;
        }
        Ok(page)
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
}

pub(super) fn stripe(key: &[u8], n: usize) -> usize {
    // FNV-1a: cheap and spreads neighbouring keys.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in key {
        h = (h ^ *b as u64).wrapping_mul(0x100000001b3);
    }
    (h % n as u64) as usize
}

/// Turns a stored row (under `key`) into what a read returns, or `None` when nothing of it is visible; its
/// values out of line are read from `src`.
pub(super) fn materialize(src: &dyn Read, key: &[u8], pk: Vec<PkValue>, raw: &[u8], filter: &ReadFilter) -> Result<Option<Row>> {
    let mut outside = Vec::new();
    let Some(mut columns) = row::read_visible(raw, filter, &mut outside)? else { return Ok(None) };
    fill_outside(src, key, &mut columns, &outside)?;
    Ok(Some(Row { pk, columns }))
}

/// The columns a latest-value read names; it returns one version, of any time.
fn latest_columns(read: &ReadSpec) -> Result<&[String]> {
    let Some(columns) = read.columns.as_deref() else {
        return Err(StoreError::NotSupported("a latest-value read names its columns".into()));
    };
    if read.max_versions.is_some_and(|n| n != 1) || read.time_range.is_some() {
        return Err(StoreError::NotSupported("a latest-value read returns one version, of any time".into()));
    }
    Ok(columns)
}

/// The values of the cells located in row `raw` (under `key`) that are stored out of line, into
/// `outside` by slot (left empty when there are none).
fn read_outside(
    src: &dyn Read,
    key: &[u8],
    raw: &[u8],
    columns: &[String],
    cells: &[Option<row::CellAt>],
    outside: &mut Vec<Option<Value>>,
) -> Result<()> {
    outside.clear();
    for (i, c) in cells.iter().enumerate() {
        let Some((c, kind)) = c.and_then(|c| Some((c, row::outside_at(raw, c)?))) else { continue };
        let found = src.get(&keys::outside_key(key, &columns[i], c.version))?;
        outside.resize(cells.len(), None);
        outside[i] = Some(row::outside_value(&columns[i], kind, found)?);
    }
    Ok(())
}

/// Reads the out-of-line values of a read's answer (of the row under `key`) into their slots.
pub(super) fn fill_outside(src: &dyn Read, key: &[u8], columns: &mut row::Columns, outside: &[row::OutsideCell]) -> Result<()> {
    if outside.is_empty() {
        return Ok(());
    }
    row::fill_outside(columns, outside, |column, version| Ok(src.get(&keys::outside_key(key, column, version))?))
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
