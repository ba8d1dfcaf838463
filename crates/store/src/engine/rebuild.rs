//! Rebuilding a table: its rows moved under a new primary key made of their own columns (SQL's `ALTER
//! TABLE ... ADD PRIMARY KEY` on a table stored under a generated row id, which is how every pg_dump file
//! adds keys), or under the same key with columns renamed, or without the cells of a dropped column (before
//! its name is used again).
//!
//! 1. The old table is retired, under the commit gate held alone: every commit that wrote it from then on
//!    is refused (`TableBeingRebuilt`, 55006), so what it holds is final; reads go on.
//! 2. Its visible rows are read in key order and written, as a bulk load (bounded memory, duplicates found
//!    at commit), into a new table under a temporary name. Each row keeps its marker and its cells'
//!    versions; the new key's columns leave the cells and become the key (their latest values), and the
//!    renamed columns' cells take their new names, and the cells of the columns to drop are left out.
//! 3. One atomic catalog write drops the old table and gives the new one its name and the old one's
//!    generated-key counters.
//!
//! 4. The old table's indexes are built on the new one.
//!
//! On any failure before step 3 the new table is dropped and the old one taken back into service: nothing
//! is half done.
//! After a crash in step 2 the temporary table is left behind; the next rebuild of the same table drops it.

use super::*;
use crate::catalog::IndexDef;

/// Why rows could not move under the new key.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    /// A row has no value in a new key column (PostgreSQL: 23502, "contains null values").
    #[error("column \"{0}\" contains null values")]
    Null(String),
    /// Two rows share the new key (PostgreSQL: 23505); the key's values.
    #[error("duplicate key")]
    Duplicate(Vec<PkValue>),
    /// A value the conversion could not take (its caller's error).
    #[error("{0}")]
    Convert(Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A column whose cells are converted as the rows move (ALTER COLUMN TYPE): each version's value becomes
/// what `f` returns, or goes (`None`, a NULL). `f` is also given the row's other columns by name (key
/// columns included; an attribute's newest value), for a conversion that reads them (SQL's `USING a + b`).
/// A key column's value becomes the row's new key (a NULL there is [`RebuildError::Null`]; rows whose keys
/// now collide, [`RebuildError::Duplicate`]). An error stops the rebuild, which then leaves nothing done.
pub struct Convert<'a> {
    pub column: &'a str,
    #[allow(clippy::type_complexity)]
    pub f:
        &'a dyn Fn(&Value, &dyn Fn(&str) -> Option<Value>) -> std::result::Result<Option<Value>, Box<dyn std::error::Error + Send + Sync>>,
}

/// A key's value as a cell's.
fn pk_value(v: &PkValue) -> Value {
    match v {
        PkValue::Integer(v) => Value::Integer(*v),
        PkValue::String(v) => Value::String(v.clone()),
        PkValue::Binary(v) => Value::Binary(v.clone()),
    }
}

impl Store {
    /// Rebuilds table `def.name` under `def`'s primary key, whose columns are key or attribute columns of
    /// the table now; `columns` renames columns (key or attribute: `(old, Some(new))`) or drops their cells
    /// (`(old, None)`). `def`'s other attributes (options, metadata) replace the old ones.
    pub fn rebuild(&self, def: TableDef, columns: &[(String, Option<String>)]) -> std::result::Result<(), RebuildError> {
        self.rebuild_keeping(def, columns, None, false)
    }

    /// Rebuilds table `def.name` as `def` with the cells of one column converted (`Convert`).
    pub fn rebuild_converting(&self, def: TableDef, convert: &Convert) -> std::result::Result<(), RebuildError> {
        self.rebuild_keeping(def, &[], Some(convert), false)
    }

