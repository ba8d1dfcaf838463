//! The PostgreSQL catalog tools read, built from Tabula's live catalog.
//!
//! datafusion-pg-catalog supplies pg_catalog's static tables (pg_type, pg_proc, pg_am, ...), its
//! functions and its SQL rewrites. The relations that describe *Tabula's* tables are generated here on
//! every read, so they carry what the library cannot know: declared SQL types, NOT NULL, defaults,
//! identity columns, the primary key as index and constraint, row estimates and table options.
//! The same goes for `information_schema` and Tabula's own `tabula` schema.
//!
//! OIDs are stable: a Tabula table with internal id `n` is `20000 + 3n`, its primary-key index `+1` and
//! its constraint `+2`; other relations are numbered by name within their schema.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use datafusion::arrow::array::*;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{CatalogProviderList, SchemaProvider, Session as DfSession, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility};
use datafusion::physical_plan::ExecutionPlan;

use super::arrow::sql_type;
use super::provider::df_err;
use super::Source;
use crate::schema::TableSchema;
use crate::system::SystemView;
use crate::types::SqlType;

pub const CATALOG: &str = "tabula";
pub const PG_CATALOG_NSP: i32 = 11;
pub const PUBLIC_NSP: i32 = 2200;
pub const INFORMATION_SCHEMA_NSP: i32 = 13000;
pub const TABULA_NSP: i32 = 16384;
/// The bootstrap superuser's OID, owner of everything.
const OWNER: i32 = 10;
const BTREE_AM: i32 = 403;
const HEAP_AM: i32 = 2;
const DEFAULT_COLLATION: i32 = 100;
const DATABASE_OID: i32 = 16383;
const UTF8_ENCODING: i32 = 6;

fn namespace_oid(schema: &str) -> Option<i32> {
    Some(match schema {
        "pg_catalog" => PG_CATALOG_NSP,
        "public" => PUBLIC_NSP,
        "information_schema" => INFORMATION_SCHEMA_NSP,
        "tabula" => TABULA_NSP,
        _ => return None,
    })
}

fn table_oid(id: u32) -> i32 {
    20000 + 3 * id as i32
}

/// Which object of a Tabula table an OID names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OidPart {
    Table,
    PrimaryKeyIndex,
    PrimaryKeyConstraint,
}

/// The inverse of [`table_oid`]: the table's name and which of its objects the OID is.
fn tabula_object(db: &dyn Source, oid: i64) -> Option<(String, OidPart)> {
    let rel = oid.checked_sub(20000).filter(|r| *r >= 0)?;
    let id = u32::try_from(rel / 3).ok()?;
    let part = [OidPart::Table, OidPart::PrimaryKeyIndex, OidPart::PrimaryKeyConstraint][(rel % 3) as usize];
    let name = db.store().table_names().into_iter().find(|n| db.store().table_id(n).ok() == Some(id))?;
    Some((name, part))
}

/// A catalog column's kind.
#[derive(Clone, Copy)]
enum K {
    Oid,
    Text,
    Bool,
    I16,
    I32,
    I64,
    F32,
    Ts,
    I16s,
    Oids,
    Texts,
}

/// A catalog cell.
#[derive(Clone, Debug)]
enum Cell {
    Null,
    I(i64),
    F(f64),
    B(bool),
    S(String),
    Ints(Vec<i64>),
    Texts(Vec<String>),
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::S(s.to_string())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::S(s)
    }
}
impl From<i32> for Cell {
    fn from(v: i32) -> Self {
        Cell::I(v as i64)
    }
}
impl From<i64> for Cell {
    fn from(v: i64) -> Self {
        Cell::I(v)
    }
}
impl From<bool> for Cell {
    fn from(v: bool) -> Self {
        Cell::B(v)
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Self {
        v.map(Into::into).unwrap_or(Cell::Null)
    }
}

fn data_type(k: K) -> DataType {
    let list = |t: DataType| DataType::List(Arc::new(Field::new_list_field(t, true)));
    match k {
        K::Oid | K::I32 => DataType::Int32,
        K::Text => DataType::Utf8,
        K::Bool => DataType::Boolean,
        K::I16 => DataType::Int16,
        K::I64 => DataType::Int64,
        K::F32 => DataType::Float32,
        K::Ts => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        K::I16s => list(DataType::Int16),
        K::Oids => list(DataType::Int32),
        K::Texts => list(DataType::Utf8),
    }
}

fn schema_of(cols: &[(&str, K)]) -> SchemaRef {
    Arc::new(Schema::new(cols.iter().map(|(n, k)| Field::new(*n, data_type(*k), true)).collect::<Vec<_>>()))
}

fn build_batch(schema: &SchemaRef, rows: &[Vec<Cell>]) -> DfResult<RecordBatch> {
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (i, f) in schema.fields().iter().enumerate() {
        let cells = rows.iter().map(|r| &r[i]);
        let int = |c: &Cell| match c {
            Cell::I(v) => Some(*v),
            _ => None,
        };
        let a: ArrayRef = match f.data_type() {
            DataType::Int16 => Arc::new(cells.map(|c| int(c).map(|v| v as i16)).collect::<Int16Array>()),
            DataType::Int32 => Arc::new(cells.map(|c| int(c).map(|v| v as i32)).collect::<Int32Array>()),
            DataType::Int64 => Arc::new(cells.map(int).collect::<Int64Array>()),
            DataType::Float32 => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::F(v) => Some(*v as f32),
                        _ => None,
                    })
                    .collect::<Float32Array>(),
            ),
            DataType::Boolean => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::B(v) => Some(*v),
                        _ => None,
                    })
                    .collect::<BooleanArray>(),
            ),
            DataType::Utf8 => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::S(v) => Some(v.as_str()),
                        _ => None,
                    })
                    .collect::<StringArray>(),
            ),
            DataType::Timestamp(..) => Arc::new(cells.map(int).collect::<TimestampMicrosecondArray>().with_timezone("UTC")),
            DataType::List(inner) => match inner.data_type() {
                DataType::Int16 => {
                    let mut b = ListBuilder::new(Int16Builder::new());
                    for c in cells {
                        match c {
                            Cell::Ints(v) => b.append_value(v.iter().map(|x| Some(*x as i16))),
                            _ => b.append_null(),
                        }
                    }
                    Arc::new(b.finish())
                }
                DataType::Int32 => {
                    let mut b = ListBuilder::new(Int32Builder::new());
                    for c in cells {
                        match c {
                            Cell::Ints(v) => b.append_value(v.iter().map(|x| Some(*x as i32))),
                            _ => b.append_null(),
                        }
                    }
                    Arc::new(b.finish())
                }
                _ => {
                    let mut b = ListBuilder::new(StringBuilder::new());
                    for c in cells {
                        match c {
                            Cell::Texts(v) => b.append_value(v.iter().map(Some)),
                            _ => b.append_null(),
                        }
                    }
                    Arc::new(b.finish())
                }
            },
            other => return Err(DataFusionError::Internal(format!("catalog column of type {other}"))),
        };
        arrays.push(a);
    }
    // The list fields of the built arrays are named "item", as in the schema.
    Ok(RecordBatch::try_new(schema.clone(), arrays)?)
}

