//! INSERT, UPDATE and DELETE through a view: PostgreSQL's automatically updatable views. A view whose
//! query reads one table (or one such view), with no WITH, DISTINCT, GROUP BY, HAVING, LIMIT, OFFSET, set
//! operation, aggregate, window or set-returning function at its top, is written as its table is:
//!
//! `CREATE VIEW big AS SELECT id, n AS amount, n * 2 AS twice FROM t AS x WHERE n > 10`
//! `UPDATE big SET amount = amount + 1 WHERE id = 3 RETURNING twice`
//! → `UPDATE t AS x SET n = (n) + 1 WHERE (n > 10) AND ((id) = 3) RETURNING (n * 2) AS twice`
//!
//! A view's column that is a column of the table may be written; another one (`twice`) only read (0A000,
//! as PostgreSQL says). UPDATE and DELETE see only the rows the view shows (its WHERE joins theirs); an
//! INSERT writes its row whether or not the view would show it (as PostgreSQL's without CHECK OPTION,
//! which Tabula's views do not have). The statement is rewritten before it is planned, once per view
//! down to the table.

use std::ops::ControlFlow;

use sqlparser::ast::{
    self, Assignment, AssignmentTarget, Expr, FromTable, GroupByExpr, Ident, ObjectName, Query, SelectItem, SetExpr, Statement,
    TableFactor, TableObject,
};

use crate::error::{QueryError, Result};
use crate::views::ViewDef;

/// Views written through views, at most (a view reads itself only through a loop CREATE refuses).
const MAX_DEPTH: usize = 100;

/// What a writing statement's target is, and what the session knows of relations.
pub trait Relations {
    /// The view `name`'s definition; `None` for a table (or nothing).
    fn view(&self, name: &str) -> Option<ViewDef>;
    /// A table's visible columns, in order (for a view's `*`).
    fn columns(&self, table: &str) -> Option<Vec<String>>;
}

/// `stmt` written to the tables under the views it writes to (the module's doc); as it is otherwise.
pub fn through_views(mut stmt: Statement, rel: &dyn Relations) -> Result<Statement> {
    for _ in 0..MAX_DEPTH {
        let Some(name) = target(&stmt) else { return Ok(stmt) };
        let Some(view) = rel.view(&name) else { return Ok(stmt) };
        let verb = match &stmt {
            Statement::Insert(_) => "insert into",
            Statement::Update(_) => "update",
            _ => "delete from",
        };
        let map = ViewMap::of(&name, &view, verb, rel)?;
        stmt = map.rewrite(stmt, verb)?;
    }
    Err(QueryError::Engine { sqlstate: "42P17", message: "infinite recursion detected in views written through".into() })
}

/// Whether each of the view's columns may be written through it (information_schema's `is_updatable`);
/// `None` when the view itself is not updatable, or a view under it is not.
pub fn updatable_columns(name: &str, view: &ViewDef, rel: &dyn Relations) -> Option<Vec<bool>> {
    let map = ViewMap::of(name, view, "update", rel).ok()?;
    let mut columns: Vec<bool> = map.columns.iter().map(|c| c.2.is_some()).collect();
    let (mut below, mut depth) = (crate::schema::table_name(&map.base), 0);
    while let Some(v) = rel.view(&below) {
        depth += 1;
        let under = ViewMap::of(&below, &v, "update", rel).ok().filter(|_| depth < MAX_DEPTH)?;
        // A column stays writable if the view's column below it is.
        for (c, (_, _, base)) in columns.iter_mut().zip(&map.columns) {
            *c = *c && base.as_ref().is_some_and(|b| under.column(&crate::schema::ident_name(b)).is_some_and(|u| u.2.is_some()));
        }
        below = crate::schema::table_name(&under.base);
    }
    Some(columns)
}

