//! DDL inside a transaction. PostgreSQL's DDL is transactional, and migration tools rely on it: a
//! migration that fails half way must leave no half schema. Here each change is made at once, in the
//! catalog every session reads, and the transaction keeps a journal of how to undo it. A commit marks the
//! journal committed in the same atomic write as the transaction's rows (then deletes it); a rollback, a
//! transaction dropped unended (its connection gone) or, after a crash, the next open undoes what an
//! unmarked journal lists, newest first.
//!
//! - CREATE TABLE is undone by dropping the table.
//! - DROP TABLE sets the table aside under a name no SQL text can hold (it starts with a NUL byte, which
//!   the wire protocol cannot carry), so that no session finds it; a commit drops it for good, an undo
//!   gives it its name back.
//! - A change of definition (columns, options, name, owner, privileges) is undone by writing the
//!   definition back.
//! - TRUNCATE and a rebuild (`Store::rebuild`) set the old table aside, and a new one takes its name.
//! - CREATE INDEX is undone by removing its entries (the table's definition is written back); DROP INDEX
//!   removes its entries at the commit.
//! - A role's record (CREATE, ALTER and DROP ROLE, which PostgreSQL also makes transactional) is undone by
//!   writing the record it replaced back, or by removing it if there was none.
//!
//! Each entry is journaled (a durable catalog write) before its change is made, except a creation, whose
//! table id is known only after: a crash between the two leaves the created table behind.
//!
//! A name the transaction has touched is claimed by it until it ends: DDL of another session on that
//! name is refused with 55P03, where PostgreSQL's lock would make it wait, since an undo writes a whole
//! definition back. Other sessions do see the change before the commit (PostgreSQL hides it; the README
//! lists the difference).
//!
//! Journal record: catalog key `j` + journal id (u64, big-endian), value a sequence of entries (the commit's
//! mark: key `c` + the same id, value empty):
//! ```text
//! ┌─────┬──────────────┬──────────────┬────────────────────────────────────────────┐
//! │ tag │ table id u32 │ length u32   │ payload                                    │
//! └─────┴──────────────┴──────────────┴────────────────────────────────────────────┘
//!   1 Created    payload empty
//!   2 SetAside   payload: the table's name
//!   3 Defined    payload: the table's record (TableDef::encode) before the change
//!   4 IndexCreated, 5 IndexDropped   table id: the index's key space; payload empty
//!   6 Role       table id 0; payload: name length u32, name, then the record replaced (absent: none)
//! ```

use super::*;

/// What one transaction's DDL did, in order.
#[derive(Default)]
pub(crate) struct Journal {
    /// 0 until the first entry.
    id: u64,
    undo: Vec<Undo>,
    /// The number of entries at each savepoint, oldest first.
    marks: Vec<usize>,
}

#[derive(Clone)]
enum Undo {
    Created(u32),
    SetAside {
        id: u32,
        name: String,
    },
    Defined {
        id: u32,
        def: TableDef,
    },
    /// An index's entries (key space `id`): removed by an undo (the index was created) or by the commit
    /// (it was dropped; the table's `Defined` entry brings its definition back on an undo).
    IndexCreated(u32),
    IndexDropped(u32),
    /// A role's record as it was before the change (`None`: there was none).
    Role {
        name: String,
        record: Option<Vec<u8>>,
    },
}

/// The name a table is set aside under.
pub(super) fn aside_name(id: u32) -> String {
    format!("\0aside\0{id}")
}

/// The name a transaction claims a role under: no table's name starts with a NUL byte.
pub(super) fn role_claim(name: &str) -> String {
    format!("\0role\0{name}")
}

/// Deletes index `id`'s entries and its partitions record, in one atomic write.
fn drop_space(kv: &dyn Engine, id: u32) -> Result<()> {
    Ok(kv.meta_write(&[(catalog::partitions_key(id), None)], &[(keys::table_prefix(id).to_vec(), keys::table_end(id).to_vec())])?)
}

/// Whether `name` is one the engine gives tables set aside: never a user's table.
pub(crate) fn is_internal(name: &str) -> bool {
    name.starts_with('\0')
}

