//! PostgreSQL's operators that DataFusion lacks or parses otherwise: `^`, `|/`, `||/`, `@` and `~`, and the
//! precedence of a sign before `^`.

use sqlparser::ast::{BinaryOperator, Expr, Value};

use super::call;

/// `-2 ^ 2` is `(-2) ^ 2` in PostgreSQL, whose unary minus binds tighter than `^`; the parser makes it
/// `-(2 ^ 2)`. The sign goes back to the first operand (`^` groups from the left: `-2 ^ 3 ^ 2` is
/// `((-2) ^ 3) ^ 2`). A minus written before parentheses, `-(2 ^ 2)`, is kept: the parentheses are a
/// node of their own.
pub(super) fn exponent_sign(e: &mut Expr) {
    let Expr::UnaryOp { op: op @ (sqlparser::ast::UnaryOperator::Minus | sqlparser::ast::UnaryOperator::Plus), expr } = e else { return };
    if !matches!(expr.as_ref(), Expr::BinaryOp { op: BinaryOperator::PGExp, .. }) {
        return;
    }
    let (op, mut power) = (*op, expr.as_ref().clone());
    let mut first = &mut power;
    while let Expr::BinaryOp { left, op: BinaryOperator::PGExp, .. } = first {
        first = left.as_mut();
    }
    *first = Expr::UnaryOp { op, expr: Box::new(first.clone()) };
    *e = power;
}

/// Operators DataFusion does not have: `a ^ b` is `power(a, b)`, `|/ x` `sqrt(x)`, `||/ x` `cbrt(x)`, `@ x`
/// `abs(x)`, and `~x` is `x # (-1)::smallint`: every bit
/// flipped, in `x`'s integer type, as the `smallint` all-ones widens to any of them.
pub(super) fn operators(e: &mut Expr) {
    use sqlparser::ast::UnaryOperator as U;
    if let Expr::BinaryOp { left, op: BinaryOperator::PGExp, right } = e {
        *e = call("power", vec![left.as_ref().clone(), right.as_ref().clone()], vec![]);
        return;
    }
    // `|/ x`, `||/ x`, `@ x`: sqrt, cbrt and abs.
    if let Expr::UnaryOp { op: op @ (U::PGSquareRoot | U::PGCubeRoot | U::PGAbs), expr } = e {
        let name = match op {
            U::PGSquareRoot => "sqrt",
            U::PGCubeRoot => "cbrt",
            _ => "abs",
        };
        let mut arg = expr.as_ref().clone();
        // PostgreSQL's `|/` has only a double precision form, where `sqrt` has a numeric one too.
        if name == "sqrt" {
            arg = Expr::Cast {
                kind: sqlparser::ast::CastKind::DoubleColon,
                expr: Box::new(Expr::Nested(Box::new(arg))),
                data_type: sqlparser::ast::DataType::DoublePrecision,
                array: false,
                format: None,
            };
        }
        *e = call(name, vec![arg], vec![]);
        return;
    }
    let Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::BitwiseNot, expr } = e else { return };
    let ones = Expr::Cast {
        kind: sqlparser::ast::CastKind::DoubleColon,
        expr: Box::new(Expr::Nested(Box::new(Expr::value(Value::Number("-1".into(), false))))),
        data_type: sqlparser::ast::DataType::SmallInt(None),
        array: false,
        format: None,
    };
    *e = Expr::Nested(Box::new(Expr::BinaryOp { left: expr.clone(), op: BinaryOperator::PGBitwiseXor, right: Box::new(ones) }));
}
