//! Transactions, snapshots and cursors: the engine's reads from every point of view.
//!
//! RocksDB's transaction and snapshot borrow the database. The traits hand them out as owned values, so
//! each is stored with a `'static` lifetime beside an `Arc` of the database, which it is declared before
//! and so dropped before: the borrow never outlives what it borrows.

use std::sync::Arc;

use rocksdb::{DBRawIteratorWithThreadMode, ReadOptions, SnapshotWithThreadMode};
use tabula_kv::{Cursor, Read, Result, Snapshot, Space, Transaction};

use crate::{err, Db, Kv};

/// The read options of a scan of `[lower, upper)`.
pub(crate) fn scan_opts(mut o: ReadOptions, lower: Vec<u8>, upper: Vec<u8>, fill_cache: bool) -> ReadOptions {
    o.fill_cache(fill_cache);
    o.set_iterate_lower_bound(lower);
    o.set_iterate_upper_bound(upper);
    o
}

/// An optimistic transaction of the database.
pub(crate) struct RocksTxn {
    // Declared before `kv`: dropped before the database it borrows.
    txn: rocksdb::Transaction<'static, Db>,
    kv: Arc<Kv>,
}

impl RocksTxn {
    pub(crate) fn new(kv: &Arc<Kv>, begin: impl FnOnce(&Kv) -> rocksdb::Transaction<'_, Db>) -> RocksTxn {
        let txn = begin(kv);
        // SAFETY: the transaction borrows the database inside `kv`; `RocksTxn` holds an `Arc` of it and
        // drops the transaction first (field order).
        let txn = unsafe { std::mem::transmute::<rocksdb::Transaction<'_, Db>, rocksdb::Transaction<'static, Db>>(txn) };
        RocksTxn { txn, kv: kv.clone() }
    }

    pub(crate) fn snapshot_sequence(&self) -> u64 {
        self.txn.snapshot().sequence_number()
    }

    fn read_opts(&self) -> ReadOptions {
        let mut o = ReadOptions::default();
        // Copies the transaction's snapshot pointer; the wrapper may go right after. Without a snapshot,
        // the transaction reads the latest commit.
        o.set_snapshot(&self.txn.snapshot());
        o
    }
}

impl Read for RocksTxn {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.txn.get_pinned_opt(key, &self.read_opts()).map_err(err)?.map(|v| f(&v)).is_some())
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.txn.multi_get_opt(keys, &self.read_opts()).into_iter().map(|r| r.map_err(err)).collect()
    }
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, fill_cache: bool) -> Box<dyn Cursor + '_> {
        let o = scan_opts(self.read_opts(), lower, upper, fill_cache);
        Box::new(RocksCursor::Txn(self.txn.raw_iterator_opt(o)))
    }
}

impl Transaction for RocksTxn {
    fn get_for_update(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let o = self.read_opts();
        match space {
            Space::Data => self.txn.get_for_update_opt(key, true, &o),
            Space::Meta => self.txn.get_for_update_cf_opt(self.kv.meta_cf(), key, true, &o),
        }
        .map_err(err)
    }
    fn put(&self, space: Space, key: &[u8], value: &[u8]) -> Result<()> {
        match space {
            Space::Data => self.txn.put(key, value),
            Space::Meta => self.txn.put_cf(self.kv.meta_cf(), key, value),
        }
        .map_err(err)
    }
    fn delete(&self, space: Space, key: &[u8]) -> Result<()> {
        match space {
            Space::Data => self.txn.delete(key),
            Space::Meta => self.txn.delete_cf(self.kv.meta_cf(), key),
        }
        .map_err(err)
    }
    fn set_savepoint(&self) {
        self.txn.set_savepoint()
    }
    fn rollback_to_savepoint(&self) -> Result<()> {
        self.txn.rollback_to_savepoint().map_err(err)
    }
    fn commit(self: Box<Self>) -> Result<()> {
        let RocksTxn { txn, kv: _kv } = *self;
        txn.commit().map_err(err)
    }
    fn rollback(self: Box<Self>) -> Result<()> {
        self.txn.rollback().map_err(err)
    }
}

/// The committed data at one sequence number.
pub(crate) struct RocksSnapshot {
    // Declared before `kv`: released before the database it belongs to.
    snap: SnapshotWithThreadMode<'static, Db>,
    kv: Arc<Kv>,
}

// SAFETY: a RocksDB snapshot is an immutable sequence number in the database's list, safe to read at from
// any thread; the wrapper is not marked so only because it holds a raw pointer.
unsafe impl Send for RocksSnapshot {}
unsafe impl Sync for RocksSnapshot {}

impl RocksSnapshot {
    pub(crate) fn new(kv: &Arc<Kv>) -> RocksSnapshot {
        let snap = kv.db.snapshot();
        // SAFETY: as for `RocksTxn`: the `Arc` beside it keeps the database alive longer.
        let snap = unsafe { std::mem::transmute::<SnapshotWithThreadMode<'_, Db>, SnapshotWithThreadMode<'static, Db>>(snap) };
        RocksSnapshot { snap, kv: kv.clone() }
    }

    pub(crate) fn sequence(&self) -> u64 {
        self.snap.sequence_number()
    }

    fn read_opts(&self) -> ReadOptions {
        let mut o = ReadOptions::default();
        o.set_snapshot(&self.snap);
        o
    }
}

impl Read for RocksSnapshot {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.kv.db.get_pinned_opt(key, &self.read_opts()).map_err(err)?.map(|v| f(&v)).is_some())
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.kv.db.multi_get_opt(keys, &self.read_opts()).into_iter().map(|r| r.map_err(err)).collect()
    }
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, fill_cache: bool) -> Box<dyn Cursor + '_> {
        let o = scan_opts(self.read_opts(), lower, upper, fill_cache);
        Box::new(RocksCursor::Db(self.kv.db.raw_iterator_opt(o)))
    }
}

impl Snapshot for RocksSnapshot {}

/// A raw iterator of the database or of a transaction (which sees its own writes).
pub(crate) enum RocksCursor<'a> {
    Db(DBRawIteratorWithThreadMode<'a, Db>),
    Txn(DBRawIteratorWithThreadMode<'a, rocksdb::Transaction<'static, Db>>),
}

macro_rules! each {
    ($self:ident, $it:ident => $e:expr) => {
        match $self {
            RocksCursor::Db($it) => $e,
            RocksCursor::Txn($it) => $e,
        }
    };
}

impl Cursor for RocksCursor<'_> {
    fn seek_to_first(&mut self) {
        each!(self, it => it.seek_to_first())
    }
    fn seek_to_last(&mut self) {
        each!(self, it => it.seek_to_last())
    }
    fn valid(&self) -> bool {
        each!(self, it => it.valid())
    }
    fn key(&self) -> &[u8] {
        each!(self, it => it.key().unwrap_or_default())
    }
    fn value(&self) -> &[u8] {
        each!(self, it => it.value().unwrap_or_default())
    }
    fn advance(&mut self, backward: bool) {
        each!(self, it => if backward { it.prev() } else { it.next() })
    }
    fn status(&self) -> Result<()> {
        each!(self, it => it.status()).map_err(err)
    }
}
