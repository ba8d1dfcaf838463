//! Values as PostgreSQL's text forms: floats, bytea, timestamps, uuids and array literals, read and written.

use super::*;

pub(super) fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "infinity" | "inf" | "+infinity" => Some(f64::INFINITY),
        "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => t.parse::<f64>().ok().filter(|f| f.is_finite()),
    }
}

/// A float's text as float4in and float8in read it: 22P02 for what is no number, 22003 for a number past
/// the type's range, too large or so small that it would read as zero.
pub(super) fn parse_float_in(ty: SqlType, s: &str) -> Result<f64> {
    let out_of_range = || QueryError::NumericOutOfRange(format!("\"{s}\" is out of range for type {}", ty.pg_name()));
    let t = s.trim();
    let Some(f) = parse_float(t) else {
        return match t.parse::<f64>() {
            Ok(_) => Err(out_of_range()),
            Err(_) => Err(QueryError::InvalidText(format!("invalid input syntax for type {}: \"{s}\"", ty.pg_name()))),
        };
    };
    let f = if ty == SqlType::Float4 { narrow(f).ok_or_else(out_of_range)? } else { f };
    let mantissa = t.split(['e', 'E']).next().unwrap_or_default();
    if f == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return Err(out_of_range());
    }
    Ok(f)
}

/// A double as a real (float4): `None` past real's range, or when a value not zero would become zero.
pub(super) fn narrow(f: f64) -> Option<f64> {
    let r = f as f32;
    let lost = (f.is_finite() && r.is_infinite()) || (f != 0.0 && r == 0.0);
    (!lost).then_some(r as f64)
}

/// PostgreSQL's shortest round-trip float output: fixed notation for exponents -4..15, else `1e+20`.
pub fn format_float(f: f64, single: bool) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sci = if single { format!("{:e}", f as f32) } else { format!("{f:e}") };
    let (mantissa, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let limit = if single { 6 } else { 15 };
    if exp < -4 || exp >= limit {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else if single {
        format!("{}", f as f32)
    } else {
        format!("{f}")
    }
}

pub(super) fn parse_bytea(s: &str) -> Option<Vec<u8>> {
    if let Some(hex) = s.strip_prefix("\\x") {
        let hex: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if !hex.len().is_multiple_of(2) {
            return None;
        }
        return hex.chunks(2).map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok()).collect();
    }
    // Escape format: backslash-octal and doubled backslashes.
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if b.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
            } else {
                let oct = std::str::from_utf8(b.get(i + 1..i + 4)?).ok()?;
                out.push(u8::from_str_radix(oct, 8).ok()?);
                i += 4;
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

pub(super) fn parse_timestamp(s: &str, tz: bool) -> Option<i64> {
    let t = s.trim();
    if tz {
        for f in ["%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f %#z"] {
            if let Ok(d) = DateTime::parse_from_str(t, f) {
                return Some(d.timestamp_micros());
            }
        }
        if let Ok(d) = DateTime::parse_from_rfc3339(t) {
            return Some(d.timestamp_micros());
        }
    }
    for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, f) {
            return Some(d.and_utc().timestamp_micros());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Some(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_micros());
    }
    // With an offset on a plain timestamp, PostgreSQL ignores the offset.
    if !tz {
        return parse_timestamp(s, true);
    }
    None
}

pub(super) fn format_timestamp(us: i64, tz: bool) -> String {
    let Some(dt) = Utc.timestamp_micros(us).single() else { return us.to_string() };
    let mut s = dt.format("%Y-%m-%d %H:%M:%S").to_string();
    let frac = us.rem_euclid(1_000_000);
    if frac != 0 {
        let f = format!(".{frac:06}");
        s.push_str(f.trim_end_matches('0'));
    }
    if tz {
        s.push_str("+00");
    }
    s
}

pub(super) fn parse_uuid(s: &str) -> Option<u128> {
    let hex: String = s.trim().trim_matches(['{', '}']).chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return None;
    }
    u128::from_str_radix(&hex, 16).ok()
}

/// The elements of a one-dimensional array in PostgreSQL's text form (`{a,"b c",NULL}`).
pub fn parse_text_array(s: &str) -> Option<Vec<Option<String>>> {
    let inner = s.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    if inner.is_empty() {
        return Some(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        if chars.peek() == Some(&'"') {
            chars.next();
            let mut e = String::new();
            loop {
                match chars.next()? {
                    '\\' => e.push(chars.next()?),
                    '"' => break,
                    c => e.push(c),
                }
            }
            out.push(Some(e));
        } else {
            let mut e = String::new();
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                e.push(c);
                chars.next();
            }
            out.push(if e == "NULL" { None } else { Some(e) });
        }
        match chars.next() {
            None => return Some(out),
            Some(',') => continue,
            Some(_) => return None,
        }
    }
}
