//! SELECT: the select list, ORDER BY, LIMIT/OFFSET, history reads (`versions`), and the table read's
//! access path.

use super::*;

impl Planner<'_> {
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
        // Rows read to be locked are read through the transaction, whose locks they join.
        plan.stream = false;
        Ok(plan)
    }

    pub(super) fn select_rows(&mut self, q: &ast::Query) -> Result<SelectPlan> {
        // Before any route is chosen: the analytic engine would pick one of the columns.
        ambiguous_order_by(q)?;
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
                        // A view, or a sequence (a relation of one row): the analytic engine reads them. Asked
                        // only when the name is no table, so that a table's plan costs no second lookup.
                        _ => match self.catalog.table(&object_name(name)) {
                            Ok(t) => t,
                            Err(_) if self.catalog.read_elsewhere(&object_name(name)) => {
                                return Err(QueryError::Analytic("views and sequences".into()))
                            }
                            Err(e) => return Err(e),
                        },
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
                    for (i, c) in t.visible().iter().enumerate() {
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
            return Ok(SelectPlan { scan: None, projection, columns, sort: vec![], offset, limit, lock: false, stream: false });
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
                        // An output column's name before an input column's, as in PostgreSQL (`SELECT a AS b, b AS
                        // a ... ORDER BY a` sorts by b).
                        ast::Expr::Identifier(id) if columns.iter().any(|c| c.name == ident_name(id)) => {
                            let i = columns.iter().position(|c| c.name == ident_name(id)).unwrap();
                            projection[i].clone()
                        }
                        e => self.binder(&scope).bind(e)?,
                    };
                    // NULLs sort last ascending and first descending, as PostgreSQL's default; the other
                    // placement is the analytic route's (a key column is never NULL, so for it either is).
                    let key_column = matches!(&e, Expr::Column { index, .. } if table.pk.contains(index));
                    if item.options.nulls_first.is_some_and(|first| first == asc) && !key_column {
                        return Err(QueryError::Analytic("NULLS FIRST or LAST against the direction's default".into()));
                    }
                    order.push((e, asc));
                }
            } else {
                return Err(QueryError::NotSupported("ORDER BY ALL is not supported".into()));
            }
        }
        let conjuncts = filter.map(|f| f.conjuncts()).unwrap_or_default();
        let (mut access, mut residual, mut ranks) = match system {
            Some(view) => (AccessPath::System(view), conjuncts.clone(), vec![]),
            None => choose_ranked(&table, conjuncts.clone()),
        };
        // An index holds each row's newest values: a read of older versions finds its rows by key, and
        // checks every condition on them.
        if !matches!(versions, Versions::Latest) && matches!(access, AccessPath::IndexScan { .. }) {
            access = AccessPath::FullScan { direction: Direction::Forward };
            residual = conjuncts;
            ranks.clear();
        }
        // ORDER BY the key (after the equality prefix) is the scan direction; anything else sorts.
        let mut sort = order.clone();
        if let Some(dir) = key_order(&table, &access, &order) {
            set_direction(&mut access, dir);
            sort.clear();
        } else if let Some(ordered) = index_order(&table, &access, &order, limit.is_some()).filter(|_| versions == Versions::Latest) {
            // Or an index's order (of the rows the WHERE chose it for, or of the whole table under a LIMIT).
            if !matches!(access, AccessPath::IndexScan { .. }) {
                ranks.clear();
            }
            access = ordered;
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
        super::index_path::cover(&table, &mut access, needed.as_deref(), &versions);
        let scan = Scan { table, access, filter, limit: scan_limit, versions, columns: needed, ranks };
        let stream = streams(Some(&scan), &sort);
        Ok(SelectPlan { scan: Some(scan), projection, columns, sort, offset, limit, lock: false, stream })
    }

    pub(super) fn limit_offset(&mut self, scope: &Scope, q: &ast::Query) -> Result<(Option<Expr>, Option<Expr>)> {
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

    pub(super) fn versions(&mut self, scope: &Scope, args: Option<&ast::TableFunctionArgs>) -> Result<Versions> {
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

    pub(super) fn predicate(&mut self, scope: &Scope, e: &ast::Expr) -> Result<Expr> {
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
}

/// The alias of a SELECT's one table, if it has one.
pub(super) fn select_alias(s: &ast::Select) -> Option<String> {
    match s.from.as_slice() {
        [twj] => match &twj.relation {
            TableFactor::Table { alias: Some(a), .. } => Some(ident_name(&a.name)),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn const_u64(e: &Expr) -> bool {
    e.is_constant()
}

/// The names PostgreSQL gives a query's output columns, when its select list has no wildcard.
/// PostgreSQL's rule for `ORDER BY name`: a name is an output column's before an input column's, and
/// several output columns of that name that are different expressions are 42702 (`SELECT k AS v, v ...
/// ORDER BY v`).
fn ambiguous_order_by(q: &ast::Query) -> Result<()> {
    let Some(ast::OrderByKind::Expressions(items)) = q.order_by.as_ref().map(|o| &o.kind) else { return Ok(()) };
    let mut body = q.body.as_ref();
    while let SetExpr::SetOperation { left, .. } = body {
        body = left;
    }
    let SetExpr::Select(s) = body else { return Ok(()) };
    for item in items {
        let ast::Expr::Identifier(id) = &item.expr else { continue };
        let name = ident_name(id);
        let mut found: Option<&ast::Expr> = None;
        for p in &s.projection {
            let (e, n) = match p {
                ast::SelectItem::UnnamedExpr(e) => (e, default_name(e)),
                ast::SelectItem::ExprWithAlias { expr, alias } => (expr, ident_name(alias)),
                _ => continue,
            };
            match found {
                _ if n != name => {}
                Some(f) if f != e => {
                    return Err(QueryError::Engine { sqlstate: "42702", message: format!("ORDER BY \"{name}\" is ambiguous") })
                }
                _ => found = Some(e),
            }
        }
    }
    Ok(())
}

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

pub(super) fn output_column(e: &Expr, name: String, table: Option<&TableSchema>) -> OutputColumn {
    let source = match (e, table) {
        (Expr::Column { index, .. }, Some(t)) if *index < t.columns.len() => Some((t.name.clone(), *index)),
        _ => None,
    };
    OutputColumn { name, ty: e.ty(), source }
}

/// The names of PostgreSQL's aggregate functions that Tabula has.
pub(crate) const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "every",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "json_agg",
    "jsonb_agg",
    "bit_and",
    "bit_or",
    "corr",
    "covar_pop",
    "covar_samp",
    "mode",
];

pub(super) fn contains_aggregate(e: &ast::Expr) -> bool {
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

/// The `DEFAULT` keyword in a VALUES row or a SET (sqlparser reads it as a name).
/// The three arguments of `SELECT [pg_catalog.]set_config(a, b, c)` alone, with no FROM; or of
/// `SELECT set_config(name, b, c) FROM pg_settings WHERE name = 'x'` (pg_dump's), with `x`.
pub(super) fn set_config_call(q: &ast::Query) -> Option<(Vec<&ast::Expr>, Option<String>)> {
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
