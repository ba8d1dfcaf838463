//! The OIDs of pg_catalog's relations: PostgreSQL 15's own, so that what tools compare with them
//! (`tableoid`, `'pg_class'::regclass`, `pg_depend.classid`, `pg_description.classoid`) means the same
//! catalog it means in PostgreSQL. pg_dump, for one, keys every object it dumps by the `tableoid` of the
//! catalog that holds it.

/// (relation, OID) for every table and view of PostgreSQL 15's pg_catalog, sorted by name.
const PG_CATALOG_OIDS: &[(&str, i32)] = &[
    ("pg_aggregate", 2600), ("pg_am", 2601), ("pg_amop", 2602), ("pg_amproc", 2603), ("pg_attrdef", 2604),
    ("pg_attribute", 1249), ("pg_auth_members", 1261), ("pg_authid", 1260), ("pg_available_extension_versions", 12085),
    ("pg_available_extensions", 12081), ("pg_backend_memory_contexts", 12138), ("pg_cast", 2605), ("pg_class", 1259),
    ("pg_collation", 3456), ("pg_config", 12130), ("pg_constraint", 2606), ("pg_conversion", 2607), ("pg_cursors", 12077),
    ("pg_database", 1262), ("pg_db_role_setting", 2964), ("pg_default_acl", 826), ("pg_depend", 2608), ("pg_description", 2609),
    ("pg_enum", 3501), ("pg_event_trigger", 3466), ("pg_extension", 3079), ("pg_file_settings", 12110),
    ("pg_foreign_data_wrapper", 2328), ("pg_foreign_server", 1417), ("pg_foreign_table", 3118), ("pg_group", 12010),
    ("pg_hba_file_rules", 12114), ("pg_ident_file_mappings", 12118), ("pg_index", 2610), ("pg_indexes", 12043),
    ("pg_inherits", 2611), ("pg_init_privs", 3394), ("pg_language", 2612), ("pg_largeobject", 2613),
    ("pg_largeobject_metadata", 2995), ("pg_locks", 12073), ("pg_matviews", 12038), ("pg_namespace", 2615), ("pg_opclass", 2616),
    ("pg_operator", 2617), ("pg_opfamily", 2753), ("pg_parameter_acl", 6243), ("pg_partitioned_table", 3350),
    ("pg_policies", 12018), ("pg_policy", 3256), ("pg_prepared_statements", 12095), ("pg_prepared_xacts", 12090),
    ("pg_proc", 1255), ("pg_publication", 6104), ("pg_publication_namespace", 6237), ("pg_publication_rel", 6106),
    ("pg_publication_tables", 12068), ("pg_range", 3541), ("pg_replication_origin", 6000),
    ("pg_replication_origin_status", 12332), ("pg_replication_slots", 12257), ("pg_rewrite", 2618), ("pg_roles", 12000),
    ("pg_rules", 12023), ("pg_seclabel", 3596), ("pg_seclabels", 12099), ("pg_sequence", 2224), ("pg_sequences", 12048),
    ("pg_settings", 12104), ("pg_shadow", 12005), ("pg_shdepend", 1214), ("pg_shdescription", 2396),
    ("pg_shmem_allocations", 12134), ("pg_shseclabel", 3592), ("pg_stat_activity", 12222), ("pg_stat_all_indexes", 12183),
    ("pg_stat_all_tables", 12142), ("pg_stat_archiver", 12285), ("pg_stat_bgwriter", 12289), ("pg_stat_database", 12266),
    ("pg_stat_database_conflicts", 12271), ("pg_stat_gssapi", 12253), ("pg_stat_progress_analyze", 12297),
    ("pg_stat_progress_basebackup", 12317), ("pg_stat_progress_cluster", 12307), ("pg_stat_progress_copy", 12322),
    ("pg_stat_progress_create_index", 12312), ("pg_stat_progress_vacuum", 12302), ("pg_stat_recovery_prefetch", 12240),
    ("pg_stat_replication", 12227), ("pg_stat_replication_slots", 12262), ("pg_stat_slru", 12232), ("pg_stat_ssl", 12249),
    ("pg_stat_subscription", 12244), ("pg_stat_subscription_stats", 12336), ("pg_stat_sys_indexes", 12188),
    ("pg_stat_sys_tables", 12152), ("pg_stat_user_functions", 12275), ("pg_stat_user_indexes", 12192),
    ("pg_stat_user_tables", 12161), ("pg_stat_wal", 12293), ("pg_stat_wal_receiver", 12236), ("pg_stat_xact_all_tables", 12147),
    ("pg_stat_xact_sys_tables", 12157), ("pg_stat_xact_user_functions", 12280), ("pg_stat_xact_user_tables", 12166),
    ("pg_statio_all_indexes", 12196), ("pg_statio_all_sequences", 12209), ("pg_statio_all_tables", 12170),
    ("pg_statio_sys_indexes", 12201), ("pg_statio_sys_sequences", 12214), ("pg_statio_sys_tables", 12175),
    ("pg_statio_user_indexes", 12205), ("pg_statio_user_sequences", 12218), ("pg_statio_user_tables", 12179),
    ("pg_statistic", 2619), ("pg_statistic_ext", 3381), ("pg_statistic_ext_data", 3429), ("pg_stats", 12053),
    ("pg_stats_ext", 12058), ("pg_stats_ext_exprs", 12063), ("pg_subscription", 6100), ("pg_subscription_rel", 6102),
    ("pg_tables", 12033), ("pg_tablespace", 1213), ("pg_timezone_abbrevs", 12122), ("pg_timezone_names", 12126),
    ("pg_transform", 3576), ("pg_trigger", 2620), ("pg_ts_config", 3602), ("pg_ts_config_map", 3603), ("pg_ts_dict", 3600),
    ("pg_ts_parser", 3601), ("pg_ts_template", 3764), ("pg_type", 1247), ("pg_user", 12014), ("pg_user_mapping", 1418),
    ("pg_user_mappings", 12327), ("pg_views", 12028),
];

/// The OID PostgreSQL 15 gives a relation of pg_catalog.
pub fn pg_catalog_oid(name: &str) -> Option<i32> {
    PG_CATALOG_OIDS.binary_search_by(|(n, _)| (*n).cmp(name)).ok().map(|i| PG_CATALOG_OIDS[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_found() {
        assert!(PG_CATALOG_OIDS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(pg_catalog_oid("pg_class"), Some(1259));
        assert_eq!(pg_catalog_oid("pg_extension"), Some(3079));
        assert_eq!(pg_catalog_oid("no_such"), None);
    }
}
