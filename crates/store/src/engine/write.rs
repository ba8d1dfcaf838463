//! One write inside a transaction: reading the row it depends on, checking its condition, applying its
//! operations, and counting what it changed.

use super::*;

/// A stored row as a write reads it: long values stay out of line, unread.
type Decoded = StoredRow<Stored>;

/// The state of one write operation inside a transaction.
pub(super) struct WriteCtx<'a> {
    pub(super) txn: &'a dyn Transaction,
    /// The engine itself, for what a write does outside its transaction (drawing a sequence's values).
    pub(super) kv: &'a dyn Engine,
    pub(super) deltas: Vec<Delta>,
    pub(super) now: i64,
    /// Strings and binaries longer than this are written out of line (`StoreConfig::inline_value_bytes`).
    pub(super) inline_max: usize,
    /// Bytes of keys and values this write put in its transaction's write set (deletes count their key).
    pub(super) written: u64,
}

impl WriteCtx<'_> {
    pub(super) fn src(&self) -> &dyn Read {
        self.txn
    }

    pub(super) fn row_write(&mut self, t: &Table, w: &RowWrite) -> Result<WriteOutcome> {
        match w {
            RowWrite::Put { pk, cells, condition } => self.put_row(t, pk, cells, condition),
            RowWrite::Update { pk, ops, condition } => self.update_row(t, pk, ops, condition),
            RowWrite::Delete { pk, condition } => self.delete_row(t, pk, condition),
        }
    }

    /// Reads the row a write depends on: the raw bytes (for statistics) and what is visible of it.
    pub(super) fn read_for_write(&self, t: &Table, key: &[u8]) -> Result<(Option<Vec<u8>>, Option<Decoded>)> {
        let raw = self.txn.get_for_update(Space::Data, key)?;
        let visible = match &raw {
            Some(v) => StoredRow::decode(v)?.visible(t.rules(), self.now),
            None => None,
        };
        Ok((raw, visible))
    }

    pub(super) fn finish(&mut self, t: &Table, key: Vec<u8>, old: Option<Vec<u8>>, new: Option<StoredRow<Stored>>) -> Result<()> {
        self.index_row(t, &key, old.as_deref(), new.as_ref())?;
        let bytes = self.store_row(&key, old.as_deref(), new.as_ref())?;
        let rows = match (&old, &new) {
            (None, Some(_)) => 1,
            (Some(_), None) => -1,
            _ => 0,
        };
        self.deltas.push(Delta { partition: t.partition_of(&key), retired: t.retired.clone(), bytes, rows, writes: 1 });
        Ok(())
    }

    /// Writes a row's new bytes over `old` (or deletes it): long values go out of line under keys of their
    /// own, and the out-of-line values of `old` that the new row no longer holds are deleted with it.
    /// Returns the change in stored bytes, out-of-line values included.
    pub(super) fn store_row(&mut self, key: &[u8], old: Option<&[u8]>, new: Option<&StoredRow<Stored>>) -> Result<i64> {
        // Hidden versions' values too: a write drops what no read can see.
        let old_outside = old.map(row::outside_cells).transpose()?.unwrap_or_default();
        let old_len = old.map_or(0, |v| (v.len() + key.len()) as i64) + old_outside.iter().map(|o| o.2 as i64).sum::<i64>();
        let (new_len, new_outside) = match new {
            Some(row) => {
                let txn = self.txn;
                let mut spilled = false;
                let mut written = 0;
                let v = row.encode_spilling(self.inline_max, |column, version, bytes| {
                    spilled = true;
                    let k = keys::outside_key(key, column, version);
                    written += (k.len() + bytes.len()) as u64;
                    Ok(txn.put(Space::Data, &k, bytes)?)
                })?;
                self.txn.put(Space::Data, key, &v)?;
                self.written += written + (key.len() + v.len()) as u64;
                // Most rows have nothing out of line: no second pass over them.
                let outside = if spilled || row.has_outside() { row::outside_cells(&v)? } else { Vec::new() };
                ((v.len() + key.len()) as i64 + outside.iter().map(|o| o.2 as i64).sum::<i64>(), outside)
            }
            None => {
                if old.is_some() {
                    self.txn.delete(Space::Data, key)?;
                    self.written += key.len() as u64;
                }
                (0, Vec::new())
            }
        };
        for (column, version, _) in &old_outside {
            if !new_outside.iter().any(|(c, v, _)| c == column && v == version) {
                let k = keys::outside_key(key, column, *version);
                self.txn.delete(Space::Data, &k)?;
                self.written += k.len() as u64;
            }
        }
        Ok(new_len - old_len)
    }

    /// Fills auto-increment columns and validates the key.
    pub(super) fn resolve_pk(&mut self, t: &Table, pk: &[Option<PkValue>]) -> Result<Vec<PkValue>> {
        // Only which columns are generated: this runs for every written row, so no copy of the definition.
        let auto: Vec<bool> = t.def.read().primary_key.iter().map(|c| c.auto_increment).collect();
        if pk.len() != auto.len() {
            return Err(StoreError::PrimaryKeyArity { expected: auto.len(), got: pk.len() });
        }
        let mut out = Vec::with_capacity(pk.len());
        for (i, v) in pk.iter().enumerate() {
            match v {
                // A generated partition-key column draws from the table's sequence.
                Some(PkValue::Integer(n)) if auto[i] && i < t.partition_key_len => {
                    t.seq.raise(self.kv, *n)?;
                    out.push(PkValue::Integer(*n));
                }
                None if auto[i] && i < t.partition_key_len => out.push(PkValue::Integer(t.seq.next(self.kv)?)),
                // A value given for a generated column moves the counter past it, so that no value generated
                // later collides with it (a collision would roll the counter back with the failed insert,
                // and every later insert would draw the same value again).
                Some(PkValue::Integer(n)) if auto[i] => {
                    let mut pkey = Vec::new();
                    keys::encode_pk(&mut pkey, &out[..t.partition_key_len]);
                    self.raise_autoinc(t, &pkey, *n)?;
                    out.push(PkValue::Integer(*n));
                }
                Some(v) => out.push(v.clone()),
                None if auto[i] => {
                    let mut pkey = Vec::new();
                    keys::encode_pk(&mut pkey, &out[..t.partition_key_len]);
                    out.push(PkValue::Integer(self.next_autoinc(t, &pkey)?));
                }
                None => return Err(StoreError::MissingPrimaryKey(t.def.read().primary_key[i].name.clone())),
            }
        }
        t.check_pk(&out)?;
        Ok(out)
    }

    pub(super) fn next_autoinc(&mut self, t: &Table, partition_key: &[u8]) -> Result<i64> {
        let current = self.autoinc(t, partition_key)?;
        let next = current.checked_add(1).ok_or_else(|| StoreError::IncrementOverflow("auto-increment counter".into()))?;
        self.set_autoinc(t, partition_key, next)?;
        Ok(next)
    }

    /// Moves a partition's counter up to `at_least` (never down).
    pub(super) fn raise_autoinc(&mut self, t: &Table, partition_key: &[u8], at_least: i64) -> Result<()> {
        if self.autoinc(t, partition_key)? < at_least {
            self.set_autoinc(t, partition_key, at_least)?;
        }
        Ok(())
    }

    pub(super) fn autoinc(&mut self, t: &Table, partition_key: &[u8]) -> Result<i64> {
        let key = catalog::autoinc_key(t.id, partition_key);
        Ok(self
            .txn
            .get_for_update(Space::Meta, &key)?
            .map(|v| v.as_slice().try_into().map(i64::from_be_bytes).map_err(|_| StoreError::Corrupt("auto-increment counter".into())))
            .transpose()?
            .unwrap_or(0))
    }

    pub(super) fn set_autoinc(&mut self, t: &Table, partition_key: &[u8], value: i64) -> Result<()> {
        let key = catalog::autoinc_key(t.id, partition_key);
        self.txn.put(Space::Meta, &key, &value.to_be_bytes())?;
        Ok(())
    }

    /// `key`: the row's key, to read the values a column condition compares that are out of line.
    pub(super) fn check_condition(&self, cond: &Condition, key: &[u8], visible: Option<&StoredRow<Stored>>) -> Result<()> {
        match (cond.row, visible.is_some()) {
            (RowExistence::ExpectExist, false) => return Err(StoreError::RowNotFound),
            (RowExistence::ExpectNotExist, true) => return Err(StoreError::RowExists),
            _ => {}
        }
        if let Some(c) = &cond.column {
            let row = match visible {
                Some(r) => r.clone().resolve(|column, version| Ok(self.src().get(&keys::outside_key(key, column, version))?))?,
                None => StoredRow::default(),
            };
            if !eval_condition(c, &row) {
                return Err(StoreError::ConditionFailed("the column condition is false".into()));
            }
        }
        Ok(())
    }

    pub(super) fn put_row(&mut self, t: &Table, pk: &[Option<PkValue>], cells: &[CellWrite], cond: &Condition) -> Result<WriteOutcome> {
        let pk = self.resolve_pk(t, pk)?;
        let key = t.key(&pk)?;
        let row = t.new_row(cells, self.now)?.into_stored();
        let (raw, visible) = self.read_for_write(t, &key)?;
        self.check_condition(cond, &key, visible.as_ref())?;
        let existed = visible.is_some();
        self.finish(t, key, raw, Some(row))?;
        Ok(WriteOutcome { pk, existed, increments: Vec::new(), version: self.now })
    }

    /// A whole new row from its cells, each checked (name, size, version window).
    pub(super) fn insert_rows(&mut self, t: &Table, rows: &[(Vec<Option<PkValue>>, Vec<CellWrite>)]) -> Result<Vec<Vec<PkValue>>> {
        let mut pks = Vec::with_capacity(rows.len());
        let mut keys = Vec::with_capacity(rows.len());
        let mut values = Vec::with_capacity(rows.len());
        for (pk, cells) in rows {
            let pk = self.resolve_pk(t, pk)?;
            let row = t.new_row(cells, self.now)?;
            keys.push(t.key(&pk)?);
            pks.push(pk);
            values.push(row);
        }
        let existing = self.src().multi_get(&keys.iter().map(Vec::as_slice).collect::<Vec<_>>())?;
        let rules = t.rules();
        let mut batch_keys = std::collections::HashSet::with_capacity(keys.len());
        let values: Vec<StoredRow<Stored>> = values.into_iter().map(StoredRow::into_stored).collect();
        for (i, old) in existing.iter().enumerate() {
            let visible = match &old {
                Some(v) => StoredRow::decode(v)?.visible(rules, self.now).is_some(),
                None => false,
            };
            // A key twice in the same batch is a duplicate too.
            if visible || !batch_keys.insert(&keys[i]) {
                return Err(StoreError::RowExists);
            }
        }
        for ((key, row), old) in keys.into_iter().zip(values).zip(&existing) {
            self.index_row(t, &key, old.as_deref(), Some(&row))?;
            let size = self.store_row(&key, old.as_deref(), Some(&row))?;
            add_delta(&mut self.deltas, t, &key, size);
        }
        Ok(pks)
    }

    pub(super) fn update_row(&mut self, t: &Table, pk: &[PkValue], ops: &[(String, UpdateOp)], cond: &Condition) -> Result<WriteOutcome> {
        let key = t.key(pk)?;
        let max_versions = t.def.read().options.max_versions;
        let (raw, visible) = self.read_for_write(t, &key)?;
        self.check_condition(cond, &key, visible.as_ref())?;
        let existed = visible.is_some();
        // What each increment adds to: its column's newest visible value, read before the row changes.
        let bases: Vec<Option<std::result::Result<i64, &'static str>>> = ops
            .iter()
            .map(|(column, op)| match op {
                UpdateOp::Increment(_) | UpdateOp::Add(_) => {
                    visible.as_ref().and_then(|r| r.column(column)).and_then(|c| c.first()).map(|c| match &c.value {
                        Stored::Inline(Value::Integer(i)) => Ok(*i),
                        other => Err(other.type_name()),
                    })
                }
                _ => None,
            })
            .collect();
        // Start from what is visible: versions a read could not see are dropped now, so that deleting a
        // version never brings back one that max_versions or the ttl had hidden. The visible row itself
        // becomes the new one (a copy of a 100-column row was 3 % of a one-cell update's time).
        let mut row = visible.unwrap_or_default();
        let assigned = row.next_version(self.now);
        let mut newest_written: Option<i64> = None;
        let mut increments = Vec::new();
        for ((column, op), base) in ops.iter().zip(bases) {
            match op {
                UpdateOp::Put { value, version } => {
                    t.check_cell(column, value)?;
                    if let Some(v) = version {
                        t.check_version(column, *v, self.now)?;
                    }
                    let version = version.unwrap_or(assigned);
                    row.put_cell(column, version, Stored::Inline(value.clone()), max_versions);
                    newest_written = newest_written.max(Some(version));
                }
                UpdateOp::DeleteVersion(v) => {
                    validate_name(column)?;
                    row.column_mut(column).retain(|c| c.version != *v);
                }
                UpdateOp::DeleteAll => {
                    validate_name(column)?;
                    row.column_mut(column).clear();
                }
                UpdateOp::Increment(delta) | UpdateOp::Add(delta) => {
                    validate_name(column)?;
                    // A second increment of the same column in one call builds on the first.
                    let earlier = increments.iter().rev().find(|(c, _)| c == column).map(|(_, v)| *v);
                    let current = match (earlier, base) {
                        (Some(v), _) => v,
                        (None, Some(Ok(i))) => i,
                        (None, Some(Err(got))) => return Err(StoreError::IncrementNonInteger { column: column.clone(), got }),
                        (None, None) if matches!(op, UpdateOp::Increment(_)) => 0,
                        (None, None) => continue,
                    };
                    let next = current.checked_add(*delta).ok_or_else(|| StoreError::IncrementOverflow(column.clone()))?;
                    row.put_cell(column, assigned, Stored::Inline(Value::Integer(next)), max_versions);
                    newest_written = newest_written.max(Some(assigned));
                    increments.push((column.clone(), next));
                }
            }
        }
        // The row lives as long as the newest version written, or from now when no cell was written.
        row.marker = row.marker.max(newest_written.unwrap_or(self.now));
        row.remove_empty_columns();
        self.finish(t, key, raw, Some(row))?;
        Ok(WriteOutcome { pk: pk.to_vec(), existed, increments, version: assigned })
    }

    pub(super) fn delete_row(&mut self, t: &Table, pk: &[PkValue], cond: &Condition) -> Result<WriteOutcome> {
        let key = t.key(pk)?;
        let (raw, visible) = self.read_for_write(t, &key)?;
        self.check_condition(cond, &key, visible.as_ref())?;
        let existed = visible.is_some();
        self.finish(t, key, raw, None)?;
        Ok(WriteOutcome { pk: pk.to_vec(), existed, increments: Vec::new(), version: self.now })
    }
}

fn eval_condition(c: &ColumnCondition, row: &StoredRow) -> bool {
    match c {
        ColumnCondition::And(cs) => cs.iter().all(|c| eval_condition(c, row)),
        ColumnCondition::Or(cs) => cs.iter().any(|c| eval_condition(c, row)),
        ColumnCondition::Not(c) => !eval_condition(c, row),
        ColumnCondition::Single { column, op, value, pass_if_missing, latest_version_only } => {
            let cells = row.column(column).map(|c| c.as_slice()).unwrap_or(&[]);
            if cells.is_empty() {
                return *pass_if_missing;
            }
            let check = |v: &Value| {
                v.compare(value).is_some_and(|o| match op {
                    CompareOp::Eq => o.is_eq(),
                    CompareOp::Ne => o.is_ne(),
                    CompareOp::Lt => o.is_lt(),
                    CompareOp::Le => o.is_le(),
                    CompareOp::Gt => o.is_gt(),
                    CompareOp::Ge => o.is_ge(),
                })
            };
            if *latest_version_only {
                check(&cells[0].value)
            } else {
                cells.iter().any(|c| check(&c.value))
            }
        }
    }
}
