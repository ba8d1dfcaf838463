//! A sequence made by `CREATE SEQUENCE`: its options, checked as PostgreSQL checks them, and how its values
//! come from the engine's counter.
//!
//! The engine's counter of a table whose partition key is a generated column (`Store::sequence_next`)
//! hands out 1, 2, 3, ... from blocks this server reserved: unique, increasing, never rolled back. A
//! sequence is such a table with no rows, whose metadata line `!sequence` holds the options below; the
//! counter's `n`th value is the sequence's value `phase + n * increment`. The phase is chosen so that every
//! value between MINVALUE and MAXVALUE on the sequence's grid has an `n` of at least 1:
//!
//! ```text
//!   INCREMENT 3, MINVALUE 1, START 5:   phase = -1     n:  1  2  3  4 ...
//!                                                      v:  2  5  8 11 ...   (drawn from n = 2 on)
//! ```
//!
//! `setval` to a value on the grid restarts the counter; off the grid (`setval(s, 6)` above), the phase
//! moves first. A `CYCLE` sequence's counter goes on past MAXVALUE, and its values start again from
//! MINVALUE (from MAXVALUE down, for a negative increment), on MINVALUE's grid, as PostgreSQL's:
//!
//! ```text
//!   INCREMENT 3, MINVALUE 1, MAXVALUE 10, START 5, CYCLE:   n:  2  3 | 4  5  6  7 | 8 ...
//!                                                           v:  5  8 | 1  4  7 10 | 1 ...
//! ```
//! Transactional DDL comes with the table: a sequence created, altered or dropped in a
//! transaction that rolls back is as it was.

use crate::error::{QueryError, Result};
use crate::types::SqlType;

/// The name of the sequence table's one column, its partition key, which no row ever fills.
pub const COUNTER_COLUMN: &str = "value";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceDef {
    /// smallint, integer or bigint (`AS type`).
    pub ty: SqlType,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    /// Kept and shown as given; every server reserves blocks of values anyway (`engine/sequence.rs`).
    pub cache: i64,
    pub phase: i64,
    /// `OWNED BY table.column`: dropped with the table.
    pub owned_by: Option<(String, String)>,
    /// `CYCLE`: past its end the sequence starts again at the other.
    pub cycle: bool,
}

/// The options a CREATE or ALTER SEQUENCE gave (`None`: not given; `Some(None)`: `NO MINVALUE`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SequenceOptions {
    pub ty: Option<SqlType>,
    pub increment: Option<i64>,
    pub min: Option<Option<i64>>,
    pub max: Option<Option<i64>>,
    pub start: Option<i64>,
    pub cache: Option<i64>,
    /// `CYCLE` or `NO CYCLE`.
    pub cycle: Option<bool>,
    /// `OWNED BY t.c`, or `OWNED BY NONE`.
    pub owned_by: Option<Option<(String, String)>>,
    /// ALTER's `RESTART` (`Some(None)`: at the start value).
    pub restart: Option<Option<i64>>,
}

fn invalid(message: String) -> QueryError {
    QueryError::Engine { sqlstate: "22023", message }
}

