//! PostgreSQL syntax DataFusion does not plan, rewritten into equivalent SQL it does.
//!
//! datafusion-pg-catalog's rules handle `OPERATOR(pg_catalog.~)`, `::regclass`, `COLLATE`, `= ANY(array)`
//! and more; they are applied one by one. Two of the library's are left out on purpose:
//! `RemoveSubqueryFromProjection` replaces correlated subqueries with NULL, and
//! `CurrentUserVariableToSessionUserFunctionCall` makes `current_user` the session's user even after
//! `SET ROLE`: both wrong answers. Added here:
//! - `ARRAY(SELECT e FROM ... ORDER BY o)` becomes `(SELECT array_agg(e ORDER BY o) FROM ...)`.
//! - A scalar subquery that does not aggregate, `(SELECT e FROM ... WHERE ...)`, counts its rows in an
//!   aggregate, the form DataFusion decorrelates into a join, and a check where it is used gives its value
//!   or 21000 for more than one row (`analytic::single_row`).
//! - DataFusion decorrelates only equalities between inner and outer columns. In a correlated subquery,
//!   conditions on outer columns alone move out (`CASE WHEN cond THEN (subquery) END`), and an outer
//!   column equated to an inner expression is replaced by that expression in the other conditions.
//! - A SELECT over a relation Tabula never fills (pg_policy, pg_publication, ...) returns no rows, so the
//!   subqueries in its select list are never evaluated: they become NULL, sparing DataFusion plans it
//!   cannot make for them.
//! - Aggregates DataFusion would name alike (`max(k), max(k::int)`) are named apart (`aggregate_names`).
//! - Unaliased select-list expressions that print alike (`NULL, NULL`; casts of one value, `x::int, x::bigint`;
//!   a column twice, `g, g`) get distinct aliases: PostgreSQL
//!   allows duplicate output names, DataFusion does not. (Clients still see PostgreSQL's names.)
//! - `pg_*('16384')`: catalog functions take OIDs; a quoted number passed to one is that number, as
//!   PostgreSQL resolves the unknown literal to the parameter's oid type.
//! - `to_timestamp(text, 'YYYY-MM-DD HH24:MI:SS.US')`: PostgreSQL's template patterns become the strftime
//!   ones DataFusion parses with. (`to_char` is PostgreSQL's own formatter, `analytic::to_char`.)
//! - `LIKE p ESCAPE '/'`: DataFusion escapes with backslash only; the pattern's escape character becomes one.
//! - `generate_subscripts(a, 1)` (not in DataFusion) is `unnest(range(1, array_length(a) + 1))`, which
//!   zips with other `unnest`s of the select list as in PostgreSQL.
//! - Functions in FROM: a set-returning one's alias also names its column (`generate_series(1, 3) AS i`
//!   gives column `i`); a scalar one is a one-row relation (`string_to_array(x, ',') s` gives column `s`).
//! - `x = ANY($1)` / `x op ALL($1)`: the parameter is read as a text array (`$1::text[]`), whose elements
//!   compare with `x` as a text array literal's do; DataFusion cannot infer the parameter's type there.
//! - `user`, `current_user`, `session_user`, `current_role` written bare are calls of the session's user.
//! - `col::regtype` and `col::regclass` of an OID column print a name, as in PostgreSQL
//!   (`format_type(col, NULL)`, `regclass_name(col)`); `col::regclass::oid` is `col`; so does
//!   `'name'::regclass` as a select-list item (`casts`).
//! - `array_col = '{1,2}'`: an array literal written as text, compared with an array, is an array.
//! - `$1::T[]`: the parameter's array text is parsed into a list before the cast (`casts`).
//! - `x::varchar(n)` keeps the first `n` characters (`left`), as PostgreSQL's explicit cast does; a cast to
//!   `char(n)` is refused (`casts`).
//! - `ts AT TIME ZONE z` is PostgreSQL's `timezone(z, ts)` (`analytic::at_time_zone`): DataFusion's only
//!   relabels the value.
//! - `mod(a, b)` is `a % b`, `sign(x)` is `signum(x)` and `ceiling(x)` is `ceil(x)`: PostgreSQL's names for
//!   what DataFusion has.
//! - `EXTRACT(field FROM x)` is a call of `analytic::extract`'s function, which answers PostgreSQL's numeric.
//! - `SIMILAR TO` is PostgreSQL's whole-string match (`similar`); `generate_series` in a select list makes
//!   rows, as PostgreSQL's set-returning functions do (`select_srf`).
//! - Long chains of `AND` or `OR` become balanced trees (`chains`).
//! - `ARRAY(SELECT f(x) FROM unnest(arr) x)` maps the array's elements (`array_transform`, `unnest_map`).
//! - `ORDER BY 1` of a grouping query is written as the select item it names (`ordinals`).
//! - `^`, `|/`, `||/`, `@` and `~` are the functions they stand for, and `-2 ^ 2` is `(-2) ^ 2` (`operators`).
//! - The system column `tableoid` of pg_catalog's tables, and `'pg_class'::regclass`, are the OIDs
//!   they stand for (`system_columns`).

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion_pg_catalog::sql::rules::*;