/// A relation as the catalog describes it.
struct Rel {
    schema: String,
    name: String,
    oid: i32,
    kind: &'static str,
    /// (name, type OID, not null)
    columns: Vec<(String, SqlType, bool)>,
    tabula: Option<(Arc<TableSchema>, u32)>,
}

/// Everything the catalog tables are generated from, read once per scan.
struct Snapshot {
    rels: Vec<Rel>,
    db: Arc<dyn Source>,
    /// The reading session's settings (pg_settings shows them).
    settings: crate::settings::Settings,
    /// The reading role when it is no superuser: information_schema shows it only the tables it may use,
    /// as PostgreSQL's does (pg_class shows every table to everybody).
    viewer: Option<String>,
}

impl Snapshot {
    /// Reads every relation's description when `relations`; else only what needs no enumeration.
    async fn take(
        db: &Arc<dyn Source>,
        list: &Arc<dyn CatalogProviderList>,
        relations: bool,
        settings: crate::settings::Settings,
        viewer: Option<String>,
    ) -> DfResult<Snapshot> {
        let mut rels = Vec::new();
        let catalog = list.catalog(CATALOG).filter(|_| relations);
        let Some(catalog) = catalog else { return Ok(Snapshot { rels, db: db.clone(), settings, viewer }) };
        let mut schemas = catalog.schema_names();
        schemas.sort();
        for s in schemas {
            if namespace_oid(&s).is_none() {
                continue;
            }
            let Some(provider) = catalog.schema(&s) else { continue };
            let mut names = provider.table_names();
            names.sort();
            for (i, name) in names.into_iter().enumerate() {
                if s == "public" {
                    let t = db.table(&name).map_err(df_err)?;
                    let id = db.store().table_id(&name).map_err(|e| df_err(e.into()))?;
                    let columns = t.columns.iter().enumerate().map(|(i, c)| (c.name.clone(), c.ty, c.not_null || t.is_pk(i))).collect();
                    rels.push(Rel { schema: s.clone(), name, oid: table_oid(id), kind: "r", columns, tabula: Some((t, id)) });
                    continue;
                }
                let Some(table) = provider.table(&name).await? else { continue };
                let columns = table.schema().fields().iter().map(|f| (f.name().clone(), sql_type(f), !f.is_nullable())).collect();
                let kind = if s == "pg_catalog"
                    && !name.starts_with("pg_stat")
                    && !matches!(name.as_str(), "pg_tables" | "pg_views" | "pg_roles" | "pg_settings" | "pg_matviews")
                {
                    "r"
                } else {
                    "v"
                };
                // Numbered by name within the schema: the same on every start of the same build.
                let base = match s.as_str() {
                    "pg_catalog" => 1000,
                    "information_schema" => 13100,
                    _ => 16400,
                };
                let oid = base + i as i32;
                rels.push(Rel { schema: s.clone(), name, oid, kind, columns, tabula: None });
            }
        }
        Ok(Snapshot { rels, db: db.clone(), settings, viewer })
    }

    /// Whether the reader may see a relation in information_schema: it holds some privilege on it (other
    /// than SELECT: `table_constraints`).
    fn sees(&self, r: &Rel, beyond_select: bool) -> bool {
        let (Some(viewer), Some((t, _))) = (&self.viewer, &r.tabula) else { return true };
        let acl = t.acl.clone().unwrap_or_else(|| crate::roles::Acl::owner_default(&t.owner));
        crate::roles::Privilege::ALL
            .into_iter()
            .filter(|p| !beyond_select || *p != crate::roles::Privilege::Select)
            .any(|p| acl.allows(viewer, p))
    }

    fn tabula(&self) -> impl Iterator<Item = (&Rel, &Arc<TableSchema>, u32)> {
        self.rels.iter().filter_map(|r| r.tabula.as_ref().map(|(t, id)| (r, t, *id)))
    }
}

fn type_len(ty: SqlType) -> i64 {
    use SqlType::*;
    match ty {
        Bool => 1,
        Int2 => 2,
        Int4 | Float4 | Date => 4,
        Int8 | Float8 | Timestamp | Timestamptz => 8,
        Uuid => 16,
        _ => -1,
    }
}

fn collation(ty: SqlType) -> i32 {
    if matches!(ty, SqlType::Text | SqlType::Varchar) {
        DEFAULT_COLLATION
    } else {
        0
    }
}

fn pk_attnums(t: &TableSchema) -> Vec<i64> {
    t.pk.iter().map(|&i| i as i64 + 1).collect()
}

/// One generated catalog relation.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Generated {
    PgClass,
    PgAttribute,
    PgNamespace,
    PgIndex,
    PgConstraint,
    PgAttrdef,
    PgStatUserTables,
    PgDatabase,
    PgRoles,
    PgSettings,
    /// A pg_catalog relation that is always empty in Tabula (policies, publications, ...), with
    /// PostgreSQL's column types so queries joining it plan.
    Empty(&'static str),
    Schemata,
    Tables,
    Columns,
    KeyColumnUsage,
    TableConstraints,
    Views,
    ReferentialConstraints,
    System(SystemView),
}

