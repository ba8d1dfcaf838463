//! Integers typed and checked as PostgreSQL types and checks them, where DataFusion's planner differs.
//!
//! - A constant integer is an `integer` when it fits 32 bits (PostgreSQL's rule), where DataFusion's is
//!   always a `bigint`: `SELECT x FROM (SELECT 1 AS x) s` answers an int4 column, and `int4_col + 1` is an
//!   `integer`.
//! - `+ - * / %` of two integers have the wider operand's type (`smallint + smallint` is a `smallint`) and
//!   fail with 22003 (`integer out of range`) where the result does not fit it. DataFusion's arithmetic
//!   wraps around: `9223372036854775807::int8 + 1` was `-9223372036854775808`, silently. Division by zero
//!   is 22012; `x % -1` is 0 for every `x`, as PostgreSQL special-cases it.
//! - `sum` of a `bigint` is a `numeric`, as in PostgreSQL, where DataFusion's wrapped around past 2^63.
//!
//! The plan is rewritten once it is built, before DataFusion types it: each such operation becomes a call
//! of [`CheckedArith`], each `sum(bigint)` sums the values cast to `numeric`. Names are kept.

use std::sync::Arc;

use crate::error::QueryError;
use datafusion::arrow::array::{ArrayRef, AsArray, PrimitiveArray};
use datafusion::arrow::compute::kernels::arity::try_binary;
use datafusion::arrow::datatypes::{ArrowNativeTypeOp, ArrowPrimitiveType, DataType, Int16Type, Int32Type, Int64Type};
use datafusion::arrow::error::ArrowError;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchemaRef, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::{Alias, ScalarFunction, WindowFunctionDefinition};
use datafusion::logical_expr::{
    BinaryExpr, Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// `left op right` of two integers of one type, checked: the arithmetic of PostgreSQL's `int2pl`,
/// `int4mul`, `int8div`, ... (named `int_plus`, `int_multiply`, ... here).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CheckedArith {
    op: Operator,
    name: String,
    signature: Signature,
}

