//! Writes: INSERT, UPDATE and DELETE as conditional engine calls, with RETURNING.

use super::upsert::{insert_error, Touched};
use super::*;

impl Executor<'_> {
    pub(super) fn pk_of(&self, t: &TableSchema, row: &SqlRow) -> Result<Vec<PkValue>> {
        t.pk.iter().map(|&c| row[c].to_pk(t.column_type(c)).ok_or_else(|| QueryError::Internal("row without its key".into()))).collect()
    }

    pub(super) fn returning(&self, r: &Option<Returning>, row: &SqlRow, out: &mut Vec<SqlRow>) -> Result<()> {
        if let Some(ret) = r {
            out.push(ret.exprs.iter().map(|e| e.eval(row, &self.ctx)).collect::<Result<_>>()?);
        }
        Ok(())
    }

    /// Reads one row by key, as a SQL row.
    pub(super) fn get(&self, t: &TableSchema, pk: &[PkValue]) -> Result<Option<SqlRow>> {
        let spec = ReadSpec::default();
        let Some(row) = self.access.get_row(&t.name, pk, &spec).map_err(store_err)? else { return Ok(None) };
        let mut out = Vec::new();
        self.sql_rows(t, row, &Versions::Latest, &mut out)?;
        Ok(out.pop())
    }

    /// Notes a value the engine drew for the key's generated partition-key column, if the row lacked one.
    fn note_drawn(&self, t: &TableSchema, given: &[Option<PkValue>], written: &[PkValue]) {
        if let Some(i) = drawn_key(t, given) {
            if let Some(PkValue::Integer(v)) = written.get(i) {
                self.drawn.set(Some(*v));
            }
        }
    }

    pub fn insert(&self, p: &InsertPlan) -> Result<(u64, Vec<SqlRow>)> {
        let t = &p.table;
        // CHECK constraints are checked before the row is written; a view's CHECK OPTION after, on the row
        // as written (its drawn key filled in), and only when it was (not by ON CONFLICT DO NOTHING), as in
        // PostgreSQL. The planner runs such a write in a transaction, which a failure rolls back.
        let split: (Vec<BoundCheck>, Vec<BoundCheck>);
        let (views, checks): (&[BoundCheck], &[BoundCheck]) = match p.checks.iter().any(|c| c.of_view) {
            true => {
                split = p.checks.iter().cloned().partition(|c| c.of_view);
                (&split.0, &split.1)
            }
            false => (&[], &p.checks),
        };
        let mut rows = Vec::with_capacity(p.rows.len());
        for exprs in &p.rows {
            let values = exprs.iter().map(|e| self.eval_const(e)).collect::<Result<Vec<_>>>()?;
            let row = prepare_row(t, &p.targets, values)?;
            check_row(t, checks, &row.row, &self.ctx)?;
            rows.push(row);
        }
        let mut returned = Vec::new();
        // Plain multi-row inserts: one existence check and one atomic write for all rows (through a view
        // WITH CHECK OPTION, row by row, each checked once written, as PostgreSQL reports the first failure).
        if matches!(p.on_conflict, OnConflict::Error) && rows.len() > 1 && views.is_empty() {
            let writes: Vec<(Vec<Option<PkValue>>, Vec<CellWrite>)> = rows.iter().map(|r| (r.pk.clone(), r.cells.clone())).collect();
            let pks = self.access.insert_rows(&t.name, &writes).map_err(|e| match e {
                StoreError::RowExists => QueryError::UniqueViolation(t.name.clone()),
                e => e.into(),
            })?;
            for (mut r, pk) in rows.into_iter().zip(pks) {
                self.note_drawn(t, &r.pk, &pk);
                r.fill_pk(t, &pk, self.ctx.now_us / 1000);
                self.child_written(t, &r.row, None)?;
                self.returning(&p.returning, &r.row, &mut returned)?;
            }
            return Ok((p.rows.len() as u64, returned));
        }
        let mut count = 0;
        let mut touched = Touched::default();
        for mut prepared in rows {
            self.interrupt.check()?;
            if let Some(existing) = self.arbiter_row(t, &p.on_conflict, &prepared.row)? {
                self.draw_unused(t, &prepared)?;
                count += self.on_existing(p, &prepared, existing, &mut touched, &mut returned)?;
                continue;
            }
            match self.access.put_row(&t.name, &prepared.pk, &prepared.cells, &Condition::expect_not_exist()) {
                Ok(outcome) => {
                    self.note_drawn(t, &prepared.pk, &outcome.pk);
                    touched.add(&p.on_conflict, &outcome.pk);
                    prepared.fill_pk(t, &outcome.pk, self.ctx.now_us / 1000);
                    check_row(t, views, &prepared.row, &self.ctx)?;
                    self.child_written(t, &prepared.row, None)?;
                    count += 1;
                    self.returning(&p.returning, &prepared.row, &mut returned)?;
                }
                Err(e) => {
                    if let Some(existing) = self.conflicting_row(p, &prepared, e)? {
                        count += self.on_existing(p, &prepared, existing, &mut touched, &mut returned)?;
                    }
                }
            }
        }
        Ok((count, returned))
    }

    /// Applies SET assignments to one existing row, which must then meet `checks`; returns the row as it
    /// is after.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply_update(
        &self,
        t: &TableSchema,
        pk: &[PkValue],
        before: &SqlRow,
        eval_row: &SqlRow,
        assignments: &[(usize, Expr)],
        version: Option<i64>,
        checks: &[BoundCheck],
    ) -> Result<SqlRow> {
        let mut ops = Vec::with_capacity(assignments.len());
        let mut after = before.clone();
        for (col, e) in assignments {
            let name = t.columns[*col].name.clone();
            // `n = n + k`: the engine's atomic increment, immune to concurrent writers. Not under a CHECK,
            // which must see the sum before it is written (the row was read in this transaction, so a
            // concurrent writer still conflicts at commit).
            if let (Some(k), None, true) = (increment_of(e, *col), version, checks.is_empty()) {
                // NULL + NULL-able: an increment of NULL is NULL, which the general path below gives.
                if let Some(k) = self.eval_const(&k)?.cast(SqlType::Int8)?.as_int() {
                    ops.push((name, UpdateOp::Add(k)));
                    continue;
                }
            }
            let v = t.fit(*col, e.eval(eval_row, &self.ctx)?)?;
            if v.is_null() && t.columns[*col].not_null {
                return Err(QueryError::NotNull { table: t.name.clone(), column: name });
            }
            after[*col] = v.clone();
            ops.push((
                name,
                match v.to_value() {
                    Some(value) => UpdateOp::Put { value, version },
                    None => UpdateOp::DeleteAll,
                },
            ));
        }
        check_row(t, checks, &after, &self.ctx)?;
        let outcome = self.access.update_row(&t.name, pk, &ops, &Condition::expect_exist()).map_err(store_err)?;
        for (name, v) in outcome.increments {
            if let Some(ci) = t.column_index(&name) {
                after[ci] = Datum::Int(v).cast(t.column_type(ci))?;
            }
        }
        after[t.columns.len()] = Datum::Int(version.unwrap_or(outcome.version));
        Ok(after)
    }

    /// An UPDATE that assigns key columns (their values evaluated over `eval_row`): the row moves to its new key, deleted and written again (its
    /// cells at the statement's version: the old versions stay behind with the old key). A row already at
    /// the new key is 23505, as in PostgreSQL.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn move_row(
        &self,
        t: &TableSchema,
        pk: &[PkValue],
        before: &SqlRow,
        eval_row: &SqlRow,
        assignments: &[(usize, Expr)],
        version: Option<i64>,
        checks: &[BoundCheck],
    ) -> Result<SqlRow> {
        let mut after = before.clone();
        for (col, e) in assignments {
            let v = t.fit(*col, e.eval(eval_row, &self.ctx)?)?;
            if v.is_null() && (t.columns[*col].not_null || t.is_pk(*col)) {
                return Err(QueryError::NotNull { table: t.name.clone(), column: t.columns[*col].name.clone() });
            }
            after[*col] = v;
        }
        check_row(t, checks, &after, &self.ctx)?;
        let new_pk = self.pk_of(t, &after)?;
        let cells: Vec<CellWrite> = t
            .attributes()
            .filter(|&i| !after[i].is_null())
            .map(|i| CellWrite { column: t.columns[i].name.clone(), value: after[i].to_value().unwrap(), version })
            .collect();
        if new_pk.as_slice() == pk {
            // The key stays: an update of the other columns.
            let rest: Vec<(usize, Expr)> = assignments.iter().filter(|(c, _)| !t.is_pk(*c)).cloned().collect();
            return self.apply_update(t, pk, before, eval_row, &rest, version, checks);
        }
        self.access.delete_row(&t.name, pk, &Condition::expect_exist()).map_err(store_err)?;
        let key: Vec<Option<PkValue>> = new_pk.iter().cloned().map(Some).collect();
        match self.access.put_row(&t.name, &key, &cells, &Condition::expect_not_exist()) {
            Ok(outcome) => {
                after[t.columns.len()] = Datum::Int(version.unwrap_or(outcome.version));
                Ok(after)
            }
            Err(e) => Err(insert_error(t, &after, e)),
        }
    }
}

