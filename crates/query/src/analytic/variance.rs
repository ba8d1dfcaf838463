//! `var_pop`, `var_samp` (`variance`), `stddev_pop` and `stddev_samp` (`stddev`) of integers and numerics
//! as PostgreSQL computes them: a `numeric`, from the exact sums of the values and of their squares
//! (`numeric_stddev_internal`), where DataFusion answers a double. The quotient has `select_div_scale`'s
//! scale and the square root is taken to that scale, rounded; the result travels and prints as a
//! quotient does (`quotient`). Of floats, DataFusion's double is kept.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};
use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use super::quotient::{fixed_at, places, quotient_field, PLAIN_ZERO_KEY, QUOTIENT_SCALE};
use crate::error::QueryError;
use crate::types::numeric::scale_of_quotient;

/// Which of the four statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    VarPop,
    VarSamp,
    StddevPop,
    StddevSamp,
}

impl Kind {
    /// The statistic DataFusion's aggregate of this name computes (`variance` is bound to `var_samp`).
    pub fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "var_pop" => Kind::VarPop,
            "var_samp" | "var" | "variance" => Kind::VarSamp,
            "stddev_pop" => Kind::StddevPop,
            "stddev_samp" | "stddev" => Kind::StddevSamp,
            _ => return None,
        })
    }

    fn sample(self) -> bool {
        matches!(self, Kind::VarSamp | Kind::StddevSamp)
    }

    fn root(self) -> bool {
        matches!(self, Kind::StddevPop | Kind::StddevSamp)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgVariance {
    kind: Kind,
    name: String,
    signature: Signature,
}

impl PgVariance {
    pub fn new(kind: Kind) -> Self {
        PgVariance { kind, name: format!("pg_{kind:?}").to_lowercase(), signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for PgVariance {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, QUOTIENT_SCALE as i8))
    }

    fn return_field(&self, _arg_fields: &[FieldRef]) -> Result<FieldRef> {
        // The scale comes from the quotient alone (its operands' scales are below it); a variance of
        // equal values is PostgreSQL's constant zero, printed `0`.
        let field = quotient_field(self.name(), 0);
        let mut metadata = field.metadata().clone();
        metadata.insert(PLAIN_ZERO_KEY.to_string(), String::new());
        Ok(Arc::new(field.as_ref().clone().with_metadata(metadata)))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let scale = args.expr_fields.first().and_then(|f| places(f.data_type())).unwrap_or(0);
        Ok(Box::new(Sums { kind: self.kind, scale, n: 0, sum: BigInt::zero(), squares: BigInt::zero() }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(format!("{}[n]", args.name), DataType::Int64, true)),
            Arc::new(Field::new(format!("{}[sum]", args.name), DataType::Binary, true)),
            Arc::new(Field::new(format!("{}[squares]", args.name), DataType::Binary, true)),
        ])
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.accumulator(args)
    }
}

/// The count, the sum of the values' mantissas (`scale` places) and of their squares (twice as many).
#[derive(Debug)]
struct Sums {
    kind: Kind,
    scale: u32,
    n: i64,
    sum: BigInt,
    squares: BigInt,
}

impl Sums {
    fn add(&mut self, values: &ArrayRef, sign: i64) -> Result<()> {
        for i in 0..values.len() {
            if let Some(v) = fixed_at(values, i)? {
                let v = BigInt::from(v.mantissa);
                self.squares += &v * &v * sign;
                self.sum += v * sign;
                self.n += sign;
            }
        }
        Ok(())
    }
}

fn bytes(b: &BigInt) -> ScalarValue {
    ScalarValue::Binary(Some(b.to_signed_bytes_le()))
}

impl Accumulator for Sums {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], 1)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], -1)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let bad = || DataFusionError::Internal("variance state".into());
        let n = states[0].as_any().downcast_ref::<Int64Array>().ok_or_else(bad)?;
        let (sum, squares): (&BinaryArray, &BinaryArray) = (states[1].as_binary(), states[2].as_binary());
        for i in 0..n.len() {
            if !n.is_null(i) {
                self.n += n.value(i);
                self.sum += BigInt::from_signed_bytes_le(sum.value(i));
                self.squares += BigInt::from_signed_bytes_le(squares.value(i));
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Int64(Some(self.n)), bytes(&self.sum), bytes(&self.squares)])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        statistic(self.kind, self.n, &self.sum, &self.squares, self.scale)
            .map(|v| ScalarValue::Decimal128(v, 38, QUOTIENT_SCALE as i8))
            .map_err(|e| DataFusionError::External(Box::new(e)))
    }

    fn size(&self) -> usize {
        size_of::<Self>() + (self.sum.bits() + self.squares.bits()) as usize / 8
    }
}

