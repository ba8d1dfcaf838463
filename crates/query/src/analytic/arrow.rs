//! Between Tabula's values and Arrow's: SQL types as Arrow types, rows as record batches and back, and
//! parameters as DataFusion scalars.
//!
//! Text-like declared types (varchar, json, jsonb, uuid) travel as Utf8 with the declared type in the
//! field's metadata, so a column read straight through DataFusion still reaches the client with its type.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::*;
use datafusion::arrow::datatypes::*;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;
use rust_decimal::Decimal;

use crate::error::{QueryError, Result};
use crate::types::{Datum, SqlType};

/// Field metadata key holding the declared SQL type.
pub const TYPE_KEY: &str = "tabula.type";

/// The element field's name of a list that is one of PostgreSQL's vector types (int2vector,
/// oidvector), whose text form is its elements separated by spaces, not an array's braces.
pub const VECTOR_FIELD: &str = "vector";
/// Scale numeric values carry inside DataFusion (Decimal128(38, NUMERIC_SCALE)).
pub const NUMERIC_SCALE: i8 = 10;

pub fn arrow_type(ty: SqlType) -> DataType {
    use SqlType::*;
    match ty {
        Bool => DataType::Boolean,
        Int2 => DataType::Int16,
        Int4 => DataType::Int32,
        Int8 => DataType::Int64,
        Float4 => DataType::Float32,
        Float8 => DataType::Float64,
        Numeric => DataType::Decimal128(38, NUMERIC_SCALE),
        Text | Varchar | Bpchar(_) | Json | Jsonb | Uuid | Unknown | TextArray | Interval => DataType::Utf8,
        Bytea => DataType::Binary,
        Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        Timestamptz => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Date => DataType::Date32,
    }
}

/// The Arrow field of a table's column: a `numeric(p, s)` column's values are Decimal128 of scale `s`, so
/// what DataFusion computes from them keeps PostgreSQL's scale (`sum` of numeric(10,2) values prints
/// 1.50, a product 2.2500); an unconstrained numeric's carry [`NUMERIC_SCALE`].
pub fn column_field(c: &crate::schema::ColumnDef, nullable: bool) -> Field {
    match (c.ty, c.numeric) {
        (SqlType::Numeric, Some((_, s))) => Field::new(&c.name, DataType::Decimal128(38, s as i8), nullable),
        _ => field(&c.name, c.ty, nullable),
    }
}

/// An Arrow field for a column of declared type `ty`.
pub fn field(name: &str, ty: SqlType, nullable: bool) -> Field {
    let f = Field::new(name, arrow_type(ty), nullable);
    if matches!(ty, SqlType::Varchar | SqlType::Bpchar(_) | SqlType::Json | SqlType::Jsonb | SqlType::Uuid) {
        // `character(4)`: a bpchar's length, which its values are padded to on the way out.
        f.with_metadata(HashMap::from([(TYPE_KEY.to_string(), ty.to_string())]))
    } else {
        f
    }
}

/// The SQL type a result field reaches the client as.
pub fn sql_type(f: &Field) -> SqlType {
    if let Some(t) = f.metadata().get(TYPE_KEY).and_then(|n| SqlType::parse(n)) {
        if matches!(f.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
            return t;
        }
    }
    sql_type_of(f.data_type())
}

pub fn sql_type_of(dt: &DataType) -> SqlType {
    use DataType as D;
    match dt {
        D::Boolean => SqlType::Bool,
        D::Int8 | D::Int16 | D::UInt8 => SqlType::Int2,
        D::Int32 | D::UInt16 => SqlType::Int4,
        D::Int64 | D::UInt32 | D::UInt64 => SqlType::Int8,
        D::Float16 | D::Float32 => SqlType::Float4,
        D::Float64 => SqlType::Float8,
        D::Decimal32(..) | D::Decimal64(..) | D::Decimal128(..) | D::Decimal256(..) => SqlType::Numeric,
        D::Binary | D::LargeBinary | D::BinaryView | D::FixedSizeBinary(_) => SqlType::Bytea,
        D::Timestamp(_, None) => SqlType::Timestamp,
        D::Timestamp(_, Some(_)) => SqlType::Timestamptz,
        D::Date32 | D::Date64 => SqlType::Date,
        D::Dictionary(_, v) => sql_type_of(v),
        // A vector's text (`1 2`) is no array literal: sent as text.
        D::List(f) if f.name() == VECTOR_FIELD => SqlType::Text,
        D::List(_) | D::LargeList(_) | D::FixedSizeList(..) | D::ListView(_) => SqlType::TextArray,
        D::Interval(_) | D::Duration(_) => SqlType::Interval,
        // Text, NULL, and everything without a PostgreSQL counterpart here (lists print as arrays).
        _ => SqlType::Text,
    }
}

