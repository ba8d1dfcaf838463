//! `width_bucket(operand, low, high, count)`: which of `count` equal buckets between the bounds holds the
//! operand (0 below them, `count + 1` past them; bounds may be given high to low), as PostgreSQL's
//! `width_bucket_float8` and `width_bucket_numeric` compute it: a double form that truncates
//! `count * (operand - low) / (high - low)`, and a numeric one, chosen as PostgreSQL resolves the call,
//! that divides exactly. Errors are PostgreSQL's 2201G.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int32Array};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int32Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};
use num_bigint::BigInt;
use num_traits::ToPrimitive;

use crate::error::QueryError;
use crate::types::numeric::Fixed;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct WidthBucket {
    signature: Signature,
}

impl WidthBucket {
    pub fn new() -> Self {
        WidthBucket { signature: Signature::user_defined(Volatility::Immutable) }
    }
}

fn refuse(sqlstate: &'static str, message: &str) -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::Engine { sqlstate, message: message.to_string() }))
}

fn past_the_last(count: i32) -> Result<i32> {
    count.checked_add(1).ok_or_else(|| refuse("22003", "integer out of range"))
}

/// `width_bucket_float8`.
fn float_bucket(x: f64, low: f64, high: f64, count: i32) -> Result<i32> {
    if count <= 0 {
        return Err(refuse("2201G", "count must be greater than zero"));
    }
    if x.is_nan() || low.is_nan() || high.is_nan() {
        return Err(refuse("2201G", "operand, lower bound, and upper bound cannot be NaN"));
    }
    if low.is_infinite() || high.is_infinite() {
        return Err(refuse("2201G", "lower and upper bounds must be finite"));
    }
    let inside = |from: f64, span: f64| -> i32 {
        // C's conversion of the double to an int: truncation (saturating here where C's is undefined).
        let b = (f64::from(count) * (from / span)) as i32;
        b.min(count - 1) + 1
    };
    if low < high {
        if x < low {
            Ok(0)
        } else if x >= high {
            past_the_last(count)
        } else if (high - low).is_finite() {
            Ok(inside(x - low, high - low))
        } else {
            Ok(inside(x / 2.0 - low / 2.0, high / 2.0 - low / 2.0))
        }
    } else if low > high {
        if x > low {
            Ok(0)
        } else if x <= high {
            past_the_last(count)
        } else if (low - high).is_finite() {
            Ok(inside(low - x, low - high))
        } else {
            Ok(inside(low / 2.0 - x / 2.0, low / 2.0 - high / 2.0))
        }
    } else {
        Err(refuse("2201G", "lower bound cannot equal upper bound"))
    }
}

/// `width_bucket_numeric`: exact differences, their quotient truncated.
fn numeric_bucket(x: Fixed, low: Fixed, high: Fixed, count: i32) -> Result<i32> {
    if count <= 0 {
        return Err(refuse("2201G", "count must be greater than zero"));
    }
    let scale = x.scale.max(low.scale).max(high.scale);
    let at = |v: Fixed| BigInt::from(v.mantissa) * num_traits::pow(BigInt::from(10), (scale - v.scale) as usize);
    let (x, low, high) = (at(x), at(low), at(high));
    let bucket = |from: BigInt, span: BigInt| -> Result<i32> {
        (from * BigInt::from(count) / span + BigInt::from(1)).to_i32().ok_or_else(|| refuse("22003", "integer out of range"))
    };
    match low.cmp(&high) {
        std::cmp::Ordering::Equal => Err(refuse("2201G", "lower bound cannot equal upper bound")),
        std::cmp::Ordering::Less if x < low => Ok(0),
        std::cmp::Ordering::Less if x >= high => past_the_last(count),
        std::cmp::Ordering::Less => bucket(&x - &low, &high - &low),
        std::cmp::Ordering::Greater if x > low => Ok(0),
        std::cmp::Ordering::Greater if x <= high => past_the_last(count),
        std::cmp::Ordering::Greater => bucket(&low - &x, &low - &high),
    }
}

/// Whether a call with these argument types is PostgreSQL's numeric form: a numeric among the first
/// three and no float.
fn numeric_form(types: &[DataType]) -> bool {
    let bounds = &types[..types.len().min(3)];
    bounds.iter().any(|t| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..)))
        && !bounds.iter().any(|t| matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64))
}

impl ScalarUDFImpl for WidthBucket {
    fn name(&self) -> &str {
        "width_bucket"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let numbers = |t: &DataType| t.is_numeric() || matches!(t, DataType::Null | DataType::Utf8);
        if arg_types.len() != 4 || !arg_types.iter().all(numbers) {
            let names: Vec<&str> = arg_types.iter().map(|t| super::arrow::sql_type_of(t).pg_name()).collect();
            let e = QueryError::UndefinedFunction(format!("width_bucket({})", names.join(", ")));
            return Err(DataFusionError::External(Box::new(e)));
        }
        let numeric = numeric_form(arg_types);
        let bound = |t: &DataType| match t {
            _ if !numeric => DataType::Float64,
            DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => DataType::Decimal128(38, *s),
            DataType::Utf8 => DataType::Decimal128(38, super::arrow::NUMERIC_SCALE),
            _ => DataType::Decimal128(38, 0),
        };
        Ok(vec![bound(&arg_types[0]), bound(&arg_types[1]), bound(&arg_types[2]), DataType::Int32])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let a = super::arrays(&args)?;
        let rows = a.first().map_or(1, |a| a.len());
        let numeric = matches!(a[0].data_type(), DataType::Decimal128(..));
        let out = (0..rows)
            .map(|i| {
                if a.iter().any(|c| c.is_null(i)) {
                    return Ok(None);
                }
                let count = a[3].as_primitive::<Int32Type>().value(i);
                if numeric {
                    let f = |c: usize| super::quotient::fixed_at(&a[c], i).map(|v| v.expect("not NULL"));
                    numeric_bucket(f(0)?, f(1)?, f(2)?, count).map(Some)
                } else {
                    let f = |c: usize| a[c].as_primitive::<Float64Type>().value(i);
                    float_bucket(f(0), f(1), f(2), count).map(Some)
                }
            })
            .collect::<Result<Int32Array>>()?;
        super::columnar(&args.args, Arc::new(out))
    }
}
