//! The access path of a table read, from the WHERE clause's conjuncts: point get, batch get, range scan,
//! index scan or full scan ([`choose_access`]), the scan's direction for an ORDER BY on the key, and the
//! columns a read needs.
//!
//! With no statistics kept, the choice follows one rule, which EXPLAIN shows whenever more than one path
//! was weighed (`Path ranks: by_card 2, key 1`):
//! 1. A whole primary key (PointGet), or a batch of whole keys (BatchGet, from IN lists or ORs of keys),
//!    is taken at once: one lookup per key, nothing read in vain.
//! 2. Otherwise each path that narrows the read ranks [`rank`]: 2 for each leading column it fixes by
//!    equality (or IN lists), and 1 for a range on the column after them. An equality narrows a read to
//!    one value where a range keeps an interval, so a column fixed counts twice a range, and a longer
//!    prefix narrows more than a shorter one. The primary key's range scan ranks so too.
//! 3. The highest rank is taken; on a tie the key's path beats an index's, since each row an index names
//!    costs a second lookup, of the row itself; between indexes, the one defined first.
//! 4. A full scan when no path ranks above 0.

use super::*;

/// A path's rank under the rule above: 2 per leading column fixed by equality, 1 for a range after them.
pub(super) fn rank(fixed: usize, range: bool) -> usize {
    2 * fixed + range as usize
}

/// At most this many keys in one batch get built from IN lists.
pub(super) const MAX_BATCH_KEYS: usize = 1000;

/// Attribute columns a read needs; `None` when it needs all of them.
pub(crate) fn needed_columns(t: &TableSchema, projection: &[Expr], filter: Option<&Expr>, sort: &[(Expr, bool)]) -> Option<Vec<usize>> {
    let mut cols = Vec::new();
    projection.iter().for_each(|e| e.columns(&mut cols));
    if let Some(f) = filter {
        f.columns(&mut cols);
    }
    sort.iter().for_each(|(e, _)| e.columns(&mut cols));
    if cols.contains(&t.columns.len()) {
        return None; // _version reads every cell's version
    }
    cols.retain(|c| !t.is_pk(*c));
    cols.sort();
    cols.dedup();
    if cols.len() == t.attributes().count() {
        None
    } else {
        Some(cols)
    }
}

/// `col = constant` (either side) for the given column: the constant.
pub(super) fn eq_column_const(e: &Expr, col: usize) -> Option<Expr> {
    if let Expr::Binary { op: BinOp::Eq, left, right } = e {
        match (left.as_ref(), right.as_ref()) {
            (Expr::Column { index, .. }, c) | (c, Expr::Column { index, .. }) if *index == col && c.is_constant() => {
                return Some(c.clone())
            }
            _ => {}
        }
    }
    None
}

/// Whether a constant can be a key value of a column of type `ty` without changing meaning.
pub(super) fn key_compatible(c: &Expr, ty: SqlType) -> bool {
    let ct = c.ty();
    match ty.pk_type() {
        Some(tabula_store::PkType::Integer) => ct.is_integer(),
        Some(tabula_store::PkType::String) => ct.is_text(),
        Some(tabula_store::PkType::Binary) => ct == SqlType::Bytea,
        None => false,
    }
}

pub(super) fn key_eq(t: &TableSchema, e: &Expr, pos: usize) -> Option<Expr> {
    let col = t.pk[pos];
    eq_column_const(e, col).filter(|c| key_compatible(c, t.column_type(col)))
}

/// `col IN (constants)` for the key column at `pos`: the constants.
pub(super) fn key_in(t: &TableSchema, e: &Expr, pos: usize) -> Option<Vec<Expr>> {
    let col = t.pk[pos];
    if let Expr::InList { expr, list, negated: false } = e {
        if matches!(expr.as_ref(), Expr::Column { index, .. } if *index == col)
            && list.iter().all(|c| c.is_constant() && key_compatible(c, t.column_type(col)))
        {
            return Some(list.clone());
        }
    }
    None
}

