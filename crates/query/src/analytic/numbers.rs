//! Numbers rounded as PostgreSQL rounds them, where DataFusion's planner differs.
//!
//! Floating point values are rounded to the nearest integer, ties to even (C's
//! `rint`), when a `double precision` or `real` is cast to an integer type or given to one-argument
//! `round`. PostgreSQL gives 2 for `1.5::float8::int`, 2 for `2.5::float8::int` and 0 for
//! `round(0.5::float8)`; DataFusion's cast truncates (1, 2, and `999.5` to 999) and its `round` takes ties
//! away from zero (1). `round(numeric)` takes ties away from zero in both, and is left alone.
//! `round(double precision, n)` does not exist in PostgreSQL (42883): only a numeric is rounded to places.
//!
//! A `numeric` cast to an integer type rounds too, ties away from zero (`2.5::numeric::int` is 3), where
//! DataFusion's cast of its decimals truncates (2).
//!
//! A quotient of numerics, and `avg` of integers and numerics, are PostgreSQL's (`quotient`), and so are
//! their variances and standard deviations (`variance`).
//! `trunc`, `ceil`, `floor` and `round` of a numeric to a whole number have no decimals (`trunc(1.50)` is
//! 1, where DataFusion keeps the argument's scale: 1.00), and `trunc(x, n)` has `n`.
//!
//! The plan is rewritten once it is built, before DataFusion types it: each such cast or call gets
//! [`Rint`] around its argument, each such quotient and `avg` a call of `quotient`'s functions. Names are kept, so a column is still called
//! what PostgreSQL calls it.

use std::sync::Arc;

use crate::error::QueryError;
use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Float32Type, Float64Type};
use datafusion::common::tree_node::Transformed;
use datafusion::common::DFSchemaRef;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::{ScalarFunction, WindowFunctionDefinition};
use datafusion::logical_expr::{
    AggregateUDF, BinaryExpr, Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TryCast, Volatility,
};

use super::quotient::{places, NumericDiv, PgAvg, QUOTIENT_SCALE};
use super::variance::{Kind, PgVariance};

/// Rounds to the nearest integer, keeping the type: a float's ties to even, a decimal's away from zero.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Rint {
    signature: Signature,
}

