//! The PostgreSQL catalog tools read, built from Tabula's live catalog.
//!
//! datafusion-pg-catalog supplies pg_catalog's static tables (pg_type, pg_proc, pg_am, ...), its
//! functions and its SQL rewrites. The relations that describe *Tabula's* tables are generated here on
//! every read, so they carry what the library cannot know: declared SQL types, NOT NULL, defaults,
//! identity columns, the primary key as index and constraint, row estimates and table options.
//! The same goes for `information_schema` and Tabula's own `tabula` schema.
//!
//! OIDs are stable: a Tabula table with internal id `n` is `20000 + 3n`, its primary-key index `+1` and
//! its constraint `+2`; pg_catalog's relations have PostgreSQL's OIDs ([`oids`]); other relations are
//! numbered by name within their schema.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use datafusion::arrow::array::*;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
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

mod cells;
mod defaults;
mod functions;
mod information_schema;
mod oids;
mod pg_catalog;
mod proc_defaults;
mod proc_text;
mod schemas;
mod sizes;

use cells::{build_batch, data_type, schema_of, Cell, K};
use defaults::shown_default;
pub use functions::{catalog_udfs, qualified_definitions};
pub(crate) use functions::{quote_ident, quote_literal};
pub use oids::{pg_catalog_name, pg_catalog_oid};
pub use pg_catalog::empty_relation;
pub use schemas::{GeneratedSchema, GeneratedTable, PgCatalogSchema};

pub const CATALOG: &str = "tabula";
pub const PG_CATALOG_NSP: i32 = 11;
pub const PUBLIC_NSP: i32 = 2200;
/// The OID the library's static catalogs (pg_type, pg_proc) give information_schema's objects.
pub const INFORMATION_SCHEMA_NSP: i32 = 13283;
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
        // A session sees its own temporary schema only: one OID serves every session's.
        s if s.strip_prefix("pg_temp_").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) => TEMP_NSP,
        _ => return None,
    })
}

/// The OID of the reading session's schema of temporary tables (`pg_temp_N`).
pub const TEMP_NSP: i32 = 16385;

/// Whether a schema of that name exists.
pub fn namespace_exists(schema: &str) -> bool {
    namespace_oid(schema).is_some()
}

fn table_oid(id: u32) -> i32 {
    TABLE_OIDS + 3 * id as i32
}

/// Where relation OIDs start: Tabula's tables (and their keys and indexes), the views of Tabula's schema
/// and of information_schema (numbered by name within each); pg_catalog's are PostgreSQL's, below them all.
const TABLE_OIDS: i32 = 20000;
const TABULA_VIEW_OIDS: i32 = 16400;
const INFORMATION_SCHEMA_OIDS: i32 = 13100;

/// The schema of the relation an OID names, by the ranges above.
pub fn relation_schema(oid: i64) -> &'static str {
    match oid {
        o if o >= TABLE_OIDS as i64 => "public",
        o if o >= TABULA_VIEW_OIDS as i64 => "tabula",
        o if o >= INFORMATION_SCHEMA_OIDS as i64 => "information_schema",
        _ => "pg_catalog",
    }
}

/// Which object of a Tabula table an OID names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OidPart {
    Table,
    PrimaryKeyIndex,
    PrimaryKeyConstraint,
    /// A secondary index, by its position in the table's indexes. Its OID is [`table_oid`] of its key
    /// space, which no table has.
    Index(usize),
    /// The UNIQUE constraint of a secondary index: the index's OID + 2.
    IndexConstraint(usize),
    /// A CHECK constraint, by its position in the table's checks: [`check_oid`].
    Check(usize),
    /// A FOREIGN KEY, by its position in the table's: [`check_oid`] of 500 + it.
    ForeignKey(usize),
}

/// CHECK constraints' and FOREIGN KEYs' OIDs lie above every table's: 1,000 for each table id, the first
/// 500 for CHECKs.
const CHECK_OIDS: i64 = 1_000_000_000;
const FOREIGN_KEY_OIDS: usize = 500;

fn check_oid(table_id: u32, i: usize) -> i32 {
    (CHECK_OIDS + table_id as i64 * 1000 + i as i64) as i32
}

