//! Key encoding of the `data` column family.
//!
//! One key of the engine holds one whole row (all its columns and versions), so a point get is one lookup.
//! The key is order-preserving: rows sort by primary key column by column, integers numerically
//! (negatives first), strings and binaries bytewise, exactly as Tablestore's table designs expect, so composite keys
//! need no zero-padding or connector tricks.
//!
//! ```text
//! key    = table_id:u32-BE  [bucket:u8]  column+
//! bucket = present iff the table has hash_prefix = N: md5(partition key columns)[0] % N
//! column = 0x01 value                    (a real value; 0x00 and 0xFF are reserved for range bounds)
//!   Integer        8 bytes big-endian of (v XOR 1<<63)       sign bit flipped: negatives sort first
//!   String/Binary  bytes with 0x00 escaped as 0x00 0xFF, then terminator 0x00 0x01
//! ```
//! The escape keeps a shorter value before any longer value it prefixes (`"ab"` < `"ab\0"` < `"abc"`),
//! and the terminator keeps the next column from leaking into the comparison.
//!
//! Range bounds: `INF_MIN` on a column ends the key there (the bare prefix sorts before every row under it);
//! `INF_MAX` appends 0xFF (sorts after every row under the prefix, since columns start with 0x01).

use crate::error::{Result, StoreError};
use crate::value::{PkBound, PkType, PkValue};

const TAG_VALUE: u8 = 0x01;
const TAG_INF_MAX: u8 = 0xFF;

/// The key prefix of all rows of a table.
pub fn table_prefix(table_id: u32) -> [u8; 4] {
    table_id.to_be_bytes()
}

/// The first key after every row of the table.
pub fn table_end(table_id: u32) -> [u8; 4] {
    (table_id + 1).to_be_bytes()
}

/// The table id bit that marks a table's out-of-line values (see `row`): they live in a key space of their
/// own, so scans of rows never step over them.
///
/// ```text
/// outside = (table_id | 1<<31):u32-BE  [bucket:u8]  column+   name   (version XOR 1<<63):u64-BE
///           \______ the row's key with the bit set ______/    the column's name as a string key column
/// ```
pub const OUTSIDE_BIT: u32 = 1 << 31;

/// The key of the value of `column` at `version` of the row whose key is `row_key`, stored out of line.
pub fn outside_key(row_key: &[u8], column: &str, version: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(row_key.len() + column.len() + 12);
    let id = u32::from_be_bytes(row_key[..4].try_into().expect("a row key starts with its table id"));
    k.extend_from_slice(&(id | OUTSIDE_BIT).to_be_bytes());
    k.extend_from_slice(&row_key[4..]);
    k.push(TAG_VALUE);
    encode_bytes(&mut k, column.as_bytes());
    k.extend_from_slice(&((version as u64) ^ (1 << 63)).to_be_bytes());
    k
}

/// Whether a data key is an out-of-line value's (not a row's).
pub fn is_outside(key: &[u8]) -> bool {
    key.first().is_some_and(|b| b & 0x80 != 0)
}

/// The version an out-of-line value's key ends with.
pub fn outside_version(key: &[u8]) -> Option<i64> {
    let tail: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some((u64::from_be_bytes(tail) ^ (1 << 63)) as i64)
}

/// An out-of-line value's key taken apart: the key of its row (`head` bytes between the table id and the
/// key columns, `types` the key's column types), its column and its version.
pub fn split_outside(key: &[u8], head: usize, types: &[PkType]) -> Result<(Vec<u8>, String, i64)> {
    let version = outside_version(key).ok_or_else(corrupt)?;
    let body = key.get(4..key.len() - 8).ok_or_else(corrupt)?;
    let row_len = head + prefix_len(body.get(head..).ok_or_else(corrupt)?, types, types.len())?;
    let id = u32::from_be_bytes(key[..4].try_into().unwrap()) & !OUTSIDE_BIT;
    let mut row = id.to_be_bytes().to_vec();
    row.extend_from_slice(&body[..row_len]);
    let (column, rest) = decode_pk_value(&body[row_len..], PkType::String)?;
    match (column, rest.is_empty()) {
        (PkValue::String(c), true) => Ok((row, c, version)),
        _ => Err(corrupt()),
    }
}

