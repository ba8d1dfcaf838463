//! `information_schema.views`: the users' views (`crate::views`), none updatable.

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

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let rows = s.rels.iter().filter_map(|r| {
            let v = r.view.as_ref()?;
            let mut row: Vec<Cell> =
                vec![CATALOG.into(), r.schema.clone().into(), r.name.clone().into(), v.definition(false).into(), "NONE".into()];
            row.extend(["NO", "NO", "NO", "NO", "NO"].map(Cell::from));
            Some(row)
        });
        Ok(rows.collect())
    }
}
