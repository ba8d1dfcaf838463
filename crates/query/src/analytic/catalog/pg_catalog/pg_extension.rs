//! `pg_extension` and `pg_depend`: Tabula's own relations (the `tabula` schema and its views) as the
//! members of a built-in extension named `tabula`.
//!
//! That is how PostgreSQL describes objects that come with the server but are not its core catalog, and
//! what tools go by: pg_dump dumps neither a built-in extension (OID below 16384) nor its members, so a
//! dump holds the user's tables and not Tabula's views; psql's `\dx` lists it.

use super::pg_namespace::PG_NAMESPACE_CLASS;
use crate::analytic::catalog::*;

/// The extension's OID: below PostgreSQL's first user OID (16384), as a built-in extension's is.
const TABULA_EXTENSION: i32 = 16382;
const PG_EXTENSION_CLASS: i32 = 3079;
const PG_CLASS_CLASS: i32 = 1259;
const PG_ATTRDEF_CLASS: i32 = 2604;

#[derive(Debug)]
pub struct PgExtension;

impl Relation for PgExtension {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("oid", Oid),
            ("extname", Text),
            ("extowner", Oid),
            ("extnamespace", Oid),
            ("extrelocatable", Bool),
            ("extversion", Text),
            ("extconfig", Oids),
            ("extcondition", Texts),
        ]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, _: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        Ok(vec![vec![
            TABULA_EXTENSION.into(),
            CATALOG.into(),
            OWNER.into(),
            TABULA_NSP.into(),
            false.into(),
            env!("CARGO_PKG_VERSION").into(),
            Cell::Null,
            Cell::Null,
        ]])
    }
}

/// A pg_depend row: the object (its catalog, its OID) depends on the relation (its OID, the column's
/// number or 0).
fn depend((class, oid): (i32, i32), (relation, column): (i32, i32), deptype: &str) -> Vec<Cell> {
    vec![class.into(), oid.into(), 0.into(), PG_CLASS_CLASS.into(), relation.into(), column.into(), deptype.into()]
}

/// Dependencies between objects: the extension's membership (deptype `e`), and the sequences OWNED BY a
/// column (deptype `a`).
#[derive(Debug)]
pub struct PgDepend;

impl Relation for PgDepend {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("classid", Oid),
            ("objid", Oid),
            ("objsubid", I32),
            ("refclassid", Oid),
            ("refobjid", Oid),
            ("refobjsubid", I32),
            ("deptype", Text),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let member = |class: i32, oid: i32| -> Vec<Cell> {
            vec![class.into(), oid.into(), 0.into(), PG_EXTENSION_CLASS.into(), TABULA_EXTENSION.into(), 0.into(), "e".into()]
        };
        let mut out = vec![member(PG_NAMESPACE_CLASS, TABULA_NSP)];
        out.extend(s.rels.iter().filter(|r| r.schema == CATALOG).map(|r| member(PG_CLASS_CLASS, r.oid)));
        // A default that draws from a sequence depends on it (deptype `n`): pg_dump then writes the default
        // after the sequence, as ALTER TABLE ... SET DEFAULT, where PostgreSQL resolves its regclass.
        for (r, t, _) in s.tabula() {
            for (i, c) in t.columns.iter().enumerate() {
                let Some(seq) = c.default.as_deref().and_then(crate::sequences::drawn_by) else { continue };
                let Some(target) = s.rels.iter().find(|q| q.kind == "S" && q.name == seq) else { continue };
                let attrdef = super::pg_attrdef::attrdef_oid(r.oid, i);
                out.push(depend((PG_ATTRDEF_CLASS, attrdef), (target.oid, 0), "n"));
            }
        }
        // A view depends on what it reads (PostgreSQL records it for the view's rewrite rule; pg_dump orders
        // the view after them either way).
        for r in &s.rels {
            let Some(v) = r.view.as_ref() else { continue };
            for read in &v.reads {
                let Some(target) = s.rels.iter().find(|q| q.schema == "public" && q.name == *read) else { continue };
                out.push(depend((PG_CLASS_CLASS, r.oid), (target.oid, 0), "n"));
            }
        }
        // A sequence OWNED BY a column depends on it automatically (deptype `a`): psql's `\d` shows it as
        // "Owned by", pg_dump writes it back as ALTER SEQUENCE ... OWNED BY.
        for r in &s.rels {
            let Some((table, column)) = r.sequence.as_ref().and_then(|d| d.owned_by.as_ref()) else { continue };
            let Some((t, owner)) = s.tabula().find(|(t, _, _)| t.name == *table).map(|(t, schema, _)| (t, schema)) else { continue };
            let Some(attnum) = owner.column_index(column) else { continue };
            out.push(depend((PG_CLASS_CLASS, r.oid), (t.oid, attnum as i32 + 1), "a"));
        }
        Ok(out)
    }
}
