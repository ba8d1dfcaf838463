//! Operators on values: arithmetic with PostgreSQL's result types and overflow errors, comparison, text
//! and jsonb operators.

use super::*;
use crate::types::NumericOp;

pub(super) fn numeric_result(l: SqlType, r: SqlType) -> SqlType {
    use SqlType::*;
    let rank = |t: SqlType| match t {
        Int2 => 1,
        Int4 | Unknown => 2,
        Int8 => 3,
        Numeric => 4,
        Float4 => 5,
        Float8 => 6,
        Timestamp | Timestamptz | Date => 7,
        _ => 0,
    };
    let t = if rank(l) >= rank(r) { l } else { r };
    match t {
        Unknown => Int4,
        Int2 => Int4,
        t => t,
    }
}

/// The type the right operand of a jsonb operator takes (`None`: not one): `->` and `->>` take a key
/// (text) or an index (integer), `@>` and `<@` a jsonb.
pub(super) fn json_operand(op: BinOp, rt: SqlType) -> Option<SqlType> {
    match op {
        BinOp::JsonGet | BinOp::JsonGetText if rt.is_integer() => Some(rt),
        BinOp::JsonGet | BinOp::JsonGetText => Some(SqlType::Text),
        BinOp::JsonContains | BinOp::JsonContainedBy => Some(SqlType::Jsonb),
        _ => None,
    }
}

/// A jsonb operator's value (`None`: `op` is not one).
pub(super) fn json_binary(op: BinOp, l: &Datum, r: &Datum) -> Result<Option<Datum>> {
    use crate::json::{self, Step};
    let (Datum::Text(doc), true) = (l, json_operand(op, SqlType::Unknown).is_some()) else { return Ok(None) };
    let step = match r {
        Datum::Int(i) => Step::Index(*i),
        Datum::Text(k) => Step::Key(k),
        _ => Step::Key(""),
    };
    let text = |t: Option<String>| t.map(Datum::Text).unwrap_or(Datum::Null);
    Ok(Some(match (op, r) {
        (BinOp::JsonGet, _) => text(json::get(doc, step)?),
        (BinOp::JsonGetText, _) => text(json::get_text(doc, step)?),
        (BinOp::JsonContains, Datum::Text(b)) => Datum::Bool(json::contains(doc, b)?),
        (BinOp::JsonContainedBy, Datum::Text(b)) => Datum::Bool(json::contains(b, doc)?),
        _ => return Ok(None),
    }))
}

/// PostgreSQL's dates run from 4714-11-24 BC to 5874897-12-31 AD: days from 1970-01-01.
pub(super) fn date_in_range(days: i64) -> bool {
    (-2_440_588..=2_145_042_906).contains(&days)
}

pub fn truth(d: &Datum) -> Result<Option<bool>> {
    match d {
        Datum::Null => Ok(None),
        Datum::Bool(b) => Ok(Some(*b)),
        Datum::Text(s) => Datum::parse(SqlType::Bool, s).map(|d| Some(d == Datum::Bool(true))),
        other => Err(QueryError::DatatypeMismatch(format!("argument of WHERE must be type boolean, not type {}", other.natural_type()))),
    }
}

