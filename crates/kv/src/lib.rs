//! The key-value boundary: what Tabula's wide-column store asks of the engine under it.
//!
//! An engine is an ordered map of byte keys to byte values, in two key spaces ([`Space`]: rows and the
//! catalog), read at the latest commit, at a snapshot or inside a transaction, and written by optimistic
//! transactions (a commit fails with [`KvError::Conflict`] when a key the transaction read for update or
//! wrote was changed by another commit since) or by atomic batches. That is [`Engine`], [`Transaction`],
//! [`Snapshot`], [`Read`] and [`Cursor`]: every engine has them.
//!
//! What only some engines have is a capability, asked for with a method that answers `None` by default
//! (as tikv's `engine_traits` has `SstExt` and `CompactExt`):
//! - [`Ingest`]: sorted files built outside the engine and moved in whole (bulk loads);
//! - [`CompactionHook`]: a filter the engine runs over values as it compacts (the TTL and version rules);
//!   an engine without it leaves hidden versions to the store's own clean-up;
//! - [`SizeStats`]: how many bytes the engine keeps for a range of keys (its files, compressed), which the
//!   store's own counts of logical bytes cannot tell.
//!
//! Engines: [`memory::MemoryEngine`] here (tests, and the proof that nothing above depends on one engine),
//! RocksDB in `tabula-kv-rocks`. [`conformance`] is the suite every engine passes.
//!
//! The types that cross the boundary are plain: byte slices and vectors, [`Space`], [`Decision`],
//! [`KvError`]. Nothing here names an engine's types.

pub mod conformance;
pub mod memory;

use std::path::PathBuf;
use std::sync::Arc;

/// An engine's error, as the store needs to tell them apart.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KvError {
    /// Another commit changed a key this transaction depends on; running it again may succeed.
    #[error("could not serialize access due to a concurrent update")]
    Conflict,
    /// The disk under the engine is full.
    #[error("could not write to the data directory: {0}")]
    DiskFull(String),
    /// Any other failure of the engine or its files.
    #[error("storage error: {0}")]
    Storage(String),
}

impl KvError {
    /// An error of the disk or the files under an engine, told apart when it is a full disk (ENOSPC, as
    /// RocksDB and the OS word it).
    pub fn storage(message: String) -> KvError {
        if message.contains("No space left on device") {
            KvError::DiskFull(message)
        } else {
            KvError::Storage(message)
        }
    }
}

pub type Result<T, E = KvError> = std::result::Result<T, E>;

/// The two key spaces of an engine. Rows and the catalog are apart so that a scan of one never walks the
/// other, and so that an engine may keep them differently (RocksDB: two column families). Ordered data
/// first, so that an engine keying maps by (space, key) finds the data keys of a range in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Space {
    /// Table rows.
    Data,
    /// The catalog: table definitions, partitions, roles, counters.
    Meta,
}

/// Reads of the data space from one point of view: the latest commit, a snapshot, or a transaction (its
/// snapshot plus its own writes).
pub trait Read {
    /// Reads a key and lends its value to `f`, without copying it where the engine can; false when absent.
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool>;
    /// Many keys at once; results in the order of `keys`.
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>>;
    /// A cursor over the keys in `[lower, upper)`. `fill_cache: false` for a one-off pass over much data
    /// (maintenance), whose blocks should not push hot ones out of a cache.
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, fill_cache: bool) -> Box<dyn Cursor + '_>;
}

impl dyn Read + '_ {
    /// [`Read::get_with`] for a function that returns something.
    pub fn get_map<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let mut f = Some(f);
        let mut out = None;
        self.get_with(key, &mut |v| out = f.take().map(|f| f(v)))?;
        Ok(out)
    }

    /// A copy of a key's value.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_map(key, |v| v.to_vec())
    }
}

/// A position in an ordered range of keys. Positioned nowhere until sought; `key` and `value` are only
/// meaningful while `valid`.
pub trait Cursor {
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    fn valid(&self) -> bool;
    fn key(&self) -> &[u8];
    fn value(&self) -> &[u8];
    /// One key on, or back when `backward`.
    fn advance(&mut self, backward: bool);
    /// The error that made the cursor invalid early, if one did.
    fn status(&self) -> Result<()>;
}

