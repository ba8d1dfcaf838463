//! `pg_indexes`: each index (primary keys' and secondary) with the statement that makes it.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgIndexes;

impl Relation for PgIndexes {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![("schemaname", Text), ("tablename", Text), ("indexname", Text), ("tablespace", Text), ("indexdef", Text)]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        let row = |t: &TableSchema, name: String, def: String| -> Vec<Cell> {
            vec!["public".into(), t.name.clone().into(), name.into(), Cell::Null, def.into()]
        };
        for (_, t, _) in s.tabula() {
            if !t.keyless() {
                out.push(row(t, format!("{}_pkey", t.name), super::super::functions::index_def(t, None)));
            }
            for ix in &t.indexes {
                out.push(row(t, ix.name.clone(), super::super::functions::index_def(t, Some(ix))));
            }
        }
        Ok(out)
    }
}
