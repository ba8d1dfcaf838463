//! Optimistic transactions on TiKV, with savepoints.
//!
//! A transaction's reads go to a TiKV snapshot at its start timestamp, with its own writes laid over them;
//! its writes stay here until commit. At commit they go into a TiKV optimistic transaction begun at that
//! start timestamp, with the keys it read for update locked (a lock is checked like a write), and TiKV's
//! prewrite fails on any of them that another transaction committed since: [`KvError::Conflict`].
//!
//! Why here and not in the client's buffer: TiKV has no savepoints, and the store sets one per statement.
//! Undoing a statement is undoing its entries of [`State::undo`].
//!
//! Begun without a snapshot, a transaction takes its start timestamp when it first touches a key: a commit
//! before that is no conflict (it is read), one after it is. Every key it touches later is checked from that
//! same point, which is stricter than from each key's own first touch, and never looser.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use parking_lot::Mutex;
use tabula_kv::{Cursor, KvError, Read, Result, Space, Transaction};
use tikv_client::Timestamp;

use crate::cursor::{Overlay, PagedCursor};
use crate::{error, options, ReadAt, Shared};

type Key = (Space, Vec<u8>);

pub(crate) struct TikvTxn {
    shared: Arc<Shared>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The TiKV transaction, once begun; the error that stopped it from beginning.
    tikv: Option<std::result::Result<tikv_client::Transaction, KvError>>,
    writes: BTreeMap<Key, Option<Vec<u8>>>,
    /// Keys read for update.
    locked: BTreeSet<Key>,
    undo: Vec<Undo>,
    /// Lengths of `undo` at each savepoint.
    savepoints: Vec<usize>,
}

enum Undo {
    /// A key's write before this one (`None`: it had none).
    Write(Key, Option<Option<Vec<u8>>>),
    Lock(Key),
}

impl TikvTxn {
    pub(crate) fn begin(shared: Arc<Shared>, snapshot: bool) -> TikvTxn {
        let t = TikvTxn { shared, state: Mutex::new(State::default()) };
        if snapshot {
            let _ = t.start_ts();
        }
        t
    }

    /// The start timestamp, beginning the TiKV transaction at the first call.
    pub(crate) fn start_ts(&self) -> Result<Timestamp> {
        let mut state = self.state.lock();
        if state.tikv.is_none() {
            let client = self.shared.client.clone();
            state.tikv = Some(self.shared.run(async move { client.begin_with_options(options()).await.map_err(error) }));
        }
        match state.tikv.as_ref().expect("begun above") {
            Ok(t) => Ok(t.start_timestamp()),
            Err(e) => Err(e.clone()),
        }
    }

    fn at(&self) -> Result<ReadAt> {
        Ok(ReadAt { shared: self.shared.clone(), ts: self.start_ts()? })
    }

    fn read(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let at = self.at()?;
        if let Some(v) = self.state.lock().writes.get(&(space, key.to_vec())) {
            return Ok(v.clone());
        }
        at.get(space, key)
    }

    fn write(&self, space: Space, key: &[u8], value: Option<Vec<u8>>) -> Result<()> {
        self.start_ts()?;
        let mut state = self.state.lock();
        let k = (space, key.to_vec());
        let before = state.writes.insert(k.clone(), value);
        state.undo.push(Undo::Write(k, before));
        Ok(())
    }
}

impl Read for TikvTxn {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.read(Space::Data, key)?.map(|v| f(&v)).is_some())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let at = self.at()?;
        let mut out: Vec<Option<Option<Vec<u8>>>> = {
            let state = self.state.lock();
            keys.iter().map(|k| state.writes.get(&(Space::Data, k.to_vec())).cloned()).collect()
        };
        let missing: Vec<&[u8]> = keys.iter().zip(&out).filter(|(_, w)| w.is_none()).map(|(k, _)| *k).collect();
        let mut read = at.multi_get(&missing)?.into_iter();
        Ok(out.iter_mut().map(|w| w.take().unwrap_or_else(|| read.next().flatten())).collect())
    }

    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, _fill_cache: bool) -> Box<dyn Cursor + '_> {
        let at = match self.at() {
            Ok(at) => at,
            Err(e) => return Box::new(PagedCursor::failed(e)),
        };
        let overlay: Overlay = if lower < upper {
            let state = self.state.lock();
            let range = (Bound::Included((Space::Data, lower.clone())), Bound::Excluded((Space::Data, upper.clone())));
            state.writes.range(range).map(|((_, k), v)| (k.clone(), v.clone())).collect()
        } else {
            Overlay::new()
        };
        Box::new(PagedCursor::new(at, lower, upper, overlay))
    }
}

impl Transaction for TikvTxn {
    fn get_for_update(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let value = self.read(space, key)?;
        let mut state = self.state.lock();
        if state.locked.insert((space, key.to_vec())) {
            state.undo.push(Undo::Lock((space, key.to_vec())));
        }
        Ok(value)
    }

    fn put(&self, space: Space, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(space, key, Some(value.to_vec()))
    }

    fn delete(&self, space: Space, key: &[u8]) -> Result<()> {
        self.write(space, key, None)
    }

    fn set_savepoint(&self) {
        let mut state = self.state.lock();
        let at = state.undo.len();
        state.savepoints.push(at);
    }

    fn rollback_to_savepoint(&self) -> Result<()> {
        let mut state = self.state.lock();
        let at = state.savepoints.pop().ok_or_else(|| KvError::Storage("no savepoint to roll back to".into()))?;
        while state.undo.len() > at {
            match state.undo.pop().expect("longer than the savepoint") {
                Undo::Write(k, Some(before)) => state.writes.insert(k, before),
                Undo::Write(k, None) => state.writes.remove(&k),
                Undo::Lock(k) => {
                    state.locked.remove(&k);
                    None
                }
            };
        }
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<()> {
        crate::lease::check(&self.shared)?;
        let mut state = std::mem::take(&mut *self.state.lock());
        let mut t = match state.tikv.take() {
            None => return Ok(()),
            Some(t) => t?,
        };
        if state.writes.is_empty() && state.locked.is_empty() {
            return Ok(());
        }
        let shared = self.shared.clone();
        let writes: Vec<(Vec<u8>, Option<Vec<u8>>)> =
            std::mem::take(&mut state.writes).into_iter().map(|((space, k), v)| (shared.key(space, &k), v)).collect();
        let written: BTreeSet<&Vec<u8>> = writes.iter().map(|(k, _)| k).collect();
        let locks: Vec<Vec<u8>> = state.locked.iter().map(|(space, k)| shared.key(*space, k)).filter(|k| !written.contains(k)).collect();
        self.shared.run(async move {
            for (k, v) in writes {
                match v {
                    Some(v) => t.put(k, v).await,
                    None => t.delete(k).await,
                }
                .map_err(error)?;
            }
            if !locks.is_empty() {
                t.lock_keys(locks).await.map_err(error)?;
            }
            match t.commit().await {
                Ok(_) => Ok(()),
                Err(e) => {
                    // Prewrite may have left locks behind: take them away now rather than leave them for
                    // other readers to resolve.
                    let _ = t.rollback().await;
                    Err(error(e))
                }
            }
        })
    }

    fn rollback(self: Box<Self>) -> Result<()> {
        // Nothing of the transaction reached TiKV before commit.
        Ok(())
    }
}