fn encode(undo: &[Undo]) -> Vec<u8> {
    let mut out = Vec::new();
    for u in undo {
        let (tag, id, payload) = match u {
            Undo::Created(id) => (1u8, *id, Vec::new()),
            Undo::SetAside { id, name } => (2, *id, name.as_bytes().to_vec()),
            Undo::Defined { id, def } => (3, *id, def.encode(*id)),
            Undo::IndexCreated(id) => (4, *id, Vec::new()),
            Undo::IndexDropped(id) => (5, *id, Vec::new()),
            Undo::Role { name, record } => {
                let mut p = (name.len() as u32).to_be_bytes().to_vec();
                p.extend_from_slice(name.as_bytes());
                if let Some(r) = record {
                    p.extend_from_slice(r);
                }
                // A record is never empty (`Store::set_role`): an empty rest means none.
                (6, 0, p)
            }
        };
        out.push(tag);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&payload);
    }
    out
}

fn decode(mut buf: &[u8]) -> Result<Vec<Undo>> {
    let corrupt = || StoreError::Corrupt("DDL journal".into());
    let mut undo = Vec::new();
    while !buf.is_empty() {
        if buf.len() < 9 {
            return Err(corrupt());
        }
        let (tag, id) = (buf[0], u32::from_be_bytes(buf[1..5].try_into().unwrap()));
        let len = u32::from_be_bytes(buf[5..9].try_into().unwrap()) as usize;
        let payload = buf.get(9..9 + len).ok_or_else(corrupt)?;
        undo.push(match tag {
            1 => Undo::Created(id),
            2 => Undo::SetAside { id, name: String::from_utf8(payload.to_vec()).map_err(|_| corrupt())? },
            3 => Undo::Defined { id, def: TableDef::decode(payload)?.1 },
            4 => Undo::IndexCreated(id),
            5 => Undo::IndexDropped(id),
            6 => {
                let n = u32::from_be_bytes(payload.get(..4).ok_or_else(corrupt)?.try_into().unwrap()) as usize;
                let name = payload.get(4..4 + n).ok_or_else(corrupt)?;
                let rest = &payload[4 + n..];
                Undo::Role {
                    name: String::from_utf8(name.to_vec()).map_err(|_| corrupt())?,
                    record: (!rest.is_empty()).then(|| rest.to_vec()),
                }
            }
            _ => return Err(corrupt()),
        });
        buf = &buf[9 + len..];
    }
    Ok(undo)
}

impl Inner {
    /// The name of the table with id `id`, if it exists.
    fn name_of(&self, id: u32) -> Option<String> {
        self.tables.read().iter().find(|(_, t)| t.id == id).map(|(n, _)| n.clone())
    }

    /// Refuses DDL on `name` while another transaction (`mine`: this one's journal, 0 for none) has
    /// changed it and not ended.
    pub(super) fn check_claim(&self, name: &str, mine: u64) -> Result<()> {
        match self.claims.lock().get(name) {
            Some(&owner) if owner != mine => Err(StoreError::TableLocked(name.to_string())),
            _ => Ok(()),
        }
    }

    /// Undoes one entry. Each step checks what is there, so that it can run again after a crash.
    fn undo(&self, u: &Undo) -> Result<()> {
        match u {
            Undo::IndexCreated(id) => drop_space(&*self.kv, *id),
            Undo::IndexDropped(_) => Ok(()),
            Undo::Role { name, record } => Ok(self.kv.meta_write(&[(catalog::role_key(name), record.clone())], &[])?),
            Undo::Created(id) => match self.name_of(*id) {
                Some(name) => self.drop_table(&name),
                None => Ok(()),
            },
            Undo::SetAside { id, name } => {
                let aside = aside_name(*id);
                let Ok(t) = self.table(&aside) else { return Ok(()) };
                // Only a table this transaction made can hold the name now (the name was claimed).
                if self.table(name).is_ok() {
                    self.drop_table(name)?;
                }
                let _ddl = self.ddl.lock();
                self.rename_locked(&t, &aside, name)?;
                t.retired.store(false, Ordering::SeqCst);
                Ok(())
            }
            Undo::Defined { id, def } => {
                let Some(current) = self.name_of(*id) else { return Ok(()) };
                let _ddl = self.ddl.lock();
                let t = self.table(&current)?;
                let mut def = def.clone();
                // What reads could not see stays unseen (see `Store::set_options`).
                let now = t.def.read().options;
                def.options.hidden_before = def.options.hidden_before.max(now.hidden_before);
                def.options.stored_versions = now.stored_versions;
                if def.name != current {
                    self.rename_locked(&t, &current, &def.name)?;
                }
                self.alter_locked(&t, |d| {
                    *d = def;
                    Ok(())
                })
            }
        }
    }

