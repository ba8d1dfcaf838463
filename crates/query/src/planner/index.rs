//! CREATE [UNIQUE] INDEX: what Tabula builds of it (a global index on plain columns, ascending or
//! descending, NULLS [NOT] DISTINCT), and 0A000 for the rest.

use super::*;

impl Planner<'_> {
    pub(super) fn create_index(&mut self, c: &ast::CreateIndex) -> Result<Plan> {
        let refuse = |what: &str| Err(QueryError::NotSupported(format!("CREATE INDEX {what} is not built yet")));
        if c.predicate.is_some() {
            return refuse("... WHERE (a partial index)");
        }
        if !c.index_options.is_empty() || !c.alter_options.is_empty() {
            return refuse("with index options");
        }
        let local = local_option(&c.with)?;
        if c.using.as_ref().is_some_and(|u| !matches!(u, ast::IndexType::BTree)) {
            return refuse("USING other than btree");
        }
        let table = created_name(&c.table_name)?;
        let schema = self.catalog.table(&table)?;
        let mut columns = Vec::new();
        let mut descending = Vec::new();
        for ic in &c.columns {
            let o = &ic.column.options;
            // NULLs last ascending, first descending: PostgreSQL's defaults, and what the entries hold.
            let desc = o.asc == Some(false);
            if o.nulls_first.is_some_and(|first| first != desc) {
                return refuse("with NULLS FIRST ascending or NULLS LAST descending");
            }
            descending.push(desc);
            let name = match &ic.column.expr {
                ast::Expr::Identifier(i) => ident_name(i),
                _ => return refuse("on an expression"),
            };
            // Not `_version`, which no row stores as a column.
            let Some(col) = schema.column_index(&name).filter(|&i| i < schema.visible().len()) else {
                return Err(QueryError::UndefinedColumn(name));
            };
            // The pattern operator classes order text by its bytes, as every Tabula index does (Django
            // makes one for each indexed CharField, for LIKE 'prefix%').
            if let Some(class) = &ic.operator_class {
                let class = object_name(class);
                if !matches!(class.as_str(), "text_pattern_ops" | "varchar_pattern_ops" | "bpchar_pattern_ops") {
                    return refuse(&format!("with operator class {class}"));
                }
                if !schema.column_type(col).is_text() {
                    return Err(QueryError::DatatypeMismatch(format!(
                        "operator class \"{class}\" does not accept data type {}",
                        schema.column_type(col)
                    )));
                }
            }
            columns.push(name);
        }
        let mut include = Vec::new();
        for i in &c.include {
            let name = ident_name(i);
            if schema.column_index(&name).filter(|&i| i < schema.visible().len()).is_none() {
                return Err(QueryError::UndefinedColumn(name));
            }
            // A column named twice (or also a key column) is kept as written, as PostgreSQL keeps it.
            include.push(name);
        }
        if columns.is_empty() || columns.len() + include.len() > 32 {
            return Err(QueryError::Engine { sqlstate: "54011", message: "cannot use more than 32 columns in an index".into() });
        }
        let name = c.name.as_ref().map(created_name).transpose()?;
        let (unique, if_not_exists) = (c.unique, c.if_not_exists);
        let nulls_not_distinct = c.nulls_distinct == Some(false);
        Ok(Plan::CreateIndex {
            table,
            name,
            columns,
            unique,
            constraint: false,
            if_not_exists,
            descending,
            nulls_not_distinct,
            local,
            include,
        })
    }
}

/// `WITH (local = true)`: a local index (Tablestore's), which must start with the table's partition key.
/// `local = false` (or no WITH) is a global one. PostgreSQL's btree storage parameters are not built.
fn local_option(with: &[ast::Expr]) -> Result<bool> {
    let mut local = false;
    for option in with {
        let (name, value) = match option {
            ast::Expr::BinaryOp { left, op: ast::BinaryOperator::Eq, right } => match &**left {
                ast::Expr::Identifier(i) => (ident_name(i), Some(&**right)),
                _ => (option.to_string(), None),
            },
            ast::Expr::Identifier(i) => (ident_name(i), None),
            other => (other.to_string(), None),
        };
        match name.as_str() {
            "local" => {
                // A boolean as PostgreSQL's reloptions take it: true/false, on/off, 1/0, quoted or not.
                let text = match value {
                    None => "true".to_string(),
                    Some(ast::Expr::Value(v)) => match &v.value {
                        ast::Value::Boolean(b) => b.to_string(),
                        ast::Value::SingleQuotedString(s) => s.to_lowercase(),
                        ast::Value::Number(n, _) => n.to_string(),
                        other => other.to_string(),
                    },
                    Some(ast::Expr::Identifier(i)) => ident_name(i),
                    Some(other) => other.to_string(),
                };
                local = match text.as_str() {
                    "true" | "on" | "1" | "yes" => true,
                    "false" | "off" | "0" | "no" => false,
                    _ => return Err(QueryError::InvalidParameterValue(format!("invalid value for boolean option \"local\": {text}"))),
                };
            }
            "fillfactor" | "deduplicate_items" => {
                return Err(QueryError::NotSupported(format!("CREATE INDEX ... WITH ({name}) is not built yet")))
            }
            _ => return Err(QueryError::InvalidParameterValue(format!("unrecognized parameter \"{name}\""))),
        }
    }
    Ok(local)
}

/// A UNIQUE constraint's columns (plain columns; deferrable is not built), and whether it is NULLS NOT
/// DISTINCT.
pub(super) fn unique_columns(u: &ast::UniqueConstraint) -> Result<(Vec<String>, bool)> {
    if u.characteristics.as_ref().is_some_and(|c| c.deferrable == Some(true) || c.initially.is_some())
        || u.index_type.is_some()
        || !u.index_options.is_empty()
    {
        return Err(QueryError::NotSupported(format!("{u}: deferrable UNIQUE constraints are not built yet")));
    }
    let columns = u
        .columns
        .iter()
        .map(|ic| match &ic.column.expr {
            ast::Expr::Identifier(i) if ic.operator_class.is_none() => Ok(ident_name(i)),
            _ => Err(QueryError::NotSupported(format!("{u}: a UNIQUE constraint on an expression"))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((columns, matches!(u.nulls_distinct, ast::NullsDistinctOption::NotDistinct)))
}
