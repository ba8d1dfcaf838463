//! The planner: sqlparser's AST in, [`Plan`] out. This is the only module that reads sqlparser's AST
//! (with `expr`'s binder); everything after it sees plans.
//!
//! For every table read it derives the cheapest key-value access path from the WHERE clause
//! ([`choose_access`]): equality on every key column is a point get, IN lists and ORs of full keys a
//! batch get, equality on a key prefix plus a range or keyset bound on the next column a range scan, and
//! anything else a full scan. Whatever the path does not capture stays as a filter inside the scan.

use std::sync::Arc;

use sqlparser::ast::{self, SetExpr, Statement, TableFactor};
use tabula_store::{Direction, TableOptions};

use crate::error::{QueryError, Result};
use crate::expr::{sql_type, BinOp, Binder, Expr, Scope};
use crate::plan::*;
use crate::schema::table_name as object_name;
use crate::schema::{ident_name, ColumnDef, TableSchema, VERSION_COLUMN};
use crate::types::{Datum, SqlType};

mod access_path;
mod check;
mod ddl;
mod dml;
mod foreign_key;
mod index;
mod index_path;
mod on_conflict;
mod routes;
mod select;
mod utility;

pub(crate) use access_path::needed_columns;
use access_path::*;
pub use access_path::{choose_access, choose_ranked};
use ddl::created_name;
pub(crate) use ddl::key_columns;
pub(crate) use dml::{assignable, default_name};
pub(crate) use index_path::cover;
use index_path::*;
use routes::*;
pub use routes::{insert_call, streams};
use select::*;
pub(crate) use select::{output_names, AGGREGATES};

/// Where the planner finds tables.
/// A PREPARE parameter's type. OID types (`oid`, `regclass`, ...: pg_dump's `PREPARE
/// getColumnACLs(pg_catalog.oid)`) are bigint, which holds every OID and compares with the catalog's.
fn prepare_param_type(dt: &ast::DataType) -> Result<SqlType> {
    if let ast::DataType::Custom(name, _) = dt {
        let n = name.to_string().to_lowercase();
        if matches!(n.strip_prefix("pg_catalog.").unwrap_or(&n), "oid" | "regclass" | "regtype" | "regproc" | "regnamespace") {
            return Ok(SqlType::Int8);
        }
    }
    crate::expr::sql_type(dt)
}

pub trait Catalog {
    fn table(&self, name: &str) -> Result<Arc<TableSchema>>;
    /// The tables whose FOREIGN KEYs reference table `parent`, each with the key's position among its
    /// foreign keys.
    fn referencing(&self, _parent: &str) -> Result<Vec<(Arc<TableSchema>, usize)>> {
        Ok(Vec::new())
    }
    /// Whether `name` is a relation the analytic engine reads and the key-value planner does not (a view,
    /// a sequence).
    fn read_elsewhere(&self, _name: &str) -> bool {
        false
    }
}

pub struct Planner<'a> {
    pub catalog: &'a dyn Catalog,
    /// Types of `$n` parameters: given by the client, or inferred here.
    pub params: Vec<SqlType>,
    /// The session's `TimeZone`, in which a `timestamptz` literal is read (as PostgreSQL reads it when
    /// the statement is parsed: a prepared statement keeps the instant).
    pub zone: crate::types::Zone,
    /// The checks of the views WITH CHECK OPTION the statement writes through (`view_writes`): the
    /// INSERT or UPDATE planned takes them among its checks. Left here after planning, they were not
    /// taken, and the session refuses the statement.
    pub view_checks: Vec<crate::view_writes::ViewCheck>,
}

impl<'a> Planner<'a> {
    pub fn new(catalog: &'a dyn Catalog, params: Vec<SqlType>) -> Self {
        Planner { catalog, params, zone: crate::types::Zone::UTC, view_checks: Vec::new() }
    }

    fn binder<'b, 's>(&'b mut self, scope: &'b Scope<'s>) -> Binder<'b, 's> {
        Binder { scope, params: &mut self.params, zone: self.zone }
    }