/// Where in the key the engine draws a value for this row: its generated partition-key column, when the
/// row gives it none.
pub(super) fn drawn_key(t: &TableSchema, given: &[Option<PkValue>]) -> Option<usize> {
    let generated = t.pk[..t.partition_key_len].iter().position(|&c| t.columns[c].identity)?;
    given.get(generated).is_some_and(Option::is_none).then_some(generated)
}

/// 23514 unless `row` meets every one of its table's CHECK constraints: none is false (NULL passes, as in
/// PostgreSQL). A key the engine generates is not drawn yet: NULL here.
pub fn check_row(t: &TableSchema, checks: &[BoundCheck], row: &SqlRow, ctx: &EvalCtx) -> Result<()> {
    for c in checks {
        // A CHECK constraint fails only when false, a view's CHECK OPTION unless true (NULL too).
        let value = c.expr.eval(row, ctx)?;
        let failed = if c.of_view { value != Datum::Bool(true) } else { value == Datum::Bool(false) };
        if failed {
            let values: Vec<String> =
                (0..t.visible().len()).map(|i| row[i].to_pg_text(t.column_type(i)).unwrap_or_else(|| "null".into())).collect();
            let error = match c.of_view {
                true => QueryError::Engine { sqlstate: "44000", message: format!("new row violates check option for view \"{}\"", c.name) },
                false => QueryError::CheckViolation { table: t.name.clone(), constraint: c.name.clone() },
            };
            return Err(error.with_message(format!("Failing row contains ({}).", values.join(", "))));
        }
    }
    Ok(())
}