impl Generated {
    fn columns(self) -> Vec<(&'static str, K)> {
        use K::*;
        match self {
            Generated::PgClass => vec![
                ("oid", Oid),
                ("relname", Text),
                ("relnamespace", Oid),
                ("reltype", Oid),
                ("reloftype", Oid),
                ("relowner", Oid),
                ("relam", Oid),
                ("relfilenode", Oid),
                ("reltablespace", Oid),
                ("relpages", I32),
                ("reltuples", F32),
                ("relallvisible", I32),
                ("reltoastrelid", Oid),
                ("relhasindex", Bool),
                ("relisshared", Bool),
                ("relpersistence", Text),
                ("relkind", Text),
                ("relnatts", I16),
                ("relchecks", I16),
                ("relhasrules", Bool),
                ("relhastriggers", Bool),
                ("relhassubclass", Bool),
                ("relrowsecurity", Bool),
                ("relforcerowsecurity", Bool),
                ("relispopulated", Bool),
                ("relreplident", Text),
                ("relispartition", Bool),
                ("relrewrite", Oid),
                ("relfrozenxid", I32),
                ("relminmxid", I32),
                ("relacl", Texts),
                ("reloptions", Texts),
                ("relpartbound", Text),
            ],
            Generated::PgAttribute => vec![
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
            ],
            Generated::PgNamespace => vec![("oid", Oid), ("nspname", Text), ("nspowner", Oid), ("nspacl", Texts)],
            Generated::PgIndex => vec![
                ("indexrelid", Oid),
                ("indrelid", Oid),
                ("indnatts", I16),
                ("indnkeyatts", I16),
                ("indisunique", Bool),
                ("indnullsnotdistinct", Bool),
                ("indisprimary", Bool),
                ("indisexclusion", Bool),
                ("indimmediate", Bool),
                ("indisclustered", Bool),
                ("indisvalid", Bool),
                ("indcheckxmin", Bool),
                ("indisready", Bool),
                ("indislive", Bool),
                ("indisreplident", Bool),
                ("indkey", I16s),
                ("indcollation", Oids),
                ("indclass", Oids),
                ("indoption", I16s),
                ("indexprs", Text),
                ("indpred", Text),
            ],
            Generated::PgConstraint => vec![
                ("oid", Oid),
                ("conname", Text),
                ("connamespace", Oid),
                ("contype", Text),
                ("condeferrable", Bool),
                ("condeferred", Bool),
                ("convalidated", Bool),
                ("conrelid", Oid),
                ("contypid", Oid),
                ("conindid", Oid),
                ("conparentid", Oid),
                ("confrelid", Oid),
                ("confupdtype", Text),
                ("confdeltype", Text),
                ("confmatchtype", Text),
                ("conislocal", Bool),
                ("coninhcount", I32),
                ("connoinherit", Bool),
                ("conkey", I16s),
                ("confkey", I16s),
                ("conpfeqop", Oids),
                ("conppeqop", Oids),
                ("conffeqop", Oids),
                ("confdelsetcols", I16s),
                ("conexclop", Oids),
                ("conbin", Text),
            ],
            Generated::PgAttrdef => vec![("oid", Oid), ("adrelid", Oid), ("adnum", I16), ("adbin", Text)],
            Generated::PgRoles => vec![
                ("rolname", Text),
                ("rolsuper", Bool),
                ("rolinherit", Bool),
                ("rolcreaterole", Bool),
                ("rolcreatedb", Bool),
                ("rolcanlogin", Bool),
                ("rolreplication", Bool),
                ("rolconnlimit", I32),
                ("rolpassword", Text),
                ("rolvaliduntil", Ts),
                ("rolbypassrls", Bool),
                ("rolconfig", Texts),
                ("oid", Oid),
            ],
            Generated::PgSettings => vec![
                ("name", Text),
                ("setting", Text),
                ("unit", Text),
                ("category", Text),
                ("short_desc", Text),
                ("extra_desc", Text),
                ("context", Text),
                ("vartype", Text),
                ("source", Text),
                ("min_val", Text),
                ("max_val", Text),
                ("enumvals", Texts),
                ("boot_val", Text),
                ("reset_val", Text),
                ("sourcefile", Text),
                ("sourceline", I32),
                ("pending_restart", Bool),
            ],
            Generated::Empty(name) => match name {
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
            },
            Generated::PgDatabase => vec![
                ("oid", Oid),
                ("datname", Text),
                ("datdba", Oid),
                ("encoding", I32),
                ("datlocprovider", Text),
                ("datistemplate", Bool),
                ("datallowconn", Bool),
                ("datconnlimit", I32),
                ("datfrozenxid", I32),
                ("datminmxid", I32),
                ("dattablespace", Oid),
                ("datcollate", Text),
                ("datctype", Text),
                ("daticulocale", Text),
                ("datcollversion", Text),
                ("datacl", Texts),
            ],
            Generated::PgStatUserTables => vec![
                ("relid", Oid),
                ("schemaname", Text),
                ("relname", Text),
                ("seq_scan", I64),
                ("seq_tup_read", I64),
                ("idx_scan", I64),
                ("idx_tup_fetch", I64),
                ("n_tup_ins", I64),
                ("n_tup_upd", I64),
                ("n_tup_del", I64),
                ("n_tup_hot_upd", I64),
                ("n_live_tup", I64),
                ("n_dead_tup", I64),
                ("n_mod_since_analyze", I64),
                ("n_ins_since_vacuum", I64),
                ("last_vacuum", Ts),
                ("last_autovacuum", Ts),
                ("last_analyze", Ts),
                ("last_autoanalyze", Ts),
                ("vacuum_count", I64),
                ("autovacuum_count", I64),
                ("analyze_count", I64),
                ("autoanalyze_count", I64),
            ],
            Generated::Schemata => vec![
                ("catalog_name", Text),
                ("schema_name", Text),
                ("schema_owner", Text),
                ("default_character_set_catalog", Text),
                ("default_character_set_schema", Text),
                ("default_character_set_name", Text),
                ("sql_path", Text),
            ],
            Generated::Tables => vec![
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("table_type", Text),
                ("self_referencing_column_name", Text),
                ("reference_generation", Text),
                ("user_defined_type_catalog", Text),
                ("user_defined_type_schema", Text),
                ("user_defined_type_name", Text),
                ("is_insertable_into", Text),
                ("is_typed", Text),
                ("commit_action", Text),
            ],
            Generated::Columns => vec![
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("column_name", Text),
                ("ordinal_position", I32),
                ("column_default", Text),
                ("is_nullable", Text),
                ("data_type", Text),
                ("character_maximum_length", I32),
                ("character_octet_length", I32),
                ("numeric_precision", I32),
                ("numeric_precision_radix", I32),
                ("numeric_scale", I32),
                ("datetime_precision", I32),
                ("interval_type", Text),
                ("interval_precision", I32),
                ("character_set_catalog", Text),
                ("character_set_schema", Text),
                ("character_set_name", Text),
                ("collation_catalog", Text),
                ("collation_schema", Text),
                ("collation_name", Text),
                ("domain_catalog", Text),
                ("domain_schema", Text),
                ("domain_name", Text),
                ("udt_catalog", Text),
                ("udt_schema", Text),
                ("udt_name", Text),
                ("scope_catalog", Text),
                ("scope_schema", Text),
                ("scope_name", Text),
                ("maximum_cardinality", I32),
                ("dtd_identifier", Text),
                ("is_self_referencing", Text),
                ("is_identity", Text),
                ("identity_generation", Text),
                ("identity_start", Text),
                ("identity_increment", Text),
                ("identity_maximum", Text),
                ("identity_minimum", Text),
                ("identity_cycle", Text),
                ("is_generated", Text),
                ("generation_expression", Text),
                ("is_updatable", Text),
            ],
            Generated::KeyColumnUsage => vec![
                ("constraint_catalog", Text),
                ("constraint_schema", Text),
                ("constraint_name", Text),
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("column_name", Text),
                ("ordinal_position", I32),
                ("position_in_unique_constraint", I32),
            ],
            Generated::TableConstraints => vec![
                ("constraint_catalog", Text),
                ("constraint_schema", Text),
                ("constraint_name", Text),
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("constraint_type", Text),
                ("is_deferrable", Text),
                ("initially_deferred", Text),
                ("enforced", Text),
                ("nulls_distinct", Text),
            ],
            Generated::Views => vec![
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("view_definition", Text),
                ("check_option", Text),
                ("is_updatable", Text),
                ("is_insertable_into", Text),
                ("is_trigger_updatable", Text),
                ("is_trigger_deletable", Text),
                ("is_trigger_insertable_into", Text),
            ],
            Generated::ReferentialConstraints => vec![
                ("constraint_catalog", Text),
                ("constraint_schema", Text),
                ("constraint_name", Text),
                ("unique_constraint_catalog", Text),
                ("unique_constraint_schema", Text),
                ("unique_constraint_name", Text),
                ("match_option", Text),
                ("update_rule", Text),
                ("delete_rule", Text),
            ],
            Generated::System(_) => unreachable!("system views have their own schema"),
        }
    }

