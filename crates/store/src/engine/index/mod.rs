//! Secondary indexes (each has a key space of its own, ordered by the index's columns; the encoding of
//! entries is drawn in `encoding.rs`, the build is in `build.rs`). An entry is written in the same engine
//! transaction as its row, so a read through an index sees exactly what the table holds, inside
//! transactions too.
//!
//! An entry holds the row's newest stored value of each column. Versions only ever hide from the newest
//! down (a ttl hides a cell's oldest versions first, `max_versions` its oldest), so the newest stored
//! value is the visible one unless nothing of the column is visible. Entries therefore cover every row a
//! read could find, and may also name rows whose values have since expired, whose entries stay until
//! the row is written again, or a compaction drops those values and a sweep (`engine/sweep.rs`) the entry:
//! a read through an index checks each row it finds against its condition.

use super::*;
use crate::catalog::IndexDef;

mod build;
mod encoding;

pub use build::{BuildPhase, BuildWatch};
pub(super) use encoding::decode_entry;
use encoding::*;

/// The entry of a row: its key columns `pk` (encoded: `row_key`) and its stored cells. A unique index's
/// entry without NULLs is its values alone, so that two rows with them meet at one key (a concurrent
/// writer of the same values then conflicts); one with a NULL is followed by the row key, as in any index,
/// but in a NULLS NOT DISTINCT index, whose NULLs meet as values do. Its value is the row key, then the
/// INCLUDE columns' values.
/// `data_key` is the row's whole key, to read an indexed value stored out of line from `src`.
pub(super) fn entry_key(
    def: &TableDef,
    ix: &IndexDef,
    pk: &[PkValue],
    row_key: &[u8],
    row: &StoredRow<Stored>,
    src: &dyn Read,
    data_key: &[u8],
) -> Result<Entry> {
    let values = column_values(def, &ix.columns, pk, row, src, data_key)?;
    let mut key = prefix(ix, &values);
    let unique = ix.unique && (ix.nulls_not_distinct || values.iter().all(Option::is_some));
    if !unique {
        key.extend_from_slice(row_key);
    }
    let mut value = row_key.to_vec();
    if !ix.include.is_empty() {
        encode_included(&mut value, &column_values(def, &ix.include, pk, row, src, data_key)?);
    }
    Ok(Entry { key, value, unique, values })
}

/// One row's entry in one index.
#[derive(PartialEq)]
pub(super) struct Entry {
    pub(super) key: Vec<u8>,
    pub(super) value: Vec<u8>,
    /// The key is the values alone (a unique index's, without NULLs): other rows may claim it.
    unique: bool,
    values: Vec<Option<Value>>,
}

impl Entry {
    fn bytes(&self) -> i64 {
        (self.key.len() + self.value.len()) as i64
    }
}

/// The newest stored values of `columns` (key or attribute ones) of a row.
fn column_values(
    def: &TableDef,
    columns: &[String],
    pk: &[PkValue],
    row: &StoredRow<Stored>,
    src: &dyn Read,
    data_key: &[u8],
) -> Result<Vec<Option<Value>>> {
    columns
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

/// The row key an entry's value starts with.
pub(super) fn row_part<'v>(t: &Table, value: &'v [u8]) -> Result<&'v [u8]> {
    Ok(&value[..keys::prefix_len(value, &t.pk_types, t.pk_types.len())?])
}

/// Whether the entry value `other` names the row whose key is `row_key`. Encoded keys of one table are
/// prefix-free, so a value that starts with a whole row key names that row.
fn names_row(other: &[u8], row_key: &[u8]) -> bool {
    other.starts_with(row_key)
}

/// Whether the row named by entry value `other` still holds `entry`'s values: the entry is a live claim
/// on them, not one left by a row that has changed since.
fn still_holds(t: &Table, src: &dyn Read, def: &TableDef, ix: &IndexDef, other: &[u8], entry: &Entry) -> Result<bool> {
    Ok(expected_value(t, src, def, ix, row_part(t, other)?, &entry.key)?.is_some())
}

/// The value entry `entry` should hold for the row whose key columns are `row_key` (encoded): `None` when
/// that row is not stored or makes another entry.
pub(super) fn expected_value(
    t: &Table,
    src: &dyn Read,
    def: &TableDef,
    ix: &IndexDef,
    row_key: &[u8],
    entry: &[u8],
) -> Result<Option<Vec<u8>>> {
    let pk = keys::decode_pk(row_key, &t.pk_types)?;
    let key = t.key(&pk)?;
    let Some(raw) = src.get(&key)? else { return Ok(None) };
    let e = entry_key(def, ix, &pk, row_key, &StoredRow::decode(&raw)?, src, &key)?;
    Ok((e.key == entry).then_some(e.value))
}