mod aggregate_names;
mod casts;
mod chains;
mod derived_names;
mod from;
mod operators;
mod ordinals;
mod select_srf;
mod similar;
mod subqueries;
mod system_columns;
mod templates;
mod unnest_map;
mod using_columns;

use casts::{
    any_parameter, any_text_array, char_cast, float_cast, float_text_cast, parameter_array_cast, varchar_length_cast, RegclassExists,
    RegclassOutput,
};
use from::FunctionsInFrom;
use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{
    BinaryOperator, CaseWhen, CeilFloorKind, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, ObjectNamePart, OrderByKind, Query, Select, SelectItem, SetExpr, SetOperator, SetQuantifier, Statement, TableFactor, Value,
    ValueWithSpan,
};
use subqueries::*;

pub struct Rewriter {
    rules: Vec<Arc<dyn SqlStatementRewriteRule>>,
}

impl Rewriter {
    pub fn new() -> Self {
        let rules: Vec<Arc<dyn SqlStatementRewriteRule>> = vec![
            Arc::new(AliasDuplicatedProjectionRewrite),
            Arc::new(ResolveUnqualifiedIdentifier),
            Arc::new(RewriteArrayAnyAllOperation),
            Arc::new(PrependUnqualifiedPgTableName),
            Arc::new(StripCallableQualifier),
            Arc::new(StripCollate),
            Arc::new(RewritePgCatalogOperator),
            Arc::new(RewriteRegCastToSubquery::new()),
            Arc::new(FixVersionColumnName),
        ];
        Rewriter { rules }
    }

