//! `to_char(timestamp, template)` as PostgreSQL 15 formats it, on the analytic route.
//!
//! DataFusion's `to_char` takes a strftime format, and a translation of PostgreSQL's template into one
//! loses what strftime cannot say: `Month` and `Day` are blank-padded to 9 characters, `MON` is upper case,
//! `FM` drops padding, `TH` adds an ordinal suffix, `OF` prints `+05:30` or `+00`, and `Q`, `W`, `J`, `CC`,
//! `RM`, `IYYY`, `SSSS`, `FF1`-`FF6` have no strftime field. This is PostgreSQL's formatter
//! (`formatting.c`): the same keywords matched the same way (the first in its table that the text starts
//! with, case-sensitive), `"quoted text"` and `\"` copied, every other character copied.
//!
//! A date is formatted as the timestamp at its midnight, a timestamptz in its local time in the zone it is
//! shown in (the session's). Numbers and intervals are refused (0A000): PostgreSQL's number templates
//! (`999D99`) are not built.

use std::fmt::Write;
use std::sync::Arc;

use chrono::{Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;
use crate::types::Zone;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ToChar {
    signature: Signature,
    aliases: Vec<String>,
}

impl ToChar {
    pub fn new() -> ToChar {
        // DataFusion's alias too, so that its `to_char` does not come back under it when a session's state
        // is built again from the registered functions.
        ToChar { signature: Signature::user_defined(Volatility::Stable), aliases: vec!["date_format".into()] }
    }
}

/// PostgreSQL's template keywords, in the order of its table: the first one the text starts with is taken
/// (`HH24` before `HH`, `MONTH` before `MON`).
const KEYWORDS: &[&str] = &[
    "A.D.", "A.M.", "AD", "AM", "B.C.", "BC", "CC", "DAY", "DDD", "DD", "DY", "Day", "Dy", "D", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6",
    "FX", "HH24", "HH12", "HH", "IDDD", "ID", "IW", "IYYY", "IYY", "IY", "I", "J", "MI", "MM", "MONTH", "MON", "MS", "Month", "Mon", "OF",
    "P.M.", "PM", "Q", "RM", "SSSSS", "SSSS", "SS", "TZH", "TZM", "TZ", "US", "WW", "W", "Y,YYY", "YYYY", "YYY", "YY", "Y", "a.d.", "a.m.",
    "ad", "am", "b.c.", "bc", "cc", "day", "ddd", "dd", "dy", "d", "ff1", "ff2", "ff3", "ff4", "ff5", "ff6", "fx", "hh24", "hh12", "hh",
    "iddd", "id", "iw", "iyyy", "iyy", "iy", "i", "j", "mi", "mm", "month", "mon", "ms", "of", "p.m.", "pm", "q", "rm", "sssss", "ssss",
    "ss", "tz", "us", "ww", "w", "y,yyy", "yyyy", "yyy", "yy", "y",
];

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    /// A keyword (as written, and in upper case), with `FM` (no padding) and `TH`/`th` (an ordinal suffix,
    /// upper case or not).
    Field {
        key: &'static str,
        upper: String,
        fm: bool,
        th: Option<bool>,
    },
}

/// A template as PostgreSQL's `parse_format` reads it.
fn parse(template: &str) -> Vec<Node> {
    let mut nodes = Vec::new();
    let mut text = String::new();
    let mut rest = template;
    while !rest.is_empty() {
        let mut fm = false;
        for prefix in ["FM", "fm", "TM", "tm"] {
            if let Some(r) = rest.strip_prefix(prefix) {
                fm |= prefix.eq_ignore_ascii_case("FM");
                rest = r;
                break;
            }
        }
        if let Some(key) = KEYWORDS.iter().find(|k| rest.starts_with(**k)) {
            rest = &rest[key.len()..];
            let th = if let Some(r) = rest.strip_prefix("TH") {
                rest = r;
                Some(true)
            } else if let Some(r) = rest.strip_prefix("th") {
                rest = r;
                Some(false)
            } else {
                None
            };
            if !text.is_empty() {
                nodes.push(Node::Text(std::mem::take(&mut text)));
            }
            nodes.push(Node::Field { key, upper: key.to_uppercase(), fm, th });
            continue;
        }
        let mut chars = rest.chars();
        match chars.next() {
            Some('"') => {
                // Quoted text, in which a backslash quotes the next character.
                let mut inner = chars;
                loop {
                    match inner.next() {
                        None | Some('"') => break,
                        Some('\\') => match inner.next() {
                            Some(c) => text.push(c),
                            None => text.push('\\'),
                        },
                        Some(c) => text.push(c),
                    }
                }
                rest = inner.as_str();
            }
            // Outside quotes a backslash is special only before a double quote.
            Some('\\') if rest[1..].starts_with('"') => {
                text.push('"');
                rest = &rest[2..];
            }
            Some(c) => {
                text.push(c);
                rest = chars.as_str();
            }
            None => {}
        }
    }
    if !text.is_empty() {
        nodes.push(Node::Text(text));
    }
    nodes
}

