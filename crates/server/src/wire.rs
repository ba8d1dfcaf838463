//! PostgreSQL wire forms of Tabula's values: type OIDs, text and binary encodings of results, and
//! parameter decoding in both formats.

use bytes::{BufMut, BytesMut};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::api::Type;
use pgwire::messages::data::DataRow;
use tabula_query::types::encode_binary;
use tabula_query::types::{DatumRef, Zone};
use tabula_query::{Datum, OutputColumn, QueryError, SqlType};

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
///
/// `zone`: the session's `TimeZone` when the statement ran, in which a `timestamptz`'s text is written.
pub fn encode_row(
    row: &[DatumRef<'_>],
    fields: &[FieldInfo],
    types: &[SqlType],
    zone: &Zone,
    buf: &mut BytesMut,
) -> Result<DataRow, QueryError> {
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
                DatumRef::Datum(d) => buf.put_slice(d.text_in(ty, zone).unwrap_or_default().as_bytes()),
                DatumRef::Null => unreachable!("NULL is written above"),
            }
        }
        let len = (buf.len() - at - 4) as i32;
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(DataRow::new(buf.split(), row.len() as i16))
}

/// `encode_row` of an owned row.
pub fn encode_owned_row(
    row: &[Datum],
    fields: &[FieldInfo],
    types: &[SqlType],
    zone: &Zone,
    buf: &mut BytesMut,
) -> Result<DataRow, QueryError> {
    let refs: smallvec::SmallVec<[DatumRef<'_>; 8]> = row.iter().map(DatumRef::from).collect();
    encode_row(&refs, fields, types, zone, buf)
}

/// Decodes one parameter value sent in text or binary format; a `timestamptz`'s text without an offset is
/// a local time in `zone`, the session's.
pub fn decode_param(raw: Option<&[u8]>, ty: SqlType, binary: bool, zone: &Zone) -> Result<Datum, QueryError> {
    let Some(raw) = raw else { return Ok(Datum::Null) };
    if !binary {
        let s = std::str::from_utf8(raw).map_err(|_| QueryError::InvalidText("invalid UTF-8 in parameter".into()))?;
        return Datum::parse_in(ty, s, zone);
    }
    tabula_query::types::decode_binary(raw, ty)
}