/// The inverse of [`table_oid`]: the table's name and which of its objects the OID is.
fn tabula_object(db: &dyn Source, oid: i64) -> Option<(String, OidPart)> {
    if let Some(c) = oid.checked_sub(CHECK_OIDS).filter(|c| *c >= 0) {
        let id = u32::try_from(c / 1000).ok()?;
        let name = db.store().table_names().into_iter().find(|n| db.store().table_id(n).ok() == Some(id))?;
        let i = (c % 1000) as usize;
        return Some((name, if i < FOREIGN_KEY_OIDS { OidPart::Check(i) } else { OidPart::ForeignKey(i - FOREIGN_KEY_OIDS) }));
    }
    let rel = oid.checked_sub(20000).filter(|r| *r >= 0)?;
    let id = u32::try_from(rel / 3).ok()?;
    let part = [OidPart::Table, OidPart::PrimaryKeyIndex, OidPart::PrimaryKeyConstraint][(rel % 3) as usize];
    let names = db.store().table_names();
    if let Some(name) = names.iter().find(|n| db.store().table_id(n).ok() == Some(id)) {
        return Some((name.clone(), part));
    }
    let of_index: fn(usize) -> OidPart = match part {
        OidPart::Table => OidPart::Index,
        OidPart::PrimaryKeyConstraint => OidPart::IndexConstraint,
        _ => return None,
    };
    names.into_iter().find_map(|n| {
        let t = db.table(&n).ok()?;
        let i = t.indexes.iter().position(|i| i.id == id && (part == OidPart::Table || i.constraint))?;
        Some((n, of_index(i)))
    })
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
    /// A sequence's definition (`kind` "S").
    sequence: Option<crate::sequences::def::SequenceDef>,
    /// A user's view (`kind` "v"): its query.
    view: Option<crate::views::ViewDef>,
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
    /// The reading session's schema of temporary tables (`pg_temp_3`), once it has made one.
    temp_schema: Option<String>,
}

impl Snapshot {
    /// Reads every relation's description when `relations`; else only what needs no enumeration.
    async fn take(
        db: &Arc<dyn Source>,
        list: &Arc<dyn CatalogProviderList>,
        relations: bool,
        settings: crate::settings::Settings,
        viewer: Option<String>,
        session: Option<(u64, Vec<String>)>,
    ) -> DfResult<Snapshot> {
        let mut rels = Vec::new();
        // The session's temporary tables, under their private names (`crate::temp`).
        let (temp_schema, temps) = match session {
            Some((n, temps)) if !temps.is_empty() => (Some(format!("pg_temp_{n}")), temps),
            _ => (None, Vec::new()),
        };
        let catalog = list.catalog(CATALOG).filter(|_| relations);
        let Some(catalog) = catalog else { return Ok(Snapshot { rels, db: db.clone(), settings, viewer, temp_schema }) };
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
                    let columns = t.visible().iter().enumerate().map(|(i, c)| (c.name.clone(), c.ty, c.not_null || t.is_pk(i))).collect();
                    rels.push(Rel {
                        schema: s.clone(),
                        name,
                        oid: table_oid(id),
                        kind: "r",
                        columns,
                        tabula: Some((t, id)),
                        sequence: None,
                        view: None,
                    });
                    continue;
                }
                let Some(table) = provider.table(&name).await? else { continue };
                let columns = table.schema().fields().iter().map(|f| (f.name().clone(), sql_type(f), !f.is_nullable())).collect();
                // PostgreSQL's OIDs in pg_catalog; elsewhere numbered by name within the schema: the
                // same on every start of the same build.
                let base = match s.as_str() {
                    "pg_catalog" => 11000,
                    "information_schema" => INFORMATION_SCHEMA_OIDS,
                    _ => TABULA_VIEW_OIDS,
                };
                let known = if s == "pg_catalog" { pg_catalog_oid(&name) } else { None };
                let oid = known.unwrap_or(base + i as i32);
                // PostgreSQL's system tables have OIDs below 10000, its views above.
                let kind = if known.is_some_and(|o| o < 10000) { "r" } else { "v" };
                rels.push(Rel { schema: s.clone(), name, oid, kind, columns, tabula: None, sequence: None, view: None });
            }
        }
        // The session's temporary tables, in its own schema, by the names it gave them (the private part
        // never shows).
        for private in &temps {
            let (Ok(t), Some(schema)) = (db.table(private), temp_schema.clone()) else { continue };
            let id = db.store().table_id(private).map_err(|e| df_err(e.into()))?;
            let mut shown = (*t).clone();
            shown.name = tabula_store::value::public_part(private).to_string();
            let columns = t.visible().iter().enumerate().map(|(i, c)| (c.name.clone(), c.ty, c.not_null || t.is_pk(i))).collect();
            let (name, oid) = (shown.name.clone(), table_oid(id));
            rels.push(Rel { schema, name, oid, kind: "r", columns, tabula: Some((Arc::new(shown), id)), sequence: None, view: None });
        }
        // The sequences made by CREATE SEQUENCE, with the columns PostgreSQL shows for one.
        for t in db.sequences().relations().map_err(df_err)? {
            let Some(def) = t.sequence.clone() else { continue };
            let id = db.store().table_id(&t.name).map_err(|e| df_err(e.into()))?;
            let columns = vec![
                ("last_value".into(), SqlType::Int8, true),
                ("log_cnt".into(), SqlType::Int8, true),
                ("is_called".into(), SqlType::Bool, true),
            ];
            let (schema, name, oid) = ("public".to_string(), t.name.clone(), table_oid(id));
            rels.push(Rel { schema, name, oid, kind: "S", columns, tabula: None, sequence: Some(def), view: None });
        }
        // The users' views, with the columns their queries were planned with.
        for t in db.sequences().relations().map_err(df_err)? {
            let Some(def) = t.view.clone() else { continue };
            let id = db.store().table_id(&t.name).map_err(|e| df_err(e.into()))?;
            let columns = def.columns.iter().map(|(n, ty)| (n.clone(), *ty, false)).collect();
            let (schema, name, oid) = ("public".to_string(), t.name.clone(), table_oid(id));
            rels.push(Rel { schema, name, oid, kind: "v", columns, tabula: None, sequence: None, view: Some(def) });
        }
        Ok(Snapshot { rels, db: db.clone(), settings, viewer, temp_schema })
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

    /// The Tabula tables with a primary key of their own columns (a keyless table's row id is no key to
    /// show: it has no index, constraint or key column in the catalog).
    fn keyed(&self) -> impl Iterator<Item = (&Rel, &Arc<TableSchema>, u32)> {
        self.tabula().filter(|(_, t, _)| !t.keyless())
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
    if matches!(ty, SqlType::Text | SqlType::Varchar | SqlType::Bpchar(_)) {
        DEFAULT_COLLATION
    } else {
        0
    }
}

