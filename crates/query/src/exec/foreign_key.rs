//! FOREIGN KEYs on the write path. Each row a statement writes into a table with foreign keys, and each
//! referenced value it takes away, leaves a check ([`FkCheck`]); the session runs the checks at the end of
//! the statement, or at COMMIT for a deferred constraint, against what the transaction then holds (so a
//! row may reference one the same statement writes later). ON DELETE and ON UPDATE actions act at once,
//! as in PostgreSQL, but for ON UPDATE actions within a table's own rows, which act at the statement's end.
//!
//! Concurrent transactions, where PostgreSQL's row locks would make one wait, fail one of the two with
//! 40001 instead, in either order of commit: a check that finds its parent shares it
//! ([`tabula_store::Access::share_row`]), so a transaction that removes the parent and commits first fails
//! the child's commit; and a transaction that takes referenced values away guards their row
//! ([`tabula_store::Access::guard_row`]), so a child committed since its snapshot fails its commit.

use super::*;
use crate::schema::{FkAction, ForeignKey};

#[derive(Debug, Clone)]
pub enum FkCheck {
    /// The row of `table` with key `pk` holds foreign key `fk`: if it still does, its parent must exist.
    Child { table: Arc<TableSchema>, fk: usize, pk: Vec<PkValue> },
    /// Values referenced by foreign key `fk` of `table` left its parent: unless a parent row holds them
    /// again, no row of `table` may reference them.
    Parent { table: Arc<TableSchema>, fk: usize, values: Vec<Datum> },
}

/// A row of `table` that changed (`after`) or went (`None`), for the foreign keys that reference it;
/// `only`: the one foreign key of `table` on itself to act on (an action put off to the statement's end).
#[derive(Debug, Clone)]
pub struct Change {
    table: Arc<TableSchema>,
    before: SqlRow,
    after: Option<SqlRow>,
    only: Option<usize>,
}

impl FkCheck {
    pub fn foreign_key(&self) -> &ForeignKey {
        match self {
            FkCheck::Child { table, fk, .. } | FkCheck::Parent { table, fk, .. } => &table.foreign_keys[*fk],
        }
    }
}

/// Positions of named columns of `t`.
fn positions(t: &TableSchema, names: &[String]) -> Result<Vec<usize>> {
    names.iter().map(|n| t.column_index(n).ok_or_else(|| QueryError::UndefinedColumn(n.clone()))).collect()
}

/// `Key (a, b)=(1, x)` as PostgreSQL's DETAILs print it.
fn key_text(t: &TableSchema, cols: &[usize], values: &[Datum]) -> String {
    let names: Vec<&str> = cols.iter().map(|&c| t.column_name(c)).collect();
    let vals: Vec<String> =
        cols.iter().zip(values).map(|(&c, v)| v.to_pg_text(t.column_type(c)).unwrap_or_else(|| "null".into())).collect();
    format!("Key ({})=({})", names.join(", "), vals.join(", "))
}