fn internal(e: impl std::fmt::Display) -> QueryError {
    QueryError::Internal(e.to_string())
}

/// `d` as a Decimal128 of scale `scale`.
fn decimal_to_i128(d: &Decimal, scale: i8) -> Result<i128> {
    let mut d = *d;
    d.rescale(scale as u32);
    if d.scale() != scale as u32 {
        return Err(QueryError::NumericOutOfRange("numeric value out of range for the analytic engine".into()));
    }
    Ok(d.mantissa())
}

/// Rows of SQL values (in `fields` order) as one record batch.
pub fn rows_to_batch(schema: &SchemaRef, rows: &[Vec<Datum>]) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (i, f) in schema.fields().iter().enumerate() {
        let cells = rows.iter().map(|r| &r[i]);
        let ty = sql_type(f);
        let array: ArrayRef = match f.data_type() {
            DataType::Boolean => Arc::new(
                cells
                    .map(|d| match d {
                        Datum::Bool(b) => Some(*b),
                        _ => None,
                    })
                    .collect::<BooleanArray>(),
            ),
            DataType::Int16 => Arc::new(cells.map(|d| d.as_int().map(|v| v as i16)).collect::<Int16Array>()),
            DataType::Int32 => Arc::new(cells.map(|d| d.as_int().map(|v| v as i32)).collect::<Int32Array>()),
            DataType::Int64 => Arc::new(cells.map(|d| d.as_int()).collect::<Int64Array>()),
            DataType::Float32 => Arc::new(cells.map(|d| float(d).map(|v| v as f32)).collect::<Float32Array>()),
            DataType::Float64 => Arc::new(cells.map(float).collect::<Float64Array>()),
            DataType::Decimal128(p, s) => {
                let mut b = Decimal128Builder::with_capacity(rows.len());
                for d in cells {
                    match d {
                        Datum::Numeric(n) => b.append_value(decimal_to_i128(n, *s)?),
                        Datum::Int(v) => b.append_value(decimal_to_i128(&Decimal::from(*v), *s)?),
                        _ => b.append_null(),
                    }
                }
                Arc::new(b.finish().with_precision_and_scale(*p, *s).map_err(internal)?)
            }
            DataType::Utf8 => {
                let mut b = StringBuilder::with_capacity(rows.len(), rows.len() * 8);
                for d in cells {
                    match d {
                        Datum::Null => b.append_null(),
                        Datum::Text(s) => b.append_value(s),
                        other => b.append_option(other.to_pg_text(ty)),
                    }
                }
                Arc::new(b.finish())
            }
            DataType::Binary => Arc::new(
                cells
                    .map(|d| match d {
                        Datum::Bytes(b) => Some(b.as_slice()),
                        _ => None,
                    })
                    .collect::<BinaryArray>(),
            ),
            DataType::Timestamp(TimeUnit::Microsecond, tz) => {
                let a = cells
                    .map(|d| match d {
                        Datum::Timestamp(us) => Some(*us),
                        _ => None,
                    })
                    .collect::<TimestampMicrosecondArray>();
                Arc::new(a.with_timezone_opt(tz.clone()))
            }
            DataType::Date32 => Arc::new(
                cells
                    .map(|d| match d {
                        Datum::Date(v) => Some(*v),
                        _ => None,
                    })
                    .collect::<Date32Array>(),
            ),
            other => return Err(internal(format!("no conversion to Arrow type {other}"))),
        };
        columns.push(array);
    }
    RecordBatch::try_new_with_options(schema.clone(), columns, &RecordBatchOptions::new().with_row_count(Some(rows.len())))
        .map_err(internal)
}

fn float(d: &Datum) -> Option<f64> {
    match d {
        Datum::Float(f) => Some(*f),
        Datum::Int(i) => Some(*i as f64),
        _ => None,
    }
}

