//! Secondary indexes (global: each has a key space of its own, ordered by the index's columns). An entry
//! is written in the same engine transaction as its row, so a read through an index sees exactly what the
//! table holds, inside transactions too.
//!
//! ```text
//! key   = index_id:u32-BE  column+  row-key
//! value = row-key                               (the row's key columns, as keys::encode_pk writes them)
//! column = 0x02 tag value  |  0x03 (NULL: after every value, as PostgreSQL's ascending indexes put them)
//!          of a descending column, every byte of that inverted (values in reverse order, NULLs first:
//!          the encoding is prefix-free, so the inverse orders the other way)
//!   tag 0x01 Boolean  1 byte
//!       0x02 Integer  8 bytes big-endian of (v XOR 1<<63)
//!       0x03 Double   8 bytes big-endian: the bits, all flipped when negative, else the sign bit set
//!       0x04 String / 0x05 Binary  bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x01
//! ```
//! An entry holds the row's newest stored value of each column. Versions only ever hide from the newest
//! down (a ttl hides a cell's oldest versions first, `max_versions` its oldest), so the newest stored
//! value is the visible one unless nothing of the column is visible. Entries therefore cover every row a
//! read could find, and may also name rows whose values have since expired, whose entries stay until
//! the row is written again, or a compaction drops those values and a sweep (`engine/sweep.rs`) the entry:
//! a read through an index checks each row it finds against its condition.

use super::*;
use crate::catalog::IndexDef;

const NOT_NULL: u8 = 0x02;
const NULL: u8 = 0x03;

