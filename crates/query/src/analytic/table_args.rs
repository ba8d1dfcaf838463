//! Parameters in the arguments of a function in FROM (`generate_series(1, $1)`). DataFusion makes a table
//! function's relation while it plans, from literal arguments only ("Arguments must be literals"), so such a
//! statement cannot be planned once for all its executions as PostgreSQL plans it: it is planned again at
//! each execution with those parameters written in as literals. When it is prepared, they stand in as
//! NULLs of their types, for its columns.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Expr, FunctionArg, Statement, TableFactor};

use crate::error::Result;
use crate::types::{Datum, SqlType};

fn placeholder_number(e: &Expr) -> Option<usize> {
    match e {
        Expr::Value(v) => match &v.value {
            ast::Value::Placeholder(p) => p.strip_prefix('$')?.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

fn function_args(f: &TableFactor) -> Option<&Vec<FunctionArg>> {
    match f {
        TableFactor::Table { args: Some(args), .. } => Some(&args.args),
        _ => None,
    }
}

struct Find(Vec<usize>);

impl crate::walk::Walker for Find {
    fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
        for arg in function_args(f).into_iter().flatten() {
            let _ = crate::walk::exprs(arg, |e| {
                if let Some(n) = placeholder_number(e).filter(|n| !self.0.contains(n)) {
                    self.0.push(n);
                }
                ControlFlow::<()>::Continue(())
            });
        }
        ControlFlow::Continue(())
    }
}

struct Names(Vec<String>);

impl crate::walk::Walker for Names {
    fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args: Some(_), .. } = f {
            self.0.extend(name.0.last().map(|p| p.to_string().to_lowercase()));
        }
        ControlFlow::Continue(())
    }
}

/// The names of the functions in FROM (`generate_series` of `FROM generate_series(1, 3) g`).
pub fn functions_in_from(stmt: &Statement) -> Vec<String> {
    let mut names = Names(Vec::new());
    let _ = crate::walk::walk(stmt, &mut names);
    names.0
}

/// The numbers of the parameters in the arguments of functions in FROM, in order of appearance.
pub fn params_in_from(stmt: &Statement) -> Vec<usize> {
    let mut find = Find(Vec::new());
    let _ = crate::walk::walk(stmt, &mut find);
    find.0
}

fn integer_type(t: &ast::DataType) -> bool {
    use ast::DataType::*;
    matches!(t, SmallInt(_) | Int(_) | Integer(_) | BigInt(_) | Int2(_) | Int4(_) | Int8(_))
}

struct Replace<'a> {
    values: &'a [Option<Expr>],
}

impl crate::walk::WalkerMut for Replace<'_> {
    fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { args: Some(args), .. } = f {
            for arg in &mut args.args {
                let _ = crate::walk::walk_mut(arg, &mut InArgs { values: self.values });
            }
        }
        ControlFlow::Continue(())
    }
}

/// The replacement inside one argument, outermost expressions first (a cast around a parameter before it).
struct InArgs<'a> {
    values: &'a [Option<Expr>],
}

impl crate::walk::WalkerMut for InArgs<'_> {
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        // `$1::int`: the literal alone, a 64-bit integer as the table functions take them.
        let at = match &*e {
            Expr::Cast { expr, data_type, .. } if integer_type(data_type) => placeholder_number(expr),
            other => placeholder_number(other),
        };
        if let Some(Some(v)) = at.and_then(|n| self.values.get(n.wrapping_sub(1))) {
            *e = v.clone();
        }
        ControlFlow::Continue(())
    }
}

/// A parameter's value as a literal: an integer as a number (DataFusion's table functions take 64-bit
/// integers only); a text one (the type of a parameter nothing typed) as PostgreSQL reads an untyped
/// literal in a function's arguments, a number when it is one; others as `CAST('text' AS type)`; NULL as
/// NULL of its type.
fn literal(d: &Datum, ty: SqlType) -> Result<Expr> {
    let integer = matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8);
    let sql = match d.to_pg_text(ty).filter(|_| !d.is_null()) {
        None if ty == SqlType::Text || integer => "NULL".to_string(),
        None => format!("CAST(NULL AS {ty})"),
        Some(text) if integer => text,
        Some(text) if ty == SqlType::Text && text.parse::<i64>().is_ok() => text,
        Some(text) if ty == SqlType::Text => format!("'{}'", text.replace('\'', "''")),
        Some(text) => format!("CAST('{}' AS {ty})", text.replace('\'', "''")),
    };
    Ok(sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(&sql)?.parse_expr()?)
}

/// `stmt` with the parameters of FROM functions' arguments replaced by their values (`None`: by NULLs of
/// their types, to plan the statement's columns when it is prepared).
pub fn with_values(stmt: &Statement, types: &[SqlType], values: Option<&[Datum]>) -> Result<Statement> {
    let which = params_in_from(stmt);
    let count = which.iter().copied().max().unwrap_or(0);
    let mut literals = vec![None; count];
    for n in which {
        let ty = types.get(n - 1).copied().unwrap_or(SqlType::Text);
        let value = values.and_then(|v| v.get(n - 1)).cloned().unwrap_or(Datum::Null);
        literals[n - 1] = Some(literal(&value, ty)?);
    }
    let mut stmt = stmt.clone();
    let _ = crate::walk::walk_mut(&mut stmt, &mut Replace { values: &literals });
    Ok(stmt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Statement {
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, sql).unwrap().remove(0)
    }

    #[test]
    fn parameters_of_functions_in_from_are_written_in_as_literals() {
        let s = parse("SELECT g, $3 FROM generate_series($2, $1::int) g WHERE g > $3");
        assert_eq!(params_in_from(&s), vec![2, 1]);
        let types = [SqlType::Int4, SqlType::Text, SqlType::Int8];
        let bound = with_values(&s, &types, Some(&[Datum::Int(5), Datum::Text("2".into()), Datum::Int(1)])).unwrap();
        assert_eq!(bound.to_string(), "SELECT g, $3 FROM generate_series(2, 5) g WHERE g > $3");
        let stand_in = with_values(&s, &types, None).unwrap();
        assert_eq!(stand_in.to_string(), "SELECT g, $3 FROM generate_series(NULL, NULL) g WHERE g > $3");
        let ts = with_values(&parse("SELECT * FROM f($1::timestamp)"), &[SqlType::Timestamp], None).unwrap();
        assert_eq!(ts.to_string(), "SELECT * FROM f(CAST(NULL AS TIMESTAMP WITHOUT TIME ZONE)::TIMESTAMP)");
        let text = with_values(&parse("SELECT * FROM f($1)"), &[SqlType::Text], Some(&[Datum::Text("it's".into())])).unwrap();
        assert_eq!(text.to_string(), "SELECT * FROM f('it''s')");
        assert!(params_in_from(&parse("SELECT * FROM t WHERE k = $1")).is_empty());
        assert_eq!(functions_in_from(&s), vec!["generate_series".to_string()]);
    }
}
