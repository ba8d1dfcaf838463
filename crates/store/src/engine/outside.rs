//! Removing values stored out of line that no row holds any more. A write removes the values of the cells
//! it drops in the same transaction (`WriteCtx::store_row`); a compaction cannot, since it rewrites one key
//! at a time: the expired or surplus versions it drops from a row leave their values behind, which a sweep
//! finds and deletes.

use super::*;

/// Keys read per page of a sweep: no cursor is held while it deletes.
const PAGE: usize = 1024;

impl Inner {
    /// Deletes table `t`'s out-of-line values whose row no longer holds their cell; returns how many.
    /// Each goes in a transaction that reads its row for update, so a writer of that row meanwhile (who may
    /// write the same cell again) conflicts with it, and the value then stays.
    pub(super) fn sweep_outside(&self, t: &Table) -> Result<usize> {
        let [_, (lo, hi)] = keys::table_ranges(t.id);
        let head = t.prefix_len() - 4;
        let holds = |raw: Option<Vec<u8>>, column: &str, version: i64| -> Result<bool> {
            Ok(match raw {
                Some(raw) => row::outside_cells(&raw)?.iter().any(|(c, v, _)| c == column && *v == version),
                None => false,
            })
        };
        let (mut removed, mut start) = (0, lo);
        loop {
            let page = {
                let mut it = self.reader().scan(start, hi.clone(), false);
                it.seek_to_first();
                let mut page = Vec::with_capacity(PAGE);
                while it.valid() && page.len() < PAGE {
                    page.push(it.key().to_vec());
                    it.advance(false);
                }
                it.status()?;
                page
            };
            let Some(last) = page.last() else { return Ok(removed) };
            start = [last.as_slice(), &[0]].concat();
            for key in &page {
                let (row_key, column, version) = keys::split_outside(key, head, &t.pk_types)?;
                if holds(self.reader().get(&row_key)?, &column, version)? {
                    continue;
                }
                let txn = self.kv.begin(true);
                if holds(txn.get_for_update(Space::Data, &row_key)?, &column, version)? {
                    txn.rollback()?;
                    continue;
                }
                txn.delete(Space::Data, key)?;
                match txn.commit().map_err(StoreError::from) {
                    Ok(()) => removed += 1,
                    Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }

    /// Whether a compaction of `t` may have dropped cells whose values stay out of line: it has a ttl, or
    /// versions hidden by an earlier ttl or a lowered `max_versions`. Other tables' values go only with
    /// their writes, and a sweep of them would find nothing.
    pub(super) fn may_leave_outside(t: &Table) -> bool {
        let o = t.def.read().options;
        o.ttl >= 0 || o.hidden_before != i64::MIN || o.stored_versions > o.max_versions
    }
}

impl Store {
    /// Flushes memtables and compacts everything: expired and surplus versions are physically removed,
    /// with their values stored out of line.
    pub fn compact(&self) -> Result<()> {
        self.inner.kv.compact(None)?;
        let tables: Vec<Arc<Table>> = self.inner.tables.read().values().cloned().collect();
        for t in tables.iter().filter(|t| Inner::may_leave_outside(t)) {
            self.inner.sweep_outside(t)?;
        }
        Ok(())
    }

    /// How many values of `table` are stored out of line now, visible or not (for tests and diagnostics).
    pub fn outside_values(&self, table: &str) -> Result<usize> {
        let [_, (lo, hi)] = keys::table_ranges(self.inner.table(table)?.id);
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
