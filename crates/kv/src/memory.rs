//! An engine in memory: every key keeps its committed versions, each tagged with the sequence number of
//! its commit, so that snapshots read the past and optimistic transactions find what changed under them.
//!
//! It exists so that the store and the SQL layer can be tested without RocksDB, and so that the boundary
//! is proven by a second engine. It keeps nothing across a restart.
//!
//! ```text
//! versions:  key -> [(seq 3, Some(v1)), (seq 7, None), (seq 9, Some(v2))]   oldest first
//! read at seq 8  -> the newest version with seq <= 8: (7, None), so absent
//! ```
//! A version is forgotten once a newer one is at or below every live snapshot's sequence number.
//! Transactions check their keys against the newest version's sequence number at commit.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::{
    Batch, CompactionFilterFactory, CompactionHook, Cursor, Decision, Engine, Ingest, KvError, Read, Result, SizeStats, Snapshot,
    SortedFile, Space, Transaction,
};

type Versions = Vec<(u64, Option<Arc<[u8]>>)>;

#[derive(Default)]
struct State {
    /// The sequence number of the last commit.
    seq: u64,
    data: BTreeMap<Vec<u8>, Versions>,
    meta: BTreeMap<Vec<u8>, Versions>,
    /// Sequence numbers read at by live snapshots and transactions, with how many read at each.
    live: BTreeMap<u64, usize>,
}

impl State {
    fn space(&self, space: Space) -> &BTreeMap<Vec<u8>, Versions> {
        match space {
            Space::Data => &self.data,
            Space::Meta => &self.meta,
        }
    }

    /// The value of `key` as of `seq`.
    fn read(&self, space: Space, key: &[u8], seq: u64) -> Option<Arc<[u8]>> {
        at(self.space(space).get(key)?, seq)
    }

    /// The sequence number of the last commit that wrote `key`.
    fn last_write(&self, space: Space, key: &[u8]) -> u64 {
        self.space(space).get(key).and_then(|v| v.last()).map_or(0, |v| v.0)
    }

    /// Writes `value` (`None` deletes) at `seq`, and forgets the versions no reader can see any more.
    fn write(&mut self, space: Space, key: &[u8], value: Option<Arc<[u8]>>, seq: u64) {
        let oldest = self.live.keys().next().copied().unwrap_or(seq);
        let map = match space {
            Space::Data => &mut self.data,
            Space::Meta => &mut self.meta,
        };
        let versions = map.entry(key.to_vec()).or_default();
        versions.push((seq, value));
        // The newest version at or below the oldest reader is the oldest one needed.
        let keep_from = versions.iter().rposition(|v| v.0 <= oldest).unwrap_or(0);
        // A key deleted for good keeps its tombstone: the tombstone's sequence number is what a transaction
        // that read the key before the deletion conflicts with.
        versions.drain(..keep_from);
    }

    /// The data keys of `[lower, upper)` as of `seq`, with their values.
    fn range(&self, lower: &[u8], upper: &[u8], seq: u64) -> Vec<(Vec<u8>, Arc<[u8]>)> {
        if lower >= upper {
            return Vec::new();
        }
        let range = self.data.range::<[u8], _>((Bound::Included(lower), Bound::Excluded(upper)));
        range.filter_map(|(k, v)| at(v, seq).map(|v| (k.clone(), v))).collect()
    }
}

fn at(versions: &Versions, seq: u64) -> Option<Arc<[u8]>> {
    versions.iter().rev().find(|v| v.0 <= seq).and_then(|v| v.1.clone())
}

struct Shared {
    state: RwLock<State>,
    filter: RwLock<Option<Arc<dyn CompactionFilterFactory>>>,
    /// Where temporary files go; removed with the engine.
    dir: PathBuf,
    next_file: AtomicU64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A reader's registration at a sequence number: while it lives, versions it may read are kept.
struct Pin {
    shared: Arc<Shared>,
    seq: u64,
}

impl Pin {
    fn new(shared: &Arc<Shared>, state: &mut State) -> Pin {
        *state.live.entry(state.seq).or_default() += 1;
        Pin { shared: shared.clone(), seq: state.seq }
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut state = self.shared.state.write();
        if let Some(n) = state.live.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                state.live.remove(&self.seq);
            }
        }
    }
}

/// The in-memory engine. Clones share the same data.
#[derive(Clone)]
pub struct MemoryEngine {
    shared: Arc<Shared>,
}

impl Default for MemoryEngine {
    fn default() -> Self {
        MemoryEngine::new()
    }
}