impl CheckedArith {
    fn new(op: Operator) -> Self {
        let name = format!("int_{}", format!("{op:?}").to_lowercase());
        CheckedArith { op, name, signature: Signature::any(2, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for CheckedArith {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = super::arrays(&args)?;
        let (left, right) = (&arrays[0], &arrays[1]);
        let out: ArrayRef = match left.data_type() {
            DataType::Int16 => Arc::new(apply::<Int16Type>(self.op, left, right, "smallint")?),
            DataType::Int32 => Arc::new(apply::<Int32Type>(self.op, left, right, "integer")?),
            DataType::Int64 => Arc::new(apply::<Int64Type>(self.op, left, right, "bigint")?),
            other => return Err(DataFusionError::Internal(format!("{} of {other}", self.name))),
        };
        super::columnar(&args.args, out)
    }
}

fn apply<T>(op: Operator, left: &ArrayRef, right: &ArrayRef, type_name: &str) -> Result<PrimitiveArray<T>>
where
    T: ArrowPrimitiveType,
{
    let (l, r) = (left.as_primitive::<T>(), right.as_primitive::<T>());
    let minus_one = T::Native::ONE.neg_wrapping();
    let result = match op {
        Operator::Plus => try_binary(l, r, |a, b| a.add_checked(b)),
        Operator::Minus => try_binary(l, r, |a, b| a.sub_checked(b)),
        Operator::Multiply => try_binary(l, r, |a, b| a.mul_checked(b)),
        Operator::Divide => try_binary(l, r, |a, b| a.div_checked(b)),
        // PostgreSQL answers 0 for `x % -1`, the minimum value's included.
        Operator::Modulo => try_binary(l, r, |a, b| if b == minus_one { Ok(T::Native::ZERO) } else { a.mod_checked(b) }),
        other => return Err(DataFusionError::Internal(format!("checked integer {other}"))),
    };
    result.map_err(|e| {
        let q = match e {
            ArrowError::DivideByZero => QueryError::DivisionByZero,
            _ => QueryError::NumericOutOfRange(format!("{type_name} out of range")),
        };
        DataFusionError::External(Box::new(q))
    })
}

/// The plan with PostgreSQL's integers where DataFusion's differ (the module's doc).
pub fn as_postgres(plan: LogicalPlan) -> Result<LogicalPlan> {
    let ops: Vec<Arc<ScalarUDF>> = [Operator::Plus, Operator::Minus, Operator::Multiply, Operator::Divide, Operator::Modulo]
        .into_iter()
        .map(|op| Arc::new(ScalarUDF::new_from_impl(CheckedArith::new(op))))
        .collect();
    let plan = projected_constants(plan)?;
    super::plan_rewrite::rewrite_expressions(plan, |e, schema| rewrite(e, schema, &ops))
}

/// `plan` with each constant integer a projection gives as a column (`SELECT 1 AS x`) an `integer` when
/// it fits 32 bits, named as before. Not in a recursive query, whose recursive part was typed by its
/// first part's columns as DataFusion typed them (`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1
/// ...)` stays a `bigint`).
fn projected_constants(plan: LogicalPlan) -> Result<LogicalPlan> {
    let recursive = plan.exists(|n| Ok(matches!(n, LogicalPlan::RecursiveQuery(_))))?;
    if recursive {
        return Ok(plan);
    }
    let mut changed = false;
    plan.transform_up_with_subqueries(|node| {
        let node = if changed { node.recompute_schema()? } else { node };
        let LogicalPlan::Projection(p) = node else { return Ok(Transformed::no(node)) };
        let narrowed = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Int64(Some(v)), m) => {
                i32::try_from(*v).ok().map(|v| Expr::Literal(ScalarValue::Int32(Some(v)), m.clone()))
            }
            _ => None,
        };
        if !p.expr.iter().any(|e| narrowed(e).is_some() || matches!(e, Expr::Alias(a) if narrowed(&a.expr).is_some())) {
            return Ok(Transformed::no(LogicalPlan::Projection(p)));
        }
        let exprs = p
            .expr
            .into_iter()
            .map(|e| match e {
                Expr::Alias(Alias { expr, relation, name, metadata }) => match narrowed(&expr) {
                    Some(n) => Expr::Alias(Alias { expr: Box::new(n), relation, name, metadata }),
                    None => Expr::Alias(Alias { expr, relation, name, metadata }),
                },
                e => match narrowed(&e) {
                    Some(n) => n.alias(e.schema_name().to_string()),
                    None => e,
                },
            })
            .collect();
        changed = true;
        Ok(Transformed::yes(LogicalPlan::Projection(datafusion::logical_expr::Projection::try_new(exprs, p.input)?)))
    })
    .map(|t| t.data)
}

/// `left << count` or `left >> count` as PostgreSQL's `int4shl`, `int8shr`, ...: of the left operand's
/// type, the count taken modulo its width in bits as the processor's shift does (`3 << 40` is 768 in an
/// `integer`). Arrow's shift wraps the count the same way in the operands' type, which the count is cast
/// to. A `smallint` is shifted as an `integer` and keeps its low 16 bits (`1::int2 << 16` is 0), as C's
/// conversion back does: the low bits are masked and their sign bit extended, `(v & 65535 # 32768) - 32768`.
fn shift(left: Expr, op: Operator, count: Expr, schema: &DFSchemaRef) -> Expr {
    let t = pg_type(&left, schema).unwrap_or(DataType::Int64);
    let of = |e: Expr, t: &DataType| Box::new(as_type(e, schema, t));
    if t != DataType::Int16 {
        return Expr::BinaryExpr(BinaryExpr::new(of(left, &t), op, of(count, &t)));
    }
    let int = |v: i32| Box::new(Expr::Literal(ScalarValue::Int32(Some(v)), None));
    let shifted = Expr::BinaryExpr(BinaryExpr::new(of(left, &DataType::Int32), op, of(count, &DataType::Int32)));
    let low = Expr::BinaryExpr(BinaryExpr::new(Box::new(shifted), Operator::BitwiseAnd, int(65535)));
    let flipped = Expr::BinaryExpr(BinaryExpr::new(Box::new(low), Operator::BitwiseXor, int(32768)));
    let signed = Expr::BinaryExpr(BinaryExpr::new(Box::new(flipped), Operator::Minus, int(32768)));
    Expr::Cast(Cast::new(Box::new(signed), DataType::Int16))
}

/// The width of an integer type, 0 for another type.
fn width(t: &DataType) -> u8 {
    match t {
        DataType::Int16 => 2,
        DataType::Int32 => 4,
        DataType::Int64 => 8,
        _ => 0,
    }
}

fn of_width(w: u8) -> DataType {
    match w {
        2 => DataType::Int16,
        4 => DataType::Int32,
        _ => DataType::Int64,
    }
}

/// The type PostgreSQL gives `e`: a constant `bigint` that fits 32 bits is an `integer`.
fn pg_type(e: &Expr, schema: &DFSchemaRef) -> Option<DataType> {
    match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), _) if i32::try_from(*v).is_ok() => Some(DataType::Int32),
        Expr::Negative(inner) if matches!(inner.as_ref(), Expr::Literal(ScalarValue::Int64(Some(v)), _) if i32::try_from(-*v).is_ok()) => {
            Some(DataType::Int32)
        }
        _ => e.get_type(schema.as_ref()).ok(),
    }
}

