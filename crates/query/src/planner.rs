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

/// Where the planner finds tables.
pub trait Catalog {
    fn table(&self, name: &str) -> Result<Arc<TableSchema>>;
}

/// At most this many keys in one batch get built from IN lists.
const MAX_BATCH_KEYS: usize = 1000;

pub struct Planner<'a> {
    pub catalog: &'a dyn Catalog,
    /// Types of `$n` parameters: given by the client, or inferred here.
    pub params: Vec<SqlType>,
}

/// The alias of a SELECT's one table, if it has one.
fn select_alias(s: &ast::Select) -> Option<String> {
    match s.from.as_slice() {
        [twj] => match &twj.relation {
            TableFactor::Table { alias: Some(a), .. } => Some(ident_name(&a.name)),
            _ => None,
        },
        _ => None,
    }
}

/// The name of a table to create: only in `public`, as PostgreSQL refuses a schema that does not exist.
fn created_name(n: &ast::ObjectName) -> Result<String> {
    let name = object_name(n);
    match name.split_once('.') {
        Some((schema, _)) => Err(QueryError::Engine { sqlstate: "3F000", message: format!("schema \"{schema}\" does not exist") }),
        None => Ok(name),
    }
}

fn const_u64(e: &Expr) -> bool {
    e.is_constant()
}

impl<'a> Planner<'a> {
    pub fn new(catalog: &'a dyn Catalog, params: Vec<SqlType>) -> Self {
        Planner { catalog, params }
    }