    pub fn rewrite(&self, mut s: Statement) -> Statement {
        // First, so that no later walk goes down a chain as deep as it is long.
        let _ = crate::walk::walk_mut(&mut s, &mut chains::BalancedChains);
        let _ = crate::walk::walk_mut(&mut s, &mut derived_names::DerivedNames);
        let _ = crate::walk::walk_mut(&mut s, &mut using_columns::UsingColumns);
        let _ = crate::walk::walk_mut(&mut s, &mut select_srf::SelectListSeries);
        // Before the library's rules and `FunctionsInFrom` reshape the unnest.
        let _ = crate::walk::exprs_mut(&mut s, |e| {
            unnest_map::unnest_map(e);
            ControlFlow::<()>::Continue(())
        });
        // Before the regclass rules and the subqueries' decorrelation reshape the branch it finds.
        let _ = crate::walk::exprs_mut(&mut s, |e| {
            identity_sequence_branch(e);
            ControlFlow::<()>::Continue(())
        });
        // Before the library's `::regclass` rule, which would look pg_catalog's names up elsewhere.
        let _ = crate::walk::walk_mut(&mut s, &mut RegclassOutput);
        let _ = crate::walk::walk_mut(&mut s, &mut RegclassExists);
        let _ = crate::walk::walk_mut(&mut s, &mut system_columns::SystemColumns::default());
        // Before the library's ANY/ALL rule, which makes them `array_has` calls.
        let _ = crate::walk::exprs_mut(&mut s, |e| {
            any_parameter(e);
            any_text_array(e);
            ControlFlow::<()>::Continue(())
        });
        for rule in &self.rules {
            s = rule.rewrite(s);
        }
        // Before the projection names are made unique: `current_user, current_role` print alike once called,
        // and so do `ceil(x), ceiling(x)`.
        let _ = crate::walk::exprs_mut(&mut s, |e| {
            operators::exponent_sign(e);
            ControlFlow::<()>::Continue(())
        });
        let _ = crate::walk::exprs_mut(&mut s, |e| {
            user_keyword(e);
            math_functions(e);
            operators::operators(e);
            ControlFlow::<()>::Continue(())
        });
        let _ = crate::walk::walk_mut(&mut s, &mut OverEmptyRelations);
        let _ = crate::walk::walk_mut(&mut s, &mut UniqueProjectionNames);
        let _ = crate::walk::walk_mut(&mut s, &mut aggregate_names::DistinctAggregateNames);
        let _ = crate::walk::walk_mut(&mut s, &mut FunctionsInFrom);
        let _ = crate::walk::walk_mut(&mut s, &mut OidDisplayCasts);
        let _ = crate::walk::exprs_mut(&mut s, |e| {
            array_literal_comparison(e);
            similar::similar_to(e);
            case_array_literal(e);
            oid_literal_arguments(e);
            templates::to_timestamp_pattern(e);
            like_escape(e);
            float_cast(e);
            float_text_cast(e);
            varchar_length_cast(e);
            parameter_array_cast(e);
            generate_subscripts(e);
            // `ts AT TIME ZONE z` is `timezone(z, ts)` (`analytic::at_time_zone`).
            if let Expr::AtTimeZone { timestamp, time_zone } = e {
                *e = call("timezone", vec![(**time_zone).clone(), (**timestamp).clone()], vec![]);
            }
            // `EXTRACT(field FROM x)` answers PostgreSQL's numeric (`analytic::extract`).
            if let Expr::Extract { field, expr, .. } = e {
                let unit = match field {
                    sqlparser::ast::DateTimeField::Custom(id) => id.value.clone(),
                    f => f.to_string(),
                };
                let unit = Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(unit)));
                *e = call(crate::analytic::extract::EXTRACT, vec![unit, (**expr).clone()], vec![]);
            }
            empty_array_subquery(e);
            if let Some(q) = array_subquery(e) {
                *e = Expr::Subquery(Box::new(q));
            }
            // A scalar subquery over a relation Tabula never fills is NULL.
            if matches!(e, Expr::Subquery(q) if matches!(q.body.as_ref(), SetExpr::Select(s) if selects_nothing(s))) {
                *e = Expr::Value(ValueWithSpan::from(Value::Null));
            }
            if let Expr::Subquery(q) = e {
                let counted = aggregate_scalar_subquery(q);
                let guard = decorrelate(q);
                if counted {
                    *e = call(crate::analytic::single_row::CHECK, vec![e.clone()], vec![]);
                }
                if let Some(guard) = guard {
                    *e = Expr::Case {
                        case_token: AttachedToken::empty(),
                        end_token: AttachedToken::empty(),
                        operand: None,
                        conditions: vec![CaseWhen { condition: guard, result: e.clone() }],
                        else_result: None,
                    };
                }
            }
            ControlFlow::<()>::Continue(())
        });
        // Last, so that the expression written for an ordinal is the select item as rewritten.
        let _ = crate::walk::walk_mut(&mut s, &mut ordinals::GroupedOrdinals);
        s
    }
}

