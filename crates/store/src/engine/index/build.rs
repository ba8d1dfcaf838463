//! Building an index on a table that has rows, online.

use super::*;

/// What an index build asks of its caller, and tells it, as it goes.
pub trait BuildWatch {
    /// Whether to stop now (cancel, statement_timeout): asked before the first row and every
    /// `STOP_EVERY` rows.
    fn stop(&self) -> bool;
    /// The build is at `phase`, with `done` of about `total` rows (`total`: the table's partition
    /// statistics when the build began) behind it.
    fn progress(&self, _phase: BuildPhase, _done: u64, _total: u64) {}
}

/// Any `Fn() -> bool` is a watch that only says when to stop.
impl<F: Fn() -> bool> BuildWatch for F {
    fn stop(&self) -> bool {
        self()
    }
}

/// The steps of an index build, named as PostgreSQL's `pg_stat_progress_create_index` names its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildPhase {
    /// Writing the entries of the rows stored when the build began.
    Scanning,
    /// Removing entries left stale by rows written during the build.
    Validating,
}

impl BuildPhase {
    pub fn name(self) -> &'static str {
        match self {
            BuildPhase::Scanning => "building index: scanning table",
            BuildPhase::Validating => "index validation: scanning index",
        }
    }
}

/// Entries are written in batches of this many while an index is built.
const BUILD_BATCH: usize = 10_000;

/// A build asks whether to stop every this many rows (a few milliseconds' work).
const STOP_EVERY: usize = 1_000;

impl Store {
    /// Builds index `spec` (its name, columns, key or attribute ones, and kind) of `table`, online: writes go
    /// on while it is built, and reads use it once every row has its entry.
    ///
    /// 1. Its definition, marked not ready, is added under the commit gate held alone: every commit from
    ///    then on writes entries for the rows it writes. A transaction that wrote before is refused at its
    ///    commit (40001, as a bulk load makes it: the bulk epoch moves), since its writes had none.
    /// 2. The rows are read at a snapshot taken after, and their entries written in batches (bounded
    ///    memory). An entry for a row a writer changed since is stale: reads check each entry against its
    ///    row and pass over such ones. If any row was written during the build, the index's entries are
    ///    then swept, so that none is left (a delete that a writer of its row beats is tried again at a
    ///    newer snapshot: see `Inner::sweep_range`).
    /// 3. The index is marked ready. On any failure it is removed with its entries; after a crash the next
    ///    open removes it.
    pub fn create_index(&self, table: &str, spec: IndexDef) -> Result<()> {
        self.create_index_until(table, spec, &|| false)
    }

    /// `create_index`, stopped (`Interrupted`, nothing left behind) as soon as `watch` says so, and telling
    /// it how far the build has come.
    pub fn create_index_until(&self, table: &str, spec: IndexDef, watch: &dyn BuildWatch) -> Result<()> {
        let t = self.inner.table(table)?;
        let name = spec.name.clone();
        if t.def.read().indexes.iter().any(|i| i.name == name) {
            return Err(StoreError::IndexExists(name));
        }
        check_local(&t.def.read(), &spec)?;
        let ix = IndexDef { id: self.inner.new_space_id()?, ready: false, ..spec };
        {
            let _ddl = self.inner.ddl.lock();
            let _exclusive = self.inner.commit_gate.write();
            self.inner.alter_locked(&t, |d| {
                d.indexes.push(ix.clone());
                Ok(())
            })?;
            self.inner.bulk_epoch.fetch_add(1, Ordering::SeqCst);
        }
        let writes_before = t.building_writes.load(Ordering::SeqCst);
        let filled = self.fill_index(&t, &ix, watch).and_then(|rows| {
            if t.building_writes.load(Ordering::SeqCst) != writes_before {
                watch.progress(BuildPhase::Validating, rows, rows);
                self.inner.sweep_index(&t, &ix)?;
            }
            Ok(())
        });
        let built = filled.and_then(|()| {
            let _ddl = self.inner.ddl.lock();
            self.inner.alter_locked(&t, |d| {
                d.indexes.iter_mut().filter(|i| i.id == ix.id).for_each(|i| i.ready = true);
                Ok(())
            })
        });
        if built.is_err() {
            let _ = self.inner.remove_index(&t, &name, true);
        }
        built
    }