/// Lower (`true`) or upper bound from `col op constant` on the key column at `pos`: (is_lower, inclusive, value).
pub(super) fn key_range(t: &TableSchema, e: &Expr, pos: usize) -> Vec<(bool, bool, Expr)> {
    let col = t.pk[pos];
    let ty = t.column_type(col);
    match e {
        Expr::Binary { op, left, right } if op.is_comparison() && *op != BinOp::Eq && *op != BinOp::NotEq => {
            let (op, c) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column { index, .. }, c) if *index == col => (*op, c),
                (c, Expr::Column { index, .. }) if *index == col => (op.flip(), c),
                _ => return vec![],
            };
            if !c.is_constant() || !key_compatible(c, ty) {
                return vec![];
            }
            match op {
                BinOp::Gt => vec![(true, false, c.clone())],
                BinOp::GtEq => vec![(true, true, c.clone())],
                BinOp::Lt => vec![(false, false, c.clone())],
                BinOp::LtEq => vec![(false, true, c.clone())],
                _ => vec![],
            }
        }
        Expr::Between { expr, low, high, negated: false } if matches!(expr.as_ref(), Expr::Column { index, .. } if *index == col) => {
            if low.is_constant() && high.is_constant() && key_compatible(low, ty) && key_compatible(high, ty) {
                vec![(true, true, (**low).clone()), (false, true, (**high).clone())]
            } else {
                vec![]
            }
        }
        _ => vec![],
    }
}

/// Recognises an expanded keyset comparison `(c_k, .., c_m) op (v_k, .., v_m)` over key columns
/// starting at `pos`: (is_lower, inclusive, values).
pub(super) fn keyset(t: &TableSchema, e: &Expr, pos: usize) -> Option<(bool, bool, Vec<Expr>)> {
    // Last column: a plain comparison.
    let single = key_range(t, e, pos);
    if let [(lower, incl, v)] = single.as_slice() {
        return Some((*lower, *incl, vec![v.clone()]));
    }
    // c op v  OR  (c = v AND rest)
    if let Expr::Binary { op: BinOp::Or, left, right } = e {
        let first = key_range(t, left, pos);
        let [(lower, false, v)] = first.as_slice() else { return None };
        if let Expr::Binary { op: BinOp::And, left: eq, right: rest } = right.as_ref() {
            let v2 = key_eq(t, eq, pos)?;
            if v2 != *v || pos + 1 >= t.pk.len() {
                return None;
            }
            let (l2, incl, mut vs) = keyset(t, rest, pos + 1)?;
            if l2 != *lower {
                return None;
            }
            vs.insert(0, v.clone());
            return Some((*lower, incl, vs));
        }
    }
    None
}

/// An OR of AND-ed full-key equalities: the keys.
pub(super) fn or_of_keys(t: &TableSchema, e: &Expr) -> Option<Vec<Vec<Expr>>> {
    fn disjuncts(e: &Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::Binary { op: BinOp::Or, left, right } => {
                disjuncts(left, out);
                disjuncts(right, out);
            }
            e => out.push(e.clone()),
        }
    }
    let mut ds = Vec::new();
    disjuncts(e, &mut ds);
    if ds.len() < 2 {
        return None;
    }
    ds.into_iter()
        .map(|d| {
            let parts = d.conjuncts();
            if parts.len() != t.pk.len() {
                return None;
            }
            (0..t.pk.len()).map(|pos| parts.iter().find_map(|p| key_eq(t, p, pos))).collect::<Option<Vec<_>>>()
        })
        .collect()
}

/// Chooses the access path for a conjunctive WHERE clause; returns it and what it does not capture.
pub fn choose_access(t: &TableSchema, conjuncts: Vec<Expr>) -> (AccessPath, Vec<Expr>) {
    let (access, residual, _) = choose_ranked(t, conjuncts);
    (access, residual)
}

