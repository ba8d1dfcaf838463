//! Key shares: how a row that other rows reference (a foreign key's parent) is kept while a transaction
//! that references it commits, whichever of the two transactions commits first.
//!
//! The referencing transaction reads the row for update ([`Txn::share_row`]): should a transaction that
//! removes the row commit first, the optimistic engine fails the referencing one at its commit. The other
//! order needs more. The removing transaction looked for referencing rows and found none (the new one was
//! not committed yet), and its commit validates nothing of what it found absent. So a referencing commit
//! notes a share on the row's key, stamped after that commit, and a transaction that removes a shared
//! row ([`Txn::guard_row`]) fails to commit (`Conflict`) when a share's stamp is later than its start.
//!
//! ```text
//!   T1 references row r                      T2 removes row r
//!   lock shard(r); r in flight; unlock       lock shard(r)
//!   engine commit (fails if r was written    r in flight, or stamp(r) > T2.start? Conflict (40001)
//!     since T1's snapshot)                   otherwise engine commit
//!   lock shard(r); stamp(r) = clock + 1;     unlock
//!     r no longer in flight; unlock
//! ```
//!
//! A remover checks and commits under its shard's lock, and a referencing commit marks its rows in flight
//! under the same lock before it commits: either the remover sees the mark or the stamp, or its write is
//! committed when the referencing transaction's engine commit validates, which then fails. A transaction's start is read from
//! the clock before its snapshot is taken, so a commit its snapshot misses is always stamped later than it
//! (a commit racing with the start may be stamped later yet visible: a needless 40001, never an orphan).
//!
//! Shares live in memory: they matter only between transactions open at once, and a restart ends all of
//! those. A share is forgotten once every open transaction started after its stamp. They are per server:
//! several servers over one shared engine do not see each other's shares.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};

use crate::error::{Result, StoreError};

/// Shards of the stamps, locked by commits that share or remove rows hashed to them: unrelated rows'
/// commits do not wait for each other.
const SHARDS: usize = 64;

/// A shard forgets the stamps no open transaction started before once it holds this many, or twice what
/// it kept the last time (a long transaction keeps them all: the work stays proportional to the stamps).
const PRUNE_AT: usize = 1024;

struct Shard {
    stamps: HashMap<Vec<u8>, Entry>,
    prune_at: usize,
}

/// What the shares of one row came to.
#[derive(Default)]
struct Entry {
    /// The stamp of the last commit that shared it.
    stamp: u64,
    /// Commits sharing it now.
    in_flight: u32,
}

pub(super) struct Shares {
    clock: AtomicU64,
    shards: Box<[Mutex<Shard>]>,
    /// Starts of the open transactions, with how many began at each.
    open: Mutex<BTreeMap<u64, usize>>,
}

/// The rows a transaction shares and removes, and how many of each it had at each savepoint.
#[derive(Default)]
pub(super) struct RowMarks {
    pub shared: Vec<Vec<u8>>,
    pub removed: Vec<Vec<u8>>,
    pub marks: Vec<(usize, usize)>,
}

impl RowMarks {
    pub fn savepoint(&mut self) {
        self.marks.push((self.shared.len(), self.removed.len()));
    }

    pub fn rollback_to_savepoint(&mut self) {
        if let Some((s, r)) = self.marks.pop() {
            self.shared.truncate(s);
            self.removed.truncate(r);
        }
    }
}

fn shard_of(key: &[u8]) -> usize {
    // FNV-1a: row keys of one table share a long prefix, so every byte counts.
    let h = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    (h % SHARDS as u64) as usize
}

impl Shares {
    pub fn new() -> Shares {
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard { stamps: HashMap::new(), prune_at: PRUNE_AT })).collect();
        Shares { clock: AtomicU64::new(0), shards, open: Mutex::new(BTreeMap::new()) }
    }

    /// A transaction starts (before its snapshot is taken): its start, held until [`Shares::finish`].
    pub fn start(&self) -> u64 {
        let mut open = self.open.lock();
        let at = self.clock.load(Ordering::SeqCst);
        *open.entry(at).or_default() += 1;
        at
    }

    pub fn finish(&self, start: u64) {
        let mut open = self.open.lock();
        if let Some(n) = open.get_mut(&start) {
            *n -= 1;
            if *n == 0 {
                open.remove(&start);
            }
        }
    }

    /// Commits with `commit`: fails with `Conflict`, committing nothing, when a row removed was shared by a
    /// commit stamped after `start` or being committed now; stamps the rows shared once `commit` succeeded.
    /// With no rows it only commits.
    pub fn commit<T>(&self, rows: &RowMarks, start: u64, commit: impl FnOnce() -> Result<T>) -> Result<T> {
        if rows.shared.is_empty() && rows.removed.is_empty() {
            return commit();
        }
        let mut held = self.lock(rows.shared.iter().chain(&rows.removed));
        for key in &rows.removed {
            let shard = find(&mut held, key);
            if shard.stamps.get(key).is_some_and(|e| e.in_flight > 0 || e.stamp > start) {
                return Err(StoreError::Conflict);
            }
        }
        // The rows shared are in flight while the engine commits: a remover checking them then fails. Only
        // a remover keeps its shards locked through its commit, so that no share starts before it is done;
        // commits that only share do not wait for each other's (a group commit syncs them together).
        for key in &rows.shared {
            find(&mut held, key).stamps.entry(key.clone()).or_default().in_flight += 1;
        }
        held.retain(|(i, _)| rows.removed.iter().any(|k| shard_of(k) == *i));
        let out = commit();
        drop(held);
        if rows.shared.is_empty() {
            return out;
        }
        let stamp = out.is_ok().then(|| self.clock.fetch_add(1, Ordering::SeqCst) + 1);
        let oldest = self.open.lock().keys().next().copied();
        let mut held = self.lock(rows.shared.iter());
        for key in &rows.shared {
            let shard = find(&mut held, key);
            let e = shard.stamps.get_mut(key).expect("a row in flight has its entry");
            e.in_flight -= 1;
            if let Some(stamp) = stamp {
                e.stamp = e.stamp.max(stamp);
            }
            if shard.stamps.len() >= shard.prune_at {
                // A stamp no later than every open transaction's start can fail none of them.
                shard.stamps.retain(|_, e| e.in_flight > 0 || oldest.is_some_and(|o| e.stamp > o));
                shard.prune_at = PRUNE_AT.max(2 * shard.stamps.len());
            }
        }
        out
    }

    /// Locks the shards of `keys`, each once, in ascending order: two commits never wait for each other.
    fn lock<'a>(&self, keys: impl Iterator<Item = &'a Vec<u8>>) -> Vec<(usize, MutexGuard<'_, Shard>)> {
        let mut wanted: Vec<usize> = keys.map(|k| shard_of(k)).collect();
        wanted.sort_unstable();
        wanted.dedup();
        wanted.into_iter().map(|i| (i, self.shards[i].lock())).collect()
    }
}

