//! Walks over sqlparser's syntax trees, with one visitor type for the whole crate.
//!
//! sqlparser's traversal (`Visit` and `VisitMut`, derived for every node of its AST) is generic over the
//! visitor, so each visitor type compiled its own copy of the traversal of the whole tree: the release
//! binary held 127 copies of `Expr::visit`, and 13.6 MB of its code was such copies, for some 50 visitors
//! and closures. Here each visitor is a `dyn` object behind one type of each kind (`Dyn`, `DynMut`), and the
//! traversal is compiled once for reading and once for changing a tree.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, ObjectName, Query, TableFactor, Visit, VisitMut, Visitor, VisitorMut};

/// What a visitor answers at each node: go on, or stop the walk.
pub type Flow = ControlFlow<()>;

const GO_ON: Flow = ControlFlow::Continue(());

/// A visitor that may change the nodes it is shown; each hook as sqlparser's `VisitorMut` has it.
pub trait WalkerMut {
    fn pre_visit_query(&mut self, _query: &mut Query) -> Flow {
        GO_ON
    }
    fn post_visit_query(&mut self, _query: &mut Query) -> Flow {
        GO_ON
    }
    fn pre_visit_relation(&mut self, _relation: &mut ObjectName) -> Flow {
        GO_ON
    }
    fn pre_visit_table_factor(&mut self, _factor: &mut TableFactor) -> Flow {
        GO_ON
    }
    fn pre_visit_expr(&mut self, _expr: &mut Expr) -> Flow {
        GO_ON
    }
    fn post_visit_expr(&mut self, _expr: &mut Expr) -> Flow {
        GO_ON
    }
}

/// A visitor that only reads; each hook as sqlparser's `Visitor` has it.
pub trait Walker {
    fn pre_visit_query(&mut self, _query: &Query) -> Flow {
        GO_ON
    }
    fn pre_visit_table_factor(&mut self, _factor: &TableFactor) -> Flow {
        GO_ON
    }
    fn pre_visit_expr(&mut self, _expr: &Expr) -> Flow {
        GO_ON
    }
}

struct DynMut<'w>(&'w mut dyn WalkerMut);

impl VisitorMut for DynMut<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, query: &mut Query) -> Flow {
        self.0.pre_visit_query(query)
    }
    fn post_visit_query(&mut self, query: &mut Query) -> Flow {
        self.0.post_visit_query(query)
    }
    fn pre_visit_relation(&mut self, relation: &mut ObjectName) -> Flow {
        self.0.pre_visit_relation(relation)
    }
    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> Flow {
        self.0.pre_visit_table_factor(factor)
    }
    fn pre_visit_expr(&mut self, expr: &mut Expr) -> Flow {
        self.0.pre_visit_expr(expr)
    }
    fn post_visit_expr(&mut self, expr: &mut Expr) -> Flow {
        self.0.post_visit_expr(expr)
    }
}

struct Dyn<'w>(&'w mut dyn Walker);

impl Visitor for Dyn<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, query: &Query) -> Flow {
        self.0.pre_visit_query(query)
    }
    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> Flow {
        self.0.pre_visit_table_factor(factor)
    }
    fn pre_visit_expr(&mut self, expr: &Expr) -> Flow {
        self.0.pre_visit_expr(expr)
    }
}

/// Walks `node` with `walker`, which may change what it is shown.
pub fn walk_mut<N: VisitMut>(node: &mut N, walker: &mut dyn WalkerMut) -> Flow {
    node.visit(&mut DynMut(walker))
}

/// Walks `node` with `walker`.
pub fn walk<N: Visit>(node: &N, walker: &mut dyn Walker) -> Flow {
    node.visit(&mut Dyn(walker))
}

/// Calls `f` on every expression in `node`, each after the expressions inside it (sqlparser's
/// `visit_expressions_mut`), so that `f` may replace it whole.
pub fn exprs_mut<N: VisitMut>(node: &mut N, mut f: impl FnMut(&mut Expr) -> Flow) -> Flow {
    struct After<'f>(&'f mut dyn FnMut(&mut Expr) -> Flow);
    impl WalkerMut for After<'_> {
        fn post_visit_expr(&mut self, expr: &mut Expr) -> Flow {
            (self.0)(expr)
        }
    }
    walk_mut(node, &mut After(&mut f))
}

/// Calls `f` on every expression in `node`, each before the expressions inside it (sqlparser's
/// `visit_expressions`).
pub fn exprs<N: Visit>(node: &N, mut f: impl FnMut(&Expr) -> Flow) -> Flow {
    struct Before<'f>(&'f mut dyn FnMut(&Expr) -> Flow);
    impl Walker for Before<'_> {
        fn pre_visit_expr(&mut self, expr: &Expr) -> Flow {
            (self.0)(expr)
        }
    }
    walk(node, &mut Before(&mut f))
}
