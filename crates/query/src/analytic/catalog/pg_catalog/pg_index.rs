//! `pg_index`: each table's primary key and secondary indexes.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgIndex;

impl Relation for PgIndex {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("indexrelid", Oid),
            ("indrelid", Oid),
            ("indnatts", I16),
            ("indnkeyatts", I16),
            ("indisunique", Bool),
            ("indnullsnotdistinct", Bool),
            ("indisprimary", Bool),
            ("indisexclusion", Bool),
            ("indimmediate", Bool),
            ("indisclustered", Bool),
            ("indisvalid", Bool),
            ("indcheckxmin", Bool),
            ("indisready", Bool),
            ("indislive", Bool),
            ("indisreplident", Bool),
            ("indkey", I16Vector),
            ("indcollation", OidVector),
            ("indclass", OidVector),
            ("indoption", I16Vector),
            ("indexprs", Text),
            ("indpred", Text),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (r, t, _) in s.keyed() {
            let n = t.pk.len() as i64;
            let collations = t.pk.iter().map(|&c| collation(t.columns[c].ty) as i64).collect();
            out.push(vec![
                (r.oid + 1).into(),
                r.oid.into(),
                n.into(),
                n.into(),
                true.into(),
                false.into(),
                true.into(),
                false.into(),
                true.into(),
                false.into(),
                true.into(),
                false.into(),
                true.into(),
                true.into(),
                false.into(),
                Cell::Ints(pk_attnums(t)),
                Cell::Ints(collations),
                Cell::Ints(vec![0; n as usize]),
                Cell::Ints(vec![0; n as usize]),
                Cell::Null,
                Cell::Null,
            ]);
        }
        for (r, t, _) in s.tabula() {
            for ix in &t.indexes {
                // indkey lists the key columns, then the INCLUDE ones; indclass, indcollation and indoption
                // only the key columns, as PostgreSQL's.
                let (n, keys) = ((ix.columns.len() + ix.include.len()) as i64, ix.columns.len() as i64);
                let flag = |b: bool| -> Cell { b.into() };
                out.push(vec![
                    table_oid(ix.id).into(),
                    r.oid.into(),
                    n.into(),
                    keys.into(),
                    flag(ix.unique),
                    flag(ix.nulls_not_distinct),
                    flag(false),
                    flag(false),
                    flag(true),
                    flag(false),
                    flag(ix.ready),
                    flag(false),
                    flag(ix.ready),
                    flag(true),
                    flag(false),
                    Cell::Ints(ix.columns.iter().chain(&ix.include).map(|&c| c as i64 + 1).collect()),
                    Cell::Ints(ix.columns.iter().map(|&c| collation(t.columns[c].ty) as i64).collect()),
                    Cell::Ints(vec![0; keys as usize]),
                    // indoption: DESC (1) with NULLS FIRST (2), as PostgreSQL's descending default.
                    Cell::Ints((0..ix.columns.len()).map(|i| if ix.desc(i) { 3 } else { 0 }).collect()),
                    Cell::Null,
                    Cell::Null,
                ]);
            }
        }
        Ok(out)
    }
}
