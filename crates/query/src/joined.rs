//! `UPDATE t SET ... FROM f WHERE ...` and `DELETE FROM t USING f WHERE ...`: writes to the rows of `t` that
//! a join with other tables chooses. The statement is split in two ([`split`]):
//!
//! 1. a query of the join, run on whichever route runs it (the analytic one joins): the key of each target
//!    row the WHERE keeps, then the values its SET expressions compute there (they may read every table of
//!    the join);
//!
//!    `UPDATE a AS x SET v = b.w + x.v FROM b WHERE x.id = b.id`
//!    → `SELECT x."id", (b.w + x.v) FROM a AS x, b WHERE x.id = b.id`
//!
//! 2. a keyed write of one row, planned once with parameters after the statement's own (`$n` is the
//!    statement's last): the values, then the key.
//!
//!    → `UPDATE a AS x SET v = $n+1 WHERE x."id" = $n+2`
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
pub fn split(whole: &Statement, table: &TableSchema) -> Result<Split> {
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
    refuse_foreign_returning(returning.as_deref(), others)?;
    let mut values = Vec::new();
    let mut targets = Vec::new();
    let write = match stmt {
        Statement::Update(u) => {
            let mut sets = Vec::new();
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
            let at = key_match(params + values.len() + 1);
            format!("UPDATE {} SET {} WHERE {at}{}", target.relation, sets.join(", "), returning_text(returning))
        }
        _ => format!("DELETE FROM {} WHERE {}{}", target.relation, key_match(params + 1), returning_text(returning)),
    };
    let from: Vec<String> = std::iter::once(target.to_string()).chain(others.iter().map(|t| t.to_string())).collect();
    let columns: Vec<String> = keys.iter().cloned().chain(values.iter().cloned()).collect();
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
    Ok(Split { query: parse_query(&query)?, write: parse_one(&write)?, keys: keys.len(), targets, params, probe })
}

/// RETURNING of a joined write may name only the target's columns here: PostgreSQL's may name the other
/// tables' too (and `*` includes them), which the keyed write does not see.
fn refuse_foreign_returning(returning: Option<&[SelectItem]>, others: &[TableWithJoins]) -> Result<()> {
    let Some(items) = returning else { return Ok(()) };
    let mut names = Vec::new();
    for t in others {
        for f in std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)) {
            match f {
                TableFactor::Table { name, alias: None, .. } => {
                    names.extend(name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone()))
                }
                TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => names.push(a.name.value.clone()),
                _ => {}
            }
        }
    }
    let refused = || QueryError::NotSupported("RETURNING columns of the FROM or USING tables (only the target's)".into());
    for item in items {
        let expr = match item {
            SelectItem::Wildcard(_) => return Err(refused()),
            SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                if n.0.last().and_then(|p| p.as_ident()).is_some_and(|i| names.contains(&i.value)) {
                    return Err(refused());
                }
                continue;
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        let mut foreign = false;
        let _ = ast::visit_expressions(expr, |e| {
            if let Expr::CompoundIdentifier(parts) = e {
                foreign |= parts.len() >= 2 && names.contains(&parts[parts.len() - 2].value);
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        if foreign {
            return Err(refused());
        }
    }
    Ok(())
}

fn returning_text(returning: &Option<Vec<SelectItem>>) -> String {
    match returning {
        Some(items) => format!(" RETURNING {}", items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")),
        None => String::new(),
    }
}

/// The highest `$n` of the statement: 0 without parameters.
fn max_param(stmt: &Statement) -> usize {
    let mut max = 0;
    let _ = ast::visit_expressions(stmt, |e| {
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