    fn binder<'b, 's>(&'b mut self, scope: &'b Scope<'s>) -> Binder<'b, 's> {
        Binder { scope, params: &mut self.params }
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
            Statement::Drop { object_type: ast::ObjectType::Table, if_exists, names, .. } => {
                Ok(Plan::DropTable { names: names.iter().map(object_name).collect(), if_exists: *if_exists })
            }
            Statement::Truncate(t) => Ok(Plan::Truncate { names: t.table_names.iter().map(|n| object_name(&n.name)).collect() }),
            Statement::AlterTable(a) => self.alter_table(a),
            Statement::StartTransaction { .. } => Ok(Plan::Begin),
            Statement::Commit { .. } => Ok(Plan::Commit),
            Statement::Deallocate { name, .. } => {
                let all = name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all");
                Ok(Plan::Deallocate((!all).then(|| ident_name(name))))
            }
            Statement::Declare { stmts } => self.declare(stmts),
            Statement::Prepare { name, data_types, statement } => Ok(Plan::PrepareStatement {
                name: ident_name(name),
                param_types: data_types.iter().map(crate::expr::sql_type).collect::<Result<_>>()?,
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

    fn set(&mut self, s: &ast::Set) -> Result<Plan> {
        match s {
            ast::Set::SingleAssignment { variable, values, .. } => {
                let name = variable.to_string().to_lowercase();
                let value = values
                    .iter()
                    .map(|v| match v {
                        ast::Expr::Value(v) => match &v.value {
                            ast::Value::SingleQuotedString(s) => s.clone(),
                            other => other.to_string(),
                        },
                        ast::Expr::Identifier(i) => i.value.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let value = if value.eq_ignore_ascii_case("default") { None } else { Some(value) };
                match name.as_str() {
                    // `SET role = r` is SET ROLE; `none` (or DEFAULT) goes back to the session's user.
                    "role" => Ok(Plan::Access(crate::roles::AccessStatement::SetRole(value.filter(|v| !v.eq_ignore_ascii_case("none"))))),
                    "session_authorization" => {
                        Err(QueryError::NotSupported("SET SESSION AUTHORIZATION is not supported: use SET ROLE".into()))
                    }
                    _ => Ok(Plan::SetVariable { name, value }),
                }
            }
            ast::Set::SetTimeZone { value, .. } => Ok(Plan::SetVariable {
                name: "timezone".into(),
                value: Some(match value {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    other => other.to_string(),
                }),
            }),
            ast::Set::SetNames { charset_name, .. } => {
                Ok(Plan::SetVariable { name: "client_encoding".into(), value: Some(charset_name.to_string()) })
            }
            // SET SESSION CHARACTERISTICS / SET TRANSACTION: every transaction is snapshot isolation.
            ast::Set::SetTransaction { .. } => Ok(Plan::SetVariable { name: "transaction_characteristics".into(), value: None }),
            other => Err(QueryError::NotSupported(format!("statement not supported: {other}"))),
        }
    }

    // ---- SELECT ----

    pub fn select(&mut self, q: &ast::Query) -> Result<SelectPlan> {
        let Some(first) = q.locks.first() else { return self.select_rows(q) };
        let clause = match first.lock_type {
            ast::LockType::Update => "FOR UPDATE",
            ast::LockType::Share => "FOR SHARE",
        };
        // Transactions are optimistic: no row is ever locked, so none could be skipped. Returning every row
        // would hand two queue workers the same one; refuse instead. NOWAIT holds as it is: nothing waits.
        if q.locks.iter().any(|l| matches!(l.nonblock, Some(ast::NonBlock::SkipLocked))) {
            return Err(QueryError::NotSupported(format!(
                "{clause} SKIP LOCKED is not supported: Tabula's transactions lock no rows, they fail at commit (40001) if a row read {clause} changed meanwhile"
            )));
        }
        let mut plan = self.select_rows(q).map_err(|e| match e {
            // PostgreSQL's own refusals, then what the key-value planner cannot lock.
            QueryError::Analytic(what) => QueryError::NotSupported(match what.as_str() {
                "aggregates" => format!("{clause} is not allowed with aggregate functions"),
                "GROUP BY" => format!("{clause} is not allowed with GROUP BY clause"),
                "DISTINCT" => format!("{clause} is not allowed with DISTINCT clause"),
                "set operations" => format!("{clause} is not allowed with UNION/INTERSECT/EXCEPT"),
                _ => format!("{clause} is not supported with {what}: only a read of one table can lock its rows"),
            }),
            e => e,
        })?;
        let (from, alias) = match (&plan.scan, q.body.as_ref()) {
            (Some(scan), SetExpr::Select(s)) => (Some(scan.table.name.clone()), select_alias(s)),
            _ => (None, None),
        };
        for of in q.locks.iter().filter_map(|l| l.of.as_ref()) {
            let name = object_name(of);
            // Like a column reference, OF names the alias when there is one.
            if alias.as_deref().or(from.as_deref()) != Some(name.as_str()) {
                return Err(QueryError::UndefinedTableReference(format!(
                    "relation \"{name}\" in {clause} clause not found in FROM clause"
                )));
            }
        }
        if let Some(scan) = plan.scan.as_ref().filter(|s| matches!(s.access, AccessPath::System(_))) {
            return Err(QueryError::NotSupported(format!("cannot lock rows in view \"{}\"", scan.table.name)));
        }
        plan.lock = plan.scan.is_some();
        Ok(plan)
    }

    fn select_rows(&mut self, q: &ast::Query) -> Result<SelectPlan> {
        if q.with.is_some() {
            return Err(QueryError::Analytic("WITH".into()));
        }
        let select = match q.body.as_ref() {
            SetExpr::Select(s) => s,
            SetExpr::Values(_) => return Err(QueryError::Analytic("VALUES".into())),
            _ => return Err(QueryError::Analytic("set operations".into())),
        };
        if select.distinct.is_some() {
            return Err(QueryError::Analytic("DISTINCT".into()));
        }
        if !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty()) || select.having.is_some() {
            return Err(QueryError::Analytic("GROUP BY".into()));
        }
        let mut system = None;
        let (table, alias, versions_args) = match select.from.as_slice() {
            [] => (None, None, None),
            [twj] if twj.joins.is_empty() => match &twj.relation {
                TableFactor::Table { name, alias, args, .. } => {
                    let parts: Vec<String> = name.0.iter().filter_map(|p| p.as_ident()).map(ident_name).collect();
                    let t = match parts.as_slice() {
                        [schema, view] if crate::system::SystemView::lookup(schema, view).is_some() => {
                            system = crate::system::SystemView::lookup(schema, view);
                            system.unwrap().schema()
                        }
                        [schema, _] if schema == "pg_catalog" || schema == "information_schema" || schema == "tabula" => {
                            return Err(QueryError::Analytic("catalog relations".into()))
                        }
                        [name] if name.starts_with("pg_") && self.catalog.table(name).is_err() => {
                            return Err(QueryError::Analytic("catalog relations".into()))
                        }
                        _ => self.catalog.table(&object_name(name))?,
                    };
                    (Some(t), alias.as_ref().map(|a| ident_name(&a.name)), args.clone())
                }
                _ => return Err(QueryError::Analytic("derived tables".into())),
            },
            _ => return Err(QueryError::Analytic("joins".into())),
        };
        let scope = match &table {
            Some(t) => Scope::table(t, alias.as_deref()),
            None => Scope::empty(),
        };
        // Projection.
        let mut projection = Vec::new();
        let mut columns = Vec::new();
        for item in &select.projection {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    let t = table.as_ref().ok_or_else(|| QueryError::Syntax("SELECT * with no tables specified is not valid".into()))?;
                    for (i, c) in t.columns.iter().enumerate() {
                        projection.push(Expr::Column { index: i, ty: c.ty, name: c.name.clone() });
                        columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, source: Some((t.name.clone(), i)) });
                    }
                }
                ast::SelectItem::UnnamedExpr(e) => {
                    if contains_aggregate(e) {
                        return Err(QueryError::Analytic("aggregates".into()));
                    }
                    let b = self.binder(&scope).bind(e)?;
                    columns.push(output_column(&b, default_name(e), table.as_deref()));
                    projection.push(b);
                }
                ast::SelectItem::ExprWithAliases { .. } => {
                    return Err(QueryError::NotSupported("several aliases for one expression".into()))
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    if contains_aggregate(expr) {
                        return Err(QueryError::Analytic("aggregates".into()));
                    }
                    let b = self.binder(&scope).bind(expr)?;
                    let mut c = output_column(&b, ident_name(alias), table.as_deref());
                    c.name = ident_name(alias);
                    columns.push(c);
                    projection.push(b);
                }
            }
        }
        // Untyped literals in the select list come out as text.
        for (e, c) in projection.iter_mut().zip(columns.iter_mut()) {
            if c.ty == SqlType::Unknown {
                *e = self.binder(&Scope::empty()).coerce(e.clone(), SqlType::Text)?;
                c.ty = SqlType::Text;
                if let Expr::Literal(_, t) = e {
                    *t = SqlType::Text;
                }
            }
        }
        let filter = select.selection.as_ref().map(|w| self.predicate(&scope, w)).transpose()?;
        let (limit, offset) = self.limit_offset(&scope, q)?;
        let Some(table) = table.clone() else {
            if filter.is_some() {
                return Err(QueryError::NotSupported("WHERE without FROM".into()));
            }
            return Ok(SelectPlan { scan: None, projection, columns, sort: vec![], offset, limit, lock: false });
        };
        let versions = self.versions(&scope, versions_args.as_ref())?;
        // ORDER BY.
        let mut order = Vec::new();
        if let Some(ob) = &q.order_by {
            if let ast::OrderByKind::Expressions(items) = &ob.kind {
                for item in items {
                    let asc = item.options.asc != Some(false);
                    // ORDER BY 2 and ORDER BY alias refer to the select list.
                    let e = match &item.expr {
                        ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                            let n: usize = v.value.to_string().parse().unwrap_or(0);
                            projection
                                .get(n.wrapping_sub(1))
                                .cloned()
                                .ok_or_else(|| QueryError::Syntax(format!("ORDER BY position {n} is not in select list")))?
                        }
                        ast::Expr::Identifier(id)
                            if columns.iter().any(|c| c.name == ident_name(id)) && table.column_index(&ident_name(id)).is_none() =>
                        {
                            let i = columns.iter().position(|c| c.name == ident_name(id)).unwrap();
                            projection[i].clone()
                        }
                        e => self.binder(&scope).bind(e)?,
                    };
                    order.push((e, asc));
                }
            } else {
                return Err(QueryError::NotSupported("ORDER BY ALL is not supported".into()));
            }
        }
        let conjuncts = filter.map(|f| f.conjuncts()).unwrap_or_default();
        let (mut access, residual) = match system {
            Some(view) => (AccessPath::System(view), conjuncts),
            None => choose_access(&table, conjuncts),
        };
        // ORDER BY the key (after the equality prefix) is the scan direction; anything else sorts.
        let mut sort = order.clone();
        if let Some(dir) = key_order(&table, &access, &order) {
            set_direction(&mut access, dir);
            sort.clear();
        }
        let filter = Expr::and_all(residual);
        let history = !matches!(versions, Versions::Latest);
        let scan_limit = match (&limit, &offset) {
            (Some(l), None) if filter.is_none() && sort.is_empty() && !history => Some(l.clone()),
            (Some(l), Some(o)) if filter.is_none() && sort.is_empty() && !history && const_u64(o) => {
                Some(Expr::Binary { op: BinOp::Add, left: Box::new(l.clone()), right: Box::new(o.clone()) })
            }
            _ => None,
        };
        let needed = needed_columns(&table, &projection, filter.as_ref(), &sort);
        let scan = Scan { table, access, filter, limit: scan_limit, versions, columns: needed };
        Ok(SelectPlan { scan: Some(scan), projection, columns, sort, offset, limit, lock: false })
    }

    fn limit_offset(&mut self, scope: &Scope, q: &ast::Query) -> Result<(Option<Expr>, Option<Expr>)> {
        let (limit, offset) = match &q.limit_clause {
            None => (None, None),
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (limit.clone(), offset.as_ref().map(|o| o.value.clone())),
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit.clone()), Some(offset.clone())),
        };
        let mut bind = |e: Option<ast::Expr>| -> Result<Option<Expr>> {
            let Some(e) = e else { return Ok(None) };
            if matches!(&e, ast::Expr::Value(v) if v.value == ast::Value::Null) {
                return Ok(None);
            }
            let b = self.binder(scope).bind(&e)?;
            let b = self.binder(scope).coerce(b, SqlType::Int8)?;
            if !b.is_constant() {
                return Err(QueryError::Syntax("argument of LIMIT must not contain variables".into()));
            }
            Ok(Some(b))
        };
        Ok((bind(limit)?, bind(offset)?))
    }

    fn versions(&mut self, scope: &Scope, args: Option<&ast::TableFunctionArgs>) -> Result<Versions> {
        let Some(args) = args else { return Ok(Versions::Latest) };
        let mut latest_n = None;
        let mut after = None;
        let mut before = None;
        let mut as_of = None;
        for a in &args.args {
            let (name, e) = match a {
                ast::FunctionArg::Named { name, arg: ast::FunctionArgExpr::Expr(e), .. } => (ident_name(name), e),
                ast::FunctionArg::ExprNamed { name: ast::Expr::Identifier(name), arg: ast::FunctionArgExpr::Expr(e), .. } => {
                    (ident_name(name), e)
                }
                _ => {
                    return Err(QueryError::Syntax(
                        "table arguments are named: latest_n => n, after_or_equal => ms, before => ms, as_of => ms".into(),
                    ))
                }
            };
            let b = self.binder(scope).bind(e)?;
            let b = self.binder(scope).coerce(b, SqlType::Int8)?;
            if !b.is_constant() {
                return Err(QueryError::Syntax("table arguments must be constants".into()));
            }
            match name.as_str() {
                "latest_n" => latest_n = Some(b),
                "after_or_equal" => after = Some(b),
                "before" => before = Some(b),
                "as_of" => as_of = Some(b),
                other => {
                    return Err(QueryError::InvalidParameterValue(format!(
                        "unknown table argument \"{other}\" (expected latest_n, after_or_equal, before or as_of)"
                    )))
                }
            }
        }
        match as_of {
            Some(t) if latest_n.is_none() && after.is_none() && before.is_none() => Ok(Versions::AsOf(t)),
            Some(_) => Err(QueryError::InvalidParameterValue("as_of cannot be combined with other version arguments".into())),
            None => Ok(Versions::History { latest_n, after_or_equal: after, before }),
        }
    }

    fn predicate(&mut self, scope: &Scope, e: &ast::Expr) -> Result<Expr> {
        if contains_aggregate(e) {
            return Err(QueryError::Syntax("aggregate functions are not allowed in WHERE".into()));
        }
        let b = self.binder(scope).bind(e)?;
        let b = self.binder(scope).coerce(b, SqlType::Bool)?;
        match b.ty() {
            SqlType::Bool | SqlType::Unknown => Ok(b),
            t => Err(QueryError::DatatypeMismatch(format!("argument of WHERE must be type boolean, not type {t}"))),
        }
    }

    // ---- COPY ----

    fn copy(
        &mut self,
        source: &ast::CopySource,
        to: bool,
        target: &ast::CopyTarget,
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
    ) -> Result<Plan> {
        let format = crate::copy::CopyFormat::from_options(options, legacy)?;
        match (to, target) {
            (false, ast::CopyTarget::Stdin) | (true, ast::CopyTarget::Stdout) => {}
            _ => {
                return Err(QueryError::NotSupported(
                    "COPY with a file or program on the server is not supported: use STDIN / STDOUT (psql's \\copy)".into(),
                ))
            }
        }
        match source {
            ast::CopySource::Table { table_name, columns } => {
                let table = self.catalog.table(&object_name(table_name))?;
                let targets: Vec<usize> = if columns.is_empty() {
                    (0..table.columns.len()).collect()
                } else {
                    columns
                        .iter()
                        .map(|c| {
                            let n = ident_name(c);
                            table.column_index(&n).ok_or_else(|| QueryError::UndefinedColumn(format!("{n}\" of relation \"{}", table.name)))
                        })
                        .collect::<Result<_>>()?
                };
                if !to {
                    let defaults = self.omitted_defaults(&table, &targets)?;
                    return Ok(Plan::CopyFrom { table, targets, defaults, format });
                }
                let projection: Vec<Expr> = targets
                    .iter()
                    .map(|&i| Expr::Column { index: i, ty: table.column_type(i), name: table.column_name(i).to_string() })
                    .collect();
                let columns = targets
                    .iter()
                    .map(|&i| OutputColumn {
                        name: table.column_name(i).to_string(),
                        ty: table.column_type(i),
                        source: Some((table.name.clone(), i)),
                    })
                    .collect();
                let scan = Scan {
                    table: table.clone(),
                    access: AccessPath::FullScan { direction: Direction::Forward },
                    filter: None,
                    limit: None,
                    versions: Versions::Latest,
                    columns: None,
                };
                Ok(Plan::CopyTo {
                    select: SelectPlan { scan: Some(scan), projection, columns, sort: vec![], offset: None, limit: None, lock: false },
                    format,
                })
            }
            ast::CopySource::Query(q) if to => Ok(Plan::CopyTo { select: self.select(q)?, format }),
            ast::CopySource::Query(_) => Err(QueryError::Syntax("COPY FROM needs a table".into())),
        }
    }

    // ---- INSERT ----

    fn insert(&mut self, i: &ast::Insert) -> Result<Plan> {
        let name = match &i.table {
            ast::TableObject::TableName(n) => object_name(n),
            _ => return Err(QueryError::NotSupported("INSERT into a table function".into())),
        };
        let table = self.catalog.table(&name)?;
        let targets: Vec<usize> = if i.columns.is_empty() {
            (0..table.columns.len()).collect()
        } else {
            i.columns
                .iter()
                .map(|c| {
                    let n = c.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default();
                    table.column_index(&n).ok_or_else(|| QueryError::UndefinedColumn(format!("{n}\" of relation \"{}", table.name)))
                })
                .collect::<Result<_>>()?
        };
        for (k, t) in targets.iter().enumerate() {
            if targets[..k].contains(t) {
                return Err(QueryError::Syntax(format!("column \"{}\" specified more than once", table.column_name(*t))));
            }
        }
        let source = i.source.as_ref().ok_or_else(|| QueryError::NotSupported("INSERT without VALUES".into()))?;
        let mut values = match source.body.as_ref() {
            SetExpr::Values(values) => Some(values),
            _ => None,
        };
        let mut rows = match values {
            Some(v) => match self.values_rows(&table, &targets, v) {
                Ok(rows) => rows,
                // Functions only DataFusion has (`repeat`, `decode`, ...): the VALUES list runs there as the
                // query of an INSERT ... SELECT. The DEFAULT keyword has no meaning in a bare VALUES query.
                Err(e) if e.is_analytic_retry() => {
                    if v.rows.iter().flat_map(|r| r.iter()).any(is_default_keyword) {
                        return Err(QueryError::NotSupported(format!("DEFAULT in a VALUES list that needs the analytic engine ({e})")));
                    }
                    values = None;
                    Vec::new()
                }
                Err(e) => return Err(e),
            },
            None => Vec::new(),
        };
        if values.is_none() {
            if let Some(&t) = targets.iter().find(|&&t| table.columns.get(t).is_some_and(|c| c.always)) {
                return Err(generated_always(table.column_name(t)));
            }
        }
        // Columns left out take their DEFAULT, as written values: every insert path sees whole rows.
        let defaults = self.omitted_defaults(&table, &targets)?;
        for row in &mut rows {
            row.extend(defaults.iter().map(|(_, e)| e.clone()));
        }
        let mut targets = targets;
        targets.extend(defaults.iter().map(|(c, _)| *c));
        let on_conflict = match &i.on {
            None => OnConflict::Error,
            Some(ast::OnInsert::OnConflict(oc)) => {
                if let Some(ast::ConflictTarget::Columns(cols)) = &oc.conflict_target {
                    let mut idx: Vec<usize> = cols.iter().filter_map(|c| table.column_index(&ident_name(c))).collect();
                    idx.sort();
                    let mut pk = table.pk.clone();
                    pk.sort();
                    if idx != pk {
                        return Err(QueryError::InvalidParameterValue(
                            "there is no unique or exclusion constraint matching the ON CONFLICT specification".into(),
                        ));
                    }
                }
                match &oc.action {
                    ast::OnConflictAction::DoNothing => OnConflict::DoNothing { arbiter: oc.conflict_target.is_some() },
                    ast::OnConflictAction::DoUpdate(du) => {
                        if oc.conflict_target.is_none() {
                            return Err(QueryError::Syntax(
                                "ON CONFLICT DO UPDATE requires inference specification or constraint name".into(),
                            ));
                        }
                        // Existing row's columns first, then `excluded`'s.
                        let offset = table.columns.len() + 1;
                        let scope = Scope { tables: vec![(&table, table.name.clone(), 0), (&table, "excluded".to_string(), offset)] };
                        let (version, assignments): (Vec<_>, Vec<_>) =
                            self.assignments(&scope, &table, &du.assignments)?.into_iter().partition(|(c, _)| *c == table.columns.len());
                        let version = version.into_iter().next().map(|(_, e)| e);
                        let filter = du.selection.as_ref().map(|w| self.predicate(&scope, w)).transpose()?;
                        OnConflict::DoUpdate { assignments, filter, version }
                    }
                }
            }
            Some(_) => return Err(QueryError::NotSupported("ON DUPLICATE KEY".into())),
        };
        let returning = self.returning(&table, i.returning.as_ref())?;
        let insert = InsertPlan { table, targets, rows, on_conflict, returning };
        match values {
            Some(_) => Ok(Plan::Insert(insert)),
            None => Ok(Plan::InsertSelect { insert, query: source.clone(), defaults: defaults.into_iter().map(|(_, e)| e).collect() }),
        }
    }

    /// The rows of `INSERT ... VALUES`, bound and typed as the target columns take them.
    fn values_rows(&mut self, table: &TableSchema, targets: &[usize], values: &ast::Values) -> Result<Vec<Vec<Expr>>> {
        let scope = Scope::empty();
        let mut rows = Vec::new();
        for row in &values.rows {
            if row.len() > targets.len() {
                return Err(QueryError::Syntax("INSERT has more expressions than target columns".into()));
            }
            if row.len() < targets.len() {
                return Err(QueryError::Syntax("INSERT has more target columns than expressions".into()));
            }
            let mut out = Vec::new();
            for (e, &t) in row.iter().zip(targets) {
                let ty = table.column_type(t);
                if is_default_keyword(e) {
                    out.push(self.column_default(table, t)?.unwrap_or(Expr::Literal(Datum::Null, ty)));
                    continue;
                }
                if table.columns.get(t).is_some_and(|c| c.always) {
                    return Err(generated_always(table.column_name(t)));
                }
                let b = self.binder(&scope).bind(e)?;
                out.push(self.assign(b, ty, table.column_name(t))?);
            }
            rows.push(out);
        }
        Ok(rows)
    }

    /// `SELECT set_config(name, value, is_local)`: a SET that returns the new value (pg_dump's first
    /// statement). Only a session-wide change (`is_local` false) is taken. `of_setting`: the name of
    /// pg_dump's `FROM pg_settings WHERE name = '...'` form, which sets it only if it exists.
    fn set_config(&mut self, args: &[&ast::Expr], of_setting: Option<String>) -> Result<Plan> {
        let scope = Scope::empty();
        let ctx = crate::expr::EvalCtx { params: &[], now_us: 0, user: "", session_user: "", database: "" };
        let mut values = Vec::new();
        for a in args.iter().skip(usize::from(of_setting.is_some())) {
            let e = self.binder(&scope).bind(a)?;
            if !e.is_constant() {
                return Err(QueryError::NotSupported("set_config() of other than constants".into()));
            }
            values.push(e.eval(&[], &ctx)?);
        }
        let text = |d: &Datum| match d.clone().cast(SqlType::Text) {
            Ok(Datum::Text(t)) => Some(t),
            _ => None,
        };
        if let Some(name) = &of_setting {
            values.insert(0, Datum::Text(name.clone()));
        }
        let (Some(name), Some(value)) = (text(&values[0]), text(&values[1])) else {
            return Err(QueryError::InvalidParameterValue("set_config() needs a name and a value".into()));
        };
        if crate::expr::truth(&values[2])? != Some(false) {
            return Err(QueryError::NotSupported("set_config() local to the transaction".into()));
        }
        Ok(Plan::SetConfig { name: name.to_lowercase(), value, if_exists: of_setting.is_some() })
    }

    /// `DECLARE name CURSOR FOR query`: forward-only cursors over text rows, as psql, psycopg and
    /// SQLAlchemy declare them.
    fn declare(&mut self, stmts: &[ast::Declare]) -> Result<Plan> {
        let [d] = stmts else { return Err(QueryError::NotSupported("DECLARE of several names".into())) };
        let (Some(ast::DeclareType::Cursor), [name], Some(query)) = (&d.declare_type, d.names.as_slice(), &d.for_query) else {
            return Err(QueryError::NotSupported("DECLARE other than of a cursor".into()));
        };
        if d.binary == Some(true) {
            return Err(QueryError::NotSupported("BINARY cursors".into()));
        }
        if d.scroll == Some(true) {
            return Err(QueryError::NotSupported("SCROLL cursors: cursors only move forward".into()));
        }
        if !query.locks.is_empty() {
            return Err(QueryError::NotSupported("DECLARE CURSOR with FOR UPDATE or FOR SHARE".into()));
        }
        Ok(Plan::DeclareCursor { name: ident_name(name), hold: d.hold == Some(true), query: query.clone() })
    }

    /// A column's DEFAULT, bound and typed as a value assigned to it; `None` without one.
    fn column_default(&mut self, table: &TableSchema, col: usize) -> Result<Option<Expr>> {
        match &table.columns[col].default {
            Some(text) => self.bind_default(text, table.column_type(col), table.column_name(col)).map(Some),
            None => Ok(None),
        }
    }

    fn bind_default(&mut self, text: &str, ty: SqlType, column: &str) -> Result<Expr> {
        let e = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(text)?.parse_expr()?;
        let b = self.binder(&Scope::empty()).bind(&e)?;
        self.assign(b, ty, column)
    }

    /// The DEFAULTs of the columns a row write leaves out (an identity column is generated instead).
    fn omitted_defaults(&mut self, table: &TableSchema, targets: &[usize]) -> Result<Vec<(usize, Expr)>> {
        let mut out = Vec::new();
        for c in (0..table.columns.len()).filter(|c| !targets.contains(c) && !table.columns[*c].identity) {
            if let Some(e) = self.column_default(table, c)? {
                out.push((c, e));
            }
        }
        Ok(out)
    }

    /// Types a value assigned to a column, as INSERT and UPDATE do.
    fn assign(&mut self, e: Expr, ty: SqlType, column: &str) -> Result<Expr> {
        let e = self.binder(&Scope::empty()).coerce(e, ty)?;
        let et = e.ty();
        let compatible = et == ty
            || et == SqlType::Unknown
            || (et.is_numeric() && ty.is_numeric())
            || (et.is_text() && ty.is_text())
            || (et.is_text() && matches!(ty, SqlType::Json | SqlType::Jsonb))
            || (matches!(et, SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date)
                && matches!(ty, SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date));
        if !compatible {
            return Err(QueryError::DatatypeMismatch(format!("column \"{column}\" is of type {ty} but expression is of type {et}")));
        }
        Ok(match e {
            Expr::Literal(d, _) => Expr::Literal(d.cast(ty)?, ty),
            e if e.ty() == ty => e,
            e => Expr::Cast { expr: Box::new(e), ty },
        })
    }

    fn assignments(&mut self, scope: &Scope, table: &TableSchema, list: &[ast::Assignment]) -> Result<Vec<(usize, Expr)>> {
        let mut out = Vec::new();
        for a in list {
            let names: Vec<String> = match &a.target {
                ast::AssignmentTarget::ColumnName(n) => vec![n.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default()],
                ast::AssignmentTarget::Tuple(_) => return Err(QueryError::NotSupported("tuple assignments".into())),
            };
            let name = &names[0];
            let idx =
                table.column_index(name).ok_or_else(|| QueryError::UndefinedColumn(format!("{name}\" of relation \"{}", table.name)))?;
            if table.is_pk(idx) {
                return Err(QueryError::NotSupported(format!(
                    "updating primary key column \"{name}\" is not supported: delete and insert the row"
                )));
            }
            if is_default_keyword(&a.value) {
                let default = self.column_default(table, idx)?;
                out.push((idx, default.unwrap_or(Expr::Literal(Datum::Null, table.column_type(idx)))));
                continue;
            }
            let b = self.binder(scope).bind(&a.value)?;
            out.push((idx, self.assign(b, table.column_type(idx), name)?));
        }
        Ok(out)
    }

    fn returning(&mut self, table: &Arc<TableSchema>, items: Option<&Vec<ast::SelectItem>>) -> Result<Option<Returning>> {
        let Some(items) = items else { return Ok(None) };
        let scope = Scope::table(table, None);
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    for (i, c) in table.columns.iter().enumerate() {
                        exprs.push(Expr::Column { index: i, ty: c.ty, name: c.name.clone() });
                        columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, source: Some((table.name.clone(), i)) });
                    }
                }
                ast::SelectItem::UnnamedExpr(e) => {
                    let b = self.binder(&scope).bind(e)?;
                    columns.push(output_column(&b, default_name(e), Some(table)));
                    exprs.push(b);
                }
                ast::SelectItem::ExprWithAliases { .. } => {
                    return Err(QueryError::NotSupported("several aliases for one expression".into()))
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let b = self.binder(&scope).bind(expr)?;
                    let mut c = output_column(&b, ident_name(alias), Some(table));
                    c.name = ident_name(alias);
                    columns.push(c);
                    exprs.push(b);
                }
            }
        }
        Ok(Some(Returning { exprs, columns }))
    }

    // ---- UPDATE / DELETE ----

    fn table_target(&mut self, relation: &TableFactor) -> Result<(Arc<TableSchema>, Option<String>)> {
        match relation {
            TableFactor::Table { name, alias, args: None, .. } => {
                Ok((self.catalog.table(&object_name(name))?, alias.as_ref().map(|a| ident_name(&a.name))))
            }
            _ => Err(QueryError::NotSupported("only plain tables can be updated".into())),
        }
    }

    fn update(&mut self, u: &ast::Update) -> Result<Plan> {
        if u.from.is_some() || !u.table.joins.is_empty() {
            return Err(QueryError::NotSupported("UPDATE ... FROM is not supported".into()));
        }
        let (table, alias) = self.table_target(&u.table.relation)?;
        let scope = Scope::table(&table, alias.as_deref());
        let mut assignments = self.assignments(&scope, &table, &u.assignments)?;
        let version = assignments.iter().position(|(c, _)| *c == table.columns.len()).map(|i| assignments.remove(i).1);
        if version.is_some() && assignments.is_empty() {
            return Err(QueryError::Syntax("SET _version needs at least one column to write at that version".into()));
        }
        let filter = u.selection.as_ref().map(|w| self.predicate(&scope, w)).transpose()?;
        let scan = self.dml_scan(&table, filter);
        let returning = self.returning(&table, u.returning.as_ref())?;
        Ok(Plan::Update(UpdatePlan { scan, assignments, version, returning }))
    }

    fn delete(&mut self, d: &ast::Delete) -> Result<Plan> {
        let from = match &d.from {
            ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
        };
        let [twj] = from.as_slice() else {
            return Err(QueryError::NotSupported("DELETE from several tables".into()));
        };
        if d.using.is_some() || !twj.joins.is_empty() {
            return Err(QueryError::NotSupported("DELETE ... USING is not supported".into()));
        }
        let (table, alias) = self.table_target(&twj.relation)?;
        let scope = Scope::table(&table, alias.as_deref());
        let filter = d.selection.as_ref().map(|w| self.predicate(&scope, w)).transpose()?;
        // `AND _version = v` with the full key deletes one version of every cell.
        let mut version = None;
        let mut conjuncts = filter.map(|f| f.conjuncts()).unwrap_or_default();
        let vcol = table.columns.len();
        if let Some(pos) = conjuncts.iter().position(|c| eq_column_const(c, vcol).is_some()) {
            version = eq_column_const(&conjuncts[pos], vcol);
            conjuncts.remove(pos);
        }
        let scan = self.dml_scan(&table, Expr::and_all(conjuncts));
        if version.is_some() && !matches!(scan.access, AccessPath::PointGet { .. }) {
            return Err(QueryError::NotSupported("deleting one version needs the full primary key in WHERE".into()));
        }
        let returning = self.returning(&table, d.returning.as_ref())?;
        Ok(Plan::Delete(DeletePlan { scan, version, returning }))
    }

    fn dml_scan(&mut self, table: &Arc<TableSchema>, filter: Option<Expr>) -> Scan {
        let (access, residual) = choose_access(table, filter.map(|f| f.conjuncts()).unwrap_or_default());
        Scan { table: table.clone(), access, filter: Expr::and_all(residual), limit: None, versions: Versions::Latest, columns: None }
    }

    // ---- DDL ----

    fn create_table(&mut self, c: &ast::CreateTable) -> Result<Plan> {
        if c.query.is_some() || c.like.is_some() {
            return Err(QueryError::NotSupported("CREATE TABLE AS / LIKE".into()));
        }
        let name = created_name(&c.name)?;
        let mut columns = Vec::new();
        let mut pk_names: Vec<String> = Vec::new();
        let mut partition_key_len = 1;
        for col in &c.columns {
            let cname = ident_name(&col.name);
            if columns.iter().any(|d: &ColumnDef| d.name == cname) {
                return Err(QueryError::InvalidTableDefinition(format!("column \"{cname}\" specified more than once")));
            }
            if cname == VERSION_COLUMN {
                return Err(QueryError::InvalidName(format!("column name \"{VERSION_COLUMN}\" is reserved for versions")));
            }
            let type_text = col.data_type.to_string().to_lowercase();
            let serial = matches!(type_text.as_str(), "bigserial" | "serial" | "smallserial" | "serial8" | "serial4");
            let ty = sql_type(&col.data_type)?;
            let mut def = ColumnDef { name: cname.clone(), ty, not_null: serial, identity: serial, always: false, default: None };
            for opt in &col.options {
                match &opt.option {
                    ast::ColumnOption::NotNull => def.not_null = true,
                    ast::ColumnOption::Null => def.not_null = false,
                    ast::ColumnOption::PrimaryKey(_) => {
                        if !pk_names.is_empty() {
                            return Err(QueryError::InvalidTableDefinition(format!(
                                "multiple primary keys for table \"{name}\" are not allowed"
                            )));
                        }
                        pk_names.push(cname.clone());
                    }
                    ast::ColumnOption::Default(e) => {
                        // Checked now: a DEFAULT that cannot be evaluated is refused, never ignored.
                        self.bind_default(&e.to_string(), ty, &cname)?;
                        def.default = Some(e.to_string());
                    }
                    ast::ColumnOption::Generated { generation_expr: None, generated_as, .. } => {
                        def.identity = true;
                        def.always = matches!(generated_as, ast::GeneratedAs::Always);
                        def.not_null = true;
                    }
                    ast::ColumnOption::Identity(_) => {
                        def.identity = true;
                        def.not_null = true;
                    }
                    other => return Err(QueryError::NotSupported(format!("column option {other} is not supported"))),
                }
            }
            columns.push(def);
        }
        for con in &c.constraints {
            match con {
                ast::TableConstraint::PrimaryKey(pk) => {
                    if !pk_names.is_empty() {
                        return Err(QueryError::InvalidTableDefinition(format!(
                            "multiple primary keys for table \"{name}\" are not allowed"
                        )));
                    }
                    for (i, ic) in pk.columns.iter().enumerate() {
                        match &ic.column.expr {
                            ast::Expr::Identifier(id) => pk_names.push(ident_name(id)),
                            // PRIMARY KEY ((a, b), c): the parenthesised first group is the partition key.
                            ast::Expr::Tuple(ids) if i == 0 => {
                                for e in ids {
                                    match e {
                                        ast::Expr::Identifier(id) => pk_names.push(ident_name(id)),
                                        other => return Err(QueryError::Syntax(format!("bad primary key column {other}"))),
                                    }
                                }
                                partition_key_len = ids.len();
                            }
                            ast::Expr::Nested(inner) if i == 0 => match inner.as_ref() {
                                ast::Expr::Identifier(id) => pk_names.push(ident_name(id)),
                                other => return Err(QueryError::Syntax(format!("bad primary key column {other}"))),
                            },
                            other => return Err(QueryError::Syntax(format!("bad primary key column {other}"))),
                        }
                    }
                }
                other => return Err(QueryError::NotSupported(format!("constraint {other} is not supported"))),
            }
        }
        if pk_names.is_empty() {
            return Err(QueryError::InvalidTableDefinition(format!("table \"{name}\" needs a PRIMARY KEY of 1 to 4 columns")));
        }
        let mut pk = Vec::new();
        for n in &pk_names {
            let i = columns
                .iter()
                .position(|c| &c.name == n)
                .ok_or_else(|| QueryError::UndefinedColumn(format!("{n}\" named in key does not exist")))?;
            if pk.contains(&i) {
                return Err(QueryError::InvalidTableDefinition(format!("column \"{n}\" appears twice in primary key constraint")));
            }
            pk.push(i);
        }
        if pk.len() > 4 {
            return Err(QueryError::InvalidTableDefinition(format!(
                "a primary key has at most 4 columns, table \"{name}\" names {}",
                pk.len()
            )));
        }
        for &i in &pk {
            let col = &mut columns[i];
            col.not_null = true;
            if col.ty.pk_type().is_none() {
                return Err(QueryError::InvalidTableDefinition(format!(
                    "primary key column \"{}\" has type {}: key columns must be text, varchar, bigint, integer, smallint or bytea",
                    col.name, col.ty
                )));
            }
        }
        for (i, col) in columns.iter().enumerate() {
            if col.identity {
                let pos = pk.iter().position(|&k| k == i);
                match pos {
                    None => {
                        return Err(QueryError::InvalidTableDefinition(format!(
                            "identity column \"{}\" must be a primary key column after the partition key",
                            col.name
                        )))
                    }
                    Some(p) if p < partition_key_len => {
                        return Err(QueryError::InvalidTableDefinition(format!(
                            "identity column \"{}\" cannot be part of the partition key",
                            col.name
                        )))
                    }
                    _ => {}
                }
                if !col.ty.is_integer() {
                    return Err(QueryError::InvalidTableDefinition(format!("identity column \"{}\" must be an integer", col.name)));
                }
            }
        }
        let options = self.table_options(&c.table_options, TableOptions::default(), true)?;
        Ok(Plan::CreateTable(CreateTablePlan { name, if_not_exists: c.if_not_exists, columns, pk, partition_key_len, options }))
    }

    fn table_options(&mut self, opts: &ast::CreateTableOptions, mut o: TableOptions, creating: bool) -> Result<TableOptions> {
        let list = match opts {
            ast::CreateTableOptions::None => return Ok(o),
            ast::CreateTableOptions::With(l)
            | ast::CreateTableOptions::Options(l)
            | ast::CreateTableOptions::Plain(l)
            | ast::CreateTableOptions::TableProperties(l) => l,
        };
        for opt in list {
            let ast::SqlOption::KeyValue { key, value } = opt else {
                return Err(QueryError::InvalidParameterValue(format!("unrecognized table option {opt}")));
            };
            crate::options::set(&mut o, &ident_name(key), &crate::options::text_of(value), creating)?;
        }
        Ok(o)
    }

    fn alter_table(&mut self, a: &ast::AlterTable) -> Result<Plan> {
        let table = object_name(&a.name);
        let [op] = a.operations.as_slice() else {
            return Err(QueryError::NotSupported("ALTER TABLE with several actions".into()));
        };
        match op {
            ast::AlterTableOperation::SetOptionsParens { options } => {
                let mut set = Vec::new();
                for opt in options {
                    let ast::SqlOption::KeyValue { key, value } = opt else {
                        return Err(QueryError::InvalidParameterValue(format!("unrecognized table option {opt}")));
                    };
                    // Checked now, applied against the current options at execution.
                    let (key, text) = (ident_name(key), crate::options::text_of(value));
                    crate::options::set(&mut TableOptions::default(), &key, &text, false)?;
                    set.push((key, text));
                }
                Ok(Plan::SetOptions { table, set, reset: vec![] })
            }
            ast::AlterTableOperation::AddColumn { column_def, if_not_exists, .. } => {
                let ty = sql_type(&column_def.data_type)?;
                let name = ident_name(&column_def.name);
                let col = ColumnDef { name, ty, not_null: false, identity: false, always: false, default: None };
                for opt in &column_def.options {
                    match &opt.option {
                        ast::ColumnOption::Null => {}
                        ast::ColumnOption::Default(ast::Expr::Value(v)) if matches!(v.value, ast::Value::Null) => {}
                        ast::ColumnOption::Default(_) => {
                            return Err(QueryError::NotSupported(
                                "ADD COLUMN with a DEFAULT: adding a column is instant and existing rows would not get the default; \
                                 add the column, then UPDATE the rows and set the default with a new table"
                                    .into(),
                            ))
                        }
                        other => {
                            return Err(QueryError::NotSupported(format!(
                                "ADD COLUMN with {other}: adding a column is instant and cannot constrain existing rows"
                            )))
                        }
                    }
                }
                Ok(Plan::AddColumn { table, column: col, if_not_exists: *if_not_exists })
            }
            ast::AlterTableOperation::DropColumn { column_names, if_exists, .. } => {
                let [c] = column_names.as_slice() else {
                    return Err(QueryError::NotSupported("dropping several columns at once".into()));
                };
                Ok(Plan::DropColumn { table, column: ident_name(c), if_exists: *if_exists })
            }
            other => Err(QueryError::NotSupported(format!("ALTER TABLE {other}"))),
        }
    }
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The names PostgreSQL gives a query's output columns, when its select list has no wildcard.
pub(crate) fn output_names(q: &ast::Query) -> Option<Vec<String>> {
    let mut body = q.body.as_ref();
    while let SetExpr::SetOperation { left, .. } = body {
        body = left.as_ref();
    }
    let SetExpr::Select(select) = body else { return None };
    select
        .projection
        .iter()
        .map(|item| match item {
            ast::SelectItem::UnnamedExpr(e) => Some(default_name(e)),
            ast::SelectItem::ExprWithAlias { alias, .. } => Some(ident_name(alias)),
            _ => None,
        })
        .collect()
}