    /// Whether its rows describe relations (and so need every schema's tables enumerated).
    fn reads_relations(self) -> bool {
        !matches!(
            self,
            Generated::PgNamespace
                | Generated::PgDatabase
                | Generated::PgRoles
                | Generated::PgSettings
                | Generated::Empty(_)
                | Generated::Schemata
                | Generated::Views
                | Generated::ReferentialConstraints
                | Generated::System(_)
        )
    }

    fn schema(self) -> SchemaRef {
        match self {
            Generated::System(v) => {
                let t = v.schema();
                Arc::new(Schema::new(t.columns.iter().map(|c| super::arrow::field(&c.name, c.ty, true)).collect::<Vec<_>>()))
            }
            other => schema_of(&other.columns()),
        }
    }

    fn rows(self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        match self {
            Generated::PgClass => {
                for r in &s.rels {
                    let nsp = namespace_oid(&r.schema).unwrap_or(PUBLIC_NSP);
                    let (rows, options) = match &r.tabula {
                        Some((t, _)) => {
                            let rows: i64 =
                                s.db.store().partitions(&t.name).map(|p| p.iter().map(|p| p.approx_rows.max(0)).sum()).unwrap_or(0);
                            (rows as f64, Cell::Texts(crate::options::reloptions(&t.options)))
                        }
                        None => (-1.0, Cell::Null),
                    };
                    let has_index = r.tabula.is_some();
                    let owned = || match &r.tabula {
                        Some((t, _)) => {
                            let owner = s.db.roles().get(&t.owner).map_or(OWNER, |o| o.oid as i32);
                            (owner, t.acl.as_ref().map_or(Cell::Null, |a| Cell::Texts(a.items(&t.owner))))
                        }
                        None => (OWNER, Cell::Null),
                    };
                    out.push(pg_class_row(r.oid, &r.name, nsp, HEAP_AM, rows, has_index, r.kind, r.columns.len() as i64, options, owned()));
                    if let Some((t, _)) = &r.tabula {
                        out.push(pg_class_row(
                            r.oid + 1,
                            &format!("{}_pkey", t.name),
                            nsp,
                            BTREE_AM,
                            rows,
                            false,
                            "i",
                            t.pk.len() as i64,
                            Cell::Null,
                            (owned().0, Cell::Null),
                        ));
                    }
                }
            }
            Generated::PgAttribute => {
                for r in &s.rels {
                    for (i, (name, ty, not_null)) in r.columns.iter().enumerate() {
                        let (has_def, identity) = match &r.tabula {
                            Some((t, _)) => (t.columns[i].default.is_some(), identity_kind(&t.columns[i])),
                            None => (false, ""),
                        };
                        out.push(pg_attribute_row(r.oid, name, *ty, i as i64 + 1, *not_null, has_def, identity));
                    }
                    if let Some((t, _)) = &r.tabula {
                        for (k, &c) in t.pk.iter().enumerate() {
                            let col = &t.columns[c];
                            out.push(pg_attribute_row(r.oid + 1, &col.name, col.ty, k as i64 + 1, false, false, ""));
                        }
                    }
                }
            }
            Generated::PgNamespace => {
                for (name, oid) in [
                    ("pg_catalog", PG_CATALOG_NSP),
                    ("public", PUBLIC_NSP),
                    ("information_schema", INFORMATION_SCHEMA_NSP),
                    ("tabula", TABULA_NSP),
                ] {
                    out.push(vec![oid.into(), name.into(), OWNER.into(), Cell::Null]);
                }
            }
            Generated::PgIndex => {
                for (r, t, _) in s.tabula() {
                    let n = t.pk.len() as i64;
                    let collations = t.pk.iter().map(|&c| collation(t.columns[c].ty) as i64).collect();
                    out.push(vec![
                        (r.oid + 1).into(),
                        r.oid.into(),
                        n.into(),
                        n.into(),
                        true.into(),
                        false.into(),
                        true.into(),
                        false.into(),
                        true.into(),
                        false.into(),
                        true.into(),
                        false.into(),
                        true.into(),
                        true.into(),
                        false.into(),
                        Cell::Ints(pk_attnums(t)),
                        Cell::Ints(collations),
                        Cell::Ints(vec![0; n as usize]),
                        Cell::Ints(vec![0; n as usize]),
                        Cell::Null,
                        Cell::Null,
                    ]);
                }
            }
            Generated::PgConstraint => {
                for (r, t, _) in s.tabula() {
                    out.push(vec![
                        (r.oid + 2).into(),
                        format!("{}_pkey", t.name).into(),
                        PUBLIC_NSP.into(),
                        "p".into(),
                        false.into(),
                        false.into(),
                        true.into(),
                        r.oid.into(),
                        0.into(),
                        (r.oid + 1).into(),
                        0.into(),
                        0.into(),
                        " ".into(),
                        " ".into(),
                        " ".into(),
                        true.into(),
                        0.into(),
                        true.into(),
                        Cell::Ints(pk_attnums(t)),
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                    ]);
                }
            }
            Generated::PgAttrdef => {
                for (r, t, _) in s.tabula() {
                    for (i, c) in t.columns.iter().enumerate() {
                        if let Some(d) = &c.default {
                            out.push(vec![(r.oid + 2 + 1000000 + i as i32).into(), r.oid.into(), (i as i32 + 1).into(), d.clone().into()]);
                        }
                    }
                }
            }
            Generated::PgDatabase => {
                // One database: every connection reaches the same tables, whatever name it asks for.
                out.push(vec![
                    DATABASE_OID.into(),
                    CATALOG.into(),
                    OWNER.into(),
                    UTF8_ENCODING.into(),
                    "c".into(),
                    false.into(),
                    true.into(),
                    (-1).into(),
                    0.into(),
                    1.into(),
                    1663.into(),
                    "C.UTF-8".into(),
                    "C.UTF-8".into(),
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                ]);
            }
            Generated::PgRoles => {
                for r in s.db.roles().all() {
                    out.push(vec![
                        r.name.into(),
                        r.superuser.into(),
                        true.into(),
                        r.superuser.into(),
                        r.superuser.into(),
                        r.login.into(),
                        false.into(),
                        (-1).into(),
                        "********".into(),
                        Cell::Null,
                        r.superuser.into(),
                        Cell::Null,
                        (r.oid as i32).into(),
                    ]);
                }
            }
            Generated::PgSettings => {
                for (name, value) in s.settings.iter() {
                    let boolean = matches!(value.as_str(), "on" | "off");
                    out.push(vec![
                        crate::settings::display_setting_name(name).into(),
                        value.clone().into(),
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        "user".into(),
                        if boolean { "bool" } else { "string" }.into(),
                        "default".into(),
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        value.clone().into(),
                        value.clone().into(),
                        Cell::Null,
                        Cell::Null,
                        false.into(),
                    ]);
                }
            }
            Generated::PgStatUserTables => {
                for (r, t, _) in s.tabula() {
                    let parts = s.db.store().partitions(&t.name).unwrap_or_default();
                    let rows: i64 = parts.iter().map(|p| p.approx_rows.max(0)).sum();
                    let reads: u64 = parts.iter().map(|p| p.reads).sum();
                    let writes: u64 = parts.iter().map(|p| p.writes).sum();
                    let mut row: Vec<Cell> = vec![r.oid.into(), "public".into(), t.name.clone().into()];
                    row.extend([0i64, 0, reads as i64, reads as i64, writes as i64, 0, 0, 0, rows, 0, 0, 0].map(Cell::from));
                    row.extend([Cell::Null, Cell::Null, Cell::Null, Cell::Null]);
                    row.extend([0i64, 0, 0, 0].map(Cell::from));
                    out.push(row);
                }
            }
            Generated::Schemata => {
                for name in ["information_schema", "pg_catalog", "public", "tabula"] {
                    out.push(vec![CATALOG.into(), name.into(), "tabula".into(), Cell::Null, Cell::Null, Cell::Null, Cell::Null]);
                }
            }
            Generated::Tables => {
                for r in s.rels.iter().filter(|r| s.sees(r, false)) {
                    let base = r.kind == "r";
                    out.push(vec![
                        CATALOG.into(),
                        r.schema.clone().into(),
                        r.name.clone().into(),
                        if base { "BASE TABLE" } else { "VIEW" }.into(),
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        if r.tabula.is_some() { "YES" } else { "NO" }.into(),
                        "NO".into(),
                        Cell::Null,
                    ]);
                }
            }
            Generated::Columns => {
                for r in s.rels.iter().filter(|r| s.sees(r, false)) {
                    for (i, (name, ty, not_null)) in r.columns.iter().enumerate() {
                        let col = r.tabula.as_ref().map(|(t, _)| &t.columns[i]);
                        let identity = col.is_some_and(|c| c.identity);
                        let generation = col.filter(|c| c.identity).map(|c| if c.always { "ALWAYS" } else { "BY DEFAULT" });
                        let (precision, radix, scale) = match ty {
                            SqlType::Int2 => (Some(16), Some(2), Some(0)),
                            SqlType::Int4 => (Some(32), Some(2), Some(0)),
                            SqlType::Int8 => (Some(64), Some(2), Some(0)),
                            SqlType::Float4 => (Some(24), Some(2), None),
                            SqlType::Float8 => (Some(53), Some(2), None),
                            SqlType::Numeric => (None, Some(10), None),
                            _ => (None, None, None),
                        };
                        let dt_precision =
                            matches!(ty, SqlType::Timestamp | SqlType::Timestamptz)
                                .then_some(6)
                                .or(matches!(ty, SqlType::Date).then_some(0));
                        let mut row: Vec<Cell> = vec![
                            CATALOG.into(),
                            r.schema.clone().into(),
                            r.name.clone().into(),
                            name.clone().into(),
                            (i as i32 + 1).into(),
                            col.and_then(|c| c.default.clone()).into(),
                            if *not_null { "NO" } else { "YES" }.into(),
                            ty.pg_name().into(),
                            Cell::Null,
                            if ty.is_text() { Some(1073741824) } else { None }.into(),
                            precision.into(),
                            radix.into(),
                            scale.into(),
                            dt_precision.into(),
                            Cell::Null,
                            Cell::Null,
                        ];
                        row.extend([
                            Cell::Null,
                            Cell::Null,
                            Cell::Null,
                            Cell::Null,
                            Cell::Null,
                            Cell::Null,
                            Cell::Null,
                            Cell::Null,
                            Cell::Null,
                        ]);
                        row.extend([CATALOG.into(), "pg_catalog".into(), udt_name(*ty).into()]);
                        row.extend([Cell::Null, Cell::Null, Cell::Null, Cell::Null]);
                        row.push((i as i32 + 1).to_string().into());
                        row.push("NO".into());
                        row.push(if identity { "YES" } else { "NO" }.into());
                        row.push(generation.into());
                        row.extend([Cell::Null, Cell::Null, Cell::Null, Cell::Null]);
                        row.push(if identity { Some("NO") } else { None }.into());
                        row.push("NEVER".into());
                        row.push(Cell::Null);
                        row.push(if r.tabula.is_some() { "YES" } else { "NO" }.into());
                        out.push(row);
                    }
                }
            }
            Generated::KeyColumnUsage => {
                for (_, t, _) in s.tabula().filter(|(r, _, _)| s.sees(r, false)) {
                    for (k, &c) in t.pk.iter().enumerate() {
                        out.push(vec![
                            CATALOG.into(),
                            "public".into(),
                            format!("{}_pkey", t.name).into(),
                            CATALOG.into(),
                            "public".into(),
                            t.name.clone().into(),
                            t.columns[c].name.clone().into(),
                            (k as i32 + 1).into(),
                            Cell::Null,
                        ]);
                    }
                }
            }
            Generated::TableConstraints => {
                for (_, t, _) in s.tabula().filter(|(r, _, _)| s.sees(r, true)) {
                    out.push(vec![
                        CATALOG.into(),
                        "public".into(),
                        format!("{}_pkey", t.name).into(),
                        CATALOG.into(),
                        "public".into(),
                        t.name.clone().into(),
                        "PRIMARY KEY".into(),
                        "NO".into(),
                        "NO".into(),
                        "YES".into(),
                        "YES".into(),
                    ]);
                }
            }
            Generated::Views | Generated::ReferentialConstraints | Generated::Empty(_) => {}
            Generated::System(_) => unreachable!("system views build their own rows"),
        }
        Ok(out)
    }
}

