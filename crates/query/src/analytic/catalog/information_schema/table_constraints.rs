//! `information_schema.table_constraints`: the primary keys, UNIQUE constraints and CHECK constraints.

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
        let row = |name: &str, table: &str, kind: &str, nulls_distinct: Cell| -> Vec<Cell> {
            let mut r: Vec<Cell> = vec![CATALOG.into(), "public".into(), name.into(), CATALOG.into(), "public".into(), table.into()];
            r.extend([kind, "NO", "NO", "YES"].map(Cell::from));
            r.push(nulls_distinct);
            r
        };
        for (_, t, _) in s.keyed().filter(|(r, _, _)| s.sees(r, true)) {
            // PostgreSQL shows nulls_distinct for UNIQUE constraints only.
            out.push(row(&format!("{}_pkey", t.name), &t.name, "PRIMARY KEY", Cell::Null));
        }
        for (_, t, _) in s.tabula().filter(|(r, _, _)| s.sees(r, true)) {
            for ix in t.indexes.iter().filter(|i| i.constraint) {
                out.push(row(&ix.name, &t.name, "UNIQUE", if ix.nulls_not_distinct { "NO" } else { "YES" }.into()));
            }
            for c in &t.checks {
                out.push(row(&c.name, &t.name, "CHECK", Cell::Null));
            }
            for fk in &t.foreign_keys {
                out.push(row(&fk.name, &t.name, "FOREIGN KEY", Cell::Null));
            }
        }
        Ok(out)
    }
}
