//! Table options, each in one place: its name, how its value is read from SQL and checked, its default,
//! whether it may change once the table exists, and how the catalog shows it. `CREATE TABLE ... WITH
//! (...)`, `ALTER TABLE ... SET (...)` and `RESET (...)`, `pg_class.reloptions` and `tabula.tables` all go
//! through [`OPTIONS`]; adding an option is one entry there (and its field in the store's `TableOptions`).
//!
//! The options are those of the wide-column model: how long a cell lives (`ttl`), how many versions of a
//! cell are kept (`max_versions`), how far from now a written version may be (`max_version_offset`), and
//! how many hash buckets spread sequential keys (`hash_prefix`, chosen at creation because it is part of
//! every stored key).

use sqlparser::ast;
use tabula_store::TableOptions;

use crate::error::{QueryError, Result};
use crate::types::SqlType;

/// One table option.
pub struct TableOption {
    pub name: &'static str,
    /// Its column's type in `tabula.tables`.
    pub ty: SqlType,
    /// Fixed when the table is created: ALTER TABLE may neither set nor reset it.
    pub fixed: bool,
    /// Reads a value written in SQL, checked; the error says what is allowed.
    parse: fn(&str) -> std::result::Result<i64, String>,
    get: fn(&TableOptions) -> i64,
    put: fn(&mut TableOptions, i64),
}

/// Every table option, in the order the catalog shows them.
pub const OPTIONS: &[TableOption] = &[
    TableOption {
        name: "ttl",
        ty: SqlType::Int8,
        fixed: false,
        parse: |t| {
            let v = seconds(t).ok_or_else(|| {
                format!("invalid value for option \"ttl\": \"{t}\" (seconds, -1 for forever, or an interval such as '1 day')")
            })?;
            if v < -1 || v == 0 {
                return Err(format!("ttl must be -1 (forever) or a positive number of seconds, got {v}"));
            }
            Ok(v)
        },
        get: |o| o.ttl,
        put: |o, v| o.ttl = v,
    },
    TableOption {
        name: "max_versions",
        ty: SqlType::Int8,
        fixed: false,
        parse: |t| {
            let v = integer("max_versions", t)?;
            if v < 1 || v > u32::MAX as i64 {
                return Err(format!("max_versions must be at least 1, got {v}"));
            }
            Ok(v)
        },
        get: |o| o.max_versions as i64,
        put: |o, v| o.max_versions = v as u32,
    },
    TableOption {
        name: "max_version_offset",
        ty: SqlType::Int8,
        fixed: false,
        parse: |t| {
            let v = seconds(t).ok_or_else(|| format!("invalid value for option \"max_version_offset\": \"{t}\""))?;
            if v < 1 {
                return Err(format!("max_version_offset must be a positive number of seconds, got {v}"));
            }
            Ok(v)
        },
        get: |o| o.max_version_offset,
        put: |o, v| o.max_version_offset = v,
    },
    TableOption {
        name: "hash_prefix",
        ty: SqlType::Int4,
        fixed: true,
        parse: |t| {
            let v = integer("hash_prefix", t)?;
            if v != 0 && !(2..=256).contains(&v) {
                return Err(format!("hash_prefix must be between 2 and 256 buckets, got {v}"));
            }
            Ok(v)
        },
        get: |o| o.hash_prefix as i64,
        put: |o, v| o.hash_prefix = v as u16,
    },
];

impl TableOption {
    /// The option's value in `o`.
    pub fn value(&self, o: &TableOptions) -> i64 {
        (self.get)(o)
    }
}

fn find(key: &str) -> Result<&'static TableOption> {
    OPTIONS.iter().find(|d| d.name == key).ok_or_else(|| {
        let names: Vec<&str> = OPTIONS.iter().map(|d| d.name).collect();
        QueryError::InvalidParameterValue(format!("unrecognized table option \"{key}\" (expected {})", names.join(", ")))
    })
}

fn fixed(d: &TableOption) -> QueryError {
    QueryError::InvalidParameterValue(format!("{} is fixed when the table is created", d.name))
}

/// PostgreSQL's `fillfactor`: how full a heap page is packed, leaving room for updates on the same page.
/// Tabula's storage is a log-structured merge tree, with no pages to leave room in, so the option changes
/// nothing; it is checked as PostgreSQL checks it and accepted, as `pgbench -i` and dumped schemas set it.
const FILLFACTOR: &str = "fillfactor";

