//! The one narrow layer over RocksDB: ordered keys, snapshots, write batches, optimistic transactions.
//!
//! Nothing above this module names a RocksDB type except through [`Source`] and [`KvTxn`], so another
//! ordered transactional key-value engine (TiKV, say) can stand in here.
//!
//! Column families: `default` holds rows (see `keys`), `meta` holds the catalog (see `catalog`).

use std::path::Path;
use std::sync::Arc;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBRawIteratorWithThreadMode, OptimisticTransactionDB, OptimisticTransactionOptions,
    Options, ReadOptions, SingleThreaded, SnapshotWithThreadMode, Transaction, WriteBatchWithTransaction, WriteOptions,
};

use crate::error::{Result, StoreError};

pub(crate) type Db = OptimisticTransactionDB<SingleThreaded>;
/// A transaction; `'static` because it lives beside an `Arc` of the database that outlives it.
pub(crate) type KvTxn = Transaction<'static, Db>;
/// A snapshot of the database; `'static` for the same reason.
pub(crate) type KvSnapshot = SnapshotWithThreadMode<'static, Db>;

const META: &str = "meta";
/// Meta records of data key ranges still to be deleted (key: this prefix and the range's start; value: its end).
const PENDING_DELETE: &[u8] = b"~delete/";
/// A meta record written and deleted by [`Kv::prefill_log`], so that its flushes have something to flush.
const LOG_PREFILL: &[u8] = b"~log-prefill";

pub(crate) struct Kv {
    pub db: Db,
    pub write_opts: WriteOptions,
    /// Options of the data column family's table files, for files written outside the database.
    sst_opts: Arc<Options>,
    dir: std::path::PathBuf,
    next_file: std::sync::atomic::AtomicU64,
    /// The last sequence number known to be in a synced log.
    synced_seq: std::sync::atomic::AtomicU64,
    /// Every write syncs the log itself (`Durability::Sync`).
    sync_writes: bool,
    /// Whether some caller of [`Kv::sync_wal`] is syncing the log now. Not held during the sync itself.
    syncing: std::sync::Mutex<bool>,
    /// Signalled when a sync ends, for the callers that waited for it.
    sync_ended: std::sync::Condvar,
}

impl Kv {
    pub fn open(path: &Path, cache_bytes: usize, sync: bool, configure: impl FnOnce(&mut Options)) -> Result<Kv> {
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
        configure(&mut data_opts);
        let mut sst_opts = Options::default();
        sst_opts.set_block_based_table_factory(&table(None));
        sst_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);

        let meta_opts = Options::default();
        let cfs =
            vec![ColumnFamilyDescriptor::new(rocksdb::DEFAULT_COLUMN_FAMILY_NAME, data_opts), ColumnFamilyDescriptor::new(META, meta_opts)];
        let db = Db::open_cf_descriptors(&db_opts, path, cfs).map_err(|e| {
            let msg = e.into_string();
            if msg.contains("lock") || msg.contains("LOCK") {
                StoreError::Storage(format!("data directory {} is locked by another process ({msg})", path.display()))
            } else {
                StoreError::Storage(format!("cannot open data directory {}: {msg}", path.display()))
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
            synced_seq: Default::default(),
            sync_writes: sync,
            syncing: Default::default(),
            sync_ended: Default::default(),
        };
        kv.finish_deletes()?;
        kv.remove_leftovers()?;
        Ok(kv)
    }

    /// Removes the temporary files of processes that died while writing them (a COPY killed mid-way leaves its
    /// table files, spilled runs and key logs, `bulk-<pid>-<n>.<ext>`). Nothing refers to them, and with the directory's
    /// lock held no live process can still be writing one. Returns how many there were.
    fn remove_leftovers(&self) -> Result<usize> {
        let list = std::fs::read_dir(&self.dir).map_err(|e| StoreError::Storage(format!("cannot list {}: {e}", self.dir.display())))?;
        let mut removed = 0;
        for entry in list.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with("bulk-") && [".sst", ".run", ".keys"].iter().any(|ext| name.ends_with(ext)) {
                std::fs::remove_file(entry.path())
                    .map_err(|e| StoreError::Storage(format!("cannot remove the leftover {}: {e}", entry.path().display())))?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Makes the log that commits go to, and the logs waiting to be reused after it, ones that already have
    /// `bytes` of written blocks, as PostgreSQL makes its WAL segments before use: a durable commit then
    /// overwrites blocks the file has and its fdatasync need not also commit a new file size to the journal.
    /// Appending, it costs 180-300 us on this kind of disk; overwriting, 100-190 us.
    ///
    /// RocksDB reuses a log (`recycle_log_file_num`) only once a flush has freed it, and never one of an
    /// earlier process: without this, a server's commits append to new files until its first memtables
    /// fill. So, a few times over: grow the current log with records that only the log keeps (`put_log_data`,
    /// which recovery skips), then flush to switch to the next log, until every log file is grown. The first
    /// switch makes a new, empty log; the second reuses the first grown one. The new log must be grown too
    /// before it is freed: it is the next one reused, at the first flush after open (a bulk load's, say), and
    /// left empty it had every durable commit after that append (fdatasync 300 us against 185 us).
    ///
    /// Returns whether every log has the blocks. The flushes' obsolete-file pass runs after they return, so a
    /// switch may come before the freed log is reusable and make another new one: the loop then grows that one
    /// too. Beyond four rounds commits append as they would without it (slower, no less safe).
    pub fn prefill_log(&self, bytes: usize) -> Result<bool> {
        for _ in 0..4 {
            self.grow_and_switch_log(bytes)?;
            if self.log_sizes()?.iter().all(|&len| len >= bytes as u64) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// One round of [`Kv::prefill_log`]: grows the current log and switches to the next.
    fn grow_and_switch_log(&self, bytes: usize) -> Result<()> {
        let chunk = vec![0u8; 1 << 20];
        let mut opts = WriteOptions::default();
        opts.set_sync(false);
        for _ in 0..bytes.div_ceil(chunk.len()) {
            let mut batch = WriteBatchWithTransaction::<true>::default();
            batch.put_log_data(&chunk);
            self.db.write_opt(batch, &opts)?;
        }
        self.db.flush_wal(true)?;
        // A flush switches logs only when some memtable holds something.
        self.db.put_cf(self.meta_cf(), LOG_PREFILL, [])?;
        self.flush()?;
        Ok(self.db.delete_cf(self.meta_cf(), LOG_PREFILL)?)
    }

    /// The sizes of the log files, by number: the last is the one commits go to.
    fn log_sizes(&self) -> Result<Vec<u64>> {
        let mut logs = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(|e| StoreError::Storage(format!("cannot list {}: {e}", self.dir.display())))? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            let Some(number) = name.to_str().and_then(|n| n.strip_suffix(".log")).and_then(|n| n.parse::<u64>().ok()) else {
                continue;
            };
            logs.push((number, entry.metadata().map(|m| m.len()).unwrap_or(0)));
        }
        logs.sort_unstable();
        Ok(logs.into_iter().map(|(_, len)| len).collect())
    }

    fn meta_cf(&self) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(META).expect("meta column family is created at open")
    }

    fn data_cf(&self) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME).expect("default column family")
    }

    pub fn meta_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get_cf(self.meta_cf(), key)?)
    }

    /// All meta records whose key starts with `prefix`.
    pub fn meta_scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
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
        it.status()?;
        Ok(out)
    }

    /// Writes meta records (`None` deletes) and deletes data key ranges, atomically and durably.
    ///
    /// RocksDB takes no range deletion in a transactional database's write batch, so the ranges go in the
    /// batch as records of deletions to do; then the deletions run and their records go. Should they not
    /// run (an error, a crash), the next open runs them: a dropped or truncated table never shows old rows.
    pub fn meta_write(&self, puts: &[(Vec<u8>, Option<Vec<u8>>)], delete_data: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
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
        Ok(self.db.write_opt(batch, &opts)?)
    }

    /// Runs the data range deletions recorded and not yet done, then forgets them.
    pub fn finish_deletes(&self) -> Result<()> {
        for (k, end) in self.meta_scan(PENDING_DELETE)? {
            self.db.delete_range_cf(self.data_cf(), &k[PENDING_DELETE.len()..], &end)?;
            // Not synced: should this be lost, the deletion runs again at the next open, to the same effect.
            self.db.delete_cf(self.meta_cf(), &k)?;
        }
        Ok(())
    }

    /// Writes a batch of data puts atomically, outside any transaction.
    pub fn write_batch(&self, batch: KvBatch) -> Result<()> {
        Ok(self.db.write_opt(batch.0, &self.write_opts)?)
    }

    /// A path in the data directory for a temporary file of this process (table files being built, spilled
    /// bulk-load runs). Removed by whoever made it; a leftover from a crash is removed at the next open.
    pub fn temp_path(&self, ext: &str) -> std::path::PathBuf {
        let n = self.next_file.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.dir.join(format!("bulk-{}-{n}.{ext}", std::process::id()))
    }

    /// Starts a table file of sorted, distinct data keys, to be moved into the database by [`Kv::ingest`]:
    /// atomic, durable, and past the memtable and the log (the way RocksDB takes bulk loads).
    pub fn sst_file(&self) -> Result<SstFile> {
        let opts = self.sst_opts.clone();
        // SAFETY: the writer refers to the options it was made from; `SstFile` holds them (`_opts`, dropped
        // after `writer`) for as long as the writer lives.
        let writer = rocksdb::SstFileWriter::create(unsafe { &*Arc::as_ptr(&opts) });
        let path = self.temp_path("sst");
        // SAFETY: `open` asks for its receiver for the options' lifetime, but keeps no reference to it.
        unsafe { &*(&writer as *const rocksdb::SstFileWriter<'static>) }.open(&path)?;
        Ok(SstFile { writer, _opts: opts, path, rows: 0, finished: false })
    }

    /// Moves finished table files into the database, all or none. Files may overlap, but must not share a key.
    ///
    /// Every column family is flushed first, because logs are recycled. An ingestion takes a sequence number
    /// that no log record carries. Recovery replays a recycled log up to the first record left over from its
    /// previous use. It goes on into the next log only when that log's first sequence number follows the last
    /// one replayed: a gap is taken for lost records, and the logs after it are dropped. An ingestion that comes
    /// after a switch of logs, before the new log's first write and before the old log's flush has ended,
    /// makes exactly that gap. A crash then would lose every acknowledged commit in the new log. RocksDB's
    /// crash test turned recycling off on finding this (RocksDB PR 12918). After a flush that waited, no older
    /// log is live: the current one is the first that recovery reads, and a gap inside a log is harmless. A
    /// switch between the flush and the ingestion would need a memtable to fill in that moment. The flush
    /// writes what the memtables hold, once per ingested load (only loads over `bulk_ingest_bytes` ingest);
    /// durable commits keep their recycled logs. `crash.rs` kills writers that mix durable commits,
    /// ingestions and switches of logs; the race is too narrow for it to have shown a loss without the flush.
    pub fn ingest(&self, mut files: Vec<SstFile>) -> Result<()> {
        for f in &mut files {
            f.finish()?;
        }
        self.flush()?;
        let mut o = rocksdb::IngestExternalFileOptions::default();
        o.set_move_files(true);
        Ok(self.db.ingest_external_file_opts(&o, files.iter().map(|f| &f.path).collect())?)
    }

    pub fn begin(&self, snapshot: bool) -> Transaction<'_, Db> {
        let mut o = OptimisticTransactionOptions::default();
        o.set_snapshot(snapshot);
        self.db.transaction_opt(&self.write_opts, &o)
    }

    /// A transaction with its snapshot, and a database snapshot at the same point that may outlive it; `None`
    /// when other commits kept landing between the two.
    pub fn begin_with_snapshot(&self) -> Option<(Transaction<'_, Db>, SnapshotWithThreadMode<'_, Db>)> {
        // The two snapshots are taken one after the other; equal sequence numbers mean nothing came between.
        for _ in 0..16 {
            let snap = self.db.snapshot();
            let txn = self.begin(true);
            if txn.snapshot().sequence_number() == snap.sequence_number() {
                return Some((txn, snap));
            }
        }
        None
    }

    /// Makes every write committed so far durable: syncs the write-ahead log unless those writes are in a
    /// synced log already (commits that synced themselves, or another caller's sync).
    ///
    /// Group commit: one caller syncs at a time, outside any lock. Callers that come meanwhile wait for that
    /// sync to end, then return at once if it covered their writes; those whose writes came after it began
    /// share the next one, which the first of them to wake starts. (A mutex held across the sync, as before,
    /// woke its waiters one by one, and a waiter already covered could queue behind a later caller's sync: 16
    /// durable clients ran 8.4-11.5k UPDATEs a second that way, 14.3-17.3k this way.)
    pub fn sync_wal(&self) -> Result<()> {
        use std::sync::atomic::Ordering::{Acquire, Release};
        if self.sync_writes {
            return Ok(());
        }
        // Every write up to this sequence number is in the log's file already: a commit is visible only once
        // written.
        let target = self.db.latest_sequence_number();
        if self.synced_seq.load(Acquire) >= target {
            return Ok(());
        }
        let mut syncing = self.syncing.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.synced_seq.load(Acquire) >= target {
                return Ok(());
            }
            if !*syncing {
                break;
            }
            syncing = self.sync_ended.wait(syncing).unwrap_or_else(|p| p.into_inner());
        }
        *syncing = true;
        drop(syncing);
        // Clears the flag and wakes the waiters however the sync ends, so that one of them tries again after
        // an error.
        struct Ending<'a>(&'a Kv);
        impl Drop for Ending<'_> {
            fn drop(&mut self) {
                *self.0.syncing.lock().unwrap_or_else(|p| p.into_inner()) = false;
                self.0.sync_ended.notify_all();
            }
        }
        let _ending = Ending(self);
        let seq = self.db.latest_sequence_number();
        self.db.flush_wal(true)?;
        self.synced_seq.fetch_max(seq, Release);
        Ok(())
    }

    /// Writes every column family's memtable to disk, together: a log is freed (and reused) only once nothing
    /// in it is left unflushed.
    pub fn flush(&self) -> Result<()> {
        Ok(self.db.flush_cfs_opt(&[self.data_cf(), self.meta_cf()], &rocksdb::FlushOptions::default())?)
    }

    pub fn compact_all(&self) -> Result<()> {
        self.flush()?;
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    /// Compacts `[start, end)` now, through the compaction filter: with a filter set, RocksDB rewrites the
    /// bottommost files too, so every stored row of the range passes the filter's rules of this moment.
    pub fn compact_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        self.flush()?;
        self.db.compact_range(Some(start), Some(end));
        Ok(())
    }
}

