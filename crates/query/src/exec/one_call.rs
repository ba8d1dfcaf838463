//! Auto-commit writes done in one engine call, no read first ([`WriteCall::Upsert`], [`WriteCall::KeyUpdate`]):
//! the planner chose them for the statement's shape; a NULL among the statement's values, which the engine's
//! operations cannot express, sends it down the general path (`Ok(None)`).

use tabula_store::{RowExistence, Store};

use super::*;

/// A one-row `INSERT ... ON CONFLICT (key) DO UPDATE SET c = <EXCLUDED values> | c = c + k`: one engine write
/// that inserts the row or updates the stored one. The rows written (1), or `None`.
pub fn upsert(store: &Store, i: &InsertPlan, ctx: &EvalCtx) -> Result<Option<u64>> {
    let OnConflict::DoUpdate { assignments, .. } = &i.on_conflict else { return Ok(None) };
    let t = &i.table;
    let n = t.columns.len();
    let values = i.rows[0].iter().map(|e| e.eval(&[], ctx)).collect::<Result<Vec<_>>>()?;
    let prepared = prepare_row(t, &i.targets, values)?;
    let Some(pk) = prepared.pk.iter().cloned().collect::<Option<Vec<_>>>() else { return Ok(None) };
    // Assignments read EXCLUDED: the columns after the stored row and its _version.
    let mut combined = vec![Datum::Null; n + 1];
    combined.extend(prepared.row.iter().take(n).cloned());
    let mut ops = Vec::with_capacity(assignments.len());
    for (col, e) in assignments {
        let name = t.columns[*col].name.clone();
        if let Some(k) = increment_of(e, *col) {
            // Adding NULL gives NULL, which the engine's increment cannot.
            let Some(k) = k.eval(&[], ctx)?.cast(SqlType::Int8)?.as_int() else { return Ok(None) };
            ops.push((name, UpdateOp::Add(k)));
            continue;
        }
        let v = t.fit(*col, e.eval(&combined, ctx)?)?;
        ops.push((name, put(t, *col, v, prepared.version)?));
    }
    store.upsert_row(&t.name, &pk, &prepared.cells, &ops)?;
    Ok(Some(1))
}

/// `UPDATE t SET c = const | c = c + k ... WHERE <full key> [AND <column condition>]`: one conditional
/// engine write. The rows updated (0 or 1), or `None`.
pub fn key_update(store: &Store, u: &UpdatePlan, ctx: &EvalCtx) -> Result<Option<u64>> {
    let AccessPath::PointGet { key } = &u.scan.access else { return Ok(None) };
    let t = &u.scan.table;
    let column = match &u.scan.filter {
        None => None,
        Some(f) => match crate::expr::column_condition(t, f, &mut |c, ty| Ok(c.eval(&[], ctx)?.cast(ty)?.to_value()))? {
            Some(c) => Some(c),
            None => return Ok(None),
        },
    };
    let version =
        u.version.as_ref().map(|e| e.eval(&[], ctx)).transpose()?.map(|d| d.cast(SqlType::Int8)).transpose()?.and_then(|d| d.as_int());
    let mut ops = Vec::with_capacity(u.assignments.len());
    for (col, e) in &u.assignments {
        match increment_of(e, *col).filter(|_| version.is_none()) {
            Some(k) => match k.eval(&[], ctx)?.cast(SqlType::Int8)?.as_int() {
                Some(k) => ops.push((t.columns[*col].name.clone(), UpdateOp::Add(k))),
                None => return Ok(None),
            },
            None => ops.push((t.columns[*col].name.clone(), put(t, *col, t.fit(*col, e.eval(&[], ctx)?)?, version)?)),
        }
    }
    let Some(pk) = super::key(t, key, ctx)? else { return Ok(Some(0)) };
    let cond = Condition { row: RowExistence::ExpectExist, column };
    match store.update_row(&t.name, &pk, &ops, &cond) {
        Ok(_) => Ok(Some(1)),
        Err(StoreError::RowNotFound | StoreError::ConditionFailed(_)) => Ok(Some(0)),
        Err(e) => Err(e.into()),
    }
}

/// The engine operation that stores `v` in column `col`: a put, or a delete of every version for NULL.
fn put(t: &TableSchema, col: usize, v: Datum, version: Option<i64>) -> Result<UpdateOp> {
    if v.is_null() && t.columns[col].not_null {
        return Err(QueryError::NotNull { table: t.name.clone(), column: t.columns[col].name.clone() });
    }
    Ok(match v.to_value() {
        Some(value) => UpdateOp::Put { value, version },
        None => UpdateOp::DeleteAll,
    })
}