/// [`choose_access`], and the paths it weighed with their ranks, best (the one taken) first; empty when
/// there was no choice.
pub fn choose_ranked(t: &TableSchema, conjuncts: Vec<Expr>) -> (AccessPath, Vec<Expr>, Vec<PathRank>) {
    let n = t.pk.len();
    // Equalities per key column.
    let mut used = vec![false; conjuncts.len()];
    let mut eqs: Vec<Option<Expr>> = vec![None; n];
    for (pos, slot) in eqs.iter_mut().enumerate() {
        for (i, c) in conjuncts.iter().enumerate() {
            if !used[i] {
                if let Some(v) = key_eq(t, c, pos) {
                    *slot = Some(v);
                    used[i] = true;
                    break;
                }
            }
        }
    }
    let residual = |used: &[bool]| conjuncts.iter().zip(used).filter(|(_, u)| !**u).map(|(c, _)| c.clone()).collect::<Vec<_>>();
    if eqs.iter().all(|e| e.is_some()) {
        return (AccessPath::PointGet { key: eqs.into_iter().map(|e| e.unwrap()).collect() }, residual(&used), vec![]);
    }
    // IN lists (with equalities) on every key column: the cross product of keys.
    {
        let mut used_in = used.clone();
        let mut lists: Vec<Vec<Expr>> = Vec::new();
        let mut ok = true;
        for (pos, eq) in eqs.iter().enumerate() {
            if let Some(v) = eq {
                lists.push(vec![v.clone()]);
                continue;
            }
            match conjuncts.iter().enumerate().find(|(i, c)| !used_in[*i] && key_in(t, c, pos).is_some()) {
                Some((i, c)) => {
                    used_in[i] = true;
                    lists.push(key_in(t, c, pos).unwrap());
                }
                None => {
                    ok = false;
                    break;
                }
            }
        }
        let count: usize = lists.iter().map(|l| l.len()).product();
        if ok && count <= MAX_BATCH_KEYS {
            let mut keys: Vec<Vec<Expr>> = vec![vec![]];
            for l in &lists {
                keys = keys
                    .into_iter()
                    .flat_map(|k| {
                        l.iter().map(move |v| {
                            let mut k = k.clone();
                            k.push(v.clone());
                            k
                        })
                    })
                    .collect();
            }
            return (AccessPath::BatchGet { keys }, residual(&used_in), vec![]);
        }
    }
    // ORs of full keys.
    for (i, c) in conjuncts.iter().enumerate() {
        if let Some(keys) = or_of_keys(t, c) {
            if keys.len() <= MAX_BATCH_KEYS {
                let mut u = vec![false; conjuncts.len()];
                u[i] = true;
                return (AccessPath::BatchGet { keys }, residual(&u), vec![]);
            }
        }
    }
    // Equality prefix, then a range or keyset bound on the next column(s).
    let k = eqs.iter().take_while(|e| e.is_some()).count();
    // Equalities past the prefix are not part of the path.
    let mut used_r = vec![false; conjuncts.len()];
    for (pos, eq) in eqs.iter().enumerate().take(k) {
        let _ = eq;
        if let Some(i) = conjuncts.iter().enumerate().position(|(i, c)| !used_r[i] && key_eq(t, c, pos).is_some()) {
            used_r[i] = true;
        }
    }
    let prefix: Vec<KeyBound> = eqs[..k].iter().map(|e| KeyBound::Value(e.clone().unwrap())).collect();
    let mut lower: Option<(bool, Vec<Expr>)> = None;
    let mut upper: Option<(bool, Vec<Expr>)> = None;
    if k < n {
        for (i, c) in conjuncts.iter().enumerate() {
            if used_r[i] {
                continue;
            }
            let found = key_range(t, c, k);
            let found: Vec<(bool, bool, Vec<Expr>)> = if found.is_empty() {
                keyset(t, c, k).into_iter().collect()
            } else {
                found.into_iter().map(|(l, inc, v)| (l, inc, vec![v])).collect()
            };
            let mut took = false;
            for (is_lower, incl, vals) in found {
                let slot = if is_lower { &mut lower } else { &mut upper };
                if slot.is_none() {
                    *slot = Some((incl, vals));
                    took = true;
                }
            }
            // Only drop the conjunct when every bound it implies became part of the path.
            if took && (key_range(t, c, k).len() <= 1 || (lower.is_some() && upper.is_some())) {
                used_r[i] = true;
            }
        }
    }
    let key_rank = rank(k, lower.is_some() || upper.is_some());
    let mut indexes = index_paths(t, &conjuncts);
    let mut ranks: Vec<PathRank> = indexes.iter().map(|(r, a, _)| PathRank { index: Some(index_name(a)), rank: *r }).collect();
    if key_rank > 0 {
        // Before the indexes of its rank: the key wins ties.
        let at = ranks.iter().position(|p| p.rank <= key_rank).unwrap_or(ranks.len());
        ranks.insert(at, PathRank { index: None, rank: key_rank });
    }
    if ranks.len() < 2 {
        ranks.clear();
    }
    if indexes.first().is_some_and(|(r, ..)| *r > key_rank) {
        // What the index does not answer exactly is checked on the rows it names.
        let (_, access, answered) = indexes.swap_remove(0);
        let mut used = vec![false; conjuncts.len()];
        answered.into_iter().for_each(|i| used[i] = true);
        return (access, residual(&used), ranks);
    }
    if key_rank == 0 {
        return (AccessPath::FullScan { direction: Direction::Forward }, conjuncts, ranks);
    }
    let mut start = prefix.clone();
    match lower {
        Some((incl, vals)) => {
            start.extend(vals.into_iter().map(KeyBound::Value));
            start.push(if incl { KeyBound::InfMin } else { KeyBound::InfMax });
        }
        None => start.push(KeyBound::InfMin),
    }
    let mut end = prefix;
    match upper {
        Some((incl, vals)) => {
            end.extend(vals.into_iter().map(KeyBound::Value));
            end.push(if incl { KeyBound::InfMax } else { KeyBound::InfMin });
        }
        None => end.push(KeyBound::InfMax),
    }
    (AccessPath::RangeScan { start, end, direction: Direction::Forward }, residual(&used_r), ranks)
}