/// A table file being written. It owns what it needs, so a bulk load can keep one open across calls; dropped
/// without being ingested, it is deleted.
pub(crate) struct SstFile {
    writer: rocksdb::SstFileWriter<'static>,
    _opts: Arc<Options>,
    path: std::path::PathBuf,
    rows: u64,
    finished: bool,
}

impl SstFile {
    /// Adds the next key; keys must come in ascending order, each once.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.rows += 1;
        Ok(self.writer.put(key, value)?)
    }

    /// Keys added so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Writes the file's index and filter and closes it; once only.
    pub fn finish(&mut self) -> Result<()> {
        if !self.finished {
            self.writer.finish()?;
            self.finished = true;
        }
        Ok(())
    }
}

impl Drop for SstFile {
    fn drop(&mut self) {
        // Moved into the database by a successful ingest; otherwise a leftover.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where a read comes from: the latest committed data, a transaction (its snapshot plus its own writes), or
/// the committed data at a snapshot.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    Db(&'a Db),
    Txn(&'a KvTxn),
    At(&'a Db, &'a KvSnapshot),
}

impl<'a> Source<'a> {
    fn read_opts(&self) -> ReadOptions {
        let mut o = ReadOptions::default();
        match self {
            Source::Db(_) => {}
            // Copies the transaction's snapshot pointer; the wrapper may go right after.
            Source::Txn(t) => o.set_snapshot(&t.snapshot()),
            Source::At(_, snap) => o.set_snapshot(*snap),
        }
        o
    }

    /// Reads a key and hands its value to `f` without copying it out of the block cache where possible.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        Ok(match self {
            Source::Db(db) => db.get_pinned(key)?.map(|v| f(&v)),
            Source::Txn(t) => t.get_opt(key, &self.read_opts())?.map(|v| f(&v)),
            Source::At(db, _) => db.get_pinned_opt(key, &self.read_opts())?.map(|v| f(&v)),
        })
    }

    /// Reads a key a write will depend on: in a transaction, the commit fails if it changed meanwhile.
    pub fn get_for_update(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(match self {
            Source::Db(db) => db.get(key)?,
            Source::Txn(t) => t.get_for_update_opt(key, true, &self.read_opts())?,
            Source::At(db, _) => db.get_opt(key, &self.read_opts())?,
        })
    }

    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        let res = match self {
            Source::Db(db) => db.multi_get(keys),
            Source::Txn(t) => t.multi_get_opt(keys, &self.read_opts()),
            Source::At(db, _) => db.multi_get_opt(keys, &self.read_opts()),
        };
        res.into_iter().map(|r| r.map_err(StoreError::from)).collect()
    }

    /// An iterator over `[lower, upper)`.
    pub fn iter(&self, lower: Vec<u8>, upper: Vec<u8>) -> RawIter<'a> {
        self.iter_opts(lower, upper, true)
    }

    /// An iterator over `[lower, upper)` for a one-off pass over much data (maintenance): the blocks it
    /// reads do not push the hot ones out of the block cache.
    pub fn iter_uncached(&self, lower: Vec<u8>, upper: Vec<u8>) -> RawIter<'a> {
        self.iter_opts(lower, upper, false)
    }

    fn iter_opts(&self, lower: Vec<u8>, upper: Vec<u8>, fill_cache: bool) -> RawIter<'a> {
        let mut o = self.read_opts();
        o.fill_cache(fill_cache);
        o.set_iterate_lower_bound(lower);
        o.set_iterate_upper_bound(upper);
        match self {
            Source::Db(db) | Source::At(db, _) => RawIter::Db(db.raw_iterator_opt(o)),
            Source::Txn(t) => RawIter::Txn(t.raw_iterator_opt(o)),
        }
    }
}