/// One record batch as SQL rows, each cell typed as `types` says.
pub fn batch_to_rows(batch: &RecordBatch, types: &[SqlType], out: &mut Vec<Vec<Datum>>) -> Result<()> {
    let n = batch.num_rows();
    let start = out.len();
    out.extend((0..n).map(|_| Vec::with_capacity(types.len())));
    let schema = batch.schema();
    for ((c, ty), field) in batch.columns().iter().zip(types).zip(schema.fields()) {
        let mut cells = column_datums(c, *ty)?;
        // Only while the column holds the quotients themselves: a cast to `numeric(p, s)` keeps the metadata
        // and gives its own scale.
        let quotients = matches!(field.data_type(), DataType::Decimal128(_, s) if *s == super::quotient::QUOTIENT_SCALE as i8);
        if let Some(floor) = field.metadata().get(super::quotient::QUOTIENT_KEY).and_then(|f| f.parse().ok()).filter(|_| quotients) {
            quotient_scales(&mut cells, floor, field.metadata().contains_key(super::quotient::PLAIN_ZERO_KEY));
        }
        for (row, d) in out[start..].iter_mut().zip(cells) {
            row.push(d);
        }
    }
    Ok(())
}

/// Each quotient with the places PostgreSQL prints it with (`quotient::display_scale`).
fn quotient_scales(cells: &mut [Datum], floor: u32, plain_zero: bool) {
    for cell in cells {
        if let Datum::Numeric(d) = cell {
            if plain_zero && d.is_zero() {
                continue;
            }
            let q = crate::types::numeric::Fixed { mantissa: d.mantissa(), scale: d.scale() };
            let scale = super::quotient::display_scale(q, floor);
            if scale > d.scale() {
                d.rescale(scale);
            }
        }
    }
}

fn column_datums(a: &ArrayRef, ty: SqlType) -> Result<Vec<Datum>> {
    use DataType as D;
    let n = a.len();
    let mut out = Vec::with_capacity(n);
    macro_rules! each {
        ($arr:expr, $f:expr) => {{
            let arr = $arr;
            for i in 0..n {
                out.push(if arr.is_null(i) { Datum::Null } else { $f(arr.value(i)) });
            }
        }};
    }
    match a.data_type() {
        D::Null => out.resize(n, Datum::Null),
        D::Boolean => each!(a.as_boolean(), Datum::Bool),
        D::Int8 => each!(a.as_primitive::<Int8Type>(), |v: i8| Datum::Int(v as i64)),
        D::Int16 => each!(a.as_primitive::<Int16Type>(), |v: i16| Datum::Int(v as i64)),
        D::Int32 => each!(a.as_primitive::<Int32Type>(), |v: i32| Datum::Int(v as i64)),
        D::Int64 => each!(a.as_primitive::<Int64Type>(), Datum::Int),
        D::UInt8 => each!(a.as_primitive::<UInt8Type>(), |v: u8| Datum::Int(v as i64)),
        D::UInt16 => each!(a.as_primitive::<UInt16Type>(), |v: u16| Datum::Int(v as i64)),
        D::UInt32 => each!(a.as_primitive::<UInt32Type>(), |v: u32| Datum::Int(v as i64)),
        D::UInt64 => each!(a.as_primitive::<UInt64Type>(), |v: u64| Datum::Int(v as i64)),
        D::Float32 => each!(a.as_primitive::<Float32Type>(), |v: f32| Datum::Float(v as f64)),
        D::Float64 => each!(a.as_primitive::<Float64Type>(), Datum::Float),
        D::Decimal128(_, s) => {
            let s = *s;
            each!(a.as_primitive::<Decimal128Type>(), |v: i128| decimal_datum(v, s))
        }
        D::Utf8 | D::LargeUtf8 | D::Utf8View => {
            let strings: Vec<Option<&str>> = match a.data_type() {
                D::Utf8 => a.as_string::<i32>().iter().collect(),
                D::LargeUtf8 => a.as_string::<i64>().iter().collect(),
                _ => a.as_string_view().iter().collect(),
            };
            for s in strings {
                out.push(match s {
                    None => Datum::Null,
                    Some(s) if ty == SqlType::Uuid => Datum::parse(ty, s)?,
                    Some(s) => Datum::Text(s.to_string()),
                });
            }
        }
        D::Binary => each!(a.as_binary::<i32>(), |v: &[u8]| Datum::Bytes(v.to_vec())),
        D::LargeBinary => each!(a.as_binary::<i64>(), |v: &[u8]| Datum::Bytes(v.to_vec())),
        D::BinaryView => each!(a.as_binary_view(), |v: &[u8]| Datum::Bytes(v.to_vec())),
        D::Timestamp(unit, _) => {
            let per_us = per_us(unit);
            let ints = datafusion::arrow::compute::cast(a, &D::Int64).map_err(internal)?;
            each!(ints.as_primitive::<Int64Type>(), |v: i64| Datum::Timestamp(v * per_us.0 / per_us.1))
        }
        // PostgreSQL's text of an interval; a duration (a difference of timestamps) in whole days and a time.
        D::Interval(_) => {
            let a = datafusion::arrow::compute::cast(a, &D::Interval(IntervalUnit::MonthDayNano)).map_err(internal)?;
            each!(a.as_primitive::<IntervalMonthDayNanoType>(), |v: IntervalMonthDayNano| Datum::Text(crate::types::interval_text(
                v.months,
                v.days,
                v.nanoseconds / 1000
            )))
        }
        D::Duration(unit) => {
            let per_us = per_us(unit);
            let ints = datafusion::arrow::compute::cast(a, &D::Int64).map_err(internal)?;
            each!(ints.as_primitive::<Int64Type>(), |v: i64| Datum::Text(crate::types::duration_text(v * per_us.0 / per_us.1)))
        }
        // A time of day as PostgreSQL prints it: fractions without trailing zeros (`23:59:59.5`).
        D::Time32(unit) | D::Time64(unit) => {
            let per_us = per_us(unit);
            let ints = datafusion::arrow::compute::cast(a, &D::Int64).map_err(internal)?;
            each!(ints.as_primitive::<Int64Type>(), |v: i64| Datum::Text(time_text(v * per_us.0 / per_us.1)))
        }
        D::Date32 => each!(a.as_primitive::<Date32Type>(), Datum::Date),
        D::Date64 => each!(a.as_primitive::<Date64Type>(), |v: i64| Datum::Date((v / 86_400_000) as i32)),
        D::Dictionary(..) => {
            let plain = datafusion::arrow::compute::cast(a, &dictionary_value_type(a.data_type())).map_err(internal)?;
            return column_datums(&plain, ty);
        }
        _ => {
            for i in 0..n {
                out.push(if a.is_null(i) { Datum::Null } else { Datum::Text(pg_text(a, i)?) });
            }
        }
    }
    Ok(out)
}

