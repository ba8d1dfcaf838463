//! `pg_stat_user_tables` (and `pg_stat_all_tables`): per-table counters from the partitions' statistics.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgStatUserTables;

impl Relation for PgStatUserTables {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("relid", Oid),
            ("schemaname", Text),
            ("relname", Text),
            ("seq_scan", I64),
            ("seq_tup_read", I64),
            ("idx_scan", I64),
            ("idx_tup_fetch", I64),
            ("n_tup_ins", I64),
            ("n_tup_upd", I64),
            ("n_tup_del", I64),
            ("n_tup_hot_upd", I64),
            ("n_live_tup", I64),
            ("n_dead_tup", I64),
            ("n_mod_since_analyze", I64),
            ("n_ins_since_vacuum", I64),
            ("last_vacuum", Ts),
            ("last_autovacuum", Ts),
            ("last_analyze", Ts),
            ("last_autoanalyze", Ts),
            ("vacuum_count", I64),
            ("autovacuum_count", I64),
            ("analyze_count", I64),
            ("autoanalyze_count", I64),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (r, t, _) in s.tabula() {
            let parts = s.db.store().partitions(&t.name).unwrap_or_default();
            let rows: i64 = parts.iter().map(|p| p.approx_rows.max(0)).sum();
            let reads: u64 = parts.iter().map(|p| p.reads).sum();
            let writes: u64 = parts.iter().map(|p| p.writes).sum();
            let mut row: Vec<Cell> = vec![r.oid.into(), "public".into(), t.name.clone().into()];
            row.extend([0i64, 0, reads as i64, reads as i64, writes as i64, 0, 0, 0, rows, 0, 0, 0].map(Cell::from));
            row.extend([Cell::Null, Cell::Null, Cell::Null, Cell::Null]);
            row.extend([0i64, 0, 0, 0].map(Cell::from));
            out.push(row);
        }
        Ok(out)
    }
}
