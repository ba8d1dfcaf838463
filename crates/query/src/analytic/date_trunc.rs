//! `date_trunc(field, timestamp | timestamptz)` as PostgreSQL's `timestamp_trunc` and
//! `timestamptz_trunc`, over Tabula's microsecond timestamps of any year. DataFusion's went through
//! nanoseconds and failed outside 1677-2262 (`date_trunc('month', '9999-12-31'::timestamptz)`, a common
//! "valid until" sentinel). A `timestamptz` is truncated as a local time in the session's zone: below a
//! day it keeps its offset, from a day up the offset is the one that local time has (`Zone::instant_of`).
//! Centuries and millennia start at year 1 (2001-01-01), decades at a year that ends in 0, weeks on Monday
//! (ISO), and years before 1 as PostgreSQL counts them. An interval is truncated field by field, as
//! PostgreSQL's `interval_trunc`.

use std::sync::Arc;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, AsArray, IntervalMonthDayNanoArray, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{
    DataType, DurationMicrosecondType, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::exec_err;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use super::extract::Unit;
use crate::error::QueryError;
use crate::types::Zone;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DateTrunc {
    signature: Signature,
    /// The session's zone as Arrow names it: a date or a quoted literal is a `timestamptz` in it.
    session: Arc<str>,
}

impl DateTrunc {
    pub fn new(session: Arc<str>) -> DateTrunc {
        DateTrunc { signature: Signature::user_defined(Volatility::Stable), session }
    }
}

const US: TimeUnit = TimeUnit::Microsecond;

fn failed(e: QueryError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The field truncated to, by any of PostgreSQL's names (`extract`'s): 22023 for a name PostgreSQL does not
/// truncate to, 0A000 for a zone's fields, as PostgreSQL words them.
fn unit(field: &str, type_name: &str) -> std::result::Result<Unit, QueryError> {
    let lower = field.to_lowercase();
    match super::extract::unit(field) {
        Some(u) if u <= Unit::Millennium => Ok(u),
        Some(Unit::Timezone | Unit::TimezoneHour | Unit::TimezoneMinute) => {
            Err(QueryError::FeatureNotSupported(format!("unit \"{lower}\" not supported for type {type_name}")))
        }
        _ => Err(QueryError::InvalidParameterValue(format!("unit \"{lower}\" not recognized for type {type_name}"))),
    }
}

/// A local time truncated to `unit`, as PostgreSQL's `timestamp_trunc` (years in astronomical numbering,
/// 0 being 1 BC, as chrono's and PostgreSQL's own).
fn truncate(t: NaiveDateTime, unit: Unit) -> Option<NaiveDateTime> {
    let date = t.date();
    let (mut year, mut month, mut day) = (date.year(), date.month(), date.day());
    if unit == Unit::Week {
        let monday = date - Duration::days(date.weekday().num_days_from_monday() as i64);
        return monday.and_hms_opt(0, 0, 0);
    }
    match unit {
        Unit::Millennium => year = if year > 0 { ((year + 999) / 1000) * 1000 - 999 } else { -((999 - (year - 1)) / 1000) * 1000 + 1 },
        Unit::Century => year = if year > 0 { ((year + 99) / 100) * 100 - 99 } else { -((99 - (year - 1)) / 100) * 100 + 1 },
        Unit::Decade => year = if year > 0 { (year / 10) * 10 } else { -((8 - (year - 1)) / 10) * 10 },
        _ => {}
    }
    if unit >= Unit::Year {
        month = 1;
    }
    if unit == Unit::Quarter {
        month = 3 * ((month - 1) / 3) + 1;
    }
    if unit >= Unit::Month {
        day = 1;
    }
    let (mut hour, mut minute, mut second, mut micros) = (t.hour(), t.minute(), t.second(), t.nanosecond() / 1000);
    if unit >= Unit::Day {
        hour = 0;
    }
    if unit >= Unit::Hour {
        minute = 0;
    }
    if unit >= Unit::Minute {
        second = 0;
    }
    if unit >= Unit::Second {
        micros = 0;
    }
    if unit == Unit::Milliseconds {
        micros = micros / 1000 * 1000;
    }
    NaiveDate::from_ymd_opt(year, month, day)?.and_hms_micro_opt(hour, minute, second, micros)
}

/// An interval truncated to `unit` as PostgreSQL's `interval_trunc`: its years and months, days, and time
/// of day kept down to the unit, each part cut toward zero (`date_trunc('hour', '2 days 3:40')` is 2 days
/// 03:00; 25 hours stay hours). A week is 0A000: months have fractional weeks.
fn truncate_interval(months: i32, days: i32, us: i64, unit: Unit) -> std::result::Result<(i32, i32, i64), QueryError> {
    if unit == Unit::Week {
        return Err(QueryError::FeatureNotSupported("unit \"week\" not supported for type interval".into())
            .with_message("Months usually have fractional weeks.".into()));
    }
    let (years, month) = (months / 12, months % 12);
    let months = match unit {
        Unit::Millennium => years / 1000 * 1000 * 12,
        Unit::Century => years / 100 * 100 * 12,
        Unit::Decade => years / 10 * 10 * 12,
        Unit::Year => years * 12,
        Unit::Quarter => years * 12 + month / 3 * 3,
        _ => months,
    };
    let days = if unit >= Unit::Month { 0 } else { days };
    let step = match unit {
        u if u >= Unit::Day => return Ok((months, days, 0)),
        Unit::Hour => 3_600_000_000,
        Unit::Minute => 60_000_000,
        Unit::Second => 1_000_000,
        Unit::Milliseconds => 1000,
        _ => 1,
    };
    Ok((months, days, us / step * step))
}

/// A timestamp (µs since the epoch) truncated: as a local time in `zone` for a `timestamptz`.
fn truncate_us(us: i64, unit: Unit, zone: Option<&Zone>) -> Option<i64> {
    match zone {
        None => Some(truncate(chrono::DateTime::from_timestamp_micros(us)?.naive_utc(), unit)?.and_utc().timestamp_micros()),
        Some(z) => {
            let local = z.local_of(us)?;
            let cut = truncate(local, unit)?;
            if unit >= Unit::Day {
                z.instant_of(cut)
            } else {
                Some(us - (local - cut).num_microseconds()?)
            }
        }
    }
}

impl ScalarUDFImpl for DateTrunc {
    fn name(&self) -> &str {
        "date_trunc"
    }

    fn aliases(&self) -> &[String] {
        &[]
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [field, value] = arg_types else {
            return Err(failed(QueryError::UndefinedFunction(format!("date_trunc with {} arguments", arg_types.len()))));
        };
        if !matches!(field, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null) {
            return Err(failed(QueryError::UndefinedFunction(format!("date_trunc({field}, {value})"))));
        }
        let value = match value {
            DataType::Timestamp(_, tz) => DataType::Timestamp(US, tz.clone()),
            // A date, or a quoted literal, is a timestamptz (PostgreSQL's preferred type).
            DataType::Date32 | DataType::Date64 | DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null => {
                DataType::Timestamp(US, Some(self.session.clone()))
            }
            DataType::Interval(_) => DataType::Interval(IntervalUnit::MonthDayNano),
            // `ts - ts`: DataFusion's duration is PostgreSQL's interval of days and time.
            DataType::Duration(_) => DataType::Duration(US),
            other => return Err(failed(QueryError::UndefinedFunction(format!("date_trunc(text, {other})")))),
        };
        Ok(vec![DataType::Utf8, value])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.get(1) {
            Some(DataType::Timestamp(_, tz)) => Ok(DataType::Timestamp(US, tz.clone())),
            Some(DataType::Interval(_) | DataType::Duration(_)) => Ok(DataType::Interval(IntervalUnit::MonthDayNano)),
            _ => Ok(DataType::Timestamp(US, Some(self.session.clone()))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = super::arrays(&args)?;
        let [fields, values] = arrays.as_slice() else { return exec_err!("date_trunc takes two arguments") };
        if let DataType::Interval(_) | DataType::Duration(_) = values.data_type() {
            let fields = datafusion::arrow::compute::cast(fields, &DataType::Utf8)?;
            let fields = fields.as_string::<i32>();
            // A duration (µs) is the interval `timestamp - timestamp` gives: whole days, then the time.
            let parts = |i: usize| match values.data_type() {
                DataType::Duration(_) => {
                    let us = values.as_primitive::<DurationMicrosecondType>().value(i);
                    (0, (us / 86_400_000_000) as i32, us % 86_400_000_000)
                }
                _ => {
                    let v = values.as_primitive::<IntervalMonthDayNanoType>().value(i);
                    (v.months, v.days, v.nanoseconds / 1000)
                }
            };
            let mut out = Vec::with_capacity(values.len());
            for i in 0..values.len() {
                if fields.is_null(i) || values.is_null(i) {
                    out.push(None);
                    continue;
                }
                let unit = unit(fields.value(i), "interval").map_err(failed)?;
                let (months, days, us) = parts(i);
                let (months, days, us) = truncate_interval(months, days, us, unit).map_err(failed)?;
                out.push(Some(IntervalMonthDayNano::new(months, days, us * 1000)));
            }
            return super::columnar(&args.args, Arc::new(IntervalMonthDayNanoArray::from(out)));
        }
        let (zone, type_name) = match values.data_type() {
            DataType::Timestamp(TimeUnit::Microsecond, Some(tz)) => (Some(Zone::of_arrow(tz)), "timestamp with time zone"),
            DataType::Timestamp(TimeUnit::Microsecond, None) => (None, "timestamp without time zone"),
            other => return exec_err!("date_trunc of {other}"),
        };
        let fields = datafusion::arrow::compute::cast(fields, &DataType::Utf8)?;
        let fields = fields.as_string::<i32>();
        let values = values.as_primitive::<TimestampMicrosecondType>();
        let mut out = Vec::with_capacity(values.len());
        for i in 0..values.len() {
            if fields.is_null(i) || values.is_null(i) {
                out.push(None);
                continue;
            }
            let unit = unit(fields.value(i), type_name).map_err(failed)?;
            let cut = truncate_us(values.value(i), unit, zone.as_ref())
                .ok_or_else(|| failed(QueryError::Engine { sqlstate: "22008", message: "timestamp out of range".into() }))?;
            out.push(Some(cut));
        }
        let tz = zone.map(|_| match args.args[1].data_type() {
            DataType::Timestamp(_, Some(tz)) => tz,
            _ => self.session.clone(),
        });
        super::columnar(&args.args, Arc::new(TimestampMicrosecondArray::from(out).with_timezone_opt(tz)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap()
    }

    /// PostgreSQL 15's answers.
    #[test]
    fn intervals_truncated_as_postgresql_truncates() {
        let hour = 3_600_000_000;
        assert_eq!(truncate_interval(0, 2, 3 * hour + 40 * 60_000_000 + 5_500_000, Unit::Hour).unwrap(), (0, 2, 3 * hour));
        assert_eq!(truncate_interval(17, 3, 0, Unit::Quarter).unwrap(), (15, 0, 0));
        assert_eq!(truncate_interval(303, 0, 0, Unit::Decade).unwrap(), (240, 0, 0));
        assert_eq!(truncate_interval(0, 0, 1_234_567, Unit::Milliseconds).unwrap(), (0, 0, 1_234_000));
        assert_eq!(truncate_interval(0, 0, -(90 * 60_000_000 + 20_000_000), Unit::Minute).unwrap(), (0, 0, -90 * 60_000_000));
        assert_eq!(truncate_interval(-14, -3, 0, Unit::Month).unwrap(), (-14, 0, 0));
        assert_eq!(truncate_interval(-3000, 0, 0, Unit::Century).unwrap(), (-2400, 0, 0));
        assert_eq!(truncate_interval(0, 3, 25 * hour, Unit::Day).unwrap(), (0, 3, 0));
        assert_eq!(truncate_interval(0, 1, -1_000_000, Unit::Second).unwrap(), (0, 1, -1_000_000));
        assert_eq!(truncate_interval(-1, 0, 0, Unit::Year).unwrap(), (0, 0, 0));
        assert_eq!(truncate_interval(0, 2, 0, Unit::Week).unwrap_err().sqlstate(), "0A000");
    }

    #[test]
    fn truncated_as_postgresql_truncates() {
        let cut = |s: &str, u: Unit| truncate(at(s), u).unwrap().format("%Y-%m-%d %H:%M:%S%.6f").to_string();
        assert_eq!(cut("2020-05-17 10:11:12.345678", Unit::Milliseconds), "2020-05-17 10:11:12.345000");
        assert_eq!(cut("2020-05-17 10:11:12.345678", Unit::Minute), "2020-05-17 10:11:00.000000");
        assert_eq!(cut("2020-05-17 10:11:12", Unit::Week), "2020-05-11 00:00:00.000000");
        assert_eq!(cut("2020-05-17 10:11:12", Unit::Quarter), "2020-04-01 00:00:00.000000");
        assert_eq!(cut("2020-05-17 10:11:12", Unit::Decade), "2020-01-01 00:00:00.000000");
        assert_eq!(cut("2020-05-17 10:11:12", Unit::Century), "2001-01-01 00:00:00.000000");
        assert_eq!(cut("2000-05-17 10:11:12", Unit::Century), "1901-01-01 00:00:00.000000");
        assert_eq!(cut("2020-05-17 10:11:12", Unit::Millennium), "2001-01-01 00:00:00.000000");
        assert_eq!(cut("9999-12-31 23:59:59", Unit::Month), "9999-12-01 00:00:00.000000");
        // Year 0 is 1 BC: its decade is itself (PostgreSQL's `0001-01-01 BC`), its century starts in 100 BC
        // (year -99), its millennium in 1000 BC; 101 BC's century in 200 BC; the decade of the year 5 is 1 BC.
        assert_eq!(cut("0000-06-01 00:00:00", Unit::Decade), "0000-01-01 00:00:00.000000");
        assert_eq!(cut("0000-06-01 00:00:00", Unit::Century), "-0099-01-01 00:00:00.000000");
        assert_eq!(cut("0000-06-01 00:00:00", Unit::Millennium), "-0999-01-01 00:00:00.000000");
        assert_eq!(cut("-0010-06-01 00:00:00", Unit::Decade), "-0010-01-01 00:00:00.000000");
        assert_eq!(cut("-0100-06-01 00:00:00", Unit::Century), "-0199-01-01 00:00:00.000000");
        assert_eq!(cut("0005-01-01 00:00:00", Unit::Decade), "0000-01-01 00:00:00.000000");
        assert_eq!(unit("Months", "x").ok(), Some(Unit::Month));
        assert_eq!(unit("timezone", "timestamp without time zone").unwrap_err().sqlstate(), "0A000");
        assert_eq!(unit("epoch", "timestamp without time zone").unwrap_err().sqlstate(), "22023");
        assert_eq!(unit("fortnight", "timestamp without time zone").unwrap_err().sqlstate(), "22023");
    }
}
