//! A rebuild (`rebuild.rs`) inside a transaction that has already written rows. Such a transaction cannot
//! move to a newer snapshot (its writes would be lost with its engine transaction), so the rows move
//! through it instead, and commit or vanish with it:
//!
//! 1. The old table is retired under the commit gate, as any rebuild's: other transactions' commits that
//!    wrote it are refused from then on (55006). What it holds must then be what the transaction's
//!    snapshot holds: a commit since (a row the transaction cannot see) fails the statement with 40001.
//! 2. A new table, under a temporary name, gets the old one's indexes, built while it is empty.
//! 3. The rows are read as the transaction sees them (its own writes included), [`ROWS`] at a time, and
//!    written in it with their index entries (`WriteCtx::put_moved`), counted against its size limit
//!    (54000 past it): memory stays bounded by what the transaction may hold anyway.
//! 4. The new table takes the name (the old one set aside for an undo, `pending`). Its rows are not
//!    committed, so until the transaction ends the table is private to it: other sessions' reads and
//!    writes of it are refused with 55P03, where PostgreSQL's lock would make them wait.

use super::rebuild::{rebuilt_indexes, Moved};
use super::*;
use crate::catalog::IndexDef;

/// Rows moved per pass: the cursor over the old table is not held while the transaction writes.
const ROWS: usize = 512;

impl Store {
    /// Rebuilds table `def.name` in `t` (see the module's steps), with index `added` too when given (CREATE
    /// INDEX on a table the transaction wrote: its entries must be written with the transaction's rows); on
    /// a failure the new table is dropped and the old one taken back into service, and the statement's
    /// rollback discards what was written.
    pub(super) fn rebuild_in_txn(
        &self,
        t: &mut Txn,
        def: TableDef,
        columns: &[(String, Option<String>)],
        convert: Option<&Convert>,
        added: Option<IndexDef>,
    ) -> std::result::Result<(), RebuildError> {
        let name = def.name.clone();
        // As the transaction may use it: not a table it bulk-loaded after writing (0A000).
        let old = t.table(&name)?;
        let mut indexes = rebuilt_indexes(&old, columns);
        indexes.extend(added);
        let def = TableDef { indexes: vec![], ..def };
        let temp = self.rebuild_begin(&old, &def)?;
        let moved = self
            .move_in_txn(t, &old, &temp, &def, indexes, columns, convert)
            .and_then(|()| Ok(self.inner.replace_table(&name, &temp, true)?));
        if moved.is_err() {
            self.rebuild_abandon(&old, &temp);
        }
        moved
    }

    #[allow(clippy::too_many_arguments)]
    fn move_in_txn(
        &self,
        t: &mut Txn,
        old: &Table,
        temp: &str,
        def: &TableDef,
        indexes: Vec<IndexDef>,
        columns: &[(String, Option<String>)],
        convert: Option<&Convert>,
    ) -> std::result::Result<(), RebuildError> {
        if let Some(view) = &t.view {
            if !same_rows(&*view.snap, self.inner.reader(), old)? {
                return Err(StoreError::Conflict.into());
            }
        }
        let (epoch, built) = (self.inner.bulk_epoch.load(Ordering::SeqCst), indexes.len() as u64);
        for ix in indexes {
            self.create_index(temp, ix)?;
        }
        // A build moves the bulk epoch, which fails the commit of a transaction that wrote before it; these
        // were of an empty table. Another move meanwhile (a bulk load) still counts.
        let now = self.inner.bulk_epoch.load(Ordering::SeqCst);
        if t.epoch == epoch && now - epoch <= built {
            t.epoch = now;
        }
        let new = self.inner.table(temp)?;
        let (mut from, mut null) = (None, None);
        loop {
            let mut batch: Vec<Moved> = Vec::with_capacity(ROWS);
            let mut last = None;
            self.each_moved_row(old, def, columns, convert, t.kv(), from.take(), |key, moved| {
                batch.push(moved);
                last = Some(key.to_vec());
                Ok(batch.len() == ROWS)
            })?;
            let full = batch.len() == ROWS;
            for moved in batch {
                match moved {
                    Ok((pk, row)) => {
                        if !t.write(|ctx| ctx.put_moved(&new, &pk, row.into_stored()))? {
                            return Err(RebuildError::Duplicate(pk));
                        }
                    }
                    Err(column) => {
                        null.get_or_insert(column);
                    }
                }
            }
            match last.filter(|_| full) {
                Some(mut key) => {
                    key.push(0);
                    from = Some(key);
                }
                None => break,
            }
        }
        null.map_or(Ok(()), |c| Err(RebuildError::Null(c)))
    }
}

/// Whether table `t`'s rows are the same at the latest commit as in `snap`: no commit wrote them since.
fn same_rows(snap: &dyn Read, latest: &dyn Read, t: &Table) -> Result<bool> {
    let range = || (keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec());
    let (lower, upper) = range();
    let mut a = snap.scan(lower, upper, false);
    let (lower, upper) = range();
    let mut b = latest.scan(lower, upper, false);
    a.seek_to_first();
    b.seek_to_first();
    while a.valid() && b.valid() {
        if a.key() != b.key() || a.value() != b.value() {
            return Ok(false);
        }
        a.advance(false);
        b.advance(false);
    }
    a.status()?;
    b.status()?;
    Ok(a.valid() == b.valid())
}

impl WriteCtx<'_> {
    /// Writes a row a rebuild moved under key `pk` of table `t`, with its index entries; false (nothing
    /// written) when a row holds that key already.
    pub(super) fn put_moved(&mut self, t: &Table, pk: &[PkValue], row: StoredRow<Stored>) -> Result<bool> {
        let key = t.key(pk)?;
        if self.txn.get_for_update(Space::Data, &key)?.is_some() {
            return Ok(false);
        }
        self.finish(t, key, None, Some(row))?;
        Ok(true)
    }
}
