//! `EXTRACT(field FROM x)` and `date_part('field', x)` on the analytic route, as PostgreSQL 15 answers them.
//!
//! DataFusion's `date_part` answers integers where PostgreSQL's `extract` answers `numeric` (`1.500000`
//! seconds, `1704067201.500000` for an epoch) and `date_part` a `double precision`; it truncates seconds to
//! whole ones, and knows neither `decade`, `century`, `millennium`, `julian` nor the zone's offset. Here:
//! - the units are PostgreSQL's, with its synonyms and abbreviations (`secs`, `mon`, `y`, `microseconds`);
//! - `extract` answers a `numeric` of PostgreSQL's scale: 6 for `second` and `epoch` (0 for the epoch of a
//!   date), 3 for `milliseconds`, 0 for the rest; `date_part` answers the same value as a `double precision`;
//! - a timestamptz's fields are those of its local time in the zone its column is shown in (the session's),
//!   and `timezone`, `timezone_hour`, `timezone_minute` give that zone's offset east of Greenwich;
//! - a unit a type does not have (`hour` of a date, `dow` of an interval) is 0A000 and an unknown unit
//!   22023, in PostgreSQL's words. As in PostgreSQL, `date_part` reads a date as the timestamp at its
//!   midnight, so every timestamp unit applies.
//!
//! `extract(julian from timestamp)` is refused (0A000): PostgreSQL answers it as a quotient printed with a
//! scale of its own division rules, which is not reproduced here; `date_part('julian', ts)` is built.

use std::sync::Arc;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, FieldRef, IntervalMonthDayNanoType, IntervalUnit, Time64MicrosecondType, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;
use crate::types::Zone;

/// The name the rewriter gives `EXTRACT(field FROM x)`.
pub const EXTRACT: &str = "pg_extract";

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Extract {
    signature: Signature,
    aliases: Vec<String>,
    /// `extract` (a numeric) rather than `date_part` (a double).
    numeric: bool,
}

impl Extract {
    /// `EXTRACT`: a numeric.
    pub fn numeric() -> Extract {
        Extract { signature: Signature::user_defined(Volatility::Immutable), aliases: vec![], numeric: true }
    }

    pub fn date_part() -> Extract {
        // DataFusion's alias too: a state built again from the session's registers each function under its
        // name and aliases, in no set order, and DataFusion's `date_part` would come back under its alias.
        Extract { signature: Signature::user_defined(Volatility::Immutable), aliases: vec!["datepart".into()], numeric: false }
    }
}

/// A field of a date or time, by PostgreSQL's names; ordered from the microsecond up to the millennium
/// first (`date_trunc` truncates to those).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Unit {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    Julian,
    IsoYear,
    Dow,
    IsoDow,
    Doy,
    Epoch,
    Timezone,
    TimezoneHour,
    TimezoneMinute,
}

/// A unit by any of PostgreSQL's names for it, which it compares in lower case and cut to 10 characters
/// (its `TOKMAXLEN`: `microseconds` is `microsecon`).
pub(super) fn unit(name: &str) -> Option<Unit> {
    use Unit::*;
    let lower = name.to_lowercase();
    let cut = match lower.char_indices().nth(10) {
        Some((i, _)) => &lower[..i],
        None => &lower,
    };
    Some(match cut {
        "us" | "usec" | "usecs" | "usecond" | "useconds" | "microsecon" => Microseconds,
        "ms" | "msec" | "msecs" | "msecond" | "mseconds" | "millisecon" => Milliseconds,
        "s" | "sec" | "secs" | "second" | "seconds" => Second,
        "m" | "min" | "mins" | "minute" | "minutes" => Minute,
        "h" | "hr" | "hrs" | "hour" | "hours" => Hour,
        "d" | "day" | "days" => Day,
        "w" | "week" | "weeks" => Week,
        "mon" | "mons" | "month" | "months" => Month,
        "qtr" | "quarter" => Quarter,
        "y" | "yr" | "yrs" | "year" | "years" => Year,
        "dec" | "decs" | "decade" | "decades" => Decade,
        "c" | "cent" | "century" | "centuries" => Century,
        "mil" | "mils" | "millennia" | "millennium" => Millennium,
        "j" | "jd" | "julian" => Julian,
        "isoyear" => IsoYear,
        "dow" => Dow,
        "isodow" => IsoDow,
        "doy" => Doy,
        "epoch" => Epoch,
        "timezone" => Timezone,
        "timezone_h" => TimezoneHour,
        "timezone_m" => TimezoneMinute,
        _ => return None,
    })
}