fn encode_value(out: &mut Vec<u8>, v: Option<&Value>) {
    let Some(v) = v else {
        out.push(NULL);
        return;
    };
    out.push(NOT_NULL);
    match v {
        Value::Boolean(b) => out.extend_from_slice(&[0x01, *b as u8]),
        Value::Integer(i) => {
            out.push(0x02);
            out.extend_from_slice(&((*i as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::Double(d) => {
            out.push(0x03);
            let bits = d.to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        Value::String(s) => {
            out.push(0x04);
            keys::encode_bytes(out, s.as_bytes());
        }
        Value::Binary(b) => {
            out.push(0x05);
            keys::encode_bytes(out, b);
        }
    }
}

/// Decodes one column's value at the start of `key`, inverted first when `desc`; returns it and the bytes
/// it took.
fn decode_column(key: &[u8], desc: bool) -> Result<(Option<Value>, usize)> {
    let at = |i: usize| key.get(i).map(|b| if desc { !b } else { *b }).ok_or_else(|| StoreError::Corrupt("index entry".into()));
    match at(0)? {
        NULL => return Ok((None, 1)),
        NOT_NULL => {}
        _ => return Err(StoreError::Corrupt("index entry".into())),
    }
    let fixed = |n: usize| -> Result<Vec<u8>> { (2..2 + n).map(at).collect() };
    Ok(match at(1)? {
        0x01 => (Some(Value::Boolean(at(2)? != 0)), 3),
        0x02 => (Some(Value::Integer((u64::from_be_bytes(fixed(8)?.try_into().unwrap()) ^ (1 << 63)) as i64)), 10),
        0x03 => {
            let ordered = u64::from_be_bytes(fixed(8)?.try_into().unwrap());
            let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
            (Some(Value::Double(f64::from_bits(bits))), 10)
        }
        tag @ (0x04 | 0x05) => {
            let (mut bytes, mut i) = (Vec::new(), 2);
            loop {
                match (at(i)?, at(i + 1).ok()) {
                    (0x00, Some(0xFF)) => bytes.push(0),
                    (0x00, Some(0x01)) => break,
                    (b, _) => {
                        bytes.push(b);
                        i += 1;
                        continue;
                    }
                }
                i += 2;
            }
            let v = match tag {
                0x04 => Value::String(String::from_utf8(bytes).map_err(|_| StoreError::Corrupt("index entry".into()))?),
                _ => Value::Binary(bytes),
            };
            (Some(v), i + 2)
        }
        _ => return Err(StoreError::Corrupt("index entry".into())),
    })
}

/// What an entry key of index `ix` holds: its columns' values, then the row's key columns when the key goes
/// on with them (every entry but a unique one's without NULLs).
pub(super) fn decode_entry(ix: &IndexDef, key: &[u8], pk_types: &[PkType]) -> Result<(Vec<Option<Value>>, Vec<PkValue>)> {
    let mut rest = key.get(4..).ok_or_else(|| StoreError::Corrupt("index entry".into()))?;
    let mut values = Vec::with_capacity(ix.columns.len());
    for i in 0..ix.columns.len() {
        let (v, n) = decode_column(rest, ix.desc(i))?;
        values.push(v);
        rest = &rest[n..];
    }
    let row = if rest.is_empty() { Vec::new() } else { keys::decode_pk(rest, pk_types)? };
    Ok((values, row))
}

/// Column `i`'s encoding of `v`, inverted for a descending column.
fn encode_column(out: &mut Vec<u8>, ix: &IndexDef, i: usize, v: Option<&Value>) {
    let start = out.len();
    encode_value(out, v);
    if ix.desc(i) {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
}

/// The key prefix of the entries whose first columns hold `values` (the whole index for none).
pub(crate) fn prefix(ix: &IndexDef, values: &[Option<Value>]) -> Vec<u8> {
    let mut k = keys::table_prefix(ix.id).to_vec();
    for (i, v) in values.iter().enumerate() {
        encode_column(&mut k, ix, i, v.as_ref());
    }
    k
}

/// The keys of a range's entries: from the first (inclusive) to the end (exclusive).
fn bounds(ix: &IndexDef, r: &IndexRange) -> (Vec<u8>, Vec<u8>) {
    let p = prefix(ix, &r.eq);
    let next = r.eq.len();
    let after_all = |k: &[u8]| keys::prefix_successor(k).unwrap_or_else(|| keys::table_end(ix.id).to_vec());
    let at = |v: &Value| {
        let mut k = p.clone();
        encode_column(&mut k, ix, next, Some(v));
        k
    };
    let with = |tag: u8| {
        let mut k = p.clone();
        k.push(tag);
        k
    };
    if r.lower.is_none() && r.upper.is_none() {
        return (p.clone(), after_all(&p));
    }
    // Ascending, the values run from the lower bound up to the NULLs; descending, from the NULLs (the
    // inverted tags put them first) and the upper bound down to the lower.
    if ix.desc(next) {
        let start = match &r.upper {
            None => with(!NOT_NULL),
            Some((v, true)) => at(v),
            Some((v, false)) => after_all(&at(v)),
        };
        let end = match &r.lower {
            None => after_all(&p),
            Some((v, true)) => after_all(&at(v)),
            Some((v, false)) => at(v),
        };
        return (start, end);
    }
    let start = match &r.lower {
        None => with(NOT_NULL),
        Some((v, true)) => at(v),
        Some((v, false)) => after_all(&at(v)),
    };
    let end = match &r.upper {
        None => with(NULL),
        Some((v, true)) => after_all(&at(v)),
        Some((v, false)) => at(v),
    };
    (start, end)
}

fn pk_as_value(v: &PkValue) -> Value {
    match v {
        PkValue::String(s) => Value::String(s.clone()),
        PkValue::Integer(i) => Value::Integer(*i),
        PkValue::Binary(b) => Value::Binary(b.clone()),
    }
}

/// The entry key of a row: its key columns `pk` (encoded: `row_key`) and its stored cells. A unique index's
/// entry without NULLs is its values alone, so that two rows with them meet at one key (a concurrent
/// writer of the same values then conflicts); one with a NULL is followed by the row key, as in any index,
/// but in a NULLS NOT DISTINCT index, whose NULLs meet as values do.
/// `data_key` is the row's whole key, to read an indexed value stored out of line from `src`.
fn entry_key(
    def: &TableDef,
    ix: &IndexDef,
    pk: &[PkValue],
    row_key: &[u8],
    row: &StoredRow<Stored>,
    src: &dyn Read,
    data_key: &[u8],
) -> Result<Entry> {
    let values = entry_values(def, ix, pk, row, src, data_key)?;
    let mut key = prefix(ix, &values);
    let unique = ix.unique && (ix.nulls_not_distinct || values.iter().all(Option::is_some));
    if !unique {
        key.extend_from_slice(row_key);
    }
    Ok(Entry { key, unique, values })
}

/// One row's entry in one index.
#[derive(PartialEq)]
struct Entry {
    key: Vec<u8>,
    /// The key is the values alone (a unique index's, without NULLs): other rows may claim it.
    unique: bool,
    values: Vec<Option<Value>>,
}

fn entry_values(
    def: &TableDef,
    ix: &IndexDef,
    pk: &[PkValue],
    row: &StoredRow<Stored>,
    src: &dyn Read,
    data_key: &[u8],
) -> Result<Vec<Option<Value>>> {
    ix.columns
        .iter()
        .map(|c| match def.primary_key.iter().position(|k| k.name == *c) {
            Some(i) => Ok(Some(pk_as_value(&pk[i]))),
            None => match row.column(c).and_then(|cells| cells.first()) {
                None => Ok(None),
                Some(Cell { value: Stored::Inline(v), .. }) => Ok(Some(v.clone())),
                Some(Cell { value: Stored::Outside { kind, .. }, version }) => {
                    Ok(Some(row::outside_value(c, *kind, src.get(&keys::outside_key(data_key, c, *version))?)?))
                }
            },
        })
        .collect()
}

/// Whether the row named by entry value `other` (a row key) still holds `entry`'s values: the entry is a
/// live claim on them, not one left by a row that has changed since.
fn still_holds(t: &Table, src: &dyn Read, def: &TableDef, ix: &IndexDef, other: &[u8], entry: &Entry) -> Result<bool> {
    holds_entry(t, src, def, ix, other, &entry.key)
}

/// Whether the row whose key columns are `row_key` (encoded) is stored and makes index entry `entry`.
pub(super) fn holds_entry(t: &Table, src: &dyn Read, def: &TableDef, ix: &IndexDef, row_key: &[u8], entry: &[u8]) -> Result<bool> {
    let pk = keys::decode_pk(row_key, &t.pk_types)?;
    let key = t.key(&pk)?;
    let Some(raw) = src.get(&key)? else { return Ok(false) };
    Ok(entry_key(def, ix, &pk, row_key, &StoredRow::decode(&raw)?, src, &key)?.key == entry)
}

/// Where an entry of `ix` counts, and as how many rows: a global index's in its own partitions, as one
/// row of them; a local index's in the partition of its row (whose key is `data_key`), as bytes only.
pub(super) fn entry_partition(t: &Table, ix: &IndexDef, entry: &[u8], data_key: &[u8]) -> (Arc<Partition>, i64) {
    match ix.local {
        true => (t.partition_of(data_key), 0),
        false => (t.index_parts(ix.id).locate(entry), 1),
    }
}

/// Refuses a local index that does not start with the table's partition key, column for column.
pub(super) fn check_local(def: &TableDef, ix: &IndexDef) -> Result<()> {
    let key: Vec<&str> = def.primary_key[..def.partition_key_len].iter().map(|c| c.name.as_str()).collect();
    if ix.local && (ix.columns.len() < key.len() || ix.columns[..key.len()].iter().zip(&key).any(|(a, b)| a != b)) {
        return Err(StoreError::InvalidIndexDefinition(format!(
            "local index \"{}\" must start with the partition key of table \"{}\" ({})",
            ix.name,
            def.name,
            key.join(", ")
        )));
    }
    Ok(())
}

impl WriteCtx<'_> {
    /// Keeps the table's indexes in step with one row's write: `old` the row's stored bytes before,
    /// `new` what it holds after (`None`: deleted).
    pub(super) fn index_row(&mut self, t: &Table, key: &[u8], old: Option<&[u8]>, new: Option<&StoredRow<Stored>>) -> Result<()> {
        // A copy, not the lock held: the checks below take it again (`Table::key`), and a second read of a
        // fair lock deadlocks once a writer (DDL) waits between the two.
        let def = {
            let d = t.def.read();
            if d.indexes.is_empty() {
                return Ok(());
            }
            d.clone()
        };
        if def.indexes.iter().any(|i| !i.ready) {
            t.building_writes.fetch_add(1, Ordering::SeqCst);
        }
        let row_key = &key[t.prefix_len()..];
        let pk = t.decode_pk(key)?;
        let old = old.map(StoredRow::decode).transpose()?;
        // Every check first, then every change: a refused write leaves nothing behind.
        let mut deletes = Vec::new();
        let mut puts = Vec::new();
        for ix in &def.indexes {
            let before = old.as_ref().map(|r| entry_key(&def, ix, &pk, row_key, r, self.txn, key)).transpose()?;
            let after = new.map(|r| entry_key(&def, ix, &pk, row_key, r, self.txn, key)).transpose()?;
            if before == after {
                continue;
            }
            if let Some(e) = before {
                // A unique entry may have been taken over by another row since this one left it stale.
                if !e.unique || self.txn.get_for_update(Space::Data, &e.key)?.as_deref() == Some(row_key) {
                    deletes.push((ix, e.key));
                }
            }
            if let Some(e) = after {
                if e.unique {
                    // Read for update: a concurrent writer of the same values conflicts at commit.
                    if let Some(other) = self.txn.get_for_update(Space::Data, &e.key)? {
                        if other != row_key && still_holds(t, self.src(), &def, ix, &other, &e)? {
                            return Err(StoreError::UniqueViolation {
                                table: def.name.clone(),
                                index: ix.name.clone(),
                                columns: ix.columns.clone(),
                                values: e.values,
                            });
                        }
                    }
                }
                puts.push((ix, e.key));
            }
        }
        // An entry is its key and the row key as its value.
        for (ix, k) in deletes {
            self.txn.delete(Space::Data, &k)?;
            self.written += k.len() as u64;
            let (partition, rows) = entry_partition(t, ix, &k, key);
            count_delta(&mut self.deltas, t, partition, -((k.len() + row_key.len()) as i64), -rows);
        }
        for (ix, k) in puts {
            self.txn.put(Space::Data, &k, row_key)?;
            self.written += (k.len() + row_key.len()) as u64;
            let (partition, rows) = entry_partition(t, ix, &k, key);
            count_delta(&mut self.deltas, t, partition, (k.len() + row_key.len()) as i64, rows);
        }
        Ok(())
    }
}

impl Inner {
    /// Row keys from index `index` of table `t` in `range`, in index order (descending when the range is
    /// read backward), from after entry `after` on, at most `limit`; and the entry to resume after, if the
    /// limit cut the read.
    pub(super) fn index_pks(
        &self,
        src: &dyn Read,
        t: &Table,
        index: &str,
        range: &IndexRange,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<IndexPage> {
        let ix = t.def.read().indexes.iter().find(|i| i.name == index).cloned().ok_or_else(|| StoreError::UnknownIndex(index.into()))?;
        let (start, end) = bounds(&ix, range);
        let backward = range.backward;
        let (start, end) = match after {
            // Forward, the next page starts just past the last entry read; backward, it ends before it.
            Some(a) if !backward => {
                let mut k = a.to_vec();
                k.push(0);
                (k.max(start), end)
            }
            Some(a) => (start, a.to_vec().min(end)),
            None => (start, end),
        };
        let mut cursor = src.scan(start, end, true);
        if backward {
            cursor.seek_to_last();
        } else {
            cursor.seek_to_first();
        }
        let mut pks = Vec::new();
        let mut last = Vec::new();
        while cursor.valid() {
            if pks.len() == limit {
                return Ok((pks, Some(last)));
            }
            pks.push(keys::decode_pk(cursor.value(), &t.pk_types)?);
            last = cursor.key().to_vec();
            cursor.advance(backward);
        }
        cursor.status()?;
        Ok((pks, None))
    }

    /// The range deletions that remove every entry of `t`'s indexes.
    pub(super) fn index_ranges(t: &Table) -> Vec<(Vec<u8>, Vec<u8>)> {
        t.def.read().indexes.iter().map(|i| (keys::table_prefix(i.id).to_vec(), keys::table_end(i.id).to_vec())).collect()
    }

    /// Draws a new key-space id (for an index) from the table ids.
    pub(super) fn new_space_id(&self) -> Result<u32> {
        let id = match self.kv.meta_get(catalog::NEXT_TABLE_ID)? {
            Some(v) => u32::from_be_bytes(v.as_slice().try_into().map_err(|_| StoreError::Corrupt("next table id".into()))?),
            None => 1,
        };
        if id >= keys::OUTSIDE_BIT {
            return Err(StoreError::NotSupported("more than 2^31 tables and indexes created over the store's life".into()));
        }
        self.kv.meta_write(&[(catalog::NEXT_TABLE_ID.to_vec(), Some((id + 1).to_be_bytes().to_vec()))], &[])?;
        Ok(id)
    }

    /// At open: an index whose build a crash cut short is dropped, with what entries it had.
    pub(super) fn drop_unready_indexes(&self) -> Result<()> {
        let tables: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        for t in tables {
            let unready: Vec<IndexDef> = t.def.read().indexes.iter().filter(|i| !i.ready).cloned().collect();
            for ix in unready {
                self.remove_index(&t, &ix.name, true)?;
            }
        }
        Ok(())
    }

    /// Removes index `name` from `t`'s definition, and its entries unless they are kept for an undo.
    pub(super) fn remove_index(&self, t: &Table, name: &str, entries: bool) -> Result<IndexDef> {
        let _ddl = self.ddl.lock();
        let ix = t.def.read().indexes.iter().find(|i| i.name == name).cloned().ok_or_else(|| StoreError::UnknownIndex(name.into()))?;
        self.alter_locked(t, |d| {
            d.indexes.retain(|i| i.name != name);
            Ok(())
        })?;
        if entries {
            let record = [(catalog::partitions_key(ix.id), None)];
            self.kv.meta_write(&record, &[(keys::table_prefix(ix.id).to_vec(), keys::table_end(ix.id).to_vec())])?;
            t.index_parts.write().remove(&ix.id);
        }
        Ok(ix)
    }
}

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

    /// Writes the entries of the rows stored now. For a unique index each entry is checked first against
    /// the entries written (by this build, in its batch, or by writers meanwhile) whose row still holds it:
    /// a second row with the same values fails the build (`UniqueViolation`).
    fn fill_index(&self, t: &Table, ix: &IndexDef, watch: &dyn BuildWatch) -> Result<u64> {
        let def = t.def.read().clone();
        let total = t.parts.infos().iter().map(|p| p.approx_rows.max(0) as u64).sum::<u64>();
        watch.progress(BuildPhase::Scanning, 0, total);
        let reader = self.inner.reader();
        let mut cursor = reader.scan(keys::table_prefix(t.id).to_vec(), keys::table_end(t.id).to_vec(), false);
        cursor.seek_to_first();
        let mut batch = Batch::default();
        let mut in_batch: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
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
            if e.unique {
                let other = match in_batch.get(&e.key) {
                    Some(o) => Some(o.clone()),
                    None => reader.get(&e.key)?,
                };
                if let Some(other) = other.filter(|o| o != row_key) {
                    if still_holds(t, reader, &def, ix, &other, &e)? {
                        return Err(StoreError::UniqueViolation {
                            table: def.name.clone(),
                            index: ix.name.clone(),
                            columns: ix.columns.clone(),
                            values: e.values,
                        });
                    }
                }
                in_batch.insert(e.key.clone(), row_key.to_vec());
            }
            batch.put(&e.key, row_key);
            // A build's entries count in the index's size, not in its write rate (they are no load of users').
            let (partition, entries) = entry_partition(t, ix, &e.key, cursor.key());
            partition.add((e.key.len() + row_key.len()) as i64, entries, 0);
            if batch.puts.len() == BUILD_BATCH {
                self.inner.kv.write(std::mem::take(&mut batch))?;
                in_batch.clear();
            }
            cursor.advance(false);
        }
        cursor.status()?;
        if !batch.puts.is_empty() {
            self.inner.kv.write(batch)?;
        }
        Ok(rows as u64)
    }

    /// Drops index `name` of `table` and its entries.
    pub fn drop_index(&self, table: &str, name: &str) -> Result<()> {
        let t = self.inner.table(table)?;
        self.inner.remove_index(&t, name, true).map(|_| ())
    }
}
