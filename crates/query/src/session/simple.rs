//! The simple protocol's query string: its statements run in order, each answered in the zone it ran in.

use std::sync::Arc;

use sqlparser::ast::Statement;

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::parse::{parse, ParsedStatement};
use crate::types::Zone;

impl Session {
    /// Runs a simple-protocol query string: every statement in order, stopping at the first error.
    pub fn execute_sql(&mut self, sql: &str) -> Vec<Result<Output>> {
        self.execute_sql_zoned(sql).into_iter().map(|(r, _)| r).collect()
    }

    /// [`Session::execute_sql`], each result with the `TimeZone` its statement ran in: the zone its
    /// timestamptz values are shown in, though a later statement of the string sets another.
    pub fn execute_sql_zoned(&mut self, sql: &str) -> Vec<(Result<Output>, Zone)> {
        self.absorb_stream_failure();
        let stmts = match self.db.check_size(sql).and_then(|_| parse(sql)) {
            Ok(s) => s,
            Err(e) => {
                self.note_error();
                return vec![(Err(e), self.zone())];
            }
        };
        let mut out = Vec::new();
        let mut stmts = stmts.into_iter().peekable();
        while let Some(s) = stmts.next() {
            self.arm_timeout();
            let r = self.check_not_failed(&s).and_then(|_| self.prepare_parsed(sql, Some(s), &[])).and_then(|p| self.execute(&p, &[]));
            let r = r.map_err(|e| e.located(sql));
            self.interrupt.deadline = Arc::default();
            // A streamed result is read as the client takes it, which is after the whole string has run: the
            // statements after it could change what it reads. It is read out before they run.
            let r = match r {
                Ok(Output::Stream { columns, cursor }) if stmts.peek().is_some() => {
                    let rows = cursor.collect::<Result<Vec<_>>>();
                    if rows.is_err() {
                        self.note_error();
                    }
                    rows.map(|rows| Output::Rows { tag: format!("SELECT {}", rows.len()), columns, rows })
                }
                r => r,
            };
            let failed = r.is_err();
            out.push((r, self.zone()));
            if failed {
                // Planning errors too: PostgreSQL fails the transaction on any error in it.
                self.note_error();
                break;
            }
        }
        if out.is_empty() {
            out.push((Ok(Output::Empty), self.zone()));
        }
        out
    }

    /// In a failed transaction only its end is accepted (COMMIT, ROLLBACK, ROLLBACK TO SAVEPOINT), before
    /// anything is planned, as PostgreSQL refuses even a statement that would not plan.
    pub(super) fn check_not_failed(&self, s: &ParsedStatement) -> Result<()> {
        let ends = matches!(s, ParsedStatement::Ast(s) if matches!(s.as_ref(), Statement::Commit { .. } | Statement::Rollback { .. }));
        if self.failed && !ends {
            return Err(QueryError::InFailedTransaction);
        }
        Ok(())
    }
}
