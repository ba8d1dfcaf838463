//! `ORDER BY 1` of a grouping query names its first select item by that item's expression.
//!
//! DataFusion 55 turns the ordinal into a column named after the item's text (`g.i + Int64(1)`), and
//! then checks ORDER BY against the aggregate's output, where only grouped columns, aggregates and
//! aliased items are known: `SELECT i + 1, count(*) FROM g GROUP BY i ORDER BY 1` failed with 42803,
//! which PostgreSQL answers. Written as the expression it is rebased on the aggregate as the item is.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, GroupByExpr, OrderByKind, Query, SelectItem, SetExpr, Value};

use super::subqueries::has_aggregate;

pub(super) struct GroupedOrdinals;

impl crate::walk::WalkerMut for GroupedOrdinals {
    fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        let SetExpr::Select(select) = q.body.as_ref() else { return ControlFlow::Continue(()) };
        let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
            || select.having.is_some()
            || select
                .projection
                .iter()
                .any(|p| matches!(p, SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } if has_aggregate(e)));
        let Some(OrderByKind::Expressions(order)) = q.order_by.as_mut().map(|o| &mut o.kind) else { return ControlFlow::Continue(()) };
        if !grouped {
            return ControlFlow::Continue(());
        }
        for o in order {
            let Expr::Value(v) = &o.expr else { continue };
            let Value::Number(n, _) = &v.value else { continue };
            let Some(SelectItem::UnnamedExpr(item)) =
                n.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|i| select.projection.get(i))
            else {
                continue;
            };
            if !matches!(item, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
                o.expr = item.clone();
            }
        }
        ControlFlow::Continue(())
    }
}
