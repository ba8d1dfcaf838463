//! The SQL layer's state shared by every session: the store, the roles, the cache of table schemas with
//! its version, the settings new sessions start with, and the analytic engine, started on first use.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::RwLock;
use tabula_store::Store;

use crate::analytic::{Analytics, Source};
use crate::error::{QueryError, Result};
use crate::memory::ServerMemory;
use crate::planner::Catalog;
use crate::roles::Registry;
use crate::schema::TableSchema;
use crate::sequences::def::SequenceDef;
use crate::sequences::SequenceSource;
use crate::settings::{check_setting, default_settings, Settings, SERVER_SETTINGS};

/// Statement texts longer than this are refused unless configured otherwise.
pub const DEFAULT_MAX_STATEMENT_BYTES: usize = 16 << 20;

/// The SQL layer over one store, shared by all sessions.
/// Foreign keys by the table they reference: (referencing table, position of the key in it).
type References = HashMap<String, Vec<(Arc<TableSchema>, usize)>>;

pub struct Database {
    store: Arc<Store>,
    max_statement_bytes: AtomicUsize,
    roles: Registry,
    /// DataFusion, started by the first statement that needs it.
    analytics: OnceLock<Arc<Analytics>>,
    /// Bumped by every DDL statement; cached plans of older versions are re-planned.
    catalog_version: AtomicU64,
    schemas: RwLock<HashMap<String, Arc<TableSchema>>>,
    /// Each referenced table's referencing foreign keys (`Catalog::referencing`), made from every table's
    /// schema on first need after DDL: every UPDATE and DELETE asks, for each row it changes.
    references: RwLock<Option<Arc<References>>>,
    /// What a new session's settings start as (and `RESET`, `DISCARD ALL` return to).
    defaults: RwLock<Settings>,
    /// Memory budgets of analytic statements.
    memory: Arc<ServerMemory>,
    /// What each session is doing (`pg_stat_activity`).
    activity: Arc<crate::activity::Activity>,
    /// The number the next session owns its temporary tables and advisory locks under.
    sessions: AtomicU64,
    advisory: crate::advisory::AdvisoryLocks,
}

impl Database {
    pub fn new(store: Arc<Store>) -> Result<Arc<Database>> {
        let store_durability = store.durability();
        Ok(Arc::new(Database {
            roles: Registry::load(&store)?,
            store,
            analytics: OnceLock::new(),
            max_statement_bytes: AtomicUsize::new(DEFAULT_MAX_STATEMENT_BYTES),
            catalog_version: AtomicU64::new(1),
            schemas: RwLock::new(HashMap::new()),
            references: RwLock::new(None),
            defaults: RwLock::new(Arc::new(default_settings(store_durability))),
            memory: Default::default(),
            activity: Default::default(),
            sessions: AtomicU64::new(1),
            advisory: Default::default(),
        }))
    }

    /// Publishes one of the server's own settings ([`SERVER_SETTINGS`]): `SHOW` gives it, `SET` refuses it.
    pub fn set_server_setting(&self, name: &str, value: &str) -> Result<()> {
        if !SERVER_SETTINGS.contains(&name) {
            return Err(QueryError::Internal(format!("\"{name}\" is not a server setting")));
        }
        Arc::make_mut(&mut self.defaults.write()).insert(name.to_string(), value.to_string());
        Ok(())
    }

