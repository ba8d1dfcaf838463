//! The argument defaults of a built-in function, as `pg_get_function_arguments` prints them: deparsed from
//! the constants `pg_proc.proargdefaults` holds in PostgreSQL's node text,
//! `({CONST :consttype 16 ... :constvalue 1 [ 1 0 0 0 0 0 0 0 ]} ...)`, whose bytes are the value's datum:
//!
//! ```text
//! by value (bool, int2, int4, int8)   the value, little-endian
//! by reference (varlena)              u32 little-endian header (length << 2), then the value's bytes:
//!   text                              the characters
//!   numeric (short form)              u16 header: 0x8000 | sign 0x2000 | dscale << 7 | weight (6 bits,
//!                                     sign 0x40); then base-10000 digits, i16 each
//!   text[]                            u32 ndim, u32 data offset, u32 element type (ndim 0: empty)
//!   jsonb                             u32 container header: 0x20000000 object, 0x40000000 array, | count
//! ```
//! What PostgreSQL prints for each: `true`, `3`, `'NFC'::text`, `0.0`, `'{}'::text[]`, `'{}'::jsonb`.

use datafusion::error::{DataFusionError, Result as DfResult};

/// The defaults (`n` of them) of function `name`, deparsed from its `proargdefaults`.
pub(super) fn deparse_defaults(name: &str, nodes: &str, n: usize) -> DfResult<Vec<String>> {
    let refuse = || {
        DataFusionError::External(Box::new(crate::error::QueryError::NotSupported(format!(
            "the argument defaults of function {name} (of a type Tabula does not deparse)"
        ))))
    };
    let mut out = Vec::new();
    for node in nodes.split("{CONST").skip(1) {
        let field = |name: &str| node.split_once(name).map(|(_, r)| r.trim_start());
        let ty: i64 = field(":consttype ").and_then(|r| r.split_whitespace().next()).and_then(|t| t.parse().ok()).ok_or_else(refuse)?;
        let bytes: Vec<u8> = field(":constvalue ")
            .and_then(|r| r.split_once('[').map(|(_, b)| b))
            .and_then(|b| b.split_once(']').map(|(b, _)| b))
            .map(|b| b.split_whitespace().filter_map(|x| x.parse::<i16>().ok()).map(|x| x as u8).collect())
            .unwrap_or_default();
        out.push(constant(ty, &bytes).ok_or_else(refuse)?);
    }
    if out.len() != n {
        return Err(refuse());
    }
    Ok(out)
}

/// One constant of type `ty` from its datum's bytes.
fn constant(ty: i64, bytes: &[u8]) -> Option<String> {
    let int = |n: usize| bytes.get(..n).map(|b| b.iter().rev().fold(0i64, |acc, &x| (acc << 8) | x as i64));
    let u32_at = |i: usize| bytes.get(i..i + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
    // A varlena's value: after its 4-byte header, as long as the header says.
    let varlena = || bytes.get(4..(u32_at(0)? >> 2) as usize);
    Some(match ty {
        16 => (if int(1)? != 0 { "true" } else { "false" }).to_string(),
        21 => (int(2)? as i16).to_string(),
        23 => (int(4)? as i32).to_string(),
        20 => int(8)?.to_string(),
        25 => format!("'{}'::text", String::from_utf8(varlena()?.to_vec()).ok()?.replace('\'', "''")),
        1700 => numeric(varlena()?)?,
        // An empty one-dimensional text array.
        1009 if u32_at(4)? == 0 => "'{}'::text[]".to_string(),
        3802 => match u32::from_le_bytes(varlena()?.get(..4)?.try_into().ok()?) {
            0x2000_0000 => "'{}'::jsonb".to_string(),
            0x4000_0000 => "'[]'::jsonb".to_string(),
            _ => return None,
        },
        _ => return None,
    })
}

/// A numeric in PostgreSQL's short form, printed with its display scale.
fn numeric(b: &[u8]) -> Option<String> {
    let header = u16::from_le_bytes(b.get(..2)?.try_into().ok()?);
    if header & 0xC000 != 0x8000 {
        return None;
    }
    let negative = header & 0x2000 != 0;
    let dscale = ((header & 0x1F80) >> 7) as usize;
    let weight = (header & 0x3F) as i32 - if header & 0x40 != 0 { 64 } else { 0 };
    let digits: Vec<i32> = b[2..].chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as i32).collect();
    let digit = |i: i32| if i >= 0 { digits.get(i as usize).copied().unwrap_or(0) } else { 0 };
    let mut text = if negative { "-".to_string() } else { String::new() };
    match weight {
        w if w < 0 => text.push('0'),
        w => {
            text.push_str(&digit(0).to_string());
            (1..=w).for_each(|i| text.push_str(&format!("{:04}", digit(i))));
        }
    }
    if dscale > 0 {
        let groups = dscale.div_ceil(4) as i32;
        let fraction: String = (1..=groups).map(|k| format!("{:04}", digit(weight + k))).collect();
        text.push('.');
        text.push_str(&fraction[..dscale]);
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_print_as_postgresql_prints_them() {
        assert_eq!(constant(1700, &[24, 0, 0, 0, 0x80, 0x80]).as_deref(), Some("0.0"));
        // 12.5: weight 0, dscale 1, digits 12 and 5000.
        assert_eq!(constant(1700, &[40, 0, 0, 0, 0x80, 0x80, 12, 0, 0x88, 0x13]).as_deref(), Some("12.5"));
        assert_eq!(constant(25, &[28, 0, 0, 0, b'N', b'F', b'C']).as_deref(), Some("'NFC'::text"));
        assert_eq!(constant(1009, &[64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 25, 0, 0, 0]).as_deref(), Some("'{}'::text[]"));
        assert_eq!(constant(3802, &[32, 0, 0, 0, 0, 0, 0, 32]).as_deref(), Some("'{}'::jsonb"));
        assert_eq!(constant(23, &[0xFF, 0xFF, 0xFF, 0xFF]).as_deref(), Some("-1"));
        assert_eq!(constant(600, &[0]), None);
    }
}