const MONTHS: [&str; 12] =
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const ROMAN: [&str; 12] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

/// The English ordinal suffix of a number's text (`11th`, `21st`).
fn ordinal(num: &str, upper: bool) -> &'static str {
    let b = num.as_bytes();
    let last = if b.len() > 1 && b[b.len() - 2] == b'1' { b'0' } else { b.last().copied().unwrap_or(b'0') };
    match (last, upper) {
        (b'1', true) => "ST",
        (b'1', false) => "st",
        (b'2', true) => "ND",
        (b'2', false) => "nd",
        (b'3', true) => "RD",
        (b'3', false) => "rd",
        (_, true) => "TH",
        (_, false) => "th",
    }
}

/// A number padded with zeros to `width` (a minus sign counts), or not at all in fill mode.
fn padded(v: i64, width: usize, fm: bool) -> String {
    if fm {
        v.to_string()
    } else if v < 0 {
        format!("-{:0>w$}", -v, w = width.saturating_sub(1))
    } else {
        format!("{v:0>width$}")
    }
}

/// A name left-justified in 9 characters, or not padded in fill mode, in the keyword's case.
fn name(n: &str, key: &str, width: usize, fm: bool) -> String {
    let n = if key.chars().all(|c| c.is_ascii_uppercase()) {
        n.to_uppercase()
    } else if key.chars().all(|c| c.is_ascii_lowercase()) {
        n.to_lowercase()
    } else {
        n.to_string()
    };
    if fm {
        n
    } else {
        format!("{n:<width$}")
    }
}

/// One local date and time, with its instant's zone (`None` for a timestamp without one).
struct Moment {
    local: NaiveDateTime,
    /// Seconds east, and the zone's abbreviation.
    zone: Option<(i32, String)>,
}

