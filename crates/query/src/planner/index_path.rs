//! Reads through secondary indexes: which indexes answer a WHERE clause ([`index_paths`]: equalities, IN
//! lists and ORs of them on their leading columns, then a range on the next column), and when an index's
//! order serves an ORDER BY ([`index_order`]).

use super::*;
use crate::schema::Index;

/// Whether a column of type `ty` stores exactly one value for each value equal to it, so that an index
/// lookup of a constant finds every equal row: not numeric (`1.5` is stored apart from `1.50`), floats
/// (`-0` and `0`) or json.
fn index_lookup_type(ty: SqlType) -> bool {
    ty.is_integer()
        || ty.is_text()
        || matches!(ty, SqlType::Bool | SqlType::Bytea | SqlType::Date | SqlType::Timestamp | SqlType::Timestamptz | SqlType::Uuid)
}

/// Whether constant `c` can be looked up in an index column of type `ty`: of the column's type (any
/// integer for an integer column, any text for a text one).
fn index_compatible(c: &Expr, ty: SqlType) -> bool {
    let ct = c.ty();
    c.is_constant() && index_lookup_type(ty) && (ct == ty || (ty.is_integer() && ct.is_integer()) || (ty.is_text() && ct.is_text()))
}

/// The constants `col = c` or `col IN (c, ...)` allows for an index column.
fn index_values(t: &TableSchema, e: &Expr, col: usize) -> Option<Vec<Expr>> {
    let ty = t.column_type(col);
    if let Some(c) = eq_column_const(e, col) {
        return index_compatible(&c, ty).then(|| vec![c]);
    }
    match e {
        Expr::InList { expr, list, negated: false }
            if matches!(expr.as_ref(), Expr::Column { index, .. } if *index == col) && list.iter().all(|c| index_compatible(c, ty)) =>
        {
            Some(list.clone())
        }
        _ => None,
    }
}

/// Whether the index answers a condition on a column of type `ty` exactly, so that the rows it names need
/// not be checked against it again: every stored value sorts in the index as the condition compares it
/// (not `character(n)`, whose comparisons ignore trailing spaces).
fn exact_type(ty: SqlType) -> bool {
    index_lookup_type(ty) && !matches!(ty, SqlType::Bpchar(_) | SqlType::Unknown)
}

/// The bounds `col > c`, `col <= c`, `col BETWEEN a AND b` ... set on an index column: (inclusive, value),
/// and the conjuncts all of whose bounds are among them.
fn index_bounds(t: &TableSchema, conjuncts: &[Expr], col: usize) -> (IndexBounds, Vec<usize>) {
    let ty = t.column_type(col);
    let (mut lower, mut upper) = (None, None);
    let mut used = Vec::new();
    for (i, e) in conjuncts.iter().enumerate() {
        let found: Vec<(bool, bool, Expr)> = match e {
            Expr::Binary { op, left, right } if op.is_comparison() && *op != BinOp::Eq && *op != BinOp::NotEq => {
                let (op, c) = match (left.as_ref(), right.as_ref()) {
                    (Expr::Column { index, .. }, c) if *index == col => (*op, c),
                    (c, Expr::Column { index, .. }) if *index == col => (op.flip(), c),
                    _ => continue,
                };
                if !index_compatible(c, ty) {
                    continue;
                }
                match op {
                    BinOp::Gt => vec![(true, false, c.clone())],
                    BinOp::GtEq => vec![(true, true, c.clone())],
                    BinOp::Lt => vec![(false, false, c.clone())],
                    BinOp::LtEq => vec![(false, true, c.clone())],
                    _ => continue,
                }
            }
            Expr::Between { expr, low, high, negated: false }
                if matches!(expr.as_ref(), Expr::Column { index, .. } if *index == col)
                    && index_compatible(low, ty)
                    && index_compatible(high, ty) =>
            {
                vec![(true, true, (**low).clone()), (false, true, (**high).clone())]
            }
            _ => continue,
        };
        let mut all = true;
        for (is_lower, incl, c) in found {
            let slot = if is_lower { &mut lower } else { &mut upper };
            all &= slot.is_none();
            slot.get_or_insert((incl, c));
        }
        if all {
            used.push(i);
        }
    }
    ((lower, upper), used)
}

type IndexBounds = (Option<(bool, Expr)>, Option<(bool, Expr)>);

