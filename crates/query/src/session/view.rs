//! CREATE [OR REPLACE] VIEW and DROP VIEW (`crate::views`), and what depends on a view: a table or view a
//! view reads is not dropped (2BP01; with CASCADE, the views go too) or changed under it.

use sqlparser::ast;
use tabula_store::{StoreError, TableOptions};

use super::Session;
use crate::error::{QueryError, Result};
use crate::output::Output;
use crate::schema::{ColumnDef, TableSchema};
use crate::views::ViewDef;

/// 2BP01 for dropping `names` (of kind `what`) that the views of `dependents` (view, what it reads) read:
/// each dependency on a line of DETAIL, as PostgreSQL lists them.
fn depends(what: &str, names: &[String], dependents: &[(String, String)]) -> QueryError {
    let name = dependents.iter().map(|(_, on)| on).find(|on| names.contains(on)).cloned().unwrap_or_default();
    let lines: Vec<String> = dependents
        .iter()
        .map(|(view, on)| format!("view {view} depends on {} {on}", if names.contains(on) { what } else { "view" }))
        .collect();
    QueryError::Engine { sqlstate: "2BP01", message: format!("cannot drop {what} {name} because other objects depend on it") }
        .with_message(lines.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")
}

fn replace_error(message: String) -> QueryError {
    QueryError::Engine { sqlstate: "42P16", message }
}

impl Session {
    pub(super) fn create_view(
        &mut self,
        name: &str,
        given: &[String],
        query: &ast::Query,
        or_replace: bool,
        check: Option<crate::views::CheckOption>,
    ) -> Result<Output> {
        let old = match self.db.relation(name) {
            Ok(t) if t.view.is_some() && or_replace => Some(t),
            Ok(_) => return Err(QueryError::DuplicateTable(name.into())),
            Err(QueryError::Store(StoreError::UnknownTable(_))) | Err(QueryError::UndefinedTable(_)) => None,
            Err(e) => return Err(e),
        };
        if old.is_none() && self.relation_exists(name)? {
            return Err(QueryError::DuplicateTable(name.into()));
        }
        let reads: Vec<String> =
            crate::views::named_relations(query).into_iter().filter(|r| self.db.relation(r).is_ok() || r == name).collect();
        // PostgreSQL makes such a view temporary itself; a view of the catalog's would hand other sessions
        // the private table.
        if reads.iter().any(|r| crate::temp::is_temporary(r)) {
            return Err(QueryError::NotSupported("a view that reads a temporary table (a temporary view)".into()));
        }
        if reads.iter().any(|r| r == name) {
            return Err(QueryError::Engine {
                sqlstate: "42P17",
                message: format!("infinite recursion detected in rules for relation \"{name}\""),
            });
        }
        // The columns' names: those given, then the query's own. Two alike are refused before DataFusion
        // reports it in its words.
        let named = |mut names: Vec<String>| -> Result<Vec<String>> {
            if given.len() > names.len() {
                return Err(QueryError::Syntax("CREATE VIEW specifies more column names than columns".into()));
            }
            names[..given.len()].clone_from_slice(given);
            if let Some(dup) = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)).map(|(_, n)| n) {
                return Err(QueryError::Engine { sqlstate: "42701", message: format!("column \"{dup}\" specified more than once") });
            }
            Ok(names)
        };
        if let Some(names) = crate::planner::output_names(query) {
            named(names)?;
        }
        // Planned now: a query that does not plan makes no view, and the plan names and types its columns.
        let stmt = ast::Statement::Query(Box::new(query.clone()));
        let plan = self.db.analytics()?.plan(&stmt, self.read_ctx(None), &self.session_info())?;
        let names = named(
            crate::planner::output_names(query)
                .filter(|n| n.len() == plan.columns.len())
                .unwrap_or_else(|| plan.columns.iter().map(|c| c.name.clone()).collect()),
        )?;
        let columns: Vec<_> = names.into_iter().zip(plan.columns.iter().map(|c| c.ty)).collect();
        if let Some(old) = old.as_ref().and_then(|t| t.view.as_ref()) {
            // As PostgreSQL's: the old columns stay, with their names and types, and new ones come after.
            if columns.len() < old.columns.len() {
                return Err(replace_error("cannot drop columns from view".into()));
            }
            for (i, (n, ty)) in old.columns.iter().enumerate() {
                let (m, t) = &columns[i];
                if m != n {
                    return Err(replace_error(format!("cannot change name of view column \"{n}\" to \"{m}\"")));
                }
                if t != ty {
                    return Err(replace_error(format!(
                        "cannot change data type of view column \"{n}\" from {} to {}",
                        ty.pg_name(),
                        t.pg_name()
                    )));
                }
            }
        }
        let view = ViewDef { query: query.to_string(), columns, reads, check };
        if check.is_some() {
            self.check_option_allowed(name, &view)?;
        }
        if let Some(old) = old {
            let replaced = TableSchema { view: Some(view), ..(*old).clone() };
            self.store_schema(name, &replaced)?;
            return Ok(Output::Command { tag: "CREATE VIEW".into() });
        }
        let key = ColumnDef::row_id(&[], false);
        let schema = TableSchema { view: Some(view), ..TableSchema::stand_in(name, key, self.current_user()) };
        let table = super::ddl::table_def(name, &schema.columns, &[0], 1, TableOptions::default(), schema.encode());
        let made = self.ddl().create_table(table);
        self.db.invalidate();
        made?;
        Ok(Output::Command { tag: "CREATE VIEW".into() })
    }

    /// The views that read any of `names`, through other views too, each once, those that read others first.
    pub(super) fn dependent_views(&self, names: &[String]) -> Result<Vec<(String, String)>> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut frontier: Vec<String> = names.to_vec();
        while let Some(n) = frontier.pop() {
            for v in self.db.view_names() {
                let reads = self.db.relation(&v)?.view.as_ref().is_some_and(|d| d.reads.contains(&n));
                if reads && !names.contains(&v) && !out.iter().any(|(w, _)| *w == v) {
                    out.push((v.clone(), n.clone()));
                    frontier.push(v);
                }
            }
        }
        out.reverse();
        Ok(out)
    }

    /// Refuses, or with CASCADE drops, the views that read the relations about to be dropped.
    pub(super) fn drop_dependent_views(&mut self, names: &[String], what: &str, cascade: bool) -> Result<()> {
        let dependents = self.dependent_views(names)?;
        if !dependents.is_empty() && !cascade {
            let found: Vec<(String, String)> = dependents.iter().rev().cloned().collect();
            return Err(depends(what, names, &found));
        }
        for (view, _) in dependents {
            self.notice("00000", format!("drop cascades to view {view}"), None);
            let r = self.ddl().drop_table(&view);
            self.db.invalidate();
            r?;
        }
        Ok(())
    }

    /// 0A000 for a change of a table a view reads (its name, a column's name or type, a dropped column):
    /// the view reads it by name.
    pub(super) fn not_under_a_view(&self, table: &str, change: &str) -> Result<()> {
        match self.dependent_views(&[table.to_string()])?.last() {
            Some((view, _)) => {
                Err(QueryError::NotSupported(format!("{change} of table \"{table}\", which view \"{view}\" reads (drop the view first)")))
            }
            None => Ok(()),
        }
    }

    pub(super) fn drop_views(&mut self, names: &[String], if_exists: bool, cascade: bool) -> Result<Output> {
        let mut found = Vec::new();
        for n in names {
            match self.db.relation(n) {
                Ok(t) if t.view.is_some() => found.push(n.clone()),
                Ok(_) => {
                    return Err(QueryError::Engine { sqlstate: "42809", message: format!("\"{n}\" is not a view") }
                        .with_hint("Use DROP TABLE to remove a table."))
                }
                Err(_) if if_exists => self.notice("00000", format!("view \"{n}\" does not exist, skipping"), None),
                Err(_) => return Err(QueryError::Engine { sqlstate: "42P01", message: format!("view \"{n}\" does not exist") }),
            }
        }
        self.drop_dependent_views(&found, "view", cascade)?;
        for n in &found {
            let r = self.ddl().drop_table(n);
            self.db.invalidate();
            r?;
        }
        Ok(Output::Command { tag: "DROP VIEW".into() })
    }
}