/// The name PostgreSQL gives an unaliased select-list expression.
/// A value given for a `GENERATED ALWAYS` identity column, refused as PostgreSQL refuses it (its escape,
/// `OVERRIDING SYSTEM VALUE`, is not parsed).
fn generated_always(column: &str) -> QueryError {
    QueryError::Engine {
        sqlstate: "428C9",
        message: format!(
            "cannot insert a non-DEFAULT value into column \"{column}\": it is an identity column defined as GENERATED ALWAYS"
        ),
    }
}

/// The `DEFAULT` keyword in a VALUES row or a SET (sqlparser reads it as a name).
/// The three arguments of `SELECT [pg_catalog.]set_config(a, b, c)` alone, with no FROM; or of
/// `SELECT set_config(name, b, c) FROM pg_settings WHERE name = 'x'` (pg_dump's), with `x`.
fn set_config_call(q: &ast::Query) -> Option<(Vec<&ast::Expr>, Option<String>)> {
    let SetExpr::Select(s) = q.body.as_ref() else { return None };
    if s.projection.len() != 1 || q.order_by.is_some() || q.limit_clause.is_some() {
        return None;
    }
    let of_setting = match (s.from.as_slice(), &s.selection) {
        ([], None) => None,
        ([t], Some(ast::Expr::BinaryOp { left, op: ast::BinaryOperator::Eq, right })) if t.joins.is_empty() => {
            let ast::TableFactor::Table { name, .. } = &t.relation else { return None };
            let from_settings = name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| i.value == "pg_settings");
            match (left.as_ref(), right.as_ref()) {
                (ast::Expr::Identifier(c), ast::Expr::Value(v)) if from_settings && c.value == "name" => match &v.value {
                    ast::Value::SingleQuotedString(x) => Some(x.clone()),
                    _ => return None,
                },
                _ => return None,
            }
        }
        _ => return None,
    };
    let ast::SelectItem::UnnamedExpr(ast::Expr::Function(f)) = &s.projection[0] else { return None };
    let name = f.name.0.last()?.as_ident()?;
    if !name.value.eq_ignore_ascii_case("set_config") || f.name.0.len() > 2 {
        return None;
    }
    let ast::FunctionArguments::List(list) = &f.args else { return None };
    let args: Vec<&ast::Expr> = list
        .args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect::<Option<_>>()?;
    if of_setting.is_some() && !matches!(args.first(), Some(ast::Expr::Identifier(c)) if c.value == "name") {
        return None;
    }
    (args.len() == 3).then_some((args, of_setting))
}

fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.value.eq_ignore_ascii_case("default") && id.quote_style.is_none())
}

pub(crate) fn default_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(id) => ident_name(id),
        ast::Expr::CompoundIdentifier(ids) => ids.last().map(ident_name).unwrap_or_default(),
        ast::Expr::Function(f) => f.name.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_else(|| "?column?".into()),
        ast::Expr::Cast { expr, data_type, .. } => match default_name(expr) {
            inner if inner != "?column?" => inner,
            _ => sql_type(data_type)
                .map(|t| match t {
                    SqlType::Int4 => "int4".to_string(),
                    SqlType::Int8 => "int8".to_string(),
                    SqlType::Int2 => "int2".to_string(),
                    SqlType::Text => "text".to_string(),
                    SqlType::Bool => "bool".to_string(),
                    SqlType::Float8 => "float8".to_string(),
                    other => other.pg_name().to_string(),
                })
                .unwrap_or_else(|_| "?column?".into()),
        },
        ast::Expr::Nested(inner) => default_name(inner),
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        ast::Expr::Array(_) => "array".into(),
        ast::Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(e)) => default_name(e),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => ident_name(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

fn output_column(e: &Expr, name: String, table: Option<&TableSchema>) -> OutputColumn {
    let source = match (e, table) {
        (Expr::Column { index, .. }, Some(t)) if *index < t.columns.len() => Some((t.name.clone(), *index)),
        _ => None,
    };
    OutputColumn { name, ty: e.ty(), source }
}

fn contains_aggregate(e: &ast::Expr) -> bool {
    const AGGREGATES: &[&str] =
        &["count", "sum", "avg", "min", "max", "array_agg", "string_agg", "bool_and", "bool_or", "every", "stddev", "variance"];
    match e {
        ast::Expr::Function(f) => {
            let n = f.name.to_string().to_lowercase();
            AGGREGATES.contains(&n.as_str()) || f.over.is_some()
        }
        ast::Expr::Nested(e) | ast::Expr::UnaryOp { expr: e, .. } | ast::Expr::Cast { expr: e, .. } => contains_aggregate(e),
        ast::Expr::BinaryOp { left, right, .. } => contains_aggregate(left) || contains_aggregate(right),
        _ => false,
    }
}

/// Attribute columns a read needs; `None` when it needs all of them.
pub(crate) fn needed_columns(t: &TableSchema, projection: &[Expr], filter: Option<&Expr>, sort: &[(Expr, bool)]) -> Option<Vec<usize>> {
    let mut cols = Vec::new();
    projection.iter().for_each(|e| e.columns(&mut cols));
    if let Some(f) = filter {
        f.columns(&mut cols);
    }
    sort.iter().for_each(|(e, _)| e.columns(&mut cols));
    if cols.contains(&t.columns.len()) {
        return None; // _version reads every cell's version
    }
    cols.retain(|c| !t.is_pk(*c));
    cols.sort();
    cols.dedup();
    if cols.len() == t.attributes().count() {
        None
    } else {
        Some(cols)
    }
}

/// `col = constant` (either side) for the given column: the constant.
fn eq_column_const(e: &Expr, col: usize) -> Option<Expr> {
    if let Expr::Binary { op: BinOp::Eq, left, right } = e {
        match (left.as_ref(), right.as_ref()) {
            (Expr::Column { index, .. }, c) | (c, Expr::Column { index, .. }) if *index == col && c.is_constant() => {
                return Some(c.clone())
            }
            _ => {}
        }
    }
    None
}

/// Whether a constant can be a key value of a column of type `ty` without changing meaning.
fn key_compatible(c: &Expr, ty: SqlType) -> bool {
    let ct = c.ty();
    match ty.pk_type() {
        Some(tabula_store::PkType::Integer) => ct.is_integer(),
        Some(tabula_store::PkType::String) => ct.is_text(),
        Some(tabula_store::PkType::Binary) => ct == SqlType::Bytea,
        None => false,
    }
}

fn key_eq(t: &TableSchema, e: &Expr, pos: usize) -> Option<Expr> {
    let col = t.pk[pos];
    eq_column_const(e, col).filter(|c| key_compatible(c, t.column_type(col)))
}

/// `col IN (constants)` for the key column at `pos`: the constants.
fn key_in(t: &TableSchema, e: &Expr, pos: usize) -> Option<Vec<Expr>> {
    let col = t.pk[pos];
    if let Expr::InList { expr, list, negated: false } = e {
        if matches!(expr.as_ref(), Expr::Column { index, .. } if *index == col)
            && list.iter().all(|c| c.is_constant() && key_compatible(c, t.column_type(col)))
        {
            return Some(list.clone());
        }
    }
    None
}

/// Lower (`true`) or upper bound from `col op constant` on the key column at `pos`: (is_lower, inclusive, value).
fn key_range(t: &TableSchema, e: &Expr, pos: usize) -> Vec<(bool, bool, Expr)> {
    let col = t.pk[pos];
    let ty = t.column_type(col);
    match e {
        Expr::Binary { op, left, right } if op.is_comparison() && *op != BinOp::Eq && *op != BinOp::NotEq => {
            let (op, c) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column { index, .. }, c) if *index == col => (*op, c),
                (c, Expr::Column { index, .. }) if *index == col => (op.flip(), c),
                _ => return vec![],
            };
            if !c.is_constant() || !key_compatible(c, ty) {
                return vec![];
            }
            match op {
                BinOp::Gt => vec![(true, false, c.clone())],
                BinOp::GtEq => vec![(true, true, c.clone())],
                BinOp::Lt => vec![(false, false, c.clone())],
                BinOp::LtEq => vec![(false, true, c.clone())],
                _ => vec![],
            }
        }
        Expr::Between { expr, low, high, negated: false } if matches!(expr.as_ref(), Expr::Column { index, .. } if *index == col) => {
            if low.is_constant() && high.is_constant() && key_compatible(low, ty) && key_compatible(high, ty) {
                vec![(true, true, (**low).clone()), (false, true, (**high).clone())]
            } else {
                vec![]
            }
        }
        _ => vec![],
    }
}

