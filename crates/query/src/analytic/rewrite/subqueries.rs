//! Subqueries as DataFusion plans them: `ARRAY(SELECT ...)` as an aggregate, scalar subqueries aggregated
//! (at most one row) and decorrelated, and selects over relations Tabula never fills.

use super::*;

/// `ARRAY(SELECT e FROM ... [ORDER BY ...])` as `(SELECT array_agg(e ORDER BY ...) FROM ...)`.
pub(super) fn array_subquery(e: &Expr) -> Option<Query> {
    let Expr::Function(f) = e else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("array") {
        return None;
    }
    let FunctionArguments::Subquery(q) = &f.args else { return None };
    let mut q = q.as_ref().clone();
    let SetExpr::Select(select) = q.body.as_mut() else { return None };
    if select.projection.len() != 1 || !is_plain(select) {
        return None;
    }
    let item = match &select.projection[0] {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
        _ => return None,
    };
    let order = match q.order_by.take().map(|o| o.kind) {
        Some(OrderByKind::Expressions(exprs)) => exprs,
        _ => vec![],
    };
    // ORDER BY 1 names the select item.
    let order = order
        .into_iter()
        .map(|mut o| {
            if matches!(&o.expr, Expr::Value(v) if v.to_string() == "1") {
                o.expr = item.clone();
            }
            o
        })
        .collect();
    select.projection = vec![SelectItem::UnnamedExpr(call("array_agg", vec![item], order))];
    Some(q)
}

pub(super) fn is_plain(select: &sqlparser::ast::Select) -> bool {
    use sqlparser::ast::GroupByExpr;
    select.distinct.is_none()
        && select.having.is_none()
        && matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
        && !select.projection.iter().any(|p| match p {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => has_aggregate(e),
            _ => true,
        })
}

