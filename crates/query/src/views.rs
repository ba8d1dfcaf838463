//! Views (`CREATE [OR REPLACE] VIEW`): a named query, read through the analytic engine.
//!
//! A view is kept as an empty table of the store's (as a sequence is, `crate::sequences::def`), so that its
//! creation and drop are transactional as a table's; its metadata holds the query's text, its columns as
//! they were planned, and the relations it reads (a table it reads is not dropped or changed under it).
//! A statement that reads a view reads the view's query in its place ([`expand`]): `FROM v` becomes
//! `FROM (query) AS v(columns)`, before DataFusion plans it.

use std::ops::ControlFlow;
use std::sync::Arc;

use sqlparser::ast::{self, Statement, TableFactor};

use crate::error::{QueryError, Result};
use crate::schema::TableSchema;
use crate::types::SqlType;

/// Views read through views, at most: deeper is a loop (a view replaced to read itself through another).
const MAX_EXPANSIONS: usize = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct ViewDef {
    /// The query, as sqlparser prints it.
    pub query: String,
    pub columns: Vec<(String, SqlType)>,
    /// The tables and views the query reads.
    pub reads: Vec<String>,
    /// `WITH [LOCAL | CASCADED] CHECK OPTION`: what a row written through the view must meet.
    pub check: Option<CheckOption>,
}

/// A view's CHECK OPTION, as PostgreSQL's: a row inserted or updated through the view must be one the view
/// shows (its WHERE true, not NULL), and, CASCADED, one every view under it shows too; LOCAL checks the
/// views under it only where they have a CHECK OPTION of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckOption {
    Local,
    Cascaded,
}

impl CheckOption {
    /// As `check_option` is spelt in pg_class's reloptions and in information_schema (upper case).
    pub fn name(self) -> &'static str {
        match self {
            CheckOption::Local => "local",
            CheckOption::Cascaded => "cascaded",
        }
    }

    pub fn parse(s: &str) -> Option<CheckOption> {
        match s.to_ascii_lowercase().as_str() {
            "local" => Some(CheckOption::Local),
            "cascaded" => Some(CheckOption::Cascaded),
            _ => None,
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n").replace('\t', "\\t")
}

impl ViewDef {
    /// The metadata lines: `!view`, the query; `!viewcol`, each column; `!reads`, the relations read;
    /// `!viewcheck`, the CHECK OPTION (absent without one).
    pub fn encode(&self) -> String {
        let mut s = format!("!view\t{}\n", escape(&self.query));
        for (name, ty) in &self.columns {
            s.push_str(&format!("!viewcol\t{}\t{}\n", escape(name), ty.pg_name()));
        }
        s.push_str("!reads");
        for r in &self.reads {
            s.push_str(&format!("\t{}", escape(r)));
        }
        s.push('\n');
        if let Some(c) = self.check {
            s.push_str(&format!("!viewcheck\t{}\n", c.name()));
        }
        s
    }

    /// The query parsed.
    pub fn parsed(&self) -> Result<ast::Query> {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        Ok(*sqlparser::parser::Parser::new(&dialect).try_with_sql(&self.query)?.parse_query()?)
    }

    /// As `pg_get_viewdef` prints it: the query, with a leading space and a closing semicolon. `qualified`:
    /// the relations it reads named with their schema (`public.t`), as PostgreSQL prints them when their
    /// schema is not on the search path (pg_dump's empty one), so that the definition restores there.
    pub fn definition(&self, qualified: bool) -> String {
        let query = match self.parsed().ok().filter(|_| qualified) {
            Some(mut q) => {
                struct Qualify {
                    ctes: Vec<String>,
                }
                impl crate::walk::WalkerMut for Qualify {
                    fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
                        self.ctes.extend(cte_names(q));
                        ControlFlow::Continue(())
                    }
                    fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
                        // Tables only: a function in FROM (`generate_series`) keeps its name.
                        if let TableFactor::Table { name, args: None, .. } = f {
                            if name.0.len() == 1 && !self.ctes.contains(&crate::schema::table_name(name)) {
                                name.0.insert(0, ast::ObjectNamePart::Identifier(ast::Ident::new("public")));
                            }
                        }
                        ControlFlow::Continue(())
                    }
                }
                let _ = crate::walk::walk_mut(&mut q, &mut Qualify { ctes: Vec::new() });
                q.to_string()
            }
            None => self.query.clone(),
        };
        format!(" {query};")
    }
}

