//! `UPDATE t SET ... FROM f WHERE ...` and `DELETE FROM t USING f WHERE ...`: writes to the rows of `t` that
//! a join with other tables chooses. The statement is split in two ([`split`]):
//!
//! 1. a query of the join, run on whichever route runs it (the analytic one joins): the key of each target
//!    row the WHERE keeps, then the values its SET expressions compute there (they may read every table of
//!    the join), then what RETURNING reads of the other tables;
//!
//!    `UPDATE a AS x SET v = b.w + x.v FROM b WHERE x.id = b.id RETURNING x.v, b.w`
//!    → `SELECT x."id", (b.w + x.v), b.w FROM a AS x, b WHERE x.id = b.id`
//!
//! 2. a keyed write of one row, planned once with parameters after the statement's own (`$n` is the
//!    statement's last): the values, then the key, then what RETURNING reads of the other tables (the
//!    target's columns it returns as written, after the write).
//!
//!    → `UPDATE a AS x SET v = $n+1 WHERE x."id" = $n+2 RETURNING x.v, $n+3 AS "w"`
//!
//! A `WITH` before the statement goes with the query. The session runs the query, then the write for each
//! row, all in one transaction
//! (`session/joined.rs`). A target row the join matches several times is written once, with the values
//! of the first match, as PostgreSQL writes it with one of them (which one is unspecified there too).

use sqlparser::ast::{self, Expr, SelectItem, Statement, TableFactor, TableWithJoins, Value};

use crate::error::{QueryError, Result};
use crate::schema::quoted as quote;
use crate::schema::TableSchema;

/// The two halves of a joined write.
#[derive(Debug, Clone)]
pub struct Split {
    pub query: ast::Query,
    pub write: Statement,
    /// Columns of the query's rows: the key's first, then the values.
    pub keys: usize,
    /// The columns the values go to, and whether each value is an untyped literal or parameter (which
    /// takes its column's type, as PostgreSQL's unknown literals do).
    pub targets: Vec<(String, bool)>,
    /// The statement's own parameters; the write's values and key follow them.
    pub params: usize,
    /// RETURNING as a query over every table of the join: planned only, for the errors PostgreSQL's
    /// RETURNING gives there (a column name two tables hold is ambiguous).
    pub probe: Option<ast::Query>,
    /// The query's last columns: what RETURNING reads of the other tables, the write's last parameters.
    pub returned: usize,
}

/// The statement under a `WITH` (whose CTEs the join's query takes), and the CTEs.
fn unwrapped(stmt: &Statement) -> (&Statement, Option<&ast::With>) {
    match stmt {
        Statement::Query(q) => match q.body.as_ref() {
            ast::SetExpr::Update(s) | ast::SetExpr::Delete(s) => (s, q.with.as_ref()),
            _ => (stmt, None),
        },
        _ => (stmt, None),
    }
}

