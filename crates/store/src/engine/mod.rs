//! The engine: tables, rows, versions, conditions, increments, ranges, partitions and transactions.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tabula_kv::{Batch, CompactionFilter, CompactionFilterFactory, Cursor, Decision, Engine, Read, SortedFile, Space, Transaction};

use crate::catalog::{self, TableDef, TableOptions};
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::keys;
use crate::ops::*;
use crate::partition::{Partition, PartitionInfo, Partitions};
use crate::row::{self, Cell, ReadFilter, Stored, StoredRow, VersionRules};
use crate::runs;
use crate::value::{validate_name, PkBound, PkType, PkValue, Value, MAX_PK_VALUE_BYTES, MAX_VALUE_BYTES};

// First: the macro it defines is used below and in `txn`.
#[macro_use]
mod reads;
use reads::ReadSource;

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
    /// The table names transactions' DDL has touched, by journal id (see `pending`).
    claims: Mutex<HashMap<String, u64>>,
    /// Rows referenced by commits, against transactions that remove them (see `shares`).
    shares: shares::Shares,
    next_journal: AtomicU64,
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
            claims: Mutex::new(HashMap::new()),
            shares: shares::Shares::new(),
            next_journal: AtomicU64::new(1),
            stop: AtomicBool::new(false),
        });
        inner.load_catalog()?;
        inner.recover_journals()?;
        inner.drop_unready_indexes()?;
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

    /// Renames a table; its rows, options and counters stay.
    pub fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename_table(from, to)
    }

    /// Removes every row; the table, its options and its auto-increment counters stay.
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.inner.truncate_table(name)
    }

    pub fn table(&self, name: &str) -> Result<TableDef> {
        Ok(TableDef::clone(&self.inner.table(name)?.def.read()))
    }

    /// The table's internal id: stable for the table's life (the SQL catalog derives its OIDs from it).
    pub fn table_id(&self, name: &str) -> Result<u32> {
        Ok(self.inner.table(name)?.id)
    }

    pub fn table_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.tables.read().keys().filter(|n| !pending::is_internal(n)).cloned().collect();
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

    /// Stored versions of a row as they are on disk, visible or not (for tests and diagnostics).
    pub fn raw_row(&self, table: &str, pk: &[PkValue]) -> Result<Option<StoredRow<Stored>>> {
        let t = self.inner.table(table)?;
        let key = t.key(pk)?;
        self.inner.reader().get_map(&key, StoredRow::decode)?.transpose()
    }

    /// Starts a transaction: snapshot reads, read-your-writes, atomic commit, write-conflict detection.
    pub fn begin(&self) -> Txn {
        let start = self.inner.shares.start();
        self.new_txn(self.inner.kv.begin(true), None, start)
    }

    /// Starts a transaction as `begin` does, with a [`ReadView`] at its snapshot (see [`Txn::read_view`]):
    /// for a transaction of several statements, whose reads may be streamed. The view costs a second
    /// snapshot, so transactions of one statement do without.
    pub fn begin_with_view(&self) -> Txn {
        let start = self.inner.shares.start();
        let Some((txn, snap)) = self.inner.kv.begin_with_snapshot() else {
            return self.new_txn(self.inner.kv.begin(true), None, start);
        };
        self.new_txn(txn, Some(Arc::new(ReadView { snap, inner: self.inner.clone() })), start)
    }

    /// `start`: the transaction's place in the key shares' clock, read before its snapshot was taken.
    fn new_txn(&self, txn: Box<dyn Transaction>, view: Option<Arc<ReadView>>, start: u64) -> Txn {
        let epoch = self.inner.bulk_epoch.load(Ordering::SeqCst);
        Txn {
            txn: Some(txn),
            view,
            deltas: RefCell::new(Vec::new()),
            epoch,
            wrote: Default::default(),
            journal: Default::default(),
            unreadable: Default::default(),
            loaded_apart: Default::default(),
            size: Default::default(),
            size_marks: Default::default(),
            size_limit: Default::default(),
            start,
            rows: Default::default(),
            inner: self.inner.clone(),
        }
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
    /// Row keys from a secondary index in `range`, in the index's order, after the entry `after` (where
    /// the last page said to resume), at most `limit`. An entry may name a row whose values have changed
    /// since (see engine/index.rs): a reader checks the rows it reads.
    fn index_pks(&self, table: &str, index: &str, range: &IndexRange, after: Option<&[u8]>, limit: usize) -> Result<IndexPage>;
    /// A page of `index_pks` and the rows it names, as `get_range_latest` returns rows (the newest value of
    /// each of `read.columns`), read at the same point as the entries: a row no longer there, or with
    /// nothing visible, is left out. Where the entries are exact (`TableOptions::entries_exact`), each row
    /// returned holds the values its entry does.
    fn index_latest(
        &self,
        table: &str,
        index: &str,
        range: &IndexRange,
        after: Option<&[u8]>,
        limit: usize,
        read: &ReadSpec,
    ) -> Result<(LatestRows, Option<Vec<u8>>)>;
    /// As `index_pks`, the rows as the index's entries hold them: key, index and INCLUDE columns only, each
    /// cell at version 0. Only for a table whose entries are exact (`TableOptions::entries_exact`).
    #[allow(clippy::type_complexity)]
    fn index_rows(
        &self,
        table: &str,
        index: &str,
        range: &IndexRange,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<(Vec<Row>, Option<Vec<u8>>)>;
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
    /// As `lock_row`, for a row this transaction's rows reference (a foreign key's parent, as PostgreSQL's
    /// FOR KEY SHARE): once this transaction commits, a transaction begun before that commit that removes
    /// the row ([`Access::guard_row`]) fails to commit with `Conflict`.
    fn share_row(&self, table: &str, pk: &[PkValue]) -> Result<()> {
        self.lock_row(table, pk)
    }
    /// This transaction takes away row `pk` of `table`, or the values other rows reference in it: its commit
    /// fails with `Conflict` if a transaction that shared the row ([`Access::share_row`]) committed after this
    /// one began (and so after its snapshot, which found no rows referencing it).
    fn guard_row(&self, _table: &str, _pk: &[PkValue]) -> Result<()> {
        Ok(())
    }
    /// Whether reads here may go through index `index` of `table`: not in a transaction that built it
    /// after writing, whose snapshot predates the entries (its reads of the table scan it instead).
    fn index_readable(&self, _table: &str, _index: &str) -> bool {
        true
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
        // Values of a generated partition-key column are drawn first: rows complete with them are a bulk load.
        let t = self.inner.usable_table(table)?;
        let mut drawn = Vec::new();
        for (i, (pk, cells)) in rows.iter().enumerate() {
            if let Some(full) = t.draw_sequence(&*self.inner.kv, pk)? {
                if drawn.is_empty() {
                    drawn.extend(rows[..i].iter().cloned());
                }
                drawn.push((full, cells.clone()));
            } else if !drawn.is_empty() {
                drawn.push((pk.clone(), cells.clone()));
            }
        }
        let rows = if drawn.is_empty() { rows } else { &drawn[..] };
        let complete: Option<Vec<Vec<PkValue>>> = rows.iter().map(|(pk, _)| pk.iter().cloned().collect()).collect();
        // Complete keys need no transaction: one checked, atomic write (not for a table with indexes, whose
        // entries a bulk load does not write; one made meanwhile makes the load a conflict).
        if let Some(pks) = complete.filter(|_| t.def.read().indexes.is_empty()) {
            let mut load = self.bulk_load(table)?;
            for (pk, (_, cells)) in pks.iter().zip(rows) {
                load.add_row(pk, cells)?;
            }
            match load.commit() {
                Ok(()) => return Ok(pks),
                Err(BulkError::Duplicate(_)) => return Err(StoreError::RowExists),
                Err(BulkError::Store(StoreError::Conflict)) => {}
                Err(BulkError::Store(e)) => return Err(e),
            }
        }
        crate::retry::on_conflict(
            || {
                let txn = self.begin();
                txn.insert_rows(table, rows).and_then(|pks| txn.commit().map(|_| pks))
            },
            |e| matches!(e, StoreError::Conflict),
        )
    }
    access_reads!();
    fn put_row(&self, table: &str, pk: &[Option<PkValue>], cells: &[CellWrite], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.usable_table(table)?;
        let drawn = t.draw_sequence(&*self.inner.kv, pk)?;
        let pk = drawn.as_deref().unwrap_or(pk);
        let lock = t.write_lock_key(pk)?;
        self.inner.autocommit(&[lock], |ctx| ctx.put_row(&t, pk, cells, cond))
    }
    fn update_row(&self, table: &str, pk: &[PkValue], ops: &[(String, UpdateOp)], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.usable_table(table)?;
        let key = t.key(pk)?;
        self.inner.autocommit(&[key], |ctx| ctx.update_row(&t, pk, ops, cond))
    }
    fn delete_row(&self, table: &str, pk: &[PkValue], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.inner.usable_table(table)?;
        let key = t.key(pk)?;
        self.inner.autocommit(&[key], |ctx| ctx.delete_row(&t, pk, cond))
    }
}

mod bulk;
mod compaction;
mod config;
mod ddl;
mod index;
mod inner;
mod lookup;
mod maintain;
mod partitions;
mod pending;
mod rebuild;
mod rebuild_txn;
mod sequence;
mod shares;
mod sweep;
mod table;
mod txn;
mod write;

pub use bulk::{BulkError, BulkLoad};
use compaction::VersionFilter;
pub use config::{Durability, StoreConfig};
pub use ddl::Ddl;
pub use index::{BuildPhase, BuildWatch};
pub use rebuild::{Convert, RebuildError};
use table::{add_delta, count_delta, retired_write, Delta, Table};
pub use txn::{ReadView, Txn};
use write::WriteCtx;

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
        store
            .create_table(TableDef { name: "t".into(), primary_key: pk, partition_key_len: 1, options, user_meta: vec![], indexes: vec![] })
            .unwrap();
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