fn format(nodes: &[Node], m: &Moment, out: &mut String) {
    let d = m.local.date();
    let y = d.year() as i64;
    // The year as written: 1 BC (astronomical 0) is 1.
    let shown = |y: i64| if y <= 0 { 1 - y } else { y };
    let year = shown(y);
    let iso_year = shown(d.iso_week().year() as i64);
    let hour = m.local.hour() as i64;
    let us = (m.local.nanosecond() / 1000) as i64;
    let east = m.zone.as_ref().map(|z| z.0).unwrap_or(0);
    for node in nodes {
        let (key, upper, fm, th) = match node {
            Node::Text(t) => {
                out.push_str(t);
                continue;
            }
            Node::Field { key, upper, fm, th } => (*key, upper, *fm, *th),
        };
        let lower_case = key.chars().any(|c| c.is_ascii_lowercase());
        let numeric = |v: i64, width: usize| padded(v, width, fm);
        let text = match upper.as_str() {
            "A.D." | "B.C." => (if y <= 0 { "B.C." } else { "A.D." }).to_string(),
            "AD" | "BC" => (if y <= 0 { "BC" } else { "AD" }).to_string(),
            "A.M." | "P.M." => (if hour >= 12 { "P.M." } else { "A.M." }).to_string(),
            "AM" | "PM" => (if hour >= 12 { "PM" } else { "AM" }).to_string(),
            "HH" | "HH12" => numeric(if hour % 12 == 0 { 12 } else { hour % 12 }, 2),
            "HH24" => numeric(hour, 2),
            "MI" => numeric(m.local.minute() as i64, 2),
            "SS" => numeric(m.local.second() as i64, 2),
            "MS" => format!("{:03}", us / 1000),
            "US" => format!("{us:06}"),
            "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
                let digits = (upper.as_bytes()[2] - b'0') as u32;
                format!("{:0w$}", us / 10i64.pow(6 - digits), w = digits as usize)
            }
            "SSSS" | "SSSSS" => m.local.num_seconds_from_midnight().to_string(),
            "TZ" => match &m.zone {
                Some((_, abbr)) if lower_case => abbr.to_lowercase(),
                Some((_, abbr)) => abbr.clone(),
                None => String::new(),
            },
            "TZH" => format!("{}{:02}", if east >= 0 { '+' } else { '-' }, east.abs() / 3600),
            "TZM" => format!("{:02}", east.abs() % 3600 / 60),
            "OF" => {
                let mut s = format!("{}{}", if east >= 0 { '+' } else { '-' }, padded((east.abs() / 3600) as i64, 2, fm));
                if east.abs() % 3600 != 0 {
                    let _ = write!(s, ":{:02}", east.abs() % 3600 / 60);
                }
                s
            }
            "MONTH" => name(MONTHS[d.month0() as usize], key, 9, fm),
            "MON" => name(&MONTHS[d.month0() as usize][..3], key, 0, true),
            "MM" => numeric(d.month() as i64, 2),
            "DAY" => name(DAYS[d.weekday().num_days_from_sunday() as usize], key, 9, fm),
            "DY" => name(&DAYS[d.weekday().num_days_from_sunday() as usize][..3], key, 0, true),
            "DDD" => numeric(d.ordinal() as i64, 3),
            "IDDD" => numeric((d.iso_week().week() as i64 - 1) * 7 + d.weekday().number_from_monday() as i64, 3),
            "DD" => numeric(d.day() as i64, 2),
            "D" => (d.weekday().num_days_from_sunday() + 1).to_string(),
            "ID" => d.weekday().number_from_monday().to_string(),
            "WW" => numeric((d.ordinal() as i64 - 1) / 7 + 1, 2),
            "IW" => numeric(d.iso_week().week() as i64, 2),
            "W" => ((d.day() - 1) / 7 + 1).to_string(),
            "Q" => (d.month0() / 3 + 1).to_string(),
            "CC" => {
                let c = if y > 0 { (y - 1) / 100 + 1 } else { y / 100 - 1 };
                if (-99..=99).contains(&c) {
                    padded(c, if c >= 0 { 2 } else { 3 }, fm)
                } else {
                    c.to_string()
                }
            }
            "J" => (d.num_days_from_ce() as i64 + 1_721_425).to_string(),
            "Y,YYY" => format!("{},{:03}", year / 1000, year % 1000),
            "YYYY" => numeric(year, 4),
            "YYY" => numeric(year % 1000, 3),
            "YY" => numeric(year % 100, 2),
            "Y" => numeric(year % 10, 1),
            "IYYY" => numeric(iso_year, 4),
            "IYY" => numeric(iso_year % 1000, 3),
            "IY" => numeric(iso_year % 100, 2),
            "I" => numeric(iso_year % 10, 1),
            "RM" => name(ROMAN[d.month0() as usize], key, 4, fm),
            // FX only matters to parsing.
            _ => String::new(),
        };
        let text = if lower_case && matches!(upper.as_str(), "A.D." | "B.C." | "AD" | "BC" | "A.M." | "P.M." | "AM" | "PM") {
            text.to_lowercase()
        } else {
            text
        };
        out.push_str(&text);
        // Numbers take the suffix; names, markers and offsets do not.
        let number = !matches!(
            upper.as_str(),
            "A.D."
                | "B.C."
                | "AD"
                | "BC"
                | "A.M."
                | "P.M."
                | "AM"
                | "PM"
                | "MONTH"
                | "MON"
                | "DAY"
                | "DY"
                | "RM"
                | "TZ"
                | "TZH"
                | "TZM"
                | "OF"
                | "FX"
        );
        if let (Some(th_upper), true) = (th, number) {
            out.push_str(ordinal(&text, th_upper));
        }
    }
}

fn not_built(what: &str) -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::NotSupported(format!("to_char of {what} is not built: only dates and timestamps"))))
}

const US: TimeUnit = TimeUnit::Microsecond;

