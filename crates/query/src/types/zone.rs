//! Time zones: the session's `TimeZone`, in which a `timestamptz` is read and shown.
//!
//! A `timestamptz` is stored as microseconds since 1970-01-01 00:00 UTC whatever the zone; the zone is only
//! how its text is read (a time without an offset is a local time there) and written (local time and
//! offset), and how it converts to and from `timestamp` and `date`. The forms PostgreSQL takes for the
//! setting, and what `SHOW TimeZone` then answers:
//!
//! ```text
//! SET TimeZone = 'america/new_york'       a zone of the IANA database, any case     America/New_York
//! SET TIME ZONE 3 / '-3.5' / '+3'         hours east of Greenwich                    <+03>-03, <-03:30>+03:30
//! SET TIME ZONE INTERVAL '+05:45' ...     the same, as an interval                   <+05:45>-05:45
//! SET TimeZone = 'UTC+3' / '<+04>-04'     POSIX: a name, then hours WEST             as written
//! ```
//!
//! A POSIX zone with daylight-saving rules (`EST5EDT` is an IANA name and works; `ABC3DEF` is not) is
//! refused with 0A000.

use std::fmt::Write;

use chrono::{Duration, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

use super::{out_of_range, Datum, SqlType};
use crate::error::Result;

/// A session's or a literal's time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Zone {
    /// A fixed offset, seconds east of Greenwich.
    Fixed(i32),
    /// A zone of the IANA database: its offset follows its rules (daylight saving, history).
    Named(Tz),
}

/// What a `TimeZone` setting's value means.
#[derive(Debug, PartialEq, Eq)]
pub enum Setting {
    /// The zone and the value `SHOW` answers.
    Zone(Zone, String),
    /// A POSIX zone with daylight-saving rules of its own.
    Unsupported,
    Invalid,
}

/// UTC: the server's default `TimeZone`.
impl Default for Zone {
    fn default() -> Zone {
        Zone::UTC
    }
}

impl Zone {
    pub const UTC: Zone = Zone::Fixed(0);

    /// Reads a `TimeZone` setting in any of the forms drawn above.
    pub fn setting(value: &str) -> Setting {
        let v = value.trim();
        // Hours east, as a number (`SET TIME ZONE -3.5`) or an interval (`INTERVAL '+05:45' HOUR TO MINUTE`).
        if let Some(east) = hours_east(v).or_else(|| interval_east(v)) {
            return Setting::Zone(Zone::Fixed(east), posix_of(east));
        }
        Zone::named_or_posix(v)
    }

    /// A zone as `AT TIME ZONE` and `timezone(zone, ts)` name it: an IANA name, or a POSIX zone, where a
    /// bare `'3'` is three hours west (SET reads it as east).
    pub fn named_or_posix(name: &str) -> Setting {
        let v = name.trim();
        if let Some(tz) = named(v) {
            return Setting::Zone(Zone::Named(tz), tz.name().to_string());
        }
        match posix(v) {
            Some(Some(east)) => Setting::Zone(Zone::Fixed(east), v.to_string()),
            Some(None) => Setting::Unsupported,
            None => Setting::Invalid,
        }
    }

    /// The zone a value `SHOW` answered stands for (what [`Zone::setting`] accepted).
    /// Every statement reads it: a zone name as SHOW gives it is one lookup, without the allocations of
    /// reading the other forms.
    pub fn of_setting(shown: &str) -> Zone {
        if let Ok(tz) = shown.parse::<Tz>() {
            return Zone::Named(tz);
        }
        match Zone::setting(shown) {
            Setting::Zone(z, _) => z,
            _ => Zone::UTC,
        }
    }

    /// Seconds east of Greenwich at an instant (µs since the epoch).
    pub fn offset_at(&self, us: i64) -> i32 {
        match self {
            Zone::Fixed(east) => *east,
            Zone::Named(tz) => match chrono::DateTime::from_timestamp_micros(us) {
                Some(utc) => tz.offset_from_utc_datetime(&utc.naive_utc()).fix().local_minus_utc(),
                None => 0,
            },
        }
    }

