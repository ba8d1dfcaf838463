//! SQL types and values, how they are stored on the engine's five types, and their PostgreSQL text forms.

use std::fmt;

use chrono::{NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;
use std::str::FromStr;
use tabula_store::PkType;

use crate::error::{QueryError, Result};

mod binary;
mod interval;
mod lent;
pub mod letter_case;
pub mod numeric;
pub mod numeric_math;
mod stored;
mod text;
mod zone;

pub use binary::{decode_binary, encode_binary};
pub use interval::{duration_text, interval_text};
pub use lent::{DatumRef, Lent};
pub use numeric::{arithmetic as numeric_arithmetic, fit_numeric, numeric_spec, NumericOp};
use text::*;
pub use text::{format_float, parse_text_array, quote_array_element};
pub use zone::{Setting as ZoneSetting, Zone};

/// A declared SQL type. The catalog keeps it so clients see what was declared, whatever the engine stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqlType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Text,
    Varchar,
    /// `character(n)`, PostgreSQL's bpchar, with its `n` (0: `bpchar` without a length, only in casts).
    /// Its values are held without their trailing spaces, which PostgreSQL's comparisons, hashing, `length`
    /// and casts to text ignore; they are padded to `n` only on the way out ([`SqlType::pad`]) and where
    /// PostgreSQL reads the padded value (LIKE, regular expressions, `concat`, `octet_length`). So keys,
    /// indexes, joins and GROUP BY need nothing of their own.
    Bpchar(u32),
    Bytea,
    Timestamp,
    Timestamptz,
    Date,
    Json,
    Jsonb,
    Uuid,
    /// A one-dimensional array, held as PostgreSQL's text form (`{a,"b c",NULL}`). Arrays come out of the
    /// analytic engine (catalog columns, array_agg); tables cannot declare them.
    TextArray,
    /// An interval, held as PostgreSQL's text form (`1 day 02:00:00`): intervals come out of the analytic
    /// engine; tables cannot declare them (`types::interval`).
    Interval,
    /// An untyped literal or parameter whose type nothing decided yet.
    Unknown,
}

impl SqlType {
    /// PostgreSQL's OID of the type.
    pub fn oid(self) -> u32 {
        use SqlType::*;
        match self {
            Bool => 16,
            Bytea => 17,
            Int8 => 20,
            Int2 => 21,
            Int4 => 23,
            Text => 25,
            Json => 114,
            Float4 => 700,
            Float8 => 701,
            Unknown => 705,
            Varchar => 1043,
            Bpchar(_) => 1042,
            Date => 1082,
            Timestamp => 1114,
            Timestamptz => 1184,
            Numeric => 1700,
            Uuid => 2950,
            Jsonb => 3802,
            TextArray => 1009,
            Interval => 1186,
        }
    }

    pub fn from_oid(oid: u32) -> Option<SqlType> {
        use SqlType::*;
        [
            Bool,
            Bytea,
            Int8,
            Int2,
            Int4,
            Text,
            Json,
            Float4,
            Float8,
            Unknown,
            Varchar,
            Bpchar(0),
            Date,
            Timestamp,
            Timestamptz,
            Numeric,
            Uuid,
            Jsonb,
            TextArray,
        ]
        .into_iter()
        .find(|t| t.oid() == oid)
    }