/// The session's relations as a write through a view needs them.
struct Relations<'a>(&'a crate::database::Database);

impl crate::view_writes::Relations for Relations<'_> {
    fn view(&self, name: &str) -> Option<ViewDef> {
        self.0.relation(name).ok().and_then(|t| t.view.clone())
    }

    fn columns(&self, table: &str) -> Option<Vec<String>> {
        let t = self.0.relation(table).ok().filter(|t| t.view.is_none() && t.sequence.is_none())?;
        Some(t.visible().iter().map(|c| c.name.clone()).collect())
    }
}

impl Session {
    /// An INSERT, UPDATE or DELETE of a view as one of the table under it (`crate::view_writes`), with the
    /// checks of the views WITH CHECK OPTION it writes through.
    pub(super) fn through_views(
        &self,
        stmt: crate::parse::ParsedStatement,
    ) -> Result<(crate::parse::ParsedStatement, Vec<crate::view_writes::ViewCheck>)> {
        let writes = |s: &ast::Statement| matches!(s, ast::Statement::Insert(_) | ast::Statement::Update(_) | ast::Statement::Delete(_));
        let relations = Relations(self.db.as_ref());
        match stmt {
            crate::parse::ParsedStatement::Ast(s) if writes(&s) => {
                let (s, checks) = crate::view_writes::through_views(*s, &relations)?;
                Ok((crate::parse::ParsedStatement::Ast(Box::new(s)), checks))
            }
            crate::parse::ParsedStatement::Ast(mut s) if matches!(&*s, ast::Statement::Explain { statement, .. } if writes(statement)) => {
                let mut checks = Vec::new();
                if let ast::Statement::Explain { statement, .. } = s.as_mut() {
                    let inner = std::mem::replace(statement.as_mut(), ast::Statement::Commit { chain: false, end: false, modifier: None });
                    let (written, found) = crate::view_writes::through_views(inner, &relations)?;
                    **statement = written;
                    checks = found;
                }
                Ok((crate::parse::ParsedStatement::Ast(s), checks))
            }
            other => Ok((other, Vec::new())),
        }
    }

    /// 0A000 for a view WITH CHECK OPTION that is not automatically updatable, as PostgreSQL refuses it.
    pub(super) fn check_option_allowed(&self, name: &str, view: &ViewDef) -> Result<()> {
        crate::view_writes::check_option_allowed(name, view, &Relations(self.db.as_ref()))
    }
}