    /// The instant (µs since the epoch) of a local time here. As in PostgreSQL, a local time that a
    /// daylight-saving change skips takes the offset before the change (02:30 on a spring-forward night in
    /// New York is 03:30 EDT), and one that happens twice takes the offset after it (01:30 on the
    /// fall-back night is 01:30 EST, the later of the two).
    pub fn instant_of(&self, local: NaiveDateTime) -> Option<i64> {
        let east = match self {
            Zone::Fixed(east) => *east,
            Zone::Named(tz) => match tz.from_local_datetime(&local) {
                chrono::LocalResult::Single(t) => t.offset().fix().local_minus_utc(),
                chrono::LocalResult::Ambiguous(a, b) => a.offset().fix().local_minus_utc().min(b.offset().fix().local_minus_utc()),
                chrono::LocalResult::None => {
                    // The offset before the gap: that of the nearest earlier local time that exists.
                    (1..=192)
                        .find_map(|k| tz.from_local_datetime(&(local - Duration::minutes(15 * k))).earliest())?
                        .offset()
                        .fix()
                        .local_minus_utc()
                }
            },
        };
        (local - Duration::seconds(east as i64)).and_utc().timestamp_micros().into()
    }

    /// The local time here of an instant.
    pub fn local_of(&self, us: i64) -> Option<NaiveDateTime> {
        let utc = chrono::DateTime::from_timestamp_micros(us)?.naive_utc();
        Some(utc + Duration::seconds(self.offset_at(us) as i64))
    }

    /// The zone of an Arrow timestamp's label (what [`Zone::arrow_name`] writes; UTC for a label that is
    /// neither an IANA name nor an offset).
    pub fn of_arrow(label: &str) -> Zone {
        if let Some(tz) = named(label) {
            return Zone::Named(tz);
        }
        let (sign, rest) = match label.as_bytes().first() {
            Some(b'-') => (-1, &label[1..]),
            Some(b'+') => (1, &label[1..]),
            _ => return Zone::UTC,
        };
        let mut parts = rest.split(':').map(|p| p.parse::<i32>().unwrap_or(0));
        let (h, m) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        Zone::Fixed(sign * (h * 3600 + m * 60))
    }

    /// The zone's abbreviation at an instant, as `to_char`'s `TZ` prints it: the IANA database's (`EST`,
    /// `CEST`, `+0530` where it has no letters); a fixed offset's as PostgreSQL names one set by hours
    /// (`+05:30`), UTC's `UTC`.
    pub fn abbreviation_at(&self, us: i64) -> String {
        use chrono_tz::OffsetName;
        let east = self.offset_at(us);
        if let (Zone::Named(tz), Some(utc)) = (self, chrono::DateTime::from_timestamp_micros(us)) {
            if let Some(a) = tz.offset_from_utc_datetime(&utc.naive_utc()).abbreviation() {
                return a.to_string();
            }
        }
        if east == 0 {
            return "UTC".into();
        }
        let mut out = String::new();
        offset_text(east, &mut out);
        out
    }

    /// The zone as Arrow and DataFusion name it: an IANA name, or `+hh:mm`.
    pub fn arrow_name(&self) -> String {
        match self {
            Zone::Named(tz) => tz.name().to_string(),
            Zone::Fixed(east) => {
                let a = east.unsigned_abs();
                format!("{}{:02}:{:02}", if *east < 0 { '-' } else { '+' }, a / 3600, a % 3600 / 60)
            }
        }
    }
}

