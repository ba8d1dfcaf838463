//! `information_schema.key_column_usage`: the primary keys' columns.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct KeyColumnUsage;

impl Relation for KeyColumnUsage {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("constraint_catalog", Text),
            ("constraint_schema", Text),
            ("constraint_name", Text),
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("column_name", Text),
            ("ordinal_position", I32),
            ("position_in_unique_constraint", I32),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (_, t, _) in s.keyed().filter(|(r, _, _)| s.sees(r, false)) {
            for (k, &c) in t.pk.iter().enumerate() {
                out.push(vec![
                    CATALOG.into(),
                    "public".into(),
                    format!("{}_pkey", t.name).into(),
                    CATALOG.into(),
                    "public".into(),
                    t.name.clone().into(),
                    t.columns[c].name.clone().into(),
                    (k as i32 + 1).into(),
                    Cell::Null,
                ]);
            }
        }
        Ok(out)
    }
}
