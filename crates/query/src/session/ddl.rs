//! CREATE TABLE, DROP TABLE, TRUNCATE and ALTER TABLE. Each change of a table's definition is followed by
//! [`Database::invalidate`](crate::database::Database), so that cached schemas and plans are made again;
//! TRUNCATE changes only rows.

use tabula_store::{PkColumn, RebuildError, StoreError, TableDef, TableOptions};

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::plan::CreateTablePlan;
use crate::planner::Catalog;
use crate::schema::{ColumnDef, TableSchema, VERSION_COLUMN};
use crate::types::SqlType;

/// The engine's definition of a table: its key columns' engine types, and the SQL columns as metadata.
pub(super) fn table_def(
    name: &str,
    columns: &[ColumnDef],
    pk: &[usize],
    partition_key_len: usize,
    options: TableOptions,
    meta: Vec<u8>,
) -> TableDef {
    TableDef {
        name: name.to_string(),
        primary_key: pk
            .iter()
            .map(|&i| PkColumn {
                name: columns[i].name.clone(),
                ty: columns[i].ty.pk_type().expect("key columns are checked when planned"),
                auto_increment: columns[i].identity,
            })
            .collect(),
        partition_key_len,
        options,
        user_meta: meta,
        indexes: vec![],
    }
}

impl Session {
    /// The catalog changes of the running statement: journaled in the open transaction, if any, to be
    /// undone unless it commits.
    pub(super) fn ddl(&mut self) -> tabula_store::Ddl<'_> {
        self.db.store().ddl(self.txn.as_mut())
    }

    pub(super) fn create_table(&mut self, c: &CreateTablePlan) -> Result<Output> {
        self.note_temp(&c.name);
        let created = self.create_bare_table(c)?;
        if let (true, Some(action)) = (created, c.on_commit) {
            self.temp.set_on_commit(&c.name, action);
        }
        let out = Output::Command { tag: "CREATE TABLE".into() };
        if !created || c.unique.is_empty() {
            return Ok(out);
        }
        // Its UNIQUE constraints' indexes, on the empty table; if one cannot be made, nor is the table.
        let made = c.unique.iter().try_for_each(|(name, columns, nulls_not_distinct)| {
            let nulls_not_distinct = *nulls_not_distinct;
            let kind = super::index::IndexKind {
                unique: true,
                constraint: true,
                descending: vec![],
                nulls_not_distinct,
                local: false,
                include: vec![],
            };
            self.create_index(&c.name, name.as_deref(), columns, kind, false).map(|_| ())
        });
        if let Err(e) = made {
            let _ = self.ddl().drop_table(&c.name);
            self.db.invalidate();
            return Err(e);
        }
        Ok(out)
    }

    /// The table without its UNIQUE constraints; false when IF NOT EXISTS found it there.
    fn create_bare_table(&mut self, c: &CreateTablePlan) -> Result<bool> {
        let meta = TableSchema::encode_meta(&c.columns, &[], (&c.checks, &c.foreign_keys), self.current_user(), None);
        let def = table_def(&c.name, &c.columns, &c.pk, c.partition_key_len, c.options, meta);
        for col in &c.columns {
            tabula_store::value::validate_name(&col.name)?;
        }
        // A table's name is a relation's: an index or a primary key may hold it too.
        let taken = self.db.store().table_id(&c.name).is_err() && self.relation_exists(&c.name)?;
        let created = if taken { Err(StoreError::TableExists(c.name.clone())) } else { self.ddl().create_table(def) };
        match created {
            Ok(()) => {
                if let Some(column) = &c.generated_hash_prefix {
                    self.notice(
                        "00000",
                        format!(
                            "hash_prefix = {} chosen for table \"{}\": its partition key column \"{column}\" is generated, \
                             and sequential values would all be written to one partition",
                            c.options.hash_prefix, c.name
                        ),
                        Some(
                            "Reads by key and ordered reads work as before. To choose otherwise, create the table \
                             WITH (hash_prefix = N), 0 for none."
                                .into(),
                        ),
                    );
                }
            }
            Err(StoreError::TableExists(_)) if c.if_not_exists => {
                self.notice("42P07", format!("relation \"{}\" already exists, skipping", c.name), None);
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        }
        self.db.invalidate();
        Ok(true)
    }

    /// `DROP TABLE`: each table, and the catalog's cache after even a failed one. A table another one's
    /// foreign key references is 2BP01, unless CASCADE drops those foreign keys first.
    pub(super) fn drop_tables(&mut self, names: &[String], if_exists: bool, cascade: bool) -> Result<Output> {
        // All or none, as in PostgreSQL: a missing table is found before anything is dropped.
        if !if_exists {
            for n in names {
                self.db.store().table_id(n)?;
            }
        }
        for n in names {
            if self.db.relation(n).is_ok_and(|t| t.sequence.is_some()) {
                return Err(crate::database::not_a_table(n).with_hint("Use DROP SEQUENCE to remove a sequence."));
            }
        }
        let present: Vec<String> = names.iter().filter(|n| self.db.table(n).is_ok()).cloned().collect();
        self.drop_dependent_views(&present, "table", cascade)?;
        // The sequences OWNED BY their columns go with them, as in PostgreSQL.
        let mut owned = Vec::new();
        for n in names {
            owned.extend(self.owned_sequences(n, None)?);
        }
        let outside = self.outside_references(names)?;
        if let Some((child, i)) = outside.first().filter(|_| !cascade) {
            let fk = &child.foreign_keys[*i];
            return Err(QueryError::Engine {
                sqlstate: "2BP01",
                message: format!("cannot drop table {} because other objects depend on it", fk.parent),
            }
            .with_message(format!("constraint {} on table {} depends on table {}", fk.name, child.name, fk.parent)));
        }
        for (child, i) in outside {
            let name = &child.foreign_keys[i].name;
            self.notice("00000", format!("drop cascades to constraint {name} on table {}", child.name), None);
            let mut altered = (*self.db.table(&child.name)?).clone();
            altered.foreign_keys.retain(|fk| fk.name != *name);
            self.store_schema(&child.name, &altered)?;
        }
        for n in names {
            match self.ddl().drop_table(n) {
                Ok(()) => {}
                Err(StoreError::UnknownTable(_)) if if_exists => {
                    self.notice("00000", format!("table \"{n}\" does not exist, skipping"), None)
                }
                Err(e) => {
                    self.db.invalidate();
                    return Err(e.into());
                }
            }
        }
        for s in owned {
            let r = self.ddl().drop_table(&s);
            if r.is_err() {
                self.db.invalidate();
            }
            r?;
        }
        self.db.invalidate();
        Ok(Output::Command { tag: "DROP TABLE".into() })
    }

    /// `TRUNCATE`: every row of each table (of all or none: each is found first). In a transaction each
    /// is a new table, so the catalog's cache is made again.
    pub(super) fn truncate(&mut self, names: &[String], cascade: bool, restart_identity: bool) -> Result<Output> {
        for n in names {
            self.db.table(n)?;
        }
        // A table another one references goes with it (CASCADE, PostgreSQL's NOTICE), or not at all.
        let mut names = names.to_vec();
        loop {
            let outside = self.outside_references(&names)?;
            let Some((child, i)) = outside.first() else { break };
            if !cascade {
                return Err(QueryError::NotSupported("cannot truncate a table referenced in a foreign key constraint".into())
                    .with_message(format!("Table \"{}\" references \"{}\".", child.name, child.foreign_keys[*i].parent)));
            }
            self.notice("00000", format!("truncate cascades to table \"{}\"", child.name), None);
            names.push(child.name.clone());
        }
        let names = &names;
        // The sequences OWNED BY their columns restart at once: in a transaction that could roll back and
        // leave the rows with a sequence below them, not supported.
        let mut owned = Vec::new();
        for n in names.iter().filter(|_| restart_identity) {
            owned.extend(self.owned_sequences(n, None)?);
        }
        if !owned.is_empty() && self.txn.is_some() {
            return Err(QueryError::NotSupported(format!(
                "TRUNCATE ... RESTART IDENTITY inside a transaction block, of a table that owns sequence \"{}\"",
                owned[0]
            )));
        }
        let r = names.iter().try_for_each(|n| self.ddl().truncate_table(n));
        if self.txn.is_some() {
            self.db.invalidate();
        }
        r?;
        if restart_identity {
            self.restart_identities(names, &owned)?;
        }
        Ok(Output::Command { tag: "TRUNCATE TABLE".into() })
    }

    /// `ALTER TABLE ... SET (...)` and `RESET (...)` of table options.
    pub(super) fn set_options(&mut self, table: &str, set: &[(String, String)], reset: &[String]) -> Result<Output> {
        let mut o = self.db.store().table(table)?.options;
        for (k, text) in set {
            crate::options::set(&mut o, k, text, false)?;
        }
        for k in reset {
            crate::options::reset(&mut o, k)?;
        }
        self.ddl().set_options(table, o)?;
        self.db.invalidate();
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// `ALTER TABLE ... ADD COLUMN`: metadata only, unless the rows there need a DEFAULT or NOT NULL
    /// (`add_column_filled`).
    pub(super) fn add_column(&mut self, table: &str, column: &ColumnDef, if_not_exists: bool) -> Result<Output> {
        let exists = self.db.table(table)?.column_index(&column.name).is_some();
        if (column.default.is_some() || column.not_null) && !exists {
            return self.add_column_filled(table, column, |s, c| s.add_bare_column(table, c, if_not_exists));
        }
        self.add_bare_column(table, column, if_not_exists)
    }

    fn add_bare_column(&mut self, table: &str, column: &ColumnDef, if_not_exists: bool) -> Result<Output> {
        let schema = self.db.table(table)?;
        if schema.column_index(&column.name).is_some() || column.name == VERSION_COLUMN {
            if if_not_exists {
                return Ok(Output::Command { tag: "ALTER TABLE".into() });
            }
            return Err(QueryError::InvalidTableDefinition(format!("column \"{}\" of relation \"{table}\" already exists", column.name)));
        }
        tabula_store::value::validate_name(&column.name)?;
        let mut altered = (*schema).clone();
        // Before a hidden row id, which stays last.
        altered.columns.insert(schema.visible().len(), column.clone());
        if schema.dropped.contains(&column.name) {
            // The dropped column's cells are still stored: the table is rebuilt without them first, so that
            // none comes back under the new column.
            altered.dropped.retain(|d| *d != column.name);
            let def = TableDef { user_meta: altered.encode(), ..self.db.store().table(table)? };
            let result = self.ddl().rebuild(def, &[(column.name.clone(), None)]);
            self.db.invalidate();
            return match result {
                Ok(()) => Ok(Output::Command { tag: "ALTER TABLE".into() }),
                Err(RebuildError::Store(e)) => Err(e.into()),
                Err(e) => Err(QueryError::Internal(format!("rebuilding \"{table}\" under its own key: {e}"))),
            };
        }
        self.ddl().set_user_meta(table, altered.encode())?;
        self.db.invalidate();
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// `ALTER TABLE ... DROP COLUMN`: its name is kept as dropped, since its old cells stay stored.
    pub(super) fn drop_column(&mut self, table: &str, column: &str, if_exists: bool) -> Result<Output> {
        self.not_under_a_view(table, "DROP COLUMN")?;
        let schema = self.db.table(table)?;
        let Some(i) = schema.columns.iter().position(|c| c.name == column) else {
            if if_exists {
                return Ok(Output::Command { tag: "ALTER TABLE".into() });
            }
            return Err(QueryError::UndefinedColumn(format!("{column}\" of relation \"{table}")));
        };
        if schema.is_pk(i) {
            return Err(QueryError::NotSupported(format!("cannot drop primary key column \"{column}\"")));
        }
        // Another table's foreign key that references it keeps it.
        if let Some((child, k)) =
            self.db.referencing(table)?.into_iter().find(|(c, k)| c.foreign_keys[*k].parent_columns.contains(&column.to_string()))
        {
            return Err(QueryError::Engine {
                sqlstate: "2BP01",
                message: format!("cannot drop column {column} of table {table} because other objects depend on it"),
            }
            .with_message(format!(
                "constraint {} on table {} depends on column {column} of table {table}",
                child.foreign_keys[k].name, child.name
            )));
        }
        // Its indexes go with it, as in PostgreSQL.
        for ix in schema.indexes.iter().filter(|ix| ix.columns.contains(&i) || ix.include.contains(&i)) {
            self.ddl().drop_index(table, &ix.name)?;
        }
        let mut altered = (*schema).clone();
        altered.columns.remove(i);
        altered.dropped.push(column.to_string());
        // So do the CHECK constraints that read it, and its foreign keys.
        altered.checks.retain(|c| !c.reads(column));
        altered.foreign_keys.retain(|fk| !fk.columns.iter().any(|c| c == column));
        self.ddl().set_user_meta(table, altered.encode())?;
        self.db.invalidate();
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// `ALTER TABLE t ADD PRIMARY KEY (...)` on a table created without one (as every pg_dump file adds
    /// keys): its rows move under the key, in bounded memory, and the hidden row id is gone. A row without
    /// a value in a key column is 23502, two rows with one key 23505, as in PostgreSQL; either way the table
    /// stays as it was.
    pub(super) fn add_primary_key(&mut self, table: &str, names: &[String], partition_key_len: usize) -> Result<Output> {
        let schema = self.db.table(table)?;
        if !schema.keyless() {
            return Err(QueryError::InvalidTableDefinition(format!("multiple primary keys for table \"{table}\" are not allowed")));
        }
        let mut columns = schema.visible().to_vec();
        let pk = crate::planner::key_columns(table, &mut columns, names)?;
        // A hash prefix Tabula chose for the row ids goes with them; one the table named stays.
        let options = schema.declared_options();
        let meta =
            TableSchema::encode_meta(&columns, &schema.dropped, (&schema.checks, &schema.foreign_keys), &schema.owner, schema.acl.as_ref());
        let def = table_def(table, &columns, &pk, partition_key_len.min(pk.len()), options, meta);
        let result = self.ddl().rebuild(def, &[]);
        self.db.invalidate();
        match result {
            Ok(()) => Ok(Output::Command { tag: "ALTER TABLE".into() }),
            Err(RebuildError::Null(c)) => Err(QueryError::Engine {
                sqlstate: "23502",
                message: format!("column \"{c}\" of relation \"{table}\" contains null values"),
            }),
            Err(RebuildError::Duplicate(key)) => {
                let cols: Vec<&str> = pk.iter().map(|&c| columns[c].name.as_str()).collect();
                let vals: Vec<String> = key
                    .iter()
                    .zip(&pk)
                    .map(|(v, &c)| crate::types::Datum::from_pk(v).to_pg_text(columns[c].ty).unwrap_or_default())
                    .collect();
                Err(QueryError::Engine { sqlstate: "23505", message: format!("could not create unique index \"{table}_pkey\"") }
                    .with_message(format!("Key ({})=({}) is duplicated.", cols.join(", "), vals.join(", "))))
            }
            Err(RebuildError::Store(e)) => Err(e.into()),
            Err(e @ RebuildError::Convert(_)) => Err(QueryError::Internal(format!("rebuilding \"{table}\": {e}"))),
        }
    }

    /// `ALTER TABLE t RENAME TO u`.
    pub(super) fn rename_table(&mut self, table: &str, to: &str) -> Result<Output> {
        self.not_under_a_view(table, "RENAME")?;
        if self.db.store().table_id(table).is_ok() && self.relation_exists(to)? {
            return Err(QueryError::Engine { sqlstate: "42P07", message: format!("relation \"{to}\" already exists") });
        }
        self.note_temp(to);
        let result = self.ddl().rename_table(table, to);
        self.db.invalidate();
        result?;
        self.rename_references(table, Some(to), None)?;
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// The role `OWNER TO` names.
    fn owner_name(&self, owner: &sqlparser::ast::Owner) -> String {
        use sqlparser::ast::Owner;
        match owner {
            Owner::Ident(id) => crate::schema::ident_name(id),
            Owner::CurrentRole | Owner::CurrentUser => self.current_user().to_string(),
            Owner::SessionUser => self.user.clone(),
        }
    }

    /// `ALTER TABLE t OWNER TO role`: the role must exist (42704); a role that is no superuser may give
    /// a table only to itself (PostgreSQL: to a role it is a member of, and Tabula has no memberships).
    pub(super) fn alter_owner(&mut self, table: &str, owner: &sqlparser::ast::Owner) -> Result<Output> {
        let role = self.owner_name(owner);
        if self.db.roles().get(&role).is_none() {
            return Err(QueryError::UndefinedRole(role));
        }
        if !self.is_superuser() && role != self.current_user() {
            return Err(QueryError::InsufficientPrivilege(format!("must be able to SET ROLE \"{role}\"")));
        }
        // A sequence too: pg_dump gives it its owner by ALTER TABLE.
        let mut altered = (*self.db.relation(table)?).clone();
        altered.owner = role;
        self.ddl().set_user_meta(table, altered.encode())?;
        self.db.invalidate();
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// `ALTER SCHEMA public OWNER TO role`, which pg_dump writes: Tabula's one schema belongs to the
    /// bootstrap superuser, so giving it to that role changes nothing; to another it is not supported.
    pub(super) fn alter_schema_owner(&mut self, schema: &str, owner: &sqlparser::ast::Owner) -> Result<Output> {
        if schema != "public" {
            return Err(QueryError::Engine { sqlstate: "3F000", message: format!("schema \"{schema}\" does not exist") });
        }
        let role = self.owner_name(owner);
        if self.db.roles().get(&role).is_none() {
            return Err(QueryError::UndefinedRole(role));
        }
        if role != crate::roles::BOOTSTRAP {
            return Err(QueryError::NotSupported(format!(
                "schema public belongs to \"{}\": another owner is not supported",
                crate::roles::BOOTSTRAP
            )));
        }
        Ok(Output::Command { tag: "ALTER SCHEMA".into() })
    }

    /// `ALTER TABLE t RENAME COLUMN a TO b`. Cells are stored under their column's name, so the table is
    /// rebuilt with them renamed (where PostgreSQL changes only its catalog); cells still stored under `b`
    /// from a dropped column of that name are left out.
    pub(super) fn rename_column(&mut self, table: &str, from: &str, to: &str) -> Result<Output> {
        self.not_under_a_view(table, "RENAME COLUMN")?;
        let schema = self.db.table(table)?;
        let i =
            schema.column_index(from).filter(|&i| i < schema.columns.len()).ok_or_else(|| QueryError::UndefinedColumn(from.to_string()))?;
        if schema.column_index(to).is_some() || to == VERSION_COLUMN {
            return Err(QueryError::Engine {
                sqlstate: "42701",
                message: format!("column \"{to}\" of relation \"{table}\" already exists"),
            });
        }
        tabula_store::value::validate_name(to)?;
        let mut altered = (*schema).clone();
        altered.columns[i].name = to.to_string();
        altered.checks = altered.checks.iter().map(|c| c.renamed(from, to)).collect();
        for fk in altered.foreign_keys.iter_mut() {
            fk.columns.iter_mut().filter(|c| *c == from).for_each(|c| *c = to.to_string());
        }
        let mut changes = vec![(from.to_string(), Some(to.to_string()))];
        if altered.dropped.iter().any(|d| d == to) {
            altered.dropped.retain(|d| d != to);
            changes.insert(0, (to.to_string(), None));
        }
        let mut def = self.db.store().table(table)?;
        for c in def.primary_key.iter_mut().filter(|c| c.name == from) {
            c.name = to.to_string();
        }
        def.user_meta = altered.encode();
        let result = self.ddl().rebuild(def, &changes);
        self.db.invalidate();
        match result {
            Ok(()) => {
                self.rename_references(table, None, Some((from, to)))?;
                Ok(Output::Command { tag: "ALTER TABLE".into() })
            }
            Err(RebuildError::Store(e)) => Err(e.into()),
            Err(e) => Err(QueryError::Internal(format!("rebuilding \"{table}\" under its own key: {e}"))),
        }
    }

    /// `ALTER TABLE ... ALTER COLUMN`: its default, nullability or type, in the catalog.
    pub(super) fn alter_column(&mut self, table: &str, column: &str, change: &crate::plan::ColumnChange) -> Result<Output> {
        let mut altered = (*self.db.table(table)?).clone();
        let col = altered.columns.iter_mut().find(|c| c.name == column).ok_or_else(|| QueryError::UndefinedColumn(column.to_string()))?;
        match change {
            crate::plan::ColumnChange::Default(d) => col.default = d.clone(),
            crate::plan::ColumnChange::Nullable => col.not_null = false,
            crate::plan::ColumnChange::NotNull => {
                self.no_nulls(table, column)?;
                altered.columns.iter_mut().filter(|c| c.name == column).for_each(|c| c.not_null = true);
            }
            crate::plan::ColumnChange::Convert { ty, max_chars, numeric, using } => {
                return self.convert_column(table, column, *ty, *max_chars, *numeric, using.as_ref());
            }
            crate::plan::ColumnChange::Type { ty, max_chars, numeric } => {
                self.not_under_a_view(table, "ALTER COLUMN TYPE")?;
                // A row the new type cannot hold makes it fail, as PostgreSQL's rewrite would.
                let quoted = format!("\"{}\"", column.replace('"', "\"\""));
                let (outside, error) = match (ty, max_chars) {
                    (t, Some(m)) if t.is_text() && col.max_chars.is_none_or(|old| old > *m) => (
                        Some(format!("char_length({quoted}) > {m}")),
                        QueryError::StringTooLong(format!(
                            "value too long for type {}",
                            ColumnDef { max_chars: Some(*m), ..ColumnDef::plain("", *t) }.type_name()
                        )),
                    ),
                    (SqlType::Int2, _) if col.ty != SqlType::Int2 => (
                        Some(format!("{quoted} NOT BETWEEN -32768 AND 32767")),
                        QueryError::NumericOutOfRange("smallint out of range".into()),
                    ),
                    (SqlType::Int4, _) if col.ty == SqlType::Int8 => (
                        Some(format!("{quoted} NOT BETWEEN -2147483648 AND 2147483647")),
                        QueryError::NumericOutOfRange("integer out of range".into()),
                    ),
                    _ => (None, QueryError::Internal(String::new())),
                };
                if let Some(condition) = outside {
                    let sql = format!("SELECT 1 FROM \"{}\" WHERE {condition} LIMIT 1", table.replace('"', "\"\""));
                    let q = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(&sql)?.parse_query()?;
                    if !self.query_rows(&q, &[])?.is_empty() {
                        return Err(error);
                    }
                }
                let col =
                    altered.columns.iter_mut().find(|c| c.name == column).ok_or_else(|| QueryError::UndefinedColumn(column.to_string()))?;
                col.ty = *ty;
                col.max_chars = *max_chars;
                col.numeric = *numeric;
            }
        }
        self.ddl().set_user_meta(table, altered.encode())?;
        self.db.invalidate();
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }
}
