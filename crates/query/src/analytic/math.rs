//! PostgreSQL's domain errors for the math functions, where DataFusion's answer a value no number is:
//! `ln(0)` is -Infinity there and `asin(2)` NaN, `exp(1000.0)` Infinity, `power(-8.0, 0.5)` NaN, and
//! `sqrt(-1.0)` fails with an internal message. PostgreSQL refuses each: 2201E for a logarithm of zero or of
//! a negative number, 2201F for a power or square root without a real result, 22003 for an argument out of
//! range or a result that overflows. The wrapper (`guarded`) checks the arguments of each row first, and the
//! result for an overflow after, around DataFusion's function.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};

use super::guarded::{Check, Guarded};
use crate::error::QueryError;

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