    /// The name `format_type` and `\d` show.
    pub fn pg_name(self) -> &'static str {
        use SqlType::*;
        match self {
            Bool => "boolean",
            Int2 => "smallint",
            Int4 => "integer",
            Int8 => "bigint",
            Float4 => "real",
            Float8 => "double precision",
            Numeric => "numeric",
            Text => "text",
            Varchar => "character varying",
            Bpchar(_) => "character",
            Bytea => "bytea",
            Timestamp => "timestamp without time zone",
            Timestamptz => "timestamp with time zone",
            Date => "date",
            Json => "json",
            Jsonb => "jsonb",
            Uuid => "uuid",
            TextArray => "text[]",
            Interval => "interval",
            Unknown => "unknown",
        }
    }

    /// The name pg_type gives it (`typname`): information_schema's `udt_name`, and the name of a result
    /// column that is a cast (`SELECT 'x'::varchar` is a column `varchar`).
    pub fn typname(self) -> &'static str {
        use SqlType::*;
        match self {
            Bool => "bool",
            Int2 => "int2",
            Int4 => "int4",
            Int8 => "int8",
            Float4 => "float4",
            Float8 => "float8",
            Numeric => "numeric",
            Text | Unknown => "text",
            Varchar => "varchar",
            Bpchar(_) => "bpchar",
            Bytea => "bytea",
            Timestamp => "timestamp",
            Timestamptz => "timestamptz",
            Date => "date",
            Json => "json",
            Jsonb => "jsonb",
            Uuid => "uuid",
            TextArray => "_text",
            Interval => "interval",
        }
    }

    /// The type a function taking text sees a value of this type as: a bpchar is cast to text, which
    /// drops its padding (`upper`, `length`, `||`).
    pub fn unpadded(self) -> SqlType {
        match self {
            SqlType::Bpchar(_) => SqlType::Text,
            t => t,
        }
    }

    /// The engine type a primary-key column of this SQL type uses, if it may be one.
    pub fn pk_type(self) -> Option<PkType> {
        use SqlType::*;
        match self {
            Text | Varchar | Bpchar(_) => Some(PkType::String),
            Int2 | Int4 | Int8 => Some(PkType::Integer),
            Bytea => Some(PkType::Binary),
            _ => None,
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(self, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
    }

    pub fn is_numeric(self) -> bool {
        self.is_integer() || matches!(self, SqlType::Float4 | SqlType::Float8 | SqlType::Numeric)
    }

    pub fn is_text(self) -> bool {
        matches!(self, SqlType::Text | SqlType::Varchar | SqlType::Bpchar(_) | SqlType::Unknown)
    }

    /// A `character(n)`'s value as PostgreSQL prints it: padded with spaces to `n` characters. `None`: no
    /// padding needed (another type, or already `n` long).
    pub fn pad(self, s: &str) -> Option<String> {
        let SqlType::Bpchar(n) = self else { return None };
        let missing = (n as usize).checked_sub(s.chars().count()).filter(|m| *m > 0)?;
        let mut padded = String::with_capacity(s.len() + missing);
        padded.push_str(s);
        padded.extend(std::iter::repeat_n(' ', missing));
        Some(padded)
    }

    /// Parses a type name as SQL writes it.
    pub fn parse(name: &str) -> Option<SqlType> {
        use SqlType::*;
        let n = name.trim().to_ascii_lowercase();
        let base = n.split('(').next().unwrap_or("").trim();
        let length = || n.split_once('(').and_then(|(_, l)| l.trim_end_matches(')').trim().parse::<u32>().ok());
        Some(match base {
            "bool" | "boolean" => Bool,
            "int2" | "smallint" | "smallserial" => Int2,
            "int" | "int4" | "integer" | "serial" => Int4,
            "int8" | "bigint" | "bigserial" => Int8,
            "float4" | "real" => Float4,
            // `float(p)` is a real up to 24 bits of precision, as in PostgreSQL.
            "float" if length().is_some_and(|p| p <= 24) => Float4,
            "float8" | "double precision" | "double" | "float" => Float8,
            "numeric" | "decimal" => Numeric,
            "text" | "string" => Text,
            "varchar" | "character varying" | "name" => Varchar,
            "char" | "character" => Bpchar(length().unwrap_or(1)),
            "bpchar" => Bpchar(length().unwrap_or(0)),
            "bytea" => Bytea,
            "timestamp" | "timestamp without time zone" => Timestamp,
            "timestamptz" | "timestamp with time zone" => Timestamptz,
            "date" => Date,
            "json" => Json,
            "jsonb" => Jsonb,
            "uuid" => Uuid,
            _ => return None,
        })
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::Bpchar(n) if *n > 0 => write!(f, "character({n})"),
            SqlType::Bpchar(_) => f.write_str("bpchar"),
            t => f.write_str(t.pg_name()),
        }
    }
}

/// A table row as expressions see it: declared columns in order, then `_version`.
pub type SqlRow = Vec<Datum>;

/// A SQL value.
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Null,
    Bool(bool),
    /// Any integer type; the column's declared type says which.
    Int(i64),
    Float(f64),
    /// Text, varchar, json and jsonb.
    Text(String),
    Numeric(Decimal),
    Bytes(Vec<u8>),
    /// Microseconds since the epoch (timestamp and timestamptz, in UTC).
    Timestamp(i64),
    /// Days since the epoch.
    Date(i32),
    Uuid(u128),
}

fn invalid(ty: SqlType, s: &str) -> QueryError {
    let message = format!("invalid input syntax for type {}: \"{s}\"", ty.pg_name());
    match ty {
        SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date => QueryError::InvalidDatetime(message),
        _ => QueryError::InvalidText(message),
    }
}

