//! `pg_stat_progress_create_index`: one row per CREATE INDEX (or UNIQUE constraint's index) being built
//! ([`crate::activity::IndexBuildProgress`]): its phase, named as PostgreSQL names its own (`building
//! index: scanning table`, then `index validation: scanning index` when rows were written during the
//! build), and the rows whose entries are written (`tuples_done`) of about how many (`tuples_total`, the
//! table's partition statistics when the build began). A build takes no locks and reads no pages, so the
//! lockers and blocks columns are 0, and a table is one relation, so the partition columns are too.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgStatProgressCreateIndex;

impl Relation for PgStatProgressCreateIndex {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("pid", I32),
            ("datid", Oid),
            ("datname", Text),
            ("relid", Oid),
            ("index_relid", Oid),
            ("command", Text),
            ("phase", Text),
            ("lockers_total", I64),
            ("lockers_done", I64),
            ("current_locker_pid", I64),
            ("blocks_total", I64),
            ("blocks_done", I64),
            ("tuples_total", I64),
            ("tuples_done", I64),
            ("partitions_total", I64),
            ("partitions_done", I64),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out = Vec::new();
        for b in s.db.activity().backends() {
            let Some(build) = &b.index_build else { continue };
            let rel = s.rels.iter().find(|r| r.schema == "public" && r.name == build.table);
            let relid = rel.map_or(Cell::Null, |r| r.oid.into());
            // From the store: the schema a reader caches lists the index once it is ready.
            let def = s.db.store().table(&build.table).ok();
            let index_relid = def
                .and_then(|d| d.indexes.iter().find(|i| i.name == build.index).map(|i| i.id))
                .map_or(Cell::Null, |id| table_oid(id).into());
            let mut row = vec![
                b.pid.into(),
                DATABASE_OID.into(),
                b.database.clone().into(),
                relid,
                index_relid,
                "CREATE INDEX".into(),
                build.phase.into(),
            ];
            row.extend([0, 0, 0, 0, 0].map(Cell::I));
            row.extend([Cell::I(build.total as i64), Cell::I(build.done as i64), Cell::I(0), Cell::I(0)]);
            out.push(row);
        }
        Ok(out)
    }
}
