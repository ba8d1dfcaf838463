//! PostgreSQL's catalog tables have a system column `tableoid`, the OID of the table a row comes from,
//! which `SELECT *` does not show. DataFusion has no hidden columns, so a reference to it is replaced by
//! that OID: `x.tableoid` where `x` is a table of pg_catalog in FROM, and a bare `tableoid` where FROM
//! has exactly one. pg_dump keys every object it dumps by it (`SELECT tableoid, oid, ... FROM pg_am`).
//!
//! In the same pass, `'pg_class'::regclass` (or `'pg_catalog.pg_class'`) is pg_class's OID:
//! pg_catalog comes first in every search path, even one that does not name it (pg_dump sets
//! `search_path` to ''), where the library's rewrite looks the name up in `current_schema()` only.
//! For the same reason an unqualified name of a pg_catalog relation names that relation.
//!
//! Two of PostgreSQL's internal types come up in pg_dump's queries: `'r'::"char"` (the one-byte type
//! of `relkind` and the like, text here as those columns are), and `regproc`, which the library's
//! static catalogs (pg_operator, pg_am, pg_ts_parser, ...) hold as the function's name: `col::regproc`
//! of such a column is the column, and `col::oid` the OID pg_proc gives that name (0 for none, `-`).

use std::ops::ControlFlow;

use sqlparser::ast::{
    CastKind, DataType, Expr, Ident, ObjectName, ObjectNamePart, Query, SelectItem, Statement, TableFactor, TableWithJoins, Value,
    ValueWithSpan,
};

use crate::analytic::catalog::pg_catalog_oid;

/// PostgreSQL's system catalogs have OIDs below 10000; its views (which have no `tableoid`) above.
const FIRST_VIEW_OID: i32 = 10000;

/// The OID of the pg_catalog *table* a FROM item names, with the name it is referred to by.
fn catalog_table(f: &TableFactor) -> Option<(String, i32)> {
    let TableFactor::Table { name, alias, args: None, .. } = f else { return None };
    let parts: Vec<String> = name.0.iter().map(|p| p.to_string().trim_matches('"').to_string()).collect();
    let relation = match parts.as_slice() {
        [schema, r] if schema == "pg_catalog" => r,
        [r] => r,
        _ => return None,
    };
    let oid = pg_catalog_oid(relation).filter(|o| *o < FIRST_VIEW_OID)?;
    Some((alias.as_ref().map_or_else(|| relation.clone(), |a| a.name.value.clone()), oid))
}

fn from_tables(from: &[TableWithJoins], out: &mut Vec<(String, i32)>) {
    for t in from {
        out.extend(catalog_table(&t.relation));
        out.extend(t.joins.iter().filter_map(|j| catalog_table(&j.relation)));
    }
}

fn oid_literal(oid: i32) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(Expr::Value(ValueWithSpan::from(Value::Number(oid.to_string(), false)))),
        data_type: DataType::Custom(ObjectName(vec![ObjectNamePart::Identifier(Ident::new("oid"))]), vec![]),
        array: false,
        format: None,
    }
}

/// `'name'::regclass` of a pg_catalog relation's name: its OID.
fn regclass_literal(e: &Expr) -> Option<i32> {
    let Expr::Cast { expr, data_type, .. } = e else { return None };
    let regclass = match data_type {
        DataType::Regclass => true,
        DataType::Custom(ty, _) => type_name(ty) == "regclass",
        _ => false,
    };
    if !regclass {
        return None;
    }
    let Expr::Value(v) = expr.as_ref() else { return None };
    let Value::SingleQuotedString(name) = &v.value else { return None };
    pg_catalog_oid(name.strip_prefix("pg_catalog.").unwrap_or(name))
}

/// The library's catalog columns of type regproc, held as the function's name.
const REGPROC_NAME_COLUMNS: &[&str] = &[
    "oprcode",
    "oprrest",
    "oprjoin",
    "amhandler",
    "prsstart",
    "prstoken",
    "prsend",
    "prsheadline",
    "prslextype",
    "tmplinit",
    "tmpllexize",
    "evtfoid",
    "fdwhandler",
    "fdwvalidator",
    "typinput",
    "typoutput",
    "typreceive",
    "typsend",
    "typmodin",
    "typmodout",
    "typanalyze",
    "typsubscript",
];

fn type_name(ty: &ObjectName) -> String {
    ty.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default()
}