/// A view's options (`WITH (check_option = local)`, and what `WITH ... CHECK OPTION` became when parsed):
/// `check_option` is the only one; PostgreSQL's others are 0A000, an unknown one or value 22023 as there.
pub fn check_option(options: &ast::CreateTableOptions) -> Result<Option<CheckOption>> {
    let options = match options {
        ast::CreateTableOptions::None => return Ok(None),
        ast::CreateTableOptions::With(o) => o,
        _ => return Err(QueryError::NotSupported("CREATE VIEW ... OPTIONS: a view takes WITH (check_option = ...)".into())),
    };
    let mut check = None;
    for o in options {
        let ast::SqlOption::KeyValue { key, value } = o else {
            return Err(QueryError::Syntax(format!("view option {o} is not understood")));
        };
        let text = match value {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                other => other.to_string(),
            },
            ast::Expr::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        };
        match crate::schema::ident_name(key).as_str() {
            "check_option" => {
                check = Some(CheckOption::parse(&text).ok_or_else(|| {
                    QueryError::Engine { sqlstate: "22023", message: format!("invalid value for enum option \"check_option\": {text}") }
                        .with_message("Valid values are \"local\" and \"cascaded\".".into())
                })?);
            }
            "security_barrier" | "security_invoker" => {
                return Err(QueryError::NotSupported(format!("view option \"{}\": Tabula's views check no row-level security", key.value)))
            }
            other => return Err(QueryError::Engine { sqlstate: "22023", message: format!("unrecognized parameter \"{other}\"") }),
        }
    }
    Ok(check)
}

/// The names a query's WITH gives its CTEs: a relation of such a name in it is the CTE, not a view.
pub(crate) fn cte_names(q: &ast::Query) -> Vec<String> {
    q.with.iter().flat_map(|w| &w.cte_tables).map(|c| crate::schema::ident_name(&c.alias.name)).collect()
}

/// The relations a query names in FROM (its CTEs' names left out), as the catalog names them.
pub fn named_relations(q: &ast::Query) -> Vec<String> {
    struct Names {
        ctes: Vec<String>,
        found: Vec<String>,
    }
    impl crate::walk::Walker for Names {
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            self.ctes.extend(cte_names(q));
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table { name, args: None, .. } = f {
                let n = crate::schema::table_name(name);
                if !self.ctes.contains(&n) && !self.found.contains(&n) {
                    self.found.push(n);
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = Names { ctes: Vec::new(), found: Vec::new() };
    let _ = crate::walk::walk(q, &mut v);
    v.found
}

/// The statement with every view it reads replaced by the view's query; `view` finds a view by name.
pub fn expand(stmt: Statement, view: &dyn Fn(&str) -> Option<Arc<TableSchema>>) -> Result<Statement> {
    struct Expand<'a> {
        view: &'a dyn Fn(&str) -> Option<Arc<TableSchema>>,
        ctes: Vec<String>,
        count: usize,
        error: Option<QueryError>,
    }
    impl crate::walk::WalkerMut for Expand<'_> {
        fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            self.ctes.extend(cte_names(q));
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
            let TableFactor::Table { name, alias, args: None, .. } = f else { return ControlFlow::Continue(()) };
            let n = crate::schema::table_name(name);
            if self.ctes.contains(&n) {
                return ControlFlow::Continue(());
            }
            let Some(def) = (self.view)(&n).and_then(|t| t.view.clone()) else { return ControlFlow::Continue(()) };
            self.count += 1;
            if self.count > MAX_EXPANSIONS {
                self.error = Some(QueryError::Engine {
                    sqlstate: "42P17",
                    message: format!("infinite recursion detected in rules for relation \"{n}\""),
                });
                return ControlFlow::Break(());
            }
            let subquery = match def.parsed() {
                Ok(q) => q,
                Err(e) => {
                    self.error = Some(e);
                    return ControlFlow::Break(());
                }
            };
            let columns = |given: &[ast::TableAliasColumnDef]| -> Vec<ast::TableAliasColumnDef> {
                // Names given in the alias come first; the view's own name the rest.
                let mut cols: Vec<ast::TableAliasColumnDef> = given.to_vec();
                cols.extend(
                    def.columns
                        .iter()
                        .skip(given.len())
                        .map(|(c, _)| ast::TableAliasColumnDef { name: ast::Ident::with_quote('"', c.clone()), data_type: None }),
                );
                cols
            };
            let alias = match alias.take() {
                Some(mut a) => {
                    a.columns = columns(&a.columns);
                    a
                }
                None => ast::TableAlias { explicit: false, at: None, name: ast::Ident::with_quote('"', n.clone()), columns: columns(&[]) },
            };
            *f = TableFactor::Derived { lateral: false, subquery: Box::new(subquery), alias: Some(alias), sample: None };
            ControlFlow::Continue(())
        }
    }
    let mut stmt = stmt;
    let mut e = Expand { view, ctes: Vec::new(), count: 0, error: None };
    let _ = crate::walk::walk_mut(&mut stmt, &mut e);
    match e.error {
        Some(err) => Err(err),
        None => Ok(stmt),
    }
}
