//! `information_schema.table_constraints`: the primary keys.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct TableConstraints;

impl Relation for TableConstraints {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("constraint_catalog", Text),
            ("constraint_schema", Text),
            ("constraint_name", Text),
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("constraint_type", Text),
            ("is_deferrable", Text),
            ("initially_deferred", Text),
            ("enforced", Text),
            ("nulls_distinct", Text),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (_, t, _) in s.keyed().filter(|(r, _, _)| s.sees(r, true)) {
            out.push(vec![
                CATALOG.into(),
                "public".into(),
                format!("{}_pkey", t.name).into(),
                CATALOG.into(),
                "public".into(),
                t.name.clone().into(),
                "PRIMARY KEY".into(),
                "NO".into(),
                "NO".into(),
                "YES".into(),
                "YES".into(),
            ]);
        }
        Ok(out)
    }
}
