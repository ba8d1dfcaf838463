//! CREATE INDEX, DROP INDEX and ALTER INDEX ... RENAME. An index's name is a relation's name, as in
//! PostgreSQL: no table, index or primary key (`<table>_pkey`) may share it.

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::planner::Catalog;

/// PostgreSQL's longest name (NAMEDATALEN - 1 bytes).
const MAX_NAME: usize = 63;

impl Session {
    /// The table whose index is named `name`, if any.
    fn index_table(&self, name: &str) -> Result<Option<String>> {
        for t in self.db.store().table_names() {
            if self.db.table(&t)?.indexes.iter().any(|i| i.name == name) {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// Whether a relation (table, index or primary key) is named `name`.
    fn relation_exists(&self, name: &str) -> Result<bool> {
        let pkey = name.strip_suffix("_pkey").is_some_and(|t| self.db.store().table_id(t).is_ok());
        Ok(self.db.store().table_id(name).is_ok() || pkey || self.index_table(name)?.is_some())
    }

    /// PostgreSQL's name for an unnamed index: `<table>_<columns>_idx`, cut to 63 bytes, numbered from 1
    /// until no relation has it.
    fn index_name(&self, table: &str, columns: &[String]) -> Result<String> {
        let base = format!("{table}_{}", columns.join("_"));
        for n in 0.. {
            let suffix = if n == 0 { "_idx".to_string() } else { format!("_idx{n}") };
            let mut stem = base.clone();
            while stem.len() + suffix.len() > MAX_NAME {
                stem.pop();
            }
            let name = format!("{stem}{suffix}");
            if !self.relation_exists(&name)? {
                return Ok(name);
            }
        }
        unreachable!("some number is free")
    }

    pub(super) fn create_index(&mut self, table: &str, name: Option<&str>, columns: &[String], if_not_exists: bool) -> Result<Output> {
        self.need_owner(table)?;
        let name = match name {
            Some(n) if self.relation_exists(n)? => {
                if if_not_exists {
                    self.notice("42P07", format!("relation \"{n}\" already exists, skipping"), None);
                    return Ok(Output::Command { tag: "CREATE INDEX".into() });
                }
                return Err(QueryError::Engine { sqlstate: "42P07", message: format!("relation \"{n}\" already exists") });
            }
            Some(n) => n.to_string(),
            None => self.index_name(table, columns)?,
        };
        tabula_store::value::validate_name(&name)?;
        let r = self.ddl().create_index(table, &name, columns);
        self.db.invalidate();
        r?;
        Ok(Output::Command { tag: "CREATE INDEX".into() })
    }

    /// `DROP INDEX`: all or none, as PostgreSQL (each index is found before any is dropped).
    pub(super) fn drop_indexes(&mut self, names: &[String], if_exists: bool) -> Result<Output> {
        let mut found = Vec::new();
        for n in names {
            match self.index_table(n)? {
                Some(t) => {
                    self.need_owner(&t)?;
                    found.push((t, n.clone()));
                }
                None => match n.strip_suffix("_pkey").filter(|t| self.db.store().table_id(t).is_ok()) {
                    Some(t) => {
                        return Err(QueryError::Engine {
                            sqlstate: "2BP01",
                            message: format!("cannot drop index {n} because constraint {n} on table {t} requires it"),
                        })
                    }
                    None if self.db.store().table_id(n).is_ok() => {
                        return Err(QueryError::Engine { sqlstate: "42809", message: format!("\"{n}\" is not an index") })
                    }
                    None if if_exists => self.notice("00000", format!("index \"{n}\" does not exist, skipping"), None),
                    None => return Err(QueryError::Engine { sqlstate: "42704", message: format!("index \"{n}\" does not exist") }),
                },
            }
        }
        let r = found.iter().try_for_each(|(t, n)| self.ddl().drop_index(t, n));
        self.db.invalidate();
        r?;
        Ok(Output::Command { tag: "DROP INDEX".into() })
    }

    pub(super) fn rename_index(&mut self, name: &str, to: &str) -> Result<Output> {
        let Some(table) = self.index_table(name)? else {
            return Err(QueryError::Engine { sqlstate: "42P01", message: format!("relation \"{name}\" does not exist") });
        };
        self.need_owner(&table)?;
        if self.relation_exists(to)? {
            return Err(QueryError::Engine { sqlstate: "42P07", message: format!("relation \"{to}\" already exists") });
        }
        tabula_store::value::validate_name(to)?;
        let r = self.ddl().rename_index(&table, name, to);
        self.db.invalidate();
        r?;
        Ok(Output::Command { tag: "ALTER INDEX".into() })
    }
}
