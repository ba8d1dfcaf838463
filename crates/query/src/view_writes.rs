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
//! INSERT writes its row whether or not the view would show it, unless the view has a CHECK OPTION
//! ([`ViewCheck`]). INSERT ... ON CONFLICT goes through too, `excluded.c` as the view's expression for `c`.
//! The statement is rewritten before it is planned, once per view down to the table.

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

/// A condition a row inserted or updated through a view WITH CHECK OPTION must meet: the view's WHERE, over
/// the table under all the views (44000 naming the view when it is not true).
#[derive(Debug, Clone, PartialEq)]
pub struct ViewCheck {
    pub view: String,
    pub condition: Expr,
}

/// `stmt` written to the tables under the views it writes to (the module's doc), with the checks its new
/// rows must meet, those of the views nearest the table first (PostgreSQL reports the first that fails);
/// as it is otherwise. A view's CHECK OPTION checks its own WHERE; CASCADED, those of every view under it
/// too; LOCAL, those under it only where they have a CHECK OPTION themselves.
pub fn through_views(mut stmt: Statement, rel: &dyn Relations) -> Result<(Statement, Vec<ViewCheck>)> {
    let mut checks: Vec<ViewCheck> = Vec::new();
    let mut cascaded = false;
    for _ in 0..MAX_DEPTH {
        let Some(name) = target(&stmt) else { return Ok((stmt, checks)) };
        let Some(view) = rel.view(&name) else { return Ok((stmt, checks)) };
        let verb = match &stmt {
            Statement::Insert(_) => "insert into",
            Statement::Update(_) => "update",
            _ => "delete from",
        };
        let mut map = ViewMap::of(&name, &view, verb, rel)?;
        // Beside other tables (UPDATE ... FROM, DELETE ... USING) a column of the view's table may share a
        // name with theirs: its references are qualified.
        let joined = match &stmt {
            Statement::Update(u) => u.from.is_some(),
            Statement::Delete(d) => d.using.is_some(),
            _ => false,
        };
        if joined {
            map.qualify();
        }
        let names = map.names(&stmt);
        for c in checks.iter_mut() {
            map.map(&mut c.condition, &names);
        }
        let written = matches!(stmt, Statement::Insert(_) | Statement::Update(_));
        if written && (cascaded || view.check.is_some()) {
            if let Some(f) = &map.filter {
                checks.insert(0, ViewCheck { view: name.clone(), condition: f.clone() });
            }
        }
        cascaded |= view.check == Some(crate::views::CheckOption::Cascaded);
        stmt = map.rewrite(stmt, verb)?;
    }
    Err(QueryError::Engine { sqlstate: "42P17", message: "infinite recursion detected in views written through".into() })
}

