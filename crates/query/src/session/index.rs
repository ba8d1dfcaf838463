//! CREATE INDEX, DROP INDEX and ALTER INDEX ... RENAME. An index's name is a relation's name, as in
//! PostgreSQL: no table, index or primary key (`<table>_pkey`) may share it.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::Session;
use tabula_store::{BuildPhase, IndexDef, StoreError};

use crate::activity::IndexBuildProgress;

use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::planner::Catalog;

/// A build's progress goes to the session's `pg_stat_progress_create_index` row, and to the log every
/// [`LOG_EVERY`]; cancel and statement_timeout stop it.
struct BuildWatch {
    interrupt: crate::exec::Interrupt,
    activity: crate::activity::Handle,
    table: String,
    index: String,
    logged: Cell<Instant>,
}

/// How often a long build logs how far it has come.
const LOG_EVERY: Duration = Duration::from_secs(10);

impl tabula_store::BuildWatch for BuildWatch {
    fn stop(&self) -> bool {
        self.interrupt.check().is_err()
    }

    fn progress(&self, phase: BuildPhase, done: u64, total: u64) {
        let (table, index) = (self.table.clone(), self.index.clone());
        self.activity.update(|b| b.index_build = Some(IndexBuildProgress { table, index, phase: phase.name(), done, total }));
        if self.logged.get().elapsed() >= LOG_EVERY {
            self.logged.set(Instant::now());
            tracing::info!(table = %self.table, index = %self.index, "CREATE INDEX: {}, {done} of about {total} rows", phase.name());
        }
    }
}

/// What an index is: unique or not, whether it is a UNIQUE constraint's, local or global.
pub(super) struct IndexKind {
    pub unique: bool,
    pub constraint: bool,
    /// The columns in descending order.
    pub descending: Vec<bool>,
    /// NULLS NOT DISTINCT.
    pub nulls_not_distinct: bool,
    /// A local index (`WITH (local = true)`).
    pub local: bool,
    /// INCLUDE columns.
    pub include: Vec<String>,
}

/// PostgreSQL's longest name (NAMEDATALEN - 1 bytes).
const MAX_NAME: usize = 63;

