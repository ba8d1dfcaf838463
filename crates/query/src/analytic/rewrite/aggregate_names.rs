//! Aggregates that DataFusion would name alike get names of their own. DataFusion names a cast after what
//! it casts, so `max(k), max(k::int)` are two aggregates both named `max(t.k)`, and its aggregate node
//! refuses them ("duplicate unqualified field name"), where PostgreSQL computes both. Each further
//! aggregate of a name gets a filter that keeps every row, `FILTER (WHERE 2 = 2)`, which names it apart;
//! the same call elsewhere in the query (HAVING, ORDER BY) gets the same one, so that it still means the
//! same aggregate.

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{BinaryOperator, Expr, OrderByKind, Query, SelectItem, SetExpr, Value, ValueWithSpan};

pub(super) struct DistinctAggregateNames;

impl crate::walk::WalkerMut for DistinctAggregateNames {
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        let SetExpr::Select(select) = q.body.as_mut() else { return ControlFlow::Continue(()) };
        // Per DataFusion name, the calls seen under it, as written: the first keeps its name.
        let mut seen: HashMap<String, Vec<String>> = HashMap::new();
        let mut visit = |e: &mut Expr| {
            let _ = crate::walk::exprs_mut(e, |x| {
                name_apart(x, &mut seen);
                ControlFlow::<()>::Continue(())
            });
        };
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                visit(e);
            }
        }
        if let Some(h) = &mut select.having {
            visit(h);
        }
        if let Some(OrderByKind::Expressions(list)) = q.order_by.as_mut().map(|o| &mut o.kind) {
            list.iter_mut().for_each(|o| visit(&mut o.expr));
        }
        ControlFlow::Continue(())
    }
}

fn name_apart(x: &mut Expr, seen: &mut HashMap<String, Vec<String>>) {
    let Expr::Function(f) = x else { return };
    let name = f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
    // Window calls, with OVER, are left alone.
    if f.over.is_some() || !crate::planner::AGGREGATES.contains(&name.as_str()) {
        return;
    }
    let text = x.to_string();
    let calls = seen.entry(super::datafusion_name(x)).or_default();
    let n = calls.iter().position(|t| *t == text).unwrap_or_else(|| {
        calls.push(text);
        calls.len() - 1
    });
    if n == 0 {
        return;
    }
    let Expr::Function(f) = x else { return };
    let number = || Expr::Value(ValueWithSpan::from(Value::Number(n.to_string(), false)));
    let always = Expr::BinaryOp { left: Box::new(number()), op: BinaryOperator::Eq, right: Box::new(number()) };
    f.filter = Some(Box::new(match f.filter.take() {
        None => always,
        Some(c) => Expr::BinaryOp { left: Box::new(Expr::Nested(c)), op: BinaryOperator::And, right: Box::new(always) },
    }));
}
