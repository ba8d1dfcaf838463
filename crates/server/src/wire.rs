//! PostgreSQL wire forms of Tabula's values: type OIDs, text and binary encodings of results, and
//! parameter decoding in both formats.

use bytes::{BufMut, BytesMut};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::api::Type;
use pgwire::messages::data::DataRow;
use postgres_types::{FromSql, ToSql};
use rust_decimal::Decimal;
use tabula_query::types::DatumRef;
use tabula_query::{Datum, OutputColumn, QueryError, SqlType};

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;
const PG_EPOCH_DAYS: i32 = 10_957;

/// Bytes set aside at once for encoding rows, and the room a row starts with before a new chunk is taken.
const ROW_CHUNK: usize = 16 << 10;
const ROW_RESERVE: usize = 512;

pub fn pg_type(t: SqlType) -> Type {
    Type::from_oid(t.oid()).unwrap_or(Type::TEXT)
}

pub fn sql_type(t: &Type) -> Option<SqlType> {
    SqlType::from_oid(t.oid())
}

/// RowDescription fields; `format` is the client's requested result formats (text when `None`).
pub fn fields(columns: &[OutputColumn], format: Option<&Format>) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let f = format.map(|f| f.format_for(i)).unwrap_or(FieldFormat::Text);
            FieldInfo::new(c.name.clone(), None, None, pg_type(c.ty), f)
        })
        .collect()
}

/// A buffer for `encode_row` sized for a result of `rows` rows: a one-row answer (a point get) takes a
/// small one, not a whole chunk.
pub fn row_buffer(rows: usize) -> BytesMut {
    BytesMut::with_capacity(rows.saturating_mul(ROW_RESERVE).min(ROW_CHUNK))
}

