//! PostgreSQL's sequence functions — `nextval`, `currval`, `setval`, `lastval`, `pg_get_serial_sequence` —
//! over the sequences Tabula has: one for each table whose partition key is a generated column (an ORM's
//! `id serial PRIMARY KEY`), named as PostgreSQL names a serial column's sequence, `<table>_<column>_seq`.
//! The engine draws the values (`Store::sequence_next`); what this session last drew of each sequence,
//! which `currval` and `lastval` answer, is the session's ([`Sequences`]).
//!
//! A generated column after the partition key counts per partition-key value: that is no sequence, and
//! `pg_get_serial_sequence` answers NULL for it (the README lists the difference).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{QueryError, Result};
use crate::schema::TableSchema;
use crate::types::SqlType;

/// A sequence, as the functions find it by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Sequence {
    pub name: String,
    pub table: String,
    pub column: String,
    /// The largest value the column's type holds (PostgreSQL's `maxvalue` of a serial's sequence).
    pub max: i64,
}

/// The sequence of a table's generated partition-key column, if it has one.
pub fn of_table(t: &TableSchema) -> Option<Sequence> {
    let col = t.pk[..t.partition_key_len].iter().map(|&c| &t.columns[c]).find(|c| c.identity)?;
    let max = match col.ty {
        SqlType::Int2 => i16::MAX as i64,
        SqlType::Int4 => i32::MAX as i64,
        _ => i64::MAX,
    };
    Some(Sequence { name: format!("{}_{}_seq", t.name, col.name), table: t.name.clone(), column: col.name.clone(), max })
}

/// Finds a sequence by the name a function was given (`'users_id_seq'`, `'public.users_id_seq'`, quoted
/// or not): 42P01 when no table has it, as PostgreSQL's regclass input answers.
pub fn resolve(tables: &[Arc<TableSchema>], given: &str) -> Result<Sequence> {
    let name = given.strip_prefix("public.").unwrap_or(given);
    let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => name.to_lowercase(),
    };
    tables.iter().filter_map(|t| of_table(t)).find(|s| s.name == name).ok_or_else(|| QueryError::UndefinedTable(given.to_string()))
}

/// What one session drew last of each sequence (`currval`), and which sequence it drew from last (`lastval`).
#[derive(Debug, Default)]
pub struct Sequences {
    current: HashMap<String, i64>,
    last: Option<String>,
}

/// A session's [`Sequences`], shared with the analytic engine's functions while a statement runs.
pub type SessionSequences = Arc<Mutex<Sequences>>;

impl Sequences {
    /// A value drawn for the sequence, by `nextval` or by an insert that generated its key.
    pub fn drawn(&mut self, sequence: &str, value: i64) {
        self.current.insert(sequence.to_string(), value);
        self.last = Some(sequence.to_string());
    }

    pub fn nextval(&mut self, store: &tabula_store::Store, s: &Sequence) -> Result<i64> {
        let v = store.sequence_next(&s.table)?;
        if v > s.max {
            return Err(QueryError::Engine {
                sqlstate: "2200H",
                message: format!("nextval: reached maximum value of sequence \"{}\" ({})", s.name, s.max),
            });
        }
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

    /// `setval(s, value, is_called)`: the next value drawn is `value + 1`, or `value` itself when
    /// `is_called` is false; `currval` answers `value` only in the first case, as in PostgreSQL.
    pub fn setval(&mut self, store: &tabula_store::Store, s: &Sequence, value: i64, is_called: bool) -> Result<i64> {
        let next = if is_called { value.checked_add(1) } else { Some(value) };
        match next {
            Some(next) if (1..=s.max).contains(&value) => store.sequence_restart(&s.table, next)?,
            _ => {
                return Err(QueryError::NumericOutOfRange(format!(
                    "setval: value {value} is out of bounds for sequence \"{}\" (1..{})",
                    s.name, s.max
                )))
            }
        }
        if is_called {
            self.current.insert(s.name.clone(), value);
        }
        Ok(value)
    }
}
