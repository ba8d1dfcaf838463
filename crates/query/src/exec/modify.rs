//! UPDATE and DELETE. The rows the scan finds are changed a page at a time as the scan goes on, so that
//! what the statement holds is one page of rows whatever its size; they are all gathered first only where
//! changing a row could put it back ahead of the scan (a key that moves, an index scan over columns that
//! change, a table that references itself, a delete that cascades back to its table). A statement outside a transaction block may be stopped
//! between two pages once it has done enough for one transaction (`enough`): the session commits what it
//! did and runs it again from where it stopped, in a new transaction (see `session/batches.rs`).

use std::cell::RefCell;

use super::scan::Resume;
use super::*;
use crate::schema::FkAction;

/// What one run of an UPDATE or DELETE did.
#[derive(Default)]
pub struct Modified {
    pub count: u64,
    pub returned: Vec<SqlRow>,
    /// Where the statement goes on, when `enough` stopped it between two pages.
    pub resume: Option<Resume>,
}

/// Whether an UPDATE or DELETE has done enough for one transaction, given the rows it changed so far.
pub type Enough<'f> = &'f dyn Fn(u64) -> bool;

/// A table with a foreign key to itself: a row's change may cascade to rows the scan has not reached.
fn self_referencing(t: &TableSchema) -> bool {
    t.foreign_keys.iter().any(|fk| fk.parent == t.name)
}

impl UpdatePlan {
    fn moves_keys(&self) -> bool {
        self.assignments.iter().any(|(c, _)| self.scan.table.is_pk(*c))
    }

    /// Whether rows are changed as the scan finds them (and the statement may stop between two pages):
    /// not when a changed row could be found again.
    pub fn streamed(&self) -> bool {
        let t = &self.scan.table;
        // An index scan would find a row again whose new values sort ahead in the index.
        let reindexed = match &self.scan.access {
            AccessPath::IndexScan { index, .. } => {
                t.indexes.iter().filter(|ix| &ix.name == index).any(|ix| self.assignments.iter().any(|(c, _)| ix.columns.contains(c)))
            }
            _ => false,
        };
        !self.moves_keys() && !reindexed && !self_referencing(t)
    }
}