/// An optimistic transaction: reads at its snapshot (or, begun without one, at the latest commit) plus its
/// own writes; writes buffered until commit; a commit that finds a key it wrote or read for update changed
/// by another commit since fails with [`KvError::Conflict`] and writes nothing. Dropped, it rolls back.
pub trait Transaction: Read + Send {
    /// Reads a key the transaction's commit will depend on.
    fn get_for_update(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>>;
    fn put(&self, space: Space, key: &[u8], value: &[u8]) -> Result<()>;
    fn delete(&self, space: Space, key: &[u8]) -> Result<()>;
    /// Marks a point [`Transaction::rollback_to_savepoint`] returns to; savepoints nest.
    fn set_savepoint(&self);
    /// Undoes the writes since the last savepoint, and forgets it.
    fn rollback_to_savepoint(&self) -> Result<()>;
    fn commit(self: Box<Self>) -> Result<()>;
    fn rollback(self: Box<Self>) -> Result<()>;
}

/// The committed data as of one point; may outlive the transaction it was taken beside.
pub trait Snapshot: Read + Send + Sync {}

/// Writes applied together or not at all, outside any transaction.
#[derive(Default, Debug)]
pub struct Batch {
    pub puts: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Batch {
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.puts.push((key.to_vec(), value.to_vec()))
    }
}

/// An ordered, transactional key-value engine. Reading it directly reads the latest commit.
pub trait Engine: Read + Send + Sync {
    /// A transaction; with `snapshot`, its reads and its conflict checks are as of its begin, otherwise
    /// each key is checked from when the transaction first touched it.
    fn begin(&self, snapshot: bool) -> Box<dyn Transaction>;
    /// A transaction with a snapshot, and a snapshot of the committed data at the same point that may
    /// outlive it; `None` when the engine cannot take the two at one point now (commits kept landing).
    fn begin_with_snapshot(&self) -> Option<(Box<dyn Transaction>, Arc<dyn Snapshot>)>;
    /// The committed data as of now, for reads that must agree with each other without a transaction
    /// (a page of index entries and the rows they name).
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>>;
    /// Applies data puts atomically.
    fn write(&self, batch: Batch) -> Result<()>;

    fn meta_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// All catalog records whose key starts with `prefix`, in key order.
    fn meta_scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
    /// Writes catalog records (`None` deletes) and deletes data key ranges `[start, end)`, atomically and
    /// durably: a dropped or truncated table never shows old rows, even after a crash.
    fn meta_write(&self, puts: &[(Vec<u8>, Option<Vec<u8>>)], delete_data: &[(Vec<u8>, Vec<u8>)]) -> Result<()>;

    /// Makes every commit so far durable (a no-op for an engine whose every commit is).
    fn sync_log(&self) -> Result<()>;
    /// Writes buffered data to its files (a no-op where there are none).
    fn flush(&self) -> Result<()>;
    /// Compacts the data keys in `[start, end)` (all of them with `None`) now, through the compaction
    /// hook where there is one.
    fn compact(&self, range: Option<(&[u8], &[u8])>) -> Result<()>;
    /// A path for a temporary file of this process (spilled runs of a bulk load): in the data directory
    /// where the engine has one. Leftovers of a crash are removed at the next open.
    fn temp_path(&self, ext: &str) -> PathBuf;

    /// Sorted files moved in whole, when the engine can.
    fn ingest(&self) -> Option<&dyn Ingest> {
        None
    }
    /// A filter over values at compaction, when the engine runs one.
    fn compaction_hook(&self) -> Option<&dyn CompactionHook> {
        None
    }
    /// The bytes stored for ranges of keys, when the engine can tell.
    fn size_stats(&self) -> Option<&dyn SizeStats> {
        None
    }
}

/// The space an engine's files take for ranges of the data space's keys: what a user sizes disks by, as
/// PostgreSQL's `pg_relation_size` is the size of a relation's files. Approximate, and it may lag the
/// latest writes (RocksDB counts only what it has flushed from memory to its files).
pub trait SizeStats {
    /// The bytes stored for each range `[start, end)`, in order.
    fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Result<Vec<u64>>;
}

/// Bulk loads as sorted files: built outside the engine, then moved in all together, atomically.
pub trait Ingest {
    /// Starts a file; keys must then come in ascending order, each once.
    fn file(&self) -> Result<Box<dyn SortedFile>>;
    /// Moves finished (or unfinished: they are finished first) files in, all or none. Files may overlap,
    /// but must not share a key. Keys they hold replace what the engine has.
    fn ingest(&self, files: Vec<Box<dyn SortedFile>>) -> Result<()>;
}

/// A sorted file being written. Dropped without being ingested, it is deleted.
pub trait SortedFile: Send {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Keys put so far.
    fn rows(&self) -> u64;
    /// Ends the file (its index and filter written); once only, later calls do nothing.
    fn finish(&mut self) -> Result<()>;
    /// The file as the engine's own type, for the engine that made it.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send>;
}

/// What a compaction filter decides for one stored value.
#[derive(Debug, PartialEq)]
pub enum Decision {
    Keep,
    Remove,
    Change(Vec<u8>),
}

/// Makes a filter for each compaction, with whatever it must fix at the compaction's start (the clock,
/// the tables' rules).
pub trait CompactionFilterFactory: Send + Sync {
    fn create(&self) -> CompactionFilter;
}

/// A filter of one compaction: given a stored key and value, what to do with the value.
pub type CompactionFilter = Box<dyn FnMut(&[u8], &[u8]) -> Decision + Send>;

/// An engine that runs a filter over the data space's values as it compacts.
pub trait CompactionHook {
    /// Sets the filter of compactions from now on; before one is set, compactions keep everything.
    fn set_filter(&self, factory: Arc<dyn CompactionFilterFactory>);
}
