//! Session settings: PostgreSQL 15's own (taken from a fresh initdb, `pg_settings.tsv`), checked and shown
//! as PostgreSQL checks and shows them, plus Tabula's. Most are accepted and kept without effect;
//! `SHOW ALL` says which ones Tabula acts on.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::error::{QueryError, Result};
use crate::expr::SERVER_VERSION;
use crate::types::{Zone, ZoneSetting};

/// The settings Tabula itself defines, with their defaults: PostgreSQL's, as far as Tabula speaks them (UTF8,
/// ISO dates, UTC, repeatable read). `synchronous_commit` is added by [`default_settings`].
const OWN_SETTINGS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("client_encoding", "UTF8"),
    ("datestyle", "ISO, MDY"),
    ("default_transaction_isolation", "repeatable read"),
    ("extra_float_digits", "1"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("is_superuser", "on"),
    ("search_path", "\"$user\", public"),
    ("server_encoding", "UTF8"),
    ("server_version", SERVER_VERSION),
    ("server_version_num", "150000"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("timezone", "UTC"),
    ("transaction_isolation", "repeatable read"),
    ("transaction_read_only", "off"),
    ("lock_timeout", "0"),
    ("idle_in_transaction_session_timeout", "0"),
    ("max_identifier_length", "63"),
    ("default_table_access_method", "heap"),
    ("default_tablespace", ""),
    ("lc_collate", "C.UTF-8"),
    ("lc_ctype", "C.UTF-8"),
    ("max_index_keys", "32"),
    ("block_size", "8192"),
];

/// One of PostgreSQL's session settings, as `pg_settings` describes it.
struct PgSetting {
    default: &'static str,
    kind: &'static str,
    /// The unit an integer or real is counted in (`kB`, `8kB`, `ms`, ...); empty: none.
    unit: &'static str,
    min: f64,
    max: f64,
    enums: &'static str,
}

/// PostgreSQL's session settings (`pg_settings.tsv`): accepted so that what clients, tools and dumps set for
/// PostgreSQL runs here too, though only the ones Tabula defines act on anything.
fn postgres_settings() -> &'static HashMap<&'static str, PgSetting> {
    static SETTINGS: std::sync::LazyLock<HashMap<&'static str, PgSetting>> = std::sync::LazyLock::new(|| {
        include_str!("pg_settings.tsv")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
                Some((
                    *f.first()?,
                    PgSetting {
                        default: f.get(1)?,
                        kind: f.get(2)?,
                        unit: f.get(3)?,
                        min: num(f.get(4)?),
                        max: num(f.get(5)?),
                        enums: f.get(6)?,
                    },
                ))
            })
            .collect()
    });
    &SETTINGS
}

impl PgSetting {
    /// The value as `SHOW` gives it back, or PostgreSQL's message refusing it.
    fn check(&self, key: &str, value: &str) -> std::result::Result<String, String> {
        let invalid = || format!("invalid value for parameter \"{key}\": \"{value}\"");
        let v = value.trim();
        let in_range = |n: f64| {
            if n >= self.min && n <= self.max {
                Ok(show_with_unit(n, self.unit))
            } else {
                let unit = if self.unit.is_empty() { String::new() } else { format!(" {}", self.unit) };
                Err(format!("{n}{unit} is outside the valid range for parameter \"{key}\" ({} .. {})", self.min, self.max))
            }
        };
        match self.kind {
            "bool" => parse_bool(v)
                .map(|b| if b { "on" } else { "off" }.to_string())
                .ok_or_else(|| format!("parameter \"{key}\" requires a Boolean value")),
            "integer" => in_range(parse_with_unit(v, self.unit).ok_or_else(invalid)?.round()),
            "real" => in_range(parse_with_unit(v, self.unit).ok_or_else(invalid)?),
            "enum" => {
                let lower = v.to_lowercase();
                let mut values = self.enums.split(',');
                if let Some(e) = values.clone().find(|e| **e == lower) {
                    return Ok(e.to_string());
                }
                // An on/off enum also takes the boolean spellings, as in PostgreSQL.
                let on_off = values.clone().any(|e| e == "on") && values.any(|e| e == "off");
                parse_bool(v).filter(|_| on_off).map(|b| if b { "on" } else { "off" }.to_string()).ok_or_else(invalid)
            }
            _ => Ok(value.to_string()),
        }
    }
}

