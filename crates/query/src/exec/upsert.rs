//! INSERT ... ON CONFLICT: finding the row a proposed row conflicts with through the arbiters, and what DO
//! NOTHING and DO UPDATE then do with it.
//!
//! As PostgreSQL's speculative insertion, the arbiter unique indexes are read before the row is written,
//! so a row that meets the primary key and an arbiter index at once is taken as the arbiter's conflict.
//! The primary key needs no read first: the engine's insert refuses an existing key itself.

use std::collections::HashSet;

use super::*;

/// The keys of the rows an `ON CONFLICT DO UPDATE` statement inserted or updated: PostgreSQL refuses to
/// update one of them a second time (21000), whose outcome would depend on the rows' order.
#[derive(Default)]
pub(super) struct Touched(HashSet<Vec<PkValue>>);

impl Touched {
    pub(super) fn add(&mut self, on_conflict: &OnConflict, pk: &[PkValue]) {
        if matches!(on_conflict, OnConflict::DoUpdate { .. }) {
            self.0.insert(pk.to_vec());
        }
    }
}

impl Executor<'_> {
    /// The row an arbiter unique index already holds the values of `row` under, if any. NULLs do not
    /// collide, except in a NULLS NOT DISTINCT index.
    pub(super) fn arbiter_row(&self, t: &Arc<TableSchema>, on_conflict: &OnConflict, row: &SqlRow) -> Result<Option<SqlRow>> {
        let arbiters = match on_conflict {
            OnConflict::DoNothing { arbiters: Some(a) } | OnConflict::DoUpdate { arbiters: a, .. } => a,
            _ => return Ok(None),
        };
        for &i in &arbiters.indexes {
            let ix = &t.indexes[i];
            let values: Vec<Datum> = ix.columns.iter().map(|&c| row[c].clone()).collect();
            if !ix.nulls_not_distinct && values.iter().any(Datum::is_null) {
                continue;
            }
            if let Some(found) = self.rows_where(t, &ix.columns, &values, Some(1))?.pop() {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// A proposed row an arbiter turned away before it was written still draws its generated key, as
    /// PostgreSQL evaluates the key's `nextval` default for every row proposed.
    pub(super) fn draw_unused(&self, t: &TableSchema, prepared: &PreparedRow) -> Result<()> {
        if let (Some(_), Some(store)) = (super::write::drawn_key(t, &prepared.pk), self.system) {
            self.drawn.set(Some(store.sequence_next(&t.name).map_err(store_err)?));
        }
        Ok(())
    }

    /// The row a refused write met, when ON CONFLICT takes the refusal over (`e` was raised by an arbiter);
    /// `Ok(None)`: it vanished meanwhile. Any other refusal is the statement's error.
    pub(super) fn conflicting_row(&self, p: &InsertPlan, prepared: &PreparedRow, e: StoreError) -> Result<Option<SqlRow>> {
        let t = &p.table;
        let taken = match (&p.on_conflict, &e) {
            (OnConflict::DoNothing { arbiters: None }, StoreError::RowExists | StoreError::UniqueViolation { .. }) => return Ok(None),
            (OnConflict::DoNothing { arbiters: Some(a) } | OnConflict::DoUpdate { arbiters: a, .. }, StoreError::RowExists) => a.key,
            (
                OnConflict::DoNothing { arbiters: Some(a) } | OnConflict::DoUpdate { arbiters: a, .. },
                StoreError::UniqueViolation { index, .. },
            ) => a.indexes.iter().any(|&i| t.indexes[i].name == *index),
            _ => false,
        };
        match e {
            _ if !taken => Err(insert_error(t, &prepared.row, e)),
            StoreError::RowExists => match prepared.pk.iter().cloned().collect::<Option<Vec<PkValue>>>() {
                Some(pk) => self.get(t, &pk),
                None => Ok(None),
            },
            // Another writer's row, come in since the arbiters were read.
            _ => self.arbiter_row(t, &p.on_conflict, &prepared.row),
        }
    }

    /// ON CONFLICT's action on `existing`, the row `prepared` conflicts with: the rows updated (0 or 1).
    pub(super) fn on_existing(
        &self,
        p: &InsertPlan,
        prepared: &PreparedRow,
        existing: SqlRow,
        touched: &mut Touched,
        returned: &mut Vec<SqlRow>,
    ) -> Result<u64> {
        let t = &p.table;
        let OnConflict::DoUpdate { assignments, filter, version, .. } = &p.on_conflict else { return Ok(0) };
        let pk = self.pk_of(t, &existing)?;
        if touched.0.contains(&pk) {
            return Err(QueryError::CardinalityViolation("ON CONFLICT DO UPDATE command cannot affect row a second time".into())
                .with_hint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values."));
        }
        // Row layout: existing columns, existing _version, then `excluded`'s columns and the version the
        // insert would have written at.
        let n = t.columns.len();
        let mut combined = existing.clone();
        combined.extend(prepared.row.iter().take(n).cloned());
        combined.push(Datum::Int(prepared.version.unwrap_or(self.ctx.now_us / 1000)));
        if let Some(f) = filter {
            if !f.eval_predicate(&combined, &self.ctx)? {
                return Ok(0);
            }
        }
        let version = match version {
            Some(e) => e.eval(&combined, &self.ctx)?.cast(SqlType::Int8)?.as_int(),
            None => None,
        };
        let updated = match assignments.iter().any(|(c, _)| t.is_pk(*c)) {
            true => self.move_row(t, &pk, &existing, &combined, assignments, version, &p.checks)?,
            false => self.apply_update(t, &pk, &existing, &combined, assignments, version, &p.checks)?,
        };
        touched.0.insert(pk);
        touched.0.insert(self.pk_of(t, &updated)?);
        self.child_written(t, &updated, Some(&existing))?;
        self.parent_changed(t, existing, Some(&updated))?;
        self.returning(&p.returning, &updated, returned)?;
        Ok(1)
    }
}

/// A row INSERT could not write: a key already held is PostgreSQL's 23505 naming the key's values
/// (`Key (a, b)=(x, 1) already exists.`).
pub(super) fn insert_error(t: &TableSchema, row: &SqlRow, e: StoreError) -> QueryError {
    match e {
        StoreError::RowExists => {
            let cols: Vec<&str> = t.pk.iter().map(|&c| t.columns[c].name.as_str()).collect();
            let vals: Vec<String> = t.pk.iter().map(|&c| row[c].to_pg_text(t.column_type(c)).unwrap_or_else(|| "null".into())).collect();
            QueryError::UniqueViolation(t.name.clone()).with_message(format!(
                "Key ({})=({}) already exists.",
                cols.join(", "),
                vals.join(", ")
            ))
        }
        e => e.into(),
    }
}
