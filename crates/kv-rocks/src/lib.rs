//! RocksDB behind Tabula's key-value traits ([`tabula_kv`]): the only crate that names RocksDB.
//!
//! One optimistic transaction database. Column families: `default` holds the data space, `meta` the
//! catalog space. Capabilities: [`Ingest`] (RocksDB's external table files, [`ingest`]) and
//! [`CompactionHook`] (a compaction filter on the data family, [`compaction`]); group commit of the
//! write-ahead log and its prefilled, recycled files are in [`log`].

mod compaction;
mod ingest;
mod log;
mod read;
mod sizes;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, OptimisticTransactionDB, OptimisticTransactionOptions, Options, SingleThreaded,
    WriteBatchWithTransaction, WriteOptions,
};
use tabula_kv::{Batch, CompactionHook, Cursor, Engine, Ingest, KvError, Read, Result, SizeStats, Snapshot, Transaction};

use compaction::FilterSlot;

type Db = OptimisticTransactionDB<SingleThreaded>;

const META: &str = "meta";
/// Meta records of data key ranges still to be deleted (key: this prefix and the range's start; value: its end).
const PENDING_DELETE: &[u8] = b"~delete/";
/// A meta record written and deleted by [`Kv::prefill_log`], so that its flushes have something to flush.
const LOG_PREFILL: &[u8] = b"~log-prefill";

/// A RocksDB error as the traits know it: a write conflict (`Busy`, `TryAgain`) or a storage failure.
fn err(e: rocksdb::Error) -> KvError {
    match e.kind() {
        rocksdb::ErrorKind::Busy | rocksdb::ErrorKind::TryAgain => KvError::Conflict,
        _ => KvError::storage(e.into_string()),
    }
}

/// How to open the database.
#[derive(Clone, Debug)]
pub struct RocksOptions {
    /// The block cache shared by the data's table files.
    pub block_cache_bytes: usize,
    /// Every commit syncs the log itself (the store's `Durability::Sync`); otherwise `sync_log` does.
    pub sync_writes: bool,
    /// Bytes of log blocks written at open, for durable commits to overwrite ([`Kv::prefill_log`]); 0: none.
    pub log_prefill_bytes: usize,
}

impl Default for RocksOptions {
    fn default() -> Self {
        // About what a log holds when the data family's 16 MiB memtable fills and the log is switched for a
        // reused one, which then has as many blocks. Costs about twice this much writing at each open: the
        // log in use and the one reused after it.
        RocksOptions { block_cache_bytes: 256 << 20, sync_writes: true, log_prefill_bytes: 16 << 20 }
    }
}

/// RocksDB as an [`Engine`]. Transactions and snapshots hold an `Arc` of the database, so they may outlive
/// the call that made them.
pub struct RocksEngine {
    kv: Arc<Kv>,
}

impl RocksEngine {
    /// Opens (or creates) the database in `path`; runs range deletions left undone and removes the
    /// temporary files of a process that died.
    pub fn open(path: &Path, options: &RocksOptions) -> Result<RocksEngine> {
        std::fs::create_dir_all(path).map_err(|e| KvError::Storage(format!("cannot create data directory {}: {e}", path.display())))?;
        Ok(RocksEngine { kv: Arc::new(Kv::open(path, options, Arc::default())?) })
    }
}

struct Kv {
    db: Db,
    write_opts: WriteOptions,
    /// Options of the data column family's table files, for files written outside the database.
    sst_opts: Arc<Options>,
    dir: PathBuf,
    next_file: std::sync::atomic::AtomicU64,
    /// The compaction filter's factory, once the store has set one.
    filter: Arc<FilterSlot>,
    /// The last sequence number known to be in a synced log.
    synced_seq: std::sync::atomic::AtomicU64,
    /// Every write syncs the log itself (`RocksOptions::sync_writes`).
    sync_writes: bool,
    /// Whether some caller of [`Kv::sync_wal`] is syncing the log now. Not held during the sync itself.
    syncing: std::sync::Mutex<bool>,
    /// Signalled when a sync ends, for the callers that waited for it.
    sync_ended: std::sync::Condvar,
}