/// The relation a plain INSERT, UPDATE or DELETE writes.
fn target(stmt: &Statement) -> Option<String> {
    let name = match stmt {
        Statement::Insert(i) => match &i.table {
            TableObject::TableName(n) => n,
            _ => return None,
        },
        Statement::Update(u) => match &u.table.relation {
            TableFactor::Table { name, .. } => name,
            _ => return None,
        },
        Statement::Delete(d) => {
            let (FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t)) = &d.from;
            match t.first().map(|t| &t.relation) {
                Some(TableFactor::Table { name, .. }) => name,
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(crate::schema::table_name(name))
}

/// One updatable view: the relation under it, and each of its columns as an expression over that relation.
struct ViewMap {
    view: String,
    base: ObjectName,
    alias: Option<ast::TableAlias>,
    /// (the view's column, its expression, the relation's column it is, when it is one)
    columns: Vec<(String, Expr, Option<Ident>)>,
    filter: Option<Expr>,
}

const SET_RETURNING: &[&str] = &["generate_series", "unnest", "regexp_matches", "json_array_elements", "jsonb_array_elements"];

impl ViewMap {
    fn of(name: &str, view: &ViewDef, verb: &str, rel: &dyn Relations) -> Result<ViewMap> {
        let refuse = |detail: &str| {
            QueryError::Engine { sqlstate: "55000", message: format!("cannot {verb} view \"{name}\"") }.with_message(detail.to_string())
        };
        let q: Query = view.parsed()?;
        let one_relation = "Views that do not select from a single table or view are not automatically updatable.";
        if q.with.is_some() {
            return Err(refuse("Views containing WITH are not automatically updatable."));
        }
        if q.limit_clause.is_some() || q.fetch.is_some() {
            return Err(refuse("Views containing LIMIT or OFFSET are not automatically updatable."));
        }
        let SetExpr::Select(s) = q.body.as_ref() else {
            return Err(refuse("Views containing UNION, INTERSECT, or EXCEPT are not automatically updatable."));
        };
        if s.distinct.is_some() {
            return Err(refuse("Views containing DISTINCT are not automatically updatable."));
        }
        if !matches!(&s.group_by, GroupByExpr::Expressions(e, _) if e.is_empty()) || s.having.is_some() {
            return Err(refuse("Views containing GROUP BY are not automatically updatable."));
        }
        let [from] = s.from.as_slice() else { return Err(refuse(one_relation)) };
        let TableFactor::Table { name: base, alias, args: None, .. } = &from.relation else { return Err(refuse(one_relation)) };
        if !from.joins.is_empty() {
            return Err(refuse(one_relation));
        }
        let mut items = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => items.push(e.clone()),
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                    let columns = rel.columns(&crate::schema::table_name(base)).ok_or_else(|| refuse(one_relation))?;
                    items.extend(columns.into_iter().map(|c| Expr::Identifier(Ident::with_quote('"', c))));
                }
                _ => return Err(refuse(one_relation)),
            }
        }
        let mut grouped = None;
        for e in &items {
            let _ = ast::visit_expressions(e, |x| {
                if let Expr::Function(f) = x {
                    let fname = f.name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.to_lowercase()).unwrap_or_default();
                    if f.over.is_some() {
                        grouped = Some("Views that return window functions are not automatically updatable.");
                    } else if crate::planner::AGGREGATES.contains(&fname.as_str()) {
                        grouped = Some("Views that return aggregate functions are not automatically updatable.");
                    } else if SET_RETURNING.contains(&fname.as_str()) {
                        grouped = Some("Views that return set-returning functions are not automatically updatable.");
                    }
                }
                ControlFlow::<()>::Continue(())
            });
        }
        if let Some(detail) = grouped {
            return Err(refuse(detail));
        }
        if items.len() != view.columns.len() {
            return Err(QueryError::Internal(format!("view \"{name}\" has {} columns, its query {}", view.columns.len(), items.len())));
        }
        let columns = view
            .columns
            .iter()
            .zip(items)
            .map(|((n, _), e)| {
                let column = match &e {
                    Expr::Identifier(i) => Some(i.clone()),
                    Expr::CompoundIdentifier(parts) => parts.last().cloned(),
                    _ => None,
                };
                (n.clone(), e, column)
            })
            .collect();
        Ok(ViewMap { view: name.to_string(), base: base.clone(), alias: alias.clone(), columns, filter: s.selection.clone() })
    }

    fn column(&self, name: &str) -> Option<&(String, Expr, Option<Ident>)> {
        self.columns.iter().find(|(n, ..)| n == name)
    }

    /// The relation's column a view's column written to is; 0A000 (PostgreSQL's words) for one that is not.
    fn written(&self, name: &str, verb: &str) -> Result<Ident> {
        let (_, _, column) = self.column(name).ok_or_else(|| {
            QueryError::UndefinedColumn(format!("{name}\" of relation \"{}", self.view))
            // as the planner words it
        })?;
        column.clone().ok_or_else(|| {
            QueryError::Engine { sqlstate: "0A000", message: format!("cannot {verb} column \"{name}\" of view \"{}\"", self.view) }
                .with_message("View columns that are not columns of their base relation are not updatable.".to_string())
        })
    }

    fn relation(&self) -> TableFactor {
        TableFactor::Table {
            name: self.base.clone(),
            alias: self.alias.clone(),
            args: None,
            with_hints: vec![],
            version: None,
            with_ordinality: false,
            partitions: vec![],
            json_path: None,
            sample: None,
            index_hints: vec![],
        }
    }

    /// Each name of a view's column in `e` as its expression: bare ones outside subqueries (inside one a
    /// bare name may be the subquery's own), qualified ones (`v.c`, by one of `names`) anywhere.
    fn map(&self, e: &mut Expr, names: &[String]) {
        crate::names::replace(e, &mut |x, own| {
            let name = match x {
                Expr::Identifier(i) if own => crate::schema::ident_name(i),
                Expr::CompoundIdentifier(parts) if parts.len() == 2 && names.contains(&crate::schema::ident_name(&parts[0])) => {
                    crate::schema::ident_name(&parts[1])
                }
                _ => return None,
            };
            self.column(&name).map(|(_, expr, _)| Expr::Nested(Box::new(expr.clone())))
        });
    }

    fn map_items(&self, items: Option<Vec<SelectItem>>, names: &[String]) -> Option<Vec<SelectItem>> {
        let items = items?;
        let mut out = Vec::new();
        for item in items {
            match item {
                SelectItem::Wildcard(_) => {
                    out.extend(self.columns.iter().map(|(n, e, _)| SelectItem::ExprWithAlias {
                        expr: Expr::Nested(Box::new(e.clone())),
                        alias: Ident::with_quote('"', n),
                    }));
                }
                SelectItem::UnnamedExpr(mut e) => {
                    let name = crate::planner::default_name(&e);
                    self.map(&mut e, names);
                    out.push(SelectItem::ExprWithAlias { expr: e, alias: Ident::with_quote('"', name) });
                }
                SelectItem::ExprWithAlias { mut expr, alias } => {
                    self.map(&mut expr, names);
                    out.push(SelectItem::ExprWithAlias { expr, alias });
                }
                other => out.push(other),
            }
        }
        Some(out)
    }

    fn with_filter(&self, selection: Option<Expr>) -> Option<Expr> {
        let nested = |e: Expr| Expr::Nested(Box::new(e));
        match (self.filter.clone(), selection) {
            (Some(f), Some(s)) => {
                Some(Expr::BinaryOp { left: Box::new(nested(f)), op: ast::BinaryOperator::And, right: Box::new(nested(s)) })
            }
            (f, s) => f.or(s),
        }
    }

    fn rewrite(&self, stmt: Statement, verb: &str) -> Result<Statement> {
        Ok(match stmt {
            Statement::Insert(mut i) => {
                if i.on.is_some() {
                    return Err(QueryError::NotSupported(format!("INSERT ... ON CONFLICT into view \"{}\"", self.view)));
                }
                let mut names = vec![self.view.clone()];
                names.extend(i.table_alias.take().map(|a| a.alias.value));
                // Without a column list, the values go to the view's first columns.
                let given: Vec<String> = if i.columns.is_empty() {
                    let width = match i.source.as_deref().map(|q| q.body.as_ref()) {
                        Some(SetExpr::Values(v)) => v.rows.first().map_or(0, |r| r.len()),
                        _ => self.columns.len(),
                    };
                    self.columns.iter().take(width).map(|(n, ..)| n.clone()).collect()
                } else {
                    i.columns.iter().map(crate::schema::table_name).collect()
                };
                i.columns = given.iter().map(|n| self.written(n, verb).map(|c| ObjectName::from(vec![c]))).collect::<Result<_>>()?;
                i.table = TableObject::TableName(self.base.clone());
                if let Some(a) = &self.alias {
                    i.table_alias = Some(ast::TableAliasWithoutColumns { explicit: true, alias: a.name.clone() });
                }
                i.returning = self.map_items(i.returning.take(), &names);
                Statement::Insert(i)
            }
            Statement::Update(mut u) => {
                let mut names = vec![self.view.clone()];
                if let TableFactor::Table { alias: Some(a), .. } = &u.table.relation {
                    names.push(a.name.value.clone());
                }
                u.table.relation = self.relation();
                let mut assignments = Vec::new();
                for a in std::mem::take(&mut u.assignments) {
                    let AssignmentTarget::ColumnName(column) = &a.target else {
                        return Err(QueryError::NotSupported(format!(
                            "UPDATE of view \"{}\" with a (column, ...) = ... assignment",
                            self.view
                        )));
                    };
                    let written = self.written(&crate::schema::table_name(column), verb)?;
                    let mut value = a.value.clone();
                    self.map(&mut value, &names);
                    assignments.push(Assignment { target: AssignmentTarget::ColumnName(ObjectName::from(vec![written])), value });
                }
                u.assignments = assignments;
                if let Some(s) = u.selection.as_mut() {
                    self.map(s, &names);
                }
                u.selection = self.with_filter(u.selection.take());
                u.returning = self.map_items(u.returning.take(), &names);
                Statement::Update(u)
            }
            Statement::Delete(mut d) => {
                let mut names = vec![self.view.clone()];
                let (FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t)) = &mut d.from;
                if let Some(TableFactor::Table { alias: Some(a), .. }) = t.first().map(|t| &t.relation) {
                    names.push(a.name.value.clone());
                }
                if let Some(first) = t.first_mut() {
                    first.relation = self.relation();
                }
                if let Some(s) = d.selection.as_mut() {
                    self.map(s, &names);
                }
                d.selection = self.with_filter(d.selection.take());
                d.returning = self.map_items(d.returning.take(), &names);
                Statement::Delete(d)
            }
            other => other,
        })
    }
}