    /// At open: finishes what transactions the last run left unended (undone, newest entry first), then
    /// drops the tables committed transactions set aside.
    pub(super) fn recover_journals(&self) -> Result<()> {
        for (key, value) in self.kv.meta_scan(b"j")? {
            let id = u64::from_be_bytes(key[1..].try_into().map_err(|_| StoreError::Corrupt("DDL journal key".into()))?);
            let undo = decode(&value)?;
            if self.kv.meta_get(&catalog::committed_key(id))?.is_none() {
                for u in undo.iter().rev() {
                    self.undo(u)?;
                }
            } else {
                for u in &undo {
                    if let Undo::IndexDropped(id) = u {
                        drop_space(&*self.kv, *id)?;
                    }
                }
            }
            self.kv.meta_write(&[(key, None), (catalog::committed_key(id), None)], &[])?;
        }
        let aside: Vec<String> = self.tables.read().keys().filter(|n| is_internal(n)).cloned().collect();
        for name in aside {
            self.drop_table(&name)?;
        }
        Ok(())
    }

    /// Sets table `name` aside (it keeps its rows; no name finds it).
    fn set_aside(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.table(name)?;
        self.rename_locked(&t, name, &aside_name(t.id))
    }
}

impl Txn {
    /// This transaction's journal id, made at its first entry.
    pub(super) fn journal_id(&self) -> u64 {
        let mut j = self.journal.borrow_mut();
        if j.id == 0 {
            j.id = self.inner.next_journal.fetch_add(1, Ordering::SeqCst);
        }
        j.id
    }

    /// Whether this transaction changed the catalog.
    pub fn did_ddl(&self) -> bool {
        !self.journal.borrow().undo.is_empty()
    }

    /// Adds an entry, claims the names it touches and writes the journal durably.
    fn record(&self, u: Undo, names: &[&str]) -> Result<()> {
        let id = self.journal_id();
        {
            let mut claims = self.inner.claims.lock();
            for n in names {
                claims.insert(n.to_string(), id);
            }
        }
        let mut j = self.journal.borrow_mut();
        j.undo.push(u);
        self.inner.kv.meta_write(&[(catalog::journal_key(id), Some(encode(&j.undo)))], &[])?;
        Ok(())
    }

    /// Journals table `name`'s definition before a change to it (each time: a savepoint may undo the later
    /// changes only).
    pub(super) fn before_change(&self, name: &str, also: &[&str]) -> Result<()> {
        let t = self.inner.table(name)?;
        let def = TableDef::clone(&t.def.read());
        let names: Vec<&str> = std::iter::once(name).chain(also.iter().copied()).collect();
        self.record(Undo::Defined { id: t.id, def }, &names)
    }

    /// Journals an index's entries: `created` (removed by an undo) or dropped (removed by the commit).
    pub(super) fn index_entries(&self, table: &str, id: u32, created: bool) -> Result<()> {
        self.record(if created { Undo::IndexCreated(id) } else { Undo::IndexDropped(id) }, &[table])
    }

    /// Journals role `name`'s record before a change to it. The role's name is claimed under a prefix of
    /// its own, apart from tables' names.
    pub(super) fn before_role_change(&self, name: &str) -> Result<()> {
        let record = self.inner.kv.meta_get(&catalog::role_key(name))?;
        self.record(Undo::Role { name: name.to_string(), record }, &[&role_claim(name)])
    }

    pub(super) fn created(&self, name: &str) -> Result<()> {
        let t = self.inner.table(name)?;
        self.record(Undo::Created(t.id), &[name])
    }

    /// Journals table `name` as made by this transaction, and makes it private to it until it ends: its
    /// rows moved through the transaction (`rebuild_txn`), uncommitted.
    pub(super) fn private(&self, name: &str) -> Result<()> {
        self.created(name)?;
        self.inner.table(name)?.private_to.store(self.owner(), Ordering::SeqCst);
        Ok(())
    }

    /// Journals that table `name` is about to be set aside.
    pub(super) fn record_aside(&self, name: &str) -> Result<()> {
        let t = self.inner.table(name)?;
        self.record(Undo::SetAside { id: t.id, name: name.to_string() }, &[name])
    }

    /// Journals that table `name` is set aside, then sets it aside.
    pub(super) fn set_aside(&self, name: &str) -> Result<()> {
        self.record_aside(name)?;
        self.inner.set_aside(name)
    }

    /// Whether table `id` was made by this transaction (CREATE TABLE, TRUNCATE, a rebuild) since its last
    /// savepoint: undoing any part of the transaction that could be undone then drops it, rows and all.
    pub(super) fn made_since_savepoint(&self, id: u32) -> bool {
        let j = self.journal.borrow();
        let from = j.marks.last().copied().unwrap_or(0);
        j.undo.iter().skip(from).any(|u| matches!(u, Undo::Created(c) if *c == id))
    }