/// The argument's kind, as the units are defined over them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Date,
    Timestamp,
    TimestampTz,
    Time,
    Interval,
}

impl Kind {
    fn of(t: &DataType) -> Option<Kind> {
        Some(match t {
            DataType::Date32 | DataType::Date64 => Kind::Date,
            DataType::Timestamp(_, None) => Kind::Timestamp,
            DataType::Timestamp(_, Some(_)) => Kind::TimestampTz,
            DataType::Time32(_) | DataType::Time64(_) => Kind::Time,
            DataType::Interval(_) => Kind::Interval,
            _ => return None,
        })
    }

    fn pg_name(self) -> &'static str {
        match self {
            Kind::Date => "date",
            Kind::Timestamp => "timestamp without time zone",
            Kind::TimestampTz => "timestamp with time zone",
            Kind::Time => "time without time zone",
            Kind::Interval => "interval",
        }
    }

    /// Whether PostgreSQL's `extract` of this kind has the unit.
    fn has(self, u: Unit) -> bool {
        use Unit::*;
        let time = matches!(u, Microseconds | Milliseconds | Second | Minute | Hour | Epoch);
        match self {
            Kind::Time => time,
            Kind::Interval => time || matches!(u, Day | Month | Quarter | Year | Decade | Century | Millennium),
            Kind::Date => u == Epoch || !(time || matches!(u, Timezone | TimezoneHour | TimezoneMinute)),
            Kind::Timestamp => !matches!(u, Timezone | TimezoneHour | TimezoneMinute),
            Kind::TimestampTz => true,
        }
    }
}

