//! Removing what compactions leave behind. A write removes, in its own transaction, the values out of line
//! of the cells it drops and the index entries its row no longer makes. A compaction cannot: it rewrites one
//! key at a time, so the expired or surplus versions it drops from a row leave their values out of line
//! behind, and a row whose indexed values expired (or that expired whole) leaves its index entries. A sweep
//! finds both and deletes them, for tables where compactions drop anything (a ttl, or versions hidden by
//! changed options): at `Store::compact`, after a compaction under a lowered `max_versions`, and every
//! `StoreConfig::sweep_interval` in maintenance.

use super::*;
use crate::catalog::IndexDef;

/// Keys read per page of a sweep: no cursor is held while it deletes.
const PAGE: usize = 1024;

impl Inner {
    /// Sweeps table `t` if compactions may have left anything of it behind; returns what it removed.
    pub(super) fn sweep(&self, t: &Table) -> Result<usize> {
        let o = t.def.read().options;
        if o.ttl < 0 && o.hidden_before == i64::MIN && o.stored_versions <= o.max_versions {
            // Nothing here is ever dropped by a compaction: only writes, which clean up after themselves.
            return Ok(0);
        }
        let mut removed = self.sweep_outside(t)?;
        let indexes: Vec<IndexDef> = t.def.read().indexes.iter().filter(|i| i.ready).cloned().collect();
        for ix in &indexes {
            removed += self.sweep_index(t, ix)?;
        }
        Ok(removed)
    }

    /// Deletes table `t`'s out-of-line values whose row no longer holds their cell.
    fn sweep_outside(&self, t: &Table) -> Result<usize> {
        let [_, (lo, hi)] = keys::table_ranges(t.id);
        let head = t.prefix_len() - 4;
        let holds = |src: &dyn Read, row_key: &[u8], column: &str, version: i64| -> Result<bool> {
            Ok(match src.get(row_key)? {
                Some(raw) => row::outside_cells(&raw)?.iter().any(|(c, v, _)| c == column && *v == version),
                None => false,
            })
        };
        self.sweep_range(lo, hi, &|_, _, _| {}, |src, key, _| {
            let (row_key, column, version) = keys::split_outside(key, head, &t.pk_types)?;
            let verdict = if holds(src, &row_key, &column, version)? { Verdict::Keep } else { Verdict::Delete };
            Ok((verdict, row_key))
        })
    }

    /// Deletes index `ix`'s entries whose row (stored, with its newest stored values) no longer makes them,
    /// and writes again those whose INCLUDE values are not the row's.
    pub(super) fn sweep_index(&self, t: &Table, ix: &IndexDef) -> Result<usize> {
        let def = t.def.read().clone();
        let (lo, hi) = (keys::table_prefix(ix.id).to_vec(), keys::table_end(ix.id).to_vec());
        let changed = |key: &[u8], old: &[u8], new: Option<&[u8]>| {
            let row = super::index::row_part(t, old).ok();
            let Some(data_key) = row.and_then(|r| keys::decode_pk(r, &t.pk_types).and_then(|pk| t.key(&pk)).ok()) else { return };
            let (partition, rows) = super::index::entry_partition(t, ix, key, &data_key);
            match new {
                None => partition.add(-((key.len() + old.len()) as i64), -rows, 0),
                Some(new) => partition.add(new.len() as i64 - old.len() as i64, 0, 0),
            }
        };
        self.sweep_range(lo, hi, &changed, |src, key, value| {
            let row_key = super::index::row_part(t, value)?;
            let pk = keys::decode_pk(row_key, &t.pk_types)?;
            let verdict = match super::index::expected_value(t, src, &def, ix, row_key, key)? {
                Some(v) if v == value => Verdict::Keep,
                Some(v) => Verdict::Put(v),
                None => Verdict::Delete,
            };
            Ok((verdict, t.key(&pk)?))
        })
    }

    /// Walks the keys of `[lo, hi)` a page at a time; `judge(src, key, value)` says what a key should
    /// become, and the key of the row it belongs to. One to delete or write again is, in a transaction that
    /// reads it and its row for update and asks again, so a writer of either meanwhile conflicts with it
    /// (and the key is then asked about again). `changed(key, value, new value)` is told of each key
    /// deleted (`None`) or written again.
    fn sweep_range(
        &self,
        lo: Vec<u8>,
        hi: Vec<u8>,
        changed: Changed,
        judge: impl Fn(&dyn Read, &[u8], &[u8]) -> Result<(Verdict, Vec<u8>)>,
    ) -> Result<usize> {
        let (mut fixed, mut start) = (0, lo);
        loop {
            let page = {
                let mut it = self.reader().scan(start, hi.clone(), false);
                it.seek_to_first();
                let mut page = Vec::with_capacity(PAGE);
                while it.valid() && page.len() < PAGE {
                    page.push((it.key().to_vec(), it.value().to_vec()));
                    it.advance(false);
                }
                it.status()?;
                page
            };
            let Some((last, _)) = page.last() else { return Ok(fixed) };
            start = [last.as_slice(), &[0]].concat();
            for (key, value) in &page {
                let (verdict, row_key) = judge(self.reader(), key, value)?;
                if verdict == Verdict::Keep {
                    continue;
                }
                if let Some((old, new)) = self.fix(key, &row_key, &judge)? {
                    changed(key, &old, new.as_deref());
                    fixed += 1;
                }
            }
        }
    }

