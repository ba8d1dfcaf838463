//! `pg_roles`: the roles.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgRoles;

impl Relation for PgRoles {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("rolname", Text),
            ("rolsuper", Bool),
            ("rolinherit", Bool),
            ("rolcreaterole", Bool),
            ("rolcreatedb", Bool),
            ("rolcanlogin", Bool),
            ("rolreplication", Bool),
            ("rolconnlimit", I32),
            ("rolpassword", Text),
            ("rolvaliduntil", Ts),
            ("rolbypassrls", Bool),
            ("rolconfig", Texts),
            ("oid", Oid),
        ]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for r in s.db.roles().all() {
            out.push(vec![
                r.name.into(),
                r.superuser.into(),
                true.into(),
                r.superuser.into(),
                r.superuser.into(),
                r.login.into(),
                false.into(),
                (-1).into(),
                "********".into(),
                Cell::Null,
                r.superuser.into(),
                Cell::Null,
                (r.oid as i32).into(),
            ]);
        }
        Ok(out)
    }
}