    /// `rebuild`; with `keep_old`, the old table is set aside (retired, under its internal name) instead of
    /// dropped, for a transaction's undo.
    pub(super) fn rebuild_keeping(
        &self,
        def: TableDef,
        columns: &[(String, Option<String>)],
        convert: Option<&Convert>,
        keep_old: bool,
    ) -> std::result::Result<(), RebuildError> {
        let name = def.name.clone();
        let old = self.inner.table(&name)?;
        let indexes = rebuilt_indexes(&old, columns);
        let def = TableDef { indexes: vec![], ..def };
        let temp = self.rebuild_begin(&old, &def)?;
        let moved =
            self.move_rows(&old, &temp, &def, columns, convert).and_then(|()| Ok(self.inner.replace_table(&name, &temp, keep_old)?));
        if moved.is_err() {
            self.rebuild_abandon(&old, &temp);
            return moved;
        }
        for ix in indexes {
            self.create_index(&name, ix)?;
        }
        Ok(())
    }

    /// Steps 1 and 2's start: the new table, empty, under a temporary name (one a crash left is dropped
    /// first), and the old one retired. Returns the temporary name.
    pub(super) fn rebuild_begin(&self, old: &Table, def: &TableDef) -> Result<String> {
        let temp = format!("tabula_rebuild_{}", old.id);
        match self.inner.drop_table(&temp) {
            Ok(()) | Err(StoreError::UnknownTable(_)) => {}
            Err(e) => return Err(e),
        }
        self.inner.create_table(TableDef { name: temp.clone(), ..def.clone() })?;
        let _exclusive = self.inner.commit_gate.write();
        old.retired.store(true, Ordering::SeqCst);
        Ok(temp)
    }

    /// A failed rebuild: the new table dropped, the old one taken back into service.
    pub(super) fn rebuild_abandon(&self, old: &Table, temp: &str) {
        let _ = self.inner.drop_table(temp);
        old.retired.store(false, Ordering::SeqCst);
    }

    /// A row without a value in a key column is not loaded; duplicates are reported before NULLs, as
    /// PostgreSQL builds the key's index before it checks NOT NULL.
    fn move_rows(
        &self,
        old: &Table,
        temp: &str,
        def: &TableDef,
        columns: &[(String, Option<String>)],
        convert: Option<&Convert>,
    ) -> std::result::Result<(), RebuildError> {
        let new = self.inner.table(temp)?;
        let mut load = self.bulk_load(temp)?;
        let mut null = None;
        self.each_moved_row(old, def, columns, convert, self.inner.reader(), None, |_, moved| {
            match moved {
                Ok((pk, row)) => load.add_stored(new.key(&pk)?, &row.into_stored())?,
                Err(column) => {
                    null.get_or_insert(column);
                }
            }
            Ok(false)
        })?;
        let duplicate_at = match load.commit() {
            Ok(()) => return null.map_or(Ok(()), |c| Err(RebuildError::Null(c))),
            Err(BulkError::Duplicate(pos)) => pos,
            Err(BulkError::Store(e)) => return Err(e.into()),
        };
        // The load names the first row it could not insert: read the rows again up to it for its key.
        let (mut pos, mut key) = (0, Vec::new());
        self.each_moved_row(old, def, columns, convert, self.inner.reader(), None, |_, moved| {
            let Ok((pk, _)) = moved else { return Ok(false) };
            pos += 1;
            if pos - 1 == duplicate_at {
                key = pk;
                return Ok(true);
            }
            Ok(false)
        })?;
        Err(RebuildError::Duplicate(key))
    }

