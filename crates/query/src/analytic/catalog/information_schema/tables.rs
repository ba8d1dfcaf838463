//! `information_schema.tables`.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct Tables;

impl Relation for Tables {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("table_type", Text),
            ("self_referencing_column_name", Text),
            ("reference_generation", Text),
            ("user_defined_type_catalog", Text),
            ("user_defined_type_schema", Text),
            ("user_defined_type_name", Text),
            ("is_insertable_into", Text),
            ("is_typed", Text),
            ("commit_action", Text),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        let writable = |r: &Rel| {
            r.view
                .as_ref()
                .is_some_and(|v| crate::view_writes::updatable_columns(&r.name, v, &super::views::Writable(s.db.as_ref())).is_some())
        };
        for r in s.rels.iter().filter(|r| r.kind != "S" && s.sees(r, false)) {
            let base = r.kind == "r";
            out.push(vec![
                CATALOG.into(),
                r.schema.clone().into(),
                r.name.clone().into(),
                if r.schema.starts_with("pg_temp_") {
                    "LOCAL TEMPORARY"
                } else if base {
                    "BASE TABLE"
                } else {
                    "VIEW"
                }
                .into(),
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                if r.tabula.is_some() || writable(r) { "YES" } else { "NO" }.into(),
                "NO".into(),
                Cell::Null,
            ]);
        }
        Ok(out)
    }
}
