//! A table as the engine holds it: its key layout, partitions and version rules, and the statistics
//! changes of writes.

use super::*;

/// A table as the engine holds it in memory.
pub(crate) struct Table {
    pub id: u32,
    /// Shared, so that a write copies a pointer, not the definition (its vectors and names), to hold it
    /// without the lock.
    pub def: RwLock<Arc<TableDef>>,
    pub pk_types: Vec<PkType>,
    pub partition_key_len: usize,
    pub buckets: u16,
    /// The partitions of its rows.
    pub parts: Partitions,
    /// The partitions of each global index's entries, by index id (made when first asked for: see
    /// [`Table::index_parts`]).
    pub index_parts: RwLock<HashMap<u32, Arc<Partitions>>>,
    /// Values of a generated partition-key column, if the table has one.
    pub seq: sequence::Sequence,
    /// The primary-key positions whose values `seq` generates (generated columns in the partition key).
    pub seq_columns: Vec<usize>,
    /// Set while the table's rows are rebuilt (`rebuild`): every commit that wrote it from then on
    /// is refused, so that no write lands in rows already copied.
    pub retired: Arc<AtomicBool>,
    /// The journal id of the transaction whose uncommitted rows it holds (a rebuild in a transaction that
    /// had written, `rebuild_txn`), which alone may use it until it ends; 0 for none.
    pub private_to: AtomicU64,
    /// Row writes made while one of its indexes was being built. A build that saw any sweeps its index
    /// before it is ready: an entry the build wrote for a row a writer changed meanwhile is stale.
    pub building_writes: AtomicU64,
}

impl Table {
    /// Refuses the use of a table another transaction made private (`mine`: the caller's journal id, 0
    /// outside a transaction): 55P03, where PostgreSQL's lock would make the caller wait.
    pub(super) fn usable_by(&self, mine: u64) -> Result<()> {
        match self.private_to.load(Ordering::SeqCst) {
            0 => Ok(()),
            owner if owner == mine => Ok(()),
            _ => Err(StoreError::TableLocked(self.def.read().name.clone())),
        }
    }

    /// Bytes before the primary-key columns: table id and the hash bucket, if any.
    pub(super) fn prefix_len(&self) -> usize {
        if self.buckets > 0 {
            5
        } else {
            4
        }
    }

    pub(super) fn rules(&self) -> VersionRules {
        self.def.read().options.rules()
    }

    pub(super) fn check_pk(&self, pk: &[PkValue]) -> Result<()> {
        let def = self.def.read();
        if pk.len() != def.primary_key.len() {
            return Err(StoreError::PrimaryKeyArity { expected: def.primary_key.len(), got: pk.len() });
        }
        for (v, col) in pk.iter().zip(&def.primary_key) {
            if v.pk_type() != col.ty {
                return Err(StoreError::PrimaryKeyType { column: col.name.clone(), expected: col.ty.name(), got: v.pk_type().name() });
            }
            let len = match v {
                PkValue::String(s) => s.len(),
                PkValue::Binary(b) => b.len(),
                PkValue::Integer(_) => 8,
            };
            if len > MAX_PK_VALUE_BYTES {
                return Err(StoreError::PrimaryKeyTooLong { column: col.name.clone(), len });
            }
        }
        Ok(())
    }

    /// The data key of a row: `table_id [bucket] pk`.
    pub(super) fn key(&self, pk: &[PkValue]) -> Result<Vec<u8>> {
        self.check_pk(pk)?;
        let mut k = Vec::with_capacity(32);
        k.extend_from_slice(&keys::table_prefix(self.id));
        if self.buckets > 0 {
            let mut pkey = Vec::with_capacity(16);
            keys::encode_pk(&mut pkey, &pk[..self.partition_key_len]);
            k.push(keys::bucket(&pkey, self.buckets));
        }
        keys::encode_pk(&mut k, pk);
        Ok(k)
    }

