//! Long chains of `AND` or `OR` as balanced trees.
//!
//! The parser makes `a OR b OR c OR ...` a chain as deep as it is long, and DataFusion's analyser and
//! optimiser work out each operator's type from its operands' anew, a walk down the whole chain: the cost
//! is the square of its length. 4,000 ORed conditions (what an ORM makes of a long filter) took 8.4 s to
//! plan; balanced, 0.4 s. `AND` and `OR` are associative in three-valued logic too, and the operands keep
//! their order, so the answer is the same. Arithmetic chains are left as written: `(a + b) + c` and
//! `a + (b + c)` may differ (an overflow in one and not the other, rounding).

use std::ops::ControlFlow;

use sqlparser::ast::{BinaryOperator, Expr};

/// Chains up to this many operands are left as written (and print as written in EXPLAIN).
const SHORT: usize = 32;

pub struct BalancedChains;

impl crate::walk::WalkerMut for BalancedChains {
    /// Before the operands are visited: the top of a chain is rebuilt, and the visit goes on into its
    /// balanced halves, each only as deep as the logarithm of its length.
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let Expr::BinaryOp { op: op @ (BinaryOperator::And | BinaryOperator::Or), .. } = e else {
            return ControlFlow::Continue(());
        };
        let op = op.clone();
        if chain_length(e, &op) > SHORT {
            let mut operands = Vec::new();
            let mut rest = std::mem::replace(e, Expr::value(sqlparser::ast::Value::Null));
            // The chain leans left: walk down its left side, taking each right operand.
            while let Expr::BinaryOp { left, op: o, right } = rest {
                if o != op {
                    rest = Expr::BinaryOp { left, op: o, right };
                    break;
                }
                operands.push(*right);
                rest = *left;
            }
            operands.push(rest);
            operands.reverse();
            *e = balanced(operands, &op);
        }
        ControlFlow::Continue(())
    }
}

/// How many operands the chain of `op` down `e`'s left side has, counted up to one past [`SHORT`].
fn chain_length(mut e: &Expr, op: &BinaryOperator) -> usize {
    let mut n = 1;
    while let Expr::BinaryOp { left, op: o, .. } = e {
        if o != op || n > SHORT {
            break;
        }
        n += 1;
        e = left;
    }
    n
}

fn balanced(mut operands: Vec<Expr>, op: &BinaryOperator) -> Expr {
    if operands.len() == 1 {
        return operands.pop().expect("one operand");
    }
    let right = operands.split_off(operands.len() / 2);
    Expr::BinaryOp { left: Box::new(balanced(operands, op)), op: op.clone(), right: Box::new(balanced(right, op)) }
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::{SetExpr, Statement};
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    use super::*;

    /// The WHERE clause of `sql` once rewritten.
    fn condition(sql: &str) -> Expr {
        let mut s = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap().remove(0);
        let _ = crate::walk::walk_mut(&mut s, &mut BalancedChains);
        let Statement::Query(q) = s else { panic!("{s}") };
        let SetExpr::Select(select) = *q.body else { panic!() };
        select.selection.unwrap()
    }

    /// How deep the chain of `op` is, and its operands in order.
    fn shape(e: &Expr, op: &BinaryOperator, operands: &mut Vec<String>) -> usize {
        match e {
            Expr::BinaryOp { left, op: o, right } if o == op => 1 + shape(left, op, operands).max(shape(right, op, operands)),
            other => {
                operands.push(other.to_string());
                0
            }
        }
    }

    #[test]
    fn long_chains_are_balanced_in_order_and_short_ones_kept() {
        let terms = |c: &str, n: usize| (0..n).map(|i| format!("{c} = {i}")).collect::<Vec<_>>();
        let mut operands = Vec::new();
        assert_eq!(shape(&condition("SELECT 1 FROM t WHERE a = 0 OR a = 1 OR a = 2"), &BinaryOperator::Or, &mut operands), 2);
        assert_eq!(operands, terms("a", 3));

        let mut operands = Vec::new();
        let long = condition(&format!("SELECT 1 FROM t WHERE {}", terms("a", 40).join(" OR ")));
        assert_eq!(shape(&long, &BinaryOperator::Or, &mut operands), 6, "40 operands, balanced");
        assert_eq!(operands, terms("a", 40));

        // A long AND chain as an operand of a short OR is balanced in turn, and the OR kept.
        let mixed = condition(&format!("SELECT 1 FROM t WHERE {} OR c = 1", terms("b", 40).join(" AND ")));
        let Expr::BinaryOp { left, op: BinaryOperator::Or, right } = mixed else { panic!("{mixed}") };
        assert_eq!(right.to_string(), "c = 1");
        let mut operands = Vec::new();
        assert_eq!(shape(&left, &BinaryOperator::And, &mut operands), 6);
        assert_eq!(operands, terms("b", 40));
    }
}
