//! INSERT (with VALUES, DEFAULT, identity columns and ON CONFLICT), UPDATE and DELETE.

use super::*;

impl Planner<'_> {
    pub(super) fn insert(&mut self, i: &ast::Insert) -> Result<Plan> {
        let name = match &i.table {
            ast::TableObject::TableName(n) => object_name(n),
            _ => return Err(QueryError::NotSupported("INSERT into a table function".into())),
        };
        let table = self.catalog.table(&name)?;
        // `INSERT INTO t AS x`: x names the table in ON CONFLICT and RETURNING.
        let alias = i.table_alias.as_ref().map(|a| ident_name(&a.alias));
        let targets: Vec<usize> = if i.columns.is_empty() {
            // Without a column list a VALUES row fills the first columns and the rest take their defaults,
            // as in PostgreSQL.
            let width = match i.source.as_ref().map(|s| s.body.as_ref()) {
                Some(SetExpr::Values(v)) => {
                    let width = v.rows.first().map_or(0, |r| r.len());
                    if v.rows.iter().any(|r| r.len() != width) {
                        return Err(QueryError::Syntax("VALUES lists must all be the same length".into()));
                    }
                    width.min(table.visible().len())
                }
                _ => table.visible().len(),
            };
            (0..width).collect()
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
            Some(ast::OnInsert::OnConflict(oc)) => self.on_conflict(&table, alias.as_deref(), oc)?,
            Some(_) => return Err(QueryError::NotSupported("ON DUPLICATE KEY".into())),
        };
        let returning = self.returning(&table, alias.as_deref(), i.returning.as_ref())?;
        let mut checks = self.bound_checks(&table)?;
        checks.extend(self.bound_view_checks(&table, alias.as_deref())?);
        let mut insert = InsertPlan { table, targets, rows, on_conflict, returning, call: WriteCall::ReadModifyWrite, checks };
        insert.call = insert_call(&insert, values.is_some());
        // A foreign key's check reads its parent in the statement's transaction.
        if !insert.table.foreign_keys.is_empty() {
            insert.call = WriteCall::ReadModifyWrite;
        }
        match values {
            Some(_) => Ok(Plan::Insert(insert)),
            None => Ok(Plan::InsertSelect { insert, query: source.clone(), defaults: defaults.into_iter().map(|(_, e)| e).collect() }),
        }
    }

    /// The rows of `INSERT ... VALUES`, bound and typed as the target columns take them.
    pub(super) fn values_rows(&mut self, table: &TableSchema, targets: &[usize], values: &ast::Values) -> Result<Vec<Vec<Expr>>> {
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

    /// A column's DEFAULT, bound and typed as a value assigned to it; `None` without one.
    pub(crate) fn column_default(&mut self, table: &TableSchema, col: usize) -> Result<Option<Expr>> {
        match &table.columns[col].default {
            Some(text) => self.bind_default(text, table.column_type(col), table.column_name(col)).map(Some),
            None => Ok(None),
        }
    }

    pub(super) fn bind_default(&mut self, text: &str, ty: SqlType, column: &str) -> Result<Expr> {
        let e = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(text)?.parse_expr()?;
        let b = self.binder(&Scope::empty()).bind(&e)?;
        self.assign(b, ty, column)
    }

    /// The DEFAULTs of the columns a row write leaves out (an identity column is generated instead).
    pub(super) fn omitted_defaults(&mut self, table: &TableSchema, targets: &[usize]) -> Result<Vec<(usize, Expr)>> {
        let mut out = Vec::new();
        for c in (0..table.columns.len()).filter(|c| !targets.contains(c) && !table.columns[*c].identity) {
            if let Some(e) = self.column_default(table, c)? {
                out.push((c, e));
            }
        }
        Ok(out)
    }

    /// Types a value assigned to a column, as INSERT and UPDATE do (42804 unless [`assignable`]).
    pub(super) fn assign(&mut self, e: Expr, ty: SqlType, column: &str) -> Result<Expr> {
        let e = self.binder(&Scope::empty()).coerce(e, ty)?;
        let et = e.ty();
        if !assignable(et, ty) {
            return Err(QueryError::DatatypeMismatch(format!("column \"{column}\" is of type {ty} but expression is of type {et}")));
        }
        Ok(match e {
            Expr::Literal(d, from) => Expr::Literal(d.cast_in(from, ty, &self.zone)?, ty),
            e if e.ty() == ty => e,
            e => Expr::Cast { expr: Box::new(e), ty },
        })
    }

    /// SET's assignments (of key columns too: the row moves to its new key).
    pub(super) fn assignments(&mut self, scope: &Scope, table: &TableSchema, list: &[ast::Assignment]) -> Result<Vec<(usize, Expr)>> {
        let mut out = Vec::new();
        for a in list {
            let names: Vec<String> = match &a.target {
                ast::AssignmentTarget::ColumnName(n) => vec![n.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default()],
                ast::AssignmentTarget::Tuple(_) => return Err(QueryError::NotSupported("tuple assignments".into())),
            };
            let name = &names[0];
            let idx =
                table.column_index(name).ok_or_else(|| QueryError::UndefinedColumn(format!("{name}\" of relation \"{}", table.name)))?;
            if table.is_pk(idx) && table.columns[idx].hidden.is_some() {
                return Err(QueryError::UndefinedColumn(format!("{name}\" of relation \"{}", table.name)));
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

    /// RETURNING of a write to `table`, named `alias` in the statement.
    pub(super) fn returning(
        &mut self,
        table: &Arc<TableSchema>,
        alias: Option<&str>,
        items: Option<&Vec<ast::SelectItem>>,
    ) -> Result<Option<Returning>> {
        let Some(items) = items else { return Ok(None) };
        let scope = Scope::table(table, alias);
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    for (i, c) in table.visible().iter().enumerate() {
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

    pub(super) fn table_target(&mut self, relation: &TableFactor) -> Result<(Arc<TableSchema>, Option<String>)> {
        match relation {
            TableFactor::Table { name, alias, args: None, .. } => {
                Ok((self.catalog.table(&object_name(name))?, alias.as_ref().map(|a| ident_name(&a.name))))
            }
            _ => Err(QueryError::NotSupported("only plain tables can be updated".into())),
        }
    }

    pub(super) fn update(&mut self, u: &ast::Update) -> Result<Plan> {
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
        let returning = self.returning(&table, alias.as_deref(), u.returning.as_ref())?;
        let mut checks = self.bound_checks(&scan.table)?;
        checks.extend(self.bound_view_checks(&scan.table, alias.as_deref())?);
        let mut update = UpdatePlan { scan, assignments, version, returning, call: WriteCall::ReadModifyWrite, checks };
        update.call = update_call(&update);
        let moves = update.assignments.iter().any(|(c, _)| update.scan.table.is_pk(*c));
        if moves || !update.scan.table.foreign_keys.is_empty() || !self.catalog.referencing(&update.scan.table.name)?.is_empty() {
            update.call = WriteCall::ReadModifyWrite;
        }
        Ok(Plan::Update(update))
    }

    pub(super) fn delete(&mut self, d: &ast::Delete) -> Result<Plan> {
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
        let returning = self.returning(&table, alias.as_deref(), d.returning.as_ref())?;
        Ok(Plan::Delete(DeletePlan { scan, version, returning }))
    }

    pub(super) fn dml_scan(&mut self, table: &Arc<TableSchema>, filter: Option<Expr>) -> Scan {
        let (access, residual, ranks) = choose_ranked(table, filter.map(|f| f.conjuncts()).unwrap_or_default());
        Scan {
            table: table.clone(),
            access,
            filter: Expr::and_all(residual),
            limit: None,
            versions: Versions::Latest,
            columns: None,
            ranks,
        }
    }
}

/// A value given for a `GENERATED ALWAYS` identity column, refused as PostgreSQL refuses it (its escape,
/// `OVERRIDING SYSTEM VALUE`, is not parsed).
pub(super) fn generated_always(column: &str) -> QueryError {
    QueryError::Engine {
        sqlstate: "428C9",
        message: format!(
            "cannot insert a non-DEFAULT value into column \"{column}\": it is an identity column defined as GENERATED ALWAYS"
        ),
    }
}

pub(super) fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.value.eq_ignore_ascii_case("default") && id.quote_style.is_none())
}

/// The name PostgreSQL gives an unaliased select-list expression (its `FigureColname`): a column's or a
/// function's name is strong and survives casts around it (`k::text` is `k`); a cast's type name or
/// `case` is weak, and an outer cast's type replaces it (`1::int::text` is `text`); anything else is
/// `?column?`. The special syntaxes name the function PostgreSQL calls (`extract`, `substring`, `btrim`).
pub(crate) fn default_name(e: &ast::Expr) -> String {
    figure_name(e).map(|(name, _)| name).unwrap_or_else(|| "?column?".into())
}

/// Strength 2: a name that a cast keeps; 1: one that a cast's type replaces.
fn figure_name(e: &ast::Expr) -> Option<(String, u8)> {
    let strong = |name: &str| Some((name.to_string(), 2));
    let type_name = |t: &ast::DataType| sql_type(t).ok().map(|t| (t.typname().to_string(), 1));
    match e {
        ast::Expr::Identifier(id) => Some((ident_name(id), 2)),
        ast::Expr::CompoundIdentifier(ids) => Some((ids.last().map(ident_name)?, 2)),
        ast::Expr::Function(f) => Some((f.name.0.last().and_then(|p| p.as_ident()).map(ident_name)?, 2)),
        ast::Expr::Cast { expr, data_type, .. } => match figure_name(expr) {
            Some((name, 2)) => Some((name, 2)),
            _ => type_name(data_type),
        },
        ast::Expr::TypedString(t) => type_name(&t.data_type),
        ast::Expr::Interval(_) => Some(("interval".into(), 1)),
        ast::Expr::Nested(inner) | ast::Expr::Collate { expr: inner, .. } => figure_name(inner),
        ast::Expr::Case { else_result, .. } => match else_result.as_deref().and_then(figure_name) {
            Some((name, 2)) => Some((name, 2)),
            _ => Some(("case".into(), 1)),
        },
        // `a[1]` is named after `a`, `(r).f` after `f`.
        ast::Expr::CompoundFieldAccess { root, access_chain } => match access_chain.last() {
            Some(ast::AccessExpr::Dot(ast::Expr::Identifier(f))) => Some((ident_name(f), 2)),
            _ => figure_name(root),
        },
        ast::Expr::Extract { .. } => strong("extract"),
        ast::Expr::Substring { shorthand: true, .. } => strong("substr"),
        ast::Expr::Substring { .. } => strong("substring"),
        ast::Expr::Position { .. } => strong("position"),
        ast::Expr::Overlay { .. } => strong("overlay"),
        ast::Expr::Ceil { .. } => strong("ceil"),
        ast::Expr::Floor { .. } => strong("floor"),
        ast::Expr::AtTimeZone { .. } => strong("timezone"),
        ast::Expr::Trim { trim_where, .. } => strong(match trim_where {
            Some(ast::TrimWhereField::Leading) => "ltrim",
            Some(ast::TrimWhereField::Trailing) => "rtrim",
            _ => "btrim",
        }),
        ast::Expr::Tuple(_) => strong("row"),
        ast::Expr::Exists { .. } => strong("exists"),
        ast::Expr::Array(_) => strong("array"),
        // A scalar subquery is named after its (first) column, whatever that is.
        ast::Expr::Subquery(q) => {
            let mut body = q.body.as_ref();
            while let SetExpr::SetOperation { left, .. } = body {
                body = left.as_ref();
            }
            let name = match body {
                SetExpr::Select(s) => match s.projection.first() {
                    Some(ast::SelectItem::UnnamedExpr(e)) => default_name(e),
                    Some(ast::SelectItem::ExprWithAlias { alias, .. }) => ident_name(alias),
                    _ => return None,
                },
                _ => return None,
            };
            Some((name, 2))
        }
        _ => None,
    }
}

/// Whether a value of type `from` may be assigned to a column of type `to`: PostgreSQL's implicit and
/// assignment casts among the types Tabula stores. Any type goes to a string column (PostgreSQL's I/O
/// conversion casts to string types are assignment casts: `SET textcol = 5` writes '5').
pub fn assignable(from: SqlType, to: SqlType) -> bool {
    from == to
        || from == SqlType::Unknown
        || to.is_text()
        || (from.is_numeric() && to.is_numeric())
        || (from.is_text() && matches!(to, SqlType::Json | SqlType::Jsonb))
        || (matches!(from, SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date)
            && matches!(to, SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date))
}