impl Datum {
    /// Converts a value of type `from` to `to` as an assignment does, in the session's `zone`: the
    /// conversions between text, `timestamp`, `timestamptz` and `date` depend on it.
    pub fn cast_in(self, from: SqlType, to: SqlType, zone: &Zone) -> Result<Datum> {
        use SqlType::*;
        const DAY: i64 = 86_400_000_000;
        let local = |us: i64| zone.local_of(us).map(|l| l.and_utc().timestamp_micros()).ok_or_else(|| out_of_range(Timestamp));
        Ok(match (self, from, to) {
            (Datum::Text(s), _, Timestamptz) => Datum::parse_in(Timestamptz, &s, zone)?,
            (d @ Datum::Timestamp(_), Timestamptz, t) if t.is_text() || t == Json || t == Jsonb => {
                Datum::Text(d.text_in(Timestamptz, zone).unwrap_or_default())
            }
            (Datum::Timestamp(us), Timestamp, Timestamptz) => {
                let naive = chrono::DateTime::from_timestamp_micros(us).ok_or_else(|| out_of_range(Timestamptz))?.naive_utc();
                Datum::Timestamp(zone.instant_of(naive).ok_or_else(|| out_of_range(Timestamptz))?)
            }
            (Datum::Timestamp(us), Timestamptz, Timestamp) => Datum::Timestamp(local(us)?),
            (Datum::Timestamp(us), Timestamptz, Date) => Datum::Date(local(us)?.div_euclid(DAY) as i32),
            (Datum::Date(d), _, Timestamptz) => {
                let midnight =
                    chrono::DateTime::from_timestamp_micros(d as i64 * DAY).ok_or_else(|| out_of_range(Timestamptz))?.naive_utc();
                Datum::Timestamp(zone.instant_of(midnight).ok_or_else(|| out_of_range(Timestamptz))?)
            }
            (d, _, t) => d.cast(t)?,
        })
    }

    /// An explicit cast (`x::t`) of a value of type `from`: [`Datum::cast_in`], and then as
    /// [`Datum::cast_explicit`].
    pub fn cast_explicit_in(self, from: SqlType, to: SqlType, zone: &Zone) -> Result<Datum> {
        self.cast_in(from, to, zone)?.cast_explicit(to)
    }
}

/// An offset as a timestamptz's text ends: `+02`, `-03:30`, `-04:56:02`.
pub fn offset_text(east: i32, out: &mut String) {
    let a = east.unsigned_abs();
    let _ = write!(out, "{}{:02}", if east < 0 { '-' } else { '+' }, a / 3600);
    if !a.is_multiple_of(3600) {
        let _ = write!(out, ":{:02}", a % 3600 / 60);
        if !a.is_multiple_of(60) {
            let _ = write!(out, ":{:02}", a % 60);
        }
    }
}

/// A zone of the IANA database by its name in any case (`utc`, `Europe/Paris`, `EST5EDT`).
pub fn named(name: &str) -> Option<Tz> {
    name.parse::<Tz>().ok().or_else(|| chrono_tz::TZ_VARIANTS.iter().copied().find(|tz| tz.name().eq_ignore_ascii_case(name)))
}

/// `<+03>-03`: how PostgreSQL shows a zone set as hours east.
fn posix_of(east: i32) -> String {
    let mut name = String::new();
    offset_text(east, &mut name);
    let mut west = String::new();
    offset_text(-east, &mut west);
    format!("<{name}>{west}")
}

/// A plain number of hours east (`3`, `-3.5`, `+3`), within a day.
fn hours_east(v: &str) -> Option<i32> {
    if v.is_empty() || !v.trim_start_matches(['+', '-']).bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let hours: f64 = v.parse().ok()?;
    (hours.abs() < 24.0).then(|| (hours * 3600.0).round() as i32)
}

/// An interval as `SET TIME ZONE INTERVAL '-08:00' HOUR TO MINUTE` (or `INTERVAL '2 hours'`) hands it over.
fn interval_east(v: &str) -> Option<i32> {
    let lower = v.to_ascii_lowercase();
    let (text, unit) = lower.strip_prefix("interval")?.trim().strip_prefix('\'')?.split_once('\'')?;
    if !["", "hour", "hour to minute", "minute", "hour to second"].contains(&unit.trim()) {
        return None;
    }
    let text = text.trim();
    if let Some(n) = text.strip_suffix("hours").or_else(|| text.strip_suffix("hour")) {
        return hours_east(n.trim());
    }
    let (sign, hms) = match text.strip_prefix('-') {
        Some(t) => (-1, t),
        None => (1, text.trim_start_matches('+')),
    };
    let secs = clock_seconds(hms)?;
    (secs < 24 * 3600).then_some(sign * secs)
}