/// Encodes one row in the formats its fields ask for.
///
/// `buf` is carved in chunks: each row is split off the front of one shared allocation, and a row
/// whose encoded message has been written out frees its part, so a result of many rows does not
/// allocate per row.
pub fn encode_row(row: &[DatumRef<'_>], fields: &[FieldInfo], types: &[SqlType], buf: &mut BytesMut) -> Result<DataRow, QueryError> {
    buf.clear();
    if buf.capacity() < ROW_RESERVE {
        buf.reserve(ROW_CHUNK);
    }
    for (i, &d) in row.iter().enumerate() {
        let ty = types.get(i).copied().unwrap_or(SqlType::Text);
        if d == DatumRef::Null || matches!(d, DatumRef::Datum(Datum::Null)) {
            buf.put_i32(-1);
            continue;
        }
        let at = buf.len();
        buf.put_i32(0);
        if fields.get(i).map(|f| f.format()) == Some(FieldFormat::Binary) {
            match d {
                DatumRef::Int(i) => encode_binary(&Datum::Int(i), ty, buf)?,
                DatumRef::Datum(d) => encode_binary(d, ty, buf)?,
                d => encode_binary(&d.to_datum(), ty, buf)?,
            }
        } else {
            // The common text and integer values go straight into the buffer, without a String between.
            match d {
                DatumRef::Text(s) => match ty.pad(s) {
                    Some(padded) => buf.put_slice(padded.as_bytes()),
                    None => buf.put_slice(s.as_bytes()),
                },
                DatumRef::Int(i) => buf.put_slice(itoa::Buffer::new().format(i).as_bytes()),
                DatumRef::Datum(d) => buf.put_slice(d.to_pg_text(ty).unwrap_or_default().as_bytes()),
                DatumRef::Null => unreachable!("NULL is written above"),
            }
        }
        let len = (buf.len() - at - 4) as i32;
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(DataRow::new(buf.split(), row.len() as i16))
}

/// `encode_row` of an owned row.
pub fn encode_owned_row(row: &[Datum], fields: &[FieldInfo], types: &[SqlType], buf: &mut BytesMut) -> Result<DataRow, QueryError> {
    let refs: smallvec::SmallVec<[DatumRef<'_>; 8]> = row.iter().map(DatumRef::from).collect();
    encode_row(&refs, fields, types, buf)
}

fn encode_binary(d: &Datum, ty: SqlType, buf: &mut BytesMut) -> Result<(), QueryError> {
    let mismatch = || QueryError::Internal(format!("value {d:?} does not fit type {ty}"));
    match (ty, d) {
        (SqlType::Bool, Datum::Bool(b)) => buf.put_u8(*b as u8),
        (SqlType::Int2, Datum::Int(i)) => buf.put_i16(*i as i16),
        (SqlType::Int4, Datum::Int(i)) => buf.put_i32(*i as i32),
        (SqlType::Int8, Datum::Int(i)) => buf.put_i64(*i),
        (SqlType::Float4, Datum::Float(f)) => buf.put_f32(*f as f32),
        (SqlType::Float8, Datum::Float(f)) => buf.put_f64(*f),
        (SqlType::Numeric, Datum::Numeric(n)) => {
            let mut tmp = BytesMut::new();
            n.to_sql(&Type::NUMERIC, &mut tmp).map_err(|e| QueryError::Internal(e.to_string()))?;
            buf.put_slice(&tmp);
        }
        (SqlType::Bytea, Datum::Bytes(b)) => buf.put_slice(b),
        (SqlType::Timestamp | SqlType::Timestamptz, Datum::Timestamp(us)) => buf.put_i64(us - PG_EPOCH_US),
        (SqlType::Date, Datum::Date(d)) => buf.put_i32(d - PG_EPOCH_DAYS),
        (SqlType::Uuid, Datum::Uuid(u)) => buf.put_u128(*u),
        (SqlType::Jsonb, Datum::Text(s)) => {
            buf.put_u8(1);
            buf.put_slice(s.as_bytes());
        }
        (SqlType::TextArray, Datum::Text(s)) => {
            let elems = tabula_query::types::parse_text_array(s).ok_or_else(mismatch)?;
            buf.put_i32(if elems.is_empty() { 0 } else { 1 });
            buf.put_i32(elems.iter().any(|e| e.is_none()) as i32);
            buf.put_u32(SqlType::Text.oid());
            if !elems.is_empty() {
                buf.put_i32(elems.len() as i32);
                buf.put_i32(1);
            }
            for e in elems {
                match e {
                    None => buf.put_i32(-1),
                    Some(e) => {
                        buf.put_i32(e.len() as i32);
                        buf.put_slice(e.as_bytes());
                    }
                }
            }
        }
        // A bpchar's binary form is its padded text.
        (SqlType::Bpchar(_), Datum::Text(s)) => buf.put_slice(ty.pad(s).as_deref().unwrap_or(s).as_bytes()),
        (SqlType::Text | SqlType::Varchar | SqlType::Bpchar(_) | SqlType::Json | SqlType::Unknown, d) => {
            buf.put_slice(d.to_pg_text(d.natural_type()).unwrap_or_default().as_bytes())
        }
        // A value of another type than declared: convert, then encode.
        (t, d) => {
            let converted = d.clone().cast(t)?;
            if &converted == d {
                return Err(mismatch());
            }
            return encode_binary(&converted, t, buf);
        }
    }
    Ok(())
}

/// Decodes one parameter value sent in text or binary format.
pub fn decode_param(raw: Option<&[u8]>, ty: SqlType, binary: bool) -> Result<Datum, QueryError> {
    let Some(raw) = raw else { return Ok(Datum::Null) };
    if !binary {
        let s = std::str::from_utf8(raw).map_err(|_| QueryError::InvalidText("invalid UTF-8 in parameter".into()))?;
        return Datum::parse(ty, s);
    }
    let bad = || QueryError::InvalidText(format!("incorrect binary data format in bind parameter of type {ty}"));
    let fixed = |n: usize| -> Result<&[u8], QueryError> {
        if raw.len() == n {
            Ok(raw)
        } else {
            Err(bad())
        }
    };
    Ok(match ty {
        SqlType::Bool => Datum::Bool(fixed(1)?[0] != 0),
        SqlType::Int2 => Datum::Int(i16::from_be_bytes(fixed(2)?.try_into().unwrap()) as i64),
        SqlType::Int4 => Datum::Int(i32::from_be_bytes(fixed(4)?.try_into().unwrap()) as i64),
        SqlType::Int8 => Datum::Int(i64::from_be_bytes(fixed(8)?.try_into().unwrap())),
        SqlType::Float4 => Datum::Float(f32::from_be_bytes(fixed(4)?.try_into().unwrap()) as f64),
        SqlType::Float8 => Datum::Float(f64::from_be_bytes(fixed(8)?.try_into().unwrap())),
        SqlType::Numeric => Datum::Numeric(Decimal::from_sql(&Type::NUMERIC, raw).map_err(|_| bad())?),
        SqlType::Bytea => Datum::Bytes(raw.to_vec()),
        SqlType::Timestamp | SqlType::Timestamptz => Datum::Timestamp(i64::from_be_bytes(fixed(8)?.try_into().unwrap()) + PG_EPOCH_US),
        SqlType::Date => Datum::Date(i32::from_be_bytes(fixed(4)?.try_into().unwrap()) + PG_EPOCH_DAYS),
        SqlType::Uuid => Datum::Uuid(u128::from_be_bytes(fixed(16)?.try_into().unwrap())),
        SqlType::Jsonb => {
            let body = raw.strip_prefix(&[1]).ok_or_else(bad)?;
            Datum::Text(String::from_utf8(body.to_vec()).map_err(|_| bad())?)
        }
        SqlType::Bpchar(_) => {
            let s = std::str::from_utf8(raw).map_err(|_| QueryError::InvalidText("invalid UTF-8 in parameter".into()))?;
            Datum::parse(ty, s)?
        }
        SqlType::Text | SqlType::Varchar | SqlType::Json | SqlType::Unknown => {
            Datum::Text(String::from_utf8(raw.to_vec()).map_err(|_| QueryError::InvalidText("invalid UTF-8 in parameter".into()))?)
        }
        SqlType::TextArray => return Err(QueryError::NotSupported("array parameters in binary format are not supported".into())),
    })
}
