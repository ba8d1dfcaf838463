//! The columns of a subquery in FROM or of a CTE are named as PostgreSQL names them, so that the outer
//! query can use those names: `SELECT s.count FROM (SELECT count(*) FROM t) s`. DataFusion names an
//! unaliased expression after its text (`count(*)`); here it gets PostgreSQL's name as an alias
//! (`planner::default_name`). It runs first, on the statement as written, before other rewrites change the
//! expressions (`EXTRACT` into a call of another name). The outermost query's columns need none: Tabula
//! names them itself.
//!
//! An item is left as it is when it is a column (DataFusion names it alike), when its name is
//! `?column?`, when another item of the list has the same name, or when the select names a column so
//! (`GROUP BY n` must keep meaning the column, not the alias).

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr, TableFactor};

use crate::planner::default_name;

pub(super) struct DerivedNames;

impl crate::walk::WalkerMut for DerivedNames {
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &mut q.with {
            for cte in &mut with.cte_tables {
                name_columns(cte.query.body.as_mut());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Derived { subquery, .. } = f {
            name_columns(subquery.body.as_mut());
        }
        ControlFlow::Continue(())
    }
}

fn is_column(e: &Expr) -> bool {
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => true,
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => is_column(inner),
        _ => false,
    }
}

/// The names of the relation's columns come from its first SELECT.
fn name_columns(body: &mut SetExpr) {
    let select = match body {
        SetExpr::Select(s) => s,
        SetExpr::SetOperation { left, .. } => return name_columns(left),
        SetExpr::Query(q) => return name_columns(q.body.as_mut()),
        _ => return,
    };
    let mut used = HashSet::new();
    let _ = crate::walk::exprs(select.as_ref(), |e| {
        match e {
            Expr::Identifier(i) => {
                used.insert(i.value.to_lowercase());
            }
            Expr::CompoundIdentifier(ids) => used.extend(ids.iter().map(|i| i.value.to_lowercase())),
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    let names: Vec<Option<String>> = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) => Some(default_name(e)),
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            _ => None,
        })
        .collect();
    for (i, item) in select.projection.iter_mut().enumerate() {
        let SelectItem::UnnamedExpr(e) = item else { continue };
        let Some(name) = &names[i] else { continue };
        let unique = names.iter().filter(|n| n.as_ref() == Some(name)).count() == 1;
        if is_column(e) || name == "?column?" || !unique || used.contains(&name.to_lowercase()) {
            continue;
        }
        *item = SelectItem::ExprWithAlias { expr: e.clone(), alias: Ident::with_quote('"', name.clone()) };
    }
}
