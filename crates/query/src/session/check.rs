//! What an ALTER TABLE asks of the rows already there: `ADD CHECK` (checked first unless `NOT VALID`, then
//! every write planned from then on checks its rows), `SET NOT NULL`, and `ADD COLUMN` with a DEFAULT or
//! NOT NULL (the rows get the default, in the statement's transaction).

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::planner::Catalog;
use crate::schema::quoted as quote;
use crate::schema::{CheckDef, ColumnDef};

impl Session {
    pub(super) fn add_check(&mut self, table: &str, check: &CheckDef, validate: bool) -> Result<Output> {
        if validate {
            // One row that breaks it is enough: PostgreSQL's error names none. A NULL passes, as it does on write.
            let sql = format!("SELECT 1 FROM {} WHERE NOT ({}) LIMIT 1", quote(table), check.expr);
            if self.any_row(&sql)? {
                return Err(QueryError::Engine {
                    sqlstate: "23514",
                    message: format!("check constraint \"{}\" of relation \"{table}\" is violated by some row", check.name),
                });
            }
        }
        let mut altered = (*self.db.table(table)?).clone();
        altered.checks.push(check.clone());
        self.store_schema(table, &altered)?;
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// Stores a table's changed metadata (journaled in the session's transaction, if any); the catalog's
    /// cache is made again even when it fails.
    pub(super) fn store_schema(&mut self, table: &str, altered: &crate::schema::TableSchema) -> Result<()> {
        let r = self.ddl().set_user_meta(table, altered.encode());
        self.db.invalidate();
        Ok(r?)
    }

    /// The rows of a query, run here (in the session's transaction, if any).
    fn any_row(&mut self, sql: &str) -> Result<bool> {
        let q = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(sql)?.parse_query()?;
        Ok(!self.query_rows(&q, &[])?.is_empty())
    }

    /// 23502 when a row of `table` holds NULL in `column`, as PostgreSQL's SET NOT NULL answers.
    pub(super) fn no_nulls(&mut self, table: &str, column: &str) -> Result<()> {
        let sql = format!("SELECT 1 FROM {} WHERE {} IS NULL LIMIT 1", quote(table), quote(column));
        if self.any_row(&sql)? {
            return Err(QueryError::Engine {
                sqlstate: "23502",
                message: format!("column \"{column}\" of relation \"{table}\" contains null values"),
            });
        }
        Ok(())
    }

    /// `ADD COLUMN c ... DEFAULT x [NOT NULL]`: the column is added, every row there gets the default (an
    /// UPDATE, so a volatile default is drawn for each row, as in PostgreSQL), then NOT NULL is checked and
    /// set. All in one transaction: the session's, or one of the statement's own. The rows are rewritten
    /// (PostgreSQL keeps a constant default in its catalog instead): the statement's time and memory grow
    /// with the table.
    pub(super) fn add_column_filled(
        &mut self,
        table: &str,
        column: &ColumnDef,
        add: impl FnOnce(&mut Self, &ColumnDef) -> Result<Output>,
    ) -> Result<Output> {
        let own = self.txn.is_none();
        if own {
            self.txn = Some(self.db.store().begin_with_view());
        }
        let result = (|| {
            let out = add(self, &ColumnDef { not_null: false, ..column.clone() })?;
            if column.default.is_some() {
                let sql = format!("UPDATE {} SET {} = DEFAULT", quote(table), quote(&column.name));
                let stmt = crate::parse::parse(&sql)?.pop().ok_or_else(|| QueryError::Internal("no statement".into()))?;
                let crate::parse::ParsedStatement::Ast(stmt) = stmt else { return Err(QueryError::Internal("not an UPDATE".into())) };
                let plan =
                    crate::planner::Planner { zone: self.zone(), ..crate::planner::Planner::new(self.db.as_ref(), vec![]) }.plan(&stmt)?;
                self.run(&plan, &[])?;
            }
            if column.not_null {
                self.no_nulls(table, &column.name)?;
                let mut altered = (*self.db.table(table)?).clone();
                altered.columns.iter_mut().filter(|c| c.name == column.name).for_each(|c| c.not_null = true);
                self.store_schema(table, &altered)?;
            }
            Ok(out)
        })();
        if own {
            let end = if result.is_ok() { crate::plan::Plan::Commit } else { crate::plan::Plan::Rollback };
            let ended = self.run(&end, &[]);
            let out = result?;
            ended?;
            return Ok(out);
        }
        result
    }
}
