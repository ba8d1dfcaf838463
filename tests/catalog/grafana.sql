-- name: Grafana's data source health check
-- expect: 1
SELECT 1

-- name: Grafana checks for TimescaleDB
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'

-- name: Grafana reads the server version
-- expect: 15
SELECT current_setting('server_version_num')::int/100 AS version

-- name: Grafana lists tables in the search path (query builder)
-- expect: devices
SELECT quote_ident(table_name) AS "table" FROM information_schema.tables
WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental')
  AND table_type = 'BASE TABLE'
  AND quote_ident(table_schema) IN (
    SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
    FROM generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
  )

-- name: Grafana lists a table's columns (query builder)
-- params: table_name
-- expect: site, text, temp, double precision
SELECT quote_ident(column_name) AS "column", data_type AS "type"
FROM information_schema.columns
WHERE quote_ident(table_name) = $1

-- name: Grafana lists schemas
-- expect: public
SELECT DISTINCT quote_ident(table_schema) AS "schema" FROM information_schema.tables
WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog') ORDER BY 1