/// Recognises an expanded keyset comparison `(c_k, .., c_m) op (v_k, .., v_m)` over key columns
/// starting at `pos`: (is_lower, inclusive, values).
fn keyset(t: &TableSchema, e: &Expr, pos: usize) -> Option<(bool, bool, Vec<Expr>)> {
    // Last column: a plain comparison.
    let single = key_range(t, e, pos);
    if let [(lower, incl, v)] = single.as_slice() {
        return Some((*lower, *incl, vec![v.clone()]));
    }
    // c op v  OR  (c = v AND rest)
    if let Expr::Binary { op: BinOp::Or, left, right } = e {
        let first = key_range(t, left, pos);
        let [(lower, false, v)] = first.as_slice() else { return None };
        if let Expr::Binary { op: BinOp::And, left: eq, right: rest } = right.as_ref() {
            let v2 = key_eq(t, eq, pos)?;
            if v2 != *v || pos + 1 >= t.pk.len() {
                return None;
            }
            let (l2, incl, mut vs) = keyset(t, rest, pos + 1)?;
            if l2 != *lower {
                return None;
            }
            vs.insert(0, v.clone());
            return Some((*lower, incl, vs));
        }
    }
    None
}

/// An OR of AND-ed full-key equalities: the keys.
fn or_of_keys(t: &TableSchema, e: &Expr) -> Option<Vec<Vec<Expr>>> {
    fn disjuncts(e: &Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::Binary { op: BinOp::Or, left, right } => {
                disjuncts(left, out);
                disjuncts(right, out);
            }
            e => out.push(e.clone()),
        }
    }
    let mut ds = Vec::new();
    disjuncts(e, &mut ds);
    if ds.len() < 2 {
        return None;
    }
    ds.into_iter()
        .map(|d| {
            let parts = d.conjuncts();
            if parts.len() != t.pk.len() {
                return None;
            }
            (0..t.pk.len()).map(|pos| parts.iter().find_map(|p| key_eq(t, p, pos))).collect::<Option<Vec<_>>>()
        })
        .collect()
}

