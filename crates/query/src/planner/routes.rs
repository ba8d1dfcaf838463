//! How a planned statement runs, decided here and printed by EXPLAIN: whether a SELECT's rows stream, and
//! how an auto-commit write reaches the engine ([`WriteCall`]). Which engine runs a statement at all (the
//! key-value executor or DataFusion) is decided where the statement is prepared, from what this planner
//! refused (`session::Route`).

use super::*;
use crate::expr::{fits_column_condition, increment_of};

/// Whether a read's rows can stream ([`SelectPlan::stream`]): a range or full scan of latest values whose
/// order is the output's. Point and batch gets return at most a few rows; a sort needs every row first;
/// history reads turn one engine row into several.
pub fn streams(scan: Option<&Scan>, sort: &[(Expr, bool)]) -> bool {
    scan.is_some_and(|s| {
        sort.is_empty() && s.versions == Versions::Latest && matches!(s.access, AccessPath::RangeScan { .. } | AccessPath::FullScan { .. })
    })
}

/// How an auto-commit INSERT of `i.rows` reaches the engine. `rows_known`: the rows are the statement's
/// own (VALUES), not a query's yet to run.
pub fn insert_call(i: &InsertPlan, rows_known: bool) -> WriteCall {
    let one_row = rows_known && i.rows.len() == 1;
    match &i.on_conflict {
        // A view's CHECK OPTION is checked after the row is written: in a transaction, undone on a failure.
        _ if i.checks.iter().any(|c| c.of_view) => WriteCall::ReadModifyWrite,
        // An upsert's update must see the row to check it.
        OnConflict::DoUpdate { .. } if !i.checks.is_empty() => WriteCall::ReadModifyWrite,
        OnConflict::Error => WriteCall::Single,
        OnConflict::DoNothing { .. } if one_row => WriteCall::Single,
        OnConflict::DoNothing { .. } => WriteCall::ReadModifyWrite,
        // The engine's upsert arbitrates by the key alone.
        OnConflict::DoUpdate { arbiters: Arbiters { key: true, indexes }, assignments, filter: None, version: None }
            if one_row && i.returning.is_none() && indexes.is_empty() && !assignments.iter().any(|(c, _)| i.table.is_pk(*c)) =>
        {
            let n = i.table.columns.len();
            // The key must be given (a generated one needs the general path), and no value may be written at a
            // version of its own, which the engine's increment does not take.
            let key_given = i.table.pk.iter().all(|c| i.targets.contains(c));
            let versioned = i.targets.contains(&n);
            // Each assignment adds a constant to itself or reads EXCLUDED only (columns after the stored row
            // and its _version).
            let one_call = assignments.iter().all(|(col, e)| {
                if increment_of(e, *col).is_some() {
                    return !versioned;
                }
                let mut reads = Vec::new();
                e.columns(&mut reads);
                reads.iter().all(|&c| c > n)
            });
            if key_given && one_call {
                WriteCall::Upsert
            } else {
                WriteCall::ReadModifyWrite
            }
        }
        OnConflict::DoUpdate { .. } => WriteCall::ReadModifyWrite,
    }
}

/// How an auto-commit UPDATE reaches the engine: not in one blind call when CHECK constraints need to
/// see the row as it will be.
pub fn update_call(u: &UpdatePlan) -> WriteCall {
    if !u.checks.is_empty() {
        return WriteCall::ReadModifyWrite;
    }
    let t = &u.scan.table;
    let by_key = matches!(u.scan.access, AccessPath::PointGet { .. }) && u.scan.versions == Versions::Latest;
    let condition = u.scan.filter.as_ref().is_none_or(|f| fits_column_condition(t, f));
    let assignments = u.assignments.iter().all(|(col, e)| (u.version.is_none() && increment_of(e, *col).is_some()) || e.is_constant());
    if by_key && u.returning.is_none() && condition && assignments {
        WriteCall::KeyUpdate
    } else {
        WriteCall::ReadModifyWrite
    }
}