impl Kv {
    fn open(path: &Path, options: &RocksOptions, filter: Arc<FilterSlot>) -> Result<Kv> {
        let (cache_bytes, sync) = (options.block_cache_bytes, options.sync_writes);
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_max_background_jobs(2);
        db_opts.set_bytes_per_sync(1 << 20);
        // A bound on the logs kept for replay at open, should a family's memtable go long without a flush.
        db_opts.set_max_total_wal_size(256 << 20);
        // Logs are reused instead of created: a durable commit's fdatasync then writes into blocks the file
        // already has, and need not also commit a new file size to the journal, as PostgreSQL's preallocated
        // WAL segments need not. An UPDATE with synchronous_commit on took 15-30 % more per second once its log
        // was a recycled one. Recovery tells a recycled file's new records from its old ones by the log number
        // each record carries. A log is free for reuse only once every column family has flushed what it holds,
        // and the catalog's family takes a few writes a second: flushing the families together frees each log
        // at its data's flush, instead of at the 256 MiB bound above (before, logs piled up to that bound).
        db_opts.set_recycle_log_file_num(4);
        db_opts.set_atomic_flush(true);
        // The leader of a group of concurrent writes inserts every member's records into the memtable itself.
        // RocksDB's default has each member insert its own in parallel, which wakes every member twice (once to
        // insert, once when the group is done) instead of once; on a machine with fewer cores than writers the
        // second wake-up costs far more than the insert it parallelises. Async UPDATEs from 16 clients: 37-44k
        // a second against 28-35k.
        db_opts.set_allow_concurrent_memtable_write(false);

        // HyperClockCache: lookups without the LRU cache's shard mutex and list updates, which a point get
        // pays three times (index partition, filter partition, data block). 0: entry size estimated as it runs.
        let cache = Cache::new_hyper_clock_cache(cache_bytes, 0);
        let table = |cache: Option<&Cache>| {
            let mut table = BlockBasedOptions::default();
            if let Some(c) = cache {
                table.set_block_cache(c);
            }
            table.set_bloom_filter(10.0, false);
            // Index and filter blocks live whole in each table file's reader (RocksDB's default), outside the
            // block cache: a point get then makes one block-cache lookup (the data block) instead of three (index
            // partition, filter partition, data block), which measured 7-8 us per get against 4.5-5 us at 1M
            // rows. They cost memory beside the cache (about 1.5 bytes a key) but are never evicted: with them in
            // the cache, a 10M-key file's whole filter was evicted by data blocks and re-read per lookup, which
            // is what partitioning them had fixed.
            table.set_format_version(5);
            table
        };

        let mut data_opts = Options::default();
        data_opts.set_block_based_table_factory(&table(Some(&cache)));
        data_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
        // Small memtables, each merged into the levels below as soon as it is flushed: a scan merges the
        // memtable's skiplist and every level-0 file with the bottom level key by key, so recent writes spread
        // over a table (updates at random keys) slow scans in proportion to how many of them sit there. With
        // 64 MiB and RocksDB's trigger of four level-0 files, a 1000-row scan after a few hundred thousand
        // updates cost 20-30 % more server CPU than on a compacted table; with 16 MiB and a trigger of one,
        // about what a compacted table costs. The price is more compaction: each flush is merged at once.
        data_opts.set_write_buffer_size(16 << 20);
        data_opts.set_level_zero_file_num_compaction_trigger(1);
        // A bloom filter over the memtable's keys: a point get of a key the memtable lacks (most of them,
        // when recent writes touched other keys) skips the skiplist search, cache miss after cache miss.
        data_opts.set_memtable_whole_key_filtering(true);
        data_opts.set_memtable_prefix_bloom_ratio(0.1);
        data_opts.set_compaction_filter_factory(compaction::Factory(filter.clone()));
        let mut sst_opts = Options::default();
        sst_opts.set_block_based_table_factory(&table(None));
        sst_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);

