//! Row comparisons, `(a, b) > (x, y)`: bound as their lexicographic meaning in single comparisons.

use sqlparser::ast;

use super::bind::Binder;
use super::{BinOp, Expr};
use crate::error::{QueryError, Result};

impl Binder<'_, '_> {
    pub(super) fn bind_tuple_cmp(&mut self, op: BinOp, ls: &[ast::Expr], rs: &[ast::Expr]) -> Result<Expr> {
        if ls.len() != rs.len() || ls.is_empty() {
            return Err(QueryError::Syntax("unequal number of entries in row expressions".into()));
        }
        let l: Vec<Expr> = ls.iter().map(|e| self.bind(e)).collect::<Result<_>>()?;
        let r: Vec<Expr> = rs.iter().map(|e| self.bind(e)).collect::<Result<_>>()?;
        let pairs: Vec<(Expr, Expr)> = l.into_iter().zip(r).collect();
        match op {
            BinOp::Eq | BinOp::NotEq => {
                let eqs = pairs.into_iter().map(|(a, b)| self.binary(BinOp::Eq, a, b)).collect::<Result<Vec<_>>>()?;
                let all = Expr::and_all(eqs).unwrap();
                Ok(if op == BinOp::Eq { all } else { Expr::Not(Box::new(all)) })
            }
            _ => {
                // (a, b) > (x, y)  ≡  a > x OR (a = x AND b > y), built from the last column up.
                let strict = match op {
                    BinOp::LtEq => BinOp::Lt,
                    BinOp::GtEq => BinOp::Gt,
                    o => o,
                };
                let mut it = pairs.into_iter().rev();
                let (la, lb) = it.next().unwrap();
                let mut acc = self.binary(op, la, lb)?;
                for (a, b) in it {
                    let gt = self.binary(strict, a.clone(), b.clone())?;
                    let eq = self.binary(BinOp::Eq, a, b)?;
                    acc = Expr::Binary {
                        op: BinOp::Or,
                        left: Box::new(gt),
                        right: Box::new(Expr::Binary { op: BinOp::And, left: Box::new(eq), right: Box::new(acc) }),
                    };
                }
                Ok(acc)
            }
        }
    }
}
