//! A column merged by `JOIN ... USING (k)` named bare, as PostgreSQL reads it: the left table's column for
//! an inner or left join, the right's for a right one, `COALESCE` of both for a full one. DataFusion 55
//! calls a bare merged name ambiguous in WHERE (42702), and reads the left table's column everywhere
//! else, so that a right or full join answered NULL for `k` (and for `*`'s first column) in rows only
//! the right table has.
//!
//! The bare names are written as the columns they are in WHERE, the select list (named as before),
//! GROUP BY and HAVING; a `*` over a right or full join lists the merged columns first, then the rest
//! (`* EXCLUDE (k)`), as PostgreSQL orders them. Only a merge that can be told from the statement's text
//! is rewritten: one of the first join of a FROM item, and the same column merged again down the chain
//! (`a JOIN b USING (k) JOIN c USING (k)`). A column first merged further down keeps DataFusion's answer.

use std::ops::ControlFlow;

use sqlparser::ast::{
    ExcludeSelectItem, Expr, GroupByExpr, Ident, JoinConstraint, JoinOperator, ObjectName, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, TableFactor, WildcardAdditionalOptions,
};

pub(super) struct UsingColumns;

impl crate::walk::WalkerMut for UsingColumns {
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        super::each_select(q.body.as_mut(), &mut qualify);
        ControlFlow::Continue(())
    }
}

/// One merged column: its name as written, as compared (lower-cased unless quoted), what it reads, and
/// whether DataFusion's reading of it differs (a right or full join).
struct Merged {
    name: Ident,
    key: String,
    expr: Expr,
    outer: bool,
}

/// What a `*` over the FROM items lists: each relation with the merged columns it holds. `None` when
/// some join's merge is not told from the text (a `*` is then left alone).
type Relations = Option<Vec<(Ident, Vec<Ident>)>>;

fn key(id: &Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_lowercase()
    }
}

/// The name a FROM item goes by, when it has one.
fn relation_name(f: &TableFactor) -> Option<Ident> {
    match f {
        TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => Some(a.name.clone()),
        TableFactor::Table { name, alias: None, .. } => name.0.last().and_then(|p| p.as_ident()).cloned(),
        _ => None,
    }
}

/// The columns a join merges, when it is one of the kinds PostgreSQL merges columns for.
fn using(op: &JoinOperator) -> Option<(&[ObjectName], char)> {
    let (c, kind) = match op {
        JoinOperator::Join(c) | JoinOperator::Inner(c) | JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (c, 'l'),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (c, 'r'),
        JoinOperator::FullOuter(c) => (c, 'f'),
        _ => return None,
    };
    match c {
        JoinConstraint::Using(columns) => Some((columns.as_slice(), kind)),
        _ => None,
    }
}

fn names(columns: &[ObjectName]) -> Vec<Ident> {
    columns.iter().filter_map(|c| c.0.last()?.as_ident().cloned()).collect()
}

fn merges(select: &Select) -> (Vec<Merged>, Relations) {
    let mut merged: Vec<Merged> = Vec::new();
    let mut relations = Some(Vec::new());
    for twj in &select.from {
        let Some(left) = relation_name(&twj.relation) else {
            relations = None;
            continue;
        };
        let first = twj.joins.first().and_then(|j| using(&j.join_operator)).map(|(c, _)| names(c));
        if let Some(r) = relations.as_mut() {
            r.push((left.clone(), first.unwrap_or_default()));
        }
        for (i, join) in twj.joins.iter().enumerate() {
            // Past a join of another kind, a bare name may mean another table's column.
            let (Some((columns, kind)), Some(right)) = (using(&join.join_operator), relation_name(&join.relation)) else {
                relations = None;
                break;
            };
            if let Some(r) = relations.as_mut() {
                r.push((right.clone(), names(columns)));
            }
            for c in names(columns) {
                let k = key(&c);
                let before = merged.iter().position(|m| m.key == k);
                if i > 0 && before.is_none() {
                    relations = None;
                    continue;
                }
                let column = |t: &Ident| Expr::CompoundIdentifier(vec![t.clone(), c.clone()]);
                let left_value = before.map(|b| merged[b].expr.clone()).unwrap_or_else(|| column(&left));
                let was_outer = before.is_some_and(|b| merged[b].outer);
                let (expr, outer) = match kind {
                    'l' => (left_value, was_outer),
                    'r' => (column(&right), true),
                    _ => (super::call("coalesce", vec![left_value, column(&right)], vec![]), true),
                };
                let m = Merged { name: c.clone(), key: k, expr, outer };
                match before {
                    Some(b) => merged[b] = m,
                    None => merged.push(m),
                }
            }
        }
    }
    (merged, relations)
}

fn qualify(select: &mut Select) {
    let (merged, relations) = merges(select);
    if merged.is_empty() {
        return;
    }
    if let Some(e) = select.selection.as_mut() {
        bare(e, &merged);
    }
    // Elsewhere DataFusion reads an inner or left join's merged column right.
    if !merged.iter().any(|m| m.outer) {
        return;
    }
    if let Some(e) = select.having.as_mut() {
        bare(e, &merged);
    }
    if let GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
        for e in exprs {
            bare(e, &merged);
        }
    }
    let mut items = Vec::with_capacity(select.projection.len());
    for item in std::mem::take(&mut select.projection) {
        match item {
            SelectItem::UnnamedExpr(Expr::Identifier(id)) if merged.iter().any(|m| m.key == key(&id)) => {
                let m = merged.iter().find(|m| m.key == key(&id)).expect("found");
                items.push(SelectItem::ExprWithAlias { expr: m.expr.clone(), alias: id });
            }
            SelectItem::UnnamedExpr(mut e) => {
                bare(&mut e, &merged);
                items.push(SelectItem::UnnamedExpr(e));
            }
            SelectItem::ExprWithAlias { mut expr, alias } => {
                bare(&mut expr, &merged);
                items.push(SelectItem::ExprWithAlias { expr, alias });
            }
            SelectItem::Wildcard(options) if relations.is_some() && options == WildcardAdditionalOptions::default() => {
                for m in &merged {
                    items.push(SelectItem::ExprWithAlias { expr: m.expr.clone(), alias: m.name.clone() });
                }
                for (relation, held) in relations.iter().flatten() {
                    let exclude = (!held.is_empty())
                        .then(|| ExcludeSelectItem::Multiple(held.iter().map(|n| ObjectName::from(vec![n.clone()])).collect()));
                    items.push(SelectItem::QualifiedWildcard(
                        SelectItemQualifiedWildcardKind::ObjectName(ObjectName::from(vec![relation.clone()])),
                        WildcardAdditionalOptions { opt_exclude: exclude, ..options.clone() },
                    ));
                }
            }
            other => items.push(other),
        }
    }
    select.projection = items;
}

/// Each bare merged name of `e` outside its subqueries (inside one, a bare name may be the subquery's own)
/// as what it reads.
fn bare(e: &mut Expr, merged: &[Merged]) {
    crate::names::replace(e, &mut |x, own| match x {
        Expr::Identifier(id) if own => merged.iter().find(|m| m.key == key(id)).map(|m| m.expr.clone()),
        _ => None,
    });
}