/// The lookups that `conjuncts` fix on `ix`'s leading columns (one per combination of the values of
/// their equalities and IN lists, at most [`MAX_BATCH_KEYS`]), how many columns they fix, and which
/// conjuncts they come from.
fn index_lookups(t: &TableSchema, ix: &Index, conjuncts: &[Expr]) -> (Vec<Vec<Expr>>, usize, Vec<usize>) {
    let mut lookups: Vec<Vec<Expr>> = vec![vec![]];
    let (mut fixed, mut used) = (0, Vec::new());
    for &col in &ix.columns {
        let Some((i, values)) = conjuncts.iter().enumerate().find_map(|(i, c)| Some((i, index_values(t, c, col)?))) else { break };
        if lookups.len() * values.len() > MAX_BATCH_KEYS {
            break;
        }
        lookups = lookups.into_iter().flat_map(|l| values.iter().map(move |v| [l.clone(), vec![v.clone()]].concat())).collect();
        fixed += 1;
        used.push(i);
    }
    (lookups, fixed, used)
}

/// For conjunct `i`, an OR each of whose branches (with the other conjuncts) fixes at least `ix`'s first
/// column: the branches' lookups together, and the fewest columns a branch fixes. Branches may overlap
/// (`a = 1 OR (a = 1 AND b = 2)`): the reader drops a lookup that another one's covers.
fn or_lookups(t: &TableSchema, ix: &Index, conjuncts: &[Expr], i: usize) -> Option<(Vec<Vec<Expr>>, usize)> {
    fn branches(e: &Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::Binary { op: BinOp::Or, left, right } => {
                branches(left, out);
                branches(right, out);
            }
            e => out.push(e.clone()),
        }
    }
    if !matches!(&conjuncts[i], Expr::Binary { op: BinOp::Or, .. }) {
        return None;
    }
    let mut ors = Vec::new();
    branches(&conjuncts[i], &mut ors);
    let others = conjuncts.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, c)| c.clone());
    let (mut all, mut fewest) = (Vec::new(), usize::MAX);
    for branch in ors {
        let mut cs = branch.conjuncts();
        cs.extend(others.clone());
        let (lookups, fixed, _) = index_lookups(t, ix, &cs);
        if fixed == 0 || all.len() + lookups.len() > MAX_BATCH_KEYS {
            return None;
        }
        fewest = fewest.min(fixed);
        all.extend(lookups);
    }
    Some((all, fewest))
}

/// An index path: its rank under [`rank`], the scan, and the conjuncts it answers exactly (which its rows
/// need not be checked against again).
pub(super) type IndexPath = (usize, AccessPath, Vec<usize>);

/// Each ready index that fixes at least one leading column (by equalities, IN lists or ORs of them, then a
/// range on the next), as an IndexScan with one lookup per combination of the values; best first, the
/// index defined first on a tie.
///
/// The conditions an index scan reads by are answered exactly when the table's entries are exact
/// (`entries_exact`: no ttl, nothing hidden) and the columns' values sort as they compare: the entries
/// and the rows are read at one point, so each row named holds its entry's values. The rows are then
/// not checked against those conditions again (a range of 100 through an index spent an eighth of its
/// time on the check). An OR of lookups is always checked again: its branches may overlap.
pub(super) fn index_paths(t: &TableSchema, conjuncts: &[Expr]) -> Vec<IndexPath> {
    let mut paths: Vec<IndexPath> = Vec::new();
    let exact = |cols: &[usize]| t.options.entries_exact() && cols.iter().all(|&c| exact_type(t.column_type(c)));
    for ix in t.indexes.iter().filter(|i| i.ready) {
        let mut best: Option<IndexPath> = None;
        let mut consider = |score: usize, access: AccessPath, answered: Vec<usize>| {
            if score > 0 && best.as_ref().is_none_or(|(b, ..)| score > *b) {
                best = Some((score, access, answered));
            }
        };
        let (lookups, fixed, mut answered) = index_lookups(t, ix, conjuncts);
        let ((lower, upper), bounded) = match ix.columns.get(fixed) {
            Some(&col) => index_bounds(t, conjuncts, col),
            None => ((None, None), vec![]),
        };
        answered.extend(bounded);
        if !exact(&ix.columns[..(fixed + 1).min(ix.columns.len())]) {
            answered.clear();
        }
        consider(
            rank(fixed, lower.is_some() || upper.is_some()),
            AccessPath::IndexScan { index: ix.name.clone(), lookups, lower, upper, order: None, covering: false },
            answered,
        );
        for i in 0..conjuncts.len() {
            if let Some((lookups, fixed)) = or_lookups(t, ix, conjuncts, i) {
                consider(
                    rank(fixed, false),
                    AccessPath::IndexScan { index: ix.name.clone(), lookups, lower: None, upper: None, order: None, covering: false },
                    vec![],
                );
            }
        }
        paths.extend(best);
    }
    paths.sort_by_key(|p| std::cmp::Reverse(p.0));
    paths
}

