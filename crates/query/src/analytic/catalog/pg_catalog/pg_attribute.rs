//! `pg_attribute`: the columns of every relation.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgAttribute;

/// The position of `atttypmod` in a row.
const ATTTYPMOD: usize = 8;

/// `atttypmod`: varchar(n)'s is `n + 4`, numeric(p, s)'s `(p << 16 | s) + 4`, as PostgreSQL stores them
/// (format_type prints `character varying(n)`, `numeric(p,s)` from them); -1 for every other column.
fn typmod(c: &crate::schema::ColumnDef) -> i32 {
    match (c.max_chars, c.numeric) {
        (Some(n), _) => n as i32 + 4,
        (None, Some((p, s))) => ((p << 16) | s) as i32 + 4,
        (None, None) => -1,
    }
}

impl Relation for PgAttribute {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("attrelid", Oid),
            ("attname", Text),
            ("atttypid", Oid),
            ("attstattarget", I32),
            ("attlen", I16),
            ("attnum", I16),
            ("attndims", I32),
            ("attcacheoff", I32),
            ("atttypmod", I32),
            ("attbyval", Bool),
            ("attalign", Text),
            ("attstorage", Text),
            ("attcompression", Text),
            ("attnotnull", Bool),
            ("atthasdef", Bool),
            ("atthasmissing", Bool),
            ("attidentity", Text),
            ("attgenerated", Text),
            ("attisdropped", Bool),
            ("attislocal", Bool),
            ("attinhcount", I32),
            ("attcollation", Oid),
            ("attacl", Texts),
            ("attoptions", Texts),
            ("attfdwoptions", Texts),
            ("attmissingval", Texts),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for r in &s.rels {
            for (i, (name, ty, not_null)) in r.columns.iter().enumerate() {
                let (has_def, identity, typmod) = match &r.tabula {
                    Some((t, _)) => (t.columns[i].default.is_some(), identity_kind(&t.columns[i]), typmod(&t.columns[i])),
                    None => (false, "", -1),
                };
                let mut row = pg_attribute_row(r.oid, name, *ty, i as i64 + 1, *not_null, has_def, identity);
                row[ATTTYPMOD] = typmod.into();
                out.push(row);
            }
            if let Some((t, _)) = r.tabula.as_ref().filter(|(t, _)| !t.keyless()) {
                for (k, &c) in t.pk.iter().enumerate() {
                    let col = &t.columns[c];
                    let mut row = pg_attribute_row(r.oid + 1, &col.name, col.ty, k as i64 + 1, false, false, "");
                    row[ATTTYPMOD] = typmod(col).into();
                    out.push(row);
                }
            }
        }
        Ok(out)
    }
}