    /// Calls `f` with each visible row of `old` in key order as `src` reads it, from key `from` on, until it
    /// answers true: the row's old key, and its new key and the row without the key's columns, or the first
    /// key column the row has no value in.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn each_moved_row(
        &self,
        old: &Table,
        def: &TableDef,
        columns: &[(String, Option<String>)],
        convert: Option<&Convert>,
        src: &dyn Read,
        from: Option<Vec<u8>>,
        mut f: impl FnMut(&[u8], Moved) -> Result<bool>,
    ) -> std::result::Result<(), RebuildError> {
        let (rules, now) = (old.rules(), self.inner.config.clock.now_ms());
        let renamed = |n: &str| -> Option<String> {
            match columns.iter().find(|(old, _)| old == n) {
                Some((_, new)) => new.clone(),
                None => Some(n.to_string()),
            }
        };
        let old_key: Vec<String> = old.def.read().primary_key.iter().map(|c| renamed(&c.name).unwrap_or_else(|| c.name.clone())).collect();
        let reader = src;
        let lower = from.unwrap_or_else(|| keys::table_prefix(old.id).to_vec());
        let mut cursor = reader.scan(lower, keys::table_end(old.id).to_vec(), false);
        cursor.seek_to_first();
        while cursor.valid() {
            if let Some(row) = StoredRow::decode(cursor.value())?.visible(rules, now) {
                // Read whole: the new table's rows keep their long values under keys of their own.
                let key = cursor.key();
                let mut row = row.resolve(|c, v| Ok(reader.get(&keys::outside_key(key, c, v))?))?;
                if !columns.is_empty() {
                    row.columns =
                        std::mem::take(&mut row.columns).into_iter().filter_map(|(n, cells)| Some((renamed(&n)?, cells))).collect();
                    // Stored rows keep their columns sorted by name.
                    row.columns.sort_by(|a, b| a.0.cmp(&b.0));
                }
                let mut kept = Kept { names: &old_key, values: old.decode_pk(cursor.key())? };
                // The row's columns as they were, for a conversion that reads others.
                let before = convert.map(|_| (row.columns.clone(), kept.values.clone()));
                let other = |name: &str| -> Option<Value> {
                    let (columns, key) = before.as_ref()?;
                    if let Some(i) = old_key.iter().position(|n| n == name) {
                        return Some(pk_value(&key[i]));
                    }
                    let (_, cells) = columns.iter().find(|(n, _)| n == name)?;
                    cells.first().map(|c| c.value.clone())
                };
                if let Some(c) = convert {
                    if let Some(i) = row.columns.iter().position(|(n, _)| n == c.column) {
                        let mut cells = Vec::new();
                        for cell in std::mem::take(&mut row.columns[i].1) {
                            if let Some(value) = (c.f)(&cell.value, &other).map_err(RebuildError::Convert)? {
                                cells.push(Cell { version: cell.version, value });
                            }
                        }
                        if cells.is_empty() {
                            row.columns.remove(i);
                        } else {
                            row.columns[i].1 = cells;
                        }
                    }
                }
                // A key column converted: its value, as the new key's type holds it.
                if let Some(c) = convert {
                    if let Some(i) = old_key.iter().position(|n| n == c.column) {
                        let value = pk_value(&kept.values[i]);
                        let ty = def.primary_key.iter().find(|k| k.name == c.column).map(|k| k.ty);
                        kept.values[i] = match ((c.f)(&value, &other).map_err(RebuildError::Convert)?, ty) {
                            (None, _) => return Err(RebuildError::Null(c.column.to_string())),
                            (Some(Value::Integer(v)), Some(PkType::Integer)) => PkValue::Integer(v),
                            (Some(Value::String(v)), Some(PkType::String)) => PkValue::String(v),
                            (Some(Value::Binary(v)), Some(PkType::Binary)) => PkValue::Binary(v),
                            (Some(v), ty) => {
                                let expected = ty.map_or("none", |t| t.name());
                                return Err(
                                    StoreError::PrimaryKeyType { column: c.column.to_string(), expected, got: v.type_name() }.into()
                                );
                            }
                        };
                    }
                }
                if f(key, new_key(def, &kept, row)?)? {
                    return Ok(());
                }
            }
            cursor.advance(false);
        }
        cursor.status().map_err(StoreError::from)?;
        Ok(())
    }
}