/// A call's arguments when every one is a plain unnamed expression.
fn unnamed_args(args: &[FunctionArg]) -> Option<Vec<Expr>> {
    args.iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// PostgreSQL's math functions that DataFusion has under other names or as operators.
fn math_functions(e: &mut Expr) {
    let Expr::Function(f) = e else { return };
    if f.name.0.len() != 1 {
        return;
    }
    let name = f.name.0[0].to_string().to_lowercase();
    let FunctionArguments::List(list) = &f.args else { return };
    let Some(args) = unnamed_args(&list.args) else { return };
    if !list.clauses.is_empty() || f.over.is_some() || f.filter.is_some() {
        return;
    }
    match (name.as_str(), args.as_slice()) {
        ("mod", [a, b]) => {
            *e =
                Expr::Nested(Box::new(Expr::BinaryOp { left: Box::new(a.clone()), op: BinaryOperator::Modulo, right: Box::new(b.clone()) }))
        }
        ("sign", [x]) => *e = call("signum", vec![x.clone()], vec![]),
        // The form `ceil(x)` is parsed in, so that the two print alike for `UniqueProjectionNames`.
        ("ceiling", [x]) => {
            *e = Expr::Ceil { expr: Box::new(x.clone()), field: CeilFloorKind::DateTimeField(sqlparser::ast::DateTimeField::NoDateTime) }
        }
        _ => {}
    }
}

/// What the analytic route would answer differently from PostgreSQL or from the key-value route, to be
/// refused (0A000) before it is planned:
/// - `INTERSECT ALL` and `EXCEPT ALL` keep each left row that has a match (or none) on the right, where
///   PostgreSQL pairs duplicates off: `{0, 0, 0} INTERSECT ALL {0, 0}` is two rows, DataFusion gives three.
/// - A table's versions (`t(latest_n => 3)`, `t(as_of => ms)`) are read by the key-value route only; here
///   they would fail as an unknown function (42883) or a syntax error.
pub fn refusal(s: &Statement) -> Option<String> {
    struct Find(Option<String>);
    impl crate::walk::Walker for Find {
        fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
            let TableFactor::Table { name, args: Some(args), .. } = f else { return ControlFlow::Continue(()) };
            let history = args.args.iter().any(|a| match a {
                FunctionArg::Named { name, .. } => HISTORY_ARGS.contains(&name.value.to_lowercase().as_str()),
                FunctionArg::ExprNamed { name: Expr::Identifier(name), .. } => HISTORY_ARGS.contains(&name.value.to_lowercase().as_str()),
                _ => false,
            });
            if history {
                self.0 = Some(format!(
                    "reading the versions of {name} is supported in a SELECT of that table alone, not with aggregates, \
                     joins, subqueries, set operations or CTEs"
                ));
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            self.0 = char_cast(e).or_else(|| similar::refusal(e));
            if self.0.is_some() {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            fn set_ops(body: &SetExpr, found: &mut Option<String>) {
                if let SetExpr::SetOperation { op, set_quantifier, left, right } = body {
                    if matches!(op, SetOperator::Intersect | SetOperator::Except | SetOperator::Minus)
                        && matches!(set_quantifier, SetQuantifier::All)
                    {
                        *found = Some(format!("{op} ALL is not supported (duplicates are not paired off as in PostgreSQL)"));
                    }
                    set_ops(left, found);
                    set_ops(right, found);
                }
            }
            set_ops(q.body.as_ref(), &mut self.0);
            if self.0.is_some() {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find(None);
    let _ = crate::walk::walk(s, &mut find);
    find.0
}

/// The named arguments of a history read, `t(latest_n => 3)`.
const HISTORY_ARGS: &[&str] = &["latest_n", "after_or_equal", "before", "as_of"];

/// `name(args [ORDER BY ...])` as an AST node.
fn call(name: &str, args: Vec<Expr>, order_by: Vec<sqlparser::ast::OrderByExpr>) -> Expr {
    let mut clauses = vec![];
    if !order_by.is_empty() {
        clauses.push(sqlparser::ast::FunctionArgumentClause::OrderBy(order_by));
    }
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args.into_iter().map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a))).collect(),
            clauses,
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// Every SELECT of a query body: the branches of set operations included.
fn each_select(body: &mut SetExpr, f: &mut dyn FnMut(&mut Select)) {
    match body {
        SetExpr::Select(s) => f(s),
        SetExpr::SetOperation { left, right, .. } => {
            each_select(left, f);
            each_select(right, f);
        }
        SetExpr::Query(q) => each_select(q.body.as_mut(), f),
        _ => {}
    }
}

/// `e = '{a,b}'` (or `<>`) with a text literal in array syntax: the literal as `make_array(a, b)`.
fn array_literal_comparison(e: &mut Expr) {
    let Expr::BinaryOp { left, op: BinaryOperator::Eq | BinaryOperator::NotEq, right } = e else { return };
    for side in [left, right] {
        let Expr::Value(v) = side.as_ref() else { continue };
        let Value::SingleQuotedString(text) = &v.value else { continue };
        let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else { continue };
        let items: Vec<Expr> = inner
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                let s = s.trim().trim_matches('"');
                let value =
                    if s.parse::<i64>().is_ok() { Value::Number(s.to_string(), false) } else { Value::SingleQuotedString(s.to_string()) };
                Expr::Value(ValueWithSpan::from(value))
            })
            .collect();
        **side = call("make_array", items, vec![]);
        return;
    }
}

/// Functions whose result is an array.
const ARRAY_FUNCTIONS: &[&str] = &["acldefault", "current_schemas", "string_to_array", "array_agg", "make_array", "array_append"];

/// `CASE ... THEN acldefault(...) ELSE '{}' END`: a text literal in array syntax beside an array is an
/// array, as PostgreSQL resolves the unknown literal to the other branch's type.
fn case_array_literal(e: &mut Expr) {
    let Expr::Case { conditions, else_result, .. } = e else { return };
    let is_array = |r: &Expr| match r {
        Expr::Array(_) => true,
        Expr::Function(f) => f.name.0.last().is_some_and(|p| ARRAY_FUNCTIONS.contains(&p.to_string().to_lowercase().as_str())),
        _ => false,
    };
    if !conditions.iter().map(|c| &c.result).chain(else_result.as_deref()).any(is_array) {
        return;
    }
    for r in conditions.iter_mut().map(|c| &mut c.result).chain(else_result.as_deref_mut()) {
        let Expr::Value(v) = r else { continue };
        let Value::SingleQuotedString(text) = &v.value else { continue };
        let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else { continue };
        // string_to_array: an empty text array for '{}', where make_array() has no element type.
        let items = inner.split(',').map(|s| s.trim().trim_matches('"')).collect::<Vec<_>>().join("\u{1}");
        let text = |s: &str| Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(s.to_string())));
        *r = call("string_to_array", vec![text(&items), text("\u{1}")], vec![]);
    }
}