pub(crate) enum RawIter<'a> {
    Db(DBRawIteratorWithThreadMode<'a, Db>),
    Txn(DBRawIteratorWithThreadMode<'a, KvTxn>),
}

macro_rules! each {
    ($self:ident, $it:ident => $e:expr) => {
        match $self {
            RawIter::Db($it) => $e,
            RawIter::Txn($it) => $e,
        }
    };
}

impl RawIter<'_> {
    pub fn seek_to_first(&mut self) {
        each!(self, it => it.seek_to_first())
    }
    pub fn seek_to_last(&mut self) {
        each!(self, it => it.seek_to_last())
    }
    pub fn valid(&self) -> bool {
        each!(self, it => it.valid())
    }
    pub fn key(&self) -> &[u8] {
        each!(self, it => it.key().unwrap_or_default())
    }
    pub fn value(&self) -> &[u8] {
        each!(self, it => it.value().unwrap_or_default())
    }
    pub fn advance(&mut self, backward: bool) {
        each!(self, it => if backward { it.prev() } else { it.next() })
    }
    pub fn status(&self) -> Result<()> {
        Ok(each!(self, it => it.status())?)
    }
}

/// Data puts gathered for one atomic write without a transaction's per-key bookkeeping.
#[derive(Default)]
pub(crate) struct KvBatch(WriteBatchWithTransaction<true>);