        let meta_opts = Options::default();
        let cfs =
            vec![ColumnFamilyDescriptor::new(rocksdb::DEFAULT_COLUMN_FAMILY_NAME, data_opts), ColumnFamilyDescriptor::new(META, meta_opts)];
        let db = Db::open_cf_descriptors(&db_opts, path, cfs).map_err(|e| {
            let msg = e.into_string();
            if msg.contains("lock") || msg.contains("LOCK") {
                KvError::Storage(format!("data directory {} is locked by another process ({msg})", path.display()))
            } else {
                KvError::Storage(format!("cannot open data directory {}: {msg}", path.display()))
            }
        })?;
        let mut write_opts = WriteOptions::default();
        write_opts.set_sync(sync);
        let kv = Kv {
            db,
            write_opts,
            sst_opts: Arc::new(sst_opts),
            dir: path.to_path_buf(),
            next_file: Default::default(),
            filter,
            synced_seq: Default::default(),
            sync_writes: sync,
            syncing: Default::default(),
            sync_ended: Default::default(),
        };
        kv.finish_deletes()?;
        kv.remove_leftovers()?;
        if options.log_prefill_bytes > 0 {
            kv.prefill_log(options.log_prefill_bytes)?;
        }
        Ok(kv)
    }

    /// Removes the temporary files of processes that died while writing them (a COPY killed mid-way leaves its
    /// table files, spilled runs and key logs, `bulk-<pid>-<n>.<ext>`). Nothing refers to them, and with the directory's
    /// lock held no live process can still be writing one. Returns how many there were.
    fn remove_leftovers(&self) -> Result<usize> {
        let list = std::fs::read_dir(&self.dir).map_err(|e| KvError::Storage(format!("cannot list {}: {e}", self.dir.display())))?;
        let mut removed = 0;
        for entry in list.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with("bulk-") && [".sst", ".run", ".keys"].iter().any(|ext| name.ends_with(ext)) {
                std::fs::remove_file(entry.path())
                    .map_err(|e| KvError::Storage(format!("cannot remove the leftover {}: {e}", entry.path().display())))?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    fn meta_cf(&self) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(META).expect("meta column family is created at open")
    }

    fn data_cf(&self) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME).expect("default column family")
    }

    fn meta_scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut it = self.db.raw_iterator_cf(self.meta_cf());
        it.seek(prefix);
        while it.valid() {
            let k = it.key().unwrap();
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k.to_vec(), it.value().unwrap().to_vec()));
            it.next();
        }
        it.status().map_err(err)?;
        Ok(out)
    }

    /// See [`Engine::meta_write`].
    ///
    /// RocksDB takes no range deletion in a transactional database's write batch, so the ranges go in the
    /// batch as records of deletions to do; then the deletions run and their records go. Should they not
    /// run (an error, a crash), the next open runs them: a dropped or truncated table never shows old rows.
    fn meta_write(&self, puts: &[(Vec<u8>, Option<Vec<u8>>)], delete_data: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        self.meta_write_pending(puts, delete_data)?;
        if delete_data.is_empty() {
            return Ok(());
        }
        self.finish_deletes()
    }

    /// The atomic, durable half of [`Kv::meta_write`]: meta records and records of the deletions to do.
    fn meta_write_pending(&self, puts: &[(Vec<u8>, Option<Vec<u8>>)], delete_data: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        let mut batch = WriteBatchWithTransaction::<true>::default();
        for (k, v) in puts {
            match v {
                Some(v) => batch.put_cf(self.meta_cf(), k, v),
                None => batch.delete_cf(self.meta_cf(), k),
            }
        }
        for (start, end) in delete_data {
            batch.put_cf(self.meta_cf(), [PENDING_DELETE, start].concat(), end);
        }
        let mut opts = WriteOptions::default();
        opts.set_sync(true);
        self.db.write_opt(batch, &opts).map_err(err)
    }

    /// Runs the data range deletions recorded and not yet done, then forgets them.
    fn finish_deletes(&self) -> Result<()> {
        for (k, end) in self.meta_scan(PENDING_DELETE)? {
            self.db.delete_range_cf(self.data_cf(), &k[PENDING_DELETE.len()..], &end).map_err(err)?;
            // Not synced: should this be lost, the deletion runs again at the next open, to the same effect.
            self.db.delete_cf(self.meta_cf(), &k).map_err(err)?;
        }
        Ok(())
    }

    fn temp_path(&self, ext: &str) -> PathBuf {
        let n = self.next_file.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.dir.join(format!("bulk-{}-{n}.{ext}", std::process::id()))
    }

    /// Writes every column family's memtable to disk, together: a log is freed (and reused) only once nothing
    /// in it is left unflushed.
    fn flush(&self) -> Result<()> {
        self.db.flush_cfs_opt(&[self.data_cf(), self.meta_cf()], &rocksdb::FlushOptions::default()).map_err(err)
    }

    fn begin(&self, snapshot: bool) -> rocksdb::Transaction<'_, Db> {
        let mut o = OptimisticTransactionOptions::default();
        o.set_snapshot(snapshot);
        self.db.transaction_opt(&self.write_opts, &o)
    }
}

impl Engine for RocksEngine {
    fn begin(&self, snapshot: bool) -> Box<dyn Transaction> {
        Box::new(read::RocksTxn::new(&self.kv, |kv| kv.begin(snapshot)))
    }