impl Executor<'_> {
    /// Runs an UPDATE, from where an earlier run of it stopped (`from`), until it is done or `enough`.
    pub fn update(&self, p: &UpdatePlan, from: Option<&Resume>, enough: Option<Enough>) -> Result<Modified> {
        let t = &p.scan.table;
        let version = self.eval_version(&p.version)?;
        let moves = p.moves_keys();
        if self.updates_cascade_back(t)? {
            return Err(QueryError::NotSupported(format!(
                "an UPDATE of table \"{}\" whose ON UPDATE actions lead back to it through other tables",
                t.name
            )));
        }
        self.modify(&p.scan, p.streamed(), from, enough, &mut |row, m| {
            let pk = self.pk_of(t, &row)?;
            let changed = if moves {
                self.move_row(t, &pk, &row, &row, &p.assignments, version, &p.checks)
            } else {
                self.apply_update(t, &pk, &row, &row, &p.assignments, version, &p.checks)
            };
            match changed {
                Ok(after) => {
                    self.child_written(t, &after, Some(&row))?;
                    self.parent_changed(t, row, Some(&after))?;
                    m.count += 1;
                    self.returning(&p.returning, &after, &mut m.returned)
                }
                // Deleted meanwhile: nothing to update.
                Err(QueryError::Store(StoreError::RowNotFound)) => Ok(()),
                Err(e) => Err(e),
            }
        })
    }

    /// Runs a DELETE, from where an earlier run of it stopped (`from`), until it is done or `enough`.
    pub fn delete(&self, p: &DeletePlan, from: Option<&Resume>, enough: Option<Enough>) -> Result<Modified> {
        let t = &p.scan.table;
        let version = self.eval_version(&p.version)?;
        // PostgreSQL deletes the statement's rows first and acts on their foreign keys after (its triggers
        // fire at the end of the statement): where a cascade can come back to this table, the rows are
        // gathered, deleted, and only then followed, so that a row both chosen and reached by a cascade
        // counts as the statement's.
        let cyclic = version.is_none() && self.cascades_back(t)?;
        let mut deleted = Vec::new();
        let m = self.modify(&p.scan, !cyclic, from, enough, &mut |row, m| {
            let pk = self.pk_of(t, &row)?;
            let res = match version {
                Some(v) => {
                    // Only rows that have that version count.
                    let spec = ReadSpec { columns: None, max_versions: Some(1), time_range: Some(TimeRange::Exact(v)) };
                    let had = self.access.get_row(&t.name, &pk, &spec).map_err(store_err)?.is_some_and(|r| !r.columns.is_empty());
                    if !had {
                        return Ok(());
                    }
                    let ops: Vec<(String, UpdateOp)> =
                        t.attributes().map(|i| (t.columns[i].name.clone(), UpdateOp::DeleteVersion(v))).collect();
                    self.access.update_row(&t.name, &pk, &ops, &Condition::expect_exist()).map(|_| ())
                }
                None => self.access.delete_row(&t.name, &pk, &Condition::expect_exist()).map(|_| ()),
            };
            match res {
                Ok(()) => {
                    m.count += 1;
                    self.returning(&p.returning, &row, &mut m.returned)?;
                    match version {
                        Some(_) => {}
                        None if cyclic => deleted.push(row),
                        None => self.parent_changed(t, row, None)?,
                    }
                    Ok(())
                }
                Err(StoreError::RowNotFound) => Ok(()),
                Err(e) => Err(e.into()),
            }
        })?;
        for row in deleted {
            self.parent_changed(t, row, None)?;
        }
        Ok(m)
    }

    /// Whether updating a row of `t` can change rows of `t` through other tables: a chain of foreign keys
    /// with ON UPDATE actions (each changes the referencing rows, an update of them in turn) that leads back
    /// to it. (One of `t` on itself acts at the statement's end, after the rows the statement changes.)
    fn updates_cascade_back(&self, t: &TableSchema) -> Result<bool> {
        if self.catalog.is_none() {
            return Ok(false);
        }
        let acts = |a: FkAction| !matches!(a, FkAction::NoAction | FkAction::Restrict);
        let mut seen = vec![t.name.clone()];
        let mut next = vec![t.name.clone()];
        while let Some(name) = next.pop() {
            for (child, i) in self.catalog()?.referencing(&name)? {
                let fk = &child.foreign_keys[i];
                if !acts(fk.on_update) {
                    continue;
                }
                // A foreign key of `t` on itself acts at the statement's end (`Executor::parent_changed`).
                if child.name == t.name && name != t.name {
                    return Ok(true);
                }
                if !seen.contains(&child.name) {
                    seen.push(child.name.clone());
                    next.push(child.name.clone());
                }
            }
        }
        Ok(false)
    }

    /// Whether deleting a row of `t` can change rows of `t`: a chain of ON DELETE CASCADE foreign keys,
    /// ended by a CASCADE, SET NULL or SET DEFAULT one, that leads back to it.
    fn cascades_back(&self, t: &TableSchema) -> Result<bool> {
        if self.catalog.is_none() {
            return Ok(false);
        }
        let mut seen = vec![t.name.clone()];
        let mut next = vec![t.name.clone()];
        while let Some(name) = next.pop() {
            for (child, i) in self.catalog()?.referencing(&name)? {
                let action = child.foreign_keys[i].on_delete;
                if !matches!(action, FkAction::Cascade | FkAction::SetNull | FkAction::SetDefault) {
                    continue;
                }
                if child.name == t.name {
                    return Ok(true);
                }
                if action == FkAction::Cascade && !seen.contains(&child.name) {
                    seen.push(child.name.clone());
                    next.push(child.name.clone());
                }
            }
        }
        Ok(false)
    }

    /// The scan's rows, each handed to `apply`: a page at a time as the scan goes on when `streamed`, all
    /// of them after the scan otherwise.
    fn modify(
        &self,
        scan: &Scan,
        streamed: bool,
        from: Option<&Resume>,
        enough: Option<Enough>,
        apply: &mut dyn FnMut(SqlRow, &mut Modified) -> Result<()>,
    ) -> Result<Modified> {
        let mut m = Modified::default();
        let held = RefCell::new(Vec::new());
        let hold = |r: SqlRow| {
            held.borrow_mut().push(r);
            Ok(true)
        };
        if streamed {
            let mut page_done = || -> Result<bool> {
                for row in held.take() {
                    self.interrupt.check()?;
                    apply(row, &mut m)?;
                }
                Ok(!enough.is_some_and(|e| e(m.count)))
            };
            let resume = self.scan_from(scan, from, &mut page_done, hold)?;
            m.resume = resume;
        } else {
            self.scan(scan, hold)?;
        }
        for row in held.take() {
            self.interrupt.check()?;
            apply(row, &mut m)?;
        }
        Ok(m)
    }
}