/// Sets option `key` from its SQL text (22023 on a bad name or value, or on a fixed option when the table
/// is not being created).
pub fn set(o: &mut TableOptions, key: &str, text: &str, creating: bool) -> Result<()> {
    if key == FILLFACTOR {
        return match text.trim().parse::<i64>() {
            Ok(10..=100) => Ok(()),
            Ok(v) => Err(QueryError::InvalidParameterValue(format!(
                "value {v} out of bounds for option \"fillfactor\": valid values are between \"10\" and \"100\""
            ))),
            Err(_) => Err(QueryError::InvalidParameterValue(format!("invalid value for integer option \"fillfactor\": {text}"))),
        };
    }
    let d = find(key)?;
    if d.fixed && !creating {
        return Err(fixed(d));
    }
    let v = (d.parse)(text).map_err(QueryError::InvalidParameterValue)?;
    (d.put)(o, v);
    Ok(())
}

/// Puts option `key` back to its default (`ALTER TABLE ... RESET`).
pub fn reset(o: &mut TableOptions, key: &str) -> Result<()> {
    if key == FILLFACTOR {
        return Ok(());
    }
    let d = find(key)?;
    if d.fixed {
        return Err(fixed(d));
    }
    (d.put)(o, (d.get)(&TableOptions::default()));
    Ok(())
}

/// `name=value` of each option set to other than its default, as `pg_class.reloptions` lists them.
pub fn reloptions(o: &TableOptions) -> Vec<String> {
    let defaults = TableOptions::default();
    OPTIONS.iter().filter(|d| (d.get)(o) != (d.get)(&defaults)).map(|d| format!("{}={}", d.name, (d.get)(o))).collect()
}

/// An option's value as written in SQL: `7`, `'1 day'`, `-1`.
pub fn text_of(v: &ast::Expr) -> String {
    match v {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => format!("-{}", text_of(expr)),
        other => other.to_string(),
    }
}

fn integer(name: &str, t: &str) -> std::result::Result<i64, String> {
    t.trim().parse::<i64>().map_err(|_| format!("invalid value for option \"{name}\": \"{t}\""))
}

/// Seconds: a number, or an interval text such as `1 day`, `12 hours`, `1 day 2 hours`, `30 min`.
fn seconds(text: &str) -> Option<i64> {
    if let Ok(v) = text.trim().parse::<i64>() {
        return Some(v);
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || !words.len().is_multiple_of(2) {
        return None;
    }
    let mut total = 0i64;
    for pair in words.chunks(2) {
        let n: i64 = pair[0].parse().ok()?;
        let unit = pair[1].to_ascii_lowercase();
        let secs = match unit.trim_end_matches('s') {
            "second" | "sec" | "" => 1,
            "minute" | "min" => 60,
            "hour" | "hr" | "h" => 3600,
            "day" | "d" => 86400,
            "week" | "w" => 604800,
            "month" | "mon" => 2592000,
            "year" | "yr" | "y" => 31557600,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(secs)?)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_reads_back_what_it_shows_and_resets_to_its_default() {
        let defaults = TableOptions::default();
        for d in OPTIONS {
            let mut o = TableOptions::default();
            let v = d.value(&defaults);
            if v != 0 || !d.fixed {
                set(&mut o, d.name, &v.to_string(), true).unwrap_or_else(|e| panic!("{}: {e}", d.name));
                assert_eq!(d.value(&o), v, "{}", d.name);
            }
            if !d.fixed {
                set(&mut o, d.name, "7", false).unwrap();
                assert_eq!(d.value(&o), 7, "{}", d.name);
                reset(&mut o, d.name).unwrap();
                assert_eq!(d.value(&o), v, "{}", d.name);
            } else {
                assert!(set(&mut o, d.name, "4", false).is_err(), "{} is fixed", d.name);
                assert!(reset(&mut o, d.name).is_err(), "{} is fixed", d.name);
            }
        }
    }

    #[test]
    fn values_are_checked_and_intervals_read_as_seconds() {
        let mut o = TableOptions::default();
        set(&mut o, "ttl", "1 day 2 hours", false).unwrap();
        assert_eq!(o.ttl, 93600);
        assert!(set(&mut o, "ttl", "0", false).is_err());
        assert!(set(&mut o, "max_versions", "0", false).is_err());
        assert!(set(&mut o, "hash_prefix", "1", true).is_err());
        let e = set(&mut o, "nope", "1", false).unwrap_err().to_string();
        assert!(e.contains("ttl, max_versions, max_version_offset, hash_prefix"), "{e}");
        // As PostgreSQL's reloptions: only the options set to other than their defaults.
        assert!(reloptions(&TableOptions::default()).is_empty());
        assert_eq!(reloptions(&o), vec!["ttl=93600".to_string()]);
    }
}
