//! `generate_series(...)` in a select list makes one row per value, as PostgreSQL's set-returning
//! functions do (`SELECT generate_series(1, 3)` is three rows; beside `unnest(...)` the two are zipped,
//! the shorter padded with NULLs, as PostgreSQL 10 and later zip them). DataFusion's scalar
//! `generate_series` answered one row holding an array. The call becomes `unnest(generate_series(...))`,
//! at the top of an item or inside casts and operators; in FROM it is a table function already
//! (`from::FunctionsInFrom`).

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, SelectItem};

use super::{call, each_select};

pub(super) struct SelectListSeries;

impl crate::walk::WalkerMut for SelectListSeries {
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        each_select(q.body.as_mut(), &mut |s| {
            for item in &mut s.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                    expand(e);
                }
            }
        });
        ControlFlow::Continue(())
    }
}

fn expand(e: &mut Expr) {
    match e {
        Expr::Function(f) if f.name.0.last().is_some_and(|p| p.to_string().eq_ignore_ascii_case("generate_series")) => {
            *e = call("unnest", vec![e.clone()], vec![]);
        }
        Expr::BinaryOp { left, right, .. } => {
            expand(left);
            expand(right);
        }
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) | Expr::Cast { expr, .. } => expand(expr),
        _ => {}
    }
}