impl KvBatch {
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.0.put(key, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_committers_each_return_only_once_a_sync_covers_their_write() {
        let dir = tempfile::tempdir().unwrap();
        let kv = Kv::open(dir.path(), 1 << 20, false, |_| {}).unwrap();
        std::thread::scope(|s| {
            for t in 0..8u32 {
                let kv = &kv;
                s.spawn(move || {
                    for i in 0..200u32 {
                        let mut b = KvBatch::default();
                        b.put(format!("t{t}/{i:03}").as_bytes(), b"v");
                        kv.write_batch(b).unwrap();
                        let written = kv.db.latest_sequence_number();
                        kv.sync_wal().unwrap();
                        let synced = kv.synced_seq.load(std::sync::atomic::Ordering::Acquire);
                        assert!(synced >= written, "thread {t} write {i}: synced up to {synced}, written at {written}");
                    }
                });
            }
        });
        assert!(!*kv.syncing.lock().unwrap(), "no sync is left marked as running");
    }

    #[test]
    fn commits_go_to_a_prefilled_log_and_are_replayed_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let log_files = || {
            std::fs::read_dir(dir.path()).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "log")).count()
        };
        {
            let kv = Kv::open(dir.path(), 1 << 20, true, |_| {}).unwrap();
            let current_log_bytes = || *kv.log_sizes().unwrap().last().unwrap();
            assert!(current_log_bytes() < 1 << 20);
            assert!(kv.prefill_log(3 << 20).unwrap(), "every log has the prefilled blocks");
            assert!(current_log_bytes() >= 3 << 20);
            // The next flush switches to the log waiting for reuse: it has the blocks too.
            kv.db.put_cf(kv.meta_cf(), b"switch", b"").unwrap();
            kv.flush().unwrap();
            assert!(current_log_bytes() >= 3 << 20, "the log after the next switch is a grown one too");
            // Synced commits, written over the old blocks, and not flushed before the close.
            for i in 0..100u32 {
                let mut b = KvBatch::default();
                b.put(format!("k{i:03}").as_bytes(), &i.to_be_bytes());
                kv.write_batch(b).unwrap();
            }
            assert!(kv.meta_get(LOG_PREFILL).unwrap().is_none());
        }
        // Recovery reads the commits back and stops where the reused file's older records begin.
        let kv = Kv::open(dir.path(), 1 << 20, true, |_| {}).unwrap();
        let mut it = kv.db.raw_iterator_cf(kv.data_cf());
        it.seek_to_first();
        let mut n = 0u32;
        while it.valid() {
            assert_eq!(it.key().unwrap(), format!("k{n:03}").as_bytes());
            assert_eq!(it.value().unwrap(), n.to_be_bytes());
            n += 1;
            it.next();
        }
        assert_eq!(n, 100);
        assert!(log_files() <= 4, "the filled logs are reused or deleted, not kept");
    }

    #[test]
    fn a_range_deletion_cut_short_runs_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let data_keys = |kv: &Kv| {
            let mut it = Source::Db(&kv.db).iter(vec![], vec![0xff; 4]);
            it.seek_to_first();
            let mut keys = vec![];
            while it.valid() {
                keys.push(it.key().to_vec());
                it.advance(false);
            }
            keys
        };
        {
            let kv = Kv::open(dir.path(), 1 << 20, true, |_| {}).unwrap();
            let mut b = KvBatch::default();
            for k in [b"a1", b"b1", b"b2", b"c1"] {
                b.put(k, b"v");
            }
            kv.write_batch(b).unwrap();
            // A catalog change and its deletion recorded together, then a crash before the deletion ran.
            kv.meta_write_pending(&[(b"tx".to_vec(), None)], &[(b"b".to_vec(), b"c".to_vec())]).unwrap();
            assert_eq!(data_keys(&kv).len(), 4);
            assert_eq!(kv.meta_scan(PENDING_DELETE).unwrap().len(), 1);
        }
        let kv = Kv::open(dir.path(), 1 << 20, true, |_| {}).unwrap();
        assert_eq!(data_keys(&kv), vec![b"a1".to_vec(), b"c1".to_vec()]);
        assert!(kv.meta_scan(PENDING_DELETE).unwrap().is_empty());
        // The whole write deletes at once and leaves no record behind.
        kv.meta_write(&[], &[(b"a".to_vec(), b"b".to_vec())]).unwrap();
        assert_eq!(data_keys(&kv), vec![b"c1".to_vec()]);
        assert!(kv.meta_scan(PENDING_DELETE).unwrap().is_empty());
    }
}