/// A time of day, `us` microseconds after midnight, in PostgreSQL's text.
fn time_text(us: i64) -> String {
    let (secs, frac) = (us.div_euclid(1_000_000), us.rem_euclid(1_000_000));
    let mut t = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac > 0 {
        t.push_str(format!(".{frac:06}").trim_end_matches('0'));
    }
    t
}

/// What turns a count of `unit` into microseconds: multiply by the first, divide by the second.
fn per_us(unit: &TimeUnit) -> (i64, i64) {
    match unit {
        TimeUnit::Second => (1_000_000, 1),
        TimeUnit::Millisecond => (1000, 1),
        TimeUnit::Microsecond => (1, 1),
        TimeUnit::Nanosecond => (1, 1000),
    }
}

fn dictionary_value_type(dt: &DataType) -> DataType {
    match dt {
        DataType::Dictionary(_, v) => v.as_ref().clone(),
        other => other.clone(),
    }
}

fn decimal_datum(v: i128, scale: i8) -> Datum {
    if scale < 0 {
        // A negative scale counts zeros before the point (`1e3` may be 1 of scale -3).
        return match 10i128.checked_pow(scale.unsigned_abs().into()).and_then(|f| v.checked_mul(f)) {
            Some(v) => decimal_datum(v, 0),
            None => Datum::Text(format!("{v}{}", "0".repeat(scale.unsigned_abs().into()))),
        };
    }
    if (0..=28).contains(&scale) {
        if let Ok(d) = Decimal::try_from_i128_with_scale(v, scale as u32) {
            // Trailing zeros of the fixed scale, or of a scale arithmetic widened, are not the value's:
            // PostgreSQL prints 2.5, not 2.5000000000. A narrower scale was asked for (`numeric(5,2)`,
            // `round(x, 2)`) and is kept, as PostgreSQL prints 49.60.
            return Datum::Numeric(if scale < NUMERIC_SCALE { d } else { d.normalize() });
        }
    }
    // Out of rust_decimal's range: the exact digits as text.
    Datum::Text(format_decimal(v, scale))
}