/// The indexes of `old`, to build again over its moved rows, on their columns' new names (an index of a
/// dropped column was dropped with it).
pub(super) fn rebuilt_indexes(old: &Table, columns: &[(String, Option<String>)]) -> Vec<IndexDef> {
    old.def
        .read()
        .indexes
        .iter()
        .filter_map(|ix| {
            let renamed = |names: &[String]| -> Option<Vec<String>> {
                let new_name = |c: &String| match columns.iter().find(|(o, _)| o == c) {
                    Some((_, new)) => new.clone(),
                    None => Some(c.clone()),
                };
                names.iter().map(new_name).collect()
            };
            let (columns, include) = (renamed(&ix.columns)?, renamed(&ix.include)?);
            Some(IndexDef { columns, include, id: 0, ready: false, ..ix.clone() })
        })
        .collect()
}

/// A row under its new key, with the key's columns out of its cells; or the key column it has no value in.
pub(super) type Moved = std::result::Result<(Vec<PkValue>, StoredRow), String>;

/// A row's old key: its columns' names and values.
struct Kept<'a> {
    names: &'a [String],
    values: Vec<PkValue>,
}

/// The row's key under `def`: the old key's values for its columns, its cells' latest values for others.
fn new_key(def: &TableDef, old: &Kept, mut row: StoredRow) -> Result<Moved> {
    let mut pk = Vec::with_capacity(def.primary_key.len());
    for c in &def.primary_key {
        if let Some(i) = old.names.iter().position(|n| *n == c.name) {
            pk.push(old.values[i].clone());
            continue;
        }
        let Some(i) = row.columns.iter().position(|(n, _)| *n == c.name) else { return Ok(Err(c.name.clone())) };
        let (_, cells) = row.columns.remove(i);
        pk.push(match (c.ty, cells.into_iter().next().map(|cell| cell.value)) {
            (PkType::Integer, Some(Value::Integer(v))) => PkValue::Integer(v),
            (PkType::String, Some(Value::String(v))) => PkValue::String(v),
            (PkType::Binary, Some(Value::Binary(v))) => PkValue::Binary(v),
            (_, None) => return Ok(Err(c.name.clone())),
            (_, Some(v)) => return Err(StoreError::PrimaryKeyType { column: c.name.clone(), expected: c.ty.name(), got: v.type_name() }),
        });
    }
    Ok(Ok((pk, row)))
}

impl Inner {
    /// Drops table `name` and gives table `with` its name, in one atomic write.
    pub(super) fn replace_table(&self, name: &str, with: &str, keep_old: bool) -> Result<()> {
        let _ddl = self.ddl.lock();
        let (old, new) = (self.table(name)?, self.table(with)?);
        let mut def = TableDef::clone(&new.def.read());
        def.name = name.to_string();
        let aside = pending::aside_name(old.id);
        let (mut writes, gone) = if keep_old {
            let mut old_def = TableDef::clone(&old.def.read());
            old_def.name = aside.clone();
            (vec![(catalog::table_key(&aside), Some(old_def.encode(old.id)))], vec![])
        } else {
            (self.drop_writes(&old, name)?, keys::table_ranges(old.id).to_vec())
        };
        // The generated keys' counters go on where the old table's were.
        let counters = catalog::autoinc_key(old.id, &[]);
        for (k, v) in self.kv.meta_scan(&counters)? {
            writes.push((catalog::autoinc_key(new.id, &k[counters.len()..]), Some(v)));
        }
        writes.push((catalog::table_key(with), None));
        writes.push((catalog::table_key(name), Some(def.encode(new.id))));
        self.kv.meta_write(&writes, &gone)?;
        *new.def.write() = Arc::new(def);
        let mut tables = self.tables.write();
        tables.remove(with);
        tables.insert(name.to_string(), new);
        if keep_old {
            Arc::make_mut(&mut old.def.write()).name = aside.clone();
            tables.insert(aside, old);
        } else {
            self.rules.write().remove(&old.id);
        }
        Ok(())
    }
}