fn udt_name(ty: SqlType) -> &'static str {
    use SqlType::*;
    match ty {
        Bool => "bool",
        Int2 => "int2",
        Int4 => "int4",
        Int8 => "int8",
        Float4 => "float4",
        Float8 => "float8",
        Numeric => "numeric",
        Text | Unknown => "text",
        Varchar => "varchar",
        Bytea => "bytea",
        Timestamp => "timestamp",
        Timestamptz => "timestamptz",
        Date => "date",
        Json => "json",
        Jsonb => "jsonb",
        Uuid => "uuid",
        TextArray => "_text",
    }
}

/// A table's owner's OID and its access control list (`relacl`), as pg_class has them.
type Ownership = (i32, Cell);

#[allow(clippy::too_many_arguments)]
fn pg_class_row(
    oid: i32,
    name: &str,
    nsp: i32,
    am: i32,
    rows: f64,
    has_index: bool,
    kind: &str,
    natts: i64,
    options: Cell,
    owned: Ownership,
) -> Vec<Cell> {
    let (owner, acl) = owned;
    let am = if kind == "v" { 0 } else { am };
    vec![
        oid.into(),
        name.into(),
        nsp.into(),
        0.into(),
        0.into(),
        owner.into(),
        am.into(),
        oid.into(),
        0.into(),
        ((rows.max(0.0) / 100.0).ceil() as i32).into(),
        Cell::F(rows),
        0.into(),
        0.into(),
        has_index.into(),
        false.into(),
        "p".into(),
        kind.into(),
        natts.into(),
        0.into(),
        false.into(),
        false.into(),
        false.into(),
        false.into(),
        false.into(),
        true.into(),
        if kind == "r" { "d" } else { "n" }.into(),
        false.into(),
        0.into(),
        0.into(),
        0.into(),
        acl,
        options,
        Cell::Null,
    ]
}

