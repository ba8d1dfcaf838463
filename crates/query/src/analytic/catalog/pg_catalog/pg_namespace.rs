//! `pg_namespace`: the schemas, and `pg_init_privs`: their privileges at creation.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgNamespace;

/// The schemas, by name and OID.
const SCHEMAS: [(&str, i32); 4] =
    [("pg_catalog", PG_CATALOG_NSP), ("public", PUBLIC_NSP), ("information_schema", INFORMATION_SCHEMA_NSP), ("tabula", TABULA_NSP)];
pub(super) const PG_NAMESPACE_CLASS: i32 = 2615;

/// A schema's ACL before any GRANT, as PostgreSQL 15's: its owner may use it and create in it, and every
/// role may use it.
fn initial_acl() -> Vec<String> {
    let owner = crate::roles::acl_name(crate::roles::BOOTSTRAP);
    vec![format!("{owner}=UC/{owner}"), format!("=U/{owner}")]
}

/// `pg_init_privs`: the privileges objects were created with, so that tools tell what was granted since.
/// Only schemas have some: Tabula's functions and system relations have no ACL (see `pg_proc`).
#[derive(Debug)]
pub struct PgInitPrivs;

impl Relation for PgInitPrivs {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![("objoid", Oid), ("classoid", Oid), ("objsubid", I32), ("privtype", Text), ("initprivs", Texts)]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, _: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        Ok(SCHEMAS
            .iter()
            .map(|(_, oid)| vec![(*oid).into(), PG_NAMESPACE_CLASS.into(), 0.into(), "i".into(), Cell::Texts(initial_acl())])
            .collect())
    }
}

impl Relation for PgNamespace {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![("oid", Oid), ("nspname", Text), ("nspowner", Oid), ("nspacl", Texts)]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        // The roles granted CREATE ON SCHEMA public hold `C` there besides the owner. (pg_dump writes the
        // GRANTs that differ from the initial ACL.)
        let owner = crate::roles::acl_name(crate::roles::BOOTSTRAP);
        let creators: Vec<String> =
            s.db.roles()
                .all()
                .into_iter()
                .filter(|r| r.create_in_public && !r.superuser)
                .map(|r| format!("{}=C/{owner}", crate::roles::acl_name(&r.name)))
                .collect();
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (name, oid) in SCHEMAS {
            let mut acl = initial_acl();
            if oid == PUBLIC_NSP {
                acl.extend(creators.iter().cloned());
            }
            out.push(vec![oid.into(), name.into(), OWNER.into(), Cell::Texts(acl)]);
        }
        // The session's schema of temporary tables, once it has one (PostgreSQL makes it at the first).
        if let Some(temp) = &s.temp_schema {
            out.push(vec![TEMP_NSP.into(), temp.clone().into(), OWNER.into(), Cell::Null]);
        }
        Ok(out)
    }
}
