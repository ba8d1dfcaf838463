//! PostgreSQL's sequence functions — `nextval`, `currval`, `setval`, `lastval`, `pg_get_serial_sequence` —
//! over the sequences Tabula has:
//! - one for each table whose partition key is a generated column (an ORM's `id serial PRIMARY KEY`),
//!   named as PostgreSQL names a serial column's sequence, `<table>_<column>_seq`;
//! - those made by CREATE SEQUENCE (and by `ADD GENERATED ... AS IDENTITY`, as pg_dump writes an identity
//!   column), each a relation of its own ([`def`]).
//!
//! The engine draws the values (`Store::sequence_next`); what this session last drew of each sequence,
//! which `currval` and `lastval` answer, is the session's ([`Sequences`]).
//!
//! A generated column after the partition key counts per partition-key value: that is no sequence, and
//! `pg_get_serial_sequence` answers NULL for it (the README lists the difference).

pub mod def;
pub mod parse;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{QueryError, Result};
use crate::schema::TableSchema;
use crate::types::SqlType;
use def::SequenceDef;

/// A sequence, as the functions find it by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Sequence {
    pub name: String,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A table's generated partition-key column: the engine's counter of `table`, from 1 to `max` (the
    /// largest value the column's type holds, PostgreSQL's `maxvalue` of a serial's sequence).
    Serial { table: String, column: String, max: i64 },
    /// Made by CREATE SEQUENCE: the counter of the sequence's own (empty) table.
    Made(SequenceDef),
}

impl Sequence {
    /// The column that draws from it (`pg_get_serial_sequence`): a serial column, or what it is OWNED BY.
    pub fn column_of(&self) -> Option<(&str, &str)> {
        match &self.kind {
            Kind::Serial { table, column, .. } => Some((table, column)),
            Kind::Made(d) => d.owned_by.as_ref().map(|(t, c)| (t.as_str(), c.as_str())),
        }
    }

    /// The store table whose counter it draws from.
    fn counter(&self) -> &str {
        match &self.kind {
            Kind::Serial { table, .. } => table,
            Kind::Made(_) => &self.name,
        }
    }
}

/// The sequence of a table's generated partition-key column, if it has one.
pub fn of_table(t: &TableSchema) -> Option<Sequence> {
    let col = t.pk[..t.partition_key_len].iter().map(|&c| &t.columns[c]).find(|c| c.identity)?;
    let max = match col.ty {
        SqlType::Int2 => i16::MAX as i64,
        SqlType::Int4 => i32::MAX as i64,
        _ => i64::MAX,
    };
    let kind = Kind::Serial { table: t.name.clone(), column: col.name.clone(), max };
    Some(Sequence { name: format!("{}_{}_seq", t.name, col.name), kind })
}

/// The sequences among `relations` (every table and sequence): the made ones and the serial columns'.
pub fn all(relations: &[Arc<TableSchema>]) -> Vec<Sequence> {
    relations
        .iter()
        .filter_map(|t| match &t.sequence {
            Some(d) => Some(Sequence { name: t.name.clone(), kind: Kind::Made(d.clone()) }),
            None => of_table(t),
        })
        .collect()
}

/// A relation's name as a function was given it (`'users_id_seq'`, `'public.users_id_seq'`, quoted or
/// not), as the catalog holds it.
pub fn given_name(given: &str) -> String {
    let name = given.strip_prefix("public.").unwrap_or(given);
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => name.to_lowercase(),
    }
}

/// The sequence a DEFAULT's SQL text draws from (`nextval('s'::regclass)`), named as the catalog holds it.
pub fn drawn_by(default: &str) -> Option<String> {
    let at = default.find("nextval('")? + "nextval('".len();
    let end = default[at..].find('\'')?;
    Some(given_name(&default[at..at + end]))
}

/// A DEFAULT drawing from a sequence, with the sequence's schema named (`nextval('public.s'::regclass)`),
/// as PostgreSQL prints a regclass when its schema is not on the search path (pg_dump's empty one).
pub fn qualified_default(default: &str) -> String {
    match drawn_by(default) {
        Some(_) if !default.contains("nextval('public.") => default.replacen("nextval('", "nextval('public.", 1),
        _ => default.to_string(),
    }
}

/// Finds a sequence by the name a function was given: 42P01 when there is none, as PostgreSQL's regclass
/// input answers.
pub fn resolve(relations: &[Arc<TableSchema>], given: &str) -> Result<Sequence> {
    let name = given_name(given);
    all(relations).into_iter().find(|s| s.name == name).ok_or_else(|| QueryError::UndefinedTable(given.to_string()))
}

/// What one session drew last of each sequence (`currval`), and which sequence it drew from last (`lastval`).
#[derive(Debug, Default)]
pub struct Sequences {
    current: HashMap<String, i64>,
    last: Option<String>,
}

/// A session's [`Sequences`], shared with the analytic engine's functions while a statement runs.
pub type SessionSequences = Arc<Mutex<Sequences>>;

/// The four functions that take a sequence, as both routes call them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    Nextval,
    Currval,
    /// `setval(s, value [, is_called])`.
    Setval,
    Lastval,
}