impl Session {
    /// The table whose index is named `name`, if any.
    fn index_table(&self, name: &str) -> Result<Option<String>> {
        // The session's temporary tables first, as its search path has them.
        let temp = self.temp.live(&|p| self.db.relation(p).is_ok());
        for t in temp.into_iter().chain(self.db.table_names()) {
            if self.db.table(&t)?.indexes.iter().any(|i| i.name == name) {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// Whether a relation (table, index or primary key) is named `name`.
    pub(super) fn relation_exists(&self, name: &str) -> Result<bool> {
        let pkey = name.strip_suffix("_pkey").is_some_and(|t| self.db.store().table_id(t).is_ok());
        Ok(self.db.store().table_id(name).is_ok() || pkey || self.index_table(name)?.is_some())
    }

    /// PostgreSQL's name for an unnamed index: `<table>_<columns>_<kind>` (`idx`, or `key` for a UNIQUE
    /// constraint), cut to 63 bytes, numbered from 1 until no relation has it.
    pub(super) fn index_name(&self, table: &str, columns: &[String], kind: &str) -> Result<String> {
        let base = format!("{}_{}", tabula_store::value::public_part(table), columns.join("_"));
        for n in 0.. {
            let suffix = if n == 0 { format!("_{kind}") } else { format!("_{kind}{n}") };
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

    pub(super) fn create_index(
        &mut self,
        table: &str,
        name: Option<&str>,
        columns: &[String],
        kind: IndexKind,
        if_not_exists: bool,
    ) -> Result<Output> {
        self.need_owner(table)?;
        let tag = if kind.constraint { "ALTER TABLE" } else { "CREATE INDEX" };
        let name = match name {
            Some(n) if self.relation_exists(n)? => {
                if if_not_exists {
                    self.notice("42P07", format!("relation \"{n}\" already exists, skipping"), None);
                    return Ok(Output::Command { tag: tag.into() });
                }
                return Err(QueryError::Engine { sqlstate: "42P07", message: format!("relation \"{n}\" already exists") });
            }
            Some(n) => n.to_string(),
            None => self.index_name(table, columns, if kind.constraint { "key" } else { "idx" })?,
        };
        tabula_store::value::validate_name(&name)?;
        // cancel and statement_timeout stop the build; it then leaves nothing.
        let watch = BuildWatch {
            interrupt: self.interrupt.clone(),
            activity: self.activity.handle(),
            table: table.to_string(),
            index: name.clone(),
            logged: Cell::new(Instant::now()),
        };
        tracing::info!(table, index = %name, "CREATE INDEX: building");
        let r = self.ddl().create_index(
            table,
            IndexDef::new(&name, columns, kind.unique, kind.constraint)
                .with_descending(kind.descending)
                .with_nulls_not_distinct(kind.nulls_not_distinct)
                .with_local(kind.local)
                .with_include(kind.include),
            &watch,
        );
        self.activity.update(|b| b.index_build = None);
        match &r {
            Ok(()) => tracing::info!(table, index = %name, "CREATE INDEX: built"),
            Err(e) => tracing::info!(table, index = %name, "CREATE INDEX: failed, nothing left behind: {e}"),
        }
        self.db.invalidate();
        match r {
            Err(StoreError::Interrupted) => Err(self.interrupt.check().err().unwrap_or(QueryError::Cancelled)),
            Ok(()) => Ok(Output::Command { tag: tag.into() }),
            // Two rows already hold the same values: PostgreSQL's words for a build that finds them.
            Err(StoreError::UniqueViolation { columns, values, .. }) => {
                let t = self.db.table(table)?;
                let types: Vec<_> =
                    columns.iter().map(|c| t.column_index(c).map_or(crate::types::SqlType::Text, |i| t.column_type(i))).collect();
                Err(QueryError::Engine { sqlstate: "23505", message: format!("could not create unique index \"{name}\"") }.with_message(
                    format!("Key ({})=({}) is duplicated.", columns.join(", "), crate::error::typed_key_values(&values, &types)),
                ))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `DROP INDEX`: all or none, as PostgreSQL (each index is found before any is dropped).
    pub(super) fn drop_indexes(&mut self, names: &[String], if_exists: bool) -> Result<Output> {
        let mut found = Vec::new();
        for n in names {
            match self.index_table(n)? {
                Some(t) if self.db.table(&t)?.indexes.iter().any(|i| i.name == *n && i.constraint) => {
                    return Err(QueryError::Engine {
                        sqlstate: "2BP01",
                        message: format!("cannot drop index {n} because constraint {n} on table {t} requires it"),
                    })
                }
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

    /// `ALTER TABLE t DROP CONSTRAINT name`: a UNIQUE constraint goes with its index, a CHECK from the
    /// table's metadata.
    pub(super) fn drop_constraint(&mut self, table: &str, name: &str, if_exists: bool) -> Result<Output> {
        self.need_owner(table)?;
        let schema = self.db.table(table)?;
        if schema.indexes.iter().any(|i| i.name == name && i.constraint) {
            let r = self.ddl().drop_index(table, name);
            self.db.invalidate();
            r?;
        } else if schema.checks.iter().any(|c| c.name == name) || schema.foreign_keys.iter().any(|f| f.name == name) {
            let mut altered = (*schema).clone();
            altered.checks.retain(|c| c.name != name);
            altered.foreign_keys.retain(|f| f.name != name);
            self.store_schema(table, &altered)?;
        } else if name == format!("{table}_pkey") && !schema.keyless() {
            return Err(QueryError::NotSupported(format!("dropping the primary key of \"{table}\": rows are stored by it")));
        } else if if_exists {
            self.notice("00000", format!("constraint \"{name}\" of relation \"{table}\" does not exist, skipping"), None);
        } else {
            return Err(QueryError::Engine {
                sqlstate: "42704",
                message: format!("constraint \"{name}\" of relation \"{table}\" does not exist"),
            });
        }
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// A unique index's 23505 with its values printed as their columns' types print them (a date as
    /// `2024-01-01`, not the day number the engine stores).
    pub(super) fn typed_values(&self, e: QueryError) -> QueryError {
        match e {
            QueryError::WithContext { inner, context } => QueryError::WithContext { inner: Box::new(self.typed_values(*inner)), context },
            QueryError::UniqueIndex { table, index, columns, values, types: None } => {
                let types =
                    self.db.table(&table).ok().map(|t| {
                        columns.iter().map(|c| t.column_index(c).map_or(crate::types::SqlType::Text, |i| t.column_type(i))).collect()
                    });
                QueryError::UniqueIndex { table, index, columns, values, types }
            }
            e => e,
        }
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