/// The shard of `key` among those held.
fn find<'h>(held: &'h mut [(usize, MutexGuard<'_, Shard>)], key: &[u8]) -> &'h mut Shard {
    let i = shard_of(key);
    &mut held.iter_mut().find(|(j, _)| *j == i).expect("the shards of every row are held").1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(shared: &[&[u8]], removed: &[&[u8]]) -> RowMarks {
        RowMarks {
            shared: shared.iter().map(|k| k.to_vec()).collect(),
            removed: removed.iter().map(|k| k.to_vec()).collect(),
            marks: Vec::new(),
        }
    }

    #[test]
    fn a_removal_fails_after_a_share_committed_since_it_started() {
        let s = Shares::new();
        let remover = s.start();
        let referencer = s.start();
        s.commit(&marks(&[b"r"], &[]), referencer, || Ok(())).unwrap();
        s.finish(referencer);
        assert!(matches!(s.commit(&marks(&[], &[b"r"]), remover, || Ok(())), Err(StoreError::Conflict)));
        // Another row, or a transaction started after the share, is not held back.
        assert!(s.commit(&marks(&[], &[b"q"]), remover, || Ok(())).is_ok());
        let later = s.start();
        assert!(s.commit(&marks(&[], &[b"r"]), later, || Ok(())).is_ok());
    }

    #[test]
    fn a_removal_fails_while_a_share_is_being_committed() {
        let s = Shares::new();
        let remover = s.start();
        let referencer = s.start();
        let during = s.commit(&marks(&[b"r"], &[]), referencer, || Ok(s.commit(&marks(&[], &[b"r"]), remover, || Ok(()))));
        assert!(matches!(during, Ok(Err(StoreError::Conflict))));
        // Another referencing commit is not held up meanwhile.
        let other = s.start();
        let both = s.commit(&marks(&[b"r"], &[]), referencer, || s.commit(&marks(&[b"r"], &[]), other, || Ok(())));
        assert!(both.is_ok());
    }

    #[test]
    fn a_failed_commit_stamps_nothing() {
        let s = Shares::new();
        let remover = s.start();
        let referencer = s.start();
        assert!(s.commit(&marks(&[b"r"], &[]), referencer, || Err::<(), _>(StoreError::Conflict)).is_err());
        assert!(s.commit(&marks(&[], &[b"r"]), remover, || Ok(())).is_ok());
    }

    #[test]
    fn stamps_older_than_every_open_transaction_are_forgotten() {
        let s = Shares::new();
        let many = (SHARDS * PRUNE_AT * 2) as u32;
        for i in 0..many {
            let t = s.start();
            s.commit(&marks(&[&i.to_be_bytes()], &[]), t, || Ok(())).unwrap();
            s.finish(t);
        }
        let held: usize = s.shards.iter().map(|m| m.lock().stamps.len()).sum();
        assert!(held < SHARDS * PRUNE_AT, "{held} stamps held");
        // An open transaction keeps the stamps after its start.
        let open = s.start();
        let t = s.start();
        s.commit(&marks(&[b"kept"], &[]), t, || Ok(())).unwrap();
        for i in 0..many {
            s.commit(&marks(&[&(i + many).to_be_bytes()], &[]), t, || Ok(())).unwrap();
        }
        assert!(matches!(s.commit(&marks(&[], &[b"kept"]), open, || Ok(())), Err(StoreError::Conflict)));
    }

    #[test]
    fn savepoints_drop_the_rows_marked_after_them() {
        let mut m = marks(&[b"a"], &[]);
        m.savepoint();
        m.shared.push(b"b".to_vec());
        m.removed.push(b"c".to_vec());
        m.rollback_to_savepoint();
        assert_eq!((m.shared.len(), m.removed.len()), (1, 0));
    }
}
