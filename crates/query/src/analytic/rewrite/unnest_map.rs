//! `ARRAY(SELECT f(x) FROM unnest(arr) x)`: each element of an array through an expression, in order.
//! DataFusion cannot plan an unnest of an outer column inside a subquery (psql's `\d+` asks for
//! `array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x)`), so this becomes
//! `coalesce(array_transform(arr, x -> f(x)), <no elements>)`: the same elements in the same order, and
//! an empty array where `arr` is NULL, as PostgreSQL's unnest of NULL gives no rows.

use super::*;
use sqlparser::ast::{LambdaFunction, LambdaFunctionParameter, LambdaSyntax, OneOrManyWithParens, TableFunctionArgs};

pub(super) fn unnest_map(e: &mut Expr) {
    let Expr::Function(f) = e else { return };
    if !f.name.to_string().eq_ignore_ascii_case("array") {
        return;
    }
    let FunctionArguments::Subquery(q) = &f.args else { return };
    if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return;
    }
    let SetExpr::Select(s) = q.body.as_ref() else { return };
    if s.projection.len() != 1 || s.selection.is_some() || !is_plain(s) || s.from.len() != 1 || !s.from[0].joins.is_empty() {
        return;
    }
    let Some((array, element)) = unnested(&s.from[0].relation) else { return };
    let body = match &s.projection[0] {
        SelectItem::UnnamedExpr(b) | SelectItem::ExprWithAlias { expr: b, .. } => b.clone(),
        _ => return,
    };
    let lambda = Expr::Lambda(LambdaFunction {
        params: OneOrManyWithParens::One(LambdaFunctionParameter { name: element, data_type: None }),
        body: Box::new(body),
        syntax: LambdaSyntax::Arrow,
    });
    let none = call("string_to_array", vec![text(""), text(",")], vec![]);
    *e = call("coalesce", vec![call("array_transform", vec![array, lambda], vec![]), none], vec![]);
}

fn text(s: &str) -> Expr {
    Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(s.into())))
}

/// The array of `unnest(arr) alias` and the name its elements have: the alias (a text array's element is
/// named by it, `x`), or the alias's one column (`x(opt)`).
fn unnested(relation: &TableFactor) -> Option<(Expr, Ident)> {
    let (array, alias) = match relation {
        TableFactor::Table { name, args: Some(TableFunctionArgs { args, settings: None }), alias: Some(alias), .. }
            if name.0.last().is_some_and(|p| p.to_string().eq_ignore_ascii_case("unnest")) =>
        {
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(array))] = args.as_slice() else { return None };
            (array.clone(), alias)
        }
        TableFactor::UNNEST { alias: Some(alias), array_exprs, with_offset: false, with_ordinality: false, .. } => {
            let [array] = array_exprs.as_slice() else { return None };
            (array.clone(), alias)
        }
        _ => return None,
    };
    let element = match alias.columns.as_slice() {
        [] => alias.name.clone(),
        [column] => column.name.clone(),
        _ => return None,
    };
    Some((array, element))
}

#[cfg(test)]
mod tests {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut s = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap().remove(0);
        let _ = crate::walk::exprs_mut(&mut s, |e| {
            unnest_map(e);
            ControlFlow::<()>::Continue(())
        });
        s.to_string()
    }

    #[test]
    fn an_array_of_an_unnest_maps_its_elements() {
        assert_eq!(
            rewritten("SELECT array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x) FROM t tc"),
            "SELECT coalesce(array_transform(tc.reloptions, x -> 'toast.' || x), string_to_array('', ',')) FROM t tc"
        );
        assert_eq!(
            rewritten("SELECT ARRAY(SELECT upper(o) FROM unnest(c.opts) AS u(o)) FROM c"),
            "SELECT coalesce(array_transform(c.opts, o -> upper(o)), string_to_array('', ',')) FROM c"
        );
        // A filter, an order or a join is more than a map: left alone.
        for sql in [
            "SELECT ARRAY(SELECT x FROM unnest(c.a) x WHERE x > 1) FROM c",
            "SELECT ARRAY(SELECT x FROM unnest(c.a) x ORDER BY x) FROM c",
            "SELECT ARRAY(SELECT x FROM unnest(c.a) x, d) FROM c",
        ] {
            assert!(rewritten(sql).to_lowercase().contains("unnest("), "{sql}");
        }
    }
}
