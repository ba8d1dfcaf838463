//! CHECK constraints: bound over their table's row when a table is created or altered (so that a bad one is
//! refused then, never ignored) and again for each write plan, named as PostgreSQL names them.

use super::*;
use crate::schema::CheckDef;

impl Planner<'_> {
    /// Binds a CHECK expression over table `t`'s row: boolean, with no subquery, aggregate, parameter or
    /// `_version` in it (PostgreSQL's errors for each).
    pub(super) fn bind_check(&mut self, t: &TableSchema, e: &ast::Expr) -> Result<Expr> {
        let (mut subquery, mut parameter) = (false, None);
        let _ = crate::walk::exprs(e, |x: &ast::Expr| {
            subquery |= matches!(x, ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. });
            if let ast::Expr::Value(v) = x {
                if let ast::Value::Placeholder(p) = &v.value {
                    parameter = Some(p.clone());
                }
            }
            std::ops::ControlFlow::Continue(())
        });
        if let Some(p) = parameter {
            return Err(QueryError::Engine { sqlstate: "42P02", message: format!("there is no parameter {p}") });
        }
        if subquery {
            return Err(QueryError::NotSupported("cannot use subquery in check constraint".into()));
        }
        if contains_aggregate(e) {
            return Err(QueryError::Engine {
                sqlstate: "42803",
                message: "aggregate functions are not allowed in check constraints".into(),
            });
        }
        let scope = Scope::table(t, None);
        let b = self.binder(&scope).bind(e)?;
        let b = self.binder(&scope).coerce(b, SqlType::Bool)?;
        if !matches!(b.ty(), SqlType::Bool | SqlType::Unknown) {
            return Err(QueryError::DatatypeMismatch(format!("argument of CHECK must be type boolean, not type {}", b.ty())));
        }
        let mut cols = Vec::new();
        b.columns(&mut cols);
        if cols.contains(&t.columns.len()) {
            return Err(QueryError::NotSupported(format!("a CHECK constraint on \"{VERSION_COLUMN}\"")));
        }
        Ok(b)
    }

    /// The table's CHECK constraints, bound for a plan that writes its rows.
    pub(super) fn bound_checks(&mut self, t: &TableSchema) -> Result<Vec<BoundCheck>> {
        t.checks
            .iter()
            .map(|c| {
                let e = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(&c.expr)?.parse_expr()?;
                Ok(BoundCheck { name: c.name.clone(), expr: self.bind_check(t, &e)?, of_view: false })
            })
            .collect()
    }

    /// The conditions of the views WITH CHECK OPTION the statement writes through, taken from
    /// `view_checks` and bound over the row of table `t`, named `alias` in the statement (the view's own
    /// alias for it). A subquery in one is not built (0A000).
    pub(super) fn bound_view_checks(&mut self, t: &TableSchema, alias: Option<&str>) -> Result<Vec<BoundCheck>> {
        let mut out = Vec::new();
        for c in std::mem::take(&mut self.view_checks) {
            let mut subquery = false;
            let _ = crate::walk::exprs(&c.condition, |x: &ast::Expr| {
                subquery |= matches!(x, ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. });
                std::ops::ControlFlow::Continue(())
            });
            if subquery {
                return Err(QueryError::FeatureNotSupported(format!(
                    "a write through view \"{}\", whose CHECK OPTION condition has a subquery",
                    c.view
                )));
            }
            let scope = Scope::table(t, alias);
            let b = self.binder(&scope).bind(&c.condition)?;
            let expr = self.binder(&scope).coerce(b, SqlType::Bool)?;
            out.push(BoundCheck { name: c.view, expr, of_view: true });
        }
        Ok(out)
    }

    /// A CHECK constraint `c` of table `t` (`column`: the column it was declared on), checked and named:
    /// given a name, it must be free among the table's constraints (42710); without one, PostgreSQL's:
    /// `<table>_<column>_check` when the expression reads one column, `<table>_check` otherwise, numbered
    /// from 1 while taken.
    pub(super) fn check_def(
        &mut self,
        t: &TableSchema,
        c: &ast::CheckConstraint,
        column: Option<&str>,
        taken: &[String],
    ) -> Result<CheckDef> {
        if c.enforced == Some(false) {
            return Err(QueryError::NotSupported("CHECK ... NOT ENFORCED".into()));
        }
        let bound = self.bind_check(t, &c.expr)?;
        let stem = || {
            let mut cols = Vec::new();
            bound.columns(&mut cols);
            cols.sort_unstable();
            cols.dedup();
            match (column, cols.as_slice()) {
                (Some(c), _) => format!("{}_{c}", t.name),
                (None, [c]) => format!("{}_{}", t.name, t.columns[*c].name),
                _ => t.name.clone(),
            }
        };
        let name = constraint_name(&t.name, c.name.as_ref(), stem, "check", taken)?;
        Ok(CheckDef { name, expr: c.expr.to_string() })
    }
}

/// A new constraint's name: the one given, which must be free among the table's constraints (42710), or
/// PostgreSQL's `<stem>_<kind>`, numbered from 1 while taken.
pub(super) fn constraint_name(
    table: &str,
    given: Option<&ast::Ident>,
    stem: impl FnOnce() -> String,
    kind: &str,
    taken: &[String],
) -> Result<String> {
    if let Some(n) = given.map(ident_name) {
        if taken.contains(&n) {
            return Err(QueryError::Engine {
                sqlstate: "42710",
                message: format!("constraint \"{n}\" for relation \"{table}\" already exists"),
            });
        }
        return Ok(n);
    }
    let stem = stem();
    Ok((0..).map(|n| if n == 0 { format!("{stem}_{kind}") } else { format!("{stem}_{kind}{n}") }).find(|n| !taken.contains(n)).unwrap())
}

/// The names a table's constraints hold: its primary key's, its UNIQUE constraints', its CHECKs' and its
/// FOREIGN KEYs'.
pub(super) fn constraint_names(t: &TableSchema) -> Vec<String> {
    let mut names = vec![format!("{}_pkey", t.name)];
    names.extend(t.indexes.iter().filter(|i| i.constraint).map(|i| i.name.clone()));
    names.extend(t.checks.iter().map(|c| c.name.clone()));
    names.extend(t.foreign_keys.iter().map(|f| f.name.clone()));
    names
}