    /// Changes the default of a setting for sessions started from now on (`synchronous_commit`, say, from
    /// the server's configuration). The value is checked as `SET` would check it.
    pub fn set_default(&self, name: &str, value: &str) -> Result<()> {
        let (key, value) = check_setting(name, value)?;
        Arc::make_mut(&mut self.defaults.write()).insert(key, value);
        Ok(())
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// A number no other session of this server has: the owner of its temporary tables (`crate::temp`).
    pub(crate) fn next_session_number(&self) -> u64 {
        self.sessions.fetch_add(1, Ordering::Relaxed)
    }

    /// What a new session's settings start as.
    pub fn default_settings(&self) -> Settings {
        self.defaults.read().clone()
    }

    /// The memory budgets of analytic statements, shared by the server's sessions.
    pub fn activity(&self) -> &Arc<crate::activity::Activity> {
        &self.activity
    }

    pub fn memory(&self) -> &Arc<ServerMemory> {
        &self.memory
    }

    /// Every role: the configuration's users (set here by the server, superusers) and those made in SQL.
    pub fn roles(&self) -> &Registry {
        &self.roles
    }

    pub fn set_max_statement_bytes(&self, n: usize) {
        self.max_statement_bytes.store(n, Ordering::Relaxed);
    }

    /// The memory budget of one analytic statement and the ceiling of all of them together (bytes).
    pub fn set_memory_limits(&self, statement: usize, server: usize) {
        self.memory.set_limits(statement, server);
    }

    pub fn max_statement_bytes(&self) -> usize {
        self.max_statement_bytes.load(Ordering::Relaxed)
    }

    /// Refuses a statement text over the configured size before parsing it.
    pub(crate) fn check_size(&self, sql: &str) -> Result<()> {
        let limit = self.max_statement_bytes.load(Ordering::Relaxed);
        if sql.len() > limit {
            return Err(QueryError::ProgramLimitExceeded(format!(
                "statement is too long: {} bytes, the limit is {limit} (max_statement_bytes)",
                sql.len()
            )));
        }
        Ok(())
    }

    /// The analytic engine (DataFusion), set up on first use.
    pub fn analytics(self: &Arc<Self>) -> Result<Arc<Analytics>> {
        if let Some(a) = self.analytics.get() {
            return Ok(a.clone());
        }
        let source: Weak<dyn Source> = Arc::downgrade(self) as Weak<dyn Source>;
        let a = Arc::new(Analytics::new(source, self.memory.clone())?);
        Ok(self.analytics.get_or_init(|| a).clone())
    }

    /// DDL changed the catalog: cached schemas are read again, and prepared plans made again.
    pub(crate) fn invalidate(&self) {
        // A rollback may have undone a change of roles too (their records are journaled as tables' are).
        let _ = self.roles.reload(&self.store);
        self.schemas.write().clear();
        *self.references.write() = None;
        self.catalog_version.fetch_add(1, Ordering::SeqCst);
    }

    pub fn catalog_version(&self) -> u64 {
        self.catalog_version.load(Ordering::SeqCst)
    }

    /// A table's or a sequence's schema: both are the store's tables, a sequence an empty one
    /// (`crate::sequences::def`).
    pub fn relation(&self, name: &str) -> Result<Arc<TableSchema>> {
        if let Some(t) = self.schemas.read().get(name) {
            return Ok(t.clone());
        }
        let def = self.store.table(name)?;
        let schema = Arc::new(TableSchema::from_def(&def)?);
        self.schemas.write().insert(name.to_string(), schema.clone());
        Ok(schema)
    }

    /// The tables' names, sorted: no sequence's or view's.
    pub fn table_names(&self) -> Vec<String> {
        self.store.table_names().into_iter().filter(|n| self.relation(n).is_ok_and(|t| t.sequence.is_none() && t.view.is_none())).collect()
    }

    /// The views' names, sorted.
    pub fn view_names(&self) -> Vec<String> {
        self.store.table_names().into_iter().filter(|n| self.relation(n).is_ok_and(|t| t.view.is_some())).collect()
    }

    /// The names of the sequences made by CREATE SEQUENCE, sorted.
    pub fn sequence_names(&self) -> Vec<String> {
        self.store.table_names().into_iter().filter(|n| self.relation(n).is_ok_and(|t| t.sequence.is_some())).collect()
    }
}

/// 42809 for a sequence named where a table must be, as PostgreSQL's `"s" is not a table`.
pub fn not_a_table(name: &str) -> QueryError {
    QueryError::Engine { sqlstate: "42809", message: format!("\"{name}\" is not a table") }
}

impl Catalog for Database {
    fn table(&self, name: &str) -> Result<Arc<TableSchema>> {
        let t = self.relation(name)?;
        if t.sequence.is_some() {
            return Err(not_a_table(name));
        }
        if t.view.is_some() {
            return Err(QueryError::NotSupported(format!(
                "\"{name}\" is a view: writing through a view (an updatable view) is not supported"
            )));
        }
        Ok(t)
    }

    fn read_elsewhere(&self, name: &str) -> bool {
        self.relation(name).is_ok_and(|t| t.sequence.is_some() || t.view.is_some())
    }

    fn referencing(&self, parent: &str) -> Result<Vec<(Arc<TableSchema>, usize)>> {
        let cached = self.references.read().clone();
        let refs = match cached {
            Some(r) => r,
            None => {
                let version = self.catalog_version();
                let mut refs = References::new();
                for name in self.table_names() {
                    let t = self.table(&name)?;
                    for (i, fk) in t.foreign_keys.iter().enumerate() {
                        refs.entry(fk.parent.clone()).or_default().push((t.clone(), i));
                    }
                }
                let refs = Arc::new(refs);
                // Kept only if no DDL came meanwhile (it would have been read from older schemas).
                if self.catalog_version() == version {
                    *self.references.write() = Some(refs.clone());
                }
                refs
            }
        };
        Ok(refs.get(parent).cloned().unwrap_or_default())
    }
}
impl Source for Database {
    fn store(&self) -> &Arc<Store> {
        &self.store
    }

    fn roles(&self) -> &Registry {
        &self.roles
    }

    fn activity(&self) -> &Arc<crate::activity::Activity> {
        &self.activity
    }

    fn advisory(&self) -> &crate::advisory::AdvisoryLocks {
        &self.advisory
    }

    fn table_names(&self) -> Vec<String> {
        Database::table_names(self)
    }

    fn sequences(&self) -> &dyn SequenceSource {
        self
    }

    fn view(&self, name: &str) -> Option<Arc<TableSchema>> {
        self.relation(name).ok().filter(|t| t.view.is_some())
    }
}

impl SequenceSource for Database {
    fn store(&self) -> &Arc<Store> {
        &self.store
    }

    fn relations(&self) -> Result<Vec<Arc<TableSchema>>> {
        self.store.table_names().iter().map(|n| self.relation(n)).collect()
    }

    fn redefine(&self, name: &str, def: &SequenceDef) -> Result<()> {
        let t = self.relation(name)?;
        let changed = TableSchema { sequence: Some(def.clone()), ..(*t).clone() };
        let r = self.store.set_user_meta(name, changed.encode());
        self.invalidate();
        Ok(r?)
    }
}
