//! `pg_namespace`: the schemas.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgNamespace;

impl Relation for PgNamespace {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![("oid", Oid), ("nspname", Text), ("nspowner", Oid), ("nspacl", Texts)]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, _: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (name, oid) in
            [("pg_catalog", PG_CATALOG_NSP), ("public", PUBLIC_NSP), ("information_schema", INFORMATION_SCHEMA_NSP), ("tabula", TABULA_NSP)]
        {
            out.push(vec![oid.into(), name.into(), OWNER.into(), Cell::Null]);
        }
        Ok(out)
    }
}