/// PostgreSQL's boolean spellings: on, off, true, false, yes, no, 1, 0, and unique prefixes of the words.
fn parse_bool(v: &str) -> Option<bool> {
    let v = v.to_lowercase();
    match v.as_str() {
        "1" | "on" => return Some(true),
        "0" | "of" | "off" => return Some(false),
        "" | "o" => return None,
        _ => {}
    }
    if "true".starts_with(&v) || "yes".starts_with(&v) {
        Some(true)
    } else if "false".starts_with(&v) || "no".starts_with(&v) {
        Some(false)
    } else {
        None
    }
}

/// A unit's size in its kind's smallest unit (bytes or microseconds), and whether it measures memory.
fn unit_size(unit: &str) -> Option<(f64, bool)> {
    Some(match unit {
        "B" => (1.0, true),
        "kB" => (1024.0, true),
        "8kB" => (8192.0, true),
        "MB" => (1024.0 * 1024.0, true),
        "GB" => (1024.0 * 1024.0 * 1024.0, true),
        "TB" => (1024.0 * 1024.0 * 1024.0 * 1024.0, true),
        "us" => (1.0, false),
        "ms" => (1e3, false),
        "s" => (1e6, false),
        "min" => (60e6, false),
        "h" => (3600e6, false),
        "d" => (86400e6, false),
        _ => return None,
    })
}

/// A number, with a unit of the same kind as `base` (`64MB` for a setting counted in kB), in `base` units.
pub(crate) fn parse_with_unit(v: &str, base: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (num, unit) = (v[..split].trim(), v[split..].trim());
    let n: f64 = num.parse().ok().filter(|n: &f64| n.is_finite())?;
    if unit.is_empty() {
        return Some(n);
    }
    let (given, given_memory) = unit_size(unit)?;
    let (base, base_memory) = unit_size(base)?;
    (given_memory == base_memory).then(|| n * given / base)
}

/// A number of `base` units as PostgreSQL shows it: in the largest unit it is a whole number of (`64MB`),
/// without a unit when it has none or is not positive.
fn show_with_unit(n: f64, base: &str) -> String {
    let Some((size, memory)) = unit_size(base).filter(|_| n > 0.0) else { return format!("{n}") };
    // A whole number of base units always finds its own unit or a larger one first.
    let units: &[&str] = if memory { &["TB", "GB", "MB", "kB", "B"] } else { &["d", "h", "min", "s", "ms", "us"] };
    let total = n * size;
    for u in units {
        let (s, _) = unit_size(u).expect("a known unit");
        if (total / s).fract() == 0.0 {
            return format!("{}{u}", total / s);
        }
    }
    format!("{n}{base}")
}

/// Whether `key` (lower case) names a setting: Tabula's, PostgreSQL's, a server setting, or a dotted custom
/// one (`myapp.tenant`), which PostgreSQL accepts under any name.
fn is_known_setting(key: &str) -> bool {
    static KNOWN: std::sync::LazyLock<std::collections::HashSet<&'static str>> = std::sync::LazyLock::new(|| {
        OWN_SETTINGS
            .iter()
            .map(|(k, _)| *k)
            .chain(postgres_settings().keys().copied())
            .chain(SERVER_SETTINGS.iter().copied())
            .chain(["session_authorization"])
            .collect()
    });
    key.contains('.') || KNOWN.contains(key)
}

/// A session's settings by name, shared until one of them changes (a statement's analytic plan, a new
/// session and `DISCARD ALL` take them without copying).
pub type Settings = Arc<BTreeMap<String, String>>;

