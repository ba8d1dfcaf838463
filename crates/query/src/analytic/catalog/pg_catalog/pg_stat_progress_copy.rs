//! `pg_stat_progress_copy`: one row per COPY FROM STDIN under way ([`crate::activity::CopyProgress`]): the
//! bytes of data received and the rows written so far. A COPY TO gathers its rows before it sends any, so
//! it has no progress to show and no row here.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgStatProgressCopy;

impl Relation for PgStatProgressCopy {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("pid", I32),
            ("datid", Oid),
            ("datname", Text),
            ("relid", Oid),
            ("command", Text),
            ("type", Text),
            ("bytes_processed", I64),
            ("bytes_total", I64),
            ("tuples_processed", I64),
            ("tuples_excluded", I64),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out = Vec::new();
        for b in s.db.activity().backends() {
            let Some(copy) = &b.copy else { continue };
            let relid = s.rels.iter().find(|r| r.schema == "public" && r.name == copy.table).map_or(Cell::Null, |r| r.oid.into());
            out.push(vec![
                b.pid.into(),
                DATABASE_OID.into(),
                b.database.clone().into(),
                relid,
                "COPY FROM".into(),
                // The data comes over the connection, as PostgreSQL's COPY FROM STDIN.
                "PIPE".into(),
                Cell::I(copy.bytes as i64),
                // Unknown until the client ends the data, as for a pipe in PostgreSQL.
                Cell::I(0),
                Cell::I(copy.tuples as i64),
                Cell::I(0),
            ]);
        }
        Ok(out)
    }
}