    /// A version a write may carry: inside the max version offset and not already expired.
    pub(super) fn check_version(&self, column: &str, version: i64, now: i64) -> Result<()> {
        let o = self.def.read().options;
        let mut start = now.saturating_sub(o.max_version_offset.saturating_mul(1000));
        if o.ttl >= 0 {
            start = start.max(now.saturating_sub(o.ttl.saturating_mul(1000)).saturating_add(1));
        }
        start = start.max(o.hidden_before.saturating_add(1));
        let end = now.saturating_add(o.max_version_offset.saturating_mul(1000));
        if version < start || version >= end {
            return Err(StoreError::VersionOutOfWindow { column: column.to_string(), version, start, end });
        }
        Ok(())
    }

    pub(super) fn check_cell(&self, column: &str, value: &Value) -> Result<()> {
        validate_name(column)?;
        if self.def.read().primary_key.iter().any(|c| c.name == column) {
            return Err(StoreError::InvalidTableDefinition(format!("\"{column}\" is a primary key column, not an attribute")));
        }
        if value.size() > MAX_VALUE_BYTES {
            return Err(StoreError::ValueTooLong { column: column.to_string(), len: value.size() });
        }
        Ok(())
    }

    /// The stored form of a newly written row.
    pub(super) fn new_row(&self, cells: &[CellWrite], now: i64) -> Result<StoredRow> {
        let max_versions = self.def.read().options.max_versions;
        let mut row = StoredRow { marker: row_marker(cells, now), columns: Vec::new() };
        for c in cells {
            self.check_cell(&c.column, &c.value)?;
            if let Some(v) = c.version {
                self.check_version(&c.column, v, now)?;
            }
            row.put_cell(&c.column, c.version.unwrap_or(now), c.value.clone(), max_versions);
        }
        Ok(row)
    }

    /// `new_row(cells, now)` encoded. A row whose cells name each column once (COPY, INSERT) is encoded
    /// straight from them: a bulk load makes millions, and building each `StoredRow` first cost a vector per
    /// column, a copy of each name and value, and the row's own vector.
    pub(super) fn encode_new_row(&self, cells: &[CellWrite], now: i64) -> Result<Vec<u8>> {
        let mut order: Vec<usize> = (0..cells.len()).collect();
        order.sort_unstable_by(|&a, &b| cells[a].column.cmp(&cells[b].column));
        if order.windows(2).any(|w| cells[w[0]].column == cells[w[1]].column) || self.def.read().options.max_versions == 0 {
            return Ok(self.new_row(cells, now)?.encode());
        }
        for c in cells {
            self.check_cell(&c.column, &c.value)?;
            if let Some(v) = c.version {
                self.check_version(&c.column, v, now)?;
            }
        }
        let columns = order.iter().map(|&i| (cells[i].column.as_str(), cells[i].version.unwrap_or(now), &cells[i].value));
        Ok(StoredRow::encode_one_cell_each(row_marker(cells, now), columns))
    }

    /// The key with the values of a generated partition-key column drawn, if it lacks them (so that a
    /// write knows its row before it begins); `None` when nothing was missing. A value given for such a
    /// column moves the sequence past it.
    pub(super) fn draw_sequence(&self, kv: &dyn Engine, pk: &[Option<PkValue>]) -> Result<Option<Vec<Option<PkValue>>>> {
        let mut full: Option<Vec<Option<PkValue>>> = None;
        for &i in self.seq_columns.iter().filter(|&&i| i < pk.len()) {
            match &pk[i] {
                Some(PkValue::Integer(n)) => self.seq.raise(kv, *n)?,
                Some(_) => {}
                None => full.get_or_insert_with(|| pk.to_vec())[i] = Some(PkValue::Integer(self.seq.next(kv)?)),
            }
        }
        Ok(full)
    }

