//! `pg_attrdef`: column defaults.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgAttrdef;

impl Relation for PgAttrdef {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![("oid", Oid), ("adrelid", Oid), ("adnum", I16), ("adbin", Text)]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (r, t, _) in s.tabula() {
            for (i, c) in t.columns.iter().enumerate() {
                if let Some(d) = &c.default {
                    out.push(vec![
                        (r.oid + 2 + 1000000 + i as i32).into(),
                        r.oid.into(),
                        (i as i32 + 1).into(),
                        shown_default(d, c.ty).into(),
                    ]);
                }
            }
        }
        Ok(out)
    }
}
