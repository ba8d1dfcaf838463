//! `pg_stat_activity`: one row per session ([`crate::activity`]). As in PostgreSQL, a role that is no
//! superuser sees of another role's sessions only who and where, with `<insufficient privilege>` for the
//! query (its text may hold secrets).

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgStatActivity;

impl Relation for PgStatActivity {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("datid", Oid),
            ("datname", Text),
            ("pid", I32),
            ("leader_pid", I32),
            ("usesysid", Oid),
            ("usename", Text),
            ("application_name", Text),
            ("client_addr", Text),
            ("client_hostname", Text),
            ("client_port", I32),
            ("backend_start", Ts),
            ("xact_start", Ts),
            ("query_start", Ts),
            ("state_change", Ts),
            ("wait_event_type", Text),
            ("wait_event", Text),
            ("state", Text),
            ("backend_xid", Text),
            ("backend_xmin", Text),
            ("query_id", I64),
            ("query", Text),
            ("backend_type", Text),
        ]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let roles = s.db.roles();
        let ts = |us: Option<i64>| us.map_or(Cell::Null, Cell::I);
        let mut out = Vec::new();
        for b in s.db.activity().backends() {
            let own = s.viewer.as_ref().is_none_or(|v| *v == b.user);
            let usesysid = roles.get(&b.user).map_or(Cell::Null, |r| (r.oid as i32).into());
            let mut row: Vec<Cell> = vec![
                DATABASE_OID.into(),
                b.database.clone().into(),
                b.pid.into(),
                Cell::Null,
                usesysid,
                b.user.clone().into(),
                b.application_name.clone().into(),
            ];
            if own {
                row.extend([
                    b.client.map_or(Cell::Null, |a| a.ip().to_string().into()),
                    Cell::Null,
                    b.client.map_or(Cell::Null, |a| (a.port() as i32).into()),
                    Cell::I(b.backend_start_us),
                    ts(b.xact_start_us),
                    ts(b.query_start_us),
                    Cell::I(b.state_change_us),
                    Cell::Null,
                    Cell::Null,
                    b.state.into(),
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    b.query.clone().into(),
                ]);
            } else {
                row.extend(std::iter::repeat_n(Cell::Null, 13));
                row.push("<insufficient privilege>".into());
            }
            row.push("client backend".into());
            out.push(row);
        }
        Ok(out)
    }
}