    /// The journal id DDL checks claims against (0: none yet).
    pub(super) fn owner(&self) -> u64 {
        self.journal.borrow().id
    }

    /// How many savepoints the transaction holds.
    pub(super) fn savepoints(&self) -> usize {
        self.journal.borrow().marks.len()
    }

    /// Whether a delta is of a table this transaction set aside, whose retirement guards it from other
    /// transactions, not from this one.
    pub(super) fn set_aside_here(&self, d: &Delta) -> bool {
        self.journal.borrow().undo.iter().any(|u| match u {
            Undo::SetAside { id, .. } => self.inner.table(&aside_name(*id)).is_ok_and(|t| Arc::ptr_eq(&t.retired, &d.retired)),
            _ => false,
        })
    }

    pub(super) fn mark_savepoint(&self) {
        let mut j = self.journal.borrow_mut();
        let n = j.undo.len();
        j.marks.push(n);
    }

    /// Undoes the DDL since the last savepoint, which stays (as the engine's does).
    pub(super) fn undo_to_savepoint(&self) -> Result<()> {
        let (tail, id) = {
            let mut j = self.journal.borrow_mut();
            let mark = j.marks.pop().unwrap_or(0).min(j.undo.len());
            (j.undo.split_off(mark), j.id)
        };
        for u in tail.iter().rev() {
            self.inner.undo(u)?;
        }
        if !tail.is_empty() {
            let j = self.journal.borrow();
            self.inner.kv.meta_write(&[(catalog::journal_key(id), Some(encode(&j.undo)))], &[])?;
        }
        Ok(())
    }

    /// Marks the journal committed within the commit's own write, so that the DDL commits with the rows.
    pub(super) fn journal_in_commit(&self, txn: &dyn Transaction) -> Result<()> {
        let id = self.journal.borrow().id;
        if id != 0 {
            txn.put(Space::Meta, &catalog::committed_key(id), &[])?;
        }
        Ok(())
    }

    /// Ends the transaction's DDL: after a commit, the tables it set aside are dropped; otherwise all of it
    /// is undone, newest first. Either way its names are free again.
    pub(super) fn end_ddl(&self, committed: bool) {
        let j = std::mem::take(&mut *self.journal.borrow_mut());
        if j.id == 0 {
            return;
        }
        // Errors leave the journal (or a set-aside table) for the next open to finish.
        let mut done = true;
        if committed {
            for u in &j.undo {
                match u {
                    Undo::SetAside { id, .. } => {
                        done &= matches!(self.inner.drop_table(&aside_name(*id)), Ok(()) | Err(StoreError::UnknownTable(_)))
                    }
                    Undo::IndexDropped(id) => done &= drop_space(&*self.inner.kv, *id).is_ok(),
                    _ => {}
                }
            }
        } else {
            for u in j.undo.iter().rev() {
                done &= self.inner.undo(u).is_ok();
            }
        }
        if done {
            let _ = self.inner.kv.meta_write(&[(catalog::journal_key(j.id), None), (catalog::committed_key(j.id), None)], &[]);
        }
        for t in self.inner.tables.read().values() {
            let _ = t.private_to.compare_exchange(j.id, 0, Ordering::SeqCst, Ordering::SeqCst);
        }
        self.inner.claims.lock().retain(|_, owner| *owner != j.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trip() {
        let def = TableDef {
            name: "t".into(),
            primary_key: vec![crate::catalog::PkColumn { name: "k".into(), ty: PkType::Integer, auto_increment: false }],
            partition_key_len: 1,
            options: TableOptions::default(),
            user_meta: vec![1, 2, 3],
            indexes: vec![crate::catalog::IndexDef {
                name: "i".into(),
                columns: vec!["a".into(), "b".into()],
                id: 9,
                ready: true,
                unique: true,
                constraint: true,
                descending: vec![false, true],
                nulls_not_distinct: true,
                local: true,
                include: vec!["c".into()],
            }],
        };
        let undo = vec![Undo::Created(7), Undo::SetAside { id: 3, name: "old".into() }, Undo::Defined { id: 3, def: def.clone() }];
        let back = decode(&encode(&undo)).unwrap();
        assert_eq!(back.len(), 3);
        assert!(matches!(&back[0], Undo::Created(7)));
        assert!(matches!(&back[1], Undo::SetAside { id: 3, name } if name == "old"));
        assert!(matches!(&back[2], Undo::Defined { id: 3, def: d } if *d == def));
        assert!(decode(&[2, 0, 0, 0, 1, 0, 0, 0, 9, b'x']).is_err());
    }
}
