//! `age(a, b)` and `age(b)`: PostgreSQL's symbolic difference of two timestamps, in years, months and days
//! as a calendar counts them, then a time (`age('2024-03-01', '2024-01-15')` is `1 mon 17 days`), where a
//! subtraction gives days and a time only. `age(b)` is `age` from midnight today. A `timestamptz` is taken
//! apart in the session's zone, as PostgreSQL's `timestamptz_age` does.

use std::sync::Arc;

use chrono::{Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano, IntervalUnit, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;
use crate::types::Zone;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Age {
    signature: Signature,
    /// The session's zone as Arrow names it: a quoted literal is a `timestamptz` in it.
    session: Arc<str>,
}

impl Age {
    pub fn new(session: Arc<str>) -> Age {
        Age { signature: Signature::user_defined(Volatility::Stable), session }
    }
}

const US: TimeUnit = TimeUnit::Microsecond;

/// The days of each month, in a common and a leap year (PostgreSQL's `day_tab`).
fn days_in(year: i32, month: u32) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month as usize - 1]
}

/// PostgreSQL's `timestamp_age` of two local times: the fields' differences, negative ones borrowed from
/// the next larger field (a month borrows the days of the earlier time's month), the sign kept apart.
fn age(t1: NaiveDateTime, t2: NaiveDateTime) -> IntervalMonthDayNano {
    let fields = |t: NaiveDateTime| {
        [
            t.year() as i64,
            t.month() as i64,
            t.day() as i64,
            t.hour() as i64,
            t.minute() as i64,
            t.second() as i64,
            (t.nanosecond() / 1000) as i64,
        ]
    };
    let (a, b) = (fields(t1), fields(t2));
    let negative = t1 < t2;
    let sign = if negative { -1 } else { 1 };
    let [mut year, mut mon, mut mday, mut hour, mut min, mut sec, mut usec] = std::array::from_fn::<i64, 7, _>(|i| sign * (a[i] - b[i]));
    while usec < 0 {
        usec += 1_000_000;
        sec -= 1;
    }
    while sec < 0 {
        sec += 60;
        min -= 1;
    }
    while min < 0 {
        min += 60;
        hour -= 1;
    }
    while hour < 0 {
        hour += 24;
        mday -= 1;
    }
    let borrowed = if negative { t1 } else { t2 };
    while mday < 0 {
        mday += days_in(borrowed.year(), borrowed.month());
        mon -= 1;
    }
    while mon < 0 {
        mon += 12;
        year -= 1;
    }
    let time = ((hour * 60 + min) * 60 + sec) * 1_000_000 + usec;
    IntervalMonthDayNano::new((sign * (year * 12 + mon)) as i32, (sign * mday) as i32, sign * time * 1000)
}

impl ScalarUDFImpl for Age {
    fn name(&self) -> &str {
        "age"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.is_empty() || arg_types.len() > 2 {
            return plan_err!("age takes one or two timestamps");
        }
        // Both of one type: a `timestamptz` if either is one (or a quoted literal), as PostgreSQL casts.
        let zoned = arg_types.iter().find_map(|t| match t {
            DataType::Timestamp(_, Some(tz)) => Some(tz.clone()),
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null => Some(self.session.clone()),
            _ => None,
        });
        for t in arg_types {
            if !matches!(
                t,
                DataType::Timestamp(..) | DataType::Date32 | DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null
            ) {
                return Err(DataFusionError::External(Box::new(QueryError::UndefinedFunction(format!("age({t})")))));
            }
        }
        Ok(vec![DataType::Timestamp(US, zoned); arg_types.len()])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let zone = match args.args.last().map(|a| a.data_type()) {
            Some(DataType::Timestamp(_, Some(tz))) => Some(Zone::of_arrow(&tz)),
            Some(DataType::Timestamp(_, None)) => None,
            _ => return exec_err!("age of a value that is not a timestamp"),
        };
        let local = |us: i64| -> Result<NaiveDateTime> {
            let t = match zone {
                Some(z) => z.local_of(us),
                None => chrono::DateTime::from_timestamp_micros(us).map(|d| d.naive_utc()),
            };
            t.ok_or_else(|| DataFusionError::External(Box::new(QueryError::NumericOutOfRange("timestamp out of range".into()))))
        };
        let arrays = args
            .args
            .iter()
            .map(|a| cast(&a.to_array(rows)?, &DataType::Timestamp(US, None)).map_err(DataFusionError::from))
            .collect::<Result<Vec<_>>>()?;
        // `age(b)`: from midnight today, in the session's zone for a `timestamptz`.
        let today = {
            let now = chrono::Utc::now().timestamp_micros();
            let z = zone.unwrap_or_else(|| Zone::of_arrow(&self.session));
            z.local_of(now).map(|t| t.date().and_hms_opt(0, 0, 0).unwrap_or_default())
        };
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            let (from, to) = match arrays.as_slice() {
                [b] => (None, b.as_primitive::<TimestampMicrosecondType>()),
                [a, b] => (Some(a.as_primitive::<TimestampMicrosecondType>()), b.as_primitive::<TimestampMicrosecondType>()),
                _ => return exec_err!("age takes one or two timestamps"),
            };
            if to.is_null(i) || from.is_some_and(|a| a.is_null(i)) {
                out.push(None);
                continue;
            }
            let start = match from {
                Some(a) => local(a.value(i))?,
                None => today.ok_or_else(|| DataFusionError::Execution("no current date".into()))?,
            };
            out.push(Some(age(start, local(to.value(i))?)));
        }
        super::columnar(&args.args, Arc::new(IntervalMonthDayNanoArray::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn ages_count_months_as_a_calendar_does() {
        let days = |a: &str, b: &str| {
            let v = age(at(a), at(b));
            (v.months, v.days, v.nanoseconds / 1_000_000_000)
        };
        assert_eq!(days("2024-03-01 00:00:00", "2024-01-15 00:00:00"), (1, 17, 0));
        assert_eq!(days("2024-01-15 00:00:00", "2024-03-01 00:00:00"), (-1, -17, 0));
        assert_eq!(days("2024-03-01 10:00:00", "2023-02-28 12:30:00"), (12, 0, 77_400));
        assert_eq!(days("2001-04-10 00:00:00", "1957-06-13 00:00:00"), (43 * 12 + 9, 27, 0));
    }
}
