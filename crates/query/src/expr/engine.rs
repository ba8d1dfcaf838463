//! Expressions the engine can evaluate itself inside one row write, so that an auto-commit statement needs
//! no read first: a WHERE clause as the engine's column condition, and `c = c + k` as its increment.
//! The planner asks whether a statement's expressions have these shapes ([`WriteCall`](crate::plan::WriteCall));
//! the executor builds the engine's operations from them with the statement's values.

use tabula_store::{ColumnCondition, CompareOp, Value};

use super::{BinOp, Expr};
use crate::error::Result;
use crate::schema::TableSchema;
use crate::types::SqlType;

/// A WHERE clause over attribute columns as the engine's column condition, when it can be one exactly:
/// comparisons of a stored column with a constant, under AND, OR and NOT. A missing cell fails the
/// comparison, as NULL does in SQL. `value` gives a constant's value as the column's type stores it;
/// `None` from it (a NULL) or from this function: the clause needs the general path, since the engine's
/// conditions have no third truth value.
pub fn column_condition(
    t: &TableSchema,
    e: &Expr,
    value: &mut dyn FnMut(&Expr, SqlType) -> Result<Option<Value>>,
) -> Result<Option<ColumnCondition>> {
    condition(t, e, false, value)
}

/// Whether a WHERE clause has the shape [`column_condition`] turns into the engine's condition, whatever
/// its constants turn out to be.
pub fn fits_column_condition(t: &TableSchema, e: &Expr) -> bool {
    matches!(condition(t, e, false, &mut |_, _| Ok(Some(Value::Boolean(true)))), Ok(Some(_)))
}

fn condition(
    t: &TableSchema,
    e: &Expr,
    negate: bool,
    value: &mut dyn FnMut(&Expr, SqlType) -> Result<Option<Value>>,
) -> Result<Option<ColumnCondition>> {
    Ok(match e {
        Expr::Binary { op: op @ (BinOp::And | BinOp::Or), left, right } => {
            let (Some(l), Some(r)) = (condition(t, left, negate, value)?, condition(t, right, negate, value)?) else {
                return Ok(None);
            };
            // De Morgan under NOT.
            if (*op == BinOp::And) != negate {
                Some(ColumnCondition::And(vec![l, r]))
            } else {
                Some(ColumnCondition::Or(vec![l, r]))
            }
        }
        Expr::Not(inner) => condition(t, inner, !negate, value)?,
        Expr::Binary { op, left, right } if op.is_comparison() => {
            let (col, c, op) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column { index, .. }, c) if c.is_constant() => (*index, c, *op),
                (c, Expr::Column { index, .. }) if c.is_constant() => (*index, c, op.flip()),
                _ => return Ok(None),
            };
            let ty = if col < t.columns.len() && !t.is_pk(col) { t.column_type(col) } else { return Ok(None) };
            let Some(op) = compare_op(op, negate) else { return Ok(None) };
            if !stored_comparably(ty) {
                return Ok(None);
            }
            let Some(v) = value(c, ty)? else { return Ok(None) };
            Some(ColumnCondition::Single {
                column: t.columns[col].name.clone(),
                op,
                value: v,
                pass_if_missing: false,
                latest_version_only: true,
            })
        }
        _ => None,
    })
}

/// Types whose stored values the engine compares as SQL compares them.
fn stored_comparably(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::Int2
            | SqlType::Int4
            | SqlType::Int8
            | SqlType::Float4
            | SqlType::Float8
            | SqlType::Text
            | SqlType::Varchar
            | SqlType::Bool
            | SqlType::Bytea
            | SqlType::Timestamp
            | SqlType::Timestamptz
            | SqlType::Date
    )
}

fn compare_op(op: BinOp, negate: bool) -> Option<CompareOp> {
    let op = if negate {
        match op {
            BinOp::Eq => BinOp::NotEq,
            BinOp::NotEq => BinOp::Eq,
            BinOp::Lt => BinOp::GtEq,
            BinOp::LtEq => BinOp::Gt,
            BinOp::Gt => BinOp::LtEq,
            BinOp::GtEq => BinOp::Lt,
            _ => return None,
        }
    } else {
        op
    };
    Some(match op {
        BinOp::Eq => CompareOp::Eq,
        BinOp::NotEq => CompareOp::Ne,
        BinOp::Lt => CompareOp::Lt,
        BinOp::LtEq => CompareOp::Le,
        BinOp::Gt => CompareOp::Gt,
        BinOp::GtEq => CompareOp::Ge,
        _ => return None,
    })
}

/// `col + k` or `k + col` (or `col - k`) with a constant integer `k`: the amount to add.
pub fn increment_of(e: &Expr, col: usize) -> Option<Expr> {
    // Only bigint: the engine adds in i64, and a narrower column could leave its range.
    let is_col = |e: &Expr| matches!(e, Expr::Column { index, ty: SqlType::Int8, .. } if *index == col);
    let e = match e {
        Expr::Cast { expr, .. } => expr.as_ref(),
        e => e,
    };
    match e {
        Expr::Binary { op: BinOp::Add, left, right } => {
            if is_col(left) && right.is_constant() && right.ty().is_integer() {
                Some((**right).clone())
            } else if is_col(right) && left.is_constant() && left.ty().is_integer() {
                Some((**left).clone())
            } else {
                None
            }
        }
        Expr::Binary { op: BinOp::Sub, left, right } if is_col(left) && right.is_constant() && right.ty().is_integer() => {
            Some(Expr::Neg(right.clone()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ColumnDef;
    use crate::types::Datum;

    fn table() -> TableSchema {
        let col = ColumnDef::plain;
        let columns = vec![col("k", SqlType::Int8), col("n", SqlType::Int8), col("j", SqlType::Jsonb)];
        TableSchema::new("t", columns, (vec![0], 1), Default::default(), "tabula")
    }

    fn column(index: usize, ty: SqlType) -> Box<Expr> {
        Box::new(Expr::Column { index, ty, name: String::new() })
    }

    fn lit(i: i64) -> Box<Expr> {
        Box::new(Expr::Literal(Datum::Int(i), SqlType::Int8))
    }

    #[test]
    fn conditions_only_on_stored_comparable_attributes() {
        let t = table();
        let on = |index, ty| Expr::Binary { op: BinOp::Lt, left: column(index, ty), right: lit(3) };
        assert!(fits_column_condition(&t, &on(1, SqlType::Int8)));
        // The key is the row's address, not a cell; jsonb does not compare as its stored text does.
        assert!(!fits_column_condition(&t, &on(0, SqlType::Int8)));
        assert!(!fits_column_condition(&t, &on(2, SqlType::Jsonb)));
        // NOT (n < 3) is n >= 3 for the engine; a NULL constant leaves the general path to decide.
        let not = Expr::Not(Box::new(on(1, SqlType::Int8)));
        let c = column_condition(&t, &not, &mut |_, _| Ok(Some(Value::Integer(3)))).unwrap();
        assert!(matches!(c, Some(ColumnCondition::Single { op: CompareOp::Ge, .. })));
        assert!(column_condition(&t, &not, &mut |_, _| Ok(None)).unwrap().is_none());
    }

    #[test]
    fn increments_of_bigint_columns_only() {
        let add = |l: Box<Expr>, r: Box<Expr>| Expr::Binary { op: BinOp::Add, left: l, right: r };
        assert!(increment_of(&add(column(1, SqlType::Int8), lit(2)), 1).is_some());
        assert!(increment_of(&add(lit(2), column(1, SqlType::Int8)), 1).is_some());
        assert!(increment_of(&add(column(1, SqlType::Int4), lit(2)), 1).is_none());
        assert!(increment_of(&add(column(1, SqlType::Int8), column(1, SqlType::Int8)), 1).is_none());
    }
}