fn pg_attribute_row(rel: i32, name: &str, ty: SqlType, num: i64, not_null: bool, has_def: bool, identity: &str) -> Vec<Cell> {
    let len = type_len(ty);
    vec![
        rel.into(),
        name.into(),
        (ty.oid() as i32).into(),
        (-1).into(),
        len.into(),
        num.into(),
        0.into(),
        (-1).into(),
        (-1).into(),
        (len > 0 && len <= 8).into(),
        if len == 8 {
            "d"
        } else if len == 2 {
            "s"
        } else if len == 1 || len == 16 {
            "c"
        } else {
            "i"
        }
        .into(),
        if len > 0 { "p" } else { "x" }.into(),
        "".into(),
        not_null.into(),
        has_def.into(),
        false.into(),
        identity.into(),
        "".into(),
        false.into(),
        true.into(),
        0.into(),
        collation(ty).into(),
        Cell::Null,
        Cell::Null,
        Cell::Null,
        Cell::Null,
    ]
}

/// A catalog relation generated on each scan.
pub struct GeneratedTable {
    which: Generated,
    schema: SchemaRef,
    db: Weak<dyn Source>,
    list: Weak<dyn CatalogProviderList>,
}

impl fmt::Debug for GeneratedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GeneratedTable({:?})", self.which)
    }
}

impl GeneratedTable {
    fn new(which: Generated, db: Weak<dyn Source>, list: Weak<dyn CatalogProviderList>) -> Self {
        GeneratedTable { which, schema: which.schema(), db, list }
    }

    async fn batch(&self, settings: crate::settings::Settings, viewer: Option<String>) -> DfResult<RecordBatch> {
        let db = self.db.upgrade().ok_or_else(|| DataFusionError::Execution("the database is shut down".into()))?;
        if let Generated::System(v) = self.which {
            let mut rows = v.rows(db.store()).map_err(df_err)?;
            let n = self.schema.fields().len();
            rows.iter_mut().for_each(|r| r.truncate(n));
            return super::arrow::rows_to_batch(&self.schema, &rows).map_err(df_err);
        }
        let list = self.list.upgrade().ok_or_else(|| DataFusionError::Execution("the catalog is gone".into()))?;
        let snapshot = Snapshot::take(&db, &list, self.which.reads_relations(), settings, viewer).await?;
        build_batch(&self.schema, &self.which.rows(&snapshot)?)
    }
}

#[async_trait]
impl TableProvider for GeneratedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        _filters: &[datafusion::logical_expr::Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let read = state.config().get_extension::<super::provider::ReadCtx>();
        let settings = read.as_ref().map(|r| r.settings.clone()).unwrap_or_default();
        let viewer = read.map(|r| r.user.clone()).filter(|u| self.db.upgrade().is_some_and(|db| db.roles().is_superuser(u) == Some(false)));
        let batch = self.batch(settings, viewer).await?;
        Ok(MemorySourceConfig::try_new_exec(&[vec![batch]], self.schema.clone(), projection.cloned())?)
    }
}

/// pg_catalog: the library's provider, with the relations about Tabula's tables generated here.
#[derive(Debug)]
pub struct PgCatalogSchema {
    pub inner: Arc<dyn SchemaProvider>,
    pub db: Weak<dyn Source>,
    pub list: Weak<dyn CatalogProviderList>,
}

fn pg_catalog_generated(name: &str) -> Option<Generated> {
    Some(match name {
        "pg_class" => Generated::PgClass,
        "pg_attribute" => Generated::PgAttribute,
        "pg_namespace" => Generated::PgNamespace,
        "pg_index" => Generated::PgIndex,
        "pg_constraint" => Generated::PgConstraint,
        "pg_attrdef" => Generated::PgAttrdef,
        "pg_database" => Generated::PgDatabase,
        "pg_roles" => Generated::PgRoles,
        "pg_settings" => Generated::PgSettings,
        "pg_policy" => Generated::Empty("pg_policy"),
        "pg_statistic_ext" => Generated::Empty("pg_statistic_ext"),
        "pg_publication" => Generated::Empty("pg_publication"),
        "pg_publication_rel" => Generated::Empty("pg_publication_rel"),
        "pg_publication_namespace" => Generated::Empty("pg_publication_namespace"),
        "pg_inherits" => Generated::Empty("pg_inherits"),
        "pg_trigger" => Generated::Empty("pg_trigger"),
        // Identity columns use the engine's auto-increment, not sequences.
        "pg_sequence" => Generated::Empty("pg_sequence"),
        "pg_stat_user_tables" | "pg_stat_all_tables" => Generated::PgStatUserTables,
        _ => return None,
    })
}

#[async_trait]
impl SchemaProvider for PgCatalogSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.inner.table_names();
        if !names.iter().any(|n| n == "pg_stat_all_tables") {
            names.push("pg_stat_all_tables".into());
        }
        names
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        match pg_catalog_generated(&name.to_ascii_lowercase()) {
            Some(g) => Ok(Some(Arc::new(GeneratedTable::new(g, self.db.clone(), self.list.clone())))),
            None => self.inner.table(name).await,
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        pg_catalog_generated(&name.to_ascii_lowercase()).is_some() || self.inner.table_exist(name)
    }
}

/// A schema whose relations are all generated: information_schema and tabula.
#[derive(Debug)]
pub struct GeneratedSchema {
    tables: BTreeMap<&'static str, Generated>,
    pub db: Weak<dyn Source>,
    pub list: Weak<dyn CatalogProviderList>,
}

impl GeneratedSchema {
    pub fn information_schema(db: Weak<dyn Source>, list: Weak<dyn CatalogProviderList>) -> Self {
        let tables = BTreeMap::from([
            ("schemata", Generated::Schemata),
            ("tables", Generated::Tables),
            ("columns", Generated::Columns),
            ("key_column_usage", Generated::KeyColumnUsage),
            ("table_constraints", Generated::TableConstraints),
            ("views", Generated::Views),
            ("referential_constraints", Generated::ReferentialConstraints),
        ]);
        GeneratedSchema { tables, db, list }
    }