/// `hh[:mm[:ss]]` in seconds.
fn clock_seconds(t: &str) -> Option<i32> {
    let mut parts = t.split(':');
    let mut secs = 0;
    for (i, scale) in [3600, 60, 1].into_iter().enumerate() {
        match parts.next() {
            Some(p) if !p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit()) => {
                let n: i32 = p.parse().ok()?;
                if i > 0 && n > 59 {
                    return None;
                }
                secs += n * scale;
            }
            Some(_) => return None,
            None if i > 0 => break,
            None => return None,
        }
    }
    parts.next().is_none().then_some(secs)
}

/// A POSIX zone `STDoffset` (`UTC+3`, `<+04>-04`, `+03:30`): the offset counts hours west. `Some(None)`:
/// a POSIX zone with a daylight-saving part, which is not read here.
fn posix(v: &str) -> Option<Option<i32>> {
    let rest = if let Some(r) = v.strip_prefix('<') {
        &r[r.find('>')? + 1..]
    } else {
        let letters = v.bytes().take_while(u8::is_ascii_alphabetic).count();
        if letters != 0 && letters < 3 {
            return None;
        }
        &v[letters..]
    };
    let digits = rest.trim_start_matches(['+', '-']);
    let end = digits.find(|c: char| !(c.is_ascii_digit() || c == ':')).unwrap_or(digits.len());
    let (clock, dst) = digits.split_at(end);
    let west = clock_seconds(clock)?;
    if !dst.is_empty() {
        return dst.starts_with(|c: char| c.is_ascii_alphabetic() || c == '<').then_some(None);
    }
    let west = if rest.starts_with('-') { -west } else { west };
    (west.abs() < 24 * 3600).then_some(Some(-west))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(v: &str) -> Option<(i32, String)> {
        match Zone::setting(v) {
            Setting::Zone(z, s) => Some((z.offset_at(1_721_044_800_000_000), s)),
            _ => None,
        }
    }

    #[test]
    fn settings_read_and_show_as_postgres_does() {
        // 2024-07-15 12:00 UTC: New York is on daylight saving time.
        assert_eq!(shown("america/new_york"), Some((-4 * 3600, "America/New_York".into())));
        assert_eq!(shown("UTC"), Some((0, "UTC".into())));
        assert_eq!(shown("3"), Some((3 * 3600, "<+03>-03".into())));
        assert_eq!(shown("-3.5"), Some((-12600, "<-03:30>+03:30".into())));
        assert_eq!(shown("+3"), Some((3 * 3600, "<+03>-03".into())));
        assert_eq!(shown("INTERVAL '+05:45' HOUR TO MINUTE"), Some((20700, "<+05:45>-05:45".into())));
        assert_eq!(shown("INTERVAL '2 hours'"), Some((7200, "<+02>-02".into())));
        assert_eq!(shown("UTC+3"), Some((-3 * 3600, "UTC+3".into())));
        assert_eq!(shown("UTC+3:30"), Some((-12600, "UTC+3:30".into())));
        assert_eq!(shown("<+04>-04"), Some((4 * 3600, "<+04>-04".into())));
        assert_eq!(shown("+03:30"), Some((-12600, "+03:30".into())));
        assert_eq!(Zone::setting("XYZ3ABC"), Setting::Unsupported);
        for bad in ["Mars/Phobos", "PST", "Z", "", "UTC+99"] {
            assert_eq!(Zone::setting(bad), Setting::Invalid, "{bad}");
        }
    }

    #[test]
    fn local_times_in_gaps_and_overlaps_take_postgres_offsets() {
        let ny = Zone::Named(chrono_tz::America::New_York);
        let at = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap();
        let utc = |s: &str| at(s).and_utc().timestamp_micros();
        assert_eq!(ny.instant_of(at("2024-03-10 02:30")), Some(utc("2024-03-10 07:30")));
        assert_eq!(ny.instant_of(at("2024-11-03 01:30")), Some(utc("2024-11-03 06:30")));
        assert_eq!(ny.instant_of(at("2024-07-15 08:00")), Some(utc("2024-07-15 12:00")));
        let mut s = String::new();
        offset_text(ny.offset_at(utc("1800-01-01 00:00")), &mut s);
        assert_eq!(s, "-04:56:02");
    }
}