    /// What a write of this key serialises on: the row, or for a generated key the partition key's
    /// auto-increment counter (two writers must not draw the same value).
    pub(super) fn write_lock_key(&self, pk: &[Option<PkValue>]) -> Result<Vec<u8>> {
        match pk.iter().cloned().collect::<Option<Vec<_>>>() {
            Some(full) => self.key(&full),
            None => {
                let mut pkey = Vec::new();
                let known: Vec<PkValue> = pk.iter().take(self.partition_key_len).map_while(|v| v.clone()).collect();
                keys::encode_pk(&mut pkey, &known);
                Ok(catalog::autoinc_key(self.id, &pkey))
            }
        }
    }

    pub(super) fn decode_pk(&self, key: &[u8]) -> Result<Vec<PkValue>> {
        keys::decode_pk(&key[self.prefix_len()..], &self.pk_types)
    }

    pub(super) fn partition_of(&self, key: &[u8]) -> Arc<Partition> {
        self.parts.locate(key)
    }

    /// The partitions of index `id`'s entries: what the catalog held at open, or one empty partition over its
    /// whole key space for an index made since.
    pub(super) fn index_parts(&self, id: u32) -> Arc<Partitions> {
        if let Some(p) = self.index_parts.read().get(&id) {
            return p.clone();
        }
        let whole = || Arc::new(Partitions::whole(keys::table_prefix(id).to_vec(), keys::table_end(id).to_vec()));
        self.index_parts.write().entry(id).or_insert_with(whole).clone()
    }

    /// The key prefix that identifies the partition-key value of a data key.
    pub(super) fn partition_key_prefix<'k>(&self, key: &'k [u8]) -> Result<&'k [u8]> {
        let p = self.prefix_len();
        Ok(&key[..p + keys::prefix_len(&key[p..], &self.pk_types, self.partition_key_len)?])
    }

    pub(super) fn bucket_prefixes(&self) -> Vec<Vec<u8>> {
        let base = keys::table_prefix(self.id).to_vec();
        if self.buckets == 0 {
            return vec![base];
        }
        (0..self.buckets)
            .map(|b| {
                let mut p = base.clone();
                p.push(b as u8);
                p
            })
            .collect()
    }
}

/// Statistics changes of a write, applied once its transaction commits.
pub(super) struct Delta {
    pub(super) partition: Arc<Partition>,
    /// The written table's [`Table::retired`]: a commit that wrote a retired table is refused.
    pub(super) retired: Arc<AtomicBool>,
    pub(super) bytes: i64,
    pub(super) rows: i64,
    /// Rows written: each counts in the partition's write rate (what makes a bulk load look hot, as it is).
    pub(super) writes: u64,
}

/// The error for a commit that wrote a table being moved under a new key, if it did.
pub(super) fn retired_write<'a>(mut deltas: impl Iterator<Item = &'a Delta>) -> Option<StoreError> {
    deltas.any(|d| d.retired.load(Ordering::SeqCst)).then(|| StoreError::TableBeingRebuilt("a table this statement wrote".into()))
}

/// Counts one new row of `bytes` against its partition, merged with the previous row's when they share it
/// (rows of a batch arrive in key order, so runs of one partition are common).
pub(super) fn add_delta(deltas: &mut Vec<Delta>, t: &Table, key: &[u8], bytes: i64) {
    count_delta(deltas, t, t.partition_of(key), bytes, 1);
}

/// Counts a change of `rows` (1 added, -1 removed, 0 rewritten) and `bytes` against `partition`, a partition
/// of table `t`'s or of one of its indexes, merged with the previous change when it was to the same one.
pub(super) fn count_delta(deltas: &mut Vec<Delta>, t: &Table, partition: Arc<Partition>, bytes: i64, rows: i64) {
    match deltas.last_mut() {
        Some(d) if Arc::ptr_eq(&d.partition, &partition) => {
            d.bytes += bytes;
            d.rows += rows;
            d.writes += 1;
        }
        _ => deltas.push(Delta { partition, retired: t.retired.clone(), bytes, rows, writes: 1 }),
    }
}
