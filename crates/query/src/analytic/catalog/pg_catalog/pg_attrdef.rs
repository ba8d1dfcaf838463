//! `pg_attrdef`: column defaults.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgAttrdef;

/// The OID of the default of a table's `i`th column.
pub(in crate::analytic::catalog) fn attrdef_oid(table: i32, i: usize) -> i32 {
    table + 2 + 1000000 + i as i32
}

impl Relation for PgAttrdef {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![("oid", Oid), ("adrelid", Oid), ("adnum", I16), ("adbin", Text)]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        let public = crate::analytic::search_path::schemas(&s.settings).iter().any(|p| p == "public");
        for (r, t, _) in s.tabula() {
            for (i, c) in t.columns.iter().enumerate() {
                if let Some(d) = &c.default {
                    let shown = shown_default(d, c.ty);
                    out.push(vec![
                        attrdef_oid(r.oid, i).into(),
                        r.oid.into(),
                        (i as i32 + 1).into(),
                        if public { shown } else { crate::sequences::qualified_default(&shown) }.into(),
                    ]);
                }
            }
        }
        Ok(out)
    }
}