    /// Writes the entries of the rows stored now. A unique index's entries (those that are their values
    /// alone) are written through `write_unique`, the others in plain batches.
    fn fill_index(&self, t: &Table, ix: &IndexDef, watch: &dyn BuildWatch) -> Result<u64> {
        let def = t.def.read().clone();
        let total = t.parts.infos().iter().map(|p| p.approx_rows.max(0) as u64).sum::<u64>();
        watch.progress(BuildPhase::Scanning, 0, total);
        let reader = self.inner.reader();
        let mut cursor = reader.scan(keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec(), false);
        cursor.seek_to_first();
        let mut batch = Batch::default();
        let mut unique: Vec<(Entry, Vec<u8>)> = Vec::new();
        let mut rows = 0usize;
        while cursor.valid() {
            if rows.is_multiple_of(STOP_EVERY) {
                if watch.stop() {
                    return Err(StoreError::Interrupted);
                }
                if rows > 0 {
                    watch.progress(BuildPhase::Scanning, rows as u64, total.max(rows as u64));
                }
            }
            rows += 1;
            let row = StoredRow::decode(cursor.value())?;
            let pk = t.decode_pk(cursor.key())?;
            let row_key = &cursor.key()[t.prefix_len()..];
            let e = entry_key(&def, ix, &pk, row_key, &row, reader, cursor.key())?;
            // A build's entries count in the index's size, not in its write rate (they are no load of users').
            let (partition, entries) = entry_partition(t, ix, &e.key, cursor.key());
            partition.add(e.bytes(), entries, 0);
            if e.unique {
                unique.push((e, row_key.to_vec()));
            } else {
                batch.put(&e.key, &e.value);
            }
            if batch.puts.len() == BUILD_BATCH {
                self.inner.kv.write(std::mem::take(&mut batch))?;
            }
            if unique.len() == BUILD_BATCH {
                self.write_unique(t, &def, ix, &std::mem::take(&mut unique))?;
            }
            cursor.advance(false);
        }
        cursor.status()?;
        if !batch.puts.is_empty() {
            self.inner.kv.write(batch)?;
        }
        if !unique.is_empty() {
            self.write_unique(t, &def, ix, &unique)?;
        }
        Ok(rows as u64)
    }

    /// Writes a build's unique entries (each with its row's key) in one engine transaction that reads
    /// each key for update first: a key already held by another row that still makes it (a row stored
    /// before, one of this batch, or a writer's meanwhile) fails the build (`UniqueViolation`). A writer
    /// that commits the same values between that check and this commit makes the commit conflict, and
    /// the batch is checked again, when it finds the writer's entry. Before, the entries were checked and
    /// then written in a plain batch, and a writer in between lost its entry to the build's.
    fn write_unique(&self, t: &Table, def: &TableDef, ix: &IndexDef, entries: &[(Entry, Vec<u8>)]) -> Result<()> {
        loop {
            let txn = self.inner.kv.begin(true);
            for (e, row_key) in entries {
                if let Some(other) = txn.get_for_update(Space::Data, &e.key)? {
                    if !names_row(&other, row_key) && still_holds(t, &*txn, def, ix, &other, e)? {
                        txn.rollback()?;
                        let (table, index, columns) = (def.name.clone(), ix.name.clone(), ix.columns.clone());
                        return Err(StoreError::UniqueViolation { table, index, columns, values: e.values.clone() });
                    }
                }
                txn.put(Space::Data, &e.key, &e.value)?;
            }
            match txn.commit().map_err(StoreError::from) {
                Ok(()) => return Ok(()),
                Err(StoreError::Conflict) => std::thread::yield_now(),
                Err(e) => return Err(e),
            }
        }
    }

    /// Drops index `name` of `table` and its entries.
    pub fn drop_index(&self, table: &str, name: &str) -> Result<()> {
        let t = self.inner.table(table)?;
        self.inner.remove_index(&t, name, true).map(|_| ())
    }
}