    pub fn tabula(db: Weak<dyn Source>, list: Weak<dyn CatalogProviderList>) -> Self {
        let tables =
            BTreeMap::from([("tables", Generated::System(SystemView::Tables)), ("partitions", Generated::System(SystemView::Partitions))]);
        GeneratedSchema { tables, db, list }
    }
}

#[async_trait]
impl SchemaProvider for GeneratedSchema {
    fn table_names(&self) -> Vec<String> {
        self.tables.keys().map(|k| k.to_string()).collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        Ok(self
            .tables
            .get(name.to_ascii_lowercase().as_str())
            .map(|g| Arc::new(GeneratedTable::new(*g, self.db.clone(), self.list.clone())) as Arc<dyn TableProvider>))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.tables.contains_key(name.to_ascii_lowercase().as_str())
    }
}

/// A Tabula table's or primary key's name by OID.
fn relation_name(db: &dyn Source, oid: i64) -> Option<String> {
    match tabula_object(db, oid)? {
        (name, OidPart::Table) => Some(quote_ident(&name)),
        (name, OidPart::PrimaryKeyIndex) => Some(format!("{name}_pkey")),
        (_, OidPart::PrimaryKeyConstraint) => None,
    }
}

/// Looks up what an OID names, for pg_get_indexdef / pg_get_constraintdef.
fn describe_oid(db: &dyn Source, oid: i64, what: OidText) -> Option<String> {
    let (name, part) = tabula_object(db, oid)?;
    let t = db.table(&name).ok()?;
    let cols: Vec<String> = t.pk.iter().map(|&c| quote_ident(&t.columns[c].name)).collect();
    match (what, part) {
        (OidText::IndexDef, OidPart::PrimaryKeyIndex) => {
            Some(format!("CREATE UNIQUE INDEX {}_pkey ON public.{} USING btree ({})", t.name, quote_ident(&t.name), cols.join(", ")))
        }
        (OidText::ConstraintDef, OidPart::PrimaryKeyConstraint) => Some(format!("PRIMARY KEY ({})", cols.join(", "))),
        _ => None,
    }
}

fn quote_ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum OidText {
    IndexDef,
    ConstraintDef,
}

/// `pg_get_indexdef(oid [, column, pretty])` and `pg_get_constraintdef(oid [, pretty])` over Tabula's catalog.
#[derive(Debug)]
pub struct OidTextUdf {
    what: OidText,
    signature: Signature,
    db: Weak<dyn Source>,
}

impl PartialEq for OidTextUdf {
    fn eq(&self, other: &Self) -> bool {
        self.what == other.what
    }
}
impl Eq for OidTextUdf {}
impl Hash for OidTextUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.what.hash(state)
    }
}

impl OidTextUdf {
    fn new(what: OidText, db: Weak<dyn Source>) -> Self {
        let mut sigs = Vec::new();
        for oid in [DataType::Int32, DataType::Int64] {
            sigs.push(TypeSignature::Exact(vec![oid.clone()]));
            sigs.push(TypeSignature::Exact(vec![oid.clone(), DataType::Boolean]));
            sigs.push(TypeSignature::Exact(vec![oid.clone(), DataType::Int32, DataType::Boolean]));
            sigs.push(TypeSignature::Exact(vec![oid, DataType::Int64, DataType::Boolean]));
        }
        OidTextUdf { what, signature: Signature::one_of(sigs, Volatility::Stable), db }
    }
}

