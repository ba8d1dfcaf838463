-- name: DBeaver on connect
-- expect: public, tabula
SELECT current_schema(),session_user

-- name: DBeaver reads the server version
-- expect: PostgreSQL
SELECT version()

-- name: DBeaver lists databases
-- params: schema_name
-- expect: tabula
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname <> $1 OR datname = current_database()

-- name: DBeaver lists schemas
-- expect: public, pg_catalog
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass
 ORDER BY nspname

-- name: DBeaver lists the tables of a schema
-- params: nsp
-- expect: devices
select c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description, case when c.relpartbound is not null then pg_get_expr(c.relpartbound, c.oid) end as partition_expr
from pg_catalog.pg_class c
left outer join pg_catalog.pg_class t on t.oid=c.reltoastrelid
left outer join pg_catalog.pg_class rt on rt.oid=c.reloftype
left outer join pg_catalog.pg_description d on d.objoid=c.oid and d.objsubid=0 and d.classoid='pg_class'::regclass
where c.relnamespace=$1 and c.relkind not in ('i','I','c')

-- name: DBeaver reads table sizes
-- params: nsp
-- expect: devices
select c.oid,c.relname,pg_catalog.pg_total_relation_size(c.oid) as total_rel_size,pg_catalog.pg_relation_size(c.oid) as rel_size
FROM pg_class c
WHERE c.relnamespace=$1

-- name: DBeaver reads a table's columns
-- params: table
-- expect: site, id, temp, active, true
select c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description
from pg_catalog.pg_attribute a
inner join pg_catalog.pg_class c on (a.attrelid=c.oid)
left outer join pg_catalog.pg_attrdef ad on (a.attrelid=ad.adrelid and a.attnum = ad.adnum)
left outer join pg_catalog.pg_description dsc on (c.oid=dsc.objoid and a.attnum = dsc.objsubid)
where a.attnum > 0 and not a.attisdropped and c.oid=$1
order by a.attnum

-- name: DBeaver reads a table's constraints
-- params: nsp, table
-- expect: devices_pkey, PRIMARY KEY (site, id)
select c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,pg_catalog.pg_get_constraintdef(c.oid) as condef
from pg_catalog.pg_constraint c
left join pg_catalog.pg_class t on c.conrelid=t.oid
left join pg_catalog.pg_class rt on c.confrelid=rt.oid
where t.relnamespace=$1 and c.conrelid=$2
order by c.oid

-- name: DBeaver reads a table's indexes
-- params: table
-- expect: devices_pkey, CREATE UNIQUE INDEX devices_pkey ON public.devices USING btree (site, id)
select i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,c.reltablespace,tc.relname as tabrelname,dsc.description,
pg_catalog.pg_get_expr(i.indpred, i.indrelid) as pred_expr,
pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr,
pg_catalog.pg_get_indexdef(i.indexrelid) as indexdef
from pg_catalog.pg_index i
inner join pg_catalog.pg_class c on c.oid=i.indexrelid
inner join pg_catalog.pg_class tc on tc.oid=i.indrelid
left outer join pg_catalog.pg_description dsc on i.indexrelid=dsc.objoid
where i.indrelid=$1
order by c.relname