/// The integer type PostgreSQL gives values that must share one (a CASE's branches, coalesce's
/// arguments): the widest of theirs, a constant that fits 32 bits being an `integer`. `None` when they
/// are not all integers (a NULL takes any type) or already have it.
fn common_integer<'a>(values: impl Iterator<Item = &'a Expr> + Clone, schema: &DFSchemaRef) -> Option<DataType> {
    let pg_width = |e: &Expr| pg_type(e, schema).map(|t| width(&t));
    let is_null = |e: &Expr| matches!(e, Expr::Literal(v, _) if v.is_null());
    let mut widths = values.clone().filter(|e| !is_null(e)).map(pg_width);
    let widest = widths.clone().max()??;
    if widths.any(|w| w.is_none_or(|w| w == 0)) {
        return None;
    }
    let t = of_width(widest);
    values.filter(|e| !is_null(e)).any(|e| e.get_type(schema.as_ref()).ok().as_ref() != Some(&t)).then_some(t)
}

/// `e` as a value of type `t`: a constant converted, anything else cast.
fn as_type(e: Expr, schema: &DFSchemaRef, t: &DataType) -> Expr {
    if let Expr::Literal(v, _) = &e {
        if let Ok(c) = v.cast_to(t) {
            return Expr::Literal(c, None);
        }
    }
    if e.get_type(schema.as_ref()).is_ok_and(|from| &from == t) {
        return e;
    }
    Expr::Cast(Cast::new(Box::new(e), t.clone()))
}

