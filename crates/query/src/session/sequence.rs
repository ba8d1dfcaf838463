//! CREATE, ALTER and DROP SEQUENCE, and an identity added to a column as pg_dump writes it. A sequence is an
//! empty table of the store's whose counter draws its values (`crate::sequences::def`), so that its
//! creation, change and drop are transactional as a table's are.

use tabula_store::{StoreError, TableOptions};

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::planner::Catalog;
use crate::schema::{ColumnDef, TableSchema};
use crate::sequences::def::{SequenceDef, SequenceOptions, COUNTER_COLUMN};
use crate::sequences::parse::{AlterSequence, SequenceStatement};
use crate::sequences::{self, SequenceSource};
use crate::types::SqlType;

fn command(tag: &str) -> Result<Output> {
    Ok(Output::Command { tag: tag.into() })
}

fn no_sequence(name: &str) -> QueryError {
    QueryError::Engine { sqlstate: "42P01", message: format!("relation \"{name}\" does not exist") }
}

/// Whether a DEFAULT's SQL text draws from sequence `name`.
fn draws_from(default: &str, name: &str) -> bool {
    sequences::drawn_by(default).as_deref() == Some(name)
}

impl Session {
    pub(super) fn run_sequence(&mut self, s: &SequenceStatement) -> Result<Output> {
        match s {
            SequenceStatement::Create { name, if_not_exists, options } => self.create_sequence(name, *if_not_exists, options),
            SequenceStatement::Alter { name, if_exists, change } => self.alter_sequence(name, *if_exists, change),
            SequenceStatement::AddIdentity { table, column, always, sequence, options } => {
                self.add_identity(table, column, *always, sequence.as_deref(), options)
            }
        }
    }

    /// The made sequence `name`: 42P01 when there is none, 42809 when it is a table.
    fn made_sequence(&self, name: &str) -> Result<(std::sync::Arc<TableSchema>, SequenceDef)> {
        let t = self.db.relation(name).map_err(|e| match e {
            QueryError::Store(StoreError::UnknownTable(_)) => no_sequence(name),
            e => e,
        })?;
        match &t.sequence {
            Some(d) => {
                let d = d.clone();
                Ok((t, d))
            }
            None => Err(QueryError::Engine { sqlstate: "42809", message: format!("\"{name}\" is not a sequence") }
                .with_hint("Use DROP TABLE to remove a table.")),
        }
    }

    /// Whether a relation or a serial column's sequence has the name.
    fn name_taken(&self, name: &str) -> Result<bool> {
        Ok(self.relation_exists(name)? || sequences::all(&self.db.relations()?).iter().any(|s| s.name == name))
    }

    /// `OWNED BY t.c`: a table of Tabula's with that column (PostgreSQL's checks and messages).
    fn check_owner(&self, owner: &Option<(String, String)>) -> Result<()> {
        let Some((table, column)) = owner else { return Ok(()) };
        if table.contains('.') {
            return Err(QueryError::Engine {
                sqlstate: "55000",
                message: "sequence must be in same schema as table it is linked to".into(),
            });
        }
        let t = self.db.table(table)?;
        if t.column_index(column).is_none() {
            return Err(QueryError::UndefinedColumn(format!("{column}\" of relation \"{table}")));
        }
        Ok(())
    }

    fn create_sequence(&mut self, name: &str, if_not_exists: bool, options: &SequenceOptions) -> Result<Output> {
        if options.restart.is_some() {
            return Err(QueryError::Syntax("syntax error at or near \"RESTART\"".into()));
        }
        if self.name_taken(name)? {
            if if_not_exists {
                self.notice("42P07", format!("relation \"{name}\" already exists, skipping"), None);
                return command("CREATE SEQUENCE");
            }
            return Err(QueryError::DuplicateTable(name.into()));
        }
        let def = SequenceDef::define(None, options)?;
        self.check_owner(&def.owned_by)?;
        let counter = ColumnDef { not_null: true, identity: true, ..ColumnDef::plain(COUNTER_COLUMN, SqlType::Int8) };
        let schema = TableSchema { sequence: Some(def.clone()), ..TableSchema::stand_in(name, counter, self.current_user()) };
        let table = super::ddl::table_def(name, &schema.columns, &[0], 1, TableOptions::default(), schema.encode());
        let made = self.ddl().create_table(table);
        self.db.invalidate();
        made?;
        // The counter's first value is where START lies on the sequence's grid.
        let (n, _) = def.restart_at(def.start)?;
        if n != 1 {
            self.db.store().sequence_restart(name, n, false)?;
        }
        command("CREATE SEQUENCE")
    }

