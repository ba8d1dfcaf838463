//! Transactions of the SQL layer, and read-only views at a transaction's snapshot.

use super::*;

/// The committed data as of one point, for reads only: what a transaction that has not written reads. It
/// may outlive the transaction, so a result streamed from it can still be read after the statement (or
/// the transaction) that opened it has moved on.
pub struct ReadView {
    pub(super) snap: Arc<dyn tabula_kv::Snapshot>,
    pub(super) inner: Arc<Inner>,
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
    pub(super) txn: Option<Box<dyn Transaction>>,
    /// The committed data at the transaction's snapshot, when it was begun with one.
    pub(super) view: Option<Arc<ReadView>>,
    pub(super) deltas: RefCell<Vec<Delta>>,
    /// The bulk epoch at begin, and whether the transaction has written.
    pub(super) epoch: u64,
    pub(super) wrote: std::cell::Cell<bool>,
    /// The transaction's DDL, undone unless it commits (see `pending`).
    pub(super) journal: RefCell<pending::Journal>,
    /// Indexes built by this transaction after it had written rows (to other tables): their entries were
    /// written after its snapshot, so it reads their tables without them.
    pub(super) unreadable: RefCell<Vec<u32>>,
    /// Tables bulk-loaded by this transaction after it had written rows (to other tables): their rows
    /// came after its snapshot, so it may neither read nor write them until it ends.
    pub(super) loaded_apart: RefCell<Vec<u32>>,
    /// Bytes of keys and values written so far (`WriteCtx::written`), what it was at each savepoint, and
    /// the most it may write (`limit_size`).
    pub(super) size: std::cell::Cell<u64>,
    pub(super) size_marks: RefCell<Vec<u64>>,
    pub(super) size_limit: std::cell::Cell<Option<u64>>,
    /// Where the transaction started in the key shares' clock, and the rows it shares and removes.
    pub(super) start: u64,
    pub(super) rows: RefCell<shares::RowMarks>,
    pub(super) inner: Arc<Inner>,
}

impl Drop for Txn {
    /// A transaction dropped unended (its connection gone) is rolled back, its DDL too.
    fn drop(&mut self) {
        self.end_ddl(false);
        self.inner.shares.finish(self.start);
    }
}

impl Txn {
    pub(super) fn kv(&self) -> &dyn Transaction {
        &**self.txn.as_ref().expect("transaction is open until commit or rollback")
    }

    pub(super) fn write<T>(&self, f: impl FnOnce(&mut WriteCtx) -> Result<T>) -> Result<T> {
        self.wrote.set(true);
        let mut ctx = WriteCtx {
            txn: self.kv(),
            kv: &*self.inner.kv,
            deltas: Vec::new(),
            now: self.inner.config.clock.now_ms(),
            inline_max: self.inner.config.inline_value_bytes,
            written: 0,
        };
        let r = f(&mut ctx)?;
        self.deltas.borrow_mut().extend(ctx.deltas);
        let size = self.size.get() + ctx.written;
        self.size.set(size);
        match self.size_limit.get() {
            // The write that went past the limit is in the transaction: the statement fails and its
            // caller rolls back (to the statement's savepoint, or the whole transaction).
            Some(limit) if size > limit => Err(StoreError::TransactionTooLarge { limit }),
            _ => Ok(r),
        }
    }

    /// Limits what the transaction may write to `StoreConfig::max_transaction_bytes`: a write past it fails
    /// with `TransactionTooLarge`. Its writes are held in memory until it commits, so a transaction of the
    /// SQL layer is limited; the loads that must be atomic whatever their size (a COPY into a table with
    /// secondary indexes) are not.
    pub fn limit_size(&self) {
        self.size_limit.set(Some(self.inner.config.max_transaction_bytes));
    }

    /// The most the transaction may write, when it is limited.
    pub fn size_limit(&self) -> Option<u64> {
        self.size_limit.get()
    }

    /// Bytes of keys and values the transaction has written.
    pub fn written_bytes(&self) -> u64 {
        self.size.get()
    }