fn pk_attnums(t: &TableSchema) -> Vec<i64> {
    t.pk.iter().map(|&i| i as i64 + 1).collect()
}

/// One relation Tabula generates from its catalog: PostgreSQL's columns for it, and its rows from a
/// snapshot of the catalog taken when a statement scans it.
trait Relation: Send + Sync + fmt::Debug {
    fn columns(&self) -> Vec<(&'static str, K)>;

    /// Whether its rows describe relations (and so need every schema's tables enumerated).
    fn reads_relations(&self) -> bool {
        true
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>>;
}

/// What a generated table is: a catalog relation, or one of Tabula's own views (`tabula.tables`, ...),
/// which build their rows from the store themselves.
#[derive(Clone, Copy, Debug)]
enum Generated {
    Relation(&'static dyn Relation),
    System(SystemView),
}

impl Generated {
    fn schema(self) -> SchemaRef {
        match self {
            Generated::System(v) => {
                let t = v.schema();
                Arc::new(Schema::new(t.columns.iter().map(|c| super::arrow::field(&c.name, c.ty, true)).collect::<Vec<_>>()))
            }
            Generated::Relation(r) => schema_of(&r.columns()),
        }
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
    let am = if matches!(kind, "v" | "S") { 0 } else { am };
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
        // attstorage: the type's own (pg_type.typstorage), so that pg_dump writes no SET STORAGE.
        if len > 0 {
            "p"
        } else if ty == SqlType::Numeric {
            "m"
        } else {
            "x"
        }
        .into(),
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

/// `pg_attribute.attidentity`: `a` for GENERATED ALWAYS, `d` for BY DEFAULT (and serial), empty otherwise.
fn identity_kind(c: &crate::schema::ColumnDef) -> &'static str {
    match (c.identity, c.always) {
        (true, true) => "a",
        (true, false) => "d",
        _ => "",
    }
}