    fn alter_sequence(&mut self, name: &str, if_exists: bool, change: &AlterSequence) -> Result<Output> {
        let (t, old) = match self.made_sequence(name) {
            Err(e) if if_exists && e.sqlstate() == "42P01" => {
                self.notice("00000", format!("relation \"{name}\" does not exist, skipping"), None);
                return command("ALTER SEQUENCE");
            }
            r => r?,
        };
        match change {
            AlterSequence::Logged => {}
            AlterSequence::Rename(to) => {
                if self.name_taken(to)? {
                    return Err(QueryError::DuplicateTable(to.clone()));
                }
                let r = self.ddl().rename_table(name, to);
                self.db.invalidate();
                r?;
                // What this session drew of it is remembered under its new name (PostgreSQL's, by OID).
                self.sequences.lock().renamed(name, to);
            }
            AlterSequence::Owner(role) => {
                let owner = sqlparser::ast::Owner::Ident(sqlparser::ast::Ident::with_quote('"', role));
                self.alter_owner(name, &owner)?;
            }
            AlterSequence::Options(o) => {
                let def = SequenceDef::define(Some(&old), o)?;
                self.check_owner(&def.owned_by)?;
                if def != old {
                    self.store_schema(name, &TableSchema { sequence: Some(def.clone()), ..(*t).clone() })?;
                }
                if let Some(at) = o.restart {
                    let value = at.unwrap_or(def.start);
                    if value < def.min || value > def.max {
                        let (bound, which, word) =
                            if value < def.min { (def.min, "less", "MINVALUE") } else { (def.max, "greater", "MAXVALUE") };
                        return Err(QueryError::Engine {
                            sqlstate: "22023",
                            message: format!("RESTART value ({value}) cannot be {which} than {word} ({bound})"),
                        });
                    }
                    sequences::restart(self.db.as_ref(), name, &def, value, false)?;
                }
            }
        }
        command("ALTER SEQUENCE")
    }

