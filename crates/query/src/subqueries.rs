//! Subqueries in UPDATE and DELETE: `SET c = (SELECT ...)`, `WHERE k IN (SELECT ...)`, `EXISTS (...)`.
//!
//! The key-value planner binds no subquery. Here each one is run first, at every execution of the
//! statement, by whichever engine takes it (inside the statement's transaction, so it sees that
//! transaction's writes), and written into the statement as constants: a scalar, an IN list, true or
//! false. A scalar subquery that found more than one row becomes a call that raises 21000 where it is
//! evaluated ([`crate::expr::Func::MoreThanOneRow`]), so a statement that needs no row's value succeeds. Only uncorrelated subqueries can run on their own: one that names a column of the outer statement
//! fails to plan, which is reported as not supported (0A000) rather than as the missing column.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Expr, Query, Statement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::error::{QueryError, Result};
use crate::plan::OutputColumn;
use crate::types::SqlRow;
use crate::types::{Datum, SqlType};

/// Whether an UPDATE or DELETE holds a subquery (other statements plan theirs elsewhere, or not at all).
pub fn has_subquery(stmt: &Statement) -> bool {
    matches!(stmt, Statement::Update(_) | Statement::Delete(_)) && holds_subquery(stmt)
}

/// Whether a statement or an expression holds a subquery.
pub fn holds_subquery<V: ast::Visit>(node: &V) -> bool {
    crate::walk::exprs(node, |e| match e {
        Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The statement (or expression) with its subqueries replaced by their results; `run` runs one subquery.
pub fn substitute<V: ast::VisitMut + Clone>(
    stmt: &V,
    mut run: impl FnMut(&Query) -> Result<(Vec<OutputColumn>, Vec<SqlRow>)>,
) -> Result<V> {
    let mut stmt = stmt.clone();
    let mut failure = None;
    let _ = crate::walk::exprs_mut(&mut stmt, |e| {
        match replacement(e, &mut run) {
            Ok(Some(new)) => *e = new,
            Ok(None) => {}
            Err(err) => {
                failure = Some(err);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(stmt),
    }
}

/// The statement with each subquery replaced by a NULL of no type (or `false` for EXISTS): what its
/// parameters and result columns are typed from when it is prepared, before anything runs.
pub fn placeholder<V: ast::VisitMut + Clone>(stmt: &V) -> V {
    let mut stmt = stmt.clone();
    let _ = crate::walk::exprs_mut(&mut stmt, |e| {
        let null = || Expr::Value(ast::Value::Null.into());
        match e {
            Expr::Subquery(_) => *e = null(),
            Expr::InSubquery { expr, negated, .. } => *e = Expr::InList { expr: expr.clone(), list: vec![null()], negated: *negated },
            Expr::Exists { .. } => *e = Expr::Value(ast::Value::Boolean(false).into()),
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    stmt
}

fn replacement(e: &Expr, run: &mut impl FnMut(&Query) -> Result<(Vec<OutputColumn>, Vec<SqlRow>)>) -> Result<Option<Expr>> {
    let mut rows_of = |q: &Query| -> Result<(SqlType, Vec<SqlRow>)> {
        let (columns, rows) = run(q).map_err(correlated)?;
        Ok((columns.first().map_or(SqlType::Text, |c| c.ty), rows))
    };
    let one_column = |rows: &[SqlRow]| -> Result<()> {
        match rows.first() {
            Some(r) if r.len() != 1 => Err(QueryError::Syntax("subquery must return only one column".into())),
            _ => Ok(()),
        }
    };
    Ok(Some(match e {
        Expr::Subquery(q) => {
            let (ty, rows) = rows_of(q)?;
            one_column(&rows)?;
            if rows.len() > 1 {
                // An error only where a row needs the value, as in PostgreSQL: `UPDATE ... SET c = (two rows)
                // WHERE false` updates nothing and succeeds.
                let typed_null = format!("{}(CAST(NULL AS {ty}))", crate::expr::MORE_THAN_ONE_ROW);
                return Ok(Some(Parser::new(&PostgreSqlDialect {}).try_with_sql(&typed_null)?.parse_expr()?));
            }
            rows.first().map_or(Ok(Expr::Value(ast::Value::Null.into())), |r| literal(&r[0], ty))?
        }
        Expr::InSubquery { expr, subquery, negated } => {
            let (ty, rows) = rows_of(subquery)?;
            one_column(&rows)?;
            if rows.is_empty() {
                // `x IN (empty)` is false even for a NULL x.
                return Ok(Some(Expr::Value(ast::Value::Boolean(*negated).into())));
            }
            let list = rows.iter().map(|r| literal(&r[0], ty)).collect::<Result<_>>()?;
            Expr::InList { expr: expr.clone(), list, negated: *negated }
        }
        Expr::Exists { subquery, negated } => {
            let (_, rows) = rows_of(subquery)?;
            Expr::Value(ast::Value::Boolean(rows.is_empty() == *negated).into())
        }
        _ => return Ok(None),
    }))
}

/// A subquery that does not plan on its own most likely names the outer statement.
fn correlated(e: QueryError) -> QueryError {
    match e.root() {
        QueryError::UndefinedColumn(_)
        | QueryError::UndefinedColumnOf { .. }
        | QueryError::UndefinedTable(_)
        | QueryError::UndefinedTableReference(_) => {
            QueryError::NotSupported(format!("a subquery in UPDATE or DELETE that refers to the outer statement ({e})"))
        }
        _ => e,
    }
}

/// A value as SQL text that reads back as the same value of the same type.
fn literal(d: &Datum, ty: SqlType) -> Result<Expr> {
    let Some(text) = d.to_pg_text(ty).filter(|_| !d.is_null()) else { return Ok(Expr::Value(ast::Value::Null.into())) };
    let sql = format!("CAST('{}' AS {ty})", text.replace('\'', "''"));
    Ok(Parser::new(&PostgreSqlDialect {}).try_with_sql(&sql)?.parse_expr()?)
}
