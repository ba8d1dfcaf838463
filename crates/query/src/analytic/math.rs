//! PostgreSQL's domain errors for the math functions, where DataFusion's answer a value no number is:
//! `ln(0)` is -Infinity there and `asin(2)` NaN, `exp(1000.0)` Infinity, `power(-8.0, 0.5)` NaN, and
//! `sqrt(-1.0)` fails with an internal message. PostgreSQL refuses each: 2201E for a logarithm of zero or of
//! a negative number, 2201F for a power or square root without a real result, 22003 for an argument out of
//! range or a result that overflows. The wrapper (`guarded`) checks the arguments of each row first, and the
//! result for an overflow after, around DataFusion's function.
//!
//! `sqrt`, `exp`, `ln`, `log`, `log10` and `power` also have PostgreSQL's numeric forms: a call whose
//! arguments choose one (a numeric and no float) is computed on decimals (`types::numeric_math`) instead.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};
use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive};

use super::guarded::{Check, Guarded};
use crate::error::QueryError;
use crate::types::numeric::Fixed;
use crate::types::numeric_math::{self, ArgKind, MathFn};

/// What a function's arguments must meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Rule {
    /// `ln(x)`, `log10(x)`, `log([b,] x)`: every argument above zero.
    Log,
    /// `power(a, b)`: not zero to a negative power, nor a negative number to a fractional one.
    Power,
    Sqrt,
    /// `asin(x)`, `acos(x)`: x within [-1, 1].
    UnitRange,
    /// `exp(x)`: any argument; the result checked for an overflow.
    Exp,
}

/// The math functions replaced by checked ones.
pub fn checked_udfs() -> Vec<ScalarUDF> {
    use datafusion::functions::math;
    [
        (math::ln(), Rule::Log),
        (math::log10(), Rule::Log),
        (math::log(), Rule::Log),
        (math::power(), Rule::Power),
        (math::sqrt(), Rule::Sqrt),
        (math::asin(), Rule::UnitRange),
        (math::acos(), Rule::UnitRange),
        (math::exp(), Rule::Exp),
    ]
    .into_iter()
    .map(|(f, rule)| Guarded::wrap(f, Check::Domain(rule)))
    .collect()
}

fn refuse(sqlstate: &'static str, message: &str) -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::Engine { sqlstate, message: message.to_string() }))
}

/// The arguments of one row: `None` where one is NULL (the result is NULL, nothing to check).
fn row(args: &[ArrayRef], i: usize) -> Option<Vec<f64>> {
    args.iter().map(|a| (!a.is_null(i)).then(|| a.as_primitive::<Float64Type>().value(i))).collect()
}

fn check_row(rule: Rule, x: &[f64]) -> Result<()> {
    match (rule, x) {
        (Rule::Log, _) if x.contains(&0.0) => Err(refuse("2201E", "cannot take logarithm of zero")),
        (Rule::Log, _) if x.iter().any(|v| *v < 0.0) => Err(refuse("2201E", "cannot take logarithm of a negative number")),
        (Rule::Power, [a, b]) if *a == 0.0 && *b < 0.0 => Err(refuse("2201F", "zero raised to a negative power is undefined")),
        (Rule::Power, [a, b]) if *a < 0.0 && b.fract() != 0.0 => {
            Err(refuse("2201F", "a negative number raised to a non-integer power yields a complex result"))
        }
        (Rule::Sqrt, [a]) if *a < 0.0 => Err(refuse("2201F", "cannot take square root of a negative number")),
        (Rule::UnitRange, [a]) if !(-1.0..=1.0).contains(a) => Err(refuse("22003", "input is out of range")),
        _ => Ok(()),
    }
}

/// The arguments as floats, one array each.
fn floats(args: &[ColumnarValue], rows: usize) -> Result<Vec<ArrayRef>> {
    args.iter().map(|a| Ok(datafusion::arrow::compute::cast(&a.to_array(rows)?, &DataType::Float64)?)).collect()
}

/// Calls `inner` with PostgreSQL's domain errors: each row's arguments checked first, and for `exp` and
/// `power` the result for an overflow after.
pub(super) fn invoke(inner: &ScalarUDF, rule: Rule, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
    let rows = args.number_rows;
    let inputs = floats(&args.args, rows)?;
    for i in 0..rows {
        if let Some(x) = row(&inputs, i) {
            check_row(rule, &x)?;
        }
    }
    let out = inner.invoke_with_args(args)?;
    // A finite argument whose result is infinite overflowed (exp(1000.0), power(10.0, 400)).
    if matches!(rule, Rule::Exp | Rule::Power) {
        let results = datafusion::arrow::compute::cast(&out.to_array(rows)?, &DataType::Float64)?;
        let results = results.as_primitive::<Float64Type>();
        for i in 0..rows {
            let finite_args = row(&inputs, i).is_some_and(|x| x.iter().all(|v| v.is_finite()));
            if finite_args && !results.is_null(i) && results.value(i).is_infinite() {
                return Err(refuse("22003", "value out of range: overflow"));
            }
        }
    }
    Ok(out)
}

