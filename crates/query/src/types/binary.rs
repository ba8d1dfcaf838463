//! Values in PostgreSQL's binary format (typsend and typreceive): results and parameters of the
//! extended protocol, and binary COPY's fields.

use bytes::BufMut;
use postgres_types::{FromSql, ToSql, Type};
use rust_decimal::Decimal;

use super::{parse_text_array, Datum, SqlType};
use crate::error::{QueryError, Result};

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;
const PG_EPOCH_DAYS: i32 = 10_957;

/// Writes `d`'s binary form as type `ty`.
pub fn encode_binary(d: &Datum, ty: SqlType, buf: &mut impl BufMut) -> Result<()> {
    let mismatch = || QueryError::Internal(format!("value {d:?} does not fit type {ty}"));
    match (ty, d) {
        (SqlType::Bool, Datum::Bool(b)) => buf.put_u8(*b as u8),
        (SqlType::Int2, Datum::Int(i)) => buf.put_i16(*i as i16),
        (SqlType::Int4, Datum::Int(i)) => buf.put_i32(*i as i32),
        (SqlType::Int8, Datum::Int(i)) => buf.put_i64(*i),
        (SqlType::Float4, Datum::Float(f)) => buf.put_f32(*f as f32),
        (SqlType::Float8, Datum::Float(f)) => buf.put_f64(*f),
        (SqlType::Numeric, Datum::Numeric(n)) => {
            let mut tmp = bytes::BytesMut::new();
            n.to_sql(&Type::NUMERIC, &mut tmp).map_err(|e| QueryError::Internal(e.to_string()))?;
            // rust_decimal writes a zero with display scale 0: `0.00` keeps its two decimals, as PostgreSQL's.
            if n.is_zero() && tmp.len() >= 8 {
                tmp[6..8].copy_from_slice(&(n.scale() as u16).to_be_bytes());
            }
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
            let elems = parse_text_array(s).ok_or_else(mismatch)?;
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
        (SqlType::Interval, Datum::Text(s)) => {
            let (months, days, us) = super::interval::parse_interval_text(s).ok_or_else(mismatch)?;
            buf.put_i64(us);
            buf.put_i32(days);
            buf.put_i32(months);
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

/// Decodes a value's binary form (a parameter's, a binary COPY's field).
pub fn decode_binary(raw: &[u8], ty: SqlType) -> Result<Datum> {
    let bad = || QueryError::InvalidText(format!("incorrect binary data format in value of type {ty}"));
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
            let s = std::str::from_utf8(raw).map_err(|_| QueryError::InvalidText("invalid byte sequence for encoding \"UTF8\"".into()))?;
            Datum::parse(ty, s)?
        }
        SqlType::Text | SqlType::Varchar | SqlType::Json | SqlType::Unknown => Datum::Text(
            String::from_utf8(raw.to_vec()).map_err(|_| QueryError::InvalidText("invalid byte sequence for encoding \"UTF8\"".into()))?,
        ),
        SqlType::TextArray => return Err(QueryError::NotSupported("array parameters in binary format are not supported".into())),
        SqlType::Interval => return Err(QueryError::NotSupported("interval parameters are not supported".into())),
    })
}
