//! Bulk loads (COPY outside a transaction): rows checked once at commit and written as one batch, or as
//! sorted files the engine ingests, with their index entries.

use super::*;
use crate::catalog::IndexDef;

/// A bulk load: new rows gathered and written atomically at `commit`, without a transaction. A
/// transaction tracks and re-validates every key it writes; at a million rows that costs more than the load
/// itself. Here the keys are checked once, at commit, while other commits wait (the commit gate), so no row
/// can appear between the check and the write. Nothing is visible, and nothing is written, before `commit`;
/// dropping the load discards it.
///
/// A small load is held in memory and written as one write batch. Past `StoreConfig::bulk_ingest_bytes` it
/// is written as sorted table files and ingested: they skip the memtable and the log, and land where later
/// compactions need not rewrite them. Rows that arrive in ascending key order (an export sorted by its key,
/// the usual case) then stream straight into a table file; only their keys stay in memory, for the checks at
/// commit. Other rows are held in memory up to `StoreConfig::bulk_spill_bytes`, then sorted and spilled to a
/// run file (see `runs`), so a load of any size needs bounded memory. Ingested rows are not in the memtable,
/// where optimistic transactions look for conflicting writes, so a transaction that wrote and commits after
/// an ingest is refused with `Conflict` (the bulk epoch) rather than risk missing one.
///
/// A table's secondary index entries are made with each row and go through the same sorted stream, so they
/// land in the same atomic write or ingest as their rows. A unique index's entries are checked at commit
/// like the rows' keys: two of the load with the same values sit side by side, and one that meets a stored
/// entry whose row still holds it fails the load (`UniqueViolation`).
pub struct BulkLoad {
    inner: Arc<Inner>,
    table: Arc<Table>,
    /// Rows not yet spilled or streamed, and whether they came in strictly ascending key order.
    rows: Vec<runs::Entry>,
    rows_ascending: bool,
    /// Bytes of `rows`, and of the whole load.
    held: usize,
    bytes: usize,
    runs: Vec<runs::Run>,
    streamed: Option<Streamed>,
    next_pos: usize,
    deltas: Vec<Delta>,
    now: i64,
    /// The largest value given for a generated partition-key column: its sequence moves past it at commit.
    largest_generated: Option<i64>,
    /// The table's definition when the load began, with the indexes whose entries it makes.
    def: TableDef,
}

/// The rows of a load written to table files as they arrived, each with a key above all before it.
struct Streamed {
    /// The last is being written; one is finished every `StoreConfig::bulk_file_rows` rows.
    files: Vec<Box<dyn SortedFile>>,
    /// Each row's key and position in the load, in key order, for the checks at commit: in a run file of
    /// their own (with empty values), not in memory.
    keys: runs::RunWriter,
}

/// Adds the next row to the last of a load's table files, first starting a new one when it has
/// `StoreConfig::bulk_file_rows` (a file's filter holds a hash of each of its keys until it is finished).
fn put_in_files(inner: &Inner, files: &mut Vec<Box<dyn SortedFile>>, key: &[u8], value: &[u8]) -> Result<()> {
    if files.last().is_none_or(|f| f.rows() >= inner.config.bulk_file_rows) {
        if let Some(f) = files.last_mut() {
            f.finish()?;
        }
        files.push(inner.kv.ingest().ok_or_else(|| StoreError::NotSupported("bulk loads as files on this engine".into()))?.file()?);
    }
    Ok(files.last_mut().expect("a file being written").put(key, value)?)
}

impl Streamed {
    fn push(&mut self, inner: &Inner, key: &[u8], value: &[u8], pos: usize) -> Result<()> {
        put_in_files(inner, &mut self.files, key, value)?;
        self.keys.push(key, &[], pos)
    }
}

impl Store {
    /// Starts a bulk load of new rows into `table` (COPY outside a transaction).
    pub fn bulk_load(&self, table: &str) -> Result<BulkLoad> {
        let table = self.inner.usable_table(table)?;
        let def = TableDef::clone(&table.def.read());
        Ok(BulkLoad {
            def,
            table,
            rows: Vec::new(),
            rows_ascending: true,
            held: 0,
            bytes: 0,
            runs: Vec::new(),
            streamed: None,
            next_pos: 0,
            deltas: Vec::new(),
            now: self.inner.config.clock.now_ms(),
            largest_generated: None,
            inner: self.inner.clone(),
        })
    }
}

