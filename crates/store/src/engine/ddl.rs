//! Changes of the catalog as SQL makes them: at once outside a transaction, or inside one, journaled so
//! that they are undone unless it commits (see `pending`).

use super::*;
use crate::catalog::IndexDef;

/// The catalog changes of one statement: in autocommit (`txn` is `None`) or in the transaction `txn`.
pub struct Ddl<'a> {
    store: &'a Store,
    txn: Option<&'a mut Txn>,
}

impl Store {
    pub fn ddl<'a>(&'a self, txn: Option<&'a mut Txn>) -> Ddl<'a> {
        Ddl { store: self, txn }
    }
}

impl Ddl<'_> {
    fn inner(&self) -> &Inner {
        &self.store.inner
    }

    /// Refuses a change of `names` another transaction has changed and not ended.
    fn check(&self, names: &[&str]) -> Result<()> {
        let mine = self.txn.as_ref().map_or(0, |t| t.owner());
        names.iter().try_for_each(|n| self.inner().check_claim(n, mine))
    }

    pub fn create_table(&mut self, def: TableDef) -> Result<()> {
        let name = def.name.clone();
        self.check(&[&name])?;
        self.store.create_table(def)?;
        match &self.txn {
            Some(t) => t.created(&name),
            None => Ok(()),
        }
    }

    /// Writes a role's record (`None`: removes it), durably; in a transaction, journaled so that a rollback
    /// undoes it. The SQL layer reads its roles again after a rollback.
    pub fn set_role(&mut self, name: &str, record: Option<Vec<u8>>) -> Result<()> {
        self.check(&[&pending::role_claim(name)])?;
        if let Some(t) = &self.txn {
            t.before_role_change(name)?;
        }
        self.store.set_role(name, record)
    }

    pub fn drop_table(&mut self, name: &str) -> Result<()> {
        self.check(&[name])?;
        match &self.txn {
            Some(t) => t.set_aside(name),
            None => self.store.drop_table(name),
        }
    }

    pub fn rename_table(&mut self, from: &str, to: &str) -> Result<()> {
        self.check(&[from, to])?;
        crate::value::validate_table_name(to)?;
        if let Some(t) = &self.txn {
            t.before_change(from, &[to])?;
        }
        self.store.rename_table(from, to)
    }

    /// TRUNCATE. In a transaction the table is set aside, and an empty one with its definition and
    /// counters takes its name; it is retired meanwhile, so that another session's commit that wrote it
    /// fails (55006) rather than vanish with it.
    pub fn truncate_table(&mut self, name: &str) -> Result<()> {
        self.check(&[name])?;
        let Some(t) = &self.txn else { return self.store.truncate_table(name) };
        let old = self.inner().table(name)?;
        let temp = format!("tabula_rebuild_{}", old.id);
        match self.inner().drop_table(&temp) {
            Ok(()) | Err(StoreError::UnknownTable(_)) => {}
            Err(e) => return Err(e),
        }
        self.store.create_table(TableDef { name: temp.clone(), ..TableDef::clone(&old.def.read()) })?;
        t.record_aside(name)?;
        old.retired.store(true, Ordering::SeqCst);
        if let Err(e) = self.inner().replace_table(name, &temp, true) {
            let _ = self.inner().drop_table(&temp);
            return Err(e);
        }
        t.created(name)
    }

    pub fn set_options(&mut self, name: &str, options: TableOptions) -> Result<()> {
        self.check(&[name])?;
        if let Some(t) = &self.txn {
            t.before_change(name, &[])?;
        }
        self.store.set_options(name, options)
    }

    pub fn set_user_meta(&mut self, name: &str, meta: Vec<u8>) -> Result<()> {
        self.check(&[name])?;
        if let Some(t) = &self.txn {
            t.before_change(name, &[])?;
        }
        self.store.set_user_meta(name, meta)
    }

    /// `Store::rebuild`. In a transaction the old table is set aside (journaled, for an undo). One that has
    /// not written rows reads from then on at a new snapshot, which holds the moved rows. One that has
    /// cannot leave its snapshot: the rows move through it instead (`rebuild_txn`), and the new table is
    /// private to it until it ends (Knex and Alembic run several migrations, and record each, in one
    /// transaction; a data migration writes rows before the next one alters the table).
    pub fn rebuild(&mut self, def: TableDef, columns: &[(String, Option<String>)]) -> std::result::Result<(), RebuildError> {
        self.rebuild_with(def, columns, None)
    }

    /// `Store::rebuild_converting`, in a transaction as `rebuild` is.
    pub fn rebuild_converting(&mut self, def: TableDef, convert: &Convert) -> std::result::Result<(), RebuildError> {
        self.rebuild_with(def, &[], Some(convert))
    }

    fn rebuild_with(
        &mut self,
        def: TableDef,
        columns: &[(String, Option<String>)],
        convert: Option<&Convert>,
    ) -> std::result::Result<(), RebuildError> {
        let name = def.name.clone();
        self.check(&[&name])?;
        let Some(t) = self.txn.as_deref_mut() else { return self.store.rebuild_keeping(def, columns, convert, false) };
        t.record_aside(&name)?;
        if t.wrote.get() {
            self.store.rebuild_in_txn(t, def, columns, convert, None)?;
            return Ok(t.private(&name)?);
        }
        self.store.rebuild_keeping(def, columns, convert, true)?;
        t.created(&name)?;
        t.renew_snapshot(self.store);
        Ok(())
    }
}