/// 0A000 for a CHECK OPTION on view `name` that is not automatically updatable, with PostgreSQL's HINT
/// saying why.
pub fn check_option_allowed(name: &str, view: &ViewDef, rel: &dyn Relations) -> Result<()> {
    match ViewMap::shape(name, view, rel) {
        Ok(_) => Ok(()),
        Err(Shape::NotUpdatable(why)) => {
            Err(QueryError::NotSupported("WITH CHECK OPTION is supported only on automatically updatable views".into()).with_hint(why))
        }
        Err(Shape::Error(e)) => Err(e),
    }
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

/// Why a view's shape cannot be written through: PostgreSQL's DETAIL, or another error.
enum Shape {
    NotUpdatable(&'static str),
    Error(QueryError),
}

impl From<QueryError> for Shape {
    fn from(e: QueryError) -> Shape {
        Shape::Error(e)
    }
}

impl ViewMap {
    fn of(name: &str, view: &ViewDef, verb: &str, rel: &dyn Relations) -> Result<ViewMap> {
        ViewMap::shape(name, view, rel).map_err(|s| match s {
            Shape::NotUpdatable(detail) => {
                QueryError::Engine { sqlstate: "55000", message: format!("cannot {verb} view \"{name}\"") }.with_message(detail.to_string())
            }
            Shape::Error(e) => e,
        })
    }

    fn shape(name: &str, view: &ViewDef, rel: &dyn Relations) -> std::result::Result<ViewMap, Shape> {
        let refuse = Shape::NotUpdatable;
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
            let _ = crate::walk::exprs(e, |x| {
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
            return Err(
                QueryError::Internal(format!("view \"{name}\" has {} columns, its query {}", view.columns.len(), items.len())).into()
            );
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
            let of_view = |item: &SelectItem| match item {
                SelectItem::Wildcard(_) => true,
                SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                    names.contains(&crate::schema::table_name(n))
                }
                _ => false,
            };
            match item {
                item if of_view(&item) => {
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

    /// ON CONFLICT through the view: its target's columns, and DO UPDATE's assignments and WHERE, in the
    /// table's terms; `excluded.c` is the view's expression for `c` over the row proposed. As in
    /// PostgreSQL, the view's WHERE does not limit which existing row is updated (a CHECK OPTION checks
    /// the row it becomes).
    fn on_conflict(&self, oc: &mut ast::OnConflict, names: &[String]) -> Result<()> {
        if let Some(ast::ConflictTarget::Columns(columns)) = &mut oc.conflict_target {
            for c in columns.iter_mut() {
                match self.column(&crate::schema::ident_name(c)) {
                    Some((_, _, Some(base))) => *c = base.clone(),
                    Some(_) => {
                        return Err(QueryError::Engine {
                            sqlstate: "42P10",
                            message: "there is no unique or exclusion constraint matching the ON CONFLICT specification".into(),
                        })
                    }
                    None => return Err(QueryError::UndefinedColumn(crate::schema::ident_name(c))),
                }
            }
        }
        let ast::OnConflictAction::DoUpdate(update) = &mut oc.action else { return Ok(()) };
        let mut assignments = Vec::new();
        for a in std::mem::take(&mut update.assignments) {
            let AssignmentTarget::ColumnName(column) = &a.target else {
                return Err(QueryError::NotSupported(format!(
                    "ON CONFLICT DO UPDATE of view \"{}\" with a (column, ...) = ... assignment",
                    self.view
                )));
            };
            let written = self.written(&crate::schema::table_name(column), "insert into")?;
            let mut value = a.value.clone();
            self.map_excluded(&mut value);
            self.map(&mut value, names);
            assignments.push(Assignment { target: AssignmentTarget::ColumnName(ObjectName::from(vec![written])), value });
        }
        update.assignments = assignments;
        if let Some(w) = update.selection.as_mut() {
            self.map_excluded(w);
            self.map(w, names);
        }
        Ok(())
    }

    /// `excluded.c`, for each of the view's columns `c`: the view's expression for it, its own column names
    /// qualified by `excluded`.
    fn map_excluded(&self, e: &mut Expr) {
        let excluded = || Ident::new("excluded");
        let base = [Some(crate::schema::table_name(&self.base)), self.alias.as_ref().map(|a| crate::schema::ident_name(&a.name))];
        crate::names::replace(e, &mut |x, _| {
            let Expr::CompoundIdentifier(parts) = x else { return None };
            let [q, c] = parts.as_slice() else { return None };
            if crate::schema::ident_name(q) != "excluded" {
                return None;
            }
            let (_, expr, _) = self.column(&crate::schema::ident_name(c))?;
            let mut expr = expr.clone();
            crate::names::replace(&mut expr, &mut |y, own| match y {
                Expr::Identifier(i) if own => Some(Expr::CompoundIdentifier(vec![excluded(), i.clone()])),
                Expr::CompoundIdentifier(p) if p.len() == 2 && base.contains(&Some(crate::schema::ident_name(&p[0]))) => {
                    Some(Expr::CompoundIdentifier(vec![excluded(), p[1].clone()]))
                }
                _ => None,
            });
            Some(Expr::Nested(Box::new(expr)))
        });
    }

    /// Qualifies the references to the table's columns in the view's expressions and WHERE with the name
    /// the rewritten statement gives the table.
    fn qualify(&mut self) {
        let q = match &self.alias {
            Some(a) => a.name.clone(),
            None => self.base.0.last().and_then(|p| p.as_ident()).cloned().unwrap_or_else(|| Ident::new(self.view.clone())),
        };
        let qualify = |e: &mut Expr| {
            crate::names::replace(e, &mut |x, own| match x {
                Expr::Identifier(i) if own => Some(Expr::CompoundIdentifier(vec![q.clone(), i.clone()])),
                _ => None,
            })
        };
        for (_, e, _) in &mut self.columns {
            qualify(e);
        }
        if let Some(f) = &mut self.filter {
            qualify(f);
        }
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

    /// The names a statement on the view may qualify its columns with: the view's, and the alias the
    /// statement gives it.
    fn names(&self, stmt: &Statement) -> Vec<String> {
        let alias = match stmt {
            Statement::Insert(i) => i.table_alias.as_ref().map(|a| a.alias.value.clone()),
            Statement::Update(u) => match &u.table.relation {
                TableFactor::Table { alias: Some(a), .. } => Some(a.name.value.clone()),
                _ => None,
            },
            Statement::Delete(d) => {
                let (FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t)) = &d.from;
                match t.first().map(|t| &t.relation) {
                    Some(TableFactor::Table { alias: Some(a), .. }) => Some(a.name.value.clone()),
                    _ => None,
                }
            }
            _ => None,
        };
        std::iter::once(self.view.clone()).chain(alias).collect()
    }

    fn rewrite(&self, stmt: Statement, verb: &str) -> Result<Statement> {
        let names = self.names(&stmt);
        Ok(match stmt {
            Statement::Insert(mut i) => {
                i.table_alias = None;
                match i.on.as_mut() {
                    None => {}
                    Some(ast::OnInsert::OnConflict(oc)) => self.on_conflict(oc, &names)?,
                    Some(_) => return Err(QueryError::NotSupported(format!("ON DUPLICATE KEY UPDATE into view \"{}\"", self.view))),
                }
                // Without a column list, the values go to the view's first columns.
                let given: Vec<String> = if i.columns.is_empty() {
                    let plain = |items: &[SelectItem]| {
                        !items.iter().any(|i| matches!(i, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)))
                    };
                    let width = match i.source.as_deref().map(|q| q.body.as_ref()) {
                        Some(SetExpr::Values(v)) => v.rows.first().map_or(0, |r| r.len()),
                        Some(SetExpr::Select(s)) if plain(&s.projection) => s.projection.len(),
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
                let (FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t)) = &mut d.from;
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
