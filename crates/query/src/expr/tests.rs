//! Evaluation as PostgreSQL evaluates: NULL through operators, three-valued logic, comparison across
//! integer widths and numerics, casts that check their range.

use rust_decimal::Decimal;

use super::*;

fn ctx() -> EvalCtx<'static> {
    EvalCtx { params: &[], now_us: 0, user: "u", session_user: "u", database: "d", zone: crate::types::Zone::UTC, sequences: None }
}

fn int(i: i64) -> Expr {
    Expr::Literal(Datum::Int(i), SqlType::Int8)
}

fn null(ty: SqlType) -> Expr {
    Expr::Literal(Datum::Null, ty)
}

fn bool_(b: Option<bool>) -> Expr {
    Expr::Literal(b.map_or(Datum::Null, Datum::Bool), SqlType::Bool)
}

fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    Expr::Binary { op, left: Box::new(l), right: Box::new(r) }
}

fn eval(e: &Expr) -> Datum {
    e.eval(&[], &ctx()).unwrap()
}

#[test]
fn null_propagates_through_arithmetic() {
    // Not the engine's increment, where a missing value counts as 0.
    assert_eq!(eval(&bin(BinOp::Add, null(SqlType::Int8), int(1))), Datum::Null);
    assert_eq!(eval(&bin(BinOp::Mul, int(2), null(SqlType::Int8))), Datum::Null);
    assert_eq!(eval(&Expr::Neg(Box::new(null(SqlType::Int8)))), Datum::Null);
    assert_eq!(eval(&bin(BinOp::Concat, Expr::literal(Datum::Text("a".into())), null(SqlType::Text))), Datum::Null);
}

#[test]
fn three_valued_logic() {
    let (t, f, n) = (Some(true), Some(false), None);
    let cases = [
        (BinOp::And, t, n, None),
        (BinOp::And, f, n, Some(false)),
        (BinOp::Or, t, n, Some(true)),
        (BinOp::Or, f, n, None),
        (BinOp::And, n, n, None),
    ];
    for (op, l, r, want) in cases {
        let got = eval(&bin(op, bool_(l), bool_(r)));
        assert_eq!(got, want.map_or(Datum::Null, Datum::Bool), "{l:?} {op:?} {r:?}");
        // Either order.
        assert_eq!(eval(&bin(op, bool_(r), bool_(l))), got);
    }
    assert_eq!(eval(&Expr::Not(Box::new(bool_(None)))), Datum::Null);
    // A predicate that is NULL does not pass.
    assert!(!bool_(None).eval_predicate(&[], &ctx()).unwrap());
    // x IN (1, NULL) is NULL when x is not 1, NOT IN likewise.
    let list = |negated| Expr::InList { expr: Box::new(int(2)), list: vec![int(1), null(SqlType::Int8)], negated };
    assert_eq!(eval(&list(false)), Datum::Null);
    assert_eq!(eval(&list(true)), Datum::Null);
    assert_eq!(eval(&Expr::IsNull { expr: Box::new(null(SqlType::Int8)), negated: false }), Datum::Bool(true));
}

#[test]
fn integer_overflow_and_division_are_errors() {
    let e = bin(BinOp::Add, int(i64::MAX), int(1)).eval(&[], &ctx()).unwrap_err();
    assert_eq!(e.sqlstate(), "22003");
    let e = bin(BinOp::Div, int(1), int(0)).eval(&[], &ctx()).unwrap_err();
    assert_eq!(e.sqlstate(), "22012");
    // Integer division truncates toward zero, as in PostgreSQL.
    assert_eq!(eval(&bin(BinOp::Div, int(-7), int(2))), Datum::Int(-3));
    assert_eq!(eval(&bin(BinOp::Mod, int(-7), int(2))), Datum::Int(-1));
}

#[test]
fn comparisons_across_numeric_types() {
    let num = Expr::Literal(Datum::Numeric(Decimal::new(15, 1)), SqlType::Numeric);
    assert_eq!(eval(&bin(BinOp::Lt, int(1), num.clone())), Datum::Bool(true));
    assert_eq!(eval(&bin(BinOp::Eq, int(2), Expr::Literal(Datum::Float(2.0), SqlType::Float8))), Datum::Bool(true));
    assert_eq!(eval(&bin(BinOp::Eq, int(1), null(SqlType::Int8))), Datum::Null);
}

#[test]
fn casts_check_the_target_range() {
    let cast = |e: Expr, ty| Expr::Cast { expr: Box::new(e), ty };
    assert_eq!(cast(int(70000), SqlType::Int2).eval(&[], &ctx()).unwrap_err().sqlstate(), "22003");
    assert_eq!(eval(&cast(int(7), SqlType::Int2)), Datum::Int(7));
    assert_eq!(eval(&cast(Expr::literal(Datum::Text("12".into())), SqlType::Int4)), Datum::Int(12));
    assert_eq!(cast(Expr::literal(Datum::Text("x".into())), SqlType::Int4).eval(&[], &ctx()).unwrap_err().sqlstate(), "22P02");
    assert_eq!(eval(&cast(null(SqlType::Text), SqlType::Int4)), Datum::Null);
}
