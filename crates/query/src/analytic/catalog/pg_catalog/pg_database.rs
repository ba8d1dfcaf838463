//! `pg_database`: the one database.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgDatabase;

impl Relation for PgDatabase {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("oid", Oid),
            ("datname", Text),
            ("datdba", Oid),
            ("encoding", I32),
            ("datlocprovider", Text),
            ("datistemplate", Bool),
            ("datallowconn", Bool),
            ("datconnlimit", I32),
            ("datfrozenxid", I32),
            ("datminmxid", I32),
            ("dattablespace", Oid),
            ("datcollate", Text),
            ("datctype", Text),
            ("daticulocale", Text),
            ("datcollversion", Text),
            ("datacl", Texts),
        ]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, _: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        // One database: every connection reaches the same tables, whatever name it asks for.
        Ok(vec![vec![
            DATABASE_OID.into(),
            CATALOG.into(),
            OWNER.into(),
            UTF8_ENCODING.into(),
            "c".into(),
            false.into(),
            true.into(),
            (-1).into(),
            0.into(),
            1.into(),
            1663.into(),
            "C.UTF-8".into(),
            "C.UTF-8".into(),
            Cell::Null,
            Cell::Null,
            Cell::Null,
        ]])
    }
}