impl Call {
    pub fn name(self) -> &'static str {
        match self {
            Call::Nextval => "nextval",
            Call::Currval => "currval",
            Call::Setval => "setval",
            Call::Lastval => "lastval",
        }
    }
}

/// Where the functions find sequences: the catalog and the store, and a way to store a made sequence's
/// definition (an off-grid `setval` moves its phase).
pub trait SequenceSource {
    fn store(&self) -> &Arc<tabula_store::Store>;
    /// Every table and sequence.
    fn relations(&self) -> Result<Vec<Arc<TableSchema>>>;
    /// Stores a made sequence's new definition, at once and for good (a sequence's value is never rolled back).
    fn redefine(&self, name: &str, def: &SequenceDef) -> Result<()>;
}

/// Runs one of the functions for one row: `name` is the sequence (`None` for `lastval`), `value` and
/// `is_called` setval's. `Ok(None)` where PostgreSQL answers NULL (a NULL argument).
pub fn call(
    src: &dyn SequenceSource,
    session: &Mutex<Sequences>,
    f: Call,
    name: Option<&str>,
    value: Option<i64>,
    is_called: Option<bool>,
) -> Result<Option<i64>> {
    if f == Call::Lastval {
        return session.lock().lastval().map(Some);
    }
    let Some(name) = name else { return Ok(None) };
    let s = resolve(&src.relations()?, name)?;
    let mut session = session.lock();
    match f {
        Call::Nextval => session.nextval(src, &s).map(Some),
        Call::Currval => session.currval(&s).map(Some),
        _ => match (value, is_called) {
            (Some(v), Some(c)) => session.setval(src, &s, v, c).map(Some),
            _ => Ok(None),
        },
    }
}

impl Sequences {
    /// A value drawn for the sequence, by `nextval` or by an insert that generated its key.
    pub fn drawn(&mut self, sequence: &str, value: i64) {
        self.current.insert(sequence.to_string(), value);
        self.last = Some(sequence.to_string());
    }

    /// A sequence was renamed.
    pub fn renamed(&mut self, from: &str, to: &str) {
        if let Some(v) = self.current.remove(from) {
            self.current.insert(to.to_string(), v);
        }
        if self.last.as_deref() == Some(from) {
            self.last = Some(to.to_string());
        }
    }

    pub fn nextval(&mut self, src: &dyn SequenceSource, s: &Sequence) -> Result<i64> {
        let n = src.store().sequence_next(s.counter())?;
        let v = match &s.kind {
            Kind::Serial { max, .. } if n > *max => {
                return Err(QueryError::Engine {
                    sqlstate: "2200H",
                    message: format!("nextval: reached maximum value of sequence \"{}\" ({max})", s.name),
                })
            }
            Kind::Serial { .. } => n,
            Kind::Made(d) => d.value(&s.name, n)?,
        };
        self.drawn(&s.name, v);
        Ok(v)
    }

    pub fn currval(&self, s: &Sequence) -> Result<i64> {
        self.current.get(&s.name).copied().ok_or_else(|| QueryError::Engine {
            sqlstate: "55000",
            message: format!("currval of sequence \"{}\" is not yet defined in this session", s.name),
        })
    }

    pub fn lastval(&self) -> Result<i64> {
        self.last
            .as_ref()
            .and_then(|s| self.current.get(s))
            .copied()
            .ok_or_else(|| QueryError::Engine { sqlstate: "55000", message: "lastval is not yet defined in this session".into() })
    }

    /// `setval(s, value, is_called)`: the next value drawn is the one after `value`, or `value` itself when
    /// `is_called` is false; `currval` answers `value` only in the first case, as in PostgreSQL.
    pub fn setval(&mut self, src: &dyn SequenceSource, s: &Sequence, value: i64, is_called: bool) -> Result<i64> {
        let (min, max) = match &s.kind {
            Kind::Serial { max, .. } => (1, *max),
            Kind::Made(d) => (d.min, d.max),
        };
        if !(min..=max).contains(&value) {
            return Err(QueryError::NumericOutOfRange(format!(
                "setval: value {value} is out of bounds for sequence \"{}\" ({min}..{max})",
                s.name
            )));
        }
        match &s.kind {
            Kind::Serial { table, .. } => {
                let next = if is_called { value.checked_add(1) } else { Some(value) };
                // At the type's end: the next nextval is past it and fails, as in PostgreSQL.
                src.store().sequence_restart(table, next.unwrap_or(i64::MAX), is_called)?;
            }
            Kind::Made(d) => restart(src, &s.name, d, value, is_called)?,
        }
        if is_called {
            self.current.insert(s.name.clone(), value);
        }
        Ok(value)
    }
}

/// Makes a made sequence go on after `value` (`is_called`) or at it: the counter restarts, after the
/// phase moved if `value` is off the sequence's grid.
pub fn restart(src: &dyn SequenceSource, name: &str, d: &SequenceDef, value: i64, is_called: bool) -> Result<()> {
    let (n, phase) = d.restart_at(value)?;
    if let Some(phase) = phase {
        src.redefine(name, &SequenceDef { phase, ..d.clone() })?;
    }
    src.store().sequence_restart(name, if is_called { n + 1 } else { n }, is_called)?;
    Ok(())
}
