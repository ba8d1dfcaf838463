//! `interval` results, as PostgreSQL writes and sends them. Intervals come out of the analytic engine
//! (`interval '1 day'`, `max(ts) - min(ts)`, `age(...)`); tables cannot declare them. A value is held as
//! its text (a `Datum::Text` of type [`SqlType::Interval`](super::SqlType)), written here from its three
//! fields and read back for the binary form.
//!
//! The text is PostgreSQL's default `IntervalStyle` (`postgres`): years, months and days each with its
//! unit (`1 year 2 mons -3 days`), then the time (`04:05:06.5`, hours past 24 kept). A part after a
//! negative one that is positive gets a `+` (`-1 days +02:00:00`); an empty interval is `00:00:00`.
//! ```text
//! binary = time:i64 (µs)  day:i32  month:i32      (big-endian, PostgreSQL's interval_send)
//! ```

use std::fmt::Write;

const US_PER_HOUR: i64 = 3_600_000_000;
const US_PER_DAY: i64 = 86_400_000_000;

/// PostgreSQL's text of an interval of `months`, `days` and `us` microseconds.
pub fn interval_text(months: i32, days: i32, us: i64) -> String {
    let mut out = String::new();
    let (mut is_zero, mut is_before) = (true, false);
    for (value, unit) in [((months / 12) as i64, "year"), ((months % 12) as i64, "mon"), (days as i64, "day")] {
        if value == 0 {
            continue;
        }
        let _ = write!(
            out,
            "{}{}{value} {unit}{}",
            if is_zero { "" } else { " " },
            if is_before && value > 0 { "+" } else { "" },
            if value != 1 { "s" } else { "" }
        );
        is_before = value < 0;
        is_zero = false;
    }
    if is_zero || us != 0 {
        let a = us.unsigned_abs();
        let (hours, minutes, seconds, fraction) = (a / US_PER_HOUR as u64, a / 60_000_000 % 60, a / 1_000_000 % 60, a % 1_000_000);
        let sign = if us < 0 {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        let _ = write!(out, "{}{sign}{hours:02}:{minutes:02}:{seconds:02}", if is_zero { "" } else { " " });
        if fraction != 0 {
            let f = format!("{fraction:06}");
            let _ = write!(out, ".{}", f.trim_end_matches('0'));
        }
    }
    out
}

/// The interval PostgreSQL gives a difference of two timestamps of `us` microseconds: whole days and a
/// time of the same sign (`1 day 01:00:00`, not `25:00:00`).
pub fn duration_text(us: i64) -> String {
    interval_text(0, (us / US_PER_DAY) as i32, us % US_PER_DAY)
}

/// The fields of a text [`interval_text`] wrote: months, days, microseconds.
pub fn parse_interval_text(s: &str) -> Option<(i32, i32, i64)> {
    let (mut months, mut days, mut us) = (0i32, 0i32, 0i64);
    let mut words = s.split_whitespace();
    while let Some(w) = words.next() {
        if w.contains(':') {
            let (neg, t) = match w.as_bytes().first() {
                Some(b'-') => (true, &w[1..]),
                Some(b'+') => (false, &w[1..]),
                _ => (false, w),
            };
            let mut parts = t.splitn(3, ':');
            let h: i64 = parts.next()?.parse().ok()?;
            let m: i64 = parts.next()?.parse().ok()?;
            let seconds = parts.next()?;
            let (sec, frac) = seconds.split_once('.').unwrap_or((seconds, ""));
            let sec: i64 = sec.parse().ok()?;
            let frac: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<6}").get(..6)?.parse().ok()? };
            let v = ((h * 60 + m) * 60 + sec) * 1_000_000 + frac;
            us = if neg { -v } else { v };
            continue;
        }
        let n: i32 = w.trim_start_matches('+').parse().ok()?;
        match words.next()?.trim_end_matches('s') {
            "year" => months += n * 12,
            "mon" => months += n,
            "day" => days = n,
            _ => return None,
        }
    }
    Some((months, days, us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_postgresql_writes_them() {
        let cases = [
            ((0, 1, 0), "1 day"),
            ((0, -1, 2 * US_PER_HOUR), "-1 days +02:00:00"),
            ((14, 0, 0), "1 year 2 mons"),
            ((0, 0, 0), "00:00:00"),
            ((0, 0, 1_500_000), "00:00:01.5"),
            ((0, 0, -(27 * US_PER_HOUR + 60_000_000)), "-27:01:00"),
            ((-1, 3, 0), "-1 mons +3 days"),
            ((1, -3, -1), "1 mon -3 days -00:00:00.000001"),
        ];
        for ((m, d, us), text) in cases {
            assert_eq!(interval_text(m, d, us), text);
            assert_eq!(parse_interval_text(text), Some((m, d, us)), "{text}");
        }
        assert_eq!(duration_text(25 * US_PER_HOUR), "1 day 01:00:00");
        assert_eq!(duration_text(-25 * US_PER_HOUR), "-1 days -01:00:00");
    }
}