impl MemoryEngine {
    pub fn new() -> MemoryEngine {
        static ENGINES: AtomicU64 = AtomicU64::new(0);
        let n = ENGINES.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tabula-memory-{}-{n}", std::process::id()));
        MemoryEngine {
            shared: Arc::new(Shared { state: Default::default(), filter: Default::default(), dir, next_file: Default::default() }),
        }
    }

    fn commit(&self, writes: impl IntoIterator<Item = (Space, Vec<u8>, Option<Arc<[u8]>>)>) {
        let mut state = self.shared.state.write();
        Self::apply(&mut state, writes);
    }

    fn apply(state: &mut State, writes: impl IntoIterator<Item = (Space, Vec<u8>, Option<Arc<[u8]>>)>) {
        let seq = state.seq + 1;
        for (space, key, value) in writes {
            state.write(space, &key, value, seq);
        }
        state.seq = seq;
    }
}

impl Read for MemoryEngine {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let state = self.shared.state.read();
        Ok(state.read(Space::Data, key, state.seq).map(|v| f(&v)).is_some())
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let state = self.shared.state.read();
        Ok(keys.iter().map(|k| state.read(Space::Data, k, state.seq).map(|v| v.to_vec())).collect())
    }
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, _fill_cache: bool) -> Box<dyn Cursor + '_> {
        let state = self.shared.state.read();
        Box::new(MemCursor::new(state.range(&lower, &upper, state.seq)))
    }
}

impl Engine for MemoryEngine {
    fn begin(&self, snapshot: bool) -> Box<dyn Transaction> {
        let pin = snapshot.then(|| Pin::new(&self.shared, &mut self.shared.state.write()));
        Box::new(MemTxn { engine: self.clone(), pin, state: Mutex::new(TxnState::default()) })
    }

    fn begin_with_snapshot(&self) -> Option<(Box<dyn Transaction>, Arc<dyn Snapshot>)> {
        let mut state = self.shared.state.write();
        let pin = Pin::new(&self.shared, &mut state);
        let snap = MemSnapshot(Pin::new(&self.shared, &mut state));
        let txn = MemTxn { engine: self.clone(), pin: Some(pin), state: Mutex::new(TxnState::default()) };
        Some((Box::new(txn), Arc::new(snap)))
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        let mut state = self.shared.state.write();
        Ok(Arc::new(MemSnapshot(Pin::new(&self.shared, &mut state))))
    }

    fn write(&self, batch: Batch) -> Result<()> {
        self.commit(batch.puts.into_iter().map(|(k, v)| (Space::Data, k, Some(Arc::from(v)))));
        Ok(())
    }

    fn meta_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let state = self.shared.state.read();
        Ok(state.read(Space::Meta, key, state.seq).map(|v| v.to_vec()))
    }

    fn meta_scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let state = self.shared.state.read();
        let range = state.meta.range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded));
        Ok(range
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter_map(|(k, v)| at(v, state.seq).map(|v| (k.clone(), v.to_vec())))
            .collect())
    }

    fn meta_write(&self, puts: &[(Vec<u8>, Option<Vec<u8>>)], delete_data: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        let mut state = self.shared.state.write();
        let mut writes: Vec<_> = puts.iter().map(|(k, v)| (Space::Meta, k.clone(), v.as_deref().map(Arc::from))).collect();
        for (start, end) in delete_data {
            let seq = state.seq;
            writes.extend(state.range(start, end, seq).into_iter().map(|(k, _)| (Space::Data, k, None)));
        }
        Self::apply(&mut state, writes);
        Ok(())
    }

    fn sync_log(&self) -> Result<()> {
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Runs the compaction filter over the newest version of each key in the range. Like RocksDB's, it
    /// rewrites values in place: no sequence number changes, so no transaction conflicts with it.
    fn compact(&self, range: Option<(&[u8], &[u8])>) -> Result<()> {
        let Some(factory) = self.shared.filter.read().clone() else { return Ok(()) };
        let mut filter = factory.create();
        let mut state = self.shared.state.write();
        let keys: Vec<Vec<u8>> = match range {
            Some((lo, hi)) if lo < hi => {
                state.data.range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi))).map(|(k, _)| k.clone()).collect()
            }
            Some(_) => Vec::new(),
            None => state.data.keys().cloned().collect(),
        };
        for key in keys {
            let versions = state.data.get_mut(&key).expect("listed above");
            let Some((_, Some(value))) = versions.last_mut() else { continue };
            match filter(&key, &value[..]) {
                Decision::Keep => {}
                Decision::Remove => versions.last_mut().expect("non-empty").1 = None,
                Decision::Change(v) => *value = Arc::from(v),
            }
        }
        Ok(())
    }

    fn temp_path(&self, ext: &str) -> PathBuf {
        let _ = std::fs::create_dir_all(&self.shared.dir);
        let n = self.shared.next_file.fetch_add(1, Ordering::Relaxed);
        self.shared.dir.join(format!("bulk-{n}.{ext}"))
    }

    fn ingest(&self) -> Option<&dyn Ingest> {
        Some(self)
    }

    fn size_stats(&self) -> Option<&dyn SizeStats> {
        Some(self)
    }
    fn compaction_hook(&self) -> Option<&dyn CompactionHook> {
        Some(self)
    }
}