    pub fn plan(&mut self, stmt: &Statement) -> Result<Plan> {
        match stmt {
            Statement::Query(q) => match set_config_call(q) {
                Some((args, of_setting)) => self.set_config(&args, of_setting),
                None => Ok(Plan::Select(self.select(q)?)),
            },
            Statement::Insert(i) => self.insert(i),
            Statement::Update(u) => self.update(u),
            Statement::Delete(d) => self.delete(d),
            Statement::CreateTable(c) => self.create_table(c),
            Statement::Drop { object_type: ast::ObjectType::Table, if_exists, names, cascade, .. } => {
                Ok(Plan::DropTable { names: names.iter().map(object_name).collect(), if_exists: *if_exists, cascade: *cascade })
            }
            Statement::CreateView(v) => {
                if v.materialized || v.temporary || v.or_alter || v.if_not_exists || v.with_no_schema_binding || v.to.is_some() {
                    return Err(QueryError::NotSupported(format!("{}: a plain view is supported", first_words(&stmt.to_string()))));
                }
                Ok(Plan::CreateView {
                    name: object_name(&v.name),
                    columns: v.columns.iter().map(|c| ident_name(&c.name)).collect(),
                    query: v.query.clone(),
                    or_replace: v.or_replace,
                    check: crate::views::check_option(&v.options)?,
                })
            }
            Statement::Drop { object_type: ast::ObjectType::View, if_exists, names, cascade, .. } => {
                Ok(Plan::DropView { names: names.iter().map(object_name).collect(), if_exists: *if_exists, cascade: *cascade })
            }
            Statement::Drop { object_type: ast::ObjectType::Sequence, if_exists, names, cascade, .. } => {
                Ok(Plan::DropSequence { names: names.iter().map(object_name).collect(), if_exists: *if_exists, cascade: *cascade })
            }
            Statement::CreateIndex(c) => self.create_index(c),
            Statement::Drop { object_type: ast::ObjectType::Index, if_exists, names, cascade, .. } => {
                if *cascade {
                    return Err(QueryError::NotSupported("DROP INDEX ... CASCADE: nothing depends on an index".into()));
                }
                Ok(Plan::DropIndex { names: names.iter().map(created_name).collect::<Result<_>>()?, if_exists: *if_exists })
            }
            Statement::AlterIndex { name, operation: ast::AlterIndexOperation::RenameIndex { index_name } } => {
                Ok(Plan::RenameIndex { name: created_name(name)?, to: created_name(index_name)? })
            }
            Statement::Truncate(t) => Ok(Plan::Truncate {
                names: t.table_names.iter().map(|n| object_name(&n.name)).collect(),
                cascade: matches!(t.cascade, Some(ast::CascadeOption::Cascade)),
                restart_identity: matches!(t.identity, Some(ast::TruncateIdentityOption::Restart)),
            }),
            Statement::AlterTable(a) => self.alter_table(a),
            Statement::AlterSchema(a) => match a.operations.as_slice() {
                [ast::AlterSchemaOperation::OwnerTo { owner }] => {
                    Ok(Plan::AlterSchemaOwner { schema: object_name(&a.name), owner: owner.clone() })
                }
                _ => Err(QueryError::NotSupported(format!("{stmt}: Tabula has the one schema public"))),
            },
            Statement::StartTransaction { .. } => Ok(Plan::Begin),
            Statement::Lock(l) => self.lock(l),
            Statement::Commit { .. } => Ok(Plan::Commit),
            Statement::Deallocate { name, .. } => {
                let all = name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all");
                Ok(Plan::Deallocate((!all).then(|| ident_name(name))))
            }
            Statement::Declare { stmts } => self.declare(stmts),
            Statement::Prepare { name, data_types, statement } => Ok(Plan::PrepareStatement {
                name: ident_name(name),
                param_types: data_types.iter().map(prepare_param_type).collect::<Result<_>>()?,
                statement: statement.clone(),
            }),
            Statement::Execute { name: Some(name), parameters, immediate: false, into, using, output: false, default: false, .. }
                if into.is_empty() && using.is_empty() =>
            {
                let scope = Scope::empty();
                let args = parameters.iter().map(|e| self.binder(&scope).bind(e)).collect::<Result<_>>()?;
                Ok(Plan::ExecutePrepared { name: object_name(name), args, columns: vec![] })
            }
            Statement::Close { cursor: ast::CloseCursor::All } => Ok(Plan::CloseCursor(None)),
            Statement::Close { cursor: ast::CloseCursor::Specific { name } } => Ok(Plan::CloseCursor(Some(ident_name(name)))),
            Statement::Rollback { savepoint: None, .. } => Ok(Plan::Rollback),
            Statement::Rollback { savepoint: Some(name), .. } => Ok(Plan::RollbackToSavepoint(ident_name(name))),
            Statement::Savepoint { name } => Ok(Plan::Savepoint(ident_name(name))),
            Statement::ReleaseSavepoint { name } => Ok(Plan::ReleaseSavepoint(ident_name(name))),
            Statement::Explain { statement, analyze, .. } => Ok(Plan::Explain { plan: Box::new(self.plan(statement)?), analyze: *analyze }),
            Statement::Set(ast::Set::SetRole { .. })
            | Statement::CreateRole(_)
            | Statement::AlterRole { .. }
            | Statement::Grant(_)
            | Statement::Revoke(_) => Ok(Plan::Access(crate::access::access_statement(stmt)?.expect("an access statement"))),
            Statement::Drop { object_type: ast::ObjectType::Role | ast::ObjectType::User, .. } => {
                Ok(Plan::Access(crate::access::access_statement(stmt)?.expect("an access statement")))
            }
            Statement::Set(s) => self.set(s),
            Statement::ShowVariable { variable } => {
                // sqlparser keeps the words of `SHOW` and drops what is between them: the words are one of
                // PostgreSQL's few spaced names (named here as the setting they show), else the parts of a
                // dotted custom name (`tabula.busy_poll`).
                let words: Vec<String> = variable.iter().map(ident_name).collect();
                let name = match words.join(" ").as_str() {
                    "time zone" => "timezone".to_string(),
                    "transaction isolation level" => "transaction_isolation".to_string(),
                    "session authorization" => "session_authorization".to_string(),
                    _ => words.join("."),
                };
                Ok(Plan::ShowVariable { name })
            }
            Statement::Discard { object_type } => Ok(Plan::Discard { what: object_type.to_string() }),
            Statement::Copy { source, to, target, options, legacy_options, .. } => self.copy(source, *to, target, options, legacy_options),
            Statement::Reset(r) => match &r.reset {
                ast::Reset::ALL => Ok(Plan::Reset { name: None }),
                ast::Reset::ConfigurationParameter(name) if name.to_string().eq_ignore_ascii_case("role") => {
                    Ok(Plan::Access(crate::roles::AccessStatement::ResetRole))
                }
                ast::Reset::ConfigurationParameter(name) => Ok(Plan::Reset { name: Some(name.to_string().to_lowercase()) }),
            },
            other => Err(QueryError::NotSupported(format!("statement not supported: {}", first_words(&other.to_string())))),
        }
    }

    // ---- SELECT ----

    // ---- COPY ----

    // ---- INSERT ----

    // ---- UPDATE / DELETE ----

    // ---- DDL ----
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}