impl Ddl<'_> {
    /// A bulk load into table `table` (`Store::bulk_load`), to commit with [`Ddl::commit_bulk`]. In a
    /// transaction, only into a table the transaction made since its last savepoint (CREATE TABLE,
    /// TRUNCATE) and has not written rows to: an undo drops that table with every row in it, so the rows
    /// need not be held in the transaction, and a load of any size fits (`pgbench -i`: `BEGIN; TRUNCATE
    /// ...; INSERT ...; COPY ...; COMMIT`). `None` otherwise: the rows then go through the transaction.
    pub fn bulk_load(&mut self, table: &str) -> Result<Option<BulkLoad>> {
        let Some(t) = self.txn.as_deref() else { return self.store.bulk_load(table).map(Some) };
        let target = self.store.inner.table(table)?;
        let written = t.deltas.borrow().iter().any(|d| Arc::ptr_eq(&d.retired, &target.retired));
        let private = target.private_to.load(Ordering::SeqCst) != 0;
        if written || private || !target.def.read().indexes.is_empty() || !t.made_since_savepoint(target.id) {
            return Ok(None);
        }
        self.store.bulk_load(table).map(Some)
    }

    /// Commits a bulk load of [`Ddl::bulk_load`]. A transaction that has not written rows reads from then
    /// on at a snapshot holding the loaded ones. One that has (to other tables) keeps its snapshot, older
    /// than the load: it may neither read nor write the loaded table until it ends (0A000), and the load,
    /// which moved the bulk epoch, does not fail its commit (another bulk load meanwhile still does).
    pub fn commit_bulk(&mut self, bulk: BulkLoad) -> std::result::Result<(), BulkError> {
        let table = bulk.table_id();
        let epoch = self.store.inner.bulk_epoch.load(Ordering::SeqCst);
        bulk.commit()?;
        let Some(t) = self.txn.as_deref_mut() else { return Ok(()) };
        if !t.wrote.get() {
            t.renew_snapshot(self.store);
            return Ok(());
        }
        let now = self.store.inner.bulk_epoch.load(Ordering::SeqCst);
        if t.epoch == epoch && now <= epoch + 1 {
            t.epoch = now;
        }
        t.loaded_apart.borrow_mut().push(table);
        Ok(())
    }

    /// CREATE INDEX (`Store::create_index`). In a transaction that has not written rows, it reads from then
    /// on at a snapshot holding the entries. In one that has written rows to other tables (a migration tool
    /// that ran an earlier migration, or updated its version table, in the same transaction), its snapshot
    /// stays, older than the entries: it reads the table without the index. Not after rows of the table
    /// itself were written in it: their entries would be missing.
    pub fn create_index(&mut self, table: &str, spec: IndexDef, watch: &dyn super::index::BuildWatch) -> Result<()> {
        self.check(&[table])?;
        let Some(t) = self.txn.as_deref_mut() else { return self.store.create_index_until(table, spec, watch) };
        if t.wrote.get() {
            let target = self.store.inner.table(table)?;
            // Entries of rows only the transaction sees are written in it, with the rows moved to a table
            // that has the index (`rebuild_txn`).
            if t.deltas.borrow().iter().any(|d| Arc::ptr_eq(&d.retired, &target.retired)) {
                if target.def.read().indexes.iter().any(|i| i.name == spec.name) {
                    return Err(StoreError::IndexExists(spec.name));
                }
                let def = TableDef::clone(&target.def.read());
                t.record_aside(table)?;
                return match self.store.rebuild_in_txn(t, def, &[], None, Some(spec)) {
                    Ok(()) => t.private(table),
                    Err(RebuildError::Store(e)) => Err(e),
                    Err(e) => Err(StoreError::Storage(format!("CREATE INDEX: {e}"))),
                };
            }
            t.before_change(table, &[])?;
            let name = spec.name.clone();
            let epoch = self.store.inner.bulk_epoch.load(Ordering::SeqCst);
            self.store.create_index_until(table, spec, watch)?;
            let id = index_id(self.store, table, &name)?;
            t.index_entries(table, id, true)?;
            // The build moved the bulk epoch, which fails the commit of a transaction that wrote before it;
            // this one wrote other tables only. Another move meanwhile (a bulk load) still counts.
            if t.epoch == epoch && self.store.inner.bulk_epoch.load(Ordering::SeqCst) == epoch + 1 {
                t.epoch = epoch + 1;
            }
            t.unreadable.borrow_mut().push(id);
            return Ok(());
        }
        t.before_change(table, &[])?;
        let name = spec.name.clone();
        self.store.create_index_until(table, spec, watch)?;
        let id = index_id(self.store, table, &name)?;
        t.index_entries(table, id, true)?;
        t.renew_snapshot(self.store);
        Ok(())
    }

    /// DROP INDEX. In a transaction its entries stay until the commit, for an undo.
    pub fn drop_index(&mut self, table: &str, name: &str) -> Result<()> {
        self.check(&[table])?;
        let Some(t) = &self.txn else { return self.store.drop_index(table, name) };
        let id = self.index_id(table, name)?;
        t.before_change(table, &[])?;
        self.inner().remove_index(&*self.inner().table(table)?, name, false)?;
        t.index_entries(table, id, false)
    }

    /// ALTER INDEX ... RENAME TO.
    pub fn rename_index(&mut self, table: &str, name: &str, to: &str) -> Result<()> {
        self.check(&[table])?;
        self.index_id(table, name)?;
        if let Some(t) = &self.txn {
            t.before_change(table, &[])?;
        }
        self.inner().alter(table, |d| {
            d.indexes.iter_mut().filter(|i| i.name == name).for_each(|i| i.name = to.to_string());
            Ok(())
        })
    }

    fn index_id(&self, table: &str, name: &str) -> Result<u32> {
        index_id(self.store, table, name)
    }
}

fn index_id(store: &Store, table: &str, name: &str) -> Result<u32> {
    let t = store.inner.table(table)?;
    let id = t.def.read().indexes.iter().find(|i| i.name == name).map(|i| i.id);
    id.ok_or_else(|| StoreError::UnknownIndex(name.into()))
}

impl Txn {
    /// Begins the transaction again at a new snapshot, with as many savepoints as it had. Only for one that
    /// has not written rows: the old engine transaction, empty, is dropped.
    fn renew_snapshot(&mut self, store: &Store) {
        let fresh = if self.view.is_some() { store.begin_with_view() } else { store.begin() };
        let mut fresh = fresh;
        let kv = fresh.txn.take();
        let view = fresh.view.take();
        for _ in 0..self.savepoints() {
            kv.as_ref().expect("open transaction").set_savepoint();
        }
        self.txn = kv;
        self.view = view;
        self.epoch = fresh.epoch;
    }
}