impl ScalarUDFImpl for ToChar {
    fn name(&self) -> &str {
        "to_char"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    // A type that is refused is passed on as it is, and refused by `return_type`: DataFusion rewords an
    // error of this function's into one of its own.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [x, _] = arg_types else { return exec_err!("to_char(value, template) takes two arguments") };
        let x = match x {
            DataType::Timestamp(_, tz) => DataType::Timestamp(US, tz.clone()),
            DataType::Date32 | DataType::Date64 => DataType::Timestamp(US, None),
            other => other.clone(),
        };
        Ok(vec![x, DataType::Utf8])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(DataType::Timestamp(..)) => Ok(DataType::Utf8),
            Some(DataType::Interval(_)) => Err(not_built("an interval")),
            Some(DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null) | None => {
                Err(DataFusionError::External(Box::new(QueryError::UndefinedFunction("to_char(unknown, unknown)".into()))))
            }
            Some(other) => {
                let ty = super::arrow::sql_type(&Field::new("", other.clone(), true));
                Err(not_built(&format!("a value of type {}", ty.pg_name())))
            }
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [x, template] = args.args.as_slice() else { return exec_err!("to_char(value, template) takes two arguments") };
        let scalar = matches!((x, template), (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let zone = match x.data_type() {
            DataType::Timestamp(_, Some(label)) => Some(Zone::of_arrow(&label)),
            _ => None,
        };
        let values = cast(&x.to_array(rows)?, &DataType::Timestamp(US, None))?;
        let values = values.as_primitive::<TimestampMicrosecondType>();
        let templates: ArrayRef = cast(&template.to_array(rows)?, &DataType::Utf8)?;
        let templates = templates.as_string::<i32>();
        let out_of_range = || DataFusionError::External(Box::new(QueryError::NumericOutOfRange("timestamp out of range".into())));
        // The template is almost always one constant: parsed once per distinct text.
        let mut parsed: Option<(String, Vec<Node>)> = None;
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            if values.is_null(i) || templates.is_null(i) {
                out.push(None);
                continue;
            }
            let t = templates.value(i);
            if parsed.as_ref().is_none_or(|(p, _)| p != t) {
                parsed = Some((t.to_string(), parse(t)));
            }
            let us = values.value(i);
            let moment = match zone {
                Some(z) => {
                    // The abbreviation is looked up only for a template that prints it.
                    let tz =
                        parsed.as_ref().is_some_and(|(_, n)| n.iter().any(|n| matches!(n, Node::Field { upper, .. } if upper == "TZ")));
                    let name = if tz { z.abbreviation_at(us) } else { String::new() };
                    Moment { local: z.local_of(us).ok_or_else(out_of_range)?, zone: Some((z.offset_at(us), name)) }
                }
                None => Moment { local: chrono::DateTime::from_timestamp_micros(us).ok_or_else(out_of_range)?.naive_utc(), zone: None },
            };
            let mut s = String::new();
            format(parsed.as_ref().map(|p| p.1.as_slice()).unwrap_or_default(), &moment, &mut s);
            out.push(Some(s));
        }
        let array = StringArray::from(out);
        Ok(if scalar { ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?) } else { ColumnarValue::Array(Arc::new(array)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str, template: &str, zone: Option<(i32, &str)>) -> String {
        let local = NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap();
        let mut out = String::new();
        format(&parse(template), &Moment { local, zone: zone.map(|(e, a)| (e, a.to_string())) }, &mut out);
        out
    }

    #[test]
    fn formats_as_postgresql() {
        let t = "2024-07-04 15:05:09.123456";
        assert_eq!(at(t, "YYYY-MM-DD HH24:MI:SS.US", None), "2024-07-04 15:05:09.123456");
        assert_eq!(at(t, "Month|MONTH|month|Mon|MON|FMMonth|", None), "July     |JULY     |july     |Jul|JUL|July|");
        assert_eq!(at(t, "Day DY dy FMDay", None), "Thursday  THU thu Thursday");
        assert_eq!(at(t, "HH12 AM a.m. pm", None), "03 PM p.m. pm");
        assert_eq!(at(t, "DDTH ddth FMDDth Q W WW IW CC J RM", None), "04TH 04th 4th 3 1 27 27 21 2460496 VII ");
        assert_eq!(at(t, "\"YYYY is\" YYYY \\\"x", None), "YYYY is 2024 \"x");
        assert_eq!(at(t, "TZ OF TZH:TZM", Some((19_800, "IST"))), "IST +05:30 +05:30");
        assert_eq!(at(t, "tz OF FF3 SSSS", Some((-18_000, "EST"))), "est -05 123 54309");
        assert_eq!(at(t, "TZ OF", None), " +00");
        assert_eq!(at("2024-01-11 00:00:00", "DDth", None), "11th");
    }
}
