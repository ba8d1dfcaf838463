//! The engine: tables, rows, versions, conditions, increments, ranges, partitions and transactions.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tabula_kv::{Batch, CompactionFilter, CompactionFilterFactory, Cursor, Decision, Engine, Read, SortedFile, Space, Transaction};

use crate::catalog::{self, TableDef, TableOptions};
use crate::clock::{Clock, SystemClock};
use crate::error::{Result, StoreError};
use crate::keys;
use crate::ops::*;
use crate::partition::{self, Partition, PartitionInfo};
use crate::row::{self, ReadFilter, StoredRow, VersionRules};
use crate::runs;
use crate::value::{validate_name, PkBound, PkType, PkValue, Value, MAX_PK_VALUE_BYTES, MAX_VALUE_BYTES};

/// How commits reach the disk. Either way a committed write survives the process being killed; `Sync`
/// also survives the machine losing power at once, `Group` within `interval`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Durability {
    /// fsync the write-ahead log before every commit returns (concurrent commits share one fsync).
    Sync,
    /// Commits return once in the OS; a background thread fsyncs the log every `interval`.
    Group { interval: Duration },
}

#[derive(Clone)]
pub struct StoreConfig {
    pub durability: Durability,
    pub clock: Arc<dyn Clock>,
    /// A partition larger than this splits.
    pub split_bytes: i64,
    /// A partition taking more writes per second than this splits.
    pub split_write_rate: f64,
    /// Two neighbours smaller than this together, and idle, merge.
    pub merge_bytes: i64,
    /// Operations per second below which a partition counts as idle.
    pub idle_rate: f64,
    /// How often the maintenance thread looks at partitions (`None`: only when asked).
    pub maintenance_interval: Option<Duration>,
    /// Default byte budget of one `get_range` call.
    pub scan_budget_bytes: usize,
    /// Bytes of rows a bulk load holds in memory before it spills them, sorted, to a file.
    pub bulk_spill_bytes: usize,
    /// Bulk loads of at least this many bytes are written as table files and ingested, not as a write batch.
    pub bulk_ingest_bytes: usize,
    /// Rows of a streamed bulk load per table file: a file's filter holds a hash of each of its keys (8 bytes)
    /// until the file is finished, so one file for a load of 100M rows would hold 800 MB of them.
    pub bulk_file_rows: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            durability: Durability::Sync,
            clock: Arc::new(SystemClock),
            split_bytes: 256 << 20,
            split_write_rate: 20_000.0,
            merge_bytes: 32 << 20,
            idle_rate: 10.0,
            maintenance_interval: Some(Duration::from_secs(1)),
            scan_budget_bytes: 4 << 20,
            bulk_spill_bytes: 64 << 20,
            bulk_ingest_bytes: 16 << 20,
            bulk_file_rows: 4 << 20,
        }
    }
}

/// A table as the engine holds it in memory.
pub(crate) struct Table {
    pub id: u32,
    pub def: RwLock<TableDef>,
    pub pk_types: Vec<PkType>,
    pub partition_key_len: usize,
    pub buckets: u16,
    pub partitions: RwLock<Vec<Arc<Partition>>>,
    pub next_partition_id: AtomicU64,
}

impl Table {
    /// Bytes before the primary-key columns: table id and the hash bucket, if any.
    fn prefix_len(&self) -> usize {
        if self.buckets > 0 {
            5
        } else {
            4
        }
    }

    fn rules(&self) -> VersionRules {
        self.def.read().options.rules()
    }