/// `col::regproc` or `col::oid` of a regproc column held as a name: the column's name and the type.
fn regproc_operand(e: &Expr) -> Option<(String, String)> {
    let Expr::Cast { expr, data_type: DataType::Custom(ty, _), .. } = e else { return None };
    let column = match expr.as_ref() {
        Expr::Identifier(i) => &i.value,
        Expr::CompoundIdentifier(parts) => &parts.last()?.value,
        _ => return None,
    };
    let ty = type_name(ty);
    (REGPROC_NAME_COLUMNS.contains(&column.to_lowercase().as_str()) && matches!(ty.as_str(), "regproc" | "oid"))
        .then(|| (column.clone(), ty))
}

/// `'array_in(cstring,oid,integer)'::regprocedure` (or `'array_in'::regproc`): the function's name, as the
/// library's regproc columns hold it. ActiveRecord loads its type map with `t.typinput = '...'::regprocedure`.
fn regproc_literal_name(e: &Expr) -> Option<String> {
    let Expr::Cast { expr, data_type: DataType::Custom(ty, _), .. } = e else { return None };
    if !matches!(type_name(ty).as_str(), "regproc" | "regprocedure") {
        return None;
    }
    let Expr::Value(v) = expr.as_ref() else { return None };
    let Value::SingleQuotedString(text) = &v.value else { return None };
    let name = text.split('(').next()?.trim();
    Some(name.strip_prefix("pg_catalog.").unwrap_or(name).to_string())
}

/// `col = '...'::regprocedure` of a regproc column held as a name: the literal becomes the name.
fn regproc_comparison(e: &mut Expr) {
    let Expr::BinaryOp { left, op: sqlparser::ast::BinaryOperator::Eq | sqlparser::ast::BinaryOperator::NotEq, right } = e else {
        return;
    };
    let is_name_column = |e: &Expr| {
        let column = match e {
            Expr::Identifier(i) => &i.value,
            Expr::CompoundIdentifier(parts) => match parts.last() {
                Some(p) => &p.value,
                None => return false,
            },
            _ => return false,
        };
        REGPROC_NAME_COLUMNS.contains(&column.to_lowercase().as_str())
    };
    let named = |name: String| Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(name)));
    if is_name_column(left) {
        if let Some(name) = regproc_literal_name(right) {
            **right = named(name);
        }
    }
    if is_name_column(right) {
        if let Some(name) = regproc_literal_name(left) {
            **left = named(name);
        }
    }
}