impl Executor<'_> {
    pub(super) fn catalog(&self) -> Result<&dyn crate::planner::Catalog> {
        self.catalog.ok_or_else(|| QueryError::Internal("foreign keys need the catalog".into()))
    }

    /// The rows of `t` whose columns `cols` hold `values` (of another table's columns: cast to these; NULL
    /// matches NULL), read by the path the planner would choose, up to `limit`.
    pub(super) fn rows_where(&self, t: &Arc<TableSchema>, cols: &[usize], values: &[Datum], limit: Option<u64>) -> Result<Vec<SqlRow>> {
        let mut conjuncts = Vec::with_capacity(cols.len());
        for (&c, v) in cols.iter().zip(values) {
            let ty = t.column_type(c);
            let column = Expr::Column { index: c, ty, name: t.column_name(c).to_string() };
            if v.is_null() {
                conjuncts.push(Expr::IsNull { expr: Box::new(column), negated: false });
                continue;
            }
            let value = Expr::Literal(v.clone().cast(ty)?, ty);
            conjuncts.push(Expr::Binary { op: crate::expr::BinOp::Eq, left: Box::new(column), right: Box::new(value) });
        }
        let (access, residual) = crate::planner::choose_access(t, conjuncts);
        let limit = limit.map(|l| Expr::Literal(Datum::Int(l as i64), SqlType::Int8));
        let scan = Scan {
            table: t.clone(),
            access,
            filter: Expr::and_all(residual),
            limit,
            versions: Versions::Latest,
            columns: None,
            ranks: vec![],
        };
        let mut rows = Vec::new();
        self.scan(&scan, |r| {
            rows.push(r);
            Ok(true)
        })?;
        Ok(rows)
    }

    /// The values of columns `names` of `row` of `t`; `None` when one is NULL (MATCH SIMPLE: such a row
    /// references nothing).
    fn key_of(t: &TableSchema, names: &[String], row: &SqlRow) -> Result<Option<Vec<Datum>>> {
        let values: Vec<Datum> = positions(t, names)?.into_iter().map(|c| row[c].clone()).collect();
        Ok((!values.iter().any(Datum::is_null)).then_some(values))
    }

    /// Whether some of columns `names` of `row` are NULL and some are not.
    fn mixed(t: &TableSchema, names: &[String], row: &SqlRow) -> Result<bool> {
        let nulls = positions(t, names)?.into_iter().filter(|&c| row[c].is_null()).count();
        Ok(nulls > 0 && nulls < names.len())
    }

    /// A row of `t` was written (`before`: it held these values before): the checks of its foreign keys
    /// whose values it now holds anew.
    pub(super) fn child_written(&self, t: &Arc<TableSchema>, row: &SqlRow, before: Option<&SqlRow>) -> Result<()> {
        for (i, fk) in t.foreign_keys.iter().enumerate() {
            let Some(now) = Self::key_of(t, &fk.columns, row)? else {
                // MATCH FULL refuses some NULLs among the values (at the check, which may be deferred).
                if fk.match_full && Self::mixed(t, &fk.columns, row)? {
                    self.pending.borrow_mut().push(FkCheck::Child { table: t.clone(), fk: i, pk: self.pk_of(t, row)? });
                }
                continue;
            };
            if before.map(|b| Self::key_of(t, &fk.columns, b)).transpose()?.flatten().as_ref() == Some(&now) {
                continue;
            }
            self.pending.borrow_mut().push(FkCheck::Child { table: t.clone(), fk: i, pk: self.pk_of(t, row)? });
        }
        Ok(())
    }

    /// A row of `t` changed from `before` to `after`, or was deleted (`None`): what the foreign keys that
    /// reference `t` need of the values it gave up, by their ON DELETE or ON UPDATE action. CASCADE deletes
    /// the referencing rows, or gives them the new values, and goes on from each (one at a time, not by
    /// recursion: chains may be long); SET NULL clears their columns, SET DEFAULT gives them their DEFAULTs
    /// (and leaves a check of those); NO ACTION and RESTRICT leave a check.
    ///
    /// An ON UPDATE action of a foreign key within `t`'s own rows (a tree's parent column) is put off to
    /// the statement's end ([`Executor::settle_cascades`]), as PostgreSQL's runs after the UPDATE: done at
    /// once, it would change rows the UPDATE has still to reach, which would then write their old values.
    pub(super) fn parent_changed(&self, t: &Arc<TableSchema>, before: SqlRow, after: Option<&SqlRow>) -> Result<()> {
        self.propagate(vec![Change { table: t.clone(), before, after: after.cloned(), only: None }])
    }

    /// At the statement's end: the ON UPDATE actions put off by [`Executor::parent_changed`].
    pub fn settle_cascades(&self) -> Result<()> {
        let put_off = std::mem::take(&mut *self.cascades.borrow_mut());
        if put_off.is_empty() {
            return Ok(());
        }
        self.settling.set(true);
        let r = self.propagate(put_off);
        self.settling.set(false);
        r
    }

    fn propagate(&self, mut work: Vec<Change>) -> Result<()> {
        while let Some(Change { table: t, before, after, only }) = work.pop() {
            self.interrupt.check()?;
            let mut guarded = false;
            for (child, i) in self.catalog()?.referencing(&t.name)? {
                let own = child.name == t.name;
                if only.is_some_and(|o| !own || o != i) {
                    continue;
                }
                let fk = &child.foreign_keys[i];
                let Some(values) = Self::key_of(&t, &fk.parent_columns, &before)? else { continue };
                if let Some(a) = &after {
                    if Self::key_of(&t, &fk.parent_columns, a)?.as_ref() == Some(&values) {
                        continue;
                    }
                }
                // Rows referencing these values may be committed by others after this snapshot, which then
                // finds none of them: the commit fails if one was (`guard_row`), whatever the action.
                if !guarded {
                    self.access.guard_row(&t.name, &self.pk_of(&t, &before)?).map_err(store_err)?;
                    guarded = true;
                }
                let cols = positions(&child, &fk.columns)?;
                let action = if after.is_none() { fk.on_delete } else { fk.on_update };
                let acts = !matches!(action, FkAction::NoAction | FkAction::Restrict);
                if own && after.is_some() && acts && !self.settling.get() {
                    self.cascades.borrow_mut().push(Change {
                        table: t.clone(),
                        before: before.clone(),
                        after: after.clone(),
                        only: Some(i),
                    });
                    continue;
                }
                match (&after, action) {
                    (None, FkAction::Cascade) => {
                        for r in self.rows_where(&child, &cols, &values, None)? {
                            let pk = self.pk_of(&child, &r)?;
                            match self.access.delete_row(&child.name, &pk, &Condition::expect_exist()) {
                                Ok(_) => work.push(Change { table: child.clone(), before: r, after: None, only: None }),
                                Err(StoreError::RowNotFound) => {}
                                Err(e) => return Err(e.into()),
                            }
                        }
                    }
                    // ON UPDATE CASCADE, SET NULL and SET DEFAULT: the referencing columns take the parent's
                    // new values, NULLs or their DEFAULTs, and the rows they change go on to their own
                    // referencing rows.
                    (Some(a), FkAction::Cascade) => {
                        let new_values: Vec<Datum> = positions(&t, &fk.parent_columns)?.into_iter().map(|c| a[c].clone()).collect();
                        for r in self.rows_where(&child, &cols, &values, None)? {
                            let changed = self.set_columns(&child, &r, &cols, &new_values)?;
                            work.push(Change { table: child.clone(), before: r, after: Some(changed), only: None });
                        }
                    }
                    (_, action @ (FkAction::SetNull | FkAction::SetDefault)) => {
                        // NULLs, or the columns' DEFAULTs (evaluated once, as for one statement).
                        let mut planner = crate::planner::Planner::new(self.catalog()?, Vec::new());
                        let mut new_values = Vec::with_capacity(cols.len());
                        for &c in &cols {
                            let value = match (action, planner.column_default(&child, c)?) {
                                (FkAction::SetDefault, Some(e)) => child.columns[c].fit(e.eval(&[], &self.ctx)?)?,
                                _ => Datum::Null,
                            };
                            if value.is_null() && (child.columns[c].not_null || child.is_pk(c)) {
                                return Err(QueryError::NotNull { table: child.name.clone(), column: child.columns[c].name.clone() });
                            }
                            new_values.push(value);
                        }
                        for r in self.rows_where(&child, &cols, &values, None)? {
                            let changed = self.set_columns(&child, &r, &cols, &new_values)?;
                            // The defaults must reference a row of the parent, as any written values do.
                            if action == FkAction::SetDefault {
                                self.pending.borrow_mut().push(FkCheck::Child {
                                    table: child.clone(),
                                    fk: i,
                                    pk: self.pk_of(&child, &changed)?,
                                });
                            }
                            // The row's new values are a change of a parent in turn, for what references them.
                            work.push(Change { table: child.clone(), before: r, after: Some(changed), only: None });
                        }
                    }
                    _ => self.pending.borrow_mut().push(FkCheck::Parent { table: child.clone(), fk: i, values }),
                }
            }
        }
        Ok(())
    }

    /// Gives row `r` of `t` the values `values` in columns `cols`, in place; or, where one is a key column,
    /// moves the row to its new key (23505 if a row is there). The row as it is now.
    fn set_columns(&self, t: &TableSchema, r: &SqlRow, cols: &[usize], values: &[Datum]) -> Result<SqlRow> {
        let pk = self.pk_of(t, r)?;
        if cols.iter().any(|&c| t.is_pk(c)) {
            let assignments: Vec<(usize, Expr)> =
                cols.iter().zip(values).map(|(&c, v)| (c, Expr::Literal(v.clone(), t.column_type(c)))).collect();
            return self.move_row(t, &pk, r, r, &assignments, None, &[]);
        }
        let set: Vec<(String, UpdateOp)> = cols
            .iter()
            .zip(values)
            .map(|(&c, v)| {
                let op = match v.to_value() {
                    Some(value) => UpdateOp::Put { value, version: None },
                    None => UpdateOp::DeleteAll,
                };
                (t.columns[c].name.clone(), op)
            })
            .collect();
        self.access.update_row(&t.name, &pk, &set, &Condition::expect_exist()).map_err(store_err)?;
        let mut changed = r.clone();
        for (&c, v) in cols.iter().zip(values) {
            changed[c] = v.clone();
        }
        Ok(changed)
    }

    /// Runs one check against what the transaction holds now: 23503 when it fails.
    pub fn verify(&self, check: &FkCheck) -> Result<()> {
        let fk = check.foreign_key();
        let parent = self.catalog()?.table(&fk.parent)?;
        let parent_cols = positions(&parent, &fk.parent_columns)?;
        // The parent row holding `values`, read for update so that a concurrent delete of it conflicts.
        let parent_row = |values: &[Datum]| -> Result<bool> {
            let Some(r) = self.rows_where(&parent, &parent_cols, values, Some(1))?.pop() else { return Ok(false) };
            self.access.share_row(&parent.name, &self.pk_of(&parent, &r)?).map_err(store_err)?;
            Ok(true)
        };
        match check {
            FkCheck::Child { table, pk, .. } => {
                let Some(row) = self.get(table, pk)? else { return Ok(()) };
                let Some(values) = Self::key_of(table, &fk.columns, &row)? else {
                    if fk.match_full && Self::mixed(table, &fk.columns, &row)? {
                        return Err(QueryError::ForeignKey {
                            table: table.name.clone(),
                            constraint: fk.name.clone(),
                            message: format!(
                                "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                                table.name, fk.name
                            ),
                        }
                        .with_message("MATCH FULL does not allow mixing of null and nonnull key values.".into()));
                    }
                    return Ok(());
                };
                if parent_row(&values)? {
                    return Ok(());
                }
                let cols = positions(table, &fk.columns)?;
                Err(QueryError::ForeignKey {
                    table: table.name.clone(),
                    constraint: fk.name.clone(),
                    message: format!("insert or update on table \"{}\" violates foreign key constraint \"{}\"", table.name, fk.name),
                }
                .with_message(format!("{} is not present in table \"{}\".", key_text(table, &cols, &values), fk.parent)))
            }
            FkCheck::Parent { table, values, .. } => {
                let cols = positions(table, &fk.columns)?;
                if parent_row(values)? || self.rows_where(table, &cols, values, Some(1))?.is_empty() {
                    return Ok(());
                }
                Err(QueryError::ForeignKey {
                    table: fk.parent.clone(),
                    constraint: fk.name.clone(),
                    message: format!(
                        "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
                        fk.parent, fk.name, table.name
                    ),
                }
                .with_message(format!(
                    "{} is still referenced from table \"{}\".",
                    key_text(&parent, &parent_cols, values),
                    table.name
                )))
            }
        }
    }
}