struct UniqueProjectionNames;

impl crate::walk::WalkerMut for UniqueProjectionNames {
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        each_select(q.body.as_mut(), &mut unique_names);
        ControlFlow::Continue(())
    }
}

fn unique_names(select: &mut Select) {
    let mut seen = std::collections::HashSet::new();
    for (i, item) in select.projection.iter_mut().enumerate() {
        let SelectItem::UnnamedExpr(e) = item else { continue };
        // A column named twice (`SELECT g, g`): the second gets an alias. Different columns of one name
        // (`a.x, b.x`) DataFusion tells apart by their qualifiers.
        if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            if !seen.insert(format!("column {e}")) {
                *item = SelectItem::ExprWithAlias { expr: e.clone(), alias: Ident::new(format!("?column?{}", i + 1)) };
            }
            continue;
        }
        if !seen.insert(datafusion_name(e)) {
            *item = SelectItem::ExprWithAlias { expr: e.clone(), alias: Ident::new(format!("?column?{}", i + 1)) };
        }
    }
}

/// An item's text as far as DataFusion's name of it goes: DataFusion names a cast after what it casts
/// (`x::bigint, x::integer` would both be `x`, and so would `n / 3, n::float8 / 3`), and `position(a IN
/// b)` as `strpos(b, a)`.
pub(super) fn datafusion_name(e: &Expr) -> String {
    let mut e = e.clone();
    let _ = crate::walk::exprs_mut(&mut e, |x| {
        while let Expr::Cast { expr, .. } | Expr::Nested(expr) = x {
            *x = expr.as_ref().clone();
        }
        if let Expr::Position { expr, r#in } = x {
            *x = call("strpos", vec![r#in.as_ref().clone(), expr.as_ref().clone()], vec![]);
        }
        ControlFlow::<()>::Continue(())
    });
    e.to_string()
}

fn oid_literal_arguments(e: &mut Expr) {
    let Expr::Function(f) = e else { return };
    let name = f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
    if !name.starts_with("pg_") {
        return;
    }
    let FunctionArguments::List(list) = &mut f.args else { return };
    for arg in &mut list.args {
        if let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg {
            let Expr::Value(v) = e else { continue };
            let Value::SingleQuotedString(text) = &v.value else { continue };
            if !text.is_empty() && text.len() <= 10 && text.bytes().all(|b| b.is_ascii_digit()) {
                let number = Expr::Value(ValueWithSpan::from(Value::Number(text.clone(), false)));
                // OIDs are int4 in this catalog.
                *e = Expr::Cast {
                    kind: sqlparser::ast::CastKind::Cast,
                    expr: Box::new(number),
                    data_type: sqlparser::ast::DataType::Int(None),
                    array: false,
                    format: None,
                };
            }
        }
    }
}

fn like_escape(e: &mut Expr) {
    let (Expr::Like { pattern, escape_char, .. } | Expr::ILike { pattern, escape_char, .. }) = e else { return };
    let Some(Value::SingleQuotedString(c)) = escape_char.as_ref().map(|v| v.value.clone()) else { return };
    if c == "\\" || c.chars().count() != 1 {
        return;
    }
    let text = |s: &str| Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(s.to_string())));
    let replace = |e: Expr, from: &str, to: &str| call("replace", vec![e, text(from), text(to)], vec![]);
    // Literal backslashes first, then the escape character becomes the backslash.
    let escaped = replace(replace(pattern.as_ref().clone(), "\\", "\\\\"), &c, "\\");
    **pattern = escaped;
    *escape_char = None;
}