fn type_range(ty: SqlType) -> (i64, i64) {
    match ty {
        SqlType::Int2 => (i16::MIN as i64, i16::MAX as i64),
        SqlType::Int4 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

impl SequenceDef {
    /// The definition CREATE SEQUENCE makes of `o`, or ALTER SEQUENCE makes of `self` and `o`: PostgreSQL's
    /// defaults and checks (22023), in its order.
    pub fn define(old: Option<&SequenceDef>, o: &SequenceOptions) -> Result<SequenceDef> {
        let ty = o.ty.or(old.map(|d| d.ty)).unwrap_or(SqlType::Int8);
        if !matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
            return Err(invalid("sequence type must be smallint, integer, or bigint".into()));
        }
        let increment = o.increment.or(old.map(|d| d.increment)).unwrap_or(1);
        if increment == 0 {
            return Err(invalid("INCREMENT must not be zero".into()));
        }
        if let Some(d) = old.filter(|d| d.increment != increment) {
            return Err(QueryError::NotSupported(format!(
                "ALTER SEQUENCE ... INCREMENT of a sequence made with INCREMENT {}",
                d.increment
            )));
        }
        let (type_min, type_max) = type_range(ty);
        // A bound not given keeps its old value, unless the type changed and it was the old type's limit.
        let kept = |given: Option<Option<i64>>, old_value: Option<i64>, old_limit: Option<i64>| match given {
            Some(v) => v,
            None if o.ty.is_some() && old_value == old_limit => None,
            None => old_value,
        };
        let max = kept(o.max, old.map(|d| d.max), old.map(|d| type_range(d.ty).1)).unwrap_or(if increment > 0 { type_max } else { -1 });
        let min = kept(o.min, old.map(|d| d.min), old.map(|d| type_range(d.ty).0)).unwrap_or(if increment > 0 { 1 } else { type_min });
        let name = ty.pg_name();
        if max < type_min || max > type_max {
            return Err(invalid(format!("MAXVALUE ({max}) is out of range for sequence data type {name}")));
        }
        if min < type_min || min > type_max {
            return Err(invalid(format!("MINVALUE ({min}) is out of range for sequence data type {name}")));
        }
        if min >= max {
            return Err(invalid(format!("MINVALUE ({min}) must be less than MAXVALUE ({max})")));
        }
        let start = o.start.or(old.map(|d| d.start)).unwrap_or(if increment > 0 { min } else { max });
        if start < min {
            return Err(invalid(format!("START value ({start}) cannot be less than MINVALUE ({min})")));
        }
        if start > max {
            return Err(invalid(format!("START value ({start}) cannot be greater than MAXVALUE ({max})")));
        }
        let cache = o.cache.or(old.map(|d| d.cache)).unwrap_or(1);
        if cache <= 0 {
            return Err(invalid(format!("CACHE ({cache}) must be greater than zero")));
        }
        let owned_by = match &o.owned_by {
            Some(o) => o.clone(),
            None => old.and_then(|d| d.owned_by.clone()),
        };
        let cycle = o.cycle.or(old.map(|d| d.cycle)).unwrap_or(false);
        let mut d = SequenceDef { ty, start, increment, min, max, cache, phase: 0, owned_by, cycle };
        d.phase = match old {
            Some(old) => old.phase,
            None => d.phase_through(start)?,
        };
        Ok(d)
    }

    /// The phase whose grid holds `v` with every value from MINVALUE (or down from MAXVALUE) at an `n` of
    /// at least 1.
    fn phase_through(&self, v: i64) -> Result<i64> {
        let step = self.increment as i128;
        let first = if step > 0 { self.min } else { self.max } as i128;
        let n = (v as i128 - first).abs() / step.abs() + 1;
        i64::try_from(v as i128 - n * step)
            .map_err(|_| QueryError::NotSupported(format!("a sequence that reaches its type's limit ({} {})", self.min, self.max)))
    }

    /// The sequence's value for the counter's `n`: 2200H past its bounds, as `nextval` reports it (a
    /// CYCLE sequence starts again instead).
    pub fn value(&self, name: &str, n: i64) -> Result<i64> {
        let v = self.cycled(self.phase as i128 + n as i128 * self.increment as i128);
        if v > self.max as i128 {
            return Err(QueryError::Engine {
                sqlstate: "2200H",
                message: format!("nextval: reached maximum value of sequence \"{name}\" ({})", self.max),
            });
        }
        if v < self.min as i128 {
            return Err(QueryError::Engine {
                sqlstate: "2200H",
                message: format!("nextval: reached minimum value of sequence \"{name}\" ({})", self.min),
            });
        }
        Ok(v as i64)
    }

    /// A value of the phase's grid past the end of a CYCLE sequence, as the sequence gives it: counted on
    /// from the other end, on that end's grid. Others, and a value within the bounds, as they are.
    fn cycled(&self, v: i128) -> i128 {
        let (min, max, step) = (self.min as i128, self.max as i128, self.increment as i128);
        if !self.cycle || (min..=max).contains(&v) {
            return v;
        }
        // The values of one cycle, and how far past the last value within the bounds `v` is.
        let per_cycle = (max - min) / step.abs() + 1;
        let (end, restart) = if step > 0 { (max, min) } else { (min, max) };
        let last_in = v - ((v - end) / step + if (v - end) % step == 0 { 0 } else { 1 }) * step;
        let past = (v - last_in) / step;
        if past <= 0 {
            return v;
        }
        restart + ((past - 1) % per_cycle) * step
    }

    /// The value `last_value` shows for the counter's `n`: within the bounds, where a `nextval` that failed
    /// past them left PostgreSQL's (the counter moved on).
    pub fn shown_value(&self, n: i64) -> i64 {
        self.cycled(self.phase as i128 + n as i128 * self.increment as i128).clamp(self.min as i128, self.max as i128) as i64
    }

    /// Where the counter goes on for the next value to be `next` (`setval`, `RESTART`): the counter's
    /// `n` for it, and the new phase when `next` is off the grid. `next` must lie within the bounds.
    pub fn restart_at(&self, next: i64) -> Result<(i64, Option<i64>)> {
        let off = (next as i128 - self.phase as i128) % self.increment as i128;
        let phase = if off == 0 { self.phase } else { self.phase_through(next)? };
        let n = (next as i128 - phase as i128) / self.increment as i128;
        Ok((n as i64, (off != 0).then_some(phase)))
    }

    /// The metadata line: `!sequence` and the fields, tab-separated.
    pub fn encode(&self) -> String {
        let (t, c) = self.owned_by.clone().unwrap_or_default();
        format!(
            "!sequence\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{t}\t{c}\t{}\n",
            self.ty.pg_name(),
            self.start,
            self.increment,
            self.min,
            self.max,
            self.cache,
            self.phase,
            if self.cycle { "cycle" } else { "" }
        )
    }

    /// The inverse of [`SequenceDef::encode`], from the fields after `!sequence` (a line written before
    /// CYCLE was kept has no tenth field).
    pub fn decode(f: &[&str]) -> Option<SequenceDef> {
        let (fields, cycle) = match f {
            [head @ .., c] if f.len() == 10 => (head, *c == "cycle"),
            _ => (f, false),
        };
        let [ty, start, increment, min, max, cache, phase, table, column] = fields else { return None };
        let n = |s: &str| s.parse::<i64>().ok();
        Some(SequenceDef {
            ty: SqlType::parse(ty)?,
            start: n(start)?,
            increment: n(increment)?,
            min: n(min)?,
            max: n(max)?,
            cache: n(cache)?,
            phase: n(phase)?,
            owned_by: (!table.is_empty()).then(|| (table.to_string(), column.to_string())),
            cycle,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(o: SequenceOptions) -> SequenceDef {
        SequenceDef::define(None, &o).unwrap()
    }

    #[test]
    fn values_follow_the_grid_from_start() {
        let d = def(SequenceOptions { increment: Some(3), start: Some(5), ..Default::default() });
        let (n, phase) = d.restart_at(5).unwrap();
        assert_eq!(phase, None);
        assert_eq!((d.value("s", n).unwrap(), d.value("s", n + 1).unwrap()), (5, 8));
        // Off the grid: a new phase, whose first value is the one asked for.
        let (n, phase) = d.restart_at(6).unwrap();
        let moved = SequenceDef { phase: phase.unwrap(), ..d.clone() };
        assert_eq!((moved.value("s", n).unwrap(), moved.value("s", n + 1).unwrap()), (6, 9));
        assert!(n >= 1);
        // MINVALUE itself has an n of at least 1 on the new grid.
        let (n, _) = moved.restart_at(3).unwrap();
        assert!(n >= 1, "{n}");
    }

    #[test]
    fn descending_sequences_count_down_from_minus_one() {
        let d = def(SequenceOptions { increment: Some(-1), ..Default::default() });
        assert_eq!((d.start, d.max, d.min), (-1, -1, i64::MIN));
        let (n, _) = d.restart_at(d.start).unwrap();
        assert_eq!((d.value("s", n).unwrap(), d.value("s", n + 1).unwrap()), (-1, -2));
        let e = d.value("s", 0).unwrap_err();
        assert!(e.to_string().contains("maximum"), "{e}");
    }

    #[test]
    fn a_cycle_starts_again_at_the_other_end_on_its_grid() {
        let d = def(SequenceOptions {
            increment: Some(3),
            min: Some(Some(1)),
            max: Some(Some(10)),
            start: Some(5),
            cycle: Some(true),
            ..Default::default()
        });
        let (n, _) = d.restart_at(5).unwrap();
        let values: Vec<i64> = (n..n + 8).map(|n| d.value("s", n).unwrap()).collect();
        assert_eq!(values, vec![5, 8, 1, 4, 7, 10, 1, 4]);
        let down = def(SequenceOptions {
            increment: Some(-2),
            min: Some(Some(-5)),
            max: Some(Some(0)),
            start: Some(-1),
            cycle: Some(true),
            ..Default::default()
        });
        let (n, _) = down.restart_at(-1).unwrap();
        let values: Vec<i64> = (n..n + 7).map(|n| down.value("s", n).unwrap()).collect();
        assert_eq!(values, vec![-1, -3, -5, 0, -2, -4, 0]);
        // Written before CYCLE was kept: nine fields.
        let old = "bigint\t1\t1\t1\t9\t1\t0\t\t";
        assert_eq!(SequenceDef::decode(&old.split('\t').collect::<Vec<_>>()).map(|d| d.cycle), Some(false));
    }

    #[test]
    fn options_are_checked_as_postgresql_checks_them() {
        let err = |o: SequenceOptions| SequenceDef::define(None, &o).unwrap_err().to_string();
        assert_eq!(err(SequenceOptions { increment: Some(0), ..Default::default() }), "INCREMENT must not be zero");
        assert_eq!(
            err(SequenceOptions { ty: Some(SqlType::Int2), max: Some(Some(40000)), ..Default::default() }),
            "MAXVALUE (40000) is out of range for sequence data type smallint"
        );
        assert_eq!(err(SequenceOptions { start: Some(0), ..Default::default() }), "START value (0) cannot be less than MINVALUE (1)");
        let round = def(SequenceOptions { ty: Some(SqlType::Int4), owned_by: Some(Some(("t".into(), "id".into()))), ..Default::default() });
        let line = round.encode();
        let fields: Vec<&str> = line.trim_end().split('\t').collect();
        assert_eq!(SequenceDef::decode(&fields[1..]), Some(round));
    }
}