impl ScalarUDFImpl for OidTextUdf {
    fn name(&self) -> &str {
        match self.what {
            OidText::IndexDef => "pg_get_indexdef",
            OidText::ConstraintDef => "pg_get_constraintdef",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let oids = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
        let oids = oids.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        let db = self.db.upgrade();
        let out: StringArray = oids.iter().map(|o| o.and_then(|o| db.as_ref().and_then(|db| describe_oid(&**db, o, self.what)))).collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// `f(name) -> oid`: NULL when nothing has that name.
/// Looks a name up, with the database when it is still there.
type NameLookup = fn(Option<Arc<dyn Source>>, &str) -> Option<i32>;

fn name_to_oid(name: &str, db: Weak<dyn Source>, f: NameLookup) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        name,
        vec![DataType::Utf8],
        DataType::Int32,
        Volatility::Stable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let names = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
            let out: Int32Array = names.as_string::<i32>().iter().map(|n| n.and_then(|n| f(db.upgrade(), n))).collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// PostgreSQL's pg_size_pretty: bytes, kB, MB, GB, TB, rounding half up past 10 of a unit.
fn size_pretty(n: i64) -> String {
    let mut v = n;
    for unit in ["bytes", "kB", "MB", "GB", "TB"] {
        if v.abs() < 10 * 1024 || unit == "TB" {
            return format!("{v} {unit}");
        }
        v = (v + if v >= 0 { 512 } else { -512 }) / 1024;
    }
    unreachable!("TB returns")
}

/// Approximate bytes of a Tabula table (its partitions' statistics); 0 for anything else.
fn relation_bytes(name: &str, db: Weak<dyn Source>) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        name,
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Volatile,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let oids = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
            let db = db.upgrade();
            let bytes = |oid: i64| -> i64 {
                let Some(db) = db.as_ref() else { return 0 };
                let Some((name, OidPart::Table)) = tabula_object(&**db, oid) else { return 0 };
                db.store().partitions(&name).map(|p| p.iter().map(|p| p.approx_bytes.max(0)).sum()).unwrap_or(0)
            };
            let out: Int64Array = oids.as_primitive::<datafusion::arrow::datatypes::Int64Type>().iter().map(|o| o.map(bytes)).collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// The name a relation OID prints as (`oid::regclass`): Tabula's tables and their keys by name, others
/// by number.
fn oid_to_name(name: &str, db: Weak<dyn Source>) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        name,
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let oids = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
            let db = db.upgrade();
            let out: StringArray = oids
                .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                .iter()
                .map(|o| o.map(|o| db.as_ref().and_then(|db| relation_name(&**db, o)).unwrap_or_else(|| o.to_string())))
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

pub fn catalog_udfs(db: Weak<dyn Source>) -> Vec<ScalarUDF> {
    let db_for_names = db.clone();
    let db_for_regclass = db.clone();
    let db_for_sizes = db.clone();
    fn int_to_text(name: &str, f: impl Fn(i64) -> Option<String> + Send + Sync + 'static) -> ScalarUDF {
        datafusion::logical_expr::create_udf(
            name,
            vec![DataType::Int64],
            DataType::Utf8,
            Volatility::Stable,
            Arc::new(move |args: &[ColumnarValue]| {
                let arrays = ColumnarValue::values_to_arrays(args)?;
                let ints = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
                let out: StringArray =
                    ints.as_primitive::<datafusion::arrow::datatypes::Int64Type>().iter().map(|v| v.and_then(&f)).collect();
                Ok(ColumnarValue::Array(Arc::new(out)))
            }),
        )
    }
    let db_for_users = db.clone();
    vec![
        ScalarUDF::new_from_impl(OidTextUdf::new(OidText::IndexDef, db.clone())),
        ScalarUDF::new_from_impl(OidTextUdf::new(OidText::ConstraintDef, db)),
        // Expressions are stored as their SQL text: pg_get_expr(text, relation [, pretty]) is that text.
        ScalarUDF::new_from_impl(ExprTextUdf { signature: Signature::variadic_any(Volatility::Stable) }),
        // Tabula keeps no comments, sequences or views; every type, function and collation is visible.
        ConstUdf::udf("obj_description", ScalarValue::Utf8(None)),
        ConstUdf::udf("col_description", ScalarValue::Utf8(None)),
        ConstUdf::udf("shobj_description", ScalarValue::Utf8(None)),
        ConstUdf::udf("pg_get_serial_sequence", ScalarValue::Utf8(None)),
        ConstUdf::udf("pg_get_viewdef", ScalarValue::Utf8(None)),
        ConstUdf::udf("pg_type_is_visible", ScalarValue::Boolean(Some(true))),
        ConstUdf::udf("pg_function_is_visible", ScalarValue::Boolean(Some(true))),
        ConstUdf::udf("pg_collation_is_visible", ScalarValue::Boolean(Some(true))),
        ConstUdf::udf("pg_is_in_recovery", ScalarValue::Boolean(Some(false))),
        ScalarUDF::new_from_impl(JsonBuildObject { signature: Signature::variadic_any(Volatility::Immutable) }),
        name_to_oid("to_regtype", db_for_names.clone(), |_, name| {
            crate::types::SqlType::parse(name).filter(|t| *t != SqlType::Unknown).map(|t| t.oid() as i32)
        }),
        name_to_oid("to_regclass", db_for_names, |db, name| {
            let db = db?;
            let name = name.strip_prefix("public.").unwrap_or(name).trim_matches('"');
            db.store().table_id(name).ok().map(table_oid)
        }),
        oid_to_name("regclass_name", db_for_regclass),
        int_to_text("pg_size_pretty", |n| Some(size_pretty(n))),
        pg_text(),
        relation_bytes("pg_table_size", db_for_sizes.clone()),
        relation_bytes("pg_relation_size", db_for_sizes.clone()),
        relation_bytes("pg_total_relation_size", db_for_sizes),
        int_to_text("pg_get_userbyid", move |oid| {
            let role = db_for_users.upgrade().and_then(|db| db.roles().all().into_iter().find(|r| r.oid as i64 == oid));
            Some(role.map_or_else(|| format!("unknown (OID={oid})"), |r| r.name))
        }),
        int_to_text("pg_encoding_to_char", |e| {
            Some(
                if e == UTF8_ENCODING as i64 {
                    "UTF8"
                } else if e == 0 {
                    "SQL_ASCII"
                } else {
                    ""
                }
                .to_string(),
            )
        }),
    ]
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ExprTextUdf {
    signature: Signature,
}

impl ScalarUDFImpl for ExprTextUdf {
    fn name(&self) -> &str {
        "pg_get_expr"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let first = arrays.first().ok_or_else(|| DataFusionError::Plan("pg_get_expr needs an expression".into()))?;
        Ok(ColumnarValue::Array(datafusion::arrow::compute::cast(first, &DataType::Utf8)?))
    }
}

/// A catalog function whose answer does not depend on its arguments in Tabula.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ConstUdf {
    name: &'static str,
    value: ScalarValue,
    signature: Signature,
}

impl ConstUdf {
    fn udf(name: &'static str, value: ScalarValue) -> ScalarUDF {
        // Nullary too: `pg_is_in_recovery()` takes no argument, and variadic_any wants one.
        let signature = Signature::one_of(vec![TypeSignature::Nullary, TypeSignature::VariadicAny], Volatility::Stable);
        ScalarUDF::new_from_impl(ConstUdf { name, value, signature })
    }
}

impl ScalarUDFImpl for ConstUdf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(self.value.data_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        Ok(ColumnarValue::Scalar(self.value.clone()))
    }
}

/// `json_build_object(k1, v1, ...)`: a json value (text typed json for the client).
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonBuildObject {
    signature: Signature,
}

impl ScalarUDFImpl for JsonBuildObject {
    fn name(&self) -> &str {
        "json_build_object"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: datafusion::logical_expr::ReturnFieldArgs) -> DfResult<Arc<Field>> {
        Ok(Arc::new(super::arrow::field(self.name(), SqlType::Json, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        if !args.args.len().is_multiple_of(2) {
            return Err(DataFusionError::Plan("argument list must have even number of elements".into()));
        }
        let n = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            let mut parts = Vec::new();
            for pair in arrays.chunks(2) {
                let key = ScalarValue::try_from_array(&pair[0], row)?;
                let value = ScalarValue::try_from_array(&pair[1], row)?;
                parts.push(format!("{} : {}", json_string(&key.to_string()), json_value(&value)));
            }
            out.push(format!("{{{}}}", parts.join(", ")));
        }
        Ok(ColumnarValue::Array(Arc::new(StringArray::from(out))))
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_value(v: &ScalarValue) -> String {
    if v.is_null() {
        return "null".into();
    }
    match v {
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        v if v.data_type().is_numeric() => v.to_string(),
        v => json_string(&v.to_string()),
    }
}

/// `pg_attribute.attidentity`: `a` for GENERATED ALWAYS, `d` for BY DEFAULT (and serial), empty otherwise.
fn identity_kind(c: &crate::schema::ColumnDef) -> &'static str {
    match (c.identity, c.always) {
        (true, true) => "a",
        (true, false) => "d",
        _ => "",
    }
}

/// `x::text` (see the rewrite's `float_text_cast`): floats as PostgreSQL prints them, anything else as
/// Arrow casts it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PgText {
    signature: Signature,
}

fn pg_text() -> ScalarUDF {
    ScalarUDF::new_from_impl(PgText { signature: Signature::any(1, Volatility::Immutable) })
}

impl ScalarUDFImpl for PgText {
    fn name(&self) -> &str {
        "pg_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let a = &arrays[0];
        let out: ArrayRef = match a.data_type() {
            DataType::Float64 | DataType::Float32 => {
                let ty = if *a.data_type() == DataType::Float32 { SqlType::Float4 } else { SqlType::Float8 };
                let f = datafusion::arrow::compute::cast(a, &DataType::Float64)?;
                let text: StringArray = f
                    .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                    .iter()
                    .map(|v| v.and_then(|v| crate::types::Datum::Float(v).to_pg_text(ty)))
                    .collect();
                Arc::new(text)
            }
            _ => datafusion::arrow::compute::cast(a, &DataType::Utf8)?,
        };
        Ok(ColumnarValue::Array(out))
    }
}
