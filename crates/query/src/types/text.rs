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

/// Reads a timestamp's text. `zone`: the session's, for a `timestamptz`, where a time without an offset or
/// a zone name is a local time; `None` for a `timestamp`, which ignores an offset or zone in its text, as
/// PostgreSQL does (`'2024-07-15 12:00+02'::timestamp` is 12:00).
pub(super) fn parse_timestamp(s: &str, zone: Option<&Zone>) -> Option<i64> {
    let (s, bc) = strip_bc(s);
    let (local, given) = split_zone(s.trim())?;
    let naive = parse_local(local)?;
    let naive = before_christ(naive.date(), bc)?.and_time(naive.time());
    match (zone, given) {
        (None, _) => Some(naive.and_utc().timestamp_micros()),
        (Some(_), Some(Given::East(east))) => naive.and_utc().timestamp_micros().checked_sub(east as i64 * 1_000_000),
        (Some(_), Some(Given::Zone(z))) => z.instant_of(naive),
        (Some(session), None) => session.instant_of(naive),
    }
}

/// What a timestamp's text says of its zone.
enum Given {
    /// `+02`, `-03:30`, `Z`: seconds east.
    East(i32),
    /// `Europe/Paris`, `UTC`.
    Zone(Zone),
}

/// Splits `2024-07-15 12:00:00+02` or `2024-07-15 12:00 Europe/Paris` into the local time and its zone.
/// `None`: a zone name that is no zone.
fn split_zone(t: &str) -> Option<(&str, Option<Given>)> {
    if let Some(rest) = t.strip_suffix(['Z', 'z']).filter(|r| r.ends_with(|c: char| c.is_ascii_digit())) {
        return Some((rest, Some(Given::East(0))));
    }
    if let Some((local, name)) = t.rsplit_once(' ').filter(|(_, n)| n.starts_with(|c: char| c.is_ascii_alphabetic())) {
        let zone = match super::zone::named(name) {
            Some(tz) => Zone::Named(tz),
            None if name.eq_ignore_ascii_case("z") => Zone::UTC,
            None => return None,
        };
        return Some((local.trim_end(), Some(Given::Zone(zone))));
    }
    // The time starts after the date's separator; an offset's sign is the first + or - in it.
    let Some(time_at) = t.find([' ', 'T']) else { return Some((t, None)) };
    let Some(sign_at) = t[time_at + 1..].find(['+', '-']).map(|i| i + time_at + 1) else { return Some((t, None)) };
    let (local, offset) = t.split_at(sign_at);
    let digits = &offset[1..];
    let clock = match (digits.contains(':'), digits.len()) {
        (false, 4) => format!("{}:{}", &digits[..2], &digits[2..]),
        _ => digits.to_string(),
    };
    let mut secs = 0i32;
    for (part, scale) in clock.split(':').zip([3600, 60, 1]) {
        if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        secs += part.parse::<i32>().ok()? * scale;
    }
    let east = if offset.starts_with('-') { -secs } else { secs };
    Some((local.trim_end(), Some(Given::East(east))))
}

fn parse_local(t: &str) -> Option<NaiveDateTime> {
    for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, f) {
            return Some(d);
        }
    }
    NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?.and_hms_opt(0, 0, 0)
}

/// A timestamp's text: `zone` is the session's for a `timestamptz`, shown as local time and offset there
/// (`2024-07-15 14:00:00+02`); `None` for a `timestamp`.
pub(super) fn format_timestamp(us: i64, zone: Option<&Zone>) -> String {
    let local = match zone {
        Some(z) => z.local_of(us),
        None => chrono::DateTime::from_timestamp_micros(us).map(|d| d.naive_utc()),
    };
    let Some(local) = local else { return us.to_string() };
    let (mut s, bc) = date_text(local.date());
    s.push_str(&local.format(" %H:%M:%S").to_string());
    let frac = us.rem_euclid(1_000_000);
    if frac != 0 {
        let f = format!(".{frac:06}");
        s.push_str(f.trim_end_matches('0'));
    }
    if let Some(z) = zone {
        super::zone::offset_text(z.offset_at(us), &mut s);
    }
    if bc {
        s.push_str(" BC");
    }
    s
}

/// The text of a date `days` after 1970-01-01.
pub(super) fn format_date(days: i32) -> String {
    let (s, bc) = date_text(chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("a date") + chrono::Duration::days(days.into()));
    if bc {
        s + " BC"
    } else {
        s
    }
}

/// A date as PostgreSQL prints it (ISO): the year of four digits at least, and a year before 1 as the
/// year BC it is (year 0 is 1 BC), the `true` saying that ` BC` ends the text.
pub(super) fn date_text(d: chrono::NaiveDate) -> (String, bool) {
    use chrono::Datelike;
    let (year, bc) = if d.year() <= 0 { (1 - d.year(), true) } else { (d.year(), false) };
    (format!("{year:04}-{:02}-{:02}", d.month(), d.day()), bc)
}

/// A date or timestamp's text without its ` BC`, and whether it had one (any case, as PostgreSQL reads it).
pub(super) fn strip_bc(s: &str) -> (&str, bool) {
    let t = s.trim_end();
    match t.len().checked_sub(3).filter(|&i| t.is_char_boundary(i) && t[i..].eq_ignore_ascii_case(" bc")) {
        Some(i) => (&t[..i], true),
        None => (s, false),
    }
}

/// A date read from a year of the AD/BC notation as the proleptic calendar's year (1 BC is year 0).
pub(super) fn before_christ(d: chrono::NaiveDate, bc: bool) -> Option<chrono::NaiveDate> {
    use chrono::Datelike;
    match bc {
        false => Some(d),
        true if d.year() >= 1 => d.with_year(1 - d.year()),
        true => None,
    }
}

pub(super) fn parse_uuid(s: &str) -> Option<u128> {
    let hex: String = s.trim().trim_matches(['{', '}']).chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return None;
    }
    u128::from_str_radix(&hex, 16).ok()
}

/// An array's element in PostgreSQL's text form: quoted when empty, `NULL`, or holding what delimits
/// elements or whitespace, with `"` and `\\` escaped.
pub fn quote_array_element(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.eq_ignore_ascii_case("null")
        && !s.starts_with('{')
        && !s.chars().any(|c| matches!(c, ',' | '"' | '\\' | '{' | '}') || c.is_whitespace());
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    }
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
