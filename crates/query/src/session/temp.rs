//! The session's side of temporary tables (`crate::temp`): names rewritten before planning, their ON
//! COMMIT actions, and the tables dropped when the session ends or is discarded.

use super::*;
use crate::maintenance::Maintenance;

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
            ParsedStatement::Maintenance(Maintenance::Tables(mut m)) => {
                for (t, _) in m.tables.iter_mut() {
                    *t = self.temp.resolve(t, &exists);
                }
                ParsedStatement::Maintenance(Maintenance::Tables(m))
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

    /// At a transaction's end (a COMMIT, or any statement outside a transaction block, which is one): the
    /// temporary tables' ON COMMIT actions. DELETE ROWS empties a table that holds rows; DROP drops it. At a
    /// rollback they find nothing to do: the rows went with it, and a table made in it is gone.
    pub(super) fn temp_on_commit(&mut self) -> Result<()> {
        let db = self.db.clone();
        for (table, action) in self.temp.due(&|p| db.relation(p).is_ok()) {
            match action {
                crate::temp::OnCommit::Drop => {
                    self.ddl().drop_table(&table)?;
                    self.db.invalidate();
                }
                crate::temp::OnCommit::DeleteRows => {
                    let one =
                        tabula_store::RangeRequest { limit: Some(1), ..tabula_store::RangeRequest::full(tabula_store::Direction::Forward) };
                    if !tabula_store::Access::get_range(self.db.store().as_ref(), &table, &one)?.rows.is_empty() {
                        self.truncate(&[table], false, false)?;
                    }
                }
            }
        }
        Ok(())
    }
}
