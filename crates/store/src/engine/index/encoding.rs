//! How an index entry is laid out, and its key encoded and decoded.
//!
//! ```text
//! key   = index_id:u32-BE  column+  row-key
//! value = row-key  included*                    (the row's key columns, as keys::encode_pk writes them;
//!                                                then each INCLUDE column as an ascending column)
//! column = 0x02 tag value  |  0x03 (NULL: after every value, as PostgreSQL's ascending indexes put them)
//!          of a descending column, every byte of that inverted (values in reverse order, NULLs first:
//!          the encoding is prefix-free, so the inverse orders the other way)
//!   tag 0x01 Boolean  1 byte
//!       0x02 Integer  8 bytes big-endian of (v XOR 1<<63)
//!       0x03 Double   8 bytes big-endian: the bits, all flipped when negative, else the sign bit set
//!       0x04 String / 0x05 Binary  bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x01
//! ```

use super::*;

const NOT_NULL: u8 = 0x02;
const NULL: u8 = 0x03;

fn encode_value(out: &mut Vec<u8>, v: Option<&Value>) {
    let Some(v) = v else {
        out.push(NULL);
        return;
    };
    out.push(NOT_NULL);
    match v {
        Value::Boolean(b) => out.extend_from_slice(&[0x01, *b as u8]),
        Value::Integer(i) => {
            out.push(0x02);
            out.extend_from_slice(&((*i as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::Double(d) => {
            out.push(0x03);
            let bits = d.to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        Value::String(s) => {
            out.push(0x04);
            keys::encode_bytes(out, s.as_bytes());
        }
        Value::Binary(b) => {
            out.push(0x05);
            keys::encode_bytes(out, b);
        }
    }
}

/// Decodes one column's value at the start of `key`, inverted first when `desc`; returns it and the bytes
/// it took.
fn decode_column(key: &[u8], desc: bool) -> Result<(Option<Value>, usize)> {
    let at = |i: usize| key.get(i).map(|b| if desc { !b } else { *b }).ok_or_else(|| StoreError::Corrupt("index entry".into()));
    match at(0)? {
        NULL => return Ok((None, 1)),
        NOT_NULL => {}
        _ => return Err(StoreError::Corrupt("index entry".into())),
    }
    let fixed = |n: usize| -> Result<Vec<u8>> { (2..2 + n).map(at).collect() };
    Ok(match at(1)? {
        0x01 => (Some(Value::Boolean(at(2)? != 0)), 3),
        0x02 => (Some(Value::Integer((u64::from_be_bytes(fixed(8)?.try_into().unwrap()) ^ (1 << 63)) as i64)), 10),
        0x03 => {
            let ordered = u64::from_be_bytes(fixed(8)?.try_into().unwrap());
            let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
            (Some(Value::Double(f64::from_bits(bits))), 10)
        }
        tag @ (0x04 | 0x05) => {
            let (mut bytes, mut i) = (Vec::new(), 2);
            loop {
                match (at(i)?, at(i + 1).ok()) {
                    (0x00, Some(0xFF)) => bytes.push(0),
                    (0x00, Some(0x01)) => break,
                    (b, _) => {
                        bytes.push(b);
                        i += 1;
                        continue;
                    }
                }
                i += 2;
            }
            let v = match tag {
                0x04 => Value::String(String::from_utf8(bytes).map_err(|_| StoreError::Corrupt("index entry".into()))?),
                _ => Value::Binary(bytes),
            };
            (Some(v), i + 2)
        }
        _ => return Err(StoreError::Corrupt("index entry".into())),
    })
}

/// What an entry key of index `ix` holds: its columns' values, then the row's key columns when the key goes
/// on with them (every entry but a unique one's without NULLs).
pub(in crate::engine) fn decode_entry(ix: &IndexDef, key: &[u8], pk_types: &[PkType]) -> Result<(Vec<Option<Value>>, Vec<PkValue>)> {
    let mut rest = key.get(4..).ok_or_else(|| StoreError::Corrupt("index entry".into()))?;
    let mut values = Vec::with_capacity(ix.columns.len());
    for i in 0..ix.columns.len() {
        let (v, n) = decode_column(rest, ix.desc(i))?;
        values.push(v);
        rest = &rest[n..];
    }
    let row = if rest.is_empty() { Vec::new() } else { keys::decode_pk(rest, pk_types)? };
    Ok((values, row))
}

/// The INCLUDE columns' values, after the row key in an entry's value.
pub(super) fn encode_included(out: &mut Vec<u8>, values: &[Option<Value>]) {
    values.iter().for_each(|v| encode_value(out, v.as_ref()));
}

/// The `n` INCLUDE columns' values of an entry's value, from just after its row key.
pub(super) fn decode_included(mut buf: &[u8], n: usize) -> Result<Vec<Option<Value>>> {
    (0..n)
        .map(|_| {
            let (v, len) = decode_column(buf, false)?;
            buf = &buf[len..];
            Ok(v)
        })
        .collect()
}

/// Column `i`'s encoding of `v`, inverted for a descending column.
fn encode_column(out: &mut Vec<u8>, ix: &IndexDef, i: usize, v: Option<&Value>) {
    let start = out.len();
    encode_value(out, v);
    if ix.desc(i) {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
}

/// The key prefix of the entries whose first columns hold `values` (the whole index for none).
pub(crate) fn prefix(ix: &IndexDef, values: &[Option<Value>]) -> Vec<u8> {
    let mut k = keys::table_prefix(ix.id).to_vec();
    for (i, v) in values.iter().enumerate() {
        encode_column(&mut k, ix, i, v.as_ref());
    }
    k
}

/// The keys of a range's entries: from the first (inclusive) to the end (exclusive).
pub(super) fn bounds(ix: &IndexDef, r: &IndexRange) -> (Vec<u8>, Vec<u8>) {
    let p = prefix(ix, &r.eq);
    let next = r.eq.len();
    let after_all = |k: &[u8]| keys::prefix_successor(k).unwrap_or_else(|| keys::table_end(ix.id).to_vec());
    let at = |v: &Value| {
        let mut k = p.clone();
        encode_column(&mut k, ix, next, Some(v));
        k
    };
    let with = |tag: u8| {
        let mut k = p.clone();
        k.push(tag);
        k
    };
    if r.lower.is_none() && r.upper.is_none() {
        return (p.clone(), after_all(&p));
    }
    // Ascending, the values run from the lower bound up to the NULLs; descending, from the NULLs (the
    // inverted tags put them first) and the upper bound down to the lower.
    if ix.desc(next) {
        let start = match &r.upper {
            None => with(!NOT_NULL),
            Some((v, true)) => at(v),
            Some((v, false)) => after_all(&at(v)),
        };
        let end = match &r.lower {
            None => after_all(&p),
            Some((v, true)) => after_all(&at(v)),
            Some((v, false)) => at(v),
        };
        return (start, end);
    }
    let start = match &r.lower {
        None => with(NOT_NULL),
        Some((v, true)) => at(v),
        Some((v, false)) => after_all(&at(v)),
    };
    let end = match &r.upper {
        None => with(NULL),
        Some((v, true)) => after_all(&at(v)),
        Some((v, false)) => at(v),
    };
    (start, end)
}

pub(super) fn pk_as_value(v: &PkValue) -> Value {
    match v {
        PkValue::String(s) => Value::String(s.clone()),
        PkValue::Integer(i) => Value::Integer(*i),
        PkValue::Binary(b) => Value::Binary(b.clone()),
    }
}