/// An expression from SQL text with `$1`, `$2`, ... standing for `args`.
fn template(sql: &str, args: &[Expr]) -> Option<Expr> {
    let mut e = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(sql).ok()?.parse_expr().ok()?;
    let _ = crate::walk::exprs_mut(&mut e, |x| {
        if let Expr::Value(v) = x {
            if let Value::Placeholder(p) = &v.value {
                if let Some(a) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()).and_then(|n| args.get(n - 1)) {
                    *x = a.clone();
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    Some(e)
}

fn function_args(f: &Function) -> Option<Vec<Expr>> {
    let FunctionArguments::List(l) = &f.args else { return None };
    unnamed_args(&l.args)
}

fn generate_subscripts(e: &mut Expr) {
    let Expr::Function(f) = e else { return };
    if !f.name.0.last().is_some_and(|p| p.to_string().eq_ignore_ascii_case("generate_subscripts")) {
        return;
    }
    let Some(args) = function_args(f) else { return };
    if args.len() != 2 {
        return;
    }
    if let Some(t) = template("unnest(range(1, CAST(array_length($1) AS BIGINT) + 1))", &args[..1]) {
        *e = t;
    }
}

fn user_keyword(e: &mut Expr) {
    let is_user = |n: &str| matches!(n.to_lowercase().as_str(), "user" | "current_user" | "session_user" | "current_role");
    let bare = match e {
        Expr::Identifier(id) => id.quote_style.is_none() && is_user(&id.value),
        // The SQL-standard forms parse as calls without parentheses.
        Expr::Function(f) => matches!(f.args, FunctionArguments::None) && f.name.0.len() == 1 && is_user(&f.name.to_string()),
        _ => false,
    };
    if bare {
        let session = matches!(e, Expr::Identifier(id) if id.value.eq_ignore_ascii_case("session_user"))
            || matches!(e, Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("session_user"));
        *e = call(if session { "session_user" } else { "current_user" }, vec![], vec![]);
    }
}

struct OidDisplayCasts;

fn oid_alias(t: &sqlparser::ast::DataType) -> Option<&'static str> {
    let name = t.to_string().to_lowercase();
    let name = name.rsplit('.').next().unwrap_or("");
    match name {
        "regtype" => Some("regtype"),
        "regclass" => Some("regclass"),
        _ => None,
    }
}

impl crate::walk::WalkerMut for OidDisplayCasts {
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let Expr::Cast { expr, data_type, .. } = e else { return ControlFlow::Continue(()) };
        let column = |x: &Expr| matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
        // `col::regclass::oid`: the OID itself.
        if let Expr::Cast { expr: inner, data_type: alias, .. } = expr.as_ref() {
            let to_number = matches!(data_type.to_string().to_lowercase().as_str(), "oid" | "int" | "integer" | "int4" | "bigint" | "int8");
            if to_number && oid_alias(alias).is_some() && column(inner) {
                *e = inner.as_ref().clone();
                return ControlFlow::Continue(());
            }
        }
        if !column(expr) {
            return ControlFlow::Continue(());
        }
        let replacement = match oid_alias(data_type) {
            Some("regtype") => template("format_type($1, NULL)", &[expr.as_ref().clone()]),
            Some("regclass") => template("regclass_name($1)", &[expr.as_ref().clone()]),
            _ => None,
        };
        if let Some(r) = replacement {
            *e = r;
        }
        ControlFlow::Continue(())
    }
}