fn format_decimal(v: i128, scale: i8) -> String {
    let neg = v < 0;
    let digits = v.unsigned_abs().to_string();
    let s = scale.max(0) as usize;
    let (int, frac) = if digits.len() > s { digits.split_at(digits.len() - s) } else { ("0", digits.as_str()) };
    let frac = format!("{frac:0>s$}");
    format!("{}{}{}{}", if neg { "-" } else { "" }, int, if s > 0 { "." } else { "" }, frac)
}

/// PostgreSQL's text of cell `i` of `a` (None: NULL), as its type's output function writes it; a
/// timestamp with a zone in that zone (the session's).
pub(super) fn cell_text(a: &ArrayRef, i: usize) -> Result<Option<String>> {
    if a.is_null(i) {
        return Ok(None);
    }
    let ty = sql_type_of(a.data_type());
    let zone = match a.data_type() {
        DataType::Timestamp(_, Some(tz)) => crate::types::Zone::of_arrow(tz),
        _ => crate::types::Zone::UTC,
    };
    Ok(match column_datums(&a.slice(i, 1), ty)?.pop().unwrap_or(Datum::Null) {
        Datum::Text(s) => Some(s),
        d => d.text_in(ty, &zone),
    })
}

/// PostgreSQL's text form of a cell with no direct SQL type here (arrays, intervals, ...).
pub(super) fn pg_text(a: &ArrayRef, i: usize) -> Result<String> {
    use DataType as D;
    match a.data_type() {
        D::List(_) | D::LargeList(_) | D::FixedSizeList(..) | D::ListView(_) => {
            let inner = match a.data_type() {
                D::List(_) => a.as_list::<i32>().value(i),
                D::LargeList(_) => a.as_list::<i64>().value(i),
                D::FixedSizeList(..) => a.as_fixed_size_list().value(i),
                _ => datafusion::arrow::compute::cast(a, &D::List(Arc::new(Field::new_list_field(D::Utf8, true))))
                    .map_err(internal)?
                    .as_list::<i32>()
                    .value(i),
            };
            let mut parts = Vec::with_capacity(inner.len());
            for j in 0..inner.len() {
                if inner.is_null(j) {
                    parts.push("NULL".to_string());
                    continue;
                }
                let ty = sql_type_of(inner.data_type());
                let cell = column_datums(&inner.slice(j, 1), ty)?.pop().unwrap_or(Datum::Null);
                let text = match cell {
                    Datum::Text(s) if matches!(inner.data_type(), D::List(_) | D::LargeList(_)) => s,
                    other => other.to_pg_text(ty).unwrap_or_default(),
                };
                parts.push(crate::types::quote_array_element(&text));
            }
            let vector = matches!(a.data_type(), D::List(f) if f.name() == VECTOR_FIELD);
            Ok(if vector { parts.join(" ") } else { format!("{{{}}}", parts.join(",")) })
        }
        // A row value, `(1,2)`, as PostgreSQL's record_out writes it.
        D::Struct(_) => {
            let row = a.as_struct();
            let mut parts = Vec::with_capacity(row.num_columns());
            for col in row.columns() {
                // A NULL literal's column has no null buffer: its nulls are logical.
                if col.logical_nulls().is_some_and(|n| n.is_null(i)) {
                    parts.push(String::new());
                    continue;
                }
                let ty = sql_type_of(col.data_type());
                let text = match column_datums(&col.slice(i, 1), ty)?.pop().unwrap_or(Datum::Null) {
                    Datum::Text(s) => s,
                    other => other.to_pg_text(ty).unwrap_or_default(),
                };
                parts.push(quote_record_element(&text));
            }
            Ok(format!("({})", parts.join(",")))
        }
        _ => {
            let options = datafusion::arrow::util::display::FormatOptions::default();
            let f = datafusion::arrow::util::display::ArrayFormatter::try_new(a.as_ref(), &options).map_err(internal)?;
            Ok(f.value(i).to_string())
        }
    }
}