/// PostgreSQL's `numeric_stddev_internal` over `n` values whose mantissas (of `scale` places) sum to
/// `sum` and their squares to `squares`: a mantissa of [`QUOTIENT_SCALE`] places, or NULL.
fn statistic(kind: Kind, n: i64, sum: &BigInt, squares: &BigInt, scale: u32) -> Result<Option<i128>, QueryError> {
    if n == 0 || (kind.sample() && n <= 1) {
        return Ok(None);
    }
    // (n * Σx² - (Σx)²) / (n * (n - 1)) or / n², exact at 2 * scale places.
    let n_big = BigInt::from(n);
    let numerator = &n_big * squares - sum * sum;
    if !numerator.is_positive() {
        return Ok(Some(0));
    }
    let denominator = if kind.sample() { &n_big * BigInt::from(n - 1) } else { &n_big * &n_big };
    let rscale = div_scale(&numerator, 2 * scale, &denominator).min(QUOTIENT_SCALE);
    // The variance to rscale places, rounded half away from zero (both operands are positive).
    let twice = numerator * BigInt::from(10).pow(rscale) * 2 / (&denominator * BigInt::from(10).pow(2 * scale));
    let variance: BigInt = (twice + 1) / 2;
    let value = if kind.root() {
        // sqrt(v / 10^r) to r places: sqrt(v * 10^r), rounded (v * 10^r * 4 against (2s + 1)^2).
        let radicand: BigInt = &variance * BigInt::from(10).pow(rscale);
        let s = radicand.sqrt();
        let up = radicand * 4 >= (&s * 2 + 1) * (&s * 2 + 1);
        if up {
            s + 1
        } else {
            s
        }
    } else {
        variance
    };
    let value = value * BigInt::from(10).pow(QUOTIENT_SCALE - rscale);
    let overflow = || QueryError::NumericOutOfRange("value overflows numeric format".into());
    let v = value.to_i128().ok_or_else(overflow)?;
    if v.unsigned_abs() >= 10u128.pow(38) {
        return Err(overflow());
    }
    Ok(Some(v))
}

/// `types::numeric::div_scale` of two positive big integers, the first of `scale` places.
fn div_scale(a: &BigInt, scale: u32, b: &BigInt) -> u32 {
    // The weight and digit of the base-10,000 group holding the leading decimal digit, read from the
    // decimal digits (a big integer has no ilog10).
    let lead = |m: &BigInt, scale: u32| -> (i64, u128) {
        let digits = m.magnitude().to_string();
        let weight = (digits.len() as i64 - 1 - i64::from(scale)).div_euclid(4);
        let shift = i64::from(scale) + weight * 4;
        let keep = (digits.len() as i64 - shift).clamp(0, digits.len() as i64) as usize;
        let head: u128 = digits[..keep].parse().unwrap_or(0);
        (weight, if shift < 0 { head * 10u128.pow((-shift) as u32) } else { head })
    };
    scale_of_quotient((lead(a, scale), scale), (lead(b, 0), 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(kind: Kind, values: &[i128], scale: u32) -> Option<String> {
        let sum: BigInt = values.iter().map(|v| BigInt::from(*v)).sum();
        let squares: BigInt = values.iter().map(|v| BigInt::from(*v) * BigInt::from(*v)).sum();
        let q = statistic(kind, values.len() as i64, &sum, &squares, scale).unwrap()?;
        let mut d = rust_decimal::Decimal::from_i128_with_scale(q, QUOTIENT_SCALE).normalize();
        if q != 0 {
            let scale = super::super::quotient::display_scale(crate::types::numeric::Fixed { mantissa: q, scale: QUOTIENT_SCALE }, 0);
            d.rescale(scale.max(d.scale()));
        }
        Some(d.to_string())
    }

    #[test]
    fn statistics_are_postgresql_numerics() {
        // Each expected value is PostgreSQL 15's.
        assert_eq!(stat(Kind::StddevSamp, &[1, 2, 4], 0).as_deref(), Some("1.5275252316519467"));
        assert_eq!(stat(Kind::VarSamp, &[1, 2, 4], 0).as_deref(), Some("2.3333333333333333"));
        assert_eq!(stat(Kind::VarPop, &[10, 20, 35], 0).as_deref(), Some("105.5555555555555556"));
        assert_eq!(stat(Kind::StddevSamp, &[1500, 2250, 3125], 3).as_deref(), Some("0.81330088733096395985"));
        assert_eq!(stat(Kind::VarSamp, &[5], 0), None);
        assert_eq!(stat(Kind::VarPop, &[5], 0).as_deref(), Some("0"));
    }
}