/// Every setting's default: PostgreSQL's, then Tabula's over them, and `synchronous_commit` following how
/// the store commits: a store that syncs in the background (`Durability::Group`) starts sessions with `off`.
pub(crate) fn default_settings(durability: tabula_store::Durability) -> BTreeMap<String, String> {
    let synchronous_commit = match durability {
        tabula_store::Durability::Sync => "on",
        tabula_store::Durability::Group { .. } => "off",
    };
    postgres_settings()
        .iter()
        .map(|(k, s)| (*k, s.default))
        .chain(OWN_SETTINGS.iter().copied())
        .chain([("synchronous_commit", synchronous_commit)])
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Settings no one may change.
const FIXED_SETTINGS: &[&str] = &["server_version", "server_version_num", "server_encoding", "integer_datetimes", "is_superuser"];

/// Settings the server fixes when it starts, from its flags or configuration file (PostgreSQL's `postmaster`
/// settings): `SHOW` gives them once the server has published them, and only a restart changes them. Tabula's
/// own take a `tabula.` prefix, as PostgreSQL's custom settings take a dotted one.
pub const SERVER_SETTINGS: &[&str] = &[
    "max_connections",
    "wal_writer_delay",
    "tabula.block_cache_size",
    "tabula.busy_poll",
    "tabula.wal_prefill_size",
    "tabula.statement_memory",
    "tabula.memory_limit",
];

/// Refuses a change to a setting that cannot change in a session, with PostgreSQL's message.
pub(crate) fn refuse_fixed(key: &str) -> Result<()> {
    if FIXED_SETTINGS.contains(&key) {
        return Err(QueryError::CantChangeParameter(format!("parameter \"{key}\" cannot be changed")));
    }
    if SERVER_SETTINGS.contains(&key) {
        return Err(QueryError::CantChangeParameter(format!("parameter \"{key}\" cannot be changed without restarting the server")));
    }
    Ok(())
}

/// Settings whose changes clients are told about (ParameterStatus).
pub const REPORTED_SETTINGS: &[&str] = &[
    "application_name",
    "client_encoding",
    "datestyle",
    "intervalstyle",
    "is_superuser",
    "server_version",
    "standard_conforming_strings",
    "timezone",
    "integer_datetimes",
];

/// The canonical name clients see for a setting (`DateStyle`, `TimeZone`, ...).
pub fn display_setting_name(name: &str) -> &str {
    match name {
        "datestyle" => "DateStyle",
        "timezone" => "TimeZone",
        "intervalstyle" => "IntervalStyle",
        other => other,
    }
}

/// The `name=value` pairs of a startup message's `options`: arguments split at spaces (a backslash keeps
/// the next character), each `-c name=value`, `-cname=value` or `--name=value`.
fn parse_startup_options(options: &str) -> Result<Vec<(String, String)>> {
    let mut args = Vec::new();
    let mut arg = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => arg.extend(chars.next()),
            c if c.is_whitespace() => {
                if !arg.is_empty() {
                    args.push(std::mem::take(&mut arg));
                }
            }
            c => arg.push(c),
        }
    }
    if !arg.is_empty() {
        args.push(arg);
    }
    let bad = |a: &str| QueryError::Syntax(format!("invalid command-line argument for server process: {a}"));
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (setting, dashed) = if a == "-c" {
            (it.next().ok_or_else(|| bad(a))?.as_str(), false)
        } else if let Some(rest) = a.strip_prefix("--") {
            (rest, true)
        } else if let Some(rest) = a.strip_prefix("-c") {
            (rest, false)
        } else {
            return Err(bad(a));
        };
        let Some((name, value)) = setting.split_once('=') else {
            return Err(QueryError::Syntax(format!("-c {setting} requires a value")));
        };
        // PostgreSQL reads dashes in a `--name` as underscores.
        let name = if dashed { name.replace('-', "_") } else { name.to_string() };
        out.push((name, value.to_string()));
    }
    Ok(out)
}