/// Chooses the access path for a conjunctive WHERE clause; returns it and what it does not capture.
pub fn choose_access(t: &TableSchema, conjuncts: Vec<Expr>) -> (AccessPath, Vec<Expr>) {
    let n = t.pk.len();
    // Equalities per key column.
    let mut used = vec![false; conjuncts.len()];
    let mut eqs: Vec<Option<Expr>> = vec![None; n];
    for (pos, slot) in eqs.iter_mut().enumerate() {
        for (i, c) in conjuncts.iter().enumerate() {
            if !used[i] {
                if let Some(v) = key_eq(t, c, pos) {
                    *slot = Some(v);
                    used[i] = true;
                    break;
                }
            }
        }
    }
    let residual = |used: &[bool]| conjuncts.iter().zip(used).filter(|(_, u)| !**u).map(|(c, _)| c.clone()).collect::<Vec<_>>();
    if eqs.iter().all(|e| e.is_some()) {
        return (AccessPath::PointGet { key: eqs.into_iter().map(|e| e.unwrap()).collect() }, residual(&used));
    }
    // IN lists (with equalities) on every key column: the cross product of keys.
    {
        let mut used_in = used.clone();
        let mut lists: Vec<Vec<Expr>> = Vec::new();
        let mut ok = true;
        for (pos, eq) in eqs.iter().enumerate() {
            if let Some(v) = eq {
                lists.push(vec![v.clone()]);
                continue;
            }
            match conjuncts.iter().enumerate().find(|(i, c)| !used_in[*i] && key_in(t, c, pos).is_some()) {
                Some((i, c)) => {
                    used_in[i] = true;
                    lists.push(key_in(t, c, pos).unwrap());
                }
                None => {
                    ok = false;
                    break;
                }
            }
        }
        let count: usize = lists.iter().map(|l| l.len()).product();
        if ok && count <= MAX_BATCH_KEYS {
            let mut keys: Vec<Vec<Expr>> = vec![vec![]];
            for l in &lists {
                keys = keys
                    .into_iter()
                    .flat_map(|k| {
                        l.iter().map(move |v| {
                            let mut k = k.clone();
                            k.push(v.clone());
                            k
                        })
                    })
                    .collect();
            }
            return (AccessPath::BatchGet { keys }, residual(&used_in));
        }
    }
    // ORs of full keys.
    for (i, c) in conjuncts.iter().enumerate() {
        if let Some(keys) = or_of_keys(t, c) {
            if keys.len() <= MAX_BATCH_KEYS {
                let mut u = vec![false; conjuncts.len()];
                u[i] = true;
                return (AccessPath::BatchGet { keys }, residual(&u));
            }
        }
    }
    // Equality prefix, then a range or keyset bound on the next column(s).
    let k = eqs.iter().take_while(|e| e.is_some()).count();
    // Equalities past the prefix are not part of the path.
    let mut used_r = vec![false; conjuncts.len()];
    for (pos, eq) in eqs.iter().enumerate().take(k) {
        let _ = eq;
        if let Some(i) = conjuncts.iter().enumerate().position(|(i, c)| !used_r[i] && key_eq(t, c, pos).is_some()) {
            used_r[i] = true;
        }
    }
    let prefix: Vec<KeyBound> = eqs[..k].iter().map(|e| KeyBound::Value(e.clone().unwrap())).collect();
    let mut lower: Option<(bool, Vec<Expr>)> = None;
    let mut upper: Option<(bool, Vec<Expr>)> = None;
    if k < n {
        for (i, c) in conjuncts.iter().enumerate() {
            if used_r[i] {
                continue;
            }
            let found = key_range(t, c, k);
            let found: Vec<(bool, bool, Vec<Expr>)> = if found.is_empty() {
                keyset(t, c, k).into_iter().collect()
            } else {
                found.into_iter().map(|(l, inc, v)| (l, inc, vec![v])).collect()
            };
            let mut took = false;
            for (is_lower, incl, vals) in found {
                let slot = if is_lower { &mut lower } else { &mut upper };
                if slot.is_none() {
                    *slot = Some((incl, vals));
                    took = true;
                }
            }
            // Only drop the conjunct when every bound it implies became part of the path.
            if took && (key_range(t, c, k).len() <= 1 || (lower.is_some() && upper.is_some())) {
                used_r[i] = true;
            }
        }
    }
    if k == 0 && lower.is_none() && upper.is_none() {
        return (AccessPath::FullScan { direction: Direction::Forward }, conjuncts);
    }
    let mut start = prefix.clone();
    match lower {
        Some((incl, vals)) => {
            start.extend(vals.into_iter().map(KeyBound::Value));
            start.push(if incl { KeyBound::InfMin } else { KeyBound::InfMax });
        }
        None => start.push(KeyBound::InfMin),
    }
    let mut end = prefix;
    match upper {
        Some((incl, vals)) => {
            end.extend(vals.into_iter().map(KeyBound::Value));
            end.push(if incl { KeyBound::InfMax } else { KeyBound::InfMin });
        }
        None => end.push(KeyBound::InfMax),
    }
    (AccessPath::RangeScan { start, end, direction: Direction::Forward }, residual(&used_r))
}