pub fn out_of_range(ty: SqlType) -> QueryError {
    QueryError::NumericOutOfRange(format!("{} out of range", ty.pg_name()))
}

fn int_range(ty: SqlType, v: i64) -> Result<i64> {
    let ok = match ty {
        SqlType::Int2 => i16::try_from(v).is_ok(),
        SqlType::Int4 => i32::try_from(v).is_ok(),
        _ => true,
    };
    if ok {
        Ok(v)
    } else {
        Err(QueryError::NumericOutOfRange(format!("value \"{v}\" is out of range for type {}", ty.pg_name())))
    }
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// Parses PostgreSQL's text form of a value of `ty`, a `timestamptz` without an offset as UTC: for
    /// text that comes from Tabula (stored defaults, keys); what a session reads goes through [`Datum::parse_in`].
    pub fn parse(ty: SqlType, s: &str) -> Result<Datum> {
        Datum::parse_in(ty, s, &Zone::UTC)
    }

    /// Parses PostgreSQL's text form of a value of `ty`; a `timestamptz` without an offset is a local time
    /// in `zone`, the session's.
    pub fn parse_in(ty: SqlType, s: &str, zone: &Zone) -> Result<Datum> {
        use SqlType::*;
        Ok(match ty {
            Bool => match s.trim().to_ascii_lowercase().as_str() {
                "t" | "true" | "yes" | "y" | "on" | "1" => Datum::Bool(true),
                "f" | "false" | "no" | "n" | "off" | "0" => Datum::Bool(false),
                _ => return Err(invalid(ty, s)),
            },
            Int2 | Int4 | Int8 => {
                let t = s.trim();
                match t.parse::<i64>() {
                    Ok(v) => Datum::Int(int_range(ty, v)?),
                    Err(_) if !t.is_empty() && t.trim_start_matches(['-', '+']).bytes().all(|b| b.is_ascii_digit()) => {
                        return Err(QueryError::NumericOutOfRange(format!("value \"{t}\" is out of range for type {}", ty.pg_name())))
                    }
                    Err(_) => return Err(invalid(ty, s)),
                }
            }
            Float4 | Float8 => Datum::Float(parse_float_in(ty, s)?),
            Numeric => {
                let t = s.trim();
                let d = Decimal::from_str(t).or_else(|_| Decimal::from_scientific(t)).map_err(|_| {
                    if t.parse::<f64>().is_ok() && !t.contains(['i', 'I', 'n', 'N']) {
                        out_of_range(ty)
                    } else {
                        invalid(ty, s)
                    }
                })?;
                Datum::Numeric(d)
            }
            Text | Varchar | Unknown | TextArray | Interval => Datum::Text(s.to_string()),
            Bpchar(_) => Datum::Text(s.trim_end_matches(' ').to_string()),
            Json => {
                crate::json::check(s)?;
                Datum::Text(s.to_string())
            }
            Jsonb => Datum::Text(crate::json::to_jsonb(s)?),
            Bytea => Datum::Bytes(parse_bytea(s).ok_or_else(|| invalid(ty, s))?),
            Timestamp | Timestamptz => {
                Datum::Timestamp(parse_timestamp(s, (ty == Timestamptz).then_some(zone)).ok_or_else(|| invalid(ty, s))?)
            }
            Date => {
                let (body, bc) = text::strip_bc(s);
                let d = NaiveDate::parse_from_str(body.trim(), "%Y-%m-%d").ok().and_then(|d| text::before_christ(d, bc));
                let d = d.ok_or_else(|| invalid(ty, s))?;
                Datum::Date((d - NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days() as i32)
            }
            Uuid => Datum::Uuid(parse_uuid(s).ok_or_else(|| invalid(ty, s))?),
        })
    }

    /// PostgreSQL's text form, `None` for NULL; a `timestamptz` in UTC (`+00`), which reads back the same
    /// in any zone. What a session shows goes through [`Datum::text_in`].
    pub fn to_pg_text(&self, ty: SqlType) -> Option<String> {
        self.text_in(ty, &Zone::UTC)
    }

    /// PostgreSQL's text form (what psql prints), `None` for NULL; a `timestamptz` as local time and offset
    /// in `zone`, the session's.
    pub fn text_in(&self, ty: SqlType, zone: &Zone) -> Option<String> {
        Some(match self {
            Datum::Null => return None,
            Datum::Bool(b) => if *b { "t" } else { "f" }.to_string(),
            Datum::Int(i) => i.to_string(),
            Datum::Float(f) => format_float(*f, ty == SqlType::Float4),
            Datum::Text(s) => ty.pad(s).unwrap_or_else(|| s.clone()),
            // A negated zero is zero (rust_decimal keeps the sign: `-0`).
            Datum::Numeric(d) if d.is_zero() => d.abs().to_string(),
            Datum::Numeric(d) => d.to_string(),
            Datum::Bytes(b) => {
                let mut s = String::with_capacity(2 + b.len() * 2);
                s.push_str("\\x");
                for byte in b {
                    s.push_str(&format!("{byte:02x}"));
                }
                s
            }
            Datum::Timestamp(us) => format_timestamp(*us, (ty == SqlType::Timestamptz).then_some(zone)),
            Datum::Date(d) => format_date(*d),
            Datum::Uuid(u) => {
                let h = format!("{u:032x}");
                format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
            }
        })
    }

    /// Converts a value to `ty` as an assignment or explicit cast does, where neither side is a
    /// `timestamptz` that depends on the session's zone ([`Datum::cast_in`]).
    pub fn cast(self, ty: SqlType) -> Result<Datum> {
        use SqlType::*;
        Ok(match (self, ty) {
            (Datum::Null, _) => Datum::Null,
            (d, Unknown) => d,
            (Datum::Text(s), t) if !t.is_text() => Datum::parse(t, &s)?,
            (Datum::Text(mut s), Bpchar(_)) => {
                s.truncate(s.trim_end_matches(' ').len());
                Datum::Text(s)
            }
            (Datum::Text(s), _) => Datum::Text(s),
            (Datum::Int(i), t) if t.is_integer() => Datum::Int(int_range(t, i)?),
            (Datum::Int(i), Float4 | Float8) => Datum::Float(i as f64),
            (Datum::Int(i), Numeric) => Datum::Numeric(Decimal::from(i)),
            (Datum::Numeric(d), Numeric) => Datum::Numeric(d),
            (Datum::Numeric(d), Float4 | Float8) => Datum::Float(d.to_string().parse().unwrap_or(f64::NAN)),
            (Datum::Numeric(d), t) if t.is_integer() => {
                let r = d.round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
                Datum::Int(int_range(t, r.to_string().parse::<i64>().map_err(|_| out_of_range(t))?)?)
            }
            (Datum::Int(i), Bool) => Datum::Bool(i != 0),
            (Datum::Float(f), t) if t.is_integer() => {
                let r = f.round_ties_even();
                if !r.is_finite() || r < i64::MIN as f64 || r > i64::MAX as f64 {
                    return Err(out_of_range(t));
                }
                Datum::Int(int_range(t, r as i64)?)
            }
            (Datum::Float(f), Float8) => Datum::Float(f),
            (Datum::Float(f), Float4) => Datum::Float(narrow(f).ok_or_else(|| {
                QueryError::NumericOutOfRange(format!("value out of range: {}", if f.abs() > 1.0 { "overflow" } else { "underflow" }))
            })?),
            (Datum::Float(f), Numeric) => Datum::Numeric(Decimal::from_str(&f.to_string()).map_err(|_| out_of_range(Numeric))?),
            (Datum::Bool(b), t) if t.is_integer() => Datum::Int(b as i64),
            (Datum::Bool(b), Bool) => Datum::Bool(b),
            // A cast spells the value out (PostgreSQL's booltext), where output and || give `t` and `f`.
            (Datum::Bool(b), t) if t.is_text() => Datum::Text(if b { "true" } else { "false" }.into()),
            (Datum::Bytes(b), Bytea) => Datum::Bytes(b),
            (Datum::Timestamp(t), Timestamp | Timestamptz) => Datum::Timestamp(t),
            (Datum::Timestamp(t), Date) => Datum::Date(t.div_euclid(86_400_000_000) as i32),
            (Datum::Date(d), Date) => Datum::Date(d),
            (Datum::Date(d), Timestamp | Timestamptz) => Datum::Timestamp(d as i64 * 86_400_000_000),
            (Datum::Uuid(u), Uuid) => Datum::Uuid(u),
            (d, t) if t.is_text() || t == Json || t == Jsonb => {
                // Anything has a text form.
                let from = d.natural_type();
                Datum::Text(d.to_pg_text(from).unwrap_or_default())
            }
            (d, t) => {
                return Err(QueryError::DatatypeMismatch(format!("cannot cast type {} to {}", d.natural_type().pg_name(), t.pg_name())))
            }
        })
    }

    /// An explicit cast (`x::character(n)`): as [`Datum::cast`], but a `character(n)` keeps only its first
    /// `n` characters, as PostgreSQL's explicit cast does (an assignment refuses a longer value instead).
    pub fn cast_explicit(self, ty: SqlType) -> Result<Datum> {
        match (self.cast(ty)?, ty) {
            (Datum::Text(mut s), SqlType::Bpchar(n)) if n > 0 => {
                if let Some((cut, _)) = s.char_indices().nth(n as usize) {
                    s.truncate(cut);
                    s.truncate(s.trim_end_matches(' ').len());
                }
                Ok(Datum::Text(s))
            }
            (v, _) => Ok(v),
        }
    }

    /// The type a value has when nothing declared one.
    pub fn natural_type(&self) -> SqlType {
        match self {
            Datum::Null => SqlType::Unknown,
            Datum::Bool(_) => SqlType::Bool,
            Datum::Int(_) => SqlType::Int8,
            Datum::Float(_) => SqlType::Float8,
            Datum::Text(_) => SqlType::Text,
            Datum::Numeric(_) => SqlType::Numeric,
            Datum::Bytes(_) => SqlType::Bytea,
            Datum::Timestamp(_) => SqlType::Timestamp,
            Datum::Date(_) => SqlType::Date,
            Datum::Uuid(_) => SqlType::Uuid,
        }
    }

    /// SQL comparison; `None` when either side is NULL or the types do not compare.
    pub fn sql_cmp(&self, other: &Datum) -> Option<std::cmp::Ordering> {
        use Datum::*;
        match (self, other) {
            (Null, _) | (_, Null) => None,
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (Float(a), Float(b)) => Some(a.total_cmp(b)),
            (Int(a), Float(b)) => Some((*a as f64).total_cmp(b)),
            (Float(a), Int(b)) => Some(a.total_cmp(&(*b as f64))),
            (Text(a), Text(b)) => Some(a.cmp(b)),
            (Numeric(a), Numeric(b)) => Some(a.cmp(b)),
            (Numeric(a), Int(b)) => Some(a.cmp(&Decimal::from(*b))),
            (Int(a), Numeric(b)) => Some(Decimal::from(*a).cmp(b)),
            (Numeric(a), Float(b)) => a.to_string().parse::<f64>().ok().map(|a| a.total_cmp(b)),
            (Float(a), Numeric(b)) => b.to_string().parse::<f64>().ok().map(|b| a.total_cmp(&b)),
            (Bytes(a), Bytes(b)) => Some(a.cmp(b)),
            (Timestamp(a), Timestamp(b)) => Some(a.cmp(b)),
            (Date(a), Date(b)) => Some(a.cmp(b)),
            (Timestamp(a), Date(b)) => Some(a.cmp(&(*b as i64 * 86_400_000_000))),
            (Date(a), Timestamp(b)) => Some((*a as i64 * 86_400_000_000).cmp(b)),
            (Uuid(a), Uuid(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    /// Ordering for ORDER BY: NULLs last ascending (PostgreSQL's default).
    pub fn sort_cmp(&self, other: &Datum) -> std::cmp::Ordering {
        match (self.is_null(), other.is_null()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            _ => self.sql_cmp(other).unwrap_or(std::cmp::Ordering::Equal),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_text_matches_postgres() {
        assert_eq!(format_float(1.5, false), "1.5");
        assert_eq!(format_float(0.1, false), "0.1");
        assert_eq!(format_float(1e20, false), "1e+20");
        assert_eq!(format_float(1e-5, false), "1e-05");
        assert_eq!(format_float(123456.0, false), "123456");
        assert_eq!(format_float(f64::NAN, false), "NaN");
    }

    #[test]
    fn parse_and_print() {
        assert_eq!(Datum::parse(SqlType::Int4, "12").unwrap(), Datum::Int(12));
        assert_eq!(Datum::parse(SqlType::Int4, "abc").unwrap_err().sqlstate(), "22P02");
        assert_eq!(Datum::parse(SqlType::Int2, "70000").unwrap_err().sqlstate(), "22003");
        let ts = Datum::parse(SqlType::Timestamp, "2016-07-20 00:00:00").unwrap();
        assert_eq!(ts, Datum::Timestamp(1468972800000000));
        assert_eq!(ts.to_pg_text(SqlType::Timestamp).unwrap(), "2016-07-20 00:00:00");
        let u = Datum::parse(SqlType::Uuid, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
        assert_eq!(u.to_pg_text(SqlType::Uuid).unwrap(), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        assert_eq!(Datum::parse(SqlType::Bytea, "\\x0aff").unwrap(), Datum::Bytes(vec![10, 255]));
    }
}