/// A row about to be inserted: its SQL values, key (generated columns `None`) and cells.
pub struct PreparedRow {
    pub row: SqlRow,
    pub pk: Vec<Option<PkValue>>,
    pub cells: Vec<CellWrite>,
    pub version: Option<i64>,
}

impl PreparedRow {
    /// Records the key the engine wrote (generated values included) and the version the cells got.
    fn fill_pk(&mut self, t: &TableSchema, pk: &[PkValue], now_ms: i64) {
        for (pos, &c) in t.pk.iter().enumerate() {
            self.row[c] = Datum::from_pk(&pk[pos]);
        }
        let n = t.columns.len();
        self.row[n] = self.version.or_else(|| (!self.cells.is_empty()).then_some(now_ms)).map(Datum::Int).unwrap_or(Datum::Null);
    }
}

/// Turns values for target columns (`_version` is `columns.len()`) into a row to insert: typed, with NOT
/// NULL checked and the cells to write.
pub fn prepare_row(t: &TableSchema, targets: &[usize], values: Vec<Datum>) -> Result<PreparedRow> {
    let n = t.columns.len();
    let mut row = vec![Datum::Null; n + 1];
    let mut version = None;
    for (v, &target) in values.into_iter().zip(targets) {
        if target == n {
            version = match v {
                Datum::Null => None,
                d => d.cast(SqlType::Int8)?.as_int(),
            };
        } else {
            row[target] = t.fit(target, v)?;
        }
    }
    for (i, c) in t.columns.iter().enumerate() {
        if row[i].is_null() && c.not_null && !c.identity {
            return Err(QueryError::NotNull { table: t.name.clone(), column: c.name.clone() });
        }
    }
    let pk = t.pk.iter().map(|&c| row[c].to_pk(t.column_type(c))).collect();
    let cells = t
        .attributes()
        .filter(|&i| !row[i].is_null())
        .map(|i| CellWrite { column: t.columns[i].name.clone(), value: row[i].to_value().unwrap(), version })
        .collect();
    Ok(PreparedRow { row, pk, cells, version })
}