/// The scan direction that yields ORDER BY's order without sorting, if any.
fn key_order(t: &TableSchema, access: &AccessPath, order: &[(Expr, bool)]) -> Option<Direction> {
    if order.is_empty() {
        return Some(Direction::Forward);
    }
    if matches!(access, AccessPath::PointGet { .. }) {
        return Some(Direction::Forward);
    }
    if matches!(access, AccessPath::BatchGet { .. }) {
        return None;
    }
    // Key columns fixed by equality may appear anywhere; the rest must follow key order.
    let fixed: Vec<usize> = match access {
        AccessPath::RangeScan { start, .. } => {
            let k = start.iter().take_while(|b| matches!(b, KeyBound::Value(_))).count();
            let end_k = match access {
                AccessPath::RangeScan { end, .. } => end.iter().take_while(|b| matches!(b, KeyBound::Value(_))).count(),
                _ => 0,
            };
            // Only the columns both bounds pin to the same value are fixed: the equality prefix.
            (0..k.min(end_k))
                .filter(|i| match (start.get(*i), access) {
                    (Some(KeyBound::Value(a)), AccessPath::RangeScan { end, .. }) => {
                        matches!(end.get(*i), Some(KeyBound::Value(b)) if a == b)
                    }
                    _ => false,
                })
                .map(|i| t.pk[i])
                .collect()
        }
        _ => vec![],
    };
    let mut dir = None;
    let mut next_pos = 0;
    for (e, asc) in order {
        let Expr::Column { index, .. } = e else { return None };
        if fixed.contains(index) {
            continue;
        }
        while next_pos < t.pk.len() && fixed.contains(&t.pk[next_pos]) {
            next_pos += 1;
        }
        if t.pk.get(next_pos) != Some(index) {
            return None;
        }
        next_pos += 1;
        let d = if *asc { Direction::Forward } else { Direction::Backward };
        if dir.is_some_and(|x| x != d) {
            return None;
        }
        dir = Some(d);
    }
    Some(dir.unwrap_or(Direction::Forward))
}

fn set_direction(access: &mut AccessPath, dir: Direction) {
    match access {
        AccessPath::RangeScan { start, end, direction } if *direction != dir => {
            std::mem::swap(start, end);
            *direction = dir;
        }
        AccessPath::FullScan { direction } => *direction = dir,
        _ => {}
    }
}
