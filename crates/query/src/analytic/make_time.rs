//! `make_date(year, month, day)` and `make_timestamp(year, month, day, hour, min, sec)` as PostgreSQL's:
//! 22008 `date field value out of range: 2024-02-30` for a day the month does not have or a year 0, and
//! `time field value out of range: 25:00:00` for a time past 24:00:00. A negative year is a year BC, as
//! PostgreSQL reads it (-44 is 44 BC). DataFusion's `make_date` answers another message, takes year 0 and
//! reads -44 as the proleptic year -44 (45 BC).

use std::sync::Arc;

use chrono::{Datelike, NaiveDate};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Date32Array, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int32Type, TimeUnit};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MakeTime {
    /// `make_timestamp` (six arguments) rather than `make_date` (three).
    timestamp: bool,
    signature: Signature,
}

impl MakeTime {
    pub fn date() -> Self {
        MakeTime { timestamp: false, signature: Signature::user_defined(Volatility::Immutable) }
    }

    pub fn timestamp() -> Self {
        MakeTime { timestamp: true, signature: Signature::user_defined(Volatility::Immutable) }
    }
}

fn refuse(sqlstate: &'static str, message: String) -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::Engine { sqlstate, message }))
}

/// The day `year-month-day`, a negative year BC; PostgreSQL's 22008 otherwise, which names a year BC by
/// its proleptic number (-44 as -43).
fn day(year: i32, month: i32, day: i32) -> Result<NaiveDate> {
    let proleptic = if year < 0 { year + 1 } else { year };
    Some(proleptic)
        .filter(|_| year != 0)
        .and_then(|y| NaiveDate::from_ymd_opt(y, u32::try_from(month).ok()?, u32::try_from(day).ok()?))
        .ok_or_else(|| refuse("22008", format!("date field value out of range: {proleptic}-{month:02}-{day:02}")))
}

/// Microseconds into the day of `hour:min:sec`, up to 24:00:00 (PostgreSQL's `float_time_overflows`).
fn time_of_day(hour: i32, min: i32, sec: f64) -> Result<i64> {
    let us = (sec * 1e6).round_ties_even();
    let total = (i64::from(hour) * 60 + i64::from(min)) * 60_000_000 + us as i64;
    if !(0..=24).contains(&hour) || !(0..60).contains(&min) || sec.is_nan() || !(0.0..=60e6).contains(&us) || total > 86_400_000_000 {
        // C's `%02g`: the shortest form, at least two characters.
        let sec = format!("{sec:02}");
        return Err(refuse("22008", format!("time field value out of range: {hour}:{min:02}:{sec}")));
    }
    Ok(total)
}

impl ScalarUDFImpl for MakeTime {
    fn name(&self) -> &str {
        if self.timestamp {
            "make_timestamp"
        } else {
            "make_date"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let arity = if self.timestamp { 6 } else { 3 };
        let numeric = |t: &DataType| t.is_numeric() || *t == DataType::Null || *t == DataType::Utf8;
        if arg_types.len() != arity || !arg_types.iter().all(numeric) {
            let names: Vec<&str> = arg_types.iter().map(|t| super::arrow::sql_type_of(t).pg_name()).collect();
            return Err(DataFusionError::External(Box::new(QueryError::UndefinedFunction(format!(
                "{}({})",
                self.name(),
                names.join(", ")
            )))));
        }
        Ok((0..arity).map(|i| if i == 5 { DataType::Float64 } else { DataType::Int32 }).collect())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(if self.timestamp { DataType::Timestamp(TimeUnit::Microsecond, None) } else { DataType::Date32 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = super::arrays(&args)?;
        let rows = arrays.first().map_or(1, |a| a.len());
        let int = |c: usize, i: usize| arrays[c].as_primitive::<Int32Type>().value(i);
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("a date");
        let mut days = Vec::with_capacity(rows);
        let mut stamps = Vec::with_capacity(rows);
        for i in 0..rows {
            if arrays.iter().any(|a| a.is_null(i)) {
                days.push(None);
                stamps.push(None);
                continue;
            }
            let d = day(int(0, i), int(1, i), int(2, i))?;
            let n = (d - epoch).num_days();
            if self.timestamp {
                let time = time_of_day(int(3, i), int(4, i), arrays[5].as_primitive::<Float64Type>().value(i))?;
                stamps.push(Some(n * 86_400_000_000 + time));
            } else {
                days.push(Some(i32::try_from(n).map_err(|_| refuse("22008", format!("date out of range: {}", d.year())))?));
            }
        }
        let array: ArrayRef =
            if self.timestamp { Arc::new(TimestampMicrosecondArray::from(stamps)) } else { Arc::new(Date32Array::from(days)) };
        super::columnar(&args.args, array)
    }
}
