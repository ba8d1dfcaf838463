//! `information_schema.referential_constraints`: empty, as Tabula has no foreign keys yet.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct ReferentialConstraints;

impl Relation for ReferentialConstraints {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("constraint_catalog", Text),
            ("constraint_schema", Text),
            ("constraint_name", Text),
            ("unique_constraint_catalog", Text),
            ("unique_constraint_schema", Text),
            ("unique_constraint_name", Text),
            ("match_option", Text),
            ("update_rule", Text),
            ("delete_rule", Text),
        ]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, _: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        Ok(Vec::new())
    }
}
