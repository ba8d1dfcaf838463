//! `pg_class`: every relation, Tabula's tables and their indexes (primary keys' and secondary) among them.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgClass;

impl Relation for PgClass {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("oid", Oid),
            ("relname", Text),
            ("relnamespace", Oid),
            ("reltype", Oid),
            ("reloftype", Oid),
            ("relowner", Oid),
            ("relam", Oid),
            ("relfilenode", Oid),
            ("reltablespace", Oid),
            ("relpages", I32),
            ("reltuples", F32),
            ("relallvisible", I32),
            ("reltoastrelid", Oid),
            ("relhasindex", Bool),
            ("relisshared", Bool),
            ("relpersistence", Text),
            ("relkind", Text),
            ("relnatts", I16),
            ("relchecks", I16),
            ("relhasrules", Bool),
            ("relhastriggers", Bool),
            ("relhassubclass", Bool),
            ("relrowsecurity", Bool),
            ("relforcerowsecurity", Bool),
            ("relispopulated", Bool),
            ("relreplident", Text),
            ("relispartition", Bool),
            ("relrewrite", Oid),
            ("relfrozenxid", I32),
            ("relminmxid", I32),
            ("relacl", Texts),
            ("reloptions", Texts),
            ("relpartbound", Text),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for r in &s.rels {
            let nsp = namespace_oid(&r.schema).unwrap_or(PUBLIC_NSP);
            let (rows, options) = match &r.tabula {
                Some((t, _)) => {
                    let rows: i64 = s.db.store().partitions(&t.name).map(|p| p.iter().map(|p| p.approx_rows.max(0)).sum()).unwrap_or(0);
                    // As PostgreSQL's: the options set, NULL if none. (A dump carries them as `WITH (...)`, so a
                    // table at the defaults restores into PostgreSQL too.)
                    let set = crate::options::reloptions(&t.declared_options());
                    (rows as f64, if set.is_empty() { Cell::Null } else { Cell::Texts(set) })
                }
                None => (-1.0, Cell::Null),
            };
            // A view's CHECK OPTION, where pg_dump and psql's `\d+` look for it.
            let options = match r.view.as_ref().and_then(|v| v.check) {
                Some(c) => Cell::Texts(vec![format!("check_option={}", c.name())]),
                None => options,
            };
            let keyed = r.tabula.as_ref().filter(|(t, _)| !t.keyless());
            let has_index = keyed.is_some() || r.tabula.as_ref().is_some_and(|(t, _)| !t.indexes.is_empty());
            let owned = || match &r.tabula {
                Some((t, _)) => {
                    let owner = s.db.roles().get(&t.owner).map_or(OWNER, |o| o.oid as i32);
                    (owner, t.acl.as_ref().map_or(Cell::Null, |a| Cell::Texts(a.items(&t.owner))))
                }
                None => (OWNER, Cell::Null),
            };
            let mut row = pg_class_row(r.oid, &r.name, nsp, HEAP_AM, rows, has_index, r.kind, r.columns.len() as i64, options, owned());
            // relpersistence: a temporary table's is `t`.
            if r.schema.starts_with("pg_temp_") {
                row[15] = "t".into();
            }
            // relchecks: psql's `\d` looks for CHECK constraints only when it is not 0.
            row[18] = r.tabula.as_ref().map_or(0, |(t, _)| t.checks.len() as i64).into();
            // relhastriggers: PostgreSQL's foreign keys are triggers on both tables, and psql's `\d` lists
            // them only then.
            let referenced = |name: &str| s.tabula().any(|(_, c, _)| c.foreign_keys.iter().any(|fk| fk.parent == name));
            row[20] = r.tabula.as_ref().is_some_and(|(t, _)| !t.foreign_keys.is_empty() || referenced(&t.name)).into();
            out.push(row);
            if let Some((t, _)) = keyed {
                out.push(pg_class_row(
                    r.oid + 1,
                    &format!("{}_pkey", t.name),
                    nsp,
                    BTREE_AM,
                    rows,
                    false,
                    "i",
                    t.pk.len() as i64,
                    Cell::Null,
                    (owned().0, Cell::Null),
                ));
            }
            for ix in r.tabula.iter().flat_map(|(t, _)| &t.indexes) {
                let n = (ix.columns.len() + ix.include.len()) as i64;
                out.push(pg_class_row(table_oid(ix.id), &ix.name, nsp, BTREE_AM, rows, false, "i", n, Cell::Null, (owned().0, Cell::Null)));
            }
        }
        Ok(out)
    }
}