/// Index `name` of table `t`.
fn index_def(t: &Table, name: &str) -> Result<IndexDef> {
    t.def.read().indexes.iter().find(|i| i.name == name).cloned().ok_or_else(|| StoreError::UnknownIndex(name.into()))
}

/// What a walk of an index shows each entry: its key and value.
type Visit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> Result<()>;

/// Shows `visit` the entries of `ix` in `range` (backward if it says so), after entry `after`, at most
/// `limit`; returns the entry to resume after when the limit cut the walk short.
fn walk(src: &dyn Read, ix: &IndexDef, range: &IndexRange, after: Option<&[u8]>, limit: usize, visit: Visit) -> Result<Option<Vec<u8>>> {
    let (start, end) = bounds(ix, range);
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
    if limit == 0 {
        return Ok(cursor.valid().then(Vec::new));
    }
    let mut n = 0;
    while cursor.valid() {
        visit(cursor.key(), cursor.value())?;
        n += 1;
        if n == limit {
            // Where the next page resumes, if there is one: copied only here, not per entry.
            let last = cursor.key().to_vec();
            cursor.advance(backward);
            if cursor.valid() {
                return Ok(Some(last));
            }
            break;
        }
        cursor.advance(backward);
    }
    cursor.status()?;
    Ok(None)
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
        // The shared definition, not the lock held: the checks below take it again (`Table::key`), and a
        // second read of a fair lock deadlocks once a writer (DDL) waits between the two.
        let def = {
            let d = t.def.read();
            if d.indexes.is_empty() {
                return Ok(());
            }
            Arc::clone(&d)
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
                if !e.unique || self.txn.get_for_update(Space::Data, &e.key)?.is_some_and(|v| names_row(&v, row_key)) {
                    deletes.push((ix, e));
                }
            }
            if let Some(e) = after {
                if e.unique {
                    // Read for update: a concurrent writer of the same values conflicts at commit.
                    if let Some(other) = self.txn.get_for_update(Space::Data, &e.key)? {
                        if !names_row(&other, row_key) && still_holds(t, self.src(), &def, ix, &other, &e)? {
                            return Err(StoreError::UniqueViolation {
                                table: def.name.clone(),
                                index: ix.name.clone(),
                                columns: ix.columns.clone(),
                                values: e.values,
                            });
                        }
                    }
                }
                puts.push((ix, e));
            }
        }
        // The same key in both (an INCLUDE column changed) is deleted, then written again.
        for (ix, e) in deletes {
            self.txn.delete(Space::Data, &e.key)?;
            self.written += e.key.len() as u64;
            let (partition, rows) = entry_partition(t, ix, &e.key, key);
            count_delta(&mut self.deltas, t, partition, -e.bytes(), -rows);
        }
        for (ix, e) in puts {
            self.txn.put(Space::Data, &e.key, &e.value)?;
            self.written += e.bytes() as u64;
            let (partition, rows) = entry_partition(t, ix, &e.key, key);
            count_delta(&mut self.deltas, t, partition, e.bytes(), rows);
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
        let ix = index_def(t, index)?;
        let mut pks = Vec::new();
        let next = walk(src, &ix, range, after, limit, &mut |_, value| {
            pks.push(keys::decode_pk(value, &t.pk_types)?);
            Ok(())
        })?;
        Ok((pks, next))
    }

    /// As `index_pks`, the rows themselves as the entries hold them: their key, and the newest values of
    /// the index's key and INCLUDE columns (no versions: each cell's is 0). For a read that needs no other
    /// column of a table whose entries are never stale (`TableOptions::entries_exact`).
    pub(super) fn index_rows(
        &self,
        src: &dyn Read,
        t: &Table,
        index: &str,
        range: &IndexRange,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<(Vec<Row>, Option<Vec<u8>>)> {
        let (def, ix) = {
            let d = t.def.read();
            (d.primary_key.iter().map(|c| c.name.clone()).collect::<Vec<_>>(), index_def(t, index)?)
        };
        let mut rows = Vec::new();
        let next = walk(src, &ix, range, after, limit, &mut |key, value| {
            let row_key = row_part(t, value)?;
            let pk = keys::decode_pk(row_key, &t.pk_types)?;
            let (values, _) = decode_entry(&ix, key, &t.pk_types)?;
            let included = decode_included(&value[row_key.len()..], ix.include.len())?;
            let cells = ix.columns.iter().zip(values).chain(ix.include.iter().zip(included));
            let columns = cells
                .filter(|(name, _)| !def.contains(name))
                .filter_map(|(name, v)| v.map(|value| (name.clone(), vec![Cell { value, version: 0 }])))
                .collect();
            rows.push(Row { pk, columns });
            Ok(())
        })?;
        Ok((rows, next))
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