/// The settings a startup message asks for, checked: its parameters, and `-c name=value` or
/// `--name=value` in its `options` (libpq's PGOPTIONS), as PostgreSQL takes them. Who connects is not a
/// setting, and `client_encoding` and `DateStyle` are reported at startup as the fixed values the server
/// speaks (UTF8, ISO), so they are not taken either.
pub fn startup_settings<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (name, value) in params {
        let pairs = match name.to_lowercase().as_str() {
            "user" | "database" | "replication" | "client_encoding" | "datestyle" => continue,
            "options" => parse_startup_options(value)?,
            other => vec![(other.to_string(), value.to_string())],
        };
        for (k, v) in pairs {
            refuse_fixed(&k.to_lowercase())?;
            out.push(check_setting(&k, &v)?);
        }
    }
    Ok(out)
}

/// Checks a setting's new value; returns the name and the value as `SHOW` gives them back.
pub fn check_setting(name: &str, value: &str) -> Result<(String, String)> {
    let key = name.to_lowercase();
    if !is_known_setting(&key) {
        return Err(QueryError::UndefinedParameter(key));
    }
    let invalid = || QueryError::InvalidParameterValue(format!("invalid value for parameter \"{key}\": \"{value}\""));
    let value = match key.as_str() {
        // Tabula sends and reads UTF8 only: another encoding would be announced to the client and then not
        // spoken.
        "client_encoding" => match encoding_name(value).as_str() {
            "utf8" | "unicode" => "UTF8".to_string(),
            e if POSTGRES_ENCODINGS.contains(&e) => {
                return Err(QueryError::NotSupported(format!("client_encoding \"{value}\": Tabula speaks only UTF8 to clients")))
            }
            _ => return Err(invalid()),
        },
        // The zone timestamptz values are read and shown in (`crate::types::Zone`), shown as PostgreSQL
        // shows it. The server's own zone, which LOCAL and DEFAULT name, is UTC.
        "timezone" => match value.to_lowercase().as_str() {
            "local" | "default" => "UTC".to_string(),
            _ => match Zone::setting(value) {
                ZoneSetting::Zone(_, shown) => shown,
                ZoneSetting::Unsupported => {
                    return Err(QueryError::NotSupported(format!(
                        "time zone \"{value}\": a POSIX time zone with daylight-saving rules; use a zone of the IANA database (America/New_York)"
                    )))
                }
                ZoneSetting::Invalid => {
                    return Err(QueryError::InvalidParameterValue(format!("invalid value for parameter \"TimeZone\": \"{value}\"")))
                }
            },
        },
        // There are no standbys, so every durable level means the local log is synced.
        "synchronous_commit" => match value.to_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => "on".to_string(),
            "off" | "false" | "no" | "0" => "off".to_string(),
            v @ ("local" | "remote_write" | "remote_apply") => v.to_string(),
            _ => return Err(invalid()),
        },
        // PostgreSQL's own settings are checked as PostgreSQL checks them: a type, a range, a unit.
        k => match postgres_settings().get(k) {
            Some(setting) => setting.check(k, value).map_err(QueryError::InvalidParameterValue)?,
            None => value.to_string(),
        },
    };
    Ok((key, value))
}

pub(crate) const SHOW_ALL_COLUMNS: [&str; 3] = ["name", "setting", "description"];

/// What `SHOW ALL` says a setting does in Tabula.
pub(crate) fn setting_description(key: &str) -> &'static str {
    match key {
        "statement_timeout" => "Cancels any statement that runs longer than this (0: no limit).",
        "synchronous_commit" => "Whether a commit returns only once its log is synced to disk.",
        "client_encoding" => "The client's encoding: UTF8, the only one Tabula speaks.",
        k if SERVER_SETTINGS.contains(&k) => "Set when the server starts (see tabula --help).",
        k if FIXED_SETTINGS.contains(&k) => "Fixed by the server.",
        k if k.contains('.') => "A custom setting of this session.",
        _ => "Accepted and shown as PostgreSQL does; Tabula does not act on it.",
    }
}