/// Whether `e` aggregates at its own level (aggregates inside its subqueries do not count).
pub(super) fn has_aggregate(e: &Expr) -> bool {
    struct Find {
        depth: usize,
        found: bool,
    }
    impl crate::walk::WalkerMut for Find {
        fn pre_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, x: &mut Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = x {
                let n = f.name.to_string().to_lowercase();
                let n = n.rsplit('.').next().unwrap_or("");
                let aggregate = f.over.is_some()
                    || matches!(
                        n,
                        "count"
                            | "sum"
                            | "avg"
                            | "min"
                            | "max"
                            | "array_agg"
                            | "string_agg"
                            | "bool_and"
                            | "bool_or"
                            | "every"
                            | "first_value"
                            | crate::analytic::single_row::ROWS
                    );
                if aggregate && self.depth == 0 {
                    self.found = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find { depth: 0, found: false };
    let _ = crate::walk::walk_mut(&mut e.clone(), &mut find);
    find.found
}

/// A scalar subquery of one non-aggregated column over a FROM, as the aggregate that counts its rows
/// (`analytic::single_row`): DataFusion decorrelates aggregates only. Whether it was rewritten: the caller
/// then checks the count where the subquery is used.
pub(super) fn aggregate_scalar_subquery(q: &mut Query) -> bool {
    if q.limit_clause.is_some() || q.fetch.is_some() {
        return false;
    }
    let SetExpr::Select(select) = q.body.as_mut() else { return false };
    if select.from.is_empty() || select.projection.len() != 1 || !is_plain(select) {
        return false;
    }
    let (item, alias) = match &select.projection[0] {
        SelectItem::UnnamedExpr(e) => (e.clone(), None),
        SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(alias.clone())),
        _ => return false,
    };
    let agg = call(crate::analytic::single_row::ROWS, vec![item], vec![]);
    select.projection = vec![match alias {
        Some(alias) => SelectItem::ExprWithAlias { expr: agg, alias },
        None => SelectItem::UnnamedExpr(agg),
    }];
    q.order_by = None;
    true
}

/// Names the subquery's own FROM items answer to.
pub(super) fn inner_names(q: &Query) -> Vec<String> {
    let SetExpr::Select(select) = q.body.as_ref() else { return vec![] };
    let mut names = Vec::new();
    let mut add = |f: &TableFactor| {
        if let TableFactor::Table { name, alias, .. } = f {
            match alias {
                Some(a) => names.push(a.name.value.to_lowercase()),
                None => names.push(name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default()),
            }
        }
    };
    for twj in &select.from {
        add(&twj.relation);
        for j in &twj.joins {
            add(&j.relation);
        }
    }
    names
}

/// (references an outer column, references an inner or unqualified column)
pub(super) fn references(e: &Expr, inner: &[String]) -> (bool, bool) {
    let (mut outer, mut local) = (false, false);
    let mut e = e.clone();
    let _ = crate::walk::exprs_mut(&mut e, |x| {
        match x {
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let q = parts[parts.len() - 2].value.to_lowercase();
                if inner.contains(&q) {
                    local = true;
                } else {
                    outer = true;
                }
            }
            Expr::Identifier(_) => local = true,
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => local = true,
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    (outer, local)
}

pub(super) fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        Expr::Nested(inner) if matches!(inner.as_ref(), Expr::BinaryOp { op: BinaryOperator::And, .. }) => conjuncts(*inner, out),
        other => out.push(other),
    }
}

pub(super) fn and_all(mut parts: Vec<Expr>) -> Option<Expr> {
    let first = parts.pop()?;
    Some(parts.into_iter().rev().fold(first, |acc, p| Expr::BinaryOp { left: Box::new(p), op: BinaryOperator::And, right: Box::new(acc) }))
}

/// Makes a correlated subquery's WHERE decorrelatable; returns the conditions on outer columns only.
pub(super) fn decorrelate(q: &mut Query) -> Option<Expr> {
    let inner = inner_names(q);
    if inner.is_empty() {
        return None;
    }
    let SetExpr::Select(select) = q.body.as_mut() else { return None };
    let selection = select.selection.take()?;
    let mut parts = Vec::new();
    conjuncts(selection, &mut parts);
    // outer column (as written) = inner expression
    let mut equal: Vec<(Expr, Expr)> = Vec::new();
    for p in &parts {
        if let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = p {
            for (a, b) in [(left, right), (right, left)] {
                let (ao, al) = references(a, &inner);
                let (bo, bl) = references(b, &inner);
                if matches!(a.as_ref(), Expr::CompoundIdentifier(_)) && ao && !al && bl && !bo {
                    equal.push((a.as_ref().clone(), b.as_ref().clone()));
                }
            }
        }
    }
    let mut guard = Vec::new();
    let mut kept = Vec::new();
    for mut p in parts {
        let (outer, local) = references(&p, &inner);
        if outer && !local {
            guard.push(p);
            continue;
        }
        let is_link = matches!(&p, Expr::BinaryOp { op: BinaryOperator::Eq, left, right }
            if equal.iter().any(|(o, _)| o == left.as_ref() || o == right.as_ref()));
        if outer && local && !is_link {
            let _ = crate::walk::exprs_mut(&mut p, |x| {
                if let Some((_, i)) = equal.iter().find(|(o, _)| o == x) {
                    *x = Expr::Nested(Box::new(i.clone()));
                }
                ControlFlow::<()>::Continue(())
            });
        }
        kept.push(p);
    }
    select.selection = and_all(kept);
    and_all(guard)
}

pub(super) struct OverEmptyRelations;

impl crate::walk::WalkerMut for OverEmptyRelations {
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        each_select(q.body.as_mut(), &mut over_empty_relation);
        ControlFlow::Continue(())
    }
}

/// Whether a SELECT returns no rows whatever the data: it reads an always-empty relation (not through an
/// outer join) and does not aggregate.
/// Array columns of the generated catalog that are NULL in every row: Tabula has no column privileges,
/// column options or foreign tables.
const NULL_ARRAY_COLUMNS: &[&str] = &["attacl", "attoptions", "attfdwoptions"];

/// Whether a SELECT's FROM yields no rows whatever the data.
fn reads_no_rows(select: &Select) -> bool {
    let empty = |f: &TableFactor| match f {
        TableFactor::Table { name, .. } => {
            name.0.last().is_some_and(|p| crate::analytic::catalog::empty_relation(&p.to_string().to_lowercase()).is_some())
        }
        // `unnest(a.attoptions)`: an array column Tabula's catalog always leaves NULL has no elements.
        // (DataFusion cannot plan such an unnest of an outer column in a subquery.)
        TableFactor::UNNEST { array_exprs, .. } => array_exprs.iter().all(|e| {
            let column = match e {
                Expr::Identifier(i) => Some(&i.value),
                Expr::CompoundIdentifier(parts) => parts.last().map(|p| &p.value),
                _ => None,
            };
            column.is_some_and(|c| NULL_ARRAY_COLUMNS.contains(&c.to_lowercase().as_str()))
        }),
        _ => false,
    };
    use sqlparser::ast::JoinOperator;
    select.from.iter().any(|twj| {
        empty(&twj.relation)
            || twj.joins.iter().any(|j| empty(&j.relation) && matches!(j.join_operator, JoinOperator::Join(_) | JoinOperator::Inner(_)))
    })
}

/// `CASE WHEN attidentity ... THEN (SELECT ... FROM pg_sequence ...) END` (SQLAlchemy's identity options of
/// a column): the branch reads the pg_sequence row of an identity column's sequence, and there is none, as
/// the sequence of an identity or serial column is its table's own counter, no relation (pg_sequence holds
/// the sequences made by CREATE SEQUENCE, which back no identity column). So the branch is NULL; DataFusion
/// could not plan it, a subquery correlated through a function of the outer row.
pub(super) fn identity_sequence_branch(e: &mut Expr) {
    let Expr::Case { conditions, .. } = e else { return };
    for w in conditions.iter_mut() {
        let mut on_identity = false;
        let _ = crate::walk::exprs(&w.condition, |x| {
            on_identity |= matches!(x, Expr::Identifier(i) if i.value.eq_ignore_ascii_case("attidentity"))
                || matches!(x, Expr::CompoundIdentifier(p) if p.last().is_some_and(|i| i.value.eq_ignore_ascii_case("attidentity")));
            ControlFlow::<()>::Continue(())
        });
        let reads_pg_sequence = matches!(&w.result, Expr::Subquery(q) if matches!(q.body.as_ref(), SetExpr::Select(s)
            if matches!(s.from.as_slice(), [twj] if matches!(&twj.relation, TableFactor::Table { name, .. }
                if name.0.last().is_some_and(|p| p.to_string().eq_ignore_ascii_case("pg_sequence"))))));
        if on_identity && reads_pg_sequence {
            w.result = Expr::Value(ValueWithSpan::from(Value::Null));
        }
    }
}

/// `ARRAY(SELECT ...)` over nothing ([`reads_no_rows`]): an empty array (of text).
pub(super) fn empty_array_subquery(e: &mut Expr) {
    let Expr::Function(f) = e else { return };
    let FunctionArguments::Subquery(q) = &f.args else { return };
    if !f.name.to_string().eq_ignore_ascii_case("array")
        || !matches!(q.body.as_ref(), SetExpr::Select(s) if reads_no_rows(s) && is_plain(s))
    {
        return;
    }
    let text = |s: &str| Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(s.into())));
    *e = call("string_to_array", vec![text(""), text(",")], vec![]);
}

pub(super) fn selects_nothing(select: &Select) -> bool {
    let no_rows = reads_no_rows(select);
    let aggregates = select.projection.iter().any(|p| match p {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => has_aggregate(e),
        _ => false,
    });
    no_rows && !aggregates && select.having.is_none()
}

pub(super) fn over_empty_relation(select: &mut Select) {
    if !selects_nothing(select) {
        return;
    }
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
            let _ = crate::walk::exprs_mut(e, |x| {
                if array_subquery(x).is_some() {
                    // An array still, for the functions over it (`array_to_string(ARRAY(...), ', ')`).
                    let text = |s: &str| Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(s.into())));
                    *x = call("string_to_array", vec![text(""), text(",")], vec![]);
                } else if matches!(x, Expr::Subquery(_)) {
                    *x = Expr::Value(ValueWithSpan::from(Value::Null));
                }
                ControlFlow::<()>::Continue(())
            });
        }
    }
}