    /// Deletes `key` or writes it again as its row (at `row_key`) now needs, unless a writer made it
    /// right meanwhile; returns its value before and after (`None`: deleted) if it changed it. A writer of
    /// either key that commits first makes this transaction conflict: it is then asked again at a newer
    /// snapshot, until it is done or not needed. Before, a conflict left the key, so that an index build
    /// racing a writer could leave a stale entry behind until the next VACUUM.
    #[allow(clippy::type_complexity)]
    fn fix(
        &self,
        key: &[u8],
        row_key: &[u8],
        judge: &impl Fn(&dyn Read, &[u8], &[u8]) -> Result<(Verdict, Vec<u8>)>,
    ) -> Result<Option<(Vec<u8>, Option<Vec<u8>>)>> {
        loop {
            let txn = self.kv.begin(true);
            txn.get_for_update(Space::Data, row_key)?;
            let Some(value) = txn.get_for_update(Space::Data, key)? else {
                txn.rollback()?;
                return Ok(None);
            };
            let new = match judge(&*txn, key, &value)?.0 {
                Verdict::Keep => {
                    txn.rollback()?;
                    return Ok(None);
                }
                Verdict::Delete => {
                    txn.delete(Space::Data, key)?;
                    None
                }
                Verdict::Put(v) => {
                    txn.put(Space::Data, key, &v)?;
                    Some(v)
                }
            };
            match txn.commit().map_err(StoreError::from) {
                Ok(()) => return Ok(Some((value, new))),
                // Each round the other writer committed: the sweep waits on no one, and loses only to
                // commits, which end.
                Err(StoreError::Conflict) => std::thread::yield_now(),
                Err(e) => return Err(e),
            }
        }
    }
}

/// What a sweep is told of a key it changed: the key, its value, and its new value (`None`: deleted).
type Changed<'a> = &'a dyn Fn(&[u8], &[u8], Option<&[u8]>);

/// What a sweep makes of a key it finds.
#[derive(PartialEq)]
enum Verdict {
    Keep,
    Delete,
    /// Write it again with this value (an index entry whose INCLUDE values are not its row's).
    Put(Vec<u8>),
}

impl Store {
    /// Flushes memtables and compacts everything: expired and surplus versions are physically removed,
    /// with their values out of line and the index entries of what expired.
    pub fn compact(&self) -> Result<()> {
        self.inner.kv.compact(None)?;
        let tables: Vec<Arc<Table>> = self.inner.tables.read().values().cloned().collect();
        for t in &tables {
            self.inner.sweep(t)?;
        }
        Ok(())
    }

    /// VACUUM of one table: its rows, values out of line and index entries are compacted, so that what
    /// compactions drop (expired and surplus versions) is gone from disk, then swept whatever its options:
    /// values out of line no row holds, and index entries no row makes. Those include the entries an index
    /// build leaves behind for a row a writer changed meanwhile, which reads pass over and which nothing
    /// else removes on a table without a ttl. Returns how many keys the sweep removed.
    pub fn vacuum(&self, table: &str) -> Result<usize> {
        let t = self.inner.table(table)?;
        let indexes: Vec<IndexDef> = t.def.read().indexes.iter().filter(|i| i.ready).cloned().collect();
        for (lo, hi) in keys::table_ranges(t.id) {
            self.inner.kv.compact(Some((&lo, &hi)))?;
        }
        for ix in &indexes {
            self.inner.kv.compact(Some((&keys::table_prefix(ix.id), &keys::table_end(ix.id))))?;
        }
        let mut removed = self.inner.sweep_outside(&t)?;
        for ix in &indexes {
            removed += self.inner.sweep_index(&t, ix)?;
        }
        Ok(removed)
    }

    /// How many values of `table` are stored out of line now, visible or not (for tests and diagnostics).
    pub fn outside_values(&self, table: &str) -> Result<usize> {
        let [_, (lo, hi)] = keys::table_ranges(self.inner.table(table)?.id);
        self.count_keys(lo, hi)
    }

    /// How many entries index `index` of `table` holds now, stale ones too (for tests and diagnostics).
    pub fn index_entries(&self, table: &str, index: &str) -> Result<usize> {
        let t = self.inner.table(table)?;
        let id = t.def.read().indexes.iter().find(|i| i.name == index).map(|i| i.id);
        let id = id.ok_or_else(|| StoreError::UnknownIndex(index.to_string()))?;
        self.count_keys(keys::table_prefix(id).to_vec(), keys::table_end(id).to_vec())
    }

    fn count_keys(&self, lo: Vec<u8>, hi: Vec<u8>) -> Result<usize> {
        let mut it = self.inner.reader().scan(lo, hi, false);
        let mut n = 0;
        it.seek_to_first();
        while it.valid() {
            n += 1;
            it.advance(false);
        }
        Ok(it.status().map(|_| n)?)
    }
}
