//! One walk over a built plan's expressions, for the rewrites that make DataFusion's answers PostgreSQL's
//! once the plan is built ([`super::numbers`], [`super::bpchar`]).

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::DFSchemaRef;
use datafusion::error::Result;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan, Operator};

/// `plan` with every expression (its subqueries' too) rewritten bottom up by `f`, which is given the schema
/// the expression is typed by. Names are kept, so a column is still called what PostgreSQL calls it. Once
/// an expression changed, the nodes above it are built again, so that a field that changed (its type, its
/// metadata) reaches the result's schema.
pub fn rewrite_expressions(plan: LogicalPlan, f: impl Fn(Expr, &DFSchemaRef) -> Result<Transformed<Expr>>) -> Result<LogicalPlan> {
    let mut changed = false;
    plan.transform_up_with_subqueries(|node| {
        let node = if changed { node.recompute_schema()? } else { node };
        // Expressions are typed by the node's input; a join's, by both sides, which its output holds.
        let schema: DFSchemaRef = match node.inputs().as_slice() {
            [one] => Arc::clone(one.schema()),
            _ => Arc::clone(node.schema()),
        };
        let names = NamePreserver::new(&node);
        let rewritten = node.map_expressions(|e| {
            let saved = names.save(&e);
            let out = e.transform_up(|e| f(e, &schema))?;
            Ok(if out.transformed { Transformed::yes(saved.restore(out.data)) } else { out })
        })?;
        if rewritten.transformed {
            changed = true;
            Ok(Transformed::yes(rewritten.data.recompute_schema()?))
        } else {
            Ok(rewritten)
        }
    })
    .map(|t| t.data)
}

/// A comparison of two values (`=`, `<>`, `<`, `<=`, `>`, `>=`, `IS [NOT] DISTINCT FROM`).
pub fn is_comparison(op: Operator) -> bool {
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
    )
}
