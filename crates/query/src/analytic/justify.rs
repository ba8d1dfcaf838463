//! `justify_days`, `justify_hours` and `justify_interval` (PostgreSQL's `interval_justify_*`): whole
//! 30-day blocks of days become months, whole 24-hour blocks of time become days, and the parts are then
//! given one sign where they can be. `num_nulls` and `num_nonnulls`, which count their NULL and non-NULL
//! arguments.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int32Array, IntervalMonthDayNanoArray};
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;

const DAYS_PER_MONTH: i32 = 30;
const US_PER_DAY: i64 = 86_400_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Justify {
    Days,
    Hours,
    Interval,
}

/// PostgreSQL's `interval_justify_days`, `_hours` and `_interval` on (months, days, microseconds).
pub fn justify(kind: Justify, (mut month, mut day, mut time): (i32, i32, i64)) -> Option<(i32, i32, i64)> {
    let whole_months = |month: &mut i32, day: &mut i32| -> Option<()> {
        let whole = *day / DAYS_PER_MONTH;
        *day -= whole * DAYS_PER_MONTH;
        *month = month.checked_add(whole)?;
        Some(())
    };
    let whole_days = |day: &mut i32, time: &mut i64| -> Option<()> {
        let whole = *time / US_PER_DAY;
        *time -= whole * US_PER_DAY;
        *day = day.checked_add(i32::try_from(whole).ok()?)?;
        Some(())
    };
    let one_sign_days = |day: &mut i32, time: &mut i64| {
        if *day > 0 && *time < 0 {
            *time += US_PER_DAY;
            *day -= 1;
        } else if *day < 0 && *time > 0 {
            *time -= US_PER_DAY;
            *day += 1;
        }
    };
    match kind {
        Justify::Hours => {
            whole_days(&mut day, &mut time)?;
            one_sign_days(&mut day, &mut time);
        }
        Justify::Days => {
            whole_months(&mut month, &mut day)?;
            if month > 0 && day < 0 {
                day += DAYS_PER_MONTH;
                month -= 1;
            } else if month < 0 && day > 0 {
                day -= DAYS_PER_MONTH;
                month += 1;
            }
        }
        Justify::Interval => {
            if (day > 0 && time > 0) || (day < 0 && time < 0) {
                whole_months(&mut month, &mut day)?;
            }
            whole_days(&mut day, &mut time)?;
            whole_months(&mut month, &mut day)?;
            if month > 0 && (day < 0 || (day == 0 && time < 0)) {
                day += DAYS_PER_MONTH;
                month -= 1;
            } else if month < 0 && (day > 0 || (day == 0 && time > 0)) {
                day -= DAYS_PER_MONTH;
                month += 1;
            }
            one_sign_days(&mut day, &mut time);
        }
    }
    Some((month, day, time))
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct JustifyUdf {
    kind: Justify,
    signature: Signature,
}

impl JustifyUdf {
    pub fn new(kind: Justify) -> Self {
        JustifyUdf { kind, signature: Signature::exact(vec![DataType::Interval(IntervalUnit::MonthDayNano)], Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for JustifyUdf {
    fn name(&self) -> &str {
        match self.kind {
            Justify::Days => "justify_days",
            Justify::Hours => "justify_hours",
            Justify::Interval => "justify_interval",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = super::arrays(&args)?;
        let input = arrays[0].as_primitive::<IntervalMonthDayNanoType>();
        let out = (0..input.len())
            .map(|i| {
                if input.is_null(i) {
                    return Ok(None);
                }
                let v = input.value(i);
                let (months, days, us) = justify(self.kind, (v.months, v.days, v.nanoseconds / 1000)).ok_or_else(|| {
                    DataFusionError::External(Box::new(QueryError::Engine { sqlstate: "22008", message: "interval out of range".into() }))
                })?;
                Ok(Some(IntervalMonthDayNano { months, days, nanoseconds: us * 1000 }))
            })
            .collect::<Result<Vec<_>>>()?;
        super::columnar(&args.args, Arc::new(IntervalMonthDayNanoArray::from(out)))
    }
}

/// `num_nulls(...)` (`nonnull`: `num_nonnulls(...)`): how many arguments are NULL (or are not).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct NumNulls {
    nonnull: bool,
    signature: Signature,
}

impl NumNulls {
    pub fn new(nonnull: bool) -> Self {
        NumNulls { nonnull, signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for NumNulls {
    fn name(&self) -> &str {
        if self.nonnull {
            "num_nonnulls"
        } else {
            "num_nulls"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = super::arrays(&args)?;
        let rows = arrays.first().map_or(1, |a| a.len());
        let counts: Int32Array = (0..rows).map(|i| Some(arrays.iter().filter(|a| a.is_null(i) != self.nonnull).count() as i32)).collect();
        super::columnar(&args.args, Arc::new(counts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn justified_as_postgresql_justifies() {
        let h = 3_600_000_000i64;
        // PostgreSQL 15: justify_hours('27 hours') = 1 day 03:00:00, justify_days('35 days') = 1 mon 5 days,
        // justify_interval('1 mon -1 hour') = 29 days 23:00:00, justify_days('-35 days') = -1 mons -5 days,
        // justify_hours('1 day -1 hour') = 23:00:00, justify_interval('-1 mon 50 hours') = -27 days -22:00:00.
        assert_eq!(justify(Justify::Hours, (0, 0, 27 * h)), Some((0, 1, 3 * h)));
        assert_eq!(justify(Justify::Days, (0, 35, 0)), Some((1, 5, 0)));
        assert_eq!(justify(Justify::Interval, (1, 0, -h)), Some((0, 29, 23 * h)));
        assert_eq!(justify(Justify::Days, (0, -35, 0)), Some((-1, -5, 0)));
        assert_eq!(justify(Justify::Hours, (0, 1, -h)), Some((0, 0, 23 * h)));
        assert_eq!(justify(Justify::Interval, (-1, 0, 50 * h)), Some((0, -27, -22 * h)));
    }
}
