//! CREATE TABLE, DROP TABLE, TRUNCATE and ALTER TABLE. Each change of a table's definition is followed by
//! [`Database::invalidate`](crate::database::Database), so that cached schemas and plans are made again;
//! TRUNCATE changes only rows.

use tabula_store::{PkColumn, StoreError, TableDef};

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::plan::CreateTablePlan;
use crate::planner::Catalog;
use crate::schema::{ColumnDef, TableSchema, VERSION_COLUMN};

impl Session {
    pub(super) fn create_table(&mut self, c: &CreateTablePlan) -> Result<Output> {
        let def = TableDef {
            name: c.name.clone(),
            primary_key: c
                .pk
                .iter()
                .map(|&i| PkColumn {
                    name: c.columns[i].name.clone(),
                    ty: c.columns[i].ty.pk_type().unwrap(),
                    auto_increment: c.columns[i].identity,
                })
                .collect(),
            partition_key_len: c.partition_key_len,
            options: c.options,
            user_meta: TableSchema::encode_meta(&c.columns, &[], self.current_user(), None),
        };
        for col in &c.columns {
            tabula_store::value::validate_name(&col.name)?;
        }
        match self.db.store().create_table(def) {
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
                self.notice("42P07", format!("relation \"{}\" already exists, skipping", c.name), None)
            }
            Err(e) => return Err(e.into()),
        }
        self.db.invalidate();
        Ok(Output::Command { tag: "CREATE TABLE".into() })
    }

    /// `DROP TABLE`: each table, and the catalog's cache after even a failed one.
    pub(super) fn drop_tables(&mut self, names: &[String], if_exists: bool) -> Result<Output> {
        for n in names {
            match self.db.store().drop_table(n) {
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
        self.db.invalidate();
        Ok(Output::Command { tag: "DROP TABLE".into() })
    }

    /// `TRUNCATE`: every row of each table, at once.
    pub(super) fn truncate(&mut self, names: &[String]) -> Result<Output> {
        for n in names {
            self.db.store().truncate_table(n)?;
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
        self.db.store().set_options(table, o)?;
        self.db.invalidate();
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// `ALTER TABLE ... ADD COLUMN`.
    pub(super) fn add_column(&mut self, table: &str, column: &ColumnDef, if_not_exists: bool) -> Result<Output> {
        let schema = self.db.table(table)?;
        if schema.column_index(&column.name).is_some() || column.name == VERSION_COLUMN {
            if if_not_exists {
                return Ok(Output::Command { tag: "ALTER TABLE".into() });
            }
            return Err(QueryError::InvalidTableDefinition(format!("column \"{}\" of relation \"{table}\" already exists", column.name)));
        }
        tabula_store::value::validate_name(&column.name)?;
        if schema.dropped.contains(&column.name) {
            return Err(QueryError::NotSupported(format!(
                "column \"{}\" was dropped from \"{table}\" and its old values are still stored: choose another name",
                column.name
            )));
        }
        let mut altered = (*schema).clone();
        altered.columns.push(column.clone());
        self.db.store().set_user_meta(table, altered.encode())?;
        self.db.invalidate();
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// `ALTER TABLE ... DROP COLUMN`: its name is kept as dropped, since its old cells stay stored.
    pub(super) fn drop_column(&mut self, table: &str, column: &str, if_exists: bool) -> Result<Output> {
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
        let mut altered = (*schema).clone();
        altered.columns.remove(i);
        altered.dropped.push(column.to_string());
        self.db.store().set_user_meta(table, altered.encode())?;
        self.db.invalidate();
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }
}