/// An encoding's name as PostgreSQL compares it: lower case, only letters and digits (`UTF-8` is `utf8`).
pub(crate) fn encoding_name(name: &str) -> String {
    name.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// PostgreSQL's client encodings other than UTF8, named as [`encoding_name`] gives them.
const POSTGRES_ENCODINGS: &[&str] = &[
    "sqlascii",
    "eucjp",
    "euccn",
    "euckr",
    "euctw",
    "eucjis2004",
    "muleinternal",
    "latin1",
    "latin2",
    "latin3",
    "latin4",
    "latin5",
    "latin6",
    "latin7",
    "latin8",
    "latin9",
    "latin10",
    "win1256",
    "win1258",
    "win866",
    "win874",
    "koi8r",
    "win1251",
    "win1252",
    "iso88595",
    "iso88596",
    "iso88597",
    "iso88598",
    "win1250",
    "win1253",
    "win1254",
    "win1255",
    "win1257",
    "koi8u",
    "sjis",
    "big5",
    "gbk",
    "uhc",
    "gb18030",
    "johab",
    "shiftjis2004",
];

pub(crate) fn parse_duration_ms(v: &str) -> Option<u64> {
    // Every statement reads statement_timeout, nearly always a plain number ("0").
    if let Ok(n) = v.parse::<u64>() {
        return Some(n);
    }
    parse_with_unit(v.trim().trim_matches('\''), "ms").filter(|n| *n >= 0.0).map(|n| n.round() as u64)
}

#[cfg(test)]
mod setting_tests {
    use super::*;

    #[test]
    fn booleans_take_postgres_spellings_and_unique_prefixes() {
        for on in ["on", "ON", "true", "t", "tr", "yes", "y", "1"] {
            assert_eq!(parse_bool(on), Some(true), "{on}");
        }
        for off in ["off", "of", "false", "f", "no", "n", "0"] {
            assert_eq!(parse_bool(off), Some(false), "{off}");
        }
        for bad in ["o", "", "2", "flase", "onn"] {
            assert_eq!(parse_bool(bad), None, "{bad}");
        }
    }

    #[test]
    fn numbers_take_units_of_their_kind_and_show_in_the_largest_whole_unit() {
        assert_eq!(parse_with_unit("64MB", "kB"), Some(65536.0));
        assert_eq!(parse_with_unit("1GB", "8kB"), Some(131072.0));
        assert_eq!(parse_with_unit("2 min", "ms"), Some(120000.0));
        assert_eq!(parse_with_unit("1s", "kB"), None);
        assert_eq!(parse_with_unit("5", ""), Some(5.0));
        assert_eq!(parse_with_unit("5ms", ""), None);
        assert_eq!(parse_with_unit("lots", "kB"), None);
        assert_eq!(show_with_unit(65536.0, "kB"), "64MB");
        assert_eq!(show_with_unit(65537.0, "kB"), "65537kB");
        assert_eq!(show_with_unit(524288.0, "8kB"), "4GB");
        assert_eq!(show_with_unit(90000.0, "ms"), "90s");
        assert_eq!(show_with_unit(0.5, "ms"), "500us");
        assert_eq!(show_with_unit(0.0, "ms"), "0");
        assert_eq!(show_with_unit(-1.0, "kB"), "-1");
        assert_eq!(show_with_unit(100.0, ""), "100");
    }

    #[test]
    fn every_postgres_default_passes_its_own_check_unchanged() {
        // The table and the checks agree: PostgreSQL's defaults, as SHOW gives them, are valid and kept as they are.
        for (name, s) in postgres_settings() {
            assert_eq!(s.check(name, s.default).as_deref(), Ok(s.default), "{name}");
        }
    }
}
