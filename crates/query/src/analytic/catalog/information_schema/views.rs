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
            let check = v.check.map_or("NONE".to_string(), |c| c.name().to_uppercase());
            let mut row: Vec<Cell> =
                vec![CATALOG.into(), r.schema.clone().into(), r.name.clone().into(), v.definition(false).into(), check.into()];
            // PostgreSQL's automatically updatable views (`crate::view_writes`); no triggers.
            let yes = crate::view_writes::updatable_columns(&r.name, v, &Writable(s.db.as_ref())).is_some();
            let yes = if yes { "YES" } else { "NO" };
            row.extend([yes, yes, "NO", "NO", "NO"].map(Cell::from));
            Some(row)
        });
        Ok(rows.collect())
    }
}

/// The catalog's relations as `view_writes` reads them.
pub(in crate::analytic::catalog) struct Writable<'a>(pub &'a dyn crate::analytic::Source);

impl crate::view_writes::Relations for Writable<'_> {
    fn view(&self, name: &str) -> Option<crate::views::ViewDef> {
        self.0.view(name).and_then(|t| t.view.clone())
    }

    fn columns(&self, table: &str) -> Option<Vec<String>> {
        let t = self.0.table(table).ok()?;
        Some(t.visible().iter().map(|c| c.name.clone()).collect())
    }
}