fn index_name(a: &AccessPath) -> String {
    match a {
        AccessPath::IndexScan { index, .. } => index.clone(),
        _ => String::new(),
    }
}

/// The scan direction that yields ORDER BY's order without sorting, if any.
pub(super) fn key_order(t: &TableSchema, access: &AccessPath, order: &[(Expr, bool)]) -> Option<Direction> {
    if order.is_empty() {
        return Some(Direction::Forward);
    }
    if matches!(access, AccessPath::PointGet { .. }) {
        return Some(Direction::Forward);
    }
    if matches!(access, AccessPath::BatchGet { .. } | AccessPath::IndexScan { .. }) {
        return None;
    }
    // Key columns fixed by equality may appear anywhere; the rest must follow key order.
    let fixed: Vec<usize> = match access {
        AccessPath::RangeScan { start, .. } => {
            let k = start.iter().take_while(|b| matches!(b, KeyBound::Value(_))).count();
            let end_k = match access {
                AccessPath::RangeScan { end, .. } => end.iter().take_while(|b| matches!(b, KeyBound::Value(_))).count(),
                _ => 0,
            };
            // Only the columns both bounds pin to the same value are fixed: the equality prefix.
            (0..k.min(end_k))
                .filter(|i| match (start.get(*i), access) {
                    (Some(KeyBound::Value(a)), AccessPath::RangeScan { end, .. }) => {
                        matches!(end.get(*i), Some(KeyBound::Value(b)) if a == b)
                    }
                    _ => false,
                })
                .map(|i| t.pk[i])
                .collect()
        }
        _ => vec![],
    };
    let mut dir = None;
    let mut next_pos = 0;
    for (e, asc) in order {
        let Expr::Column { index, .. } = e else { return None };
        if fixed.contains(index) {
            continue;
        }
        while next_pos < t.pk.len() && fixed.contains(&t.pk[next_pos]) {
            next_pos += 1;
        }
        if t.pk.get(next_pos) != Some(index) {
            return None;
        }
        next_pos += 1;
        let d = if *asc { Direction::Forward } else { Direction::Backward };
        if dir.is_some_and(|x| x != d) {
            return None;
        }
        dir = Some(d);
    }
    Some(dir.unwrap_or(Direction::Forward))
}

pub(super) fn set_direction(access: &mut AccessPath, dir: Direction) {
    match access {
        AccessPath::RangeScan { start, end, direction } if *direction != dir => {
            std::mem::swap(start, end);
            *direction = dir;
        }
        AccessPath::FullScan { direction } => *direction = dir,
        _ => {}
    }
}