impl Store {
    /// Inserts the row, or when it exists applies `ops` to it instead: atomically, in one call (SQL's
    /// `INSERT ... ON CONFLICT DO UPDATE`). `existed` tells which happened.
    pub fn upsert_row(&self, table: &str, pk: &[PkValue], cells: &[CellWrite], ops: &[(String, UpdateOp)]) -> Result<WriteOutcome> {
        let t = self.inner.usable_table(table)?;
        let key = t.key(pk)?;
        let full: Vec<Option<PkValue>> = pk.iter().cloned().map(Some).collect();
        self.inner.autocommit(&[key], |ctx| match ctx.put_row(&t, &full, cells, &Condition::expect_not_exist()) {
            Err(StoreError::RowExists) => ctx.update_row(&t, pk, ops, &Condition::expect_exist()),
            r => r,
        })
    }
}

impl BulkLoad {
    /// Adds rows; their keys must be complete (no generated values) and new.
    pub fn add(&mut self, rows: &[(Vec<PkValue>, Vec<CellWrite>)]) -> Result<()> {
        rows.iter().try_for_each(|(pk, cells)| self.add_row(pk, cells))
    }

    /// Adds rows whose keys may lack values of a generated partition-key column: they are drawn now.
    /// A key that lacks another value (a generated column after the partition key, which counts inside a
    /// transaction) is refused.
    pub fn add_drawing(&mut self, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<()> {
        for (pk, cells) in rows {
            let drawn = self.table.draw_sequence(&*self.inner.kv, pk)?;
            let full: Option<Vec<PkValue>> = drawn.as_deref().unwrap_or(pk).iter().cloned().collect();
            let full =
                full.ok_or_else(|| StoreError::NotSupported("a bulk load of rows whose generated key counts per partition".into()))?;
            self.add_row(&full, cells)?;
        }
        Ok(())
    }

    pub fn add_row(&mut self, pk: &[PkValue], cells: &[CellWrite]) -> Result<()> {
        for &i in &self.table.seq_columns {
            if let Some(PkValue::Integer(n)) = pk.get(i) {
                self.largest_generated = self.largest_generated.max(Some(*n));
            }
        }
        let key = self.table.key(pk)?;
        if !self.def.indexes.is_empty() {
            let row = self.table.new_row(cells, self.now)?.into_stored();
            let pos = self.next_pos;
            self.add_stored(key.clone(), &row)?;
            return self.add_entries(pk, &key, &row, pos);
        }
        if cells.iter().any(|c| c.value.size() > self.inner.config.inline_value_bytes) {
            return self.add_stored(key, &self.table.new_row(cells, self.now)?.into_stored());
        }
        let v = self.table.encode_new_row(cells, self.now)?;
        self.add_encoded(key, v)
    }

    /// Adds a new row's index entries (its values are all in the row: none is out of line yet), at the
    /// row's position, each counted in its index's partition.
    fn add_entries(&mut self, pk: &[PkValue], key: &[u8], row: &StoredRow<Stored>, pos: usize) -> Result<()> {
        let row_key = &key[self.table.prefix_len()..];
        let indexes = std::mem::take(&mut self.def.indexes);
        let added = indexes.iter().try_for_each(|ix| {
            // Every value of a new row is still in it: nothing is read out of line.
            let e = super::index::entry_key(&self.def, ix, pk, row_key, row, self.inner.reader(), key)?;
            let (entry_key, value) = (e.key, e.value);
            let size = entry_key.len() + value.len();
            self.bytes += size;
            let (partition, rows) = super::index::entry_partition(&self.table, ix, &entry_key, key);
            count_delta(&mut self.deltas, &self.table, partition, size as i64, rows);
            self.add_entry(entry_key, value, pos)
        });
        self.def.indexes = indexes;
        added
    }

    /// Adds a row, its long values out of line: each under its own key, loaded beside the row (at the
    /// row's position, so that a failed load names the row) and counted in the row's partition.
    pub(super) fn add_stored(&mut self, key: Vec<u8>, row: &StoredRow<Stored>) -> Result<()> {
        let mut outside = Vec::new();
        let v = row.encode_spilling(self.inner.config.inline_value_bytes, |column, version, bytes| {
            outside.push((keys::outside_key(&key, column, version), bytes.to_vec()));
            Ok(())
        })?;
        let pos = self.next_pos;
        self.add_encoded(key, v)?;
        for (k, b) in outside {
            let size = k.len() + b.len();
            self.bytes += size;
            if let Some(d) = self.deltas.last_mut() {
                d.bytes += size as i64;
            }
            self.add_entry(k, b, pos)?;
        }
        Ok(())
    }

    /// Adds a row already encoded: its key, and its value as stored.
    pub(super) fn add_encoded(&mut self, key: Vec<u8>, v: Vec<u8>) -> Result<()> {
        let size = key.len() + v.len();
        self.bytes += size;
        add_delta(&mut self.deltas, &self.table, &key, size as i64);
        let pos = self.next_pos;
        self.next_pos += 1;
        self.add_entry(key, v, pos)
    }

    /// Adds one key and value of the load (a row, or a value out of line) at position `pos`.
    fn add_entry(&mut self, key: Vec<u8>, v: Vec<u8>, pos: usize) -> Result<()> {
        let size = key.len() + v.len();
        if let Some(s) = &mut self.streamed {
            if key.as_slice() > s.keys.last() {
                return s.push(&self.inner, &key, &v, pos);
            }
        }
        if self.rows.last().is_some_and(|last| last.0 >= key) {
            self.rows_ascending = false;
        }
        // What a held row takes: its bytes, its entry, and the allocator's header of each of its two buffers.
        // Counting the bytes alone, a load of small rows held four times its spill threshold before spilling.
        self.held += size + std::mem::size_of::<runs::Entry>() + 32;
        self.rows.push((key, v, pos));
        if self.streamed.is_none()
            && self.runs.is_empty()
            && self.rows_ascending
            && self.held >= self.inner.config.bulk_ingest_bytes
            && self.inner.kv.ingest().is_some()
        {
            // Ascending so far, and large enough to be ingested: from here on, rows in order go straight to a
            // table file.
            let mut s = Streamed { files: Vec::new(), keys: runs::RunWriter::create(self.inner.kv.temp_path("keys"))? };
            for (k, v, pos) in self.rows.drain(..) {
                s.push(&self.inner, &k, &v, pos)?;
            }
            self.streamed = Some(s);
            self.held = 0;
        } else if self.held >= self.inner.config.bulk_spill_bytes {
            let run = runs::spill(self.inner.kv.temp_path("run"), &mut self.rows)?;
            self.runs.push(run);
            self.held = 0;
            self.rows_ascending = true;
        }
        Ok(())
    }

    /// Writes every row at once. A key that repeats in the load or names a visible row fails the whole load
    /// with `Duplicate` (the position of the first row that could not be inserted); nothing is written then.
    /// The key space of the table it loads.
    pub(super) fn table_id(&self) -> u32 {
        self.table.id
    }

    pub fn commit(mut self) -> std::result::Result<(), BulkError> {
        // Before the rows are visible, so that no value drawn meanwhile collides with one of them.
        if let Some(n) = self.largest_generated {
            self.table.seq.raise(&*self.inner.kv, n)?;
        }
        runs::sort(&mut self.rows);
        // The streamed rows' table files, and the run of their keys.
        let (streamed, streamed_run) = match self.streamed.take() {
            Some(s) => (s.files, Some(s.keys.finish()?)),
            None => (Vec::new(), None),
        };
        // The load's smallest and largest keys: the ends of the runs, of the sorted rows in memory and of the
        // streamed rows.
        let ends = self
            .runs
            .iter()
            .map(|r| (r.first.as_slice(), r.last.as_slice()))
            .chain(self.rows.first().zip(self.rows.last()).map(|(a, b)| (a.0.as_slice(), b.0.as_slice())))
            .chain(streamed_run.as_ref().map(|r| (r.first.as_slice(), r.last.as_slice())));
        let Some((first, last)) =
            ends.fold(None, |span: Option<(&[u8], &[u8])>, (lo, hi)| Some(span.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi)))))
        else {
            return Ok(());
        };
        let (first, last) = (first.to_vec(), last.to_vec());
        // One ascending stream of (key, position) over the held rows and the streamed keys: repeats sit side
        // by side, existing rows are read in key order, and a table file needs its keys so.
        let mut merged = runs::Merge::new(&self.runs, std::mem::take(&mut self.rows))?;
        let mut streamed_keys = runs::Merge::new(streamed_run.as_slice(), Vec::new())?;
        let mut streamed_next = streamed_keys.next()?;
        let rules = self.table.rules();
        let _exclusive = self.inner.commit_gate.write();
        if self.table.retired.load(Ordering::SeqCst) {
            return Err(StoreError::TableBeingRebuilt(format!("table \"{}\"", self.table.def.read().name)).into());
        }
        // An index made or dropped since the load began: its rows would miss entries, or make dead ones.
        let ids = |ixs: &[IndexDef]| ixs.iter().map(|i| i.id).collect::<Vec<_>>();
        if ids(&self.table.def.read().indexes) != ids(&self.def.indexes) {
            return Err(StoreError::Conflict.into());
        }
        if self.def.indexes.iter().any(|i| !i.ready) {
            // A build under way sweeps its index if rows were written meanwhile.
            self.table.building_writes.fetch_add(1, Ordering::SeqCst);
        }
        let row_prefix = keys::table_prefix(self.table.id);
        let unique: HashMap<[u8; 4], &IndexDef> =
            self.def.indexes.iter().filter(|i| i.unique).map(|i| (keys::table_prefix(i.id), i)).collect();
        let src = self.inner.reader();
        // A load into an empty stretch of the table (a first load, or appended keys) needs no per-key reads.
        // Values out of line sort after every row of the table: the span ends with its rows.
        let stored_in_span = {
            let mut upper = last;
            upper.push(0);
            let upper = upper.min(keys::table_end(self.table.id).to_vec());
            let mut it = src.scan(first, upper, true);
            it.seek_to_first();
            it.status().map_err(StoreError::from)?;
            it.valid()
        };
        // The first row that cannot be inserted, and the first that a unique index refuses.
        let mut duplicate: Option<usize> = None;
        let mut violation: Option<(usize, StoreError)> = None;
        let refuse = |violation: &mut Option<(usize, StoreError)>, pos: usize, ix: &IndexDef, key: &[u8]| -> Result<()> {
            if violation.as_ref().is_none_or(|(p, _)| pos < *p) {
                let (values, _) = super::index::decode_entry(ix, key, &self.table.pk_types)?;
                let (table, index, columns) = (self.def.name.clone(), ix.name.clone(), ix.columns.clone());
                *violation = Some((pos, StoreError::UniqueViolation { table, index, columns, values }));
            }
            Ok(())
        };
        // A unique entry of the load whose key a stored entry holds: a violation if that entry's row still
        // makes it.
        let check_unique = |entries: &mut Vec<(Vec<u8>, usize)>, violation: &mut Option<(usize, StoreError)>| -> Result<()> {
            let ks: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_slice()).collect();
            for (other, (k, pos)) in src.multi_get(&ks)?.into_iter().zip(entries.iter()) {
                let ix = unique[&k[..4]];
                let Some(other) = other else { continue };
                let row_key = super::index::row_part(&self.table, &other)?;
                if super::index::expected_value(&self.table, src, &self.def, ix, row_key, k)?.is_some() {
                    refuse(violation, *pos, ix, k)?;
                }
            }
            entries.clear();
            Ok(())
        };
        let mut pending_unique: Vec<(Vec<u8>, usize)> = Vec::new();
        let note = |duplicate: &mut Option<usize>, i: usize| *duplicate = Some(duplicate.map_or(i, |d| d.min(i)));
        let check = |keys: &mut Vec<(Vec<u8>, usize)>, duplicate: &mut Option<usize>| -> Result<()> {
            let ks: Vec<&[u8]> = keys.iter().map(|(k, _)| k.as_slice()).collect();
            for (old, (_, pos)) in src.multi_get(&ks)?.into_iter().zip(keys.iter()) {
                if let Some(v) = old {
                    if StoredRow::decode(&v)?.visible(rules, self.now).is_some() {
                        note(duplicate, *pos);
                    }
                }
            }
            keys.clear();
            Ok(())
        };
        // Held rows go into a write batch, or, for a large load or beside streamed rows, into a table file of
        // their own (made at the first row), ingested together with the streamed one.
        enum Sink {
            Batch(Batch),
            Table(Vec<Box<dyn SortedFile>>),
        }
        // An engine that takes no files gets one batch.
        let mut sink = if streamed_run.is_some() || (self.bytes >= self.inner.config.bulk_ingest_bytes && self.inner.kv.ingest().is_some())
        {
            Sink::Table(Vec::new())
        } else {
            Sink::Batch(Batch::default())
        };
        let mut pending: Vec<(Vec<u8>, usize)> = Vec::new();
        let mut prev: Option<std::borrow::Cow<[u8]>> = None;
        let mut held_next = merged.next()?;
        loop {
            let take_streamed = match (&held_next, &streamed_next) {
                (None, None) => break,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((k, _, pos)), Some((sk, _, spos))) => (sk.as_slice(), *spos) < (k.as_slice(), *pos),
            };
            // The row's key, position, and its value unless already written (streamed).
            let (k, pos, value) = if take_streamed {
                let (k, _, pos) = streamed_next.take().unwrap();
                streamed_next = streamed_keys.next()?;
                (std::borrow::Cow::Owned(k), pos, None)
            } else {
                let (k, v, pos) = held_next.take().unwrap();
                held_next = merged.next()?;
                (std::borrow::Cow::Owned(k), pos, Some(v))
            };
            if prev.as_deref() == Some(&*k) {
                match unique.get(&k[..4]) {
                    Some(ix) => refuse(&mut violation, pos, ix, &k)?,
                    None => note(&mut duplicate, pos),
                }
                continue;
            }
            // Once the load is known to fail, the rest is only scanned for an earlier offending row.
            if let (Some(v), None, None) = (value, duplicate, &violation) {
                match &mut sink {
                    Sink::Batch(b) => b.put(&k, &v),
                    Sink::Table(files) => put_in_files(&self.inner, files, &k, &v)?,
                }
            }
            // Rows can be duplicates (a value out of line or an index entry goes with its row), and a unique
            // index's entries.
            if stored_in_span && k[..4] == row_prefix {
                pending.push((k.to_vec(), pos));
                if pending.len() == 4096 {
                    check(&mut pending, &mut duplicate)?;
                }
            } else if unique.contains_key(&k[..4]) {
                pending_unique.push((k.to_vec(), pos));
                if pending_unique.len() == 4096 {
                    check_unique(&mut pending_unique, &mut violation)?;
                }
            }
            prev = Some(k);
        }
        if !pending.is_empty() {
            check(&mut pending, &mut duplicate)?;
        }
        if !pending_unique.is_empty() {
            check_unique(&mut pending_unique, &mut violation)?;
        }
        match (duplicate, violation) {
            (Some(d), Some((v, _))) if d <= v => return Err(BulkError::Duplicate(d)),
            (_, Some((_, e))) => return Err(e.into()),
            (Some(d), None) => return Err(BulkError::Duplicate(d)),
            (None, None) => {}
        }
        match sink {
            Sink::Batch(b) => self.inner.kv.write(b).map_err(StoreError::from)?,
            Sink::Table(held) => {
                let files: Vec<_> = streamed.into_iter().chain(held).collect();
                self.inner.kv.ingest().expect("files only for engines that take them").ingest(files).map_err(StoreError::from)?;
                self.inner.bulk_epoch.fetch_add(1, Ordering::SeqCst);
            }
        }
        for d in self.deltas.drain(..) {
            d.partition.add(d.bytes, d.rows, d.writes);
        }
        Ok(())
    }
}

/// Why a bulk load was not written.
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    #[error("duplicate key: row {0} of the load already exists")]
    Duplicate(usize),
    #[error(transparent)]
    Store(#[from] StoreError),
}
