//! `VACUUM`, `ANALYZE` and `CHECKPOINT` ([`crate::maintenance`]): each table named (or every table) is
//! checked, then VACUUM compacts it and removes what no row needs; ANALYZE has nothing to gather;
//! CHECKPOINT writes the memtables to table files and syncs the log.

use super::Session;
use crate::error::{QueryError, Result};
use crate::maintenance::{Maintenance, TableMaintenance};
use crate::output::Output;
use crate::planner::Catalog;

impl Session {
    pub(super) fn maintain(&mut self, m: &Maintenance) -> Result<Output> {
        match m {
            Maintenance::Tables(m) => self.maintain_tables(m),
            Maintenance::Checkpoint => self.checkpoint(),
        }
    }

    fn maintain_tables(&mut self, m: &TableMaintenance) -> Result<Output> {
        if m.vacuum && self.txn.is_some() {
            return Err(QueryError::ActiveTransaction("VACUUM"));
        }
        let verb = if m.vacuum { "vacuum" } else { "analyze" };
        let named = !m.tables.is_empty();
        let tables: Vec<(String, Vec<String>)> = if named {
            m.tables.clone()
        } else {
            let mut all: Vec<String> = self.db.table_names();
            all.sort();
            all.into_iter().map(|n| (n, Vec::new())).collect()
        };
        // Every name is checked before any table is touched, as PostgreSQL does.
        let mut schemas = Vec::with_capacity(tables.len());
        for (name, columns) in &tables {
            let t = self.db.table(name).map_err(|_| QueryError::UndefinedTable(name.clone()))?;
            if let Some(c) = columns.iter().find(|c| t.visible().iter().all(|v| &v.name != *c)) {
                return Err(QueryError::UndefinedColumn(format!("{c}\" of relation \"{name}")));
            }
            schemas.push(t);
        }
        for t in schemas {
            if !self.is_superuser() && t.owner != self.current_user() {
                if named {
                    self.warning("01000", format!("skipping \"{}\" --- only table or database owner can {verb} it", t.name));
                }
                continue;
            }
            if m.vacuum {
                if m.verbose {
                    self.info(format!("vacuuming \"public.{}\"", t.name));
                }
                let removed = self.db.store().vacuum(&t.name)?;
                if m.verbose {
                    self.info(format!(
                        "\"public.{}\": compacted; {removed} values out of line and index entries no row needed removed",
                        t.name
                    ));
                }
            }
            if m.analyze && m.verbose {
                self.info(format!("analyzing \"public.{}\": nothing to gather, the planner uses no statistics", t.name));
            }
        }
        Ok(Output::Command { tag: if m.vacuum { "VACUUM" } else { "ANALYZE" }.into() })
    }

    /// PostgreSQL lets superusers (and pg_checkpoint's members) force a checkpoint, in a transaction
    /// block too, read-only or not: what it writes is what was committed, not the transaction's.
    fn checkpoint(&mut self) -> Result<Output> {
        if !self.is_superuser() {
            return Err(QueryError::InsufficientPrivilege("must be superuser or have privileges of pg_checkpoint to do CHECKPOINT".into()));
        }
        self.db.store().flush()?;
        self.db.store().sync_wal()?;
        Ok(Output::Command { tag: "CHECKPOINT".into() })
    }
}