    /// The two snapshots are taken one after the other; equal sequence numbers mean nothing came between.
    fn begin_with_snapshot(&self) -> Option<(Box<dyn Transaction>, Arc<dyn Snapshot>)> {
        for _ in 0..16 {
            let snap = read::RocksSnapshot::new(&self.kv);
            let txn = read::RocksTxn::new(&self.kv, |kv| kv.begin(true));
            if txn.snapshot_sequence() == snap.sequence() {
                return Some((Box::new(txn), Arc::new(snap)));
            }
        }
        None
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        Ok(Arc::new(read::RocksSnapshot::new(&self.kv)))
    }

    fn write(&self, batch: Batch) -> Result<()> {
        let mut b = WriteBatchWithTransaction::<true>::default();
        for (k, v) in &batch.puts {
            b.put(k, v);
        }
        self.kv.db.write_opt(b, &self.kv.write_opts).map_err(err)
    }

    fn meta_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.kv.db.get_cf(self.kv.meta_cf(), key).map_err(err)
    }

    fn meta_scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.kv.meta_scan(prefix)
    }

    fn meta_write(&self, puts: &[(Vec<u8>, Option<Vec<u8>>)], delete_data: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        self.kv.meta_write(puts, delete_data)
    }

    fn sync_log(&self) -> Result<()> {
        self.kv.sync_wal()
    }

    fn flush(&self) -> Result<()> {
        self.kv.flush()
    }

    /// With a compaction filter set, RocksDB rewrites the bottommost files too, so every stored value of the
    /// range passes the filter's rules of this moment.
    fn compact(&self, range: Option<(&[u8], &[u8])>) -> Result<()> {
        self.kv.flush()?;
        match range {
            Some((start, end)) => self.kv.db.compact_range(Some(start), Some(end)),
            None => self.kv.db.compact_range(None::<&[u8]>, None::<&[u8]>),
        }
        Ok(())
    }

    /// In the data directory; a leftover from a crash is removed at the next open.
    fn temp_path(&self, ext: &str) -> PathBuf {
        self.kv.temp_path(ext)
    }

    fn ingest(&self) -> Option<&dyn Ingest> {
        Some(self)
    }

    fn compaction_hook(&self) -> Option<&dyn CompactionHook> {
        Some(self)
    }

    fn size_stats(&self) -> Option<&dyn SizeStats> {
        Some(self)
    }
}

impl Read for RocksEngine {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.kv.db.get_pinned(key).map_err(err)?.map(|v| f(&v)).is_some())
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.kv.db.multi_get(keys).into_iter().map(|r| r.map_err(err)).collect()
    }
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, fill_cache: bool) -> Box<dyn Cursor + '_> {
        let o = read::scan_opts(rocksdb::ReadOptions::default(), lower, upper, fill_cache);
        Box::new(read::RocksCursor::Db(self.kv.db.raw_iterator_opt(o)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Kv {
        pub(crate) fn open_for_test(path: &Path, sync_writes: bool) -> Kv {
            let options = RocksOptions { block_cache_bytes: 1 << 20, sync_writes, log_prefill_bytes: 0 };
            Kv::open(path, &options, Arc::default()).unwrap()
        }
    }

    #[test]
    fn a_range_deletion_cut_short_runs_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let data_keys = |kv: &Kv| {
            let mut it = kv.db.raw_iterator_cf(kv.data_cf());
            it.seek_to_first();
            let mut keys = vec![];
            while it.valid() {
                keys.push(it.key().unwrap().to_vec());
                it.next();
            }
            keys
        };
        {
            let kv = Kv::open_for_test(dir.path(), true);
            for k in [b"a1", b"b1", b"b2", b"c1"] {
                kv.db.put(k, b"v").unwrap();
            }
            // A catalog change and its deletion recorded together, then a crash before the deletion ran.
            kv.meta_write_pending(&[(b"tx".to_vec(), None)], &[(b"b".to_vec(), b"c".to_vec())]).unwrap();
            assert_eq!(data_keys(&kv).len(), 4);
            assert_eq!(kv.meta_scan(PENDING_DELETE).unwrap().len(), 1);
        }
        let kv = Kv::open_for_test(dir.path(), true);
        assert_eq!(data_keys(&kv), vec![b"a1".to_vec(), b"c1".to_vec()]);
        assert!(kv.meta_scan(PENDING_DELETE).unwrap().is_empty());
        // The whole write deletes at once and leaves no record behind.
        kv.meta_write(&[], &[(b"a".to_vec(), b"b".to_vec())]).unwrap();
        assert_eq!(data_keys(&kv), vec![b"c1".to_vec()]);
        assert!(kv.meta_scan(PENDING_DELETE).unwrap().is_empty());
    }
}