impl Rint {
    pub fn new() -> Self {
        Rint { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for Rint {
    fn name(&self) -> &str {
        "tabula_rint"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let values = args.args[0].clone().into_array(args.number_rows)?;
        let out: ArrayRef = match values.data_type() {
            DataType::Float64 => Arc::new(values.as_primitive::<Float64Type>().unary::<_, Float64Type>(f64::round_ties_even)),
            DataType::Float32 => Arc::new(values.as_primitive::<Float32Type>().unary::<_, Float32Type>(f32::round_ties_even)),
            DataType::Decimal128(precision, scale) if *scale > 0 => {
                let unit = 10i128.pow(*scale as u32);
                let rounded = values.as_primitive::<Decimal128Type>().unary::<_, Decimal128Type>(|v| {
                    let (whole, part) = (v / unit, v % unit);
                    let up = part.abs() * 2 >= unit;
                    (whole + if up { v.signum() } else { 0 }) * unit
                });
                Arc::new(rounded.with_precision_and_scale(*precision, *scale)?)
            }
            other => return Err(DataFusionError::Internal(format!("tabula_rint of {other}"))),
        };
        Ok(ColumnarValue::Array(out))
    }
}

/// The functions the plan calls where PostgreSQL's numbers differ from DataFusion's, made once.
pub struct NumberFunctions {
    rint: Arc<ScalarUDF>,
    div: Arc<ScalarUDF>,
    avg: Arc<AggregateUDF>,
    /// `variance::Kind`'s four statistics, in its order.
    statistics: Vec<(Kind, Arc<AggregateUDF>)>,
}

impl NumberFunctions {
    pub fn new() -> Self {
        NumberFunctions {
            rint: Arc::new(ScalarUDF::new_from_impl(Rint::new())),
            div: Arc::new(ScalarUDF::new_from_impl(NumericDiv::new())),
            avg: Arc::new(AggregateUDF::new_from_impl(PgAvg::new())),
            statistics: [Kind::VarPop, Kind::VarSamp, Kind::StddevPop, Kind::StddevSamp]
                .into_iter()
                .map(|k| (k, Arc::new(AggregateUDF::new_from_impl(PgVariance::new(k)))))
                .collect(),
        }
    }
}

impl NumberFunctions {
    /// PostgreSQL's aggregate for DataFusion's aggregate `name` of an integer or a numeric, where they
    /// differ: `avg`, and the variances and standard deviations.
    fn aggregate(&self, name: &str) -> Option<Arc<AggregateUDF>> {
        if name == "avg" {
            return Some(Arc::clone(&self.avg));
        }
        let kind = Kind::of(name)?;
        self.statistics.iter().find(|(k, _)| *k == kind).map(|(_, u)| Arc::clone(u))
    }
}

/// The plan with PostgreSQL's numbers where DataFusion's differ (the module's doc).
pub fn as_postgres(plan: LogicalPlan, functions: &NumberFunctions) -> Result<LogicalPlan> {
    super::plan_rewrite::rewrite_expressions(plan, |e, schema| rewrite(e, schema, functions))
}

fn rewrite(e: Expr, schema: &DFSchemaRef, functions: &NumberFunctions) -> Result<Transformed<Expr>> {
    let rint = &functions.rint;
    // A type that cannot be told here (an outer column, an untyped parameter) is not a float's.
    let is_float = |x: &Expr| matches!(x.get_type(schema.as_ref()), Ok(DataType::Float64 | DataType::Float32));
    let is_fraction = |x: &Expr| match x.get_type(schema.as_ref()) {
        Ok(DataType::Float64 | DataType::Float32) => true,
        Ok(DataType::Decimal128(_, scale)) => scale > 0,
        _ => false,
    };
    let rounded = |x: Expr| Expr::ScalarFunction(ScalarFunction::new_udf(Arc::clone(rint), vec![x]));
    let scale = |x: &Expr| match x.get_type(schema.as_ref()) {
        Ok(DataType::Decimal128(_, s)) => Some(s),
        Ok(t) if t.is_integer() => Some(0),
        _ => None,
    };
    let is_decimal = |x: &Expr| matches!(x.get_type(schema.as_ref()), Ok(DataType::Decimal128(..)));
    let exact = |x: &Expr| x.get_type(schema.as_ref()).is_ok_and(|t| places(&t).is_some());
    let whole = |x: Expr, places: i8| Expr::Cast(Cast::new(Box::new(x), DataType::Decimal128(38, places)));
    let quotient = |x: &Expr| matches!(x.get_type(schema.as_ref()), Ok(DataType::Decimal128(38, s)) if s == QUOTIENT_SCALE as i8);
    Ok(match e {
        // A quotient cast to `numeric` keeps its digits, as PostgreSQL's cast to an unconstrained numeric
        // changes nothing; the cast would cut them to the 10 places such values carry here.
        Expr::Cast(c) if *c.field.data_type() == DataType::Decimal128(38, super::arrow::NUMERIC_SCALE) && quotient(&c.expr) => {
            Transformed::yes(*c.expr)
        }
        Expr::BinaryExpr(BinaryExpr { left, op: Operator::Divide, right })
            if (is_decimal(&left) || is_decimal(&right)) && exact(&left) && exact(&right) =>
        {
            Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::clone(&functions.div), vec![*left, *right])))
        }
        // `avg(DISTINCT x)` too (`PgAvg` keeps the distinct values); the variances of distinct values stay DataFusion's.
        Expr::AggregateFunction(mut f)
            if f.params.args.len() == 1 && (!f.params.distinct || f.func.name() == "avg") && exact(&f.params.args[0]) =>
        {
            match functions.aggregate(f.func.name()) {
                Some(udaf) => {
                    f.func = udaf;
                    Transformed::yes(Expr::AggregateFunction(f))
                }
                None => Transformed::no(Expr::AggregateFunction(f)),
            }
        }
        Expr::WindowFunction(mut w) if w.params.args.len() == 1 && !w.params.distinct && exact(&w.params.args[0]) => {
            let replacement = match &w.fun {
                WindowFunctionDefinition::AggregateUDF(u) => functions.aggregate(u.name()),
                _ => None,
            };
            match replacement {
                Some(udaf) => {
                    w.fun = WindowFunctionDefinition::AggregateUDF(udaf);
                    Transformed::yes(Expr::WindowFunction(w))
                }
                None => Transformed::no(Expr::WindowFunction(w)),
            }
        }
        // `1e3` is parsed as 1 with scale -3, which nothing downstream expects: 1000 with scale 0.
        Expr::Literal(ScalarValue::Decimal128(Some(v), _, s), m) if s < 0 => {
            let whole =
                10i128.checked_pow(s.unsigned_abs().into()).and_then(|f| v.checked_mul(f)).filter(|v| v.unsigned_abs() < 10u128.pow(38));
            let whole = whole.ok_or_else(|| {
                DataFusionError::External(Box::new(QueryError::NumericOutOfRange("value overflows numeric format".into())))
            })?;
            Transformed::yes(Expr::Literal(ScalarValue::Decimal128(Some(whole), 38, 0), m))
        }
        // A numeric made whole has no decimals, and its sign is a numeric (DataFusion's signum is a
        // double); `trunc(x, n)` has n.
        Expr::ScalarFunction(f)
            if (matches!(f.func.name(), "trunc" | "ceil" | "floor" | "round") && scale(&f.args[0]).is_some_and(|s| s > 0)
                || f.func.name() == "signum")
                && f.args.len() == 1
                && is_decimal(&f.args[0]) =>
        {
            Transformed::yes(whole(Expr::ScalarFunction(f), 0))
        }
        Expr::ScalarFunction(f) if f.func.name() == "trunc" && f.args.len() == 2 && is_decimal(&f.args[0]) => match &f.args[1] {
            Expr::Literal(v, _) if v.cast_to(&DataType::Int8).is_ok_and(|n| matches!(n, ScalarValue::Int8(Some(n)) if n >= 0)) => {
                let ScalarValue::Int8(Some(n)) = v.cast_to(&DataType::Int8)? else { unreachable!() };
                Transformed::yes(whole(Expr::ScalarFunction(f), n))
            }
            _ => Transformed::no(Expr::ScalarFunction(f)),
        },
        Expr::Cast(Cast { expr, field }) if field.data_type().is_integer() && is_fraction(&expr) => {
            Transformed::yes(Expr::Cast(Cast { expr: Box::new(rounded(*expr)), field }))
        }
        Expr::TryCast(TryCast { expr, field }) if field.data_type().is_integer() && is_fraction(&expr) => {
            Transformed::yes(Expr::TryCast(TryCast { expr: Box::new(rounded(*expr)), field }))
        }
        Expr::ScalarFunction(f) if f.func.name() == "round" && f.args.len() == 1 && is_float(&f.args[0]) => {
            let mut args = f.args;
            Transformed::yes(rounded(args.remove(0)))
        }
        // PostgreSQL rounds to decimal places only a numeric.
        Expr::ScalarFunction(f) if f.func.name() == "round" && f.args.len() == 2 && is_float(&f.args[0]) => {
            return Err(DataFusionError::External(Box::new(QueryError::UndefinedFunction("round(double precision, integer)".into()))))
        }
        other => Transformed::no(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Float64Array;
    use datafusion::arrow::datatypes::Field;
    use datafusion::config::ConfigOptions;

    #[test]
    fn ties_go_to_the_even_integer() {
        let values: ArrayRef =
            Arc::new(Float64Array::from(vec![Some(0.5), Some(1.5), Some(2.5), Some(-0.5), Some(999.5), None, Some(1.4)]));
        let out = Rint::new()
            .invoke_with_args(ScalarFunctionArgs {
                args: vec![ColumnarValue::Array(values)],
                arg_fields: vec![Arc::new(Field::new("x", DataType::Float64, true))],
                number_rows: 7,
                return_field: Arc::new(Field::new("x", DataType::Float64, true)),
                config_options: Arc::new(ConfigOptions::default()),
            })
            .unwrap()
            .into_array(7)
            .unwrap();
        let out: Vec<Option<f64>> = out.as_primitive::<Float64Type>().iter().collect();
        assert_eq!(out, vec![Some(0.0), Some(2.0), Some(2.0), Some(-0.0), Some(1000.0), None, Some(1.0)]);
    }

    #[test]
    fn a_decimal_rounds_ties_away_from_zero() {
        use datafusion::arrow::array::Decimal128Array;
        // 2.5, -2.5, 2.49, -0.5, 7 at scale 2.
        let values = Decimal128Array::from(vec![250, -250, 249, -50, 700]).with_precision_and_scale(10, 2).unwrap();
        let out = Rint::new()
            .invoke_with_args(ScalarFunctionArgs {
                args: vec![ColumnarValue::Array(Arc::new(values))],
                arg_fields: vec![Arc::new(Field::new("x", DataType::Decimal128(10, 2), true))],
                number_rows: 5,
                return_field: Arc::new(Field::new("x", DataType::Decimal128(10, 2), true)),
                config_options: Arc::new(ConfigOptions::default()),
            })
            .unwrap()
            .into_array(5)
            .unwrap();
        let out: Vec<i128> = out.as_primitive::<Decimal128Type>().values().to_vec();
        assert_eq!(out, vec![300, -300, 200, -100, 700]);
    }
}