/// The type of a numeric result: PostgreSQL's digits to 20 places (as a quotient's,
/// `quotient::QUOTIENT_SCALE`), printed without the trailing zeros of that fixed scale.
pub(super) const NUMERIC_RESULT: DataType = DataType::Decimal128(38, super::quotient::QUOTIENT_SCALE as i8);

/// Whether DataFusion's function `name` has a numeric form in PostgreSQL (`types::numeric_math`).
fn kinds(types: &[DataType]) -> Vec<ArgKind> {
    types
        .iter()
        .map(|t| match t {
            DataType::Float16 | DataType::Float32 | DataType::Float64 => ArgKind::Float,
            DataType::Decimal32(..) | DataType::Decimal64(..) | DataType::Decimal128(..) | DataType::Decimal256(..) => ArgKind::Numeric,
            _ => ArgKind::Other,
        })
        .collect()
}

/// Whether a call of `name` with arguments of these types is PostgreSQL's numeric form.
pub(super) fn numeric_form(name: &str, types: &[DataType]) -> bool {
    MathFn::lookup(name, types.len()).and_then(|f| f.numeric_form(&kinds(types))) == Some(true)
}

/// The types a call's arguments are cast to: decimals for the numeric form (an integer's of no places,
/// a text's of the analytic route's numeric scale), doubles for the other; 42883 where PostgreSQL has
/// no form (`log(double precision, integer)`).
pub(super) fn coerce(name: &str, types: &[DataType]) -> Result<Vec<DataType>> {
    let undefined = || {
        let names: Vec<&str> = types.iter().map(|t| super::arrow::sql_type_of(t).pg_name()).collect();
        DataFusionError::External(Box::new(QueryError::UndefinedFunction(format!("{name}({})", names.join(", ")))))
    };
    let f = MathFn::lookup(name, types.len()).ok_or_else(undefined)?;
    match f.numeric_form(&kinds(types)).ok_or_else(undefined)? {
        true => Ok(types
            .iter()
            .map(|t| match t {
                DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => DataType::Decimal128(38, *s),
                DataType::Decimal32(_, s) | DataType::Decimal64(_, s) => DataType::Decimal128(38, *s),
                DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Null => DataType::Decimal128(38, 0),
                _ => DataType::Decimal128(38, super::arrow::NUMERIC_SCALE),
            })
            .collect()),
        false => Ok(vec![DataType::Float64; types.len()]),
    }
}

/// A decimal of the analytic route's fixed scale (or more) without its trailing zeros, which are that
/// scale's and not the value's: PostgreSQL's result scale follows the argument's own.
fn own_digits(mut v: Fixed) -> Fixed {
    if v.scale >= super::arrow::NUMERIC_SCALE as u32 {
        while v.scale > 0 && v.mantissa % 10 == 0 {
            v.mantissa /= 10;
            v.scale -= 1;
        }
    }
    v
}

/// The numeric form of `name` over decimal arguments, row by row.
pub(super) fn invoke_numeric(name: &str, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
    let f = MathFn::lookup(name, args.args.len()).ok_or_else(|| DataFusionError::Internal(format!("{name} has no numeric form")))?;
    let arrays = super::arrays(&args)?;
    let rows = arrays.first().map_or(1, |a| a.len());
    let failed = |e: QueryError| DataFusionError::External(Box::new(e));
    let limit = BigInt::from(10).pow(38);
    let mut out = Vec::with_capacity(rows);
    for i in 0..rows {
        let values = arrays.iter().map(|a| super::quotient::fixed_at(a, i)).collect::<Result<Option<Vec<Fixed>>>>()?;
        let Some(values) = values else {
            out.push(None);
            continue;
        };
        let values: Vec<Fixed> = values.into_iter().map(own_digits).collect();
        let exact = numeric_math::call(f, &values).map_err(failed)?;
        let v = exact.at_scale(super::quotient::QUOTIENT_SCALE);
        if v.abs() >= limit {
            return Err(failed(QueryError::NumericOutOfRange("value overflows numeric format".into())));
        }
        out.push(v.to_i128());
    }
    let DataType::Decimal128(p, s) = NUMERIC_RESULT else { unreachable!("a decimal type") };
    let array = Decimal128Array::from(out).with_precision_and_scale(p, s)?;
    super::columnar(&args.args, Arc::new(array))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_without_a_real_result_are_postgresql_errors() {
        let state = |r, x: &[f64]| check_row(r, x).err().map(|e| crate::analytic::map_err(e).sqlstate());
        assert_eq!(state(Rule::Log, &[0.0]), Some("2201E"));
        assert_eq!(state(Rule::Log, &[-1.0]), Some("2201E"));
        assert_eq!(state(Rule::Log, &[2.0, 8.0]), None);
        assert_eq!(state(Rule::Power, &[0.0, -1.0]), Some("2201F"));
        assert_eq!(state(Rule::Power, &[-8.0, 0.5]), Some("2201F"));
        assert_eq!(state(Rule::Power, &[-8.0, 3.0]), None);
        assert_eq!(state(Rule::Sqrt, &[-0.5]), Some("2201F"));
        assert_eq!(state(Rule::UnitRange, &[1.5]), Some("22003"));
        assert_eq!(state(Rule::UnitRange, &[-1.0]), None);
    }
}