    /// `DROP SEQUENCE`: all named or none; one a column's DEFAULT draws from only with CASCADE, which drops
    /// the default (2BP01 otherwise, as PostgreSQL).
    pub(super) fn drop_sequences(&mut self, names: &[String], if_exists: bool, cascade: bool) -> Result<Output> {
        let mut found = Vec::new();
        for n in names {
            match self.made_sequence(n) {
                Ok(_) => found.push(n.clone()),
                Err(e) if e.sqlstate() == "42P01" && sequences::all(&self.db.relations()?).iter().any(|s| s.name == *n) => {
                    return Err(QueryError::Engine {
                        sqlstate: "2BP01",
                        message: format!("cannot drop sequence {n} because other objects depend on it"),
                    }
                    .with_message(format!("the sequence of a generated key column of table {}", n.trim_end_matches("_seq")))
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
                }
                Err(e) if if_exists && e.sqlstate() == "42P01" => {
                    self.notice("00000", format!("sequence \"{n}\" does not exist, skipping"), None)
                }
                Err(e) => return Err(e),
            }
        }
        for n in &found {
            for table in self.db.table_names() {
                let t = self.db.table(&table)?;
                let using: Vec<usize> =
                    (0..t.columns.len()).filter(|&i| t.columns[i].default.as_deref().is_some_and(|d| draws_from(d, n))).collect();
                if using.is_empty() {
                    continue;
                }
                let column = &t.columns[using[0]].name;
                if !cascade {
                    return Err(QueryError::Engine {
                        sqlstate: "2BP01",
                        message: format!("cannot drop sequence {n} because other objects depend on it"),
                    }
                    .with_message(format!("default value for column {column} of table {table} depends on sequence {n}"))
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
                }
                let mut altered = (*t).clone();
                for &i in &using {
                    self.notice("00000", format!("drop cascades to default value for column {} of table {table}", t.columns[i].name), None);
                    altered.columns[i].default = None;
                }
                self.store_schema(&table, &altered)?;
            }
        }
        self.drop_dependent_views(&found, "sequence", cascade)?;
        for n in &found {
            let r = self.ddl().drop_table(n);
            self.db.invalidate();
            r?;
        }
        command("DROP SEQUENCE")
    }

    /// The made sequences OWNED BY a column of `table` (by `column` only, if given).
    pub(super) fn owned_sequences(&self, table: &str, column: Option<&str>) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for n in self.db.sequence_names() {
            let owned = self.db.relation(&n)?.sequence.as_ref().and_then(|d| d.owned_by.clone());
            if owned.is_some_and(|(t, c)| t == table && column.is_none_or(|col| col == c)) {
                out.push(n);
            }
        }
        Ok(out)
    }

    /// `TRUNCATE ... RESTART IDENTITY`, after the tables were emptied: each generated key's counter starts
    /// at 1 again (in a transaction, the counter of the table TRUNCATE made, which a rollback drops with
    /// it), and each of the `owned` sequences at its START.
    pub(super) fn restart_identities(&mut self, tables: &[String], owned: &[String]) -> Result<()> {
        for t in tables {
            if sequences::of_table(&*self.db.table(t)?).is_some() {
                self.db.store().sequence_restart(t, 1, false)?;
            }
        }
        for n in owned {
            let (_, def) = self.made_sequence(n)?;
            sequences::restart(self.db.as_ref(), n, &def, def.start, false)?;
        }
        Ok(())
    }

    /// A table or column renamed: the sequences OWNED BY it follow.
    pub(super) fn rename_sequence_owners(&mut self, table: &str, table_to: Option<&str>, column: Option<(&str, &str)>) -> Result<()> {
        for n in self.owned_sequences(table, column.map(|(from, _)| from))? {
            let t = self.db.relation(&n)?;
            let mut def = t.sequence.clone().expect("a sequence");
            if let Some((tab, col)) = def.owned_by.as_mut() {
                if let Some(to) = table_to {
                    *tab = to.to_string();
                }
                if let Some((_, to)) = column {
                    *col = to.to_string();
                }
            }
            self.store_schema(&n, &TableSchema { sequence: Some(def), ..(*t).clone() })?;
        }
        Ok(())
    }

    /// `ALTER TABLE t ALTER COLUMN c ADD GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME s ...)`, as pg_dump
    /// writes an identity column: the sequence, OWNED BY the column, and the column's DEFAULT drawing from
    /// it. GENERATED ALWAYS is not supported here (it must refuse values given for the column).
    fn add_identity(&mut self, table: &str, column: &str, always: bool, sequence: Option<&str>, o: &SequenceOptions) -> Result<Output> {
        if always {
            return Err(QueryError::NotSupported("ALTER COLUMN ... ADD GENERATED ALWAYS AS IDENTITY".into()));
        }
        let t = self.db.table(table)?;
        let Some(i) = t.column_index(column).filter(|&i| t.columns[i].hidden.is_none()) else {
            return Err(QueryError::UndefinedColumn(format!("{column}\" of relation \"{table}")));
        };
        let c = &t.columns[i];
        if !matches!(c.ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
            return Err(QueryError::Engine {
                sqlstate: "22023",
                message: "identity column type must be smallint, integer, or bigint".into(),
            });
        }
        if !c.not_null && !t.is_pk(i) {
            return Err(QueryError::Engine {
                sqlstate: "55000",
                message: format!("column \"{column}\" of relation \"{table}\" must be declared NOT NULL before identity can be added"),
            });
        }
        if c.identity || c.default.is_some() {
            return Err(QueryError::Engine {
                sqlstate: "55000",
                message: format!("column \"{column}\" of relation \"{table}\" already has a default value"),
            });
        }
        let name = sequence.map_or_else(|| format!("{table}_{column}_seq"), str::to_string);
        let options = SequenceOptions { ty: Some(o.ty.unwrap_or(c.ty)), owned_by: Some(Some((table.into(), column.into()))), ..o.clone() };
        self.create_sequence(&name, false, &options)?;
        let mut altered = (*self.db.table(table)?).clone();
        altered.columns[i].default = Some(format!("nextval('{}'::regclass)", name.replace('\'', "''")));
        self.store_schema(table, &altered)?;
        command("ALTER TABLE")
    }
}