/// When ORDER BY's order can come from reading an index forward or backward, that read: for an index scan
/// of one lookup whose next columns are the ORDER BY's, or, under a LIMIT, instead of a full scan. NULLs
/// come last forward and first backward, as ORDER BY puts them by default (the other placement goes to the
/// analytic route). Only on a table without a ttl: with one, an entry outlives the values it holds when
/// they expire, until the row is written again, and its row would come in the old values' place.
pub(super) fn index_order(t: &TableSchema, access: &AccessPath, order: &[(Expr, bool)], limited: bool) -> Option<AccessPath> {
    if order.is_empty() || t.options.ttl >= 0 {
        return None;
    }
    let wanted: Vec<(usize, bool)> = order
        .iter()
        .map(|(e, asc)| match e {
            Expr::Column { index, .. } if index_lookup_type(t.column_type(*index)) => Some((*index, *asc)),
            _ => None,
        })
        .collect::<Option<_>>()?;
    // The direction reading `ix` after its first `fixed` columns yields the order in: forward where each
    // column is wanted in the index's own direction, backward where each is wanted the other way.
    let direction = |ix: &Index, fixed: usize| -> Option<Direction> {
        let (pinned, rest) = ix.columns.split_at(fixed);
        let wanted: Vec<&(usize, bool)> = wanted.iter().filter(|(c, _)| !pinned.contains(c)).collect();
        if wanted.len() > rest.len() || wanted.iter().zip(rest).any(|((c, _), r)| c != r) {
            return None;
        }
        let forward: Vec<bool> = wanted.iter().enumerate().map(|(i, (_, asc))| *asc != ix.desc(fixed + i)).collect();
        match forward.first() {
            None => Some(Direction::Forward),
            Some(f) if forward.iter().all(|x| x == f) => Some(if *f { Direction::Forward } else { Direction::Backward }),
            Some(_) => None,
        }
    };
    match access {
        AccessPath::IndexScan { index, lookups, lower, upper, .. } if lookups.len() == 1 => {
            let ix = t.indexes.iter().find(|i| &i.name == index)?;
            let dir = direction(ix, lookups[0].len())?;
            Some(AccessPath::IndexScan {
                index: index.clone(),
                lookups: lookups.clone(),
                lower: lower.clone(),
                upper: upper.clone(),
                order: Some(dir),
                covering: false,
            })
        }
        AccessPath::FullScan { .. } if limited => t.indexes.iter().filter(|i| i.ready).find_map(|ix| {
            let dir = direction(ix, 0)?;
            let (index, lookups) = (ix.name.clone(), vec![vec![]]);
            Some(AccessPath::IndexScan { index, lookups, lower: None, upper: None, order: Some(dir), covering: false })
        }),
        _ => None,
    }
}

/// Makes an index scan index-only when its entries hold every column the read needs (`needed`: the
/// attribute columns, `None` for all; key columns are in every entry) and are exact: no ttl and nothing
/// hidden (`TableOptions::entries_exact`), a read of the newest versions only. Its rows are then made of
/// the entries, and no row is read by key. EXPLAIN shows `IndexOnlyScan`.
pub(crate) fn cover(t: &TableSchema, access: &mut AccessPath, needed: Option<&[usize]>, versions: &Versions) {
    let AccessPath::IndexScan { index, covering, .. } = access else { return };
    let Some(ix) = t.indexes.iter().find(|i| &i.name == index) else { return };
    let held = |c: &usize| t.is_pk(*c) || ix.columns.contains(c) || ix.include.contains(c);
    let all_held = match needed {
        Some(cols) => cols.iter().all(held),
        None => t.attributes().all(|c| held(&c)),
    };
    *covering = all_held && t.options.entries_exact() && *versions == Versions::Latest;
}