pub(super) fn to_decimal(d: &Datum) -> Option<Decimal> {
    match d {
        Datum::Int(i) => Some(Decimal::from(*i)),
        Datum::Numeric(n) => Some(*n),
        Datum::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(super) fn to_f64(d: &Datum) -> Option<f64> {
    match d {
        Datum::Int(i) => Some(*i as f64),
        Datum::Float(f) => Some(*f),
        Datum::Numeric(n) => n.to_string().parse().ok(),
        Datum::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// `a << count` or `a >> count` in integer type `t`, as PostgreSQL's `int4shl` ... compute it: the count
/// modulo the width in bits (the processor's shift), a smallint shifted as an integer and cut to 16 bits.
fn shift(left: bool, a: i64, count: i64, t: SqlType) -> i64 {
    let count = count as u32;
    match t {
        SqlType::Int8 => {
            if left {
                a.wrapping_shl(count)
            } else {
                a.wrapping_shr(count)
            }
        }
        _ => {
            let v = if left { (a as i32).wrapping_shl(count) } else { (a as i32).wrapping_shr(count) };
            if t == SqlType::Int2 {
                i64::from(v as i16)
            } else {
                i64::from(v)
            }
        }
    }
}

pub(super) fn binary(op: BinOp, l: Datum, r: Datum, result_ty: SqlType) -> Result<Datum> {
    use BinOp::*;
    if l.is_null() || r.is_null() {
        return Ok(Datum::Null);
    }
    if op.is_comparison() {
        let ord = l
            .sql_cmp(&r)
            .ok_or_else(|| QueryError::UndefinedOperator(format!("{} {} {}", l.natural_type(), op.symbol(), r.natural_type())))?;
        return Ok(Datum::Bool(match op {
            Eq => ord.is_eq(),
            NotEq => ord.is_ne(),
            Lt => ord.is_lt(),
            LtEq => ord.is_le(),
            Gt => ord.is_gt(),
            GtEq => ord.is_ge(),
            _ => unreachable!(),
        }));
    }
    if op == Concat {
        // `||` casts a non-text operand to text (`true || 'x'` is `truex`), where concat() takes its output form.
        let text = |d: Datum| -> Result<String> {
            Ok(match d.cast(SqlType::Text)? {
                Datum::Text(s) => s,
                other => other.to_pg_text(SqlType::Text).unwrap_or_default(),
            })
        };
        return Ok(Datum::Text(text(l)? + &text(r)?));
    }
    if let Some(d) = json_binary(op, &l, &r)? {
        return Ok(d);
    }
    // date ± integer is a date, date - date the days between (PostgreSQL's date operators).
    match (op, &l, &r) {
        (Add | Sub, Datum::Date(d), Datum::Int(n)) | (Add, Datum::Int(n), Datum::Date(d)) => {
            let n = if op == Sub { n.checked_neg() } else { Some(*n) };
            return n
                .and_then(|n| i64::from(*d).checked_add(n))
                .filter(|d| date_in_range(*d))
                .map(|d| Datum::Date(d as i32))
                .ok_or(QueryError::DateOutOfRange);
        }
        (Sub, Datum::Date(a), Datum::Date(b)) => return Ok(Datum::Int(i64::from(*a) - i64::from(*b))),
        _ => {}
    }
    let mismatch = || QueryError::UndefinedOperator(format!("{} {} {}", l.natural_type(), op.symbol(), r.natural_type()));
    match result_ty {
        t if t.is_integer() => {
            let (Datum::Int(a), Datum::Int(b)) = (&l, &r) else {
                // An untyped text operand: parse it as an integer.
                let a = Datum::Int(match &l {
                    Datum::Int(a) => *a,
                    other => other.clone().cast(SqlType::Int8)?.as_int().ok_or_else(mismatch)?,
                });
                let b = Datum::Int(match &r {
                    Datum::Int(b) => *b,
                    other => other.clone().cast(SqlType::Int8)?.as_int().ok_or_else(mismatch)?,
                });
                return binary(op, a, b, result_ty);
            };
            let (a, b) = (*a, *b);
            let v = match op {
                Add => a.checked_add(b),
                Sub => a.checked_sub(b),
                Mul => a.checked_mul(b),
                Div if b == 0 => return Err(QueryError::DivisionByZero),
                Div => a.checked_div(b),
                Mod if b == 0 => return Err(QueryError::DivisionByZero),
                Mod => a.checked_rem(b),
                BitAnd => Some(a & b),
                BitOr => Some(a | b),
                BitXor => Some(a ^ b),
                ShiftLeft | ShiftRight => Some(shift(op == ShiftLeft, a, b, t)),
                _ => unreachable!(),
            };
            let v = v.ok_or_else(|| out_of_range(t))?;
            Datum::Int(v).cast(t)
        }
        SqlType::Numeric => {
            let (a, b) = (to_decimal(&l).ok_or_else(mismatch)?, to_decimal(&r).ok_or_else(mismatch)?);
            let op = match op {
                Add => NumericOp::Add,
                Sub => NumericOp::Sub,
                Mul => NumericOp::Mul,
                Div => NumericOp::Div,
                Mod => NumericOp::Mod,
                _ => unreachable!(),
            };
            Ok(Datum::Numeric(crate::types::numeric_arithmetic(op, a, b)?))
        }
        SqlType::Float4 | SqlType::Float8 => {
            let (a, b) = (to_f64(&l).ok_or_else(mismatch)?, to_f64(&r).ok_or_else(mismatch)?);
            let v = match op {
                Add => a + b,
                Sub => a - b,
                Mul => a * b,
                Div if b == 0.0 => return Err(QueryError::DivisionByZero),
                Div => a / b,
                Mod => a % b,
                _ => unreachable!(),
            };
            if v.is_infinite() && a.is_finite() && b.is_finite() {
                return Err(out_of_range(result_ty));
            }
            Ok(Datum::Float(v))
        }
        _ => Err(mismatch()),
    }
}

impl Datum {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Datum::Int(i) => Some(*i),
            _ => None,
        }
    }
}
