//! Quotients of numerics, and `avg` of integers and numerics, as PostgreSQL computes them.
//!
//! PostgreSQL divides numerics to `select_div_scale`'s scale, at least 16 significant digits
//! (`types::numeric::div_scale`), and `avg` of an integer or a numeric is such a quotient of the sum by
//! the count: `avg` of 1, 2 and 4 is 2.3333333333333333, of 1 and 2 1.5000000000000000. DataFusion gives
//! a decimal quotient four more places than its dividend, and `avg` of integers a double
//! (2.3333333333333335). Here [`NumericDiv`] and [`PgAvg`] compute PostgreSQL's digits, rounded half away
//! from zero at its scale for each row. `avg(DISTINCT x)` averages the distinct values alike.
//!
//! A column of Arrow decimals has one scale, where each PostgreSQL numeric has its own, so the values
//! travel at [`QUOTIENT_SCALE`] places and the field says, in [`QUOTIENT_KEY`], the least scale the
//! operands give; the output ([`display_scale`]) prints each value with the scale PostgreSQL's rule gives
//! it from its own digits. Past [`QUOTIENT_SCALE`] places (a quotient below 10^-4 with its 16 digits) the
//! value is rounded there; one of 10^18 or more is 22003.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, Int64Array};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef, Int16Type, Int32Type, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::error::QueryError;
use crate::types::numeric::{base_10000_lead, div_scale, divide, Fixed};

/// The places a quotient carries through DataFusion: PostgreSQL's 16 significant digits of a quotient
/// down to 10^-4, and 18 digits before the point.
pub const QUOTIENT_SCALE: u32 = 20;
/// Field metadata of a quotient: the most places of its operands, the least it prints with.
pub const QUOTIENT_KEY: &str = "tabula.quotient";
/// Field metadata of a quotient whose zero is PostgreSQL's constant 0, printed without places (a
/// variance of equal values).
pub const PLAIN_ZERO_KEY: &str = "tabula.plain_zero";

/// The scale PostgreSQL prints a quotient `q` with, its operands having shown at most `floor` places: 16 significant digits from the quotient's weight in base
/// 10,000. PostgreSQL estimates that weight from the operands' first digits, one less when they are equal;
/// an exact power of 10,000 (`3 / 3`) can only come so. Where such operands give another quotient
/// (15000 / 10000 = 1.5) and it ends early, this prints four fewer zeros than PostgreSQL.
pub fn display_scale(q: Fixed, floor: u32) -> u32 {
    let (weight, lead) = base_10000_lead(q);
    let power_of_base =
        lead == 1 && u32::try_from(i64::from(q.scale) + weight * 4).is_ok_and(|e| Some(q.mantissa.unsigned_abs()) == 10u128.checked_pow(e));
    let qweight = if q.mantissa == 0 || power_of_base { weight - 1 } else { weight };
    ((16 - qweight * 4).max(i64::from(floor)).clamp(0, i64::from(QUOTIENT_SCALE))) as u32
}

pub(super) fn quotient_field(name: &str, floor: u32) -> FieldRef {
    Arc::new(
        Field::new(name, DataType::Decimal128(38, QUOTIENT_SCALE as i8), true)
            .with_metadata(HashMap::from([(QUOTIENT_KEY.to_string(), floor.to_string())])),
    )
}

