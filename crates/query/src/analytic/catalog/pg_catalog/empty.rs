//! pg_catalog relations that are always empty in Tabula (policies, publications, triggers, ...), with
//! PostgreSQL's column types so that queries joining them plan.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct Empty(pub &'static str);

/// The pg_catalog relations Tabula never fills. (Identity columns use the engine's auto-increment,
/// not sequences; there are no security labels, transforms, partitioned tables, event triggers or
/// foreign data. Nor rewrite rules: the library's pg_rewrite describes the views of the PostgreSQL its
/// data came from, by OIDs that are not this catalog's. Nor column statistics, `pg_stats`: ANALYZE gathers
/// none, the planner choosing its routes by rules; its array columns, `anyarray` and `real[]` in
/// PostgreSQL, are `text[]` here.)
static EMPTY: [Empty; 15] = [
    Empty("pg_policy"),
    Empty("pg_statistic_ext"),
    Empty("pg_publication"),
    Empty("pg_publication_rel"),
    Empty("pg_publication_namespace"),
    Empty("pg_inherits"),
    Empty("pg_trigger"),
    Empty("pg_transform"),
    Empty("pg_seclabels"),
    Empty("pg_partitioned_table"),
    Empty("pg_event_trigger"),
    Empty("pg_foreign_data_wrapper"),
    Empty("pg_foreign_server"),
    Empty("pg_rewrite"),
    Empty("pg_stats"),
];

/// The always-empty relation of that name.
pub fn empty_relation(name: &str) -> Option<&'static Empty> {
    EMPTY.iter().find(|e| e.0 == name)
}

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
            "pg_stats" => vec![
                ("schemaname", Text),
                ("tablename", Text),
                ("attname", Text),
                ("inherited", Bool),
                ("null_frac", F32),
                ("avg_width", I32),
                ("n_distinct", F32),
                ("most_common_vals", Texts),
                ("most_common_freqs", Texts),
                ("histogram_bounds", Texts),
                ("correlation", F32),
                ("most_common_elems", Texts),
                ("most_common_elem_freqs", Texts),
                ("elem_count_histogram", Texts),
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
            "pg_transform" => vec![("oid", Oid), ("trftype", Oid), ("trflang", Oid), ("trffromsql", Oid), ("trftosql", Oid)],
            "pg_seclabels" => vec![
                ("objoid", Oid),
                ("classoid", Oid),
                ("objsubid", I32),
                ("objtype", Text),
                ("objnamespace", Oid),
                ("objname", Text),
                ("provider", Text),
                ("label", Text),
            ],
            "pg_partitioned_table" => vec![
                ("partrelid", Oid),
                ("partstrat", Text),
                ("partnatts", I16),
                ("partdefid", Oid),
                ("partattrs", I16s),
                ("partclass", Oids),
                ("partcollation", Oids),
                ("partexprs", Text),
            ],
            // regproc columns hold the function's name, as in the library's static catalogs.
            "pg_event_trigger" => vec![
                ("oid", Oid),
                ("evtname", Text),
                ("evtevent", Text),
                ("evtowner", Oid),
                ("evtfoid", Text),
                ("evtenabled", Text),
                ("evttags", Texts),
            ],
            "pg_foreign_data_wrapper" => vec![
                ("oid", Oid),
                ("fdwname", Text),
                ("fdwowner", Oid),
                ("fdwhandler", Text),
                ("fdwvalidator", Text),
                ("fdwacl", Texts),
                ("fdwoptions", Texts),
            ],
            "pg_foreign_server" => vec![
                ("oid", Oid),
                ("srvname", Text),
                ("srvowner", Oid),
                ("srvfdw", Oid),
                ("srvtype", Text),
                ("srvversion", Text),
                ("srvacl", Texts),
                ("srvoptions", Texts),
            ],
            "pg_rewrite" => vec![
                ("oid", Oid),
                ("rulename", Text),
                ("ev_class", Oid),
                ("ev_type", Text),
                ("ev_enabled", Text),
                ("is_instead", Bool),
                ("ev_qual", Text),
                ("ev_action", Text),
            ],
            "pg_inherits" => vec![("inhrelid", Oid), ("inhparent", Oid), ("inhseqno", I32), ("inhdetachpending", Bool)],
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
