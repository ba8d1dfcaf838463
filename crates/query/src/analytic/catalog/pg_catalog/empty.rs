//! pg_catalog relations that are always empty in Tabula (policies, publications, triggers, ...), with
//! PostgreSQL's column types so that queries joining them plan.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct Empty(pub &'static str);

impl Relation for Empty {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        match self.0 {
            "pg_policy" => vec![
                ("oid", Oid),
                ("polname", Text),
                ("polrelid", Oid),
                ("polcmd", Text),
                ("polpermissive", Bool),
                ("polroles", Oids),
                ("polqual", Text),
                ("polwithcheck", Text),
            ],
            "pg_statistic_ext" => vec![
                ("oid", Oid),
                ("stxrelid", Oid),
                ("stxname", Text),
                ("stxnamespace", Oid),
                ("stxowner", Oid),
                ("stxstattarget", I32),
                ("stxkeys", I16s),
                ("stxkind", Texts),
                ("stxexprs", Text),
            ],
            "pg_publication" => vec![
                ("oid", Oid),
                ("pubname", Text),
                ("pubowner", Oid),
                ("puballtables", Bool),
                ("pubinsert", Bool),
                ("pubupdate", Bool),
                ("pubdelete", Bool),
                ("pubtruncate", Bool),
                ("pubviaroot", Bool),
            ],
            "pg_publication_rel" => vec![("oid", Oid), ("prpubid", Oid), ("prrelid", Oid), ("prqual", Text), ("prattrs", I16s)],
            "pg_publication_namespace" => vec![("oid", Oid), ("pnpubid", Oid), ("pnnspid", Oid)],
            "pg_inherits" => vec![("inhrelid", Oid), ("inhparent", Oid), ("inhseqno", I32), ("inhdetachpending", Bool)],
            "pg_sequence" => vec![
                ("seqrelid", Oid),
                ("seqtypid", Oid),
                ("seqstart", I64),
                ("seqincrement", I64),
                ("seqmax", I64),
                ("seqmin", I64),
                ("seqcache", I64),
                ("seqcycle", Bool),
            ],
            _ => vec![
                ("oid", Oid),
                ("tgrelid", Oid),
                ("tgparentid", Oid),
                ("tgname", Text),
                ("tgfoid", Oid),
                ("tgtype", I16),
                ("tgenabled", Text),
                ("tgisinternal", Bool),
                ("tgconstrrelid", Oid),
                ("tgconstrindid", Oid),
                ("tgconstraint", Oid),
                ("tgdeferrable", Bool),
                ("tginitdeferred", Bool),
                ("tgnargs", I16),
                ("tgattr", I16s),
                ("tgargs", Text),
                ("tgqual", Text),
                ("tgoldtable", Text),
                ("tgnewtable", Text),
            ],
        }
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, _: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        Ok(Vec::new())
    }
}