fn failed(e: QueryError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// `a / b` as a mantissa of [`QUOTIENT_SCALE`] places.
fn quotient(a: Fixed, b: Fixed) -> Result<i128> {
    if b.mantissa == 0 {
        return Err(failed(QueryError::DivisionByZero));
    }
    let scale = div_scale(a, b).min(QUOTIENT_SCALE);
    let overflow = || failed(QueryError::NumericOutOfRange("value overflows numeric format".into()));
    let q = divide(a, b, scale).ok_or_else(overflow)?;
    let q = q.checked_mul(10i128.pow(QUOTIENT_SCALE - scale)).ok_or_else(overflow)?;
    if q.unsigned_abs() >= 10u128.pow(38) {
        return Err(overflow());
    }
    Ok(q)
}

/// The places of an integer (0) or decimal type; `None` for another type.
pub(super) fn places(t: &DataType) -> Option<u32> {
    match t {
        DataType::Int16 | DataType::Int32 | DataType::Int64 => Some(0),
        DataType::Decimal128(_, s) if *s >= 0 => Some(*s as u32),
        _ => None,
    }
}

/// Row `i` of an integer or decimal array as a [`Fixed`]; `None` when NULL.
pub(super) fn fixed_at(a: &ArrayRef, i: usize) -> Result<Option<Fixed>> {
    if a.is_null(i) {
        return Ok(None);
    }
    let mantissa = match a.data_type() {
        DataType::Int16 => i128::from(a.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => i128::from(a.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => i128::from(a.as_primitive::<Int64Type>().value(i)),
        DataType::Decimal128(..) => a.as_primitive::<Decimal128Type>().value(i),
        other => return Err(DataFusionError::Internal(format!("numeric quotient of {other}"))),
    };
    Ok(Some(Fixed { mantissa, scale: places(a.data_type()).unwrap_or(0) }))
}

/// `a / b` of two numerics, or a numeric and an integer (`numeric_div` in PostgreSQL).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct NumericDiv {
    signature: Signature,
}

impl NumericDiv {
    pub fn new() -> Self {
        NumericDiv { signature: Signature::any(2, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for NumericDiv {
    fn name(&self) -> &str {
        "numeric_div"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, QUOTIENT_SCALE as i8))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let floor = args.arg_fields.iter().filter_map(|f| places(f.data_type())).max().unwrap_or(0);
        Ok(quotient_field(self.name(), floor))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = super::arrays(&args)?;
        let (left, right) = (&arrays[0], &arrays[1]);
        let out = (0..left.len())
            .map(|i| match (fixed_at(left, i)?, fixed_at(right, i)?) {
                (Some(a), Some(b)) => quotient(a, b).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<Decimal128Array>>()?
            .with_precision_and_scale(38, QUOTIENT_SCALE as i8)?;
        let out: ArrayRef = Arc::new(out);
        super::columnar(&args.args, out)
    }
}

/// `avg` of integers or numerics: PostgreSQL's quotient of the exact sum by the count.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgAvg {
    signature: Signature,
}

impl PgAvg {
    pub fn new() -> Self {
        PgAvg { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for PgAvg {
    fn name(&self) -> &str {
        "pg_avg"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, QUOTIENT_SCALE as i8))
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        Ok(quotient_field(self.name(), arg_fields.first().and_then(|f| places(f.data_type())).unwrap_or(0)))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let scale = args.expr_fields.first().and_then(|f| places(f.data_type())).unwrap_or(0);
        if args.is_distinct {
            return Ok(Box::new(DistinctAvgAccumulator { values: HashSet::new(), scale }));
        }
        Ok(Box::new(AvgAccumulator { sum: 0, count: 0, scale }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let scale = args.input_fields.first().and_then(|f| places(f.data_type())).unwrap_or(0);
        if args.is_distinct {
            let item = Field::new_list_field(DataType::Decimal128(38, scale as i8), true);
            return Ok(vec![Arc::new(Field::new(format!("{}[distinct]", args.name), DataType::List(Arc::new(item)), true))]);
        }
        Ok(vec![
            Arc::new(Field::new(format!("{}[sum]", args.name), DataType::Decimal128(38, scale as i8), true)),
            Arc::new(Field::new(format!("{}[count]", args.name), DataType::Int64, true)),
        ])
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.accumulator(args)
    }
}

/// The exact sum of the values (mantissas of `scale` places) and their count.
#[derive(Debug)]
struct AvgAccumulator {
    sum: i128,
    count: i64,
    scale: u32,
}

impl AvgAccumulator {
    fn add(&mut self, values: &ArrayRef, sign: i128) -> Result<()> {
        let overflow = || failed(QueryError::NumericOutOfRange("value overflows numeric format".into()));
        for i in 0..values.len() {
            if let Some(v) = fixed_at(values, i)? {
                self.sum = self.sum.checked_add(sign * v.mantissa).ok_or_else(overflow)?;
                self.count += sign as i64;
            }
        }
        Ok(())
    }
}

impl Accumulator for AvgAccumulator {
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
        let (sums, counts) = (states[0].as_primitive::<Decimal128Type>(), states[1].as_any().downcast_ref::<Int64Array>());
        let counts = counts.ok_or_else(|| DataFusionError::Internal("avg state".into()))?;
        for i in 0..sums.len() {
            if !sums.is_null(i) {
                self.sum = self
                    .sum
                    .checked_add(sums.value(i))
                    .ok_or_else(|| failed(QueryError::NumericOutOfRange("value overflows numeric format".into())))?;
                self.count += counts.value(i);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Decimal128(Some(self.sum), 38, self.scale as i8), ScalarValue::Int64(Some(self.count))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let q = match self.count {
            0 => None,
            n => Some(quotient(Fixed { mantissa: self.sum, scale: self.scale }, Fixed { mantissa: i128::from(n), scale: 0 })?),
        };
        Ok(ScalarValue::Decimal128(q, 38, QUOTIENT_SCALE as i8))
    }

    fn size(&self) -> usize {
        size_of::<Self>()
    }
}

/// `avg(DISTINCT x)`: the distinct values (mantissas of `scale` places: equal numerics of one column
/// have equal mantissas), averaged as PostgreSQL averages them once all are in.
#[derive(Debug)]
struct DistinctAvgAccumulator {
    values: HashSet<i128>,
    scale: u32,
}

impl Accumulator for DistinctAvgAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for i in 0..values[0].len() {
            if let Some(v) = fixed_at(&values[0], i)? {
                self.values.insert(v.mantissa);
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for i in 0..lists.len() {
            if !lists.is_null(i) {
                self.update_batch(&[lists.value(i)])?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let ty = DataType::Decimal128(38, self.scale as i8);
        let values: Vec<ScalarValue> = self.values.iter().map(|v| ScalarValue::Decimal128(Some(*v), 38, self.scale as i8)).collect();
        Ok(vec![ScalarValue::List(ScalarValue::new_list_nullable(&values, &ty))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let overflow = || failed(QueryError::NumericOutOfRange("value overflows numeric format".into()));
        let sum = self.values.iter().try_fold(0i128, |s, v| s.checked_add(*v)).ok_or_else(overflow)?;
        let q = match self.values.len() {
            0 => None,
            n => Some(quotient(Fixed { mantissa: sum, scale: self.scale }, Fixed { mantissa: n as i128, scale: 0 })?),
        };
        Ok(ScalarValue::Decimal128(q, 38, QUOTIENT_SCALE as i8))
    }

    fn size(&self) -> usize {
        size_of::<Self>() + self.values.capacity() * size_of::<i128>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(a: (i128, u32), b: (i128, u32)) -> String {
        let q = quotient(Fixed { mantissa: a.0, scale: a.1 }, Fixed { mantissa: b.0, scale: b.1 }).unwrap();
        let mut d = rust_decimal::Decimal::from_i128_with_scale(q, QUOTIENT_SCALE).normalize();
        d.rescale(display_scale(Fixed { mantissa: q, scale: QUOTIENT_SCALE }, a.1.max(b.1)).max(d.scale()));
        d.to_string()
    }

    #[test]
    fn quotients_print_as_postgresql_prints_them() {
        // Each expected value is PostgreSQL 15's.
        assert_eq!(printed((7, 0), (3, 0)), "2.3333333333333333");
        assert_eq!(printed((9, 0), (2, 0)), "4.5000000000000000");
        assert_eq!(printed((3, 0), (3, 0)), "1.00000000000000000000");
        assert_eq!(printed((1, 0), (2, 0)), "0.50000000000000000000");
        assert_eq!(printed((1, 0), (3, 0)), "0.33333333333333333333");
        assert_eq!(printed((100000, 0), (3, 0)), "33333.333333333333");
        assert_eq!(printed((1375, 2), (3, 0)), "4.5833333333333333");
        assert_eq!(printed((0, 0), (3, 0)), "0.00000000000000000000");
        assert_eq!(printed((-7, 0), (3, 0)), "-2.3333333333333333");
        assert_eq!(printed((15, 1), (1, 0)), "1.5000000000000000");
    }
}