/// Every version's key and value bytes, as the engine holds them all until no reader needs them.
impl SizeStats for MemoryEngine {
    fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Result<Vec<u64>> {
        let state = self.shared.state.read();
        Ok(ranges
            .iter()
            .map(|&(lo, hi)| {
                if lo >= hi {
                    return 0;
                }
                let range = state.data.range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi)));
                range.map(|(k, vs)| vs.iter().map(|(_, v)| (k.len() + v.as_ref().map_or(0, |v| v.len())) as u64).sum::<u64>()).sum()
            })
            .collect())
    }
}

impl CompactionHook for MemoryEngine {
    fn set_filter(&self, factory: Arc<dyn CompactionFilterFactory>) {
        *self.shared.filter.write() = Some(factory);
    }
}

/// A "file" of the memory engine: its rows, held until ingested.
#[derive(Default)]
struct MemFile {
    rows: Vec<(Vec<u8>, Vec<u8>)>,
}

impl SortedFile for MemFile {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.rows.last().is_some_and(|(last, _)| last.as_slice() >= key) {
            return Err(KvError::Storage("keys of a sorted file must ascend".into()));
        }
        self.rows.push((key.to_vec(), value.to_vec()));
        Ok(())
    }
    fn rows(&self) -> u64 {
        self.rows.len() as u64
    }
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

impl Ingest for MemoryEngine {
    fn file(&self) -> Result<Box<dyn SortedFile>> {
        Ok(Box::<MemFile>::default())
    }

    fn ingest(&self, files: Vec<Box<dyn SortedFile>>) -> Result<()> {
        let mut writes = Vec::new();
        for f in files {
            let f = f.into_any().downcast::<MemFile>().map_err(|_| KvError::Storage("a file of another engine".into()))?;
            writes.extend(f.rows.into_iter().map(|(k, v)| (Space::Data, k, Some(Arc::from(v)))));
        }
        self.commit(writes);
        Ok(())
    }
}

/// A snapshot: a pinned sequence number.
struct MemSnapshot(Pin);

impl Read for MemSnapshot {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.0.shared.state.read().read(Space::Data, key, self.0.seq).map(|v| f(&v)).is_some())
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let state = self.0.shared.state.read();
        Ok(keys.iter().map(|k| state.read(Space::Data, k, self.0.seq).map(|v| v.to_vec())).collect())
    }
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, _fill_cache: bool) -> Box<dyn Cursor + '_> {
        Box::new(MemCursor::new(self.0.shared.state.read().range(&lower, &upper, self.0.seq)))
    }
}

impl Snapshot for MemSnapshot {}

type Writes = BTreeMap<(Space, Vec<u8>), Option<Arc<[u8]>>>;
type Tracked = HashMap<(Space, Vec<u8>), u64>;

#[derive(Default)]
struct TxnState {
    writes: Writes,
    /// Each key the commit depends on, with the sequence number from which a commit to it conflicts.
    tracked: Tracked,
    savepoints: Vec<(Writes, Tracked)>,
}

struct MemTxn {
    engine: MemoryEngine,
    /// The snapshot, when begun with one.
    pin: Option<Pin>,
    state: Mutex<TxnState>,
}

impl MemTxn {
    /// The sequence number reads are at: the snapshot's, or the latest commit's.
    fn read_seq(&self, state: &State) -> u64 {
        self.pin.as_ref().map_or(state.seq, |p| p.seq)
    }

    fn read(&self, space: Space, key: &[u8]) -> Option<Arc<[u8]>> {
        if let Some(v) = self.state.lock().writes.get(&(space, key.to_vec())) {
            return v.clone();
        }
        let state = self.engine.shared.state.read();
        state.read(space, key, self.read_seq(&state))
    }

