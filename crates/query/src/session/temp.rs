//! The session's side of temporary tables (`crate::temp`): names rewritten before planning, and the tables
//! dropped when the session ends or is discarded.

use super::*;

impl Session {
    /// The statement with its temporary tables' names made private (`TempTables::rewrite`).
    pub(super) fn temp_names(&self, stmt: ParsedStatement) -> Result<ParsedStatement> {
        let exists = |p: &str| self.db.relation(p).is_ok();
        Ok(match stmt {
            // In place: every statement comes this way, and most have nothing to rewrite.
            ParsedStatement::Ast(mut s) => {
                self.temp.rewrite(&mut s, &exists)?;
                ParsedStatement::Ast(s)
            }
            ParsedStatement::Reset { table, options } => ParsedStatement::Reset { table: self.temp.resolve(&table, &exists), options },
            ParsedStatement::Maintenance(mut m) => {
                for (t, _) in m.tables.iter_mut() {
                    *t = self.temp.resolve(t, &exists);
                }
                ParsedStatement::Maintenance(m)
            }
            s => s,
        })
    }

    /// Notes a table the session made or renamed, which may be one of its temporary tables.
    pub(super) fn note_temp(&mut self, table: &str) {
        self.temp.note(table);
    }

    /// Drops the session's temporary tables: at its end, and for `DISCARD TEMP` and `DISCARD ALL` (in the
    /// open transaction, if any, as PostgreSQL's DISCARD TEMP). A table that cannot be dropped at the
    /// session's end is dropped when the store next opens.
    pub(super) fn drop_temp_tables(&mut self) -> Result<()> {
        let live = self.temp.live(&|p| self.db.relation(p).is_ok());
        let dropped = live.iter().try_for_each(|p| self.ddl().drop_table(p));
        if !live.is_empty() {
            self.db.invalidate();
        }
        Ok(dropped?)
    }
}