    /// Inserts many new rows (COPY, multi-row INSERT): one multi-get checks that none exists, then the
    /// rows are written. A row that exists is `RowExists` and the statement's rows are not committed; a
    /// concurrent insert of the same key makes the commit fail with `Conflict`.
    pub fn insert_rows(&self, table: &str, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>> {
        let t = self.table(table)?;
        self.write(|ctx| ctx.insert_rows(&t, rows))
    }

    /// Table `name`, unless this transaction bulk-loaded it after writing other rows (`Ddl::commit_bulk`).
    pub(super) fn table(&self, name: &str) -> Result<Arc<Table>> {
        let t = self.inner.table(name)?;
        if self.loaded_apart.borrow().contains(&t.id) {
            return Err(StoreError::NotSupported(format!(
                "reading or writing table \"{name}\" in the transaction that bulk-loaded it after writing other rows: it is \
                 there once the transaction commits"
            )));
        }
        t.usable_by(self.owner())?;
        Ok(t)
    }

    /// Marks a point the transaction can return to (a statement's start).
    pub fn savepoint(&self) {
        self.kv().set_savepoint();
        self.size_marks.borrow_mut().push(self.size.get());
        self.rows.borrow_mut().savepoint();
        self.mark_savepoint();
    }

    /// Undoes everything since the last savepoint (a failed statement), DDL included.
    pub fn rollback_to_savepoint(&self) -> Result<()> {
        self.kv().rollback_to_savepoint()?;
        if let Some(size) = self.size_marks.borrow_mut().pop() {
            self.size.set(size);
        }
        self.rows.borrow_mut().rollback_to_savepoint();
        self.undo_to_savepoint()
    }

    /// Whether the transaction has written rows or changed the catalog (a commit then has something to
    /// make durable).
    pub fn wrote(&self) -> bool {
        self.wrote.get() || self.did_ddl()
    }

    /// What the transaction reads, as a view that may outlive it: while it has not written, its reads are
    /// exactly the committed data at its snapshot. `None` once it has written, or when begun without one.
    pub fn read_view(&self) -> Option<Arc<ReadView>> {
        self.view.clone().filter(|_| !self.wrote.get())
    }

    /// Commits atomically; a write conflict with a transaction that committed first is `Conflict`, and so
    /// is the removal of a row another transaction shared and committed since this one began.
    pub fn commit(mut self) -> Result<()> {
        let txn = self.txn.take().expect("open transaction");
        let rows = self.rows.take();
        // Refused before the closure runs, the transaction is dropped unended: rolled back.
        self.inner.shares.commit(&rows, self.start, || {
            let _shared = self.inner.commit_gate.read();
            if self.wrote.get() && self.inner.bulk_epoch.load(Ordering::SeqCst) != self.epoch {
                let _ = txn.rollback();
                return Err(StoreError::Conflict);
            }
            // A table this transaction set aside is retired against the others' writes, not its own; only a
            // retired table's deltas are looked up, so a commit without DDL pays nothing for it.
            let refused =
                retired_write(self.deltas.borrow().iter().filter(|d| d.retired.load(Ordering::SeqCst) && !self.set_aside_here(d)));
            if let Some(e) = refused {
                let _ = txn.rollback();
                return Err(e);
            }
            self.journal_in_commit(&*txn)?;
            Ok(txn.commit()?)
        })?;
        self.end_ddl(true);
        for d in self.deltas.take() {
            d.partition.add(d.bytes, d.rows, d.writes);
        }
        Ok(())
    }

    pub fn rollback(mut self) -> Result<()> {
        let txn = self.txn.take().expect("open transaction");
        let r = txn.rollback();
        self.end_ddl(false);
        Ok(r?)
    }
}

impl Access for Txn {
    fn insert_rows(&self, table: &str, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>> {
        Txn::insert_rows(self, table, rows)
    }
    access_reads!();
    fn index_readable(&self, table: &str, index: &str) -> bool {
        let unreadable = self.unreadable.borrow();
        unreadable.is_empty()
            || !self.inner.table(table).is_ok_and(|t| t.def.read().indexes.iter().any(|i| i.name == index && unreadable.contains(&i.id)))
    }
    fn lock_row(&self, table: &str, pk: &[PkValue]) -> Result<()> {
        let t = self.table(table)?;
        // An optimistic transaction validates at commit every key it read for update, written or not.
        self.kv().get_for_update(Space::Data, &t.key(pk)?)?;
        Ok(())
    }
    fn share_row(&self, table: &str, pk: &[PkValue]) -> Result<()> {
        let t = self.table(table)?;
        let key = t.key(pk)?;
        self.kv().get_for_update(Space::Data, &key)?;
        self.rows.borrow_mut().shared.push(key);
        Ok(())
    }
    fn guard_row(&self, table: &str, pk: &[PkValue]) -> Result<()> {
        let t = self.table(table)?;
        self.rows.borrow_mut().removed.push(t.key(pk)?);
        Ok(())
    }
    fn put_row(&self, table: &str, pk: &[Option<PkValue>], cells: &[CellWrite], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.table(table)?;
        self.write(|ctx| ctx.put_row(&t, pk, cells, cond))
    }
    fn update_row(&self, table: &str, pk: &[PkValue], ops: &[(String, UpdateOp)], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.table(table)?;
        self.write(|ctx| ctx.update_row(&t, pk, ops, cond))
    }
    fn delete_row(&self, table: &str, pk: &[PkValue], cond: &Condition) -> Result<WriteOutcome> {
        let t = self.table(table)?;
        self.write(|ctx| ctx.delete_row(&t, pk, cond))
    }
}