/// Every key of table `id`: its rows, and its values out of line.
pub fn table_ranges(id: u32) -> [(Vec<u8>, Vec<u8>); 2] {
    [(table_prefix(id).to_vec(), table_end(id).to_vec()), (table_prefix(id | OUTSIDE_BIT).to_vec(), table_end(id | OUTSIDE_BIT).to_vec())]
}

pub fn encode_pk_value(out: &mut Vec<u8>, v: &PkValue) {
    out.push(TAG_VALUE);
    match v {
        PkValue::Integer(i) => out.extend_from_slice(&((*i as u64) ^ (1 << 63)).to_be_bytes()),
        PkValue::String(s) => encode_bytes(out, s.as_bytes()),
        PkValue::Binary(b) => encode_bytes(out, b),
    }
}

/// A string or binary value: 0x00 escaped as 0x00 0xFF, then the terminator 0x00 0x01 (order-preserving).
pub(crate) fn encode_bytes(out: &mut Vec<u8>, b: &[u8]) {
    for &byte in b {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Encodes the primary-key columns (no table prefix).
pub fn encode_pk(out: &mut Vec<u8>, pk: &[PkValue]) {
    for v in pk {
        encode_pk_value(out, v);
    }
}

/// Encodes a range bound; columns after the first INF are irrelevant and ignored.
pub fn encode_bound(out: &mut Vec<u8>, bound: &[PkBound]) {
    for b in bound {
        match b {
            PkBound::Value(v) => encode_pk_value(out, v),
            PkBound::InfMin => return,
            PkBound::InfMax => {
                out.push(TAG_INF_MAX);
                return;
            }
        }
    }
}

/// Decodes primary-key columns of the given types.
pub fn decode_pk(buf: &[u8], types: &[PkType]) -> Result<Vec<PkValue>> {
    let mut out = Vec::with_capacity(types.len());
    decode_pk_into(buf, types, &mut out)?;
    Ok(out)
}

/// Decodes a primary key onto the end of `out`.
pub fn decode_pk_into(mut buf: &[u8], types: &[PkType], out: &mut Vec<PkValue>) -> Result<()> {
    for t in types {
        let (v, rest) = decode_pk_value(buf, *t)?;
        out.push(v);
        buf = rest;
    }
    Ok(())
}

fn corrupt() -> StoreError {
    StoreError::Corrupt("bad primary key encoding".into())
}

fn decode_pk_value(buf: &[u8], t: PkType) -> Result<(PkValue, &[u8])> {
    if buf.first() != Some(&TAG_VALUE) {
        return Err(corrupt());
    }
    let buf = &buf[1..];
    match t {
        PkType::Integer => {
            let raw: [u8; 8] = buf.get(..8).ok_or_else(corrupt)?.try_into().unwrap();
            Ok((PkValue::Integer((u64::from_be_bytes(raw) ^ (1 << 63)) as i64), &buf[8..]))
        }
        PkType::String | PkType::Binary => {
            let mut bytes = Vec::new();
            let mut i = 0;
            loop {
                let b = *buf.get(i).ok_or_else(corrupt)?;
                if b == 0 {
                    match buf.get(i + 1) {
                        Some(0xFF) => bytes.push(0),
                        Some(0x01) => break,
                        _ => return Err(corrupt()),
                    }
                    i += 2;
                } else {
                    bytes.push(b);
                    i += 1;
                }
            }
            let rest = &buf[i + 2..];
            let v = if t == PkType::String {
                PkValue::String(String::from_utf8(bytes).map_err(|_| corrupt())?)
            } else {
                PkValue::Binary(bytes)
            };
            Ok((v, rest))
        }
    }
}

/// Length in bytes of the first `n` encoded columns of `buf` (used to find the partition-key prefix).
pub fn prefix_len(buf: &[u8], types: &[PkType], n: usize) -> Result<usize> {
    let mut rest = buf;
    for t in &types[..n] {
        rest = decode_pk_value(rest, *t)?.1;
    }
    Ok(buf.len() - rest.len())
}

/// The hash bucket of a row of a hash-prefixed table: stable across releases (md5).
pub fn bucket(partition_key_encoded: &[u8], buckets: u16) -> u8 {
    let digest = md5::compute(partition_key_encoded);
    (u16::from_be_bytes([digest[0], digest[1]]) % buckets) as u8
}

/// The smallest key strictly greater than every key starting with `prefix`, if there is one.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// md5 of some bytes (exposed so the SQL layer's md5() shares the engine's implementation).
pub fn md5_bytes(b: &[u8]) -> [u8; 16] {
    md5::compute(b).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pk_value() -> impl Strategy<Value = PkValue> {
        prop_oneof![
            any::<i64>().prop_map(PkValue::Integer),
            prop_oneof![Just(i64::MIN), Just(-1i64), Just(0), Just(1), Just(i64::MAX)].prop_map(PkValue::Integer),
            ".{0,6}".prop_map(PkValue::String),
            proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xFF), any::<u8>()], 0..6).prop_map(PkValue::Binary),
        ]
    }

    fn enc(pk: &[PkValue]) -> Vec<u8> {
        let mut v = Vec::new();
        encode_pk(&mut v, pk);
        v
    }

    fn typed_pair(t: u8) -> BoxedStrategy<PkValue> {
        match t % 3 {
            0 => any::<i64>().prop_map(PkValue::Integer).boxed(),
            1 => "[a-c\u{0}]{0,4}".prop_map(PkValue::String).boxed(),
            _ => proptest::collection::vec(prop_oneof![Just(0u8), Just(0xFF), any::<u8>()], 0..4).prop_map(PkValue::Binary).boxed(),
        }
    }

    proptest! {
        #[test]
        fn single_column_order_matches_value_order(a in pk_value(), b in pk_value()) {
            prop_assume!(a.pk_type() == b.pk_type());
            prop_assert_eq!(enc(std::slice::from_ref(&a)).cmp(&enc(std::slice::from_ref(&b))), a.cmp(&b));
        }

        #[test]
        fn composite_order_matches_tuple_order(
            types in proptest::collection::vec(0u8..3, 1..=4),
            seed in any::<u64>(),
        ) {
            // Two keys of the same schema, compared as tuples and as bytes.
            let mut runner = proptest::test_runner::TestRunner::new_with_rng(
                Default::default(),
                proptest::test_runner::TestRng::from_seed(
                    proptest::test_runner::RngAlgorithm::ChaCha,
                    &{ let mut s = [0u8; 32]; s[..8].copy_from_slice(&seed.to_le_bytes()); s },
                ),
            );
            let mut gen = || types.iter().map(|t| typed_pair(*t).new_tree(&mut runner).unwrap().current()).collect::<Vec<_>>();
            let a = gen();
            let b = gen();
            prop_assert_eq!(enc(&a).cmp(&enc(&b)), a.cmp(&b));
            let tys: Vec<PkType> = a.iter().map(|v| v.pk_type()).collect();
            prop_assert_eq!(decode_pk(&enc(&a), &tys).unwrap(), a);
        }

        #[test]
        fn round_trip(v in pk_value()) {
            prop_assert_eq!(decode_pk(&enc(std::slice::from_ref(&v)), &[v.pk_type()]).unwrap(), vec![v]);
        }

        #[test]
        fn bounds_enclose_their_prefix(a in pk_value(), b in pk_value()) {
            let row = enc(&[a.clone(), b]);
            let mut lo = Vec::new();
            encode_bound(&mut lo, &[PkBound::Value(a.clone()), PkBound::InfMin]);
            let mut hi = Vec::new();
            encode_bound(&mut hi, &[PkBound::Value(a), PkBound::InfMax]);
            prop_assert!(lo <= row && row < hi);
        }
    }
}
