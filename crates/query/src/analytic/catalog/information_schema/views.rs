//! `information_schema.views`: empty, as Tabula has no views yet.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct Views;

impl Relation for Views {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("view_definition", Text),
            ("check_option", Text),
            ("is_updatable", Text),
            ("is_insertable_into", Text),
            ("is_trigger_updatable", Text),
            ("is_trigger_deletable", Text),
            ("is_trigger_insertable_into", Text),
        ]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, _: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        Ok(Vec::new())
    }
}
