//! COPY's binary format: a signature, flags and a header extension, then each row as a field count and
//! its fields, each a length (-1: NULL) and the value's binary form ([`crate::types::decode_binary`]),
//! and -1 as the count after the last row.
//!
//! ```text
//! header   "PGCOPY\n\xff\r\n\0"  flags: i32 (bit 16: OIDs)  extension length: u32  extension
//! row      count: i16  { length: i32 (-1: NULL)  bytes }*count
//! trailer  -1: i16
//! ```

use crate::error::{QueryError, Result};
use crate::types::{encode_binary, Datum, SqlType};

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// A field larger than PostgreSQL's largest value (1 GB) is no field.
const MAX_FIELD: i32 = 1 << 30;

fn bad(message: impl Into<String>) -> QueryError {
    QueryError::Engine { sqlstate: "22P04", message: message.into() }
}

/// The header and trailer COPY TO writes around its rows.
pub fn header() -> Vec<u8> {
    let mut h = SIGNATURE.to_vec();
    h.extend_from_slice(&0i32.to_be_bytes());
    h.extend_from_slice(&0u32.to_be_bytes());
    h
}

pub fn trailer() -> Vec<u8> {
    (-1i16).to_be_bytes().to_vec()
}

/// One row in the binary format.
pub fn format_row(row: &[Datum], types: &[SqlType], out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&(row.len() as i16).to_be_bytes());
    for (d, ty) in row.iter().zip(types) {
        if matches!(d, Datum::Null) {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        let at = out.len();
        out.extend_from_slice(&0i32.to_be_bytes());
        encode_binary(d, *ty, out)?;
        let len = (out.len() - at - 4) as i32;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

/// Takes the complete rows at the front of `buf` (each field's bytes, `None` for NULL), leaving a partial
/// one; first the header, while `header` says it has not been read. Returns whether the trailer came.
/// `at_end`: no more data follows, so a partial row or header is an error.
pub fn take_records(buf: &mut Vec<u8>, at_end: bool, header: &mut bool, out: &mut Vec<Vec<Option<Vec<u8>>>>) -> Result<bool> {
    let mut pos = 0;
    if *header {
        let seen = buf.len().min(SIGNATURE.len());
        if buf[..seen] != SIGNATURE[..seen] || (at_end && buf.len() < 19) {
            return Err(bad("COPY file signature not recognized"));
        }
        if buf.len() < 19 {
            return Ok(false);
        }
        let flags = i32::from_be_bytes(buf[11..15].try_into().unwrap());
        if flags & (1 << 16) != 0 {
            return Err(bad("invalid COPY file header (WITH OIDS)"));
        }
        if (flags >> 17) != 0 {
            return Err(bad("unrecognized critical flags in COPY file header"));
        }
        let extension = u32::from_be_bytes(buf[15..19].try_into().unwrap()) as usize;
        if buf.len() < 19 + extension {
            return if at_end { Err(bad("invalid COPY file header (wrong length)")) } else { Ok(false) };
        }
        pos = 19 + extension;
        *header = false;
    }
    let mut finished = false;
    'rows: while buf.len() - pos >= 2 {
        let count = i16::from_be_bytes([buf[pos], buf[pos + 1]]);
        if count == -1 {
            pos += 2;
            finished = true;
            break;
        }
        if count < 0 {
            return Err(bad(format!("row field count is {count}")));
        }
        let mut p = pos + 2;
        let mut fields = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let Some(len) = buf.get(p..p + 4) else { break 'rows };
            let len = i32::from_be_bytes(len.try_into().unwrap());
            p += 4;
            if len == -1 {
                fields.push(None);
                continue;
            }
            if !(0..=MAX_FIELD).contains(&len) {
                return Err(bad(format!("invalid field size {len}")));
            }
            let Some(bytes) = buf.get(p..p + len as usize) else { break 'rows };
            fields.push(Some(bytes.to_vec()));
            p += len as usize;
        }
        out.push(fields);
        pos = p;
    }
    if finished && pos < buf.len() {
        return Err(bad("received copy data after EOF marker"));
    }
    if at_end && pos < buf.len() {
        return Err(bad("unexpected EOF in COPY data"));
    }
    buf.drain(..pos);
    Ok(finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_in_any_chunks() {
        let types = [SqlType::Int8, SqlType::Text, SqlType::Float8];
        let rows = vec![
            vec![Datum::Int(1), Datum::Text("a\tb\n".into()), Datum::Float(1.5)],
            vec![Datum::Int(-2), Datum::Null, Datum::Float(f64::NAN)],
        ];
        let mut data = header();
        for r in &rows {
            format_row(r, &types, &mut data).unwrap();
        }
        data.extend(trailer());
        for chunk in [1, 3, 7, data.len()] {
            let (mut buf, mut header, mut out, mut finished) = (Vec::new(), true, Vec::new(), false);
            for piece in data.chunks(chunk) {
                assert!(!finished, "nothing after the trailer");
                buf.extend_from_slice(piece);
                finished = take_records(&mut buf, false, &mut header, &mut out).unwrap();
            }
            assert!(finished && buf.is_empty());
            let decoded: Vec<Vec<Datum>> = out
                .iter()
                .map(|r| {
                    r.iter()
                        .zip(&types)
                        .map(|(f, t)| f.as_ref().map_or(Ok(Datum::Null), |b| crate::types::decode_binary(b, *t)).unwrap())
                        .collect()
                })
                .collect();
            assert_eq!(decoded[0], rows[0]);
            assert_eq!((&decoded[1][0], &decoded[1][1]), (&Datum::Int(-2), &Datum::Null));
            assert!(matches!(decoded[1][2], Datum::Float(f) if f.is_nan()));
        }
    }

    #[test]
    fn damaged_data_is_22p04() {
        let code = |data: &[u8]| {
            let mut buf = data.to_vec();
            take_records(&mut buf, true, &mut true, &mut Vec::new()).unwrap_err().sqlstate()
        };
        assert_eq!(code(b"PGCOPX\n\xff\r\n\0\0\0\0\0\0\0\0\0"), "22P04");
        let mut cut = header();
        cut.extend_from_slice(&[0, 1, 0, 0, 0, 8, 1, 2]);
        assert_eq!(code(&cut), "22P04", "a row cut short");
        let mut huge = header();
        huge.extend_from_slice(&[0, 1, 0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(code(&huge), "22P04", "a field claiming 2 GB");
        let mut after = header();
        after.extend(trailer());
        after.push(0);
        assert_eq!(code(&after), "22P04", "data after the trailer");
    }
}
