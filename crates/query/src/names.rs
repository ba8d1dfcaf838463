//! Names in SQL expressions written as other expressions (a view's column as its table's, a merged
//! `USING` column as the table's it reads): each replaced after its children, so what replaces a name is
//! not visited again, and told whether it stands at the expression's own level, where a bare name means
//! what it means there, or inside a subquery, whose own columns a bare name may be.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query};

/// Replaces each expression of `e` for which `f` answers one; `f` is given the expression and whether it
/// is at `e`'s own level (outside every subquery of `e`).
pub fn replace(e: &mut Expr, f: &mut dyn FnMut(&Expr, bool) -> Option<Expr>) {
    let _ = crate::walk::walk_mut(e, &mut Replace { f, depth: 0 });
}

struct Replace<'a> {
    f: &'a mut dyn FnMut(&Expr, bool) -> Option<Expr>,
    depth: usize,
}

impl crate::walk::WalkerMut for Replace<'_> {
    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Some(new) = (self.f)(e, self.depth == 0) {
            *e = new;
        }
        ControlFlow::Continue(())
    }
}