/// A record's element: quoted when empty or holding what delimits elements, with `"` and `\\` doubled.
fn quote_record_element(s: &str) -> String {
    if !s.is_empty() && !s.chars().any(|c| matches!(c, ',' | '"' | '\\' | '(' | ')') || c.is_whitespace()) {
        return s.to_string();
    }
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\"\""))
}

/// A parameter value as DataFusion's scalar of type `dt` (or its natural type when DataFusion has none).
pub fn scalar(d: &Datum, ty: SqlType, dt: Option<&DataType>) -> Result<ScalarValue> {
    let natural = match d {
        Datum::Null => ScalarValue::try_from(&arrow_type(ty)).map_err(internal)?,
        Datum::Bool(b) => ScalarValue::Boolean(Some(*b)),
        Datum::Int(v) => match ty {
            SqlType::Int2 => ScalarValue::Int16(Some(*v as i16)),
            SqlType::Int4 => ScalarValue::Int32(Some(*v as i32)),
            _ => ScalarValue::Int64(Some(*v)),
        },
        Datum::Float(f) if ty == SqlType::Float4 => ScalarValue::Float32(Some(*f as f32)),
        Datum::Float(f) => ScalarValue::Float64(Some(*f)),
        Datum::Numeric(n) => ScalarValue::Decimal128(Some(decimal_to_i128(n, NUMERIC_SCALE)?), 38, NUMERIC_SCALE),
        Datum::Bytes(b) => ScalarValue::Binary(Some(b.clone())),
        Datum::Timestamp(us) => ScalarValue::TimestampMicrosecond(Some(*us), (ty == SqlType::Timestamptz).then(|| Arc::from("UTC"))),
        Datum::Date(v) => ScalarValue::Date32(Some(*v)),
        Datum::Text(s) => ScalarValue::Utf8(Some(s.clone())),
        Datum::Uuid(_) => ScalarValue::Utf8(d.to_pg_text(SqlType::Uuid)),
    };
    match dt {
        Some(dt) if natural.data_type() != *dt => natural.cast_to(dt).map_err(|e| {
            QueryError::DatatypeMismatch(format!("parameter of type {} does not fit {}: {e}", ty.pg_name(), sql_type_of(dt).pg_name()))
        }),
        _ => Ok(natural),
    }
}

/// A DataFusion literal as a SQL value and its type (for pushed-down filters).
pub fn datum_of(v: &ScalarValue) -> Option<(Datum, SqlType)> {
    let ty = sql_type_of(&v.data_type());
    if v.is_null() {
        return Some((Datum::Null, ty));
    }
    let d = match v {
        ScalarValue::Boolean(Some(b)) => Datum::Bool(*b),
        ScalarValue::Int8(Some(x)) => Datum::Int(*x as i64),
        ScalarValue::Int16(Some(x)) => Datum::Int(*x as i64),
        ScalarValue::Int32(Some(x)) => Datum::Int(*x as i64),
        ScalarValue::Int64(Some(x)) => Datum::Int(*x),
        ScalarValue::UInt8(Some(x)) => Datum::Int(*x as i64),
        ScalarValue::UInt16(Some(x)) => Datum::Int(*x as i64),
        ScalarValue::UInt32(Some(x)) => Datum::Int(*x as i64),
        ScalarValue::Float32(Some(x)) => Datum::Float(*x as f64),
        ScalarValue::Float64(Some(x)) => Datum::Float(*x),
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => Datum::Text(s.clone()),
        ScalarValue::Binary(Some(b)) | ScalarValue::LargeBinary(Some(b)) | ScalarValue::BinaryView(Some(b)) => Datum::Bytes(b.clone()),
        ScalarValue::Date32(Some(x)) => Datum::Date(*x),
        ScalarValue::TimestampMicrosecond(Some(x), _) => Datum::Timestamp(*x),
        ScalarValue::TimestampMillisecond(Some(x), _) => Datum::Timestamp(x.checked_mul(1000)?),
        ScalarValue::TimestampSecond(Some(x), _) => Datum::Timestamp(x.checked_mul(1_000_000)?),
        ScalarValue::TimestampNanosecond(Some(x), _) => Datum::Timestamp(x / 1000),
        ScalarValue::Decimal128(Some(x), _, s) => match decimal_datum(*x, *s) {
            d @ Datum::Numeric(_) => d,
            _ => return None,
        },
        _ => return None,
    };
    Some((d, ty))
}
