//! What the engine tells of partitions: a table's and its global indexes', their bounds and sizes.

use super::*;

impl Store {
    /// The table's partitions and their statistics (`stored_bytes` not asked of the engine: `None`).
    pub fn partitions(&self, name: &str) -> Result<Vec<PartitionInfo>> {
        Ok(self.inner.table(name)?.parts.infos())
    }

    /// [`Store::partitions`] with the bytes the engine stores for each, where it can tell: one more look-up
    /// in the engine's files, made only for the views that show it.
    pub fn partitions_with_stored_bytes(&self, name: &str) -> Result<Vec<PartitionInfo>> {
        self.with_stored_bytes(self.partitions(name)?)
    }

    fn with_stored_bytes(&self, mut parts: Vec<PartitionInfo>) -> Result<Vec<PartitionInfo>> {
        if let Some(stats) = self.inner.kv.size_stats() {
            let ranges: Vec<(&[u8], &[u8])> = parts.iter().map(|p| (p.start.as_slice(), p.end.as_slice())).collect();
            let sizes = stats.approximate_sizes(&ranges)?;
            for (p, size) in parts.iter_mut().zip(sizes) {
                p.stored_bytes = Some(size as i64);
            }
        }
        Ok(parts)
    }

    /// Each global index of the table (not the local ones, whose entries count in the table's), by name, with the partitions of its entries and their statistics,
    /// the bytes the engine stores for each included where it can tell.
    pub fn index_partitions(&self, table: &str) -> Result<Vec<(String, Vec<PartitionInfo>)>> {
        let t = self.inner.table(table)?;
        let indexes: Vec<(String, u32)> = t.def.read().indexes.iter().filter(|ix| !ix.local).map(|ix| (ix.name.clone(), ix.id)).collect();
        indexes.into_iter().map(|(name, id)| Ok((name, self.with_stored_bytes(t.index_parts(id).infos())?))).collect()
    }

    /// Decodes a bound of a partition of index `index` (an entry's key): the index columns' values, then the
    /// row's key when the entry has it (a unique index's entry without NULLs is its values alone).
    #[allow(clippy::type_complexity)]
    pub fn index_partition_bound(&self, table: &str, index: &str, key: &[u8]) -> Result<(Vec<Option<Value>>, Vec<PkValue>)> {
        let t = self.inner.table(table)?;
        let ix = t.def.read().indexes.iter().find(|i| i.name == index).cloned().ok_or_else(|| StoreError::UnknownIndex(index.into()))?;
        index::decode_entry(&ix, key, &t.pk_types)
    }

    /// The bytes the engine stores for every table's rows, out-of-line values and indexes, when the engine
    /// can tell (`tabula_kv::SizeStats`).
    pub fn stored_bytes(&self) -> Result<Option<u64>> {
        let Some(stats) = self.inner.kv.size_stats() else { return Ok(None) };
        // Every data key starts with a table or index id of 4 bytes.
        Ok(Some(stats.approximate_sizes(&[(&[], &[0xff; 5])])?[0]))
    }

    /// Decodes a partition bound into primary-key bounds (for display); `None` for hash-prefixed tables.
    pub fn partition_bound(&self, name: &str, key: &[u8]) -> Result<Option<Vec<PkValue>>> {
        let t = self.inner.table(name)?;
        if t.buckets > 0 || key.len() <= 4 || key[..4] != keys::table_prefix(t.id) {
            return Ok(None);
        }
        Ok(keys::decode_pk(&key[4..], &t.pk_types[..t.partition_key_len]).ok())
    }

    /// The table's largest partition-key values by stored bytes (Tablestore's guideline: at most 10 GB under one partition-key value), largest first.
    /// Scans the table.
    pub fn largest_partition_keys(&self, name: &str, n: usize) -> Result<Vec<(Vec<PkValue>, u64)>> {
        let t = self.inner.table(name)?;
        let mut sizes: HashMap<Vec<u8>, u64> = HashMap::new();
        let src = self.inner.reader();
        let mut it = src.scan(keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec(), true);
        it.seek_to_first();
        while it.valid() {
            let key = it.key();
            let p = t.partition_key_prefix(key)?;
            *sizes.entry(p.to_vec()).or_default() += (key.len() + it.value().len()) as u64;
            it.advance(false);
        }
        it.status()?;
        let mut v: Vec<_> = sizes
            .into_iter()
            .map(|(k, s)| Ok((keys::decode_pk(&k[t.prefix_len()..], &t.pk_types[..t.partition_key_len])?, s)))
            .collect::<Result<_>>()?;
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        Ok(v)
    }
}