fn error(e: QueryError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The unit named by the first argument, and the kind it is taken of (`date_part` takes a date's as a
/// timestamp's), or PostgreSQL's error.
fn resolve(numeric: bool, name: &str, kind: Kind) -> Result<(Unit, Kind)> {
    let kind = if !numeric && kind == Kind::Date { Kind::Timestamp } else { kind };
    let Some(u) = unit(name) else {
        return Err(error(QueryError::InvalidParameterValue(format!(
            "unit \"{}\" not recognized for type {}",
            name.to_lowercase(),
            kind.pg_name()
        ))));
    };
    if !kind.has(u) {
        return Err(error(QueryError::FeatureNotSupported(format!(
            "unit \"{}\" not supported for type {}",
            name.to_lowercase(),
            kind.pg_name()
        ))));
    }
    if numeric && u == Unit::Julian && kind != Kind::Date {
        return Err(error(QueryError::NotSupported(format!(
            "EXTRACT(julian FROM {}) is not built: date_part('julian', x) gives it as a double precision",
            kind.pg_name()
        ))));
    }
    Ok((u, kind))
}

/// The digits after the point of `extract`'s numeric.
fn scale(u: Unit, kind: Kind) -> i8 {
    match u {
        Unit::Second => 6,
        Unit::Epoch if kind != Kind::Date => 6,
        Unit::Milliseconds => 3,
        _ => 0,
    }
}

/// PostgreSQL's year of a calendar year: there is no year 0, 1 BC is -1.
fn pg_year(y: i32) -> i64 {
    if y > 0 {
        y as i64
    } else {
        y as i64 - 1
    }
}

/// The decade, century and millennium of a year (astronomical: 0 is 1 BC) as PostgreSQL counts them (the
/// first century is 1-100).
fn era(u: Unit, y: i64) -> i64 {
    match u {
        Unit::Decade if y > 0 => y / 10,
        Unit::Decade => -((8 - (y - 1)) / 10),
        Unit::Century if y > 0 => (y + 99) / 100,
        Unit::Century => -((99 - (y - 1)) / 100),
        Unit::Millennium if y > 0 => (y + 999) / 1000,
        _ => -((999 - (y - 1)) / 1000),
    }
}

/// The days from the Julian period's start to 1970-01-01.
const UNIX_JULIAN_DAY: i64 = 2_440_588;

/// A unit of a local date and time, in units of 10^-scale (`us`: the microseconds of the instant since
/// the epoch; `east`: the zone's offset, seconds).
fn of_datetime(u: Unit, kind: Kind, local: NaiveDateTime, us: i64, east: i32) -> i128 {
    use Unit::*;
    let d = local.date();
    let in_minute = local.second() as i128 * 1_000_000 + (local.nanosecond() / 1000) as i128;
    let y = pg_year(d.year());
    (match u {
        Microseconds | Milliseconds | Second => return in_minute,
        Epoch if kind == Kind::Date => us.div_euclid(1_000_000),
        Epoch => return us as i128,
        Minute => local.minute() as i64,
        Hour => local.hour() as i64,
        Day => d.day() as i64,
        Week => d.iso_week().week() as i64,
        Month => d.month() as i64,
        Quarter => (d.month() as i64 - 1) / 3 + 1,
        Year => y,
        Decade | Century | Millennium => era(u, d.year() as i64),
        Julian => (d - NaiveDate::default()).num_days() + UNIX_JULIAN_DAY,
        IsoYear => pg_year(d.iso_week().year()),
        Dow => d.weekday().num_days_from_sunday() as i64,
        IsoDow => d.weekday().number_from_monday() as i64,
        Doy => d.ordinal() as i64,
        Timezone => east as i64,
        TimezoneHour => (east / 3600) as i64,
        TimezoneMinute => (east / 60 % 60) as i64,
    }) as i128
}

/// A unit of an interval, as PostgreSQL splits one: years and months, days, and a time of any length.
fn of_interval(u: Unit, months: i32, days: i32, us: i64) -> i128 {
    use Unit::*;
    let (hours, rest) = (us / 3_600_000_000, us % 3_600_000_000);
    let (minutes, in_minute) = (rest / 60_000_000, rest % 60_000_000);
    let years = (months / 12) as i64;
    (match u {
        Microseconds | Milliseconds | Second => in_minute,
        Minute => minutes,
        Hour => hours,
        Day => days as i64,
        Month => (months % 12) as i64,
        Quarter => (months % 12 / 3 + 1) as i64,
        Year => years,
        Decade => years / 10,
        Century => years / 100,
        Millennium => years / 1000,
        // A year is 365.25 days, a month 30.
        Epoch => return us as i128 + 1_000_000 * (31_557_600 * years as i128 + 2_592_000 * (months % 12) as i128 + 86_400 * days as i128),
        _ => 0,
    }) as i128
}

const US: TimeUnit = TimeUnit::Microsecond;

/// Every row's unit, in units of 10^-scale; `None` for NULL.
fn values(u: Unit, kind: Kind, array: &ArrayRef) -> Result<Vec<Option<i128>>> {
    let out_of_range = || error(QueryError::NumericOutOfRange("timestamp out of range".into()));
    Ok(match kind {
        Kind::Date => {
            let a = cast(array, &DataType::Date32)?;
            a.as_primitive::<Date32Type>()
                .iter()
                .map(|d| {
                    d.map(|d| {
                        let us = d as i64 * 86_400_000_000;
                        let local = chrono::DateTime::from_timestamp_micros(us).ok_or_else(out_of_range)?.naive_utc();
                        Ok(of_datetime(u, kind, local, us, 0))
                    })
                    .transpose()
                })
                .collect::<Result<_>>()?
        }
        Kind::Timestamp | Kind::TimestampTz => {
            let zone = match array.data_type() {
                DataType::Timestamp(_, Some(label)) => Zone::of_arrow(label),
                _ => Zone::UTC,
            };
            let a = cast(array, &DataType::Timestamp(US, None))?;
            a.as_primitive::<TimestampMicrosecondType>()
                .iter()
                .map(|v| {
                    v.map(|us| {
                        let local = zone.local_of(us).ok_or_else(out_of_range)?;
                        Ok(of_datetime(u, kind, local, us, zone.offset_at(us)))
                    })
                    .transpose()
                })
                .collect::<Result<_>>()?
        }
        Kind::Time => {
            let a = cast(array, &DataType::Time64(US))?;
            a.as_primitive::<Time64MicrosecondType>().iter().map(|t| t.map(|us| of_interval(u, 0, 0, us))).collect()
        }
        Kind::Interval => {
            let a = cast(array, &DataType::Interval(IntervalUnit::MonthDayNano))?;
            a.as_primitive::<IntervalMonthDayNanoType>()
                .iter()
                .map(|i| i.map(|i| of_interval(u, i.months, i.days, i.nanoseconds / 1000)))
                .collect()
        }
    })
}

/// The first argument's text: a unit is always written as a constant.
fn unit_name(v: Option<&ScalarValue>) -> Option<String> {
    v.and_then(|v| v.try_as_str().flatten()).map(str::to_string)
}

impl ScalarUDFImpl for Extract {
    fn name(&self) -> &str {
        if self.numeric {
            EXTRACT
        } else {
            "date_part"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    // A type without units is passed on as it is, and refused by `return_field_from_args`: DataFusion
    // rewords an error of this function's into one of its own.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [_, x] = arg_types else { return exec_err!("{}(unit, value) takes two arguments", self.name()) };
        let x = match x {
            DataType::Timestamp(_, tz) => DataType::Timestamp(US, tz.clone()),
            DataType::Date64 => DataType::Date32,
            DataType::Time32(_) | DataType::Time64(_) => DataType::Time64(US),
            DataType::Interval(_) => DataType::Interval(IntervalUnit::MonthDayNano),
            other => other.clone(),
        };
        Ok(vec![DataType::Utf8, x])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        exec_err!("return_field_from_args gives {}'s type", self.name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let Some(name) = unit_name(args.scalar_arguments.first().copied().flatten()) else {
            return Err(error(QueryError::NotSupported(format!("{} with a unit that is not a constant", self.name()))));
        };
        let Some(kind) = Kind::of(args.arg_fields[1].data_type()) else {
            let name = if self.numeric { "extract" } else { "date_part" };
            let ty = super::arrow::sql_type(&args.arg_fields[1]).pg_name();
            return Err(error(QueryError::UndefinedFunction(format!("{name}(unknown, {ty})"))));
        };
        let (u, kind) = resolve(self.numeric, &name, kind)?;
        let ty = if self.numeric { DataType::Decimal128(38, scale(u, kind)) } else { DataType::Float64 };
        Ok(Arc::new(Field::new(self.name(), ty, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [name, x] = args.args.as_slice() else { return exec_err!("{}(unit, value) takes two arguments", self.name()) };
        let ColumnarValue::Scalar(name) = name else { return exec_err!("{}'s unit is a constant", self.name()) };
        let name = unit_name(Some(name)).unwrap_or_default();
        let kind = Kind::of(&x.data_type()).ok_or_else(|| DataFusionError::Plan("not a date or time".into()))?;
        let (u, kind) = resolve(self.numeric, &name, kind)?;
        let scalar = matches!(x, ColumnarValue::Scalar(_));
        let rows = if scalar { 1 } else { args.number_rows };
        let array = x.to_array(rows)?;
        let values = if !self.numeric && u == Unit::Julian && kind != Kind::Date {
            // The day's fraction too: noon is half a day (PostgreSQL's `date_part`, not `extract`).
            let days = values(u, kind, &array)?;
            let hours = values(Unit::Hour, kind, &array)?;
            let minutes = values(Unit::Minute, kind, &array)?;
            let in_minute = values(Unit::Microseconds, kind, &array)?;
            let out: Float64Array = (0..days.len())
                .map(|i| {
                    let us = (hours[i]? * 60 + minutes[i]?) * 60_000_000 + in_minute[i]?;
                    Some(days[i]? as f64 + us as f64 / 86_400_000_000.0)
                })
                .collect();
            Arc::new(out) as ArrayRef
        } else {
            let v = values(u, kind, &array)?;
            let s = scale(u, kind);
            if self.numeric {
                Arc::new(Decimal128Array::from(v).with_precision_and_scale(38, s)?) as ArrayRef
            } else {
                let div = 10f64.powi(s as i32);
                Arc::new(v.into_iter().map(|v| v.map(|v| v as f64 / div)).collect::<Float64Array>()) as ArrayRef
            }
        };
        Ok(if scalar { ColumnarValue::Scalar(ScalarValue::try_from_array(&values, 0)?) } else { ColumnarValue::Array(values) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_by_postgresql_names() {
        assert_eq!(unit("MicroSeconds"), Some(Unit::Microseconds));
        assert_eq!(unit("timezone_hour"), Some(Unit::TimezoneHour));
        assert_eq!(unit("mon"), Some(Unit::Month));
        assert_eq!(unit("fortnight"), None);
    }

    #[test]
    fn eras_as_postgresql_counts_them() {
        assert_eq!(era(Unit::Century, 2000), 20);
        assert_eq!(era(Unit::Century, 2001), 21);
        assert_eq!(era(Unit::Millennium, 2001), 3);
        assert_eq!(era(Unit::Decade, 2024), 202);
        // 1 BC, 2 BC
        assert_eq!(era(Unit::Century, 0), -1);
        assert_eq!(era(Unit::Decade, -1), -1);
        assert_eq!(pg_year(0), -1);
    }

    #[test]
    fn interval_parts() {
        // 1 year 2 months 3 days 04:05:06.5
        let us = ((4 * 60 + 5) * 60 + 6) * 1_000_000 + 500_000;
        assert_eq!(of_interval(Unit::Second, 14, 3, us), 6_500_000);
        assert_eq!(of_interval(Unit::Month, 14, 3, us), 2);
        assert_eq!(of_interval(Unit::Quarter, 14, 3, us), 1);
        assert_eq!(of_interval(Unit::Epoch, 1, 0, 0), 2_592_000_000_000);
    }
}