/// What [`regproc_operand`] casts become.
fn regproc_cast(e: &Expr) -> Option<Expr> {
    let (_, ty) = regproc_operand(e)?;
    let Expr::Cast { expr, .. } = e else { return None };
    match ty.as_str() {
        "regproc" => Some(expr.as_ref().clone()),
        "oid" => {
            let sql = format!("COALESCE((SELECT min(p.oid) FROM pg_catalog.pg_proc p WHERE p.proname = {expr}), 0)");
            let parsed = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &format!("SELECT {sql}")).ok()?;
            match parsed.into_iter().next()? {
                Statement::Query(q) => match *q.body {
                    sqlparser::ast::SetExpr::Select(s) => match s.projection.into_iter().next()? {
                        sqlparser::ast::SelectItem::UnnamedExpr(e) => Some(e),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// `typname[0]`: a subscript of a column of PostgreSQL's `name` type is one of its bytes, counted from
/// 0 (pg_dump tests `typname[0] = '_'` for array types). Text here: the character at that place.
fn name_subscript(e: &Expr) -> Option<Expr> {
    use sqlparser::ast::{AccessExpr, Subscript};
    let Expr::CompoundFieldAccess { root, access_chain } = e else { return None };
    let column = match root.as_ref() {
        Expr::Identifier(i) => &i.value,
        Expr::CompoundIdentifier(parts) => &parts.last()?.value,
        _ => return None,
    };
    let [AccessExpr::Subscript(Subscript::Index { index })] = access_chain.as_slice() else { return None };
    if !column.eq_ignore_ascii_case("typname") {
        return None;
    }
    let from = Expr::BinaryOp {
        left: Box::new(Expr::Nested(Box::new(index.clone()))),
        op: sqlparser::ast::BinaryOperator::Plus,
        right: Box::new(Expr::Value(ValueWithSpan::from(Value::Number("1".into(), false)))),
    };
    let one = Expr::Value(ValueWithSpan::from(Value::Number("1".into(), false)));
    Some(super::call("substr", vec![root.as_ref().clone(), from, one], vec![]))
}

/// `SELECT ... FROM pg_options_to_table(options)`: the `name=value` items of an options array as
/// (option_name, option_value), value NULL without `=`. The function becomes an `unnest` of the
/// array, and the two columns expressions over its items.
fn options_to_table(q: &mut Query) {
    let sqlparser::ast::SetExpr::Select(s) = q.body.as_mut() else { return };
    let [TableWithJoins { relation, joins }] = s.from.as_mut_slice() else { return };
    let TableFactor::Table { name, args: Some(args), alias, .. } = relation else { return };
    if !joins.is_empty() || !type_name(name).eq("pg_options_to_table") || args.args.len() != 1 {
        return;
    }
    let sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(array)) = &args.args[0] else { return };
    let item = "tabula_option";
    let alias_name = alias.as_ref().map_or_else(|| Ident::new("pg_options_to_table"), |a| a.name.clone());
    *relation = TableFactor::UNNEST {
        alias: Some(sqlparser::ast::TableAlias {
            explicit: true,
            name: alias_name,
            columns: vec![sqlparser::ast::TableAliasColumnDef::from_name(item)],
            at: None,
        }),
        array_exprs: vec![array.clone()],
        with_offset: false,
        with_offset_alias: None,
        with_ordinality: false,
    };
    let parse = |sql: &str| {
        sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(sql).and_then(|mut p| p.parse_expr())
    };
    let (Ok(name), Ok(value)) = (
        parse(&format!("split_part({item}, '=', 1)")),
        parse(&format!("CASE WHEN strpos({item}, '=') > 0 THEN substr({item}, strpos({item}, '=') + 1) END")),
    ) else {
        return;
    };
    let _ = crate::walk::exprs_mut(q, |e| {
        if let Expr::Identifier(id) = e {
            match id.value.to_lowercase().as_str() {
                "option_name" => *e = name.clone(),
                "option_value" => *e = value.clone(),
                _ => {}
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The FROM items of each query being visited, innermost last.
#[derive(Default)]
pub(super) struct SystemColumns {
    scopes: Vec<Vec<(String, i32)>>,
}

impl crate::walk::WalkerMut for SystemColumns {
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        options_to_table(q);
        let mut tables = Vec::new();
        super::each_select(q.body.as_mut(), &mut |s| {
            from_tables(&s.from, &mut tables);
            // `prsstart::oid` is named `prsstart`, as in PostgreSQL, once it is a subquery.
            for item in &mut s.projection {
                let SelectItem::UnnamedExpr(e) = item else { continue };
                let Some((column, _)) = regproc_operand(e) else { continue };
                *item = SelectItem::ExprWithAlias { expr: e.clone(), alias: Ident::new(column) };
            }
        });
        self.scopes.push(tables);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.scopes.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args: None, .. } = f {
            if let [ObjectNamePart::Identifier(id)] = name.0.as_slice() {
                if pg_catalog_oid(&id.value).is_some() {
                    name.0.insert(0, ObjectNamePart::Identifier(Ident::new("pg_catalog")));
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::Cast { data_type, .. } = e {
            if let DataType::Custom(ty, _) = data_type {
                let quoted_char =
                    matches!(ty.0.last(), Some(ObjectNamePart::Identifier(i)) if i.quote_style.is_some() && i.value == "char");
                if quoted_char {
                    *data_type = DataType::Text;
                }
            }
        }
        if let Some(replaced) = name_subscript(e).or_else(|| regproc_cast(e)) {
            *e = replaced;
            return ControlFlow::Continue(());
        }
        regproc_comparison(e);
        let oid = match e {
            Expr::Identifier(id) if id.value.eq_ignore_ascii_case("tableoid") => match self.scopes.last().map(Vec::as_slice) {
                Some([(_, oid)]) => Some(*oid),
                _ => None,
            },
            Expr::CompoundIdentifier(parts) if parts.len() == 2 && parts[1].value.eq_ignore_ascii_case("tableoid") => {
                let alias = &parts[0].value;
                self.scopes.iter().rev().find_map(|s| s.iter().find(|(a, _)| a.eq_ignore_ascii_case(alias)).map(|(_, o)| *o))
            }
            _ => regclass_literal(e),
        };
        if let Some(oid) = oid {
            *e = oid_literal(oid);
        }
        ControlFlow::Continue(())
    }
}