    fn check_pk(&self, pk: &[PkValue]) -> Result<()> {
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
    fn key(&self, pk: &[PkValue]) -> Result<Vec<u8>> {
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
    fn check_version(&self, column: &str, version: i64, now: i64) -> Result<()> {
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

    fn check_cell(&self, column: &str, value: &Value) -> Result<()> {
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
    fn new_row(&self, cells: &[CellWrite], now: i64) -> Result<StoredRow> {
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
    fn encode_new_row(&self, cells: &[CellWrite], now: i64) -> Result<Vec<u8>> {
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

    /// What a write of this key serialises on: the row, or for a generated key the partition key's
    /// auto-increment counter (two writers must not draw the same value).
    fn write_lock_key(&self, pk: &[Option<PkValue>]) -> Result<Vec<u8>> {
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

    fn decode_pk(&self, key: &[u8]) -> Result<Vec<PkValue>> {
        keys::decode_pk(&key[self.prefix_len()..], &self.pk_types)
    }

    fn partition_of(&self, key: &[u8]) -> Arc<Partition> {
        partition::locate(&self.partitions.read(), key).clone()
    }

    /// The key prefix that identifies the partition-key value of a data key.
    fn partition_key_prefix<'k>(&self, key: &'k [u8]) -> Result<&'k [u8]> {
        let p = self.prefix_len();
        Ok(&key[..p + keys::prefix_len(&key[p..], &self.pk_types, self.partition_key_len)?])
    }

    fn bucket_prefixes(&self) -> Vec<Vec<u8>> {
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
struct Delta {
    partition: Arc<Partition>,
    bytes: i64,
    rows: i64,
}

/// Counts one new row of `bytes` against its partition, merged with the previous row's when they share it
/// (rows of a batch arrive in key order, so runs of one partition are common).
fn add_delta(deltas: &mut Vec<Delta>, partition: Arc<Partition>, bytes: i64) {
    match deltas.last_mut() {
        Some(d) if Arc::ptr_eq(&d.partition, &partition) => {
            d.bytes += bytes;
            d.rows += 1;
        }
        _ => deltas.push(Delta { partition, bytes, rows: 1 }),
    }
}

pub(crate) struct Inner {
    kv: Arc<dyn Engine>,
    config: StoreConfig,
    tables: RwLock<HashMap<String, Arc<Table>>>,
    /// What compaction needs to know of each table.
    rules: Arc<RwLock<HashMap<u32, VersionRules>>>,
    ddl: Mutex<()>,
    stripes: Vec<Mutex<()>>,
    /// Commits hold it shared; a bulk load holds it alone between checking its keys and writing them.
    commit_gate: RwLock<()>,
    /// Counts ingested bulk loads; a transaction that wrote and saw it change while open is refused.
    bulk_epoch: AtomicU64,
    stop: AtomicBool,
}

/// The storage engine. Cheap to share: clone the `Arc` it lives in.
pub struct Store {
    inner: Arc<Inner>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for Store {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            t.thread().unpark();
            let _ = t.join();
        }
        let _ = self.inner.persist_partitions();
        let _ = self.inner.kv.sync_log();
    }
}

/// The marker of a newly written row: the newest version written, so that a row whose cells were written
/// with explicit (older) versions expires with them; the write's time when it has no cells, so that a row
/// of key columns only lives a ttl from its write.
fn row_marker(cells: &[CellWrite], now: i64) -> i64 {
    cells.iter().map(|c| c.version.unwrap_or(now)).max().unwrap_or(now)
}

/// The compaction filter: drops versions beyond `max_versions`, expired versions, and rows nothing of which
/// is visible any more. Each compaction takes the tables' rules and the clock as they are at its start.
struct VersionFilter {
    rules: Arc<RwLock<HashMap<u32, VersionRules>>>,
    clock: Arc<dyn Clock>,
}

impl CompactionFilterFactory for VersionFilter {
    fn create(&self) -> CompactionFilter {
        let (rules, now_ms) = (self.rules.read().clone(), self.clock.now_ms());
        Box::new(move |key, value| {
            let Some(id) = key.get(..4).map(|b| u32::from_be_bytes(b.try_into().unwrap())) else { return Decision::Keep };
            // A table this filter does not know is kept: at open, the engine may compact before the catalog
            // is loaded, and a dropped table's rows are removed by its range deletion anyway.
            let Some(rules) = rules.get(&id) else { return Decision::Keep };
            match row::compact(value, *rules, now_ms) {
                row::Compacted::Keep => Decision::Keep,
                row::Compacted::Remove => Decision::Remove,
                row::Compacted::Change(v) => Decision::Change(v),
            }
        })
    }
}

impl Store {
    /// Opens the store kept in `kv`, restoring its catalog. With `Durability::Sync`, the engine must sync
    /// its log at every commit itself (RocksDB: `RocksOptions::sync_writes`).
    pub fn open(kv: Arc<dyn Engine>, config: StoreConfig) -> Result<Store> {
        let rules = Arc::new(RwLock::new(HashMap::new()));
        if let Some(hook) = kv.compaction_hook() {
            hook.set_filter(Arc::new(VersionFilter { rules: rules.clone(), clock: config.clock.clone() }));
        }
        let inner = Arc::new(Inner {
            kv,
            config,
            tables: RwLock::new(HashMap::new()),
            rules,
            ddl: Mutex::new(()),
            stripes: (0..256).map(|_| Mutex::new(())).collect(),
            commit_gate: RwLock::new(()),
            bulk_epoch: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        inner.load_catalog()?;
        let mut threads = Vec::new();
        if let Some(every) = inner.config.maintenance_interval {
            let weak = Arc::downgrade(&inner);
            threads.push(spawn_loop("tabula-partitions", weak, every, |i| {
                let _ = i.maintain();
            }));
        }
        if let Durability::Group { interval } = inner.config.durability {
            let weak = Arc::downgrade(&inner);
            threads.push(spawn_loop("tabula-group-commit", weak, interval, |i| {
                let _ = i.kv.sync_log();
            }));
        }
        Ok(Store { inner, threads })
    }

    pub fn durability(&self) -> Durability {
        self.inner.config.durability
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.config.clock
    }

    // ---- catalog ----

    pub fn create_table(&self, def: TableDef) -> Result<()> {
        self.inner.create_table(def)
    }

    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.inner.drop_table(name)
    }

    /// Removes every row; the table, its options and its auto-increment counters stay.
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.inner.truncate_table(name)
    }

    pub fn table(&self, name: &str) -> Result<TableDef> {
        Ok(self.inner.table(name)?.def.read().clone())
    }

    /// The table's internal id: stable for the table's life (the SQL catalog derives its OIDs from it).
    pub fn table_id(&self, name: &str) -> Result<u32> {
        Ok(self.inner.table(name)?.id)
    }

    pub fn table_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.tables.read().keys().cloned().collect();
        v.sort();
        v
    }

    /// Changes options; effective on the next read. `hash_prefix` is fixed at creation.
    ///
    /// What a read could not see stays unseen, whatever the new options: hidden data does not come back when
    /// the ttl or max_versions is raised, though it is only removed from disk by some later compaction (an
    /// answer must not depend on when that runs). A raised ttl keeps hiding what the old one had expired
    /// (`hidden_before`). A raised max_versions first compacts the table under the old count, when versions
    /// beyond it may still be stored (`stored_versions`): that costs a rewrite of the table once, and only
    /// after max_versions was lowered.
    pub fn set_options(&self, name: &str, options: TableOptions) -> Result<()> {
        self.inner.set_options(name, options)
    }

    /// Replaces the SQL layer's metadata of a table.
    pub fn set_user_meta(&self, name: &str, meta: Vec<u8>) -> Result<()> {
        self.inner.alter(name, |def| {
            def.user_meta = meta;
            Ok(())
        })
    }

    /// The SQL layer's role records (name, record), by name; the engine does not read them.
    pub fn roles(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let rows = self.inner.kv.meta_scan(b"r")?;
        rows.into_iter()
            .map(|(k, v)| Ok((String::from_utf8(k[1..].to_vec()).map_err(|_| StoreError::Corrupt("role name".into()))?, v)))
            .collect()
    }

    /// Writes a role record (`None`: removes it), durably.
    pub fn set_role(&self, name: &str, record: Option<Vec<u8>>) -> Result<()> {
        let _ddl = self.inner.ddl.lock();
        Ok(self.inner.kv.meta_write(&[(catalog::role_key(name), record)], &[])?)
    }

    pub fn partitions(&self, name: &str) -> Result<Vec<PartitionInfo>> {
        Ok(self.inner.table(name)?.partitions.read().iter().map(|p| p.info()).collect())
    }

    /// Decodes a partition bound into primary-key bounds (for display); `None` for hash-prefixed tables.
    pub fn partition_bound(&self, name: &str, key: &[u8]) -> Result<Option<Vec<PkValue>>> {
        let t = self.inner.table(name)?;
        if t.buckets > 0 || key.len() <= 4 || key[..4] != keys::table_prefix(t.id) {
            return Ok(None);
        }
        Ok(keys::decode_pk(&key[4..], &t.pk_types[..t.partition_key_len]).ok())
    }

    /// The table's largest partition-key values by stored bytes (seed 004's 10 GB guideline), largest first.
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

    /// Runs one round of partition maintenance now (statistics, splits, merges).
    pub fn run_maintenance(&self) -> Result<()> {
        self.inner.maintain()
    }

    /// Makes every write committed so far survive a power loss (under `Durability::Group`, a commit that must
    /// not wait for the background sync: PostgreSQL's `synchronous_commit = on`). Concurrent callers share
    /// one fsync; under `Durability::Sync` the commits synced themselves and this returns at once.
    pub fn sync_wal(&self) -> Result<()> {
        Ok(self.inner.kv.sync_log()?)
    }

    /// Writes the memtables to disk (tests use it to lay out several files).
    pub fn flush(&self) -> Result<()> {
        Ok(self.inner.kv.flush()?)
    }

    /// Flushes memtables and compacts everything: expired and surplus versions are physically removed.
    pub fn compact(&self) -> Result<()> {
        Ok(self.inner.kv.compact(None)?)
    }

    /// Stored versions of a row as they are on disk, visible or not (for tests and diagnostics).
    pub fn raw_row(&self, table: &str, pk: &[PkValue]) -> Result<Option<StoredRow>> {
        let t = self.inner.table(table)?;
        let key = t.key(pk)?;
        self.inner.reader().get_map(&key, StoredRow::decode)?.transpose()
    }

    /// Starts a transaction: snapshot reads, read-your-writes, atomic commit, write-conflict detection.
    pub fn begin(&self) -> Txn {
        self.new_txn(self.inner.kv.begin(true), None)
    }

    /// Starts a transaction as `begin` does, with a [`ReadView`] at its snapshot (see [`Txn::read_view`]):
    /// for a transaction of several statements, whose reads may be streamed. The view costs a second
    /// snapshot, so transactions of one statement do without.
    pub fn begin_with_view(&self) -> Txn {
        let Some((txn, snap)) = self.inner.kv.begin_with_snapshot() else { return self.begin() };
        self.new_txn(txn, Some(Arc::new(ReadView { snap, inner: self.inner.clone() })))
    }

    fn new_txn(&self, txn: Box<dyn Transaction>, view: Option<Arc<ReadView>>) -> Txn {
        let epoch = self.inner.bulk_epoch.load(Ordering::SeqCst);
        Txn { txn: Some(txn), view, deltas: RefCell::new(Vec::new()), epoch, wrote: Default::default(), inner: self.inner.clone() }
    }

    /// Many row writes in one call: atomic when all rows share one partition-key value (the outer error
    /// then names the failing row and nothing is written); otherwise each row succeeds or fails alone.
    pub fn batch_write(&self, table: &str, writes: &[RowWrite]) -> Result<Vec<Result<WriteOutcome>>> {
        let t = self.inner.table(table)?;
        let same_partition = {
            let mut first: Option<Vec<PkValue>> = None;
            writes.iter().all(|w| {
                let pk: Vec<Option<PkValue>> = match w {
                    RowWrite::Put { pk, .. } => pk.clone(),
                    RowWrite::Update { pk, .. } | RowWrite::Delete { pk, .. } => pk.iter().cloned().map(Some).collect(),
                };
                let Some(pkey) = pk.get(..t.partition_key_len).and_then(|p| p.iter().cloned().collect::<Option<Vec<_>>>()) else {
                    return false;
                };
                match &first {
                    None => {
                        first = Some(pkey);
                        true
                    }
                    Some(f) => *f == pkey,
                }
            })
        };
        if same_partition {
            let outcomes = self.inner.autocommit(&[], |ctx| {
                writes
                    .iter()
                    .enumerate()
                    .map(|(i, w)| {
                        ctx.row_write(&t, w).map_err(|e| match e {
                            StoreError::Conflict => e,
                            e => {
                                StoreError::ConditionFailed(format!("row {i} of the batch failed, nothing was written: {e}")).with_source(e)
                            }
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })?;
            Ok(outcomes.into_iter().map(Ok).collect())
        } else {
            Ok(writes.iter().map(|w| self.inner.autocommit(&[], |ctx| ctx.row_write(&t, w))).collect())
        }
    }
}

impl StoreError {
    /// Keeps the original error's kind when it carries more meaning than the wrapper.
    fn with_source(self, source: StoreError) -> StoreError {
        match source {
            StoreError::ConditionFailed(_) => self,
            other => other,
        }
    }
}

fn spawn_loop(name: &str, weak: Weak<Inner>, every: Duration, f: fn(&Inner)) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || loop {
            std::thread::park_timeout(every);
            let Some(inner) = weak.upgrade() else { return };
            if inner.stop.load(Ordering::SeqCst) {
                return;
            }
            f(&inner);
        })
        .expect("spawn maintenance thread")
}

/// What a range walk's visitor made of a stored row.
enum Step {
    /// A returned row: it counts against the limit.
    Row,
    /// Nothing visible.
    Skip,
    /// The caller wants no more rows.
    Stop,
}

/// The read half of [`Access`], the same for every source of reads: each type names its source in
/// `ReadSource`.
macro_rules! access_reads {
    () => {
        fn get_row(&self, table: &str, pk: &[PkValue], read: &ReadSpec) -> Result<Option<Row>> {
            let (inner, src) = self.read_source();
            inner.get_row(src, &*inner.table(table)?, pk, read)
        }
        fn batch_get(&self, table: &str, pks: &[Vec<PkValue>], read: &ReadSpec) -> Result<Vec<Option<Row>>> {
            let (inner, src) = self.read_source();
            inner.batch_get(src, &*inner.table(table)?, pks, read)
        }
        fn get_range(&self, table: &str, req: &RangeRequest) -> Result<RangeResult> {
            let (inner, src) = self.read_source();
            inner.get_range(src, &*inner.table(table)?, req)
        }
        fn get_range_latest(&self, table: &str, req: &RangeRequest) -> Result<LatestRows> {
            let (inner, src) = self.read_source();
            inner.get_range_latest(src, &*inner.table(table)?, req)
        }
        fn visit_range_latest(
            &self,
            table: &str,
            req: &RangeRequest,
            visit: &mut dyn FnMut(&LatestRow<'_>) -> bool,
        ) -> Result<Option<Vec<PkValue>>> {
            let (inner, src) = self.read_source();
            inner.visit_range_latest(src, &*inner.table(table)?, req, visit)
        }
    };
}

/// Where an [`Access`] implementation reads from.
trait ReadSource {
    fn read_source(&self) -> (&Inner, &dyn Read);
}

impl ReadSource for Store {
    fn read_source(&self) -> (&Inner, &dyn Read) {
        (&self.inner, self.inner.reader())
    }
}

impl ReadSource for Txn {
    fn read_source(&self) -> (&Inner, &dyn Read) {
        (&self.inner, self.kv())
    }
}

impl ReadSource for ReadView {
    fn read_source(&self) -> (&Inner, &dyn Read) {
        (&self.inner, &*self.snap)
    }
}

/// The operations of the engine, offered alike by the store (each call commits on its own) and by a
/// transaction.
pub trait Access {
    fn get_row(&self, table: &str, pk: &[PkValue], read: &ReadSpec) -> Result<Option<Row>>;
    /// One multi-get; results in the order of `pks`.
    fn batch_get(&self, table: &str, pks: &[Vec<PkValue>], read: &ReadSpec) -> Result<Vec<Option<Row>>>;
    fn get_range(&self, table: &str, req: &RangeRequest) -> Result<RangeResult>;
    /// A range read of the newest value of each of `req.read.columns` (which it needs), slotted in their order:
    /// what `get_range` returns for one version, without names or version lists per row.
    fn get_range_latest(&self, table: &str, req: &RangeRequest) -> Result<LatestRows>;
    /// The same read, lending each row to `visit` instead of copying it into a page; `visit` returns false to
    /// stop. Returns where to resume when the limit or the byte budget cut the read short.
    fn visit_range_latest(
        &self,
        table: &str,
        req: &RangeRequest,
        visit: &mut dyn FnMut(&LatestRow<'_>) -> bool,
    ) -> Result<Option<Vec<PkValue>>>;
    /// Replaces the row. `None` in `pk` asks the engine to generate an auto-increment value.
    fn put_row(&self, table: &str, pk: &[Option<PkValue>], cells: &[CellWrite], cond: &Condition) -> Result<WriteOutcome>;
    fn update_row(&self, table: &str, pk: &[PkValue], ops: &[(String, UpdateOp)], cond: &Condition) -> Result<WriteOutcome>;
    fn delete_row(&self, table: &str, pk: &[PkValue], cond: &Condition) -> Result<WriteOutcome>;
    /// Inserts new rows atomically; any existing key is `RowExists` and nothing is written.
    fn insert_rows(&self, table: &str, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>>;
    /// Marks a row the statement read as one the transaction depends on (`SELECT ... FOR UPDATE`): should
    /// another transaction change or delete it between this one's snapshot and its commit, the commit fails
    /// with `Conflict`, as if this transaction had written the row. Outside a transaction there is nothing to
    /// hold it for (a statement's lock would end with the statement), so by default nothing happens.
    fn lock_row(&self, _table: &str, _pk: &[PkValue]) -> Result<()> {
        Ok(())
    }
    /// Where each partition after the first starts, as partition-key values: split points at which a scan
    /// may read the table's partitions in parallel. None by default: a transaction's reads also merge its
    /// own writes, and go one way.
    fn partition_starts(&self, _table: &str) -> Result<Vec<Vec<PkValue>>> {
        Ok(Vec::new())
    }
}

impl Access for Store {
    fn partition_starts(&self, table: &str) -> Result<Vec<Vec<PkValue>>> {
        self.inner.partition_starts(table)
    }
    fn insert_rows(&self, table: &str, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>> {
        let complete: Option<Vec<Vec<PkValue>>> = rows.iter().map(|(pk, _)| pk.iter().cloned().collect()).collect();
        if let Some(pks) = complete {
            // Complete keys need no transaction: one checked, atomic write.
            let mut load = self.bulk_load(table)?;
            for (pk, (_, cells)) in pks.iter().zip(rows) {
                load.add_row(pk, cells)?;
            }
            return match load.commit() {
                Ok(()) => Ok(pks),
                Err(BulkError::Duplicate(_)) => Err(StoreError::RowExists),
                Err(BulkError::Store(e)) => Err(e),
            };
        }
        let mut attempt = 0;
        loop {
            let txn = self.begin();
            let r = txn.insert_rows(table, rows).and_then(|pks| txn.commit().map(|_| pks));
            match r {
                Err(StoreError::Conflict) if attempt < 20 => attempt += 1,
                r => return r,
            }
        }
    }
    access_reads!();
    fn put_row(&self, table: &str, pk: &[Option<PkValue>], cells: &[CellWrite], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.table(table)?;
        let lock = t.write_lock_key(pk)?;
        self.inner.autocommit(&[lock], |ctx| ctx.put_row(&t, pk, cells, cond))
    }
    fn update_row(&self, table: &str, pk: &[PkValue], ops: &[(String, UpdateOp)], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.table(table)?;
        let key = t.key(pk)?;
        self.inner.autocommit(&[key], |ctx| ctx.update_row(&t, pk, ops, cond))
    }
    fn delete_row(&self, table: &str, pk: &[PkValue], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.table(table)?;
        let key = t.key(pk)?;
        self.inner.autocommit(&[key], |ctx| ctx.delete_row(&t, pk, cond))
    }
}

/// A bulk load: new rows gathered and written atomically at `commit`, without a transaction. A
/// transaction tracks and re-validates every key it writes; at a million rows that costs more than the load
/// itself. Here the keys are checked once, at commit, while other commits wait (the commit gate), so no row
/// can appear between the check and the write. Nothing is visible, and nothing is written, before `commit`;
/// dropping the load discards it.
///
/// A small load is held in memory and written as one write batch. Past `StoreConfig::bulk_ingest_bytes` it
/// is written as sorted table files and ingested: they skip the memtable and the log, and land where later
/// compactions need not rewrite them. Rows that arrive in ascending key order (an export sorted by its key,
/// the usual case) then stream straight into a table file; only their keys stay in memory, for the checks at
/// commit. Other rows are held in memory up to `StoreConfig::bulk_spill_bytes`, then sorted and spilled to a
/// run file (see `runs`), so a load of any size needs bounded memory. Ingested rows are not in the memtable,
/// where optimistic transactions look for conflicting writes, so a transaction that wrote and commits after
/// an ingest is refused with `Conflict` (the bulk epoch) rather than risk missing one.
pub struct BulkLoad {
    inner: Arc<Inner>,
    table: Arc<Table>,
    /// Rows not yet spilled or streamed, and whether they came in strictly ascending key order.
    rows: Vec<runs::Entry>,
    rows_ascending: bool,
    /// Bytes of `rows`, and of the whole load.
    held: usize,
    bytes: usize,
    runs: Vec<runs::Run>,
    streamed: Option<Streamed>,
    next_pos: usize,
    deltas: Vec<Delta>,
    now: i64,
}

/// The rows of a load written to table files as they arrived, each with a key above all before it.
struct Streamed {
    /// The last is being written; one is finished every `StoreConfig::bulk_file_rows` rows.
    files: Vec<Box<dyn SortedFile>>,
    /// Each row's key and position in the load, in key order, for the checks at commit: in a run file of
    /// their own (with empty values), not in memory.
    keys: runs::RunWriter,
}

/// Adds the next row to the last of a load's table files, first starting a new one when it has
/// `StoreConfig::bulk_file_rows` (a file's filter holds a hash of each of its keys until it is finished).
fn put_in_files(inner: &Inner, files: &mut Vec<Box<dyn SortedFile>>, key: &[u8], value: &[u8]) -> Result<()> {
    if files.last().is_none_or(|f| f.rows() >= inner.config.bulk_file_rows) {
        if let Some(f) = files.last_mut() {
            f.finish()?;
        }
        files.push(inner.kv.ingest().ok_or_else(|| StoreError::NotSupported("bulk loads as files on this engine".into()))?.file()?);
    }
    Ok(files.last_mut().expect("a file being written").put(key, value)?)
}

impl Streamed {
    fn push(&mut self, inner: &Inner, key: &[u8], value: &[u8], pos: usize) -> Result<()> {
        put_in_files(inner, &mut self.files, key, value)?;
        self.keys.push(key, &[], pos)
    }
}

impl Store {
    /// Starts a bulk load of new rows into `table` (COPY outside a transaction).
    pub fn bulk_load(&self, table: &str) -> Result<BulkLoad> {
        Ok(BulkLoad {
            table: self.inner.table(table)?,
            rows: Vec::new(),
            rows_ascending: true,
            held: 0,
            bytes: 0,
            runs: Vec::new(),
            streamed: None,
            next_pos: 0,
            deltas: Vec::new(),
            now: self.inner.config.clock.now_ms(),
            inner: self.inner.clone(),
        })
    }
}

impl Store {
    /// Inserts the row, or when it exists applies `ops` to it instead: atomically, in one call (SQL's
    /// `INSERT ... ON CONFLICT DO UPDATE`). `existed` tells which happened.
    pub fn upsert_row(&self, table: &str, pk: &[PkValue], cells: &[CellWrite], ops: &[(String, UpdateOp)]) -> Result<WriteOutcome> {
        let t = self.inner.table(table)?;
        let key = t.key(pk)?;
        let full: Vec<Option<PkValue>> = pk.iter().cloned().map(Some).collect();
        self.inner.autocommit(&[key], |ctx| match ctx.put_row(&t, &full, cells, &Condition::expect_not_exist()) {
            Err(StoreError::RowExists) => ctx.update_row(&t, pk, ops, &Condition::expect_exist()),
            r => r,
        })
    }
}

impl BulkLoad {
    /// Adds rows; their keys must be complete (no generated values) and new.
    pub fn add(&mut self, rows: &[(Vec<PkValue>, Vec<CellWrite>)]) -> Result<()> {
        rows.iter().try_for_each(|(pk, cells)| self.add_row(pk, cells))
    }

    pub fn add_row(&mut self, pk: &[PkValue], cells: &[CellWrite]) -> Result<()> {
        let key = self.table.key(pk)?;
        let v = self.table.encode_new_row(cells, self.now)?;
        let size = key.len() + v.len();
        self.bytes += size;
        add_delta(&mut self.deltas, self.table.partition_of(&key), size as i64);
        let pos = self.next_pos;
        self.next_pos += 1;
        if let Some(s) = &mut self.streamed {
            if key.as_slice() > s.keys.last() {
                return s.push(&self.inner, &key, &v, pos);
            }
        }
        if self.rows.last().is_some_and(|last| last.0 >= key) {
            self.rows_ascending = false;
        }
        // What a held row takes: its bytes, its entry, and the allocator's header of each of its two buffers.
        // Counting the bytes alone, a load of small rows held four times its spill threshold before spilling.
        self.held += size + std::mem::size_of::<runs::Entry>() + 32;
        self.rows.push((key, v, pos));
        if self.streamed.is_none()
            && self.runs.is_empty()
            && self.rows_ascending
            && self.held >= self.inner.config.bulk_ingest_bytes
            && self.inner.kv.ingest().is_some()
        {
            // Ascending so far, and large enough to be ingested: from here on, rows in order go straight to a
            // table file.
            let mut s = Streamed { files: Vec::new(), keys: runs::RunWriter::create(self.inner.kv.temp_path("keys"))? };
            for (k, v, pos) in self.rows.drain(..) {
                s.push(&self.inner, &k, &v, pos)?;
            }
            self.streamed = Some(s);
            self.held = 0;
        } else if self.held >= self.inner.config.bulk_spill_bytes {
            let run = runs::spill(self.inner.kv.temp_path("run"), &mut self.rows)?;
            self.runs.push(run);
            self.held = 0;
            self.rows_ascending = true;
        }
        Ok(())
    }

    /// Writes every row at once. A key that repeats in the load or names a visible row fails the whole load
    /// with `Duplicate` (the position of the first row that could not be inserted); nothing is written then.
    pub fn commit(mut self) -> std::result::Result<(), BulkError> {
        runs::sort(&mut self.rows);
        // The streamed rows' table files, and the run of their keys.
        let (streamed, streamed_run) = match self.streamed.take() {
            Some(s) => (s.files, Some(s.keys.finish()?)),
            None => (Vec::new(), None),
        };
        // The load's smallest and largest keys: the ends of the runs, of the sorted rows in memory and of the
        // streamed rows.
        let ends = self
            .runs
            .iter()
            .map(|r| (r.first.as_slice(), r.last.as_slice()))
            .chain(self.rows.first().zip(self.rows.last()).map(|(a, b)| (a.0.as_slice(), b.0.as_slice())))
            .chain(streamed_run.as_ref().map(|r| (r.first.as_slice(), r.last.as_slice())));
        let Some((first, last)) =
            ends.fold(None, |span: Option<(&[u8], &[u8])>, (lo, hi)| Some(span.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi)))))
        else {
            return Ok(());
        };
        let (first, last) = (first.to_vec(), last.to_vec());
        // One ascending stream of (key, position) over the held rows and the streamed keys: repeats sit side
        // by side, existing rows are read in key order, and a table file needs its keys so.
        let mut merged = runs::Merge::new(&self.runs, std::mem::take(&mut self.rows))?;
        let mut streamed_keys = runs::Merge::new(streamed_run.as_slice(), Vec::new())?;
        let mut streamed_next = streamed_keys.next()?;
        let rules = self.table.rules();
        let _exclusive = self.inner.commit_gate.write();
        let src = self.inner.reader();
        // A load into an empty stretch of the table (a first load, or appended keys) needs no per-key reads.
        let stored_in_span = {
            let mut upper = last;
            upper.push(0);
            let mut it = src.scan(first, upper, true);
            it.seek_to_first();
            it.status().map_err(StoreError::from)?;
            it.valid()
        };
        // The first row that cannot be inserted.
        let mut duplicate: Option<usize> = None;
        let note = |duplicate: &mut Option<usize>, i: usize| *duplicate = Some(duplicate.map_or(i, |d| d.min(i)));
        let check = |keys: &mut Vec<(Vec<u8>, usize)>, duplicate: &mut Option<usize>| -> Result<()> {
            let ks: Vec<&[u8]> = keys.iter().map(|(k, _)| k.as_slice()).collect();
            for (old, (_, pos)) in src.multi_get(&ks)?.into_iter().zip(keys.iter()) {
                if let Some(v) = old {
                    if StoredRow::decode(&v)?.visible(rules, self.now).is_some() {
                        note(duplicate, *pos);
                    }
                }
            }
            keys.clear();
            Ok(())
        };
        // Held rows go into a write batch, or, for a large load or beside streamed rows, into a table file of
        // their own (made at the first row), ingested together with the streamed one.
        enum Sink {
            Batch(Batch),
            Table(Vec<Box<dyn SortedFile>>),
        }
        // An engine that takes no files gets one batch.
        let mut sink = if streamed_run.is_some() || (self.bytes >= self.inner.config.bulk_ingest_bytes && self.inner.kv.ingest().is_some())
        {
            Sink::Table(Vec::new())
        } else {
            Sink::Batch(Batch::default())
        };
        let mut pending: Vec<(Vec<u8>, usize)> = Vec::new();
        let mut prev: Option<std::borrow::Cow<[u8]>> = None;
        let mut held_next = merged.next()?;
        loop {
            let take_streamed = match (&held_next, &streamed_next) {
                (None, None) => break,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((k, _, pos)), Some((sk, _, spos))) => (sk.as_slice(), *spos) < (k.as_slice(), *pos),
            };
            // The row's key, position, and its value unless already written (streamed).
            let (k, pos, value) = if take_streamed {
                let (k, _, pos) = streamed_next.take().unwrap();
                streamed_next = streamed_keys.next()?;
                (std::borrow::Cow::Owned(k), pos, None)
            } else {
                let (k, v, pos) = held_next.take().unwrap();
                held_next = merged.next()?;
                (std::borrow::Cow::Owned(k), pos, Some(v))
            };
            if prev.as_deref() == Some(&*k) {
                note(&mut duplicate, pos);
                continue;
            }
            // Once the load is known to fail, the rest is only scanned for an earlier offending row.
            if let (Some(v), None) = (value, duplicate) {
                match &mut sink {
                    Sink::Batch(b) => b.put(&k, &v),
                    Sink::Table(files) => put_in_files(&self.inner, files, &k, &v)?,
                }
            }
            if stored_in_span {
                pending.push((k.to_vec(), pos));
                if pending.len() == 4096 {
                    check(&mut pending, &mut duplicate)?;
                }
            }
            prev = Some(k);
        }
        if !pending.is_empty() {
            check(&mut pending, &mut duplicate)?;
        }
        if let Some(i) = duplicate {
            return Err(BulkError::Duplicate(i));
        }
        match sink {
            Sink::Batch(b) => self.inner.kv.write(b).map_err(StoreError::from)?,
            Sink::Table(held) => {
                let files: Vec<_> = streamed.into_iter().chain(held).collect();
                self.inner.kv.ingest().expect("files only for engines that take them").ingest(files).map_err(StoreError::from)?;
                self.inner.bulk_epoch.fetch_add(1, Ordering::SeqCst);
            }
        }
        for d in self.deltas.drain(..) {
            d.partition.add(d.bytes, d.rows);
        }
        Ok(())
    }
}

/// Why a bulk load was not written.
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    #[error("duplicate key: row {0} of the load already exists")]
    Duplicate(usize),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The committed data as of one point, for reads only: what a transaction that has not written reads. It
/// may outlive the transaction, so a result streamed from it can still be read after the statement (or
/// the transaction) that opened it has moved on.
pub struct ReadView {
    snap: Arc<dyn tabula_kv::Snapshot>,
    inner: Arc<Inner>,
}

impl Access for ReadView {
    access_reads!();
    fn partition_starts(&self, table: &str) -> Result<Vec<Vec<PkValue>>> {
        self.inner.partition_starts(table)
    }
    fn put_row(&self, _: &str, _: &[Option<PkValue>], _: &[CellWrite], _: &Condition) -> Result<WriteOutcome> {
        Err(StoreError::NotSupported("writes through a read-only view".into()))
    }
    fn update_row(&self, _: &str, _: &[PkValue], _: &[(String, UpdateOp)], _: &Condition) -> Result<WriteOutcome> {
        Err(StoreError::NotSupported("writes through a read-only view".into()))
    }
    fn delete_row(&self, _: &str, _: &[PkValue], _: &Condition) -> Result<WriteOutcome> {
        Err(StoreError::NotSupported("writes through a read-only view".into()))
    }
    fn insert_rows(&self, _: &str, _: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>> {
        Err(StoreError::NotSupported("writes through a read-only view".into()))
    }
}

/// A transaction of the SQL layer. Dropped without `commit`, it rolls back.
pub struct Txn {
    txn: Option<Box<dyn Transaction>>,
    /// The committed data at the transaction's snapshot, when it was begun with one.
    view: Option<Arc<ReadView>>,
    deltas: RefCell<Vec<Delta>>,
    /// The bulk epoch at begin, and whether the transaction has written.
    epoch: u64,
    wrote: std::cell::Cell<bool>,
    inner: Arc<Inner>,
}

impl Txn {
    fn kv(&self) -> &dyn Transaction {
        &**self.txn.as_ref().expect("transaction is open until commit or rollback")
    }

    fn write<T>(&self, f: impl FnOnce(&mut WriteCtx) -> Result<T>) -> Result<T> {
        self.wrote.set(true);
        let mut ctx = WriteCtx { txn: self.kv(), deltas: Vec::new(), now: self.inner.config.clock.now_ms() };
        let r = f(&mut ctx)?;
        self.deltas.borrow_mut().extend(ctx.deltas);
        Ok(r)
    }

    /// Inserts many new rows (COPY, multi-row INSERT): one multi-get checks that none exists, then the
    /// rows are written. A row that exists is `RowExists` and the statement's rows are not committed; a
    /// concurrent insert of the same key makes the commit fail with `Conflict`.
    pub fn insert_rows(&self, table: &str, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>> {
        let t = self.inner.table(table)?;
        self.write(|ctx| ctx.insert_rows(&t, rows))
    }

    /// Marks a point the transaction can return to (a statement's start).
    pub fn savepoint(&self) {
        self.kv().set_savepoint();
    }

    /// Undoes everything since the last savepoint (a failed statement).
    pub fn rollback_to_savepoint(&self) -> Result<()> {
        Ok(self.kv().rollback_to_savepoint()?)
    }

    /// Whether the transaction has written (a commit then has something to make durable).
    pub fn wrote(&self) -> bool {
        self.wrote.get()
    }

    /// What the transaction reads, as a view that may outlive it: while it has not written, its reads are
    /// exactly the committed data at its snapshot. `None` once it has written, or when begun without one.
    pub fn read_view(&self) -> Option<Arc<ReadView>> {
        self.view.clone().filter(|_| !self.wrote.get())
    }

    /// Commits atomically; a write conflict with a transaction that committed first is `Conflict`.
    pub fn commit(mut self) -> Result<()> {
        let txn = self.txn.take().expect("open transaction");
        {
            let _shared = self.inner.commit_gate.read();
            if self.wrote.get() && self.inner.bulk_epoch.load(Ordering::SeqCst) != self.epoch {
                let _ = txn.rollback();
                return Err(StoreError::Conflict);
            }
            txn.commit()?;
        }
        for d in self.deltas.take() {
            d.partition.add(d.bytes, d.rows);
        }
        Ok(())
    }

    pub fn rollback(mut self) -> Result<()> {
        let txn = self.txn.take().expect("open transaction");
        Ok(txn.rollback()?)
    }
}

impl Access for Txn {
    fn insert_rows(&self, table: &str, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>> {
        Txn::insert_rows(self, table, rows)
    }
    access_reads!();
    fn lock_row(&self, table: &str, pk: &[PkValue]) -> Result<()> {
        let t = self.inner.table(table)?;
        // An optimistic transaction validates at commit every key it read for update, written or not.
        self.kv().get_for_update(Space::Data, &t.key(pk)?)?;
        Ok(())
    }
    fn put_row(&self, table: &str, pk: &[Option<PkValue>], cells: &[CellWrite], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.table(table)?;
        self.write(|ctx| ctx.put_row(&t, pk, cells, cond))
    }
    fn update_row(&self, table: &str, pk: &[PkValue], ops: &[(String, UpdateOp)], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.table(table)?;
        self.write(|ctx| ctx.update_row(&t, pk, ops, cond))
    }
    fn delete_row(&self, table: &str, pk: &[PkValue], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.table(table)?;
        self.write(|ctx| ctx.delete_row(&t, pk, cond))
    }
}

impl Inner {
    /// Reads of the latest commit.
    fn reader(&self) -> &dyn Read {
        &*self.kv
    }

    fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.tables.read().get(name).cloned().ok_or_else(|| StoreError::UnknownTable(name.to_string()))
    }

    /// See [`Access::partition_starts`]. Empty for hash-prefixed tables, whose partitions cover hash buckets
    /// rather than key ranges.
    fn partition_starts(&self, name: &str) -> Result<Vec<Vec<PkValue>>> {
        let t = self.table(name)?;
        if t.buckets > 0 {
            return Ok(Vec::new());
        }
        let parts = t.partitions.read();
        parts.iter().skip(1).map(|p| keys::decode_pk(&p.start[4..], &t.pk_types[..t.partition_key_len])).collect()
    }

    fn load_catalog(&self) -> Result<()> {
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

    fn install(&self, id: u32, def: TableDef, parts: Vec<Partition>, next_pid: u64) {
        let table = Table {
            id,
            pk_types: def.primary_key.iter().map(|c| c.ty).collect(),
            partition_key_len: def.partition_key_len,
            buckets: def.options.hash_prefix,
            partitions: RwLock::new(parts.into_iter().map(Arc::new).collect()),
            next_partition_id: AtomicU64::new(next_pid),
            def: RwLock::new(def.clone()),
        };
        self.rules.write().insert(id, def.options.rules());
        self.tables.write().insert(def.name.clone(), Arc::new(table));
    }

    fn create_table(&self, mut def: TableDef) -> Result<()> {
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
        self.kv.meta_write(
            &[
                (catalog::NEXT_TABLE_ID.to_vec(), Some((id + 1).to_be_bytes().to_vec())),
                (catalog::table_key(&def.name), Some(def.encode(id))),
                (catalog::partitions_key(id), Some(partition::encode_all(2, &[&part]))),
            ],
            &[],
        )?;
        self.install(id, def, vec![part], 2);
        Ok(())
    }

    fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        // The definition, partitions, auto-increment counters and rows go in one atomic write.
        let mut gone = vec![(catalog::table_key(name), None), (catalog::partitions_key(t.id), None)];
        gone.extend(self.kv.meta_scan(&catalog::autoinc_key(t.id, &[]))?.into_iter().map(|(k, _)| (k, None)));
        self.kv.meta_write(&gone, &[(keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec())])?;
        self.tables.write().remove(name);
        self.rules.write().remove(&t.id);
        Ok(())
    }

    fn truncate_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        let pid = t.next_partition_id.fetch_add(1, Ordering::SeqCst);
        let part = Partition::new(pid, keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec(), 0, 0);
        self.kv.meta_write(
            &[(catalog::partitions_key(t.id), Some(partition::encode_all(pid + 1, &[&part])))],
            &[(keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec())],
        )?;
        *t.partitions.write() = vec![Arc::new(part)];
        Ok(())
    }

    fn alter(&self, name: &str, f: impl FnOnce(&mut TableDef) -> Result<()>) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        self.alter_locked(&t, f)
    }

    /// `alter` with the DDL lock held.
    fn alter_locked(&self, t: &Table, f: impl FnOnce(&mut TableDef) -> Result<()>) -> Result<()> {
        let mut def = t.def.read().clone();
        f(&mut def)?;
        self.kv.meta_write(&[(catalog::table_key(&def.name), Some(def.encode(t.id)))], &[])?;
        self.rules.write().insert(t.id, def.options.rules());
        *t.def.write() = def;
        Ok(())
    }

    fn set_options(&self, name: &str, options: TableOptions) -> Result<()> {
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
    fn autocommit<T>(&self, lock_keys: &[Vec<u8>], mut f: impl FnMut(&mut WriteCtx) -> Result<T>) -> Result<T> {
        let mut stripes: Vec<usize> = lock_keys.iter().map(|k| stripe(k, self.stripes.len())).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let _guards: Vec<_> = stripes.iter().map(|&i| self.stripes[i].lock()).collect();
        let mut attempt = 0u32;
        loop {
            let epoch = self.bulk_epoch.load(Ordering::SeqCst);
            let txn = self.kv.begin(false);
            let mut ctx = WriteCtx { txn: &*txn, deltas: Vec::new(), now: self.config.clock.now_ms() };
            let value = f(&mut ctx)?;
            let deltas = std::mem::take(&mut ctx.deltas);
            let committed = {
                let _shared = self.commit_gate.read();
                if self.bulk_epoch.load(Ordering::SeqCst) != epoch {
                    // An ingest may have written these keys unseen by the conflict check: read again.
                    let _ = txn.rollback();
                    Err(StoreError::Conflict)
                } else {
                    txn.commit().map_err(StoreError::from)
                }
            };
            match committed {
                Ok(()) => {
                    for d in deltas {
                        d.partition.add(d.bytes, d.rows);
                    }
                    return Ok(value);
                }
                Err(e) => match e {
                    StoreError::Conflict if attempt < 100 => {
                        attempt += 1;
                        std::thread::sleep(Duration::from_micros(50 * attempt as u64));
                    }
                    e => return Err(e),
                },
            }
        }
    }

    fn get_row(&self, src: &dyn Read, t: &Table, pk: &[PkValue], read: &ReadSpec) -> Result<Option<Row>> {
        let key = t.key(pk)?;
        let filter = read_filter(t, read, self.config.clock.now_ms());
        let row = src.get_map(&key, |v| materialize(pk.to_vec(), v, &filter))?;
        t.partition_of(&key).reads.fetch_add(1, Ordering::Relaxed);
        row.transpose().map(Option::flatten)
    }

    fn batch_get(&self, src: &dyn Read, t: &Table, pks: &[Vec<PkValue>], read: &ReadSpec) -> Result<Vec<Option<Row>>> {
        let keys = pks.iter().map(|pk| t.key(pk)).collect::<Result<Vec<_>>>()?;
        let values = src.multi_get(&keys.iter().map(Vec::as_slice).collect::<Vec<_>>())?;
        let filter = read_filter(t, read, self.config.clock.now_ms());
        values
            .into_iter()
            .zip(pks)
            .map(|(v, pk)| v.map(|v| materialize(pk.clone(), &v, &filter)).transpose().map(Option::flatten))
            .collect()
    }

    fn get_range(&self, src: &dyn Read, t: &Table, req: &RangeRequest) -> Result<RangeResult> {
        let filter = read_filter(t, &req.read, self.config.clock.now_ms());
        let mut rows = Vec::new();
        let next_start = self.scan_range(src, t, req, |key, raw| {
            let Some(row) = materialize(t.decode_pk(key)?, raw, &filter)? else { return Ok(Step::Skip) };
            rows.push(row);
            Ok(Step::Row)
        })?;
        Ok(RangeResult { rows, next_start })
    }

    fn get_range_latest(&self, src: &dyn Read, t: &Table, req: &RangeRequest) -> Result<LatestRows> {
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

    fn visit_range_latest(
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
    fn scan_range(
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

    fn persist_partitions(&self) -> Result<()> {
        let tables: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        let puts: Vec<_> = tables
            .iter()
            .map(|t| {
                (
                    catalog::partitions_key(t.id),
                    Some(partition::encode_all(t.next_partition_id.load(Ordering::SeqCst), &t.partitions.read())),
                )
            })
            .collect();
        if puts.is_empty() {
            return Ok(());
        }
        Ok(self.kv.meta_write(&puts, &[])?)
    }

    /// One round of partition maintenance: rates, splits, merges, persisted statistics.
    fn maintain(&self) -> Result<()> {
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
                if p.bytes.load(Ordering::Relaxed) > self.config.split_bytes || hot {
                    self.split(&t, p)?;
                }
            }
            self.merge_idle(&t);
        }
        self.persist_partitions()
    }

    /// Splits a partition near the middle of its bytes, on a partition-key boundary: the first
    /// partition-key value whose middle lies past half of the bytes starts the right half (the last value
    /// when none does). Two streaming passes that keep nothing per key: with a one-column primary key every
    /// row is a partition-key value of its own, millions of them.
    fn split(&self, t: &Table, p: &Arc<Partition>) -> Result<()> {
        let src = self.reader();
        let scan = |f: &mut dyn FnMut(&[u8], i64) -> bool| -> Result<()> {
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
            cut.or_else(|| current.filter(|_| index > 0).map(|(k, _, _)| (k, before, before_rows)))
        else {
            return Ok(()); // one partition-key value is never split
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

    fn merge_idle(&self, t: &Table) {
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

fn stripe(key: &[u8], n: usize) -> usize {
    // FNV-1a: cheap and spreads neighbouring keys.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in key {
        h = (h ^ *b as u64).wrapping_mul(0x100000001b3);
    }
    (h % n as u64) as usize
}

/// Turns a stored row into what a read returns, or `None` when nothing of it is visible.
fn materialize(pk: Vec<PkValue>, raw: &[u8], filter: &ReadFilter) -> Result<Option<Row>> {
    Ok(row::read_visible(raw, filter)?.map(|columns| Row { pk, columns }))
}

/// A read's filter under the table's current rules, taken once per read rather than per row.
fn read_filter<'a>(t: &Table, read: &'a ReadSpec, now_ms: i64) -> ReadFilter<'a> {
    ReadFilter {
        rules: t.rules(),
        now_ms,
        columns: read.columns.as_deref(),
        max_versions: read.max_versions.unwrap_or(1),
        time_range: read.time_range,
    }
}

/// The state of one write operation inside a transaction.
struct WriteCtx<'a> {
    txn: &'a dyn Transaction,
    deltas: Vec<Delta>,
    now: i64,
}

impl WriteCtx<'_> {
    fn src(&self) -> &dyn Read {
        self.txn
    }

    fn row_write(&mut self, t: &Table, w: &RowWrite) -> Result<WriteOutcome> {
        match w {
            RowWrite::Put { pk, cells, condition } => self.put_row(t, pk, cells, condition),
            RowWrite::Update { pk, ops, condition } => self.update_row(t, pk, ops, condition),
            RowWrite::Delete { pk, condition } => self.delete_row(t, pk, condition),
        }
    }

    /// Reads the row a write depends on: the raw bytes (for statistics) and what is visible of it.
    fn read_for_write(&self, t: &Table, key: &[u8]) -> Result<(Option<Vec<u8>>, Option<StoredRow>)> {
        let raw = self.txn.get_for_update(Space::Data, key)?;
        let visible = match &raw {
            Some(v) => StoredRow::decode(v)?.visible(t.rules(), self.now),
            None => None,
        };
        Ok((raw, visible))
    }

    fn finish(&mut self, t: &Table, key: Vec<u8>, old: Option<Vec<u8>>, new: Option<StoredRow>) -> Result<()> {
        let old_len = old.as_ref().map(|v| v.len() + key.len()).unwrap_or(0) as i64;
        let (new_len, rows) = match &new {
            Some(row) => {
                let v = row.encode();
                let n = (v.len() + key.len()) as i64;
                self.txn.put(Space::Data, &key, &v)?;
                (n, if old.is_none() { 1 } else { 0 })
            }
            None => {
                if old.is_some() {
                    self.txn.delete(Space::Data, &key)?;
                }
                (0, if old.is_some() { -1 } else { 0 })
            }
        };
        self.deltas.push(Delta { partition: t.partition_of(&key), bytes: new_len - old_len, rows });
        Ok(())
    }

    /// Fills auto-increment columns and validates the key.
    fn resolve_pk(&mut self, t: &Table, pk: &[Option<PkValue>]) -> Result<Vec<PkValue>> {
        // Only which columns are generated: this runs for every written row, so no copy of the definition.
        let auto: Vec<bool> = t.def.read().primary_key.iter().map(|c| c.auto_increment).collect();
        if pk.len() != auto.len() {
            return Err(StoreError::PrimaryKeyArity { expected: auto.len(), got: pk.len() });
        }
        let mut out = Vec::with_capacity(pk.len());
        for (i, v) in pk.iter().enumerate() {
            match v {
                // A value given for a generated column moves the counter past it, so that no value generated
                // later collides with it (a collision would roll the counter back with the failed insert,
                // and every later insert would draw the same value again).
                Some(PkValue::Integer(n)) if auto[i] => {
                    let mut pkey = Vec::new();
                    keys::encode_pk(&mut pkey, &out[..t.partition_key_len.min(i)]);
                    self.raise_autoinc(t, &pkey, *n)?;
                    out.push(PkValue::Integer(*n));
                }
                Some(v) => out.push(v.clone()),
                None if auto[i] => {
                    let mut pkey = Vec::new();
                    keys::encode_pk(&mut pkey, &out[..t.partition_key_len.min(i)]);
                    out.push(PkValue::Integer(self.next_autoinc(t, &pkey)?));
                }
                None => return Err(StoreError::MissingPrimaryKey(t.def.read().primary_key[i].name.clone())),
            }
        }
        t.check_pk(&out)?;
        Ok(out)
    }

    fn next_autoinc(&mut self, t: &Table, partition_key: &[u8]) -> Result<i64> {
        let current = self.autoinc(t, partition_key)?;
        let next = current.checked_add(1).ok_or_else(|| StoreError::IncrementOverflow("auto-increment counter".into()))?;
        self.set_autoinc(t, partition_key, next)?;
        Ok(next)
    }

    /// Moves a partition's counter up to `at_least` (never down).
    fn raise_autoinc(&mut self, t: &Table, partition_key: &[u8], at_least: i64) -> Result<()> {
        if self.autoinc(t, partition_key)? < at_least {
            self.set_autoinc(t, partition_key, at_least)?;
        }
        Ok(())
    }

    fn autoinc(&mut self, t: &Table, partition_key: &[u8]) -> Result<i64> {
        let key = catalog::autoinc_key(t.id, partition_key);
        Ok(self
            .txn
            .get_for_update(Space::Meta, &key)?
            .map(|v| v.as_slice().try_into().map(i64::from_be_bytes).map_err(|_| StoreError::Corrupt("auto-increment counter".into())))
            .transpose()?
            .unwrap_or(0))
    }

    fn set_autoinc(&mut self, t: &Table, partition_key: &[u8], value: i64) -> Result<()> {
        let key = catalog::autoinc_key(t.id, partition_key);
        self.txn.put(Space::Meta, &key, &value.to_be_bytes())?;
        Ok(())
    }

    fn check_condition(&self, cond: &Condition, visible: Option<&StoredRow>) -> Result<()> {
        match (cond.row, visible.is_some()) {
            (RowExistence::ExpectExist, false) => return Err(StoreError::RowNotFound),
            (RowExistence::ExpectNotExist, true) => return Err(StoreError::RowExists),
            _ => {}
        }
        if let Some(c) = &cond.column {
            let empty = StoredRow::default();
            if !eval_condition(c, visible.unwrap_or(&empty)) {
                return Err(StoreError::ConditionFailed("the column condition is false".into()));
            }
        }
        Ok(())
    }

    fn put_row(&mut self, t: &Table, pk: &[Option<PkValue>], cells: &[CellWrite], cond: &Condition) -> Result<WriteOutcome> {
        let pk = self.resolve_pk(t, pk)?;
        let key = t.key(&pk)?;
        let row = t.new_row(cells, self.now)?;
        let (raw, visible) = self.read_for_write(t, &key)?;
        self.check_condition(cond, visible.as_ref())?;
        let existed = visible.is_some();
        self.finish(t, key, raw, Some(row))?;
        Ok(WriteOutcome { pk, existed, increments: Vec::new(), version: self.now })
    }

    /// A whole new row from its cells, each checked (name, size, version window).
    fn insert_rows(&mut self, t: &Table, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>> {
        let mut pks = Vec::with_capacity(rows.len());
        let mut keys = Vec::with_capacity(rows.len());
        let mut values = Vec::with_capacity(rows.len());
        for (pk, cells) in rows {
            let pk = self.resolve_pk(t, pk)?;
            let row = t.new_row(cells, self.now)?;
            keys.push(t.key(&pk)?);
            pks.push(pk);
            values.push(row);
        }
        let existing = self.src().multi_get(&keys.iter().map(Vec::as_slice).collect::<Vec<_>>())?;
        let rules = t.rules();
        let mut batch_keys = std::collections::HashSet::with_capacity(keys.len());
        for (i, old) in existing.into_iter().enumerate() {
            let visible = match &old {
                Some(v) => StoredRow::decode(v)?.visible(rules, self.now).is_some(),
                None => false,
            };
            // A key twice in the same batch is a duplicate too.
            if visible || !batch_keys.insert(&keys[i]) {
                return Err(StoreError::RowExists);
            }
        }
        for (key, row) in keys.into_iter().zip(values) {
            let v = row.encode();
            let size = (key.len() + v.len()) as i64;
            self.txn.put(Space::Data, &key, &v)?;
            add_delta(&mut self.deltas, t.partition_of(&key), size);
        }
        Ok(pks)
    }

    fn update_row(&mut self, t: &Table, pk: &[PkValue], ops: &[(String, UpdateOp)], cond: &Condition) -> Result<WriteOutcome> {
        let key = t.key(pk)?;
        let max_versions = t.def.read().options.max_versions;
        let (raw, visible) = self.read_for_write(t, &key)?;
        self.check_condition(cond, visible.as_ref())?;
        let existed = visible.is_some();
        // Start from what is visible: versions a read could not see are dropped now, so that deleting a
        // version never brings back one that max_versions or the ttl had hidden.
        let mut row = visible.clone().unwrap_or_default();
        let assigned = row.next_version(self.now);
        let mut newest_written: Option<i64> = None;
        let mut increments = Vec::new();
        for (column, op) in ops {
            match op {
                UpdateOp::Put { value, version } => {
                    t.check_cell(column, value)?;
                    if let Some(v) = version {
                        t.check_version(column, *v, self.now)?;
                    }
                    let version = version.unwrap_or(assigned);
                    row.put_cell(column, version, value.clone(), max_versions);
                    newest_written = newest_written.max(Some(version));
                }
                UpdateOp::DeleteVersion(v) => {
                    validate_name(column)?;
                    row.column_mut(column).retain(|c| c.version != *v);
                }
                UpdateOp::DeleteAll => {
                    validate_name(column)?;
                    row.column_mut(column).clear();
                }
                UpdateOp::Increment(delta) | UpdateOp::Add(delta) => {
                    validate_name(column)?;
                    // A second increment of the same column in one call builds on the first.
                    let earlier = increments.iter().rev().find(|(c, _)| c == column).map(|(_, v)| *v);
                    let current = match (earlier, visible.as_ref().and_then(|r| r.column(column)).and_then(|c| c.first())) {
                        (Some(v), _) => v,
                        (None, Some(c)) => match &c.value {
                            Value::Integer(i) => *i,
                            other => return Err(StoreError::IncrementNonInteger { column: column.clone(), got: other.type_name() }),
                        },
                        (None, None) if matches!(op, UpdateOp::Increment(_)) => 0,
                        (None, None) => continue,
                    };
                    let next = current.checked_add(*delta).ok_or_else(|| StoreError::IncrementOverflow(column.clone()))?;
                    row.put_cell(column, assigned, Value::Integer(next), max_versions);
                    newest_written = newest_written.max(Some(assigned));
                    increments.push((column.clone(), next));
                }
            }
        }
        // The row lives as long as the newest version written, or from now when no cell was written.
        row.marker = row.marker.max(newest_written.unwrap_or(self.now));
        row.remove_empty_columns();
        self.finish(t, key, raw, Some(row))?;
        Ok(WriteOutcome { pk: pk.to_vec(), existed, increments, version: assigned })
    }

    fn delete_row(&mut self, t: &Table, pk: &[PkValue], cond: &Condition) -> Result<WriteOutcome> {
        let key = t.key(pk)?;
        let (raw, visible) = self.read_for_write(t, &key)?;
        self.check_condition(cond, visible.as_ref())?;
        let existed = visible.is_some();
        self.finish(t, key, raw, None)?;
        Ok(WriteOutcome { pk: pk.to_vec(), existed, increments: Vec::new(), version: self.now })
    }
}

fn eval_condition(c: &ColumnCondition, row: &StoredRow) -> bool {
    match c {
        ColumnCondition::And(cs) => cs.iter().all(|c| eval_condition(c, row)),
        ColumnCondition::Or(cs) => cs.iter().any(|c| eval_condition(c, row)),
        ColumnCondition::Not(c) => !eval_condition(c, row),
        ColumnCondition::Single { column, op, value, pass_if_missing, latest_version_only } => {
            let cells = row.column(column).map(|c| c.as_slice()).unwrap_or(&[]);
            if cells.is_empty() {
                return *pass_if_missing;
            }
            let check = |v: &Value| {
                v.compare(value).is_some_and(|o| match op {
                    CompareOp::Eq => o.is_eq(),
                    CompareOp::Ne => o.is_ne(),
                    CompareOp::Lt => o.is_lt(),
                    CompareOp::Le => o.is_le(),
                    CompareOp::Gt => o.is_gt(),
                    CompareOp::Ge => o.is_ge(),
                })
            };
            if *latest_version_only {
                check(&cells[0].value)
            } else {
                cells.iter().any(|c| check(&c.value))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_tables_the_filter_does_not_know_are_kept() {
        // Regression: compactions that ran at open, before the catalog was loaded, removed every row.
        let row =
            StoredRow { marker: 1, columns: vec![("v".into(), vec![crate::row::Cell { version: 1, value: Value::Integer(1) }])] }.encode();
        let clock = Arc::new(crate::ManualClock::new(10_000));
        let factory = VersionFilter { rules: Default::default(), clock };
        assert_eq!(factory.create()(&7u32.to_be_bytes(), &row), Decision::Keep);
        factory.rules.write().insert(7u32, VersionRules::new(0, 1));
        assert_eq!(factory.create()(&7u32.to_be_bytes(), &row), Decision::Remove);
    }

    #[test]
    fn a_new_row_encodes_alike_straight_from_its_cells() {
        let engine = Arc::new(tabula_kv::memory::MemoryEngine::new());
        let store = Store::open(engine, StoreConfig { maintenance_interval: None, ..StoreConfig::default() }).unwrap();
        let options = TableOptions { max_versions: 2, ..TableOptions::default() };
        let pk = vec![crate::catalog::PkColumn { name: "k".into(), ty: PkType::Integer, auto_increment: false }];
        store.create_table(TableDef { name: "t".into(), primary_key: pk, partition_key_len: 1, options, user_meta: vec![] }).unwrap();
        let t = store.inner.table("t").unwrap();
        let now = store.clock().now_ms();
        let cell = |c: &str, v: Value, version: Option<i64>| CellWrite { column: c.into(), value: v, version };
        let shapes = vec![
            vec![],
            vec![cell("v", Value::String("x".into()), None)],
            // Out of name order, an explicit version, every value type.
            vec![
                cell("z", Value::Integer(-3), Some(now - 10)),
                cell("a", Value::Binary(vec![0, 1]), None),
                cell("m", Value::Double(1.5), None),
                cell("b", Value::Boolean(true), None),
            ],
            // One column twice: the general path.
            vec![cell("v", Value::Integer(1), Some(now - 5)), cell("v", Value::Integer(2), None)],
        ];
        for cells in shapes {
            assert_eq!(t.encode_new_row(&cells, now).unwrap(), t.new_row(&cells, now).unwrap().encode(), "{cells:?}");
        }
        // A bad cell is refused either way.
        let bad = vec![cell("bad-name", Value::Integer(1), None)];
        assert_eq!(t.encode_new_row(&bad, now).unwrap_err(), t.new_row(&bad, now).unwrap_err());
    }
}
