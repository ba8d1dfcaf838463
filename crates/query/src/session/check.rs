//! `ALTER TABLE ... ADD CHECK`: the rows already there are checked first (unless `NOT VALID`), then the
//! constraint joins the table's metadata, and every write planned from then on checks its rows.

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::planner::Catalog;
use crate::schema::CheckDef;

impl Session {
    pub(super) fn add_check(&mut self, table: &str, check: &CheckDef, validate: bool) -> Result<Output> {
        if validate {
            // One row that breaks it is enough: PostgreSQL's error names none. A NULL passes, as it does on write.
            let sql = format!("SELECT 1 FROM \"{}\" WHERE NOT ({}) LIMIT 1", table.replace('"', "\"\""), check.expr);
            let q = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(&sql)?.parse_query()?;
            if !self.query_rows(&q, &[])?.is_empty() {
                return Err(QueryError::Engine {
                    sqlstate: "23514",
                    message: format!("check constraint \"{}\" of relation \"{table}\" is violated by some row", check.name),
                });
            }
        }
        let mut altered = (*self.db.table(table)?).clone();
        altered.checks.push(check.clone());
        let r = self.ddl().set_user_meta(table, altered.encode());
        self.db.invalidate();
        r?;
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }
}