/// The target and the other relations of an UPDATE ... FROM or DELETE ... USING (under a `WITH` or not);
/// `None` for other statements.
pub fn target(stmt: &Statement) -> Option<(&TableWithJoins, &[TableWithJoins])> {
    match unwrapped(stmt).0 {
        Statement::Update(u) => match &u.from {
            Some(ast::UpdateTableFromKind::AfterSet(from) | ast::UpdateTableFromKind::BeforeSet(from)) => Some((&u.table, from)),
            None => None,
        },
        Statement::Delete(d) => {
            let (ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t)) = &d.from;
            match (t.as_slice(), &d.using) {
                ([target], Some(using)) => Some((target, using)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Splits a joined write to `table` (see the module's comment).
pub fn split(whole: &Statement, table: &TableSchema, columns_of: &dyn Fn(&str) -> Option<Vec<String>>) -> Result<Split> {
    let (target, others) = target(whole).ok_or_else(|| QueryError::Internal("not a joined write".into()))?;
    let (stmt, with) = unwrapped(whole);
    let TableFactor::Table { name, alias, .. } = &target.relation else {
        return Err(QueryError::NotSupported("only plain tables can be updated".into()));
    };
    if !target.joins.is_empty() {
        return Err(QueryError::NotSupported("a JOIN in the target of UPDATE or DELETE".into()));
    }
    if table.columns.iter().any(|c| c.hidden.is_some()) {
        return Err(QueryError::NotSupported(format!(
            "UPDATE ... FROM and DELETE ... USING on table \"{}\", which has no primary key",
            table.name
        )));
    }
    let qualifier = match alias {
        Some(a) => quote(&a.name.value),
        None => name.to_string(),
    };
    let params = max_param(whole);
    let keys: Vec<String> = table.pk.iter().map(|&c| format!("{qualifier}.{}", quote(table.column_name(c)))).collect();
    // The key's parameters follow the values'.
    let key_match = |first: usize| -> String {
        let each: Vec<String> = keys.iter().enumerate().map(|(i, k)| format!("{k} = ${}", first + i)).collect();
        each.join(" AND ")
    };
    let (selection, returning) = match stmt {
        Statement::Update(u) => (&u.selection, &u.returning),
        Statement::Delete(d) => (&d.selection, &d.returning),
        _ => unreachable!("target() matched"),
    };
    let mut values = Vec::new();
    let mut targets = Vec::new();
    let mut sets = Vec::new();
    if let Statement::Update(u) = stmt {
        for a in &u.assignments {
            let ast::AssignmentTarget::ColumnName(column) = &a.target else {
                return Err(QueryError::NotSupported("UPDATE ... FROM with a (column, ...) = ... assignment".into()));
            };
            let value = match &a.value {
                // DEFAULT is the column's, not the join's: it stays in the write.
                Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default") => "DEFAULT".to_string(),
                e => {
                    let untyped = matches!(e, Expr::Value(v) if matches!(v.value, Value::Placeholder(_) | Value::SingleQuotedString(_) | Value::Null));
                    targets.push((column.to_string(), untyped));
                    values.push(format!("({e})"));
                    format!("${}", params + values.len())
                }
            };
            sets.push(format!("{column} = {value}"));
        }
    }
    // RETURNING's parameters follow the key's.
    let (returning_text, extras) = match returning {
        Some(items) => {
            let (items, extras) = foreign_returning(items, others, table, params + values.len() + keys.len() + 1, columns_of)?;
            (format!(" RETURNING {}", items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")), extras)
        }
        None => (String::new(), Vec::new()),
    };
    let at = key_match(params + values.len() + 1);
    let write = match stmt {
        Statement::Update(_) => format!("UPDATE {} SET {} WHERE {at}{returning_text}", target.relation, sets.join(", ")),
        _ => format!("DELETE FROM {} WHERE {at}{returning_text}", target.relation),
    };
    let from: Vec<String> = std::iter::once(target.to_string()).chain(others.iter().map(|t| t.to_string())).collect();
    let returned = extras.len();
    // Named apart: a SET value may read the same column.
    let extras = extras.iter().enumerate().map(|(i, e)| format!("{e} AS \"returning {}\"", i + 1));
    let columns: Vec<String> = keys.iter().cloned().chain(values.iter().cloned()).chain(extras).collect();
    let with = with.map(|w| format!("{w} ")).unwrap_or_default();
    let mut query = format!("{with}SELECT {} FROM {}", columns.join(", "), from.join(", "));
    if let Some(w) = selection {
        query.push_str(&format!(" WHERE {w}"));
    }
    let probe = match returning {
        Some(items) => {
            let items: Vec<String> = items.iter().map(|i| i.to_string()).collect();
            Some(parse_query(&format!("{with}SELECT {} FROM {}", items.join(", "), from.join(", ")))?)
        }
        None => None,
    };
    let keys = keys.len();
    Ok(Split { query: parse_query(&query)?, write: parse_one(&write)?, keys, targets, params, probe, returned })
}

/// RETURNING of a joined write, for the keyed write: what it reads of the other tables of the join (a
/// qualified column `b.w`, a name only another table holds, `b.*`, and the other tables' part of `*`)
/// becomes a parameter from `first` on, whose value the join's query computes: the returned list, and
/// the query's extra columns in the parameters' order. `columns_of` gives a table's visible columns; a
/// `*` over a relation that is not a table (a subquery, a CTE) is 0A000.
fn foreign_returning(
    items: &[SelectItem],
    others: &[TableWithJoins],
    target: &TableSchema,
    first: usize,
    columns_of: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Result<(Vec<SelectItem>, Vec<String>)> {
    // Each other relation: the name it goes by, and its columns when it is a table.
    let mut relations: Vec<(String, Option<Vec<String>>)> = Vec::new();
    for t in others {
        for f in std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)) {
            match f {
                TableFactor::Table { name, alias, .. } => {
                    let columns = columns_of(&crate::schema::table_name(name));
                    let by = match alias {
                        Some(a) => a.name.value.clone(),
                        None => name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone()).unwrap_or_default(),
                    };
                    relations.push((by, columns));
                }
                TableFactor::Derived { alias: Some(a), .. } => relations.push((a.name.value.clone(), None)),
                _ => {}
            }
        }
    }
    let mut extras: Vec<String> = Vec::new();
    let mut param = |source: String| -> Expr {
        let n = match extras.iter().position(|e| *e == source) {
            Some(i) => i,
            None => {
                extras.push(source);
                extras.len() - 1
            }
        };
        Expr::Value(Value::Placeholder(format!("${}", first + n)).into())
    };
    let star = |relation: &(String, Option<Vec<String>>)| {
        relation.1.clone().ok_or_else(|| {
            QueryError::NotSupported(format!("RETURNING * or {}.* of a FROM or USING item that is not a table", quote(&relation.0)))
        })
    };
    let mut out = Vec::new();
    for item in items {
        let mut expand = |relation: &(String, Option<Vec<String>>), out: &mut Vec<SelectItem>| -> Result<()> {
            for c in star(relation)? {
                let source = format!("{}.{}", quote(&relation.0), quote(&c));
                out.push(SelectItem::ExprWithAlias { expr: param(source), alias: ast::Ident::with_quote('"', c) });
            }
            Ok(())
        };
        match item {
            SelectItem::Wildcard(_) => {
                out.push(SelectItem::Wildcard(Default::default()));
                for r in &relations {
                    expand(r, &mut out)?;
                }
                continue;
            }
            SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                let named = n.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone());
                if let Some(r) = relations.iter().find(|r| Some(&r.0) == named.as_ref()) {
                    expand(r, &mut out)?;
                    continue;
                }
                out.push(item.clone());
                continue;
            }
            _ => {}
        }
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.clone())),
            other => {
                out.push(other.clone());
                continue;
            }
        };
        let mut e = expr.clone();
        let mut foreign = false;
        let _ = crate::walk::exprs_mut(&mut e, |e| {
            let source = match e {
                Expr::CompoundIdentifier(parts) if parts.len() >= 2 && relations.iter().any(|r| r.0 == parts[parts.len() - 2].value) => {
                    Some(e.to_string())
                }
                Expr::Identifier(i)
                    if target.column_index(&i.value).is_none()
                        && relations.iter().any(|r| r.1.as_ref().is_some_and(|c| c.contains(&i.value))) =>
                {
                    Some(e.to_string())
                }
                _ => None,
            };
            if let Some(source) = source {
                *e = param(source);
                foreign = true;
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        // Named as the item was: `b.w` is `w`.
        let alias = alias.or_else(|| foreign.then(|| ast::Ident::with_quote('"', crate::planner::default_name(expr))));
        out.push(match alias {
            Some(alias) => SelectItem::ExprWithAlias { expr: e, alias },
            None => SelectItem::UnnamedExpr(e),
        });
    }
    Ok((out, extras))
}

/// The highest `$n` of the statement: 0 without parameters.
fn max_param(stmt: &Statement) -> usize {
    let mut max = 0;
    let _ = crate::walk::exprs(stmt, |e| {
        if let Expr::Value(v) = e {
            if let Value::Placeholder(p) = &v.value {
                max = max.max(p.strip_prefix('$').and_then(|n| n.parse().ok()).unwrap_or(0));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    max
}

fn parse_one(sql: &str) -> Result<Statement> {
    match crate::parse::parse(sql)?.pop() {
        Some(crate::parse::ParsedStatement::Ast(s)) => Ok(*s),
        _ => Err(QueryError::Internal(format!("a joined write's half did not parse: {sql}"))),
    }
}

fn parse_query(sql: &str) -> Result<ast::Query> {
    match parse_one(sql)? {
        Statement::Query(q) => Ok(*q),
        _ => Err(QueryError::Internal("not a query".into())),
    }
}
