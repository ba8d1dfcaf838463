-- name: Metabase lists the tables it can read (its own sync query)
-- expect: devices
SELECT n.nspname AS schema, c.relname AS name,
  CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS type,
  obj_description(c.oid, 'pg_class') AS description,
  c.relkind IN ('r', 'p') AS is_writable
FROM pg_catalog.pg_class AS c
INNER JOIN pg_catalog.pg_namespace AS n ON c.relnamespace = n.oid
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
  AND c.relkind IN ('r', 'p', 'v', 'f', 'm')
  AND has_schema_privilege(n.nspname, 'USAGE')
  AND (has_table_privilege(c.oid, 'SELECT') OR has_any_column_privilege(c.oid, 'SELECT'))
ORDER BY n.nspname, c.relname

-- name: Metabase describes a table's fields, primary key included
-- params: table_name
-- expect: site, id, text, int8, float8, bool, true
SELECT c.column_name AS name, c.udt_name AS database_type, c.ordinal_position - 1 AS database_position,
  c.table_schema AS table_schema, c.table_name AS table_name, pk.column_name IS NOT NULL AS pk,
  c.column_default AS column_default, c.is_nullable = 'NO' AS database_required,
  c.is_identity = 'YES' AS database_is_auto_increment
FROM information_schema.columns c
LEFT JOIN (
  SELECT tc.table_schema, tc.table_name, kc.column_name
  FROM information_schema.table_constraints tc
  INNER JOIN information_schema.key_column_usage kc
    ON tc.constraint_name = kc.constraint_name AND tc.table_schema = kc.table_schema AND tc.table_name = kc.table_name
  WHERE tc.constraint_type = 'PRIMARY KEY'
) pk ON c.table_schema = pk.table_schema AND c.table_name = pk.table_name AND c.column_name = pk.column_name
WHERE c.table_name = $1 AND c.table_schema !~ '^information_schema|catalog_history|pg_'
ORDER BY c.ordinal_position

-- name: pgjdbc DatabaseMetaData.getSchemas (Metabase)
-- expect: public
SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace
 WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_' OR nspname = (pg_catalog.current_schemas(true))[1])
 AND (nspname !~ '^pg_toast_temp_' OR nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))
 ORDER BY TABLE_SCHEM

-- name: pgjdbc DatabaseMetaData.getTables (Metabase)
-- expect: devices, TABLE
SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,
 CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema'
  WHEN true THEN CASE WHEN n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind WHEN 'r' THEN 'SYSTEM TABLE' WHEN 'v' THEN 'SYSTEM VIEW' WHEN 'i' THEN 'SYSTEM INDEX' ELSE NULL END
   WHEN n.nspname = 'pg_toast' THEN CASE c.relkind WHEN 'r' THEN 'SYSTEM TOAST TABLE' WHEN 'i' THEN 'SYSTEM TOAST INDEX' ELSE NULL END
   ELSE CASE c.relkind WHEN 'r' THEN 'TEMPORARY TABLE' WHEN 'p' THEN 'TEMPORARY TABLE' WHEN 'i' THEN 'TEMPORARY INDEX' WHEN 'S' THEN 'TEMPORARY SEQUENCE' WHEN 'v' THEN 'TEMPORARY VIEW' ELSE NULL END END
  WHEN false THEN CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'i' THEN 'INDEX' WHEN 'P' then 'PARTITIONED INDEX' WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'c' THEN 'TYPE' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END
  ELSE NULL END AS TABLE_TYPE,
 d.description AS REMARKS, '' as TYPE_CAT, '' as TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION
FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c
LEFT JOIN pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0 and d.classoid = 'pg_class'::regclass)
WHERE c.relnamespace = n.oid AND n.nspname LIKE 'public' AND c.relname LIKE '%'
 AND (false OR ( c.relkind IN ('r','p') AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' ) OR ( c.relkind = 'v' AND n.nspname <> 'pg_catalog' AND n.nspname <> 'information_schema' ))
ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME
