//! Statements and cursors named in SQL: PREPARE, EXECUTE, DEALLOCATE, DECLARE, FETCH, MOVE and CLOSE.

use std::sync::Arc;

use sqlparser::ast::Statement;

use super::{Prepared, Session};
use crate::error::{QueryError, Result};
use crate::expr::Expr;
use crate::output::Output;
use crate::parse::ParsedStatement;
use crate::plan::{FetchDirection, OutputColumn};
use crate::types::{Datum, SqlType};

impl Session {
    /// A query inside another statement, planned by whichever engine takes it.
    pub(super) fn prepare_query(&self, query: &sqlparser::ast::Query, param_types: &[Option<SqlType>]) -> Result<Prepared> {
        let stmt = Statement::Query(Box::new(query.clone()));
        self.prepare_parsed(&stmt.to_string(), Some(ParsedStatement::Ast(Box::new(stmt))), param_types)
    }

    /// `DECLARE`: runs the query and keeps its stream for FETCH. Without `WITH HOLD` a cursor only lives
    /// inside a transaction block, as in PostgreSQL.
    pub(super) fn declare_cursor(&mut self, name: &str, hold: bool, query: &sqlparser::ast::Query, params: &[Datum]) -> Result<Output> {
        if self.txn.is_none() && !hold {
            return Err(QueryError::NoTransaction("DECLARE CURSOR"));
        }
        self.cursors.columns(name).err().ok_or_else(|| QueryError::DuplicateCursor(name.to_string()))?;
        let given: Vec<Option<SqlType>> = vec![None; params.len()];
        let p = self.prepare_query(query, &given)?;
        let (columns, rows): (_, crate::cursors::CursorRows) = match self.execute_bound(&p, params)? {
            Output::Stream { columns, cursor } => (columns, Box::new(cursor)),
            Output::Rows { columns, rows, .. } => (columns, Box::new(rows.into_iter().map(Ok))),
            _ => return Err(QueryError::Syntax("DECLARE CURSOR needs a query that returns rows".into())),
        };
        // The stream keeps this statement's deadline cell: each FETCH sets its own deadline there.
        let deadline = self.interrupt.deadline.clone();
        deadline.set(None);
        self.cursors.declare(name, columns, rows, deadline, hold, self.txn.is_some())?;
        Ok(Output::Command { tag: "DECLARE CURSOR".into() })
    }

    /// `EXECUTE name (args)`: the arguments, constants, become the statement's parameters.
    pub(super) fn execute_prepared(&mut self, name: &str, args: &[Expr], params: &[Datum]) -> Result<Output> {
        let p = self.statements.get(name).cloned().ok_or_else(|| QueryError::UndefinedPreparedStatement(name.to_string()))?;
        if args.len() != p.param_types.len() {
            let wrong = QueryError::Syntax(format!("wrong number of parameters for prepared statement \"{name}\""));
            return Err(wrong.with_message(format!("Expected {} parameters but got {}.", p.param_types.len(), args.len())));
        }
        let now_us = self.db.store().clock().now_ms() * 1000;
        let ctx = self.ctx(params, now_us);
        let values =
            args.iter().zip(&p.param_types).map(|(e, t)| e.eval(&[], &ctx)?.cast_in(e.ty(), *t, &ctx.zone)).collect::<Result<Vec<_>>>()?;
        self.execute_bound(&p, &values)
    }

    /// The columns of an open cursor (a client may Describe the portal the cursor is).
    pub fn cursor_columns(&self, name: &str) -> Option<Vec<OutputColumn>> {
        self.cursors.columns(name).ok()
    }

    /// `DEALLOCATE name | ALL`.
    pub(super) fn deallocate(&mut self, name: &Option<String>) -> Result<Output> {
        if name.is_none() {
            self.statements.clear();
        }
        Ok(Output::Deallocate(name.clone()))
    }

    /// `PREPARE name [(types)] AS statement`.
    pub(super) fn prepare_statement(&mut self, name: &str, param_types: &[SqlType], statement: &Statement) -> Result<Output> {
        if self.statements.contains_key(name) {
            return Err(QueryError::DuplicatePreparedStatement(name.to_string()));
        }
        let given: Vec<Option<SqlType>> = param_types.iter().copied().map(Some).collect();
        let p = self.prepare_parsed(&statement.to_string(), Some(ParsedStatement::Ast(Box::new(statement.clone()))), &given)?;
        self.statements.insert(name.to_string(), Arc::new(p));
        Ok(Output::Command { tag: "PREPARE".into() })
    }

    /// `FETCH` or `MOVE`.
    pub(super) fn fetch(&mut self, name: &str, direction: FetchDirection, move_only: bool) -> Result<Output> {
        let (rows, n) = self.cursors.fetch(name, direction, !move_only, self.interrupt.deadline.get())?;
        if move_only {
            return Ok(Output::Command { tag: format!("MOVE {n}") });
        }
        Ok(Output::Rows { columns: self.cursors.columns(name)?, rows, tag: format!("FETCH {n}") })
    }

    /// `CLOSE name | ALL`.
    pub(super) fn close_cursor(&mut self, name: &Option<String>) -> Result<Output> {
        self.cursors.close(name.as_deref())?;
        Ok(Output::Command { tag: if name.is_some() { "CLOSE CURSOR" } else { "CLOSE CURSOR ALL" }.into() })
    }
}