    fn track(&self, space: Space, key: &[u8]) {
        let from = {
            let state = self.engine.shared.state.read();
            self.read_seq(&state)
        };
        self.state.lock().tracked.entry((space, key.to_vec())).or_insert(from);
    }
}

impl Read for MemTxn {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.read(Space::Data, key).map(|v| f(&v)).is_some())
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(keys.iter().map(|k| self.read(Space::Data, k).map(|v| v.to_vec())).collect())
    }
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, _fill_cache: bool) -> Box<dyn Cursor + '_> {
        let mut rows: BTreeMap<Vec<u8>, Arc<[u8]>> = {
            let state = self.engine.shared.state.read();
            state.range(&lower, &upper, self.read_seq(&state)).into_iter().collect()
        };
        if lower < upper {
            let txn = self.state.lock();
            let range = (Bound::Included((Space::Data, lower)), Bound::Excluded((Space::Data, upper)));
            for ((_, k), v) in txn.writes.range(range) {
                match v {
                    Some(v) => rows.insert(k.clone(), v.clone()),
                    None => rows.remove(k),
                };
            }
        }
        Box::new(MemCursor::new(rows.into_iter().collect()))
    }
}

impl Transaction for MemTxn {
    fn get_for_update(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.track(space, key);
        Ok(self.read(space, key).map(|v| v.to_vec()))
    }
    fn put(&self, space: Space, key: &[u8], value: &[u8]) -> Result<()> {
        self.track(space, key);
        self.state.lock().writes.insert((space, key.to_vec()), Some(Arc::from(value)));
        Ok(())
    }
    fn delete(&self, space: Space, key: &[u8]) -> Result<()> {
        self.track(space, key);
        self.state.lock().writes.insert((space, key.to_vec()), None);
        Ok(())
    }
    fn set_savepoint(&self) {
        let mut txn = self.state.lock();
        let saved = (txn.writes.clone(), txn.tracked.clone());
        txn.savepoints.push(saved);
    }
    fn rollback_to_savepoint(&self) -> Result<()> {
        let mut txn = self.state.lock();
        let (writes, tracked) = txn.savepoints.pop().ok_or_else(|| KvError::Storage("no savepoint to roll back to".into()))?;
        txn.writes = writes;
        txn.tracked = tracked;
        Ok(())
    }
    fn commit(self: Box<Self>) -> Result<()> {
        let txn = std::mem::take(&mut *self.state.lock());
        let mut state = self.engine.shared.state.write();
        if txn.tracked.iter().any(|((space, key), &from)| state.last_write(*space, key) > from) {
            return Err(KvError::Conflict);
        }
        MemoryEngine::apply(&mut state, txn.writes.into_iter().map(|((space, k), v)| (space, k, v)));
        Ok(())
    }
    fn rollback(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// A cursor over rows copied out at its creation.
struct MemCursor {
    rows: Vec<(Vec<u8>, Arc<[u8]>)>,
    /// The position; `rows.len()` when nowhere.
    pos: usize,
}

impl MemCursor {
    fn new(rows: Vec<(Vec<u8>, Arc<[u8]>)>) -> MemCursor {
        let pos = rows.len();
        MemCursor { rows, pos }
    }
}

impl Cursor for MemCursor {
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self.rows.len().checked_sub(1).unwrap_or(self.rows.len());
    }
    fn valid(&self) -> bool {
        self.pos < self.rows.len()
    }
    fn key(&self) -> &[u8] {
        self.rows.get(self.pos).map_or(&[], |r| &r.0)
    }
    fn value(&self) -> &[u8] {
        self.rows.get(self.pos).map_or(&[], |r| &r.1)
    }
    fn advance(&mut self, backward: bool) {
        self.pos = match (backward, self.pos) {
            (_, p) if p >= self.rows.len() => p,
            (true, 0) => self.rows.len(),
            (true, p) => p - 1,
            (false, p) => p + 1,
        };
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_no_reader_can_see_are_forgotten() {
        let e = MemoryEngine::new();
        let versions = || e.shared.state.read().data.get(b"k".as_slice()).map_or(0, |v| v.len());
        let write = |v: &[u8]| {
            let mut b = Batch::default();
            b.put(b"k", v);
            e.write(b).unwrap();
        };
        write(b"0");
        let snap = e.begin_with_snapshot().unwrap();
        for i in 1..10u8 {
            write(&[i]);
        }
        assert_eq!(versions(), 10, "every version after the snapshot's, and the one it reads");
        drop(snap);
        write(b"last");
        assert_eq!(versions(), 1);
    }
}
