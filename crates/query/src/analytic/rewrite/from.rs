//! Functions in FROM: a set-returning one's alias also names its column (`generate_series(1, 3) AS i`
//! gives column `i`); a scalar one is a one-row relation (`string_to_array(x, ',') s` gives column `s`).
//! An untyped bound of `generate_series` beside an integer one is an integer, as PostgreSQL resolves it
//! (`generate_series(1, '3')`), where DataFusion wants literals of its argument types.

use std::ops::ControlFlow;

use sqlparser::ast::TableFactor;

use super::unnamed_args;

pub(super) struct FunctionsInFrom;

/// Table functions DataFusion knows; any other function in FROM is a scalar one.
const TABLE_FUNCTIONS: &[&str] = &["generate_series", "range", "unnest", "pg_get_keywords"];

impl crate::walk::WalkerMut for FunctionsInFrom {
    fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        // `unnest(a) AS o` parsed as UNNEST: the alias names its column too.
        if let TableFactor::UNNEST { alias: Some(a), array_exprs, .. } = f {
            if a.columns.is_empty() && array_exprs.len() == 1 {
                a.columns = vec![sqlparser::ast::TableAliasColumnDef::from_name(a.name.value.clone())];
            }
        }
        let TableFactor::Table { name, args: Some(args), alias, .. } = f else { return ControlFlow::Continue(()) };
        let fname = name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
        // `[pg_catalog.]unnest(a) x`: DataFusion's UNNEST relation, whose column the alias names.
        if fname == "unnest" {
            if let Some(array_exprs) = unnamed_args(&args.args) {
                let mut alias = alias.clone();
                if let Some(a) = alias.as_mut().filter(|a| a.columns.is_empty()) {
                    a.columns = vec![sqlparser::ast::TableAliasColumnDef::from_name(a.name.value.clone())];
                }
                *f = TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_offset_alias: None, with_ordinality: false };
            }
            return ControlFlow::Continue(());
        }
        if matches!(fname.as_str(), "generate_series" | "range") {
            integer_bounds(&mut args.args);
        }
        if TABLE_FUNCTIONS.contains(&fname.as_str()) && name.0.len() > 1 {
            // pg_catalog.generate_series: DataFusion knows it unqualified.
            name.0 = vec![name.0.last().cloned().expect("a name")];
        }
        // Unaliased, `generate_series(...)` is a relation and a column of that name, as in PostgreSQL
        // (DataFusion named its column `value`).
        if alias.is_none() && matches!(fname.as_str(), "generate_series" | "range") {
            let column = sqlparser::ast::TableAliasColumnDef::from_name(fname.clone());
            *alias = Some(sqlparser::ast::TableAlias {
                explicit: false,
                name: sqlparser::ast::Ident::new(fname.clone()),
                columns: vec![column],
                at: None,
            });
            return ControlFlow::Continue(());
        }
        let Some(alias) = alias else { return ControlFlow::Continue(()) };
        if !alias.columns.is_empty() {
            return ControlFlow::Continue(());
        }
        if TABLE_FUNCTIONS.contains(&fname.as_str()) {
            alias.columns = vec![sqlparser::ast::TableAliasColumnDef::from_name(alias.name.value.clone())];
            return ControlFlow::Continue(());
        }
        let call = format!("SELECT {name}({}) AS {}", args.args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "), alias.name);
        let Ok(query) =
            sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(&call).and_then(|mut p| p.parse_query())
        else {
            return ControlFlow::Continue(());
        };
        *f = TableFactor::Derived { lateral: false, subquery: query, alias: Some(alias.clone()), sample: None };
        ControlFlow::Continue(())
    }
}

/// `generate_series(1, '3')`: quoted integers beside an integer literal become integer literals.
fn integer_bounds(args: &mut [sqlparser::ast::FunctionArg]) {
    use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, Value};
    fn literal(a: &mut FunctionArg) -> Option<&mut Value> {
        match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) => Some(&mut v.value),
            _ => None,
        }
    }
    if !args.iter_mut().any(|a| matches!(literal(a), Some(Value::Number(..)))) {
        return;
    }
    for a in args.iter_mut() {
        if let Some(v @ Value::SingleQuotedString(_)) = literal(a) {
            if let Value::SingleQuotedString(s) = v {
                if let Ok(n) = s.trim().parse::<i64>() {
                    *v = Value::Number(n.to_string(), false);
                }
            }
        }
    }
}