fn rewrite(e: Expr, schema: &DFSchemaRef, ops: &[Arc<ScalarUDF>]) -> Result<Transformed<Expr>> {
    let index = |op: Operator| match op {
        Operator::Plus => Some(0),
        Operator::Minus => Some(1),
        Operator::Multiply => Some(2),
        Operator::Divide => Some(3),
        Operator::Modulo => Some(4),
        _ => None,
    };
    let is_bigint = |x: &Expr| matches!(x.get_type(schema.as_ref()), Ok(DataType::Int64));
    Ok(match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if index(op).is_some() => {
            let (lt, rt) = (pg_type(&left, schema), pg_type(&right, schema));
            let (Some(lt), Some(rt)) = (lt, rt) else { return Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right }))) };
            let w = width(&lt).max(width(&rt));
            if width(&lt) == 0 || width(&rt) == 0 {
                return Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })));
            }
            let t = of_width(w);
            let args = vec![as_type(*left, schema, &t), as_type(*right, schema, &t)];
            let udf = Arc::clone(&ops[index(op).unwrap_or_default()]);
            Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(udf, args)))
        }
        // `&`, `|` and `#` of two integers have the wider operand's type, a constant that fits 32 bits
        // being an `integer` (DataFusion's constant is a `bigint`, so `int4_col & 3` was a `bigint`).
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(op, Operator::BitwiseAnd | Operator::BitwiseOr | Operator::BitwiseXor)
                && common_integer([left.as_ref(), right.as_ref()].into_iter(), schema).is_some() =>
        {
            let t = common_integer([left.as_ref(), right.as_ref()].into_iter(), schema).unwrap_or(DataType::Int64);
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(as_type(*left, schema, &t)),
                op,
                Box::new(as_type(*right, schema, &t)),
            )))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(op, Operator::BitwiseShiftLeft | Operator::BitwiseShiftRight)
                && width(&pg_type(&left, schema).unwrap_or(DataType::Null)) > 0
                && width(&pg_type(&right, schema).unwrap_or(DataType::Null)) > 0 =>
        {
            Transformed::yes(shift(*left, op, *right, schema))
        }
        // The branches of a CASE, and the arguments of coalesce and its kin, were typed alike when the plan
        // was built; an integer narrowed below (`4 % 2` is an `integer` now) would make the CASE take the
        // first branch's type where PostgreSQL's is the widest (`CASE WHEN c THEN 4 % 2 ELSE k END` of a
        // bigint `k` is a bigint), and `sum` over it a `bigint` instead of a `numeric`.
        Expr::Case(mut c) => {
            let branches = || c.when_then_expr.iter().map(|(_, t)| t.as_ref()).chain(c.else_expr.as_deref());
            let Some(t) = common_integer(branches(), schema) else { return Ok(Transformed::no(Expr::Case(c))) };
            for (_, then) in &mut c.when_then_expr {
                **then = as_type(then.as_ref().clone(), schema, &t);
            }
            if let Some(e) = c.else_expr.as_mut() {
                **e = as_type(e.as_ref().clone(), schema, &t);
            }
            Transformed::yes(Expr::Case(c))
        }
        Expr::ScalarFunction(mut f) if matches!(f.func.name(), "coalesce" | "nullif" | "greatest" | "least") && f.args.len() > 1 => {
            let Some(t) = common_integer(f.args.iter(), schema) else { return Ok(Transformed::no(Expr::ScalarFunction(f))) };
            f.args = f.args.into_iter().map(|a| as_type(a, schema, &t)).collect();
            Transformed::yes(Expr::ScalarFunction(f))
        }
        // `pg_typeof(1)` is `integer`, and so is `abs(1)` (DataFusion's of a `bigint` constant is a `bigint`).
        Expr::ScalarFunction(mut f)
            if matches!(f.func.name(), "pg_typeof" | "abs")
                && f.args.len() == 1
                && pg_type(&f.args[0], schema) == Some(DataType::Int32) =>
        {
            let arg = f.args.remove(0);
            f.args.push(as_type(arg, schema, &DataType::Int32));
            Transformed::yes(Expr::ScalarFunction(f))
        }
        Expr::AggregateFunction(mut f) if f.func.name() == "sum" && f.params.args.len() == 1 && is_bigint(&f.params.args[0]) => {
            let arg = f.params.args.remove(0);
            f.params.args.push(Expr::Cast(Cast::new(Box::new(arg), DataType::Decimal128(38, 0))));
            Transformed::yes(Expr::AggregateFunction(f))
        }
        Expr::WindowFunction(mut w)
            if matches!(&w.fun, WindowFunctionDefinition::AggregateUDF(u) if u.name() == "sum")
                && w.params.args.len() == 1
                && is_bigint(&w.params.args[0]) =>
        {
            let arg = w.params.args.remove(0);
            w.params.args.push(Expr::Cast(Cast::new(Box::new(arg), DataType::Decimal128(38, 0))));
            Transformed::yes(Expr::WindowFunction(w))
        }
        other => Transformed::no(other),
    })
}
