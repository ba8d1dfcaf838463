//! Sessions: the SQL entry point. A session parses, plans (with a plan cache per prepared statement),
//! runs statements in auto-commit or inside a transaction, and keeps its settings.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};
use tabula_store::{Access, Condition, PkColumn, Store, StoreError, TableDef, TableOptions, Txn, UpdateOp};

use crate::analytic::{AnalyticPlan, ReadCtx, SessionInfo};
use crate::error::{QueryError, Result};
use crate::exec::{increment_of, Deadline, Executor, Interrupt, SqlRow};
use crate::expr::{version_string, EvalCtx, Expr, SERVER_VERSION};
use crate::plan::*;
use crate::planner::{apply_option_text, Catalog, Planner};
use crate::schema::{ColumnDef, TableSchema, VERSION_COLUMN};
use crate::types::{Datum, DatumRef, SqlType};

mod access;

/// Statement texts longer than this are refused unless configured otherwise.
pub const DEFAULT_MAX_STATEMENT_BYTES: usize = 16 << 20;

/// Auto-commit statements that lose a write conflict are retried this many times.
const MAX_RETRIES: usize = 20;

/// The SQL layer over one store, shared by all sessions.
pub struct Database {
    store: Arc<Store>,
    max_statement_bytes: std::sync::atomic::AtomicUsize,
    roles: crate::roles::Registry,
    /// DataFusion, started by the first statement that needs it.
    analytics: std::sync::OnceLock<Arc<crate::analytic::Analytics>>,
    /// Bumped by every DDL statement; cached plans of older versions are re-planned.
    catalog_version: AtomicU64,
    schemas: RwLock<HashMap<String, Arc<TableSchema>>>,
    /// What a new session's settings start as (and `RESET`, `DISCARD ALL` return to).
    defaults: RwLock<Settings>,
    /// Memory budgets of analytic statements.
    memory: Arc<crate::analytic::memory::ServerMemory>,
}

impl Database {
    pub fn new(store: Arc<Store>) -> Result<Arc<Database>> {
        let store_durability = store.durability();
        Ok(Arc::new(Database {
            roles: crate::roles::Registry::load(&store)?,
            store,
            analytics: std::sync::OnceLock::new(),
            max_statement_bytes: std::sync::atomic::AtomicUsize::new(DEFAULT_MAX_STATEMENT_BYTES),
            catalog_version: AtomicU64::new(1),
            schemas: RwLock::new(HashMap::new()),
            defaults: RwLock::new(Arc::new(default_settings(store_durability))),
            memory: Default::default(),
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

    pub fn session(self: &Arc<Self>, user: &str, database: &str) -> Session {
        Session {
            db: self.clone(),
            txn: None,
            failed: false,
            user: user.to_string(),
            database: database.to_string(),
            settings: self.defaults.read().clone(),
            interrupt: Interrupt { memory: Some(self.memory.clone()), ..Interrupt::default() },
            copy: None,
            savepoints: Vec::new(),
            last_plan: None,
            stream_failed: Default::default(),
            cursors: Default::default(),
            statements: HashMap::new(),
            role: None,
            unlisted: self.roles.get(user).is_none(),
        }
    }

    /// Every role: the configuration's users (set here by the server, superusers) and those made in SQL.
    pub fn roles(&self) -> &crate::roles::Registry {
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
    fn check_size(&self, sql: &str) -> Result<()> {
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
    pub fn analytics(self: &Arc<Self>) -> Result<Arc<crate::analytic::Analytics>> {
        if let Some(a) = self.analytics.get() {
            return Ok(a.clone());
        }
        let a = Arc::new(crate::analytic::Analytics::new(Arc::downgrade(self), self.memory.clone())?);
        Ok(self.analytics.get_or_init(|| a).clone())
    }

    fn invalidate(&self) {
        self.schemas.write().clear();
        self.catalog_version.fetch_add(1, Ordering::SeqCst);
    }

    pub fn catalog_version(&self) -> u64 {
        self.catalog_version.load(Ordering::SeqCst)
    }

    /// All tables' SQL schemas, by name.
    pub fn tables(&self) -> Result<Vec<Arc<TableSchema>>> {
        self.store.table_names().iter().map(|n| self.table(n)).collect()
    }
}

impl Catalog for Database {
    fn table(&self, name: &str) -> Result<Arc<TableSchema>> {
        if let Some(t) = self.schemas.read().get(name) {
            return Ok(t.clone());
        }
        let def = self.store.table(name)?;
        let schema = Arc::new(TableSchema::from_def(&def)?);
        self.schemas.write().insert(name.to_string(), schema.clone());
        Ok(schema)
    }
}

/// The settings Tabula itself defines, with their defaults: PostgreSQL's, as far as Tabula speaks them (UTF8,
/// ISO dates, UTC, repeatable read). `synchronous_commit` is added by [`default_settings`].
const OWN_SETTINGS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("client_encoding", "UTF8"),
    ("datestyle", "ISO, MDY"),
    ("default_transaction_isolation", "repeatable read"),
    ("extra_float_digits", "1"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("is_superuser", "on"),
    ("search_path", "\"$user\", public"),
    ("server_encoding", "UTF8"),
    ("server_version", SERVER_VERSION),
    ("server_version_num", "150000"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("timezone", "UTC"),
    ("transaction_isolation", "repeatable read"),
    ("transaction_read_only", "off"),
    ("lock_timeout", "0"),
    ("idle_in_transaction_session_timeout", "0"),
    ("max_identifier_length", "63"),
    ("default_table_access_method", "heap"),
    ("default_tablespace", ""),
    ("lc_collate", "C.UTF-8"),
    ("lc_ctype", "C.UTF-8"),
    ("max_index_keys", "32"),
    ("block_size", "8192"),
];

/// One of PostgreSQL's session settings, as `pg_settings` describes it.
struct PgSetting {
    default: &'static str,
    kind: &'static str,
    /// The unit an integer or real is counted in (`kB`, `8kB`, `ms`, ...); empty: none.
    unit: &'static str,
    min: f64,
    max: f64,
    enums: &'static str,
}

/// PostgreSQL's session settings (`pg_settings.tsv`): accepted so that what clients, tools and dumps set for
/// PostgreSQL runs here too, though only the ones Tabula defines act on anything.
fn postgres_settings() -> &'static HashMap<&'static str, PgSetting> {
    static SETTINGS: std::sync::LazyLock<HashMap<&'static str, PgSetting>> = std::sync::LazyLock::new(|| {
        include_str!("pg_settings.tsv")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
                Some((
                    *f.first()?,
                    PgSetting {
                        default: f.get(1)?,
                        kind: f.get(2)?,
                        unit: f.get(3)?,
                        min: num(f.get(4)?),
                        max: num(f.get(5)?),
                        enums: f.get(6)?,
                    },
                ))
            })
            .collect()
    });
    &SETTINGS
}

impl PgSetting {
    /// The value as `SHOW` gives it back, or PostgreSQL's message refusing it.
    fn check(&self, key: &str, value: &str) -> std::result::Result<String, String> {
        let invalid = || format!("invalid value for parameter \"{key}\": \"{value}\"");
        let v = value.trim();
        let in_range = |n: f64| {
            if n >= self.min && n <= self.max {
                Ok(show_with_unit(n, self.unit))
            } else {
                let unit = if self.unit.is_empty() { String::new() } else { format!(" {}", self.unit) };
                Err(format!("{n}{unit} is outside the valid range for parameter \"{key}\" ({} .. {})", self.min, self.max))
            }
        };
        match self.kind {
            "bool" => parse_bool(v)
                .map(|b| if b { "on" } else { "off" }.to_string())
                .ok_or_else(|| format!("parameter \"{key}\" requires a Boolean value")),
            "integer" => in_range(parse_with_unit(v, self.unit).ok_or_else(invalid)?.round()),
            "real" => in_range(parse_with_unit(v, self.unit).ok_or_else(invalid)?),
            "enum" => {
                let lower = v.to_lowercase();
                let mut values = self.enums.split(',');
                if let Some(e) = values.clone().find(|e| **e == lower) {
                    return Ok(e.to_string());
                }
                // An on/off enum also takes the boolean spellings, as in PostgreSQL.
                let on_off = values.clone().any(|e| e == "on") && values.any(|e| e == "off");
                parse_bool(v).filter(|_| on_off).map(|b| if b { "on" } else { "off" }.to_string()).ok_or_else(invalid)
            }
            _ => Ok(value.to_string()),
        }
    }
}

/// PostgreSQL's boolean spellings: on, off, true, false, yes, no, 1, 0, and unique prefixes of the words.
fn parse_bool(v: &str) -> Option<bool> {
    let v = v.to_lowercase();
    match v.as_str() {
        "1" | "on" => return Some(true),
        "0" | "of" | "off" => return Some(false),
        "" | "o" => return None,
        _ => {}
    }
    if "true".starts_with(&v) || "yes".starts_with(&v) {
        Some(true)
    } else if "false".starts_with(&v) || "no".starts_with(&v) {
        Some(false)
    } else {
        None
    }
}

/// A unit's size in its kind's smallest unit (bytes or microseconds), and whether it measures memory.
fn unit_size(unit: &str) -> Option<(f64, bool)> {
    Some(match unit {
        "B" => (1.0, true),
        "kB" => (1024.0, true),
        "8kB" => (8192.0, true),
        "MB" => (1024.0 * 1024.0, true),
        "GB" => (1024.0 * 1024.0 * 1024.0, true),
        "TB" => (1024.0 * 1024.0 * 1024.0 * 1024.0, true),
        "us" => (1.0, false),
        "ms" => (1e3, false),
        "s" => (1e6, false),
        "min" => (60e6, false),
        "h" => (3600e6, false),
        "d" => (86400e6, false),
        _ => return None,
    })
}

/// A number, with a unit of the same kind as `base` (`64MB` for a setting counted in kB), in `base` units.
fn parse_with_unit(v: &str, base: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (num, unit) = (v[..split].trim(), v[split..].trim());
    let n: f64 = num.parse().ok().filter(|n: &f64| n.is_finite())?;
    if unit.is_empty() {
        return Some(n);
    }
    let (given, given_memory) = unit_size(unit)?;
    let (base, base_memory) = unit_size(base)?;
    (given_memory == base_memory).then(|| n * given / base)
}

/// A number of `base` units as PostgreSQL shows it: in the largest unit it is a whole number of (`64MB`),
/// without a unit when it has none or is not positive.
fn show_with_unit(n: f64, base: &str) -> String {
    let Some((size, memory)) = unit_size(base).filter(|_| n > 0.0) else { return format!("{n}") };
    // A whole number of base units always finds its own unit or a larger one first.
    let units: &[&str] = if memory { &["TB", "GB", "MB", "kB", "B"] } else { &["d", "h", "min", "s", "ms", "us"] };
    let total = n * size;
    for u in units {
        let (s, _) = unit_size(u).expect("a known unit");
        if (total / s).fract() == 0.0 {
            return format!("{}{u}", total / s);
        }
    }
    format!("{n}{base}")
}

/// Whether `key` (lower case) names a setting: Tabula's, PostgreSQL's, a server setting, or a dotted custom
/// one (`myapp.tenant`), which PostgreSQL accepts under any name.
fn is_known_setting(key: &str) -> bool {
    static KNOWN: std::sync::LazyLock<std::collections::HashSet<&'static str>> = std::sync::LazyLock::new(|| {
        OWN_SETTINGS
            .iter()
            .map(|(k, _)| *k)
            .chain(postgres_settings().keys().copied())
            .chain(SERVER_SETTINGS.iter().copied())
            .chain(["session_authorization"])
            .collect()
    });
    key.contains('.') || KNOWN.contains(key)
}

/// A session's settings by name, shared until one of them changes (a statement's analytic plan, a new
/// session and `DISCARD ALL` take them without copying).
pub type Settings = Arc<BTreeMap<String, String>>;

/// Every setting's default: PostgreSQL's, then Tabula's over them, and `synchronous_commit` following how
/// the store commits: a store that syncs in the background (`Durability::Group`) starts sessions with `off`.
fn default_settings(durability: tabula_store::Durability) -> BTreeMap<String, String> {
    let synchronous_commit = match durability {
        tabula_store::Durability::Sync => "on",
        tabula_store::Durability::Group { .. } => "off",
    };
    postgres_settings()
        .iter()
        .map(|(k, s)| (*k, s.default))
        .chain(OWN_SETTINGS.iter().copied())
        .chain([("synchronous_commit", synchronous_commit)])
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Settings no one may change.
const FIXED_SETTINGS: &[&str] = &["server_version", "server_version_num", "server_encoding", "integer_datetimes", "is_superuser"];

/// Settings the server fixes when it starts, from its flags or configuration file (PostgreSQL's `postmaster`
/// settings): `SHOW` gives them once the server has published them, and only a restart changes them. Tabula's
/// own take a `tabula.` prefix, as PostgreSQL's custom settings take a dotted one.
pub const SERVER_SETTINGS: &[&str] = &[
    "max_connections",
    "wal_writer_delay",
    "tabula.block_cache_size",
    "tabula.busy_poll",
    "tabula.wal_prefill_size",
    "tabula.statement_memory",
    "tabula.memory_limit",
];

/// Refuses a change to a setting that cannot change in a session, with PostgreSQL's message.
fn refuse_fixed(key: &str) -> Result<()> {
    if FIXED_SETTINGS.contains(&key) {
        return Err(QueryError::CantChangeParameter(format!("parameter \"{key}\" cannot be changed")));
    }
    if SERVER_SETTINGS.contains(&key) {
        return Err(QueryError::CantChangeParameter(format!("parameter \"{key}\" cannot be changed without restarting the server")));
    }
    Ok(())
}

/// Settings whose changes clients are told about (ParameterStatus).
pub const REPORTED_SETTINGS: &[&str] = &[
    "application_name",
    "client_encoding",
    "datestyle",
    "intervalstyle",
    "is_superuser",
    "server_version",
    "standard_conforming_strings",
    "timezone",
    "integer_datetimes",
];

/// The canonical name clients see for a setting (`DateStyle`, `TimeZone`, ...).
pub fn display_setting_name(name: &str) -> &str {
    match name {
        "datestyle" => "DateStyle",
        "timezone" => "TimeZone",
        "intervalstyle" => "IntervalStyle",
        other => other,
    }
}

/// The `name=value` pairs of a startup message's `options`: arguments split at spaces (a backslash keeps
/// the next character), each `-c name=value`, `-cname=value` or `--name=value`.
fn parse_startup_options(options: &str) -> Result<Vec<(String, String)>> {
    let mut args = Vec::new();
    let mut arg = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => arg.extend(chars.next()),
            c if c.is_whitespace() => {
                if !arg.is_empty() {
                    args.push(std::mem::take(&mut arg));
                }
            }
            c => arg.push(c),
        }
    }
    if !arg.is_empty() {
        args.push(arg);
    }
    let bad = |a: &str| QueryError::Syntax(format!("invalid command-line argument for server process: {a}"));
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (setting, dashed) = if a == "-c" {
            (it.next().ok_or_else(|| bad(a))?.as_str(), false)
        } else if let Some(rest) = a.strip_prefix("--") {
            (rest, true)
        } else if let Some(rest) = a.strip_prefix("-c") {
            (rest, false)
        } else {
            return Err(bad(a));
        };
        let Some((name, value)) = setting.split_once('=') else {
            return Err(QueryError::Syntax(format!("-c {setting} requires a value")));
        };
        // PostgreSQL reads dashes in a `--name` as underscores.
        let name = if dashed { name.replace('-', "_") } else { name.to_string() };
        out.push((name, value.to_string()));
    }
    Ok(out)
}

/// The settings a startup message asks for, checked: its parameters, and `-c name=value` or
/// `--name=value` in its `options` (libpq's PGOPTIONS), as PostgreSQL takes them. Who connects is not a
/// setting, and `client_encoding`, `DateStyle` and `TimeZone` are reported at startup as the fixed values
/// the server speaks (UTF8, ISO, UTC), so they are not taken either.
pub fn startup_settings<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (name, value) in params {
        let pairs = match name.to_lowercase().as_str() {
            "user" | "database" | "replication" | "client_encoding" | "datestyle" | "timezone" => continue,
            "options" => parse_startup_options(value)?,
            other => vec![(other.to_string(), value.to_string())],
        };
        for (k, v) in pairs {
            refuse_fixed(&k.to_lowercase())?;
            out.push(check_setting(&k, &v)?);
        }
    }
    Ok(out)
}

/// Checks a setting's new value; returns the name and the value as `SHOW` gives them back.
fn check_setting(name: &str, value: &str) -> Result<(String, String)> {
    let key = name.to_lowercase();
    if !is_known_setting(&key) {
        return Err(QueryError::UndefinedParameter(key));
    }
    let invalid = || QueryError::InvalidParameterValue(format!("invalid value for parameter \"{key}\": \"{value}\""));
    let value = match key.as_str() {
        // Tabula sends and reads UTF8 only: another encoding would be announced to the client and then not
        // spoken.
        "client_encoding" => match encoding_name(value).as_str() {
            "utf8" | "unicode" => "UTF8".to_string(),
            e if POSTGRES_ENCODINGS.contains(&e) => {
                return Err(QueryError::NotSupported(format!("client_encoding \"{value}\": Tabula speaks only UTF8 to clients")))
            }
            _ => return Err(invalid()),
        },
        // There are no standbys, so every durable level means the local log is synced.
        "synchronous_commit" => match value.to_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => "on".to_string(),
            "off" | "false" | "no" | "0" => "off".to_string(),
            v @ ("local" | "remote_write" | "remote_apply") => v.to_string(),
            _ => return Err(invalid()),
        },
        // PostgreSQL's own settings are checked as PostgreSQL checks them: a type, a range, a unit.
        k => match postgres_settings().get(k) {
            Some(setting) => setting.check(k, value).map_err(QueryError::InvalidParameterValue)?,
            None => value.to_string(),
        },
    };
    Ok((key, value))
}

const SHOW_ALL_COLUMNS: [&str; 3] = ["name", "setting", "description"];

/// What `SHOW ALL` says a setting does in Tabula.
fn setting_description(key: &str) -> &'static str {
    match key {
        "statement_timeout" => "Cancels any statement that runs longer than this (0: no limit).",
        "synchronous_commit" => "Whether a commit returns only once its log is synced to disk.",
        "client_encoding" => "The client's encoding: UTF8, the only one Tabula speaks.",
        k if SERVER_SETTINGS.contains(&k) => "Set when the server starts (see tabula --help).",
        k if FIXED_SETTINGS.contains(&k) => "Fixed by the server.",
        k if k.contains('.') => "A custom setting of this session.",
        _ => "Accepted and shown as PostgreSQL does; Tabula does not act on it.",
    }
}

/// An encoding's name as PostgreSQL compares it: lower case, only letters and digits (`UTF-8` is `utf8`).
fn encoding_name(name: &str) -> String {
    name.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// PostgreSQL's client encodings other than UTF8, named as [`encoding_name`] gives them.
const POSTGRES_ENCODINGS: &[&str] = &[
    "sqlascii",
    "eucjp",
    "euccn",
    "euckr",
    "euctw",
    "eucjis2004",
    "muleinternal",
    "latin1",
    "latin2",
    "latin3",
    "latin4",
    "latin5",
    "latin6",
    "latin7",
    "latin8",
    "latin9",
    "latin10",
    "win1256",
    "win1258",
    "win866",
    "win874",
    "koi8r",
    "win1251",
    "win1252",
    "iso88595",
    "iso88596",
    "iso88597",
    "iso88598",
    "win1250",
    "win1253",
    "win1254",
    "win1255",
    "win1257",
    "koi8u",
    "sjis",
    "big5",
    "gbk",
    "uhc",
    "gb18030",
    "johab",
    "shiftjis2004",
];

/// Where a streamed result's rows come from, a batch at a time.
pub trait RowSource: Send {
    /// Lends the next rows, in order, to `f`: as many as come at once (an engine page, say), each valid only
    /// during its call. `Ok(false)` once there are no more.
    fn next_rows(&mut self, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool>;
}

/// Rows of an iterator, lent one by one.
struct IterSource<I>(I);

impl<I: Iterator<Item = Result<SqlRow>> + Send> RowSource for IterSource<I> {
    fn next_rows(&mut self, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
        lend_owned(self.0.next(), f)
    }
}

/// Lends an owned row (`None`: there are no more) the way [`RowSource::next_rows`] lends rows.
pub(crate) fn lend_owned(row: Option<Result<SqlRow>>, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
    let Some(row) = row else { return Ok(false) };
    let row = row?;
    let refs: smallvec::SmallVec<[DatumRef<'_>; 8]> = row.iter().map(DatumRef::from).collect();
    f(&refs)?;
    Ok(true)
}

/// Rows read as they are consumed: a key-value scan's cursor or an analytic statement's stream. The wire
/// encodes them as they are lent ([`RowStream::next_rows`]); as an iterator it yields owned rows.
pub struct RowStream {
    source: Box<dyn RowSource>,
    owned: std::collections::VecDeque<Result<SqlRow>>,
    done: bool,
    /// Set when the stream ends in an error: the session's transaction then fails, as it would had the
    /// error come before the first row (see [`Session::execute`]).
    failed: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl RowStream {
    pub fn new(source: impl RowSource + 'static) -> Self {
        RowStream { source: Box::new(source), owned: Default::default(), done: false, failed: None }
    }

    fn flag_errors(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.failed = Some(flag);
        self
    }

    fn note_failure(&self) {
        if let Some(f) = &self.failed {
            f.store(true, Ordering::Relaxed);
        }
    }

    pub fn from_rows(rows: impl Iterator<Item = Result<SqlRow>> + Send + 'static) -> Self {
        RowStream::new(IterSource(rows))
    }

    /// See [`RowSource::next_rows`].
    pub fn next_rows(&mut self, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let more = self.source.next_rows(f);
        self.done = !matches!(more, Ok(true));
        if more.is_err() {
            self.note_failure();
        }
        more
    }
}

impl Iterator for RowStream {
    type Item = Result<SqlRow>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.owned.pop_front() {
                return Some(r);
            }
            if self.done {
                return None;
            }
            let owned = &mut self.owned;
            let more = self.source.next_rows(&mut |row| {
                owned.push_back(Ok(row.iter().map(|d| d.to_datum()).collect()));
                Ok(())
            });
            match more {
                Ok(true) => {}
                Ok(false) => self.done = true,
                Err(e) => {
                    self.done = true;
                    self.note_failure();
                    self.owned.push_back(Err(e));
                }
            }
        }
    }
}

impl std::fmt::Debug for RowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RowStream")
    }
}

/// What a statement returns.
#[derive(Debug)]
pub enum Output {
    /// Rows produced as the client reads them (a streaming scan).
    Stream {
        columns: Vec<OutputColumn>,
        cursor: RowStream,
    },
    Rows {
        columns: Vec<OutputColumn>,
        rows: Vec<SqlRow>,
        tag: String,
    },
    Command {
        tag: String,
    },
    /// A setting changed: the server reports it to the client.
    Set {
        tag: String,
        name: String,
        value: String,
    },
    /// `DEALLOCATE`: the protocol layer drops the named statement (`None`: all of them).
    Deallocate(Option<String>),
    /// COPY FROM STDIN started: the client sends `columns` columns of COPY data next.
    CopyIn {
        columns: usize,
    },
    /// COPY TO STDOUT: the data, one row per chunk.
    CopyOut {
        columns: usize,
        rows: Vec<Vec<u8>>,
    },
    Empty,
}

/// Rows inserted per engine call during COPY FROM.
const COPY_BATCH: usize = 2000;

/// A COPY FROM in progress.
struct CopyIn {
    table: Arc<TableSchema>,
    /// The columns of the data (`given` of them), then those the data leaves out that have `defaults`.
    targets: Vec<usize>,
    given: usize,
    defaults: Vec<Expr>,
    format: crate::copy::CopyFormat,
    buf: Vec<u8>,
    /// The statement's own transaction when the session has none open and rows need generated keys.
    txn: Option<Txn>,
    /// Outside a transaction, rows with complete keys load as one atomic write batch instead.
    bulk: Option<tabula_store::BulkLoad>,
    /// Lines before the first row (a header).
    skipped_lines: u64,
    rows: u64,
    line: u64,
    header_pending: bool,
    finished: bool,
    error: Option<QueryError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    Idle,
    InTransaction,
    Failed,
}

/// A parsed and planned statement, ready to run with parameters.
#[derive(Clone)]
pub struct Prepared {
    pub sql: String,
    stmt: Option<Box<Statement>>,
    plan: Option<Arc<Plan>>,
    /// Set instead of `plan` for statements DataFusion runs.
    analytic: Option<Arc<AnalyticPlan>>,
    catalog_version: u64,
    pub param_types: Vec<SqlType>,
    pub columns: Vec<OutputColumn>,
}

impl Prepared {
    pub fn is_empty(&self) -> bool {
        self.plan.is_none() && self.analytic.is_none()
    }
}

pub struct Session {
    db: Arc<Database>,
    txn: Option<Txn>,
    failed: bool,
    pub user: String,
    pub database: String,
    settings: Settings,
    pub interrupt: Interrupt,
    copy: Option<CopyIn>,
    /// The open transaction's savepoints, oldest first, one per engine savepoint (`None`: released).
    savepoints: Vec<Option<String>>,
    /// The plan of the statement run last (for the slow-statement log).
    last_plan: Option<Arc<Plan>>,
    /// Set by a streamed result that ended in an error (see [`RowStream`]).
    stream_failed: Arc<std::sync::atomic::AtomicBool>,
    /// Cursors open in SQL (`DECLARE`).
    cursors: crate::cursors::Cursors,
    /// Statements prepared in SQL (`PREPARE`), by name.
    statements: HashMap<String, Arc<Prepared>>,
    /// `SET ROLE`: whose privileges the session has (`current_user`); `None`: its own user's.
    role: Option<String>,
    /// The session's user was no role when it logged in (trust takes any name): it is a superuser.
    unlisted: bool,
}

/// Parses SQL text into statements (PostgreSQL dialect). `ALTER TABLE t RESET (...)`, which sqlparser
/// does not know, comes back as a ready plan.
pub fn parse(sql: &str) -> Result<Vec<ParsedStatement>> {
    let dialect = PostgreSqlDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql).tokenize_with_location().map_err(sqlparser::parser::ParserError::from)?;
    crate::depth::check(&tokens)?;
    crate::roles::parse::user_as_role(&mut tokens);
    let refused = crate::roles::parse::refused_unparsed(&tokens);
    let first = tokens.iter().map(|t| &t.token).find(|t| !matches!(t, Token::Whitespace(_)));
    if matches!(first, Some(Token::Word(w)) if w.keyword == Keyword::FETCH || w.value.eq_ignore_ascii_case("move")) {
        if let Some(f) = crate::cursors::parse_fetch(sql) {
            return Ok(vec![ParsedStatement::Fetch(f?)]);
        }
    }
    match Parser::new(&dialect).with_tokens_with_locations(tokens).parse_statements() {
        Ok(stmts) => Ok(stmts.into_iter().map(|s| ParsedStatement::Ast(Box::new(s))).collect()),
        Err(e) => match parse_reset(sql) {
            Some(p) => Ok(vec![p]),
            None => Err(refused.unwrap_or_else(|| e.into())),
        },
    }
}

#[derive(Debug, Clone)]
pub enum ParsedStatement {
    Ast(Box<Statement>),
    Reset { table: String, options: Vec<String> },
    Fetch(crate::cursors::FetchStatement),
}

/// `ALTER TABLE name RESET (opt [, opt ...]) [;]` and `RESET SESSION AUTHORIZATION`, from the tokens.
fn parse_reset(sql: &str) -> Option<ParsedStatement> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let words: Vec<Token> = tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect();
    let word = |t: &Token| match t {
        Token::Word(w) => Some(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_lowercase() }),
        _ => None,
    };
    let mut it = words.iter();
    // sqlparser's PostgreSQL dialect does not know `RESET SESSION AUTHORIZATION`: it is that setting's reset.
    let lead: Vec<Option<String>> = words.iter().take(3).map(word).collect();
    if lead.iter().map(|w| w.as_deref()).eq([Some("reset"), Some("session"), Some("authorization")])
        && matches!(&words[3..], [] | [Token::SemiColon])
    {
        let name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new("session_authorization")]);
        let reset = sqlparser::ast::ResetStatement { reset: sqlparser::ast::Reset::ConfigurationParameter(name) };
        return Some(ParsedStatement::Ast(Box::new(Statement::Reset(reset))));
    }
    if word(it.next()?)?.as_str() != "alter" || word(it.next()?)?.as_str() != "table" {
        return None;
    }
    let mut table = word(it.next()?)?;
    let mut next = it.next()?;
    if *next == Token::Period {
        table = word(it.next()?)?;
        next = it.next()?;
    }
    if word(next)?.as_str() != "reset" || *it.next()? != Token::LParen {
        return None;
    }
    let mut options = Vec::new();
    loop {
        options.push(word(it.next()?)?);
        match it.next()? {
            Token::Comma => continue,
            Token::RParen => break,
            _ => return None,
        }
    }
    match it.next() {
        None | Some(Token::SemiColon) if it.next().is_none() => Some(ParsedStatement::Reset { table, options }),
        _ => None,
    }
}

impl Session {
    /// Whose privileges the session has: the role SET ROLE chose, else its user.
    pub fn current_user(&self) -> &str {
        self.role.as_deref().unwrap_or(&self.user)
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// The plan of the last statement, as EXPLAIN prints it.
    pub fn last_plan(&self) -> Option<String> {
        self.last_plan.as_ref().map(|p| p.to_string())
    }

    pub fn txn_status(&self) -> TxnStatus {
        match (&self.txn, self.failed) {
            (None, _) => TxnStatus::Idle,
            (Some(_), false) => TxnStatus::InTransaction,
            (Some(_), true) => TxnStatus::Failed,
        }
    }

    /// Takes the settings a client gives at connection start (see [`startup_settings`]). The server checks
    /// them before the connection is accepted and refuses it if one is bad, as PostgreSQL does.
    pub fn apply_startup<'a>(&mut self, params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
        for (k, v) in startup_settings(params)? {
            self.set(&k, Some(&v))?;
        }
        Ok(())
    }

    pub fn setting(&self, name: &str) -> Option<&str> {
        // Every statement looks up `statement_timeout`: no lowercased copy for a name already in lower case.
        if name.chars().any(char::is_uppercase) {
            self.settings.get(&name.to_lowercase()).map(|s| s.as_str())
        } else {
            self.settings.get(name).map(|s| s.as_str())
        }
    }

    pub fn settings(&self) -> &BTreeMap<String, String> {
        &self.settings
    }

    /// Runs a simple-protocol query string: every statement in order, stopping at the first error.
    pub fn execute_sql(&mut self, sql: &str) -> Vec<Result<Output>> {
        self.absorb_stream_failure();
        let stmts = match self.db.check_size(sql).and_then(|_| parse(sql)) {
            Ok(s) => s,
            Err(e) => {
                self.note_error();
                return vec![Err(e)];
            }
        };
        let mut out = Vec::new();
        let mut stmts = stmts.into_iter().peekable();
        while let Some(s) = stmts.next() {
            let r = self.check_not_failed(&s).and_then(|_| self.prepare_parsed(sql, Some(s), &[])).and_then(|p| self.execute(&p, &[]));
            // A streamed result is read as the client takes it, which is after the whole string has run: the
            // statements after it could change what it reads. It is read out before they run.
            let r = match r {
                Ok(Output::Stream { columns, cursor }) if stmts.peek().is_some() => {
                    let rows = cursor.collect::<Result<Vec<_>>>();
                    if rows.is_err() {
                        self.note_error();
                    }
                    rows.map(|rows| Output::Rows { tag: format!("SELECT {}", rows.len()), columns, rows })
                }
                r => r,
            };
            let failed = r.is_err();
            out.push(r);
            if failed {
                // Planning errors too: PostgreSQL fails the transaction on any error in it.
                self.note_error();
                break;
            }
        }
        if out.is_empty() {
            out.push(Ok(Output::Empty));
        }
        out
    }

    fn savepoint_index(&self, name: &str) -> Result<usize> {
        self.savepoints.iter().rposition(|s| s.as_deref() == Some(name)).ok_or_else(|| QueryError::UndefinedSavepoint(name.to_string()))
    }

    /// In a failed transaction only its end is accepted (COMMIT, ROLLBACK, ROLLBACK TO SAVEPOINT), before
    /// anything is planned, as PostgreSQL refuses even a statement that would not plan.
    fn check_not_failed(&self, s: &ParsedStatement) -> Result<()> {
        let ends = matches!(s, ParsedStatement::Ast(s) if matches!(s.as_ref(), Statement::Commit { .. } | Statement::Rollback { .. }));
        if self.failed && !ends {
            return Err(QueryError::InFailedTransaction);
        }
        Ok(())
    }

    fn note_error(&mut self) {
        if self.txn.is_some() {
            self.failed = true;
        }
    }

    /// Parses and plans one statement for the extended protocol. Parameter types the client gave win;
    /// the others are inferred from where they are used.
    pub fn prepare(&mut self, sql: &str, param_types: &[Option<SqlType>]) -> Result<Prepared> {
        self.absorb_stream_failure();
        let r = (|| {
            self.db.check_size(sql)?;
            let mut stmts = parse(sql)?;
            if stmts.len() > 1 {
                return Err(QueryError::Syntax("cannot insert multiple commands into a prepared statement".into()));
            }
            if let Some(s) = stmts.first() {
                self.check_not_failed(s)?;
            }
            self.prepare_parsed(sql, stmts.pop(), param_types)
        })();
        if r.is_err() {
            self.note_error();
        }
        r
    }

    fn prepare_parsed(&self, sql: &str, stmt: Option<ParsedStatement>, param_types: &[Option<SqlType>]) -> Result<Prepared> {
        let version = self.db.catalog_version();
        let Some(stmt) = stmt else {
            return Ok(Prepared {
                sql: sql.into(),
                stmt: None,
                plan: None,
                analytic: None,
                catalog_version: version,
                param_types: vec![],
                columns: vec![],
            });
        };
        let given: Vec<SqlType> = param_types.iter().map(|t| t.unwrap_or(SqlType::Unknown)).collect();
        let (plan, params, stmt) = match stmt {
            ParsedStatement::Reset { table, options } => (Plan::SetOptions { table, set: vec![], reset: options }, given, None),
            ParsedStatement::Fetch(f) => {
                let columns = if f.move_only { vec![] } else { self.cursors.columns(&f.name)? };
                (Plan::Fetch { name: f.name, direction: f.direction, move_only: f.move_only, columns }, given, None)
            }
            ParsedStatement::Ast(s) if crate::subqueries::has_subquery(&s) => {
                // Typed with NULLs where the subqueries' results will be.
                let mut planner = Planner::new(self.db.as_ref(), given.clone());
                let typed = planner.plan(&crate::subqueries::placeholder(&s))?;
                let param_types: Vec<SqlType> =
                    planner.params.iter().map(|t| if *t == SqlType::Unknown { SqlType::Text } else { *t }).collect();
                let plan = Plan::WithSubqueries { statement: s.clone(), param_types: param_types.clone(), columns: plan_columns(&typed) };
                (plan, param_types, Some(s))
            }
            ParsedStatement::Ast(s) => {
                let mut planner = Planner::new(self.db.as_ref(), given.clone());
                match planner.plan(&s) {
                    // The parameters are those of the cursor's query, whichever engine runs it.
                    Ok(plan @ Plan::DeclareCursor { .. }) => {
                        let Plan::DeclareCursor { query, .. } = &plan else { unreachable!() };
                        let inner = self.prepare_query(query, param_types)?;
                        (plan, inner.param_types, Some(s))
                    }
                    Ok(Plan::ExecutePrepared { name, args, .. }) => {
                        let columns =
                            self.statements.get(&name).ok_or_else(|| QueryError::UndefinedPreparedStatement(name.clone()))?.columns.clone();
                        (Plan::ExecutePrepared { name, args, columns }, planner.params, Some(s))
                    }
                    Ok(plan) => (plan, planner.params, Some(s)),
                    Err(e) => return self.prepare_analytic(sql, s, e, &given, version),
                }
            }
        };
        // Parameters nothing typed are text, as PostgreSQL's unknown literals become.
        let param_types = params.into_iter().map(|t| if t == SqlType::Unknown { SqlType::Text } else { t }).collect();
        let columns = plan_columns(&plan);
        Ok(Prepared { sql: sql.into(), stmt, plan: Some(Arc::new(plan)), analytic: None, catalog_version: version, param_types, columns })
    }

    /// A query the key-value planner refused, planned by DataFusion instead. `refusal` is what the
    /// planner said: reported as it is when DataFusion cannot run the query either, unless the planner
    /// only deferred (`Analytic`), in which case DataFusion's own error is the answer.
    fn prepare_analytic(&self, sql: &str, stmt: Box<Statement>, refusal: QueryError, given: &[SqlType], version: u64) -> Result<Prepared> {
        let is_query = match stmt.as_ref() {
            Statement::Query(_) => true,
            Statement::Explain { statement, .. } => matches!(statement.as_ref(), Statement::Query(_)),
            _ => false,
        };
        let deferred = matches!(refusal.root(), QueryError::Analytic(_));
        let retry = refusal.is_analytic_retry();
        // DataFusion would run a locking read without its locks: the planner's refusal stands.
        let locking = match stmt.as_ref() {
            Statement::Query(q) => !q.locks.is_empty(),
            Statement::Explain { statement, .. } => matches!(statement.as_ref(), Statement::Query(q) if !q.locks.is_empty()),
            _ => false,
        };
        if !is_query || locking || !(deferred || retry) {
            return Err(refusal);
        }
        let planned = self.db.analytics().and_then(|a| a.plan(&stmt, self.read_ctx(None), &self.session_info()));
        let mut plan = match planned {
            Ok(p) => p,
            Err(e) if deferred => return Err(e),
            Err(_) => return Err(refusal),
        };
        // Output columns named as PostgreSQL names them (DataFusion prints expressions instead).
        if let Statement::Query(q) = stmt.as_ref() {
            if let Some(names) = crate::planner::output_names(q).filter(|n| n.len() == plan.columns.len()) {
                plan.columns.iter_mut().zip(names).for_each(|(c, n)| c.name = n);
            }
        }
        // Every `$n` the client wrote counts, also those in parts the rewrite for DataFusion dropped.
        let count = plan.param_types.len().max(max_placeholder(&stmt)).max(given.len());
        let param_types = (0..count)
            .map(|i| match (given.get(i), plan.param_types.get(i).and_then(|t| t.as_ref())) {
                (Some(g), _) if *g != SqlType::Unknown => *g,
                (_, Some(t)) => crate::analytic::arrow::sql_type_of(t),
                _ => SqlType::Text,
            })
            .collect();
        let columns = if matches!(stmt.as_ref(), Statement::Explain { .. }) {
            vec![OutputColumn { name: "QUERY PLAN".into(), ty: SqlType::Text, source: None }]
        } else {
            plan.columns.clone()
        };
        Ok(Prepared {
            sql: sql.into(),
            stmt: Some(stmt),
            plan: None,
            columns,
            analytic: Some(Arc::new(plan)),
            catalog_version: version,
            param_types,
        })
    }

    /// What a statement's DataFusion scans read with: the lent transaction, the clock, the user.
    fn read_ctx(&self, txn: Option<Arc<parking_lot::Mutex<Option<Txn>>>>) -> ReadCtx {
        ReadCtx {
            txn,
            view: None,
            now_us: self.db.store.clock().now_ms() * 1000,
            user: self.current_user().to_string(),
            session_user: self.user.clone(),
            database: self.database.clone(),
            interrupt: self.interrupt.clone(),
            settings: self.settings.clone(),
        }
    }

    fn session_info(&self) -> SessionInfo {
        SessionInfo { settings: self.settings.clone(), user: self.current_user().to_string(), session_user: self.user.clone() }
    }

    /// Runs a DataFusion statement, lending it the open transaction for its reads.
    fn run_analytic(&mut self, p: &Prepared, plan: &AnalyticPlan, params: &[Datum]) -> Result<Output> {
        if self.failed {
            return Err(QueryError::InFailedTransaction);
        }
        let analytics = self.db.analytics()?;
        let fresh;
        let plan = if p.catalog_version == self.db.catalog_version() {
            plan
        } else {
            let stmt = p.stmt.as_deref().ok_or_else(|| QueryError::Internal("an analytic statement without its statement".into()))?;
            fresh = analytics.plan(stmt, self.read_ctx(None), &self.session_info())?;
            &fresh
        };
        self.check_tables(&plan.tables)?;
        let typed: Vec<(Datum, SqlType)> = params.iter().cloned().zip(p.param_types.iter().copied()).collect();
        let explain = matches!(p.stmt.as_deref(), Some(Statement::Explain { .. }));
        // Outside a transaction, or in one that has not written (its reads are its snapshot's), rows stream.
        let view = self.txn.as_ref().map(|t| t.read_view());
        if !explain && !matches!(view, Some(None)) {
            let mut read = self.read_ctx(None);
            read.view = view.flatten().map(|v| v as crate::cursor::Reader);
            let rows = analytics.execute_stream(plan, &typed, read, &self.session_info())?;
            return Ok(Output::Stream { columns: plan.columns.clone(), cursor: RowStream::from_rows(rows) });
        }
        let lent = self.txn.take().map(|t| Arc::new(parking_lot::Mutex::new(Some(t))));
        let read = self.read_ctx(lent.clone());
        let r = analytics.execute(plan, &typed, read, &self.session_info());
        if let Some(l) = lent {
            self.txn = l.lock().take();
        }
        let rows = r?;
        if explain {
            return Ok(explain_rows(rows));
        }
        Ok(Output::Rows { columns: plan.columns.clone(), tag: format!("SELECT {}", rows.len()), rows })
    }

    /// Runs a prepared statement. Its plan is reused unless DDL ran since it was made.
    pub fn execute(&mut self, p: &Prepared, params: &[Datum]) -> Result<Output> {
        self.absorb_stream_failure();
        match self.execute_here(p, params)? {
            Output::Stream { columns, cursor } => Ok(Output::Stream { columns, cursor: cursor.flag_errors(self.stream_failed.clone()) }),
            out => Ok(out),
        }
    }

    /// A streamed result that ended in an error fails the transaction it ran in, before the next statement.
    fn absorb_stream_failure(&mut self) {
        if self.stream_failed.swap(false, Ordering::Relaxed) {
            self.note_error();
        }
    }

    fn execute_here(&mut self, p: &Prepared, params: &[Datum]) -> Result<Output> {
        if p.is_empty() {
            return Ok(Output::Empty);
        }
        self.run_bound(p, params, |s, params| s.execute_bound(p, params))
    }

    /// Runs a prepared statement whose parameters are bound to its types, under the running statement's
    /// timeout (a cursor's query runs under its DECLARE's).
    fn execute_bound(&mut self, p: &Prepared, params: &[Datum]) -> Result<Output> {
        if let Some(a) = &p.analytic {
            self.last_plan = None;
            return self.run_analytic(p, &a.clone(), params);
        }
        let Some(plan) = &p.plan else { return Ok(Output::Empty) };
        let plan = if p.catalog_version == self.db.catalog_version() || p.stmt.is_none() {
            plan.clone()
        } else {
            let fresh = match &p.stmt {
                Some(s) if !matches!(plan.as_ref(), Plan::SetOptions { reset, .. } if !reset.is_empty()) => {
                    let mut planner = Planner::new(self.db.as_ref(), p.param_types.clone());
                    Arc::new(planner.plan(s)?)
                }
                _ => plan.clone(),
            };
            fresh
        };
        self.last_plan = Some(plan.clone());
        self.run(&plan, params)
    }

    /// Binds parameters to a prepared statement's types and runs it under the statement timeout; an error
    /// fails the open transaction.
    fn run_bound(&mut self, p: &Prepared, params: &[Datum], f: impl FnOnce(&mut Self, &[Datum]) -> Result<Output>) -> Result<Output> {
        if params.len() != p.param_types.len() {
            return Err(QueryError::Syntax(format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                p.param_types.len()
            )));
        }
        let params: Vec<Datum> = params.iter().zip(&p.param_types).map(|(d, t)| d.clone().cast(*t)).collect::<Result<_>>()?;
        let timeout = self.setting("statement_timeout").and_then(parse_duration_ms).unwrap_or(0);
        // A cell of this statement's own: the streams it opens keep it after it returns.
        self.interrupt.deadline = Arc::new(Deadline::at((timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout))));
        let r = f(self, &params);
        self.interrupt.deadline = Arc::default();
        if r.is_err() {
            self.note_error();
        }
        r
    }

    /// A query inside another statement, planned by whichever engine takes it.
    fn prepare_query(&self, query: &sqlparser::ast::Query, param_types: &[Option<SqlType>]) -> Result<Prepared> {
        let stmt = Statement::Query(Box::new(query.clone()));
        self.prepare_parsed(&stmt.to_string(), Some(ParsedStatement::Ast(Box::new(stmt))), param_types)
    }

    /// `DECLARE`: runs the query and keeps its stream for FETCH. Without `WITH HOLD` a cursor only lives
    /// inside a transaction block, as in PostgreSQL.
    fn declare_cursor(&mut self, name: &str, hold: bool, query: &sqlparser::ast::Query, params: &[Datum]) -> Result<Output> {
        if self.txn.is_none() && !hold {
            return Err(QueryError::NoTransaction("DECLARE CURSOR"));
        }
        self.cursors.columns(name).err().ok_or_else(|| QueryError::DuplicateCursor(name.to_string()))?;
        let given: Vec<Option<SqlType>> = vec![None; params.len()];
        let p = self.prepare_query(query, &given)?;
        let (columns, rows): (_, crate::cursors::CursorRows) = match self.execute_bound(&p, params)? {
            Output::Stream { columns, cursor } => (columns, Box::new(cursor)),
            Output::Rows { columns, rows, .. } => (columns, Box::new(rows.into_iter().map(Ok))),
            _ => return Err(QueryError::Syntax("DECLARE CURSOR needs a query that returns rows".into())),
        };
        // The stream keeps this statement's deadline cell: each FETCH sets its own deadline there.
        let deadline = self.interrupt.deadline.clone();
        deadline.set(None);
        self.cursors.declare(name, columns, rows, deadline, hold, self.txn.is_some())?;
        Ok(Output::Command { tag: "DECLARE CURSOR".into() })
    }

    /// `EXECUTE name (args)`: the arguments, constants, become the statement's parameters.
    fn execute_prepared(&mut self, name: &str, args: &[Expr], params: &[Datum]) -> Result<Output> {
        let p = self.statements.get(name).cloned().ok_or_else(|| QueryError::UndefinedPreparedStatement(name.to_string()))?;
        if args.len() != p.param_types.len() {
            let wrong = QueryError::Syntax(format!("wrong number of parameters for prepared statement \"{name}\""));
            return Err(wrong.with_message(format!("Expected {} parameters but got {}.", p.param_types.len(), args.len())));
        }
        let now_us = self.db.store.clock().now_ms() * 1000;
        let ctx = self.ctx(params, now_us);
        let values = args.iter().zip(&p.param_types).map(|(e, t)| e.eval(&[], &ctx)?.cast(*t)).collect::<Result<Vec<_>>>()?;
        self.execute_bound(&p, &values)
    }

    /// The columns of an open cursor (a client may Describe the portal the cursor is).
    pub fn cursor_columns(&self, name: &str) -> Option<Vec<OutputColumn>> {
        self.cursors.columns(name).ok()
    }

    /// All rows of a query, planned by whichever engine takes it (the source of INSERT ... SELECT).
    fn query_rows(&mut self, query: &sqlparser::ast::Query, params: &[Datum]) -> Result<Vec<SqlRow>> {
        Ok(self.subquery_rows(query, params)?.1)
    }

    /// A query's columns and all its rows (a subquery's, see [`crate::subqueries`]).
    fn subquery_rows(&mut self, query: &sqlparser::ast::Query, params: &[Datum]) -> Result<(Vec<OutputColumn>, Vec<SqlRow>)> {
        let p = self.prepare_query(query, &vec![None; params.len()])?;
        let params = &params[..p.param_types.len().min(params.len())];
        let out = match (&p.analytic, &p.plan) {
            (Some(a), _) => self.run_analytic(&p, &a.clone(), params)?,
            (None, Some(plan)) => self.run(&plan.clone(), params)?,
            (None, None) => return Ok((p.columns, vec![])),
        };
        let rows = match out {
            Output::Rows { rows, .. } => rows,
            Output::Stream { cursor, .. } => cursor.collect::<Result<_>>()?,
            _ => vec![],
        };
        Ok((p.columns, rows))
    }

    fn ctx<'a>(&'a self, params: &'a [Datum], now_us: i64) -> EvalCtx<'a> {
        EvalCtx { params, now_us, user: self.current_user(), session_user: &self.user, database: &self.database }
    }

    fn run(&mut self, plan: &Plan, params: &[Datum]) -> Result<Output> {
        if self.failed && !matches!(plan, Plan::Rollback | Plan::Commit | Plan::RollbackToSavepoint(_)) {
            return Err(QueryError::InFailedTransaction);
        }
        self.check_access(plan)?;
        match plan {
            Plan::Savepoint(name) => {
                let txn = self.txn.as_ref().ok_or(QueryError::NoTransaction("SAVEPOINT"))?;
                txn.savepoint();
                self.savepoints.push(Some(name.clone()));
                Ok(Output::Command { tag: "SAVEPOINT".into() })
            }
            Plan::ReleaseSavepoint(name) => {
                self.txn.as_ref().ok_or(QueryError::NoTransaction("RELEASE SAVEPOINT"))?;
                let i = self.savepoint_index(name)?;
                // The engine keeps its savepoints; released ones stay on its stack without a name.
                self.savepoints[i..].iter_mut().for_each(|s| *s = None);
                Ok(Output::Command { tag: "RELEASE".into() })
            }
            Plan::RollbackToSavepoint(name) => {
                let txn = self.txn.as_ref().ok_or(QueryError::NoTransaction("ROLLBACK TO SAVEPOINT"))?;
                let i = self.savepoint_index(name)?;
                for _ in i..self.savepoints.len() {
                    txn.rollback_to_savepoint()?;
                }
                // The savepoint stays, as in PostgreSQL: it can be rolled back to again.
                txn.savepoint();
                self.savepoints.truncate(i + 1);
                self.failed = false;
                Ok(Output::Command { tag: "ROLLBACK".into() })
            }
            // Statements prepared in SQL and those of the protocol share one namespace, as in PostgreSQL.
            Plan::Deallocate(Some(name)) if self.statements.remove(name).is_some() => Ok(Output::Command { tag: "DEALLOCATE".into() }),
            Plan::Deallocate(name) => {
                if name.is_none() {
                    self.statements.clear();
                }
                Ok(Output::Deallocate(name.clone()))
            }
            Plan::PrepareStatement { name, param_types, statement } => {
                if self.statements.contains_key(name) {
                    return Err(QueryError::DuplicatePreparedStatement(name.clone()));
                }
                let given: Vec<Option<SqlType>> = param_types.iter().copied().map(Some).collect();
                let p = self.prepare_parsed(&statement.to_string(), Some(ParsedStatement::Ast(statement.clone())), &given)?;
                self.statements.insert(name.clone(), Arc::new(p));
                Ok(Output::Command { tag: "PREPARE".into() })
            }
            Plan::ExecutePrepared { name, args, .. } => self.execute_prepared(name, args, params),
            Plan::DeclareCursor { name, hold, query } => self.declare_cursor(name, *hold, query, params),
            Plan::Fetch { name, direction, move_only, .. } => {
                let (rows, n) = self.cursors.fetch(name, *direction, !move_only, self.interrupt.deadline.get())?;
                if *move_only {
                    return Ok(Output::Command { tag: format!("MOVE {n}") });
                }
                Ok(Output::Rows { columns: self.cursors.columns(name)?, rows, tag: format!("FETCH {n}") })
            }
            Plan::CloseCursor(name) => {
                self.cursors.close(name.as_deref())?;
                Ok(Output::Command { tag: if name.is_some() { "CLOSE CURSOR" } else { "CLOSE CURSOR ALL" }.into() })
            }
            Plan::Begin => {
                if self.txn.is_none() {
                    self.txn = Some(self.db.store.begin_with_view());
                    self.failed = false;
                    self.savepoints.clear();
                }
                Ok(Output::Command { tag: "BEGIN".into() })
            }
            Plan::Commit => {
                let failed = std::mem::take(&mut self.failed);
                self.savepoints.clear();
                self.cursors.end_transaction(!failed);
                match self.txn.take() {
                    Some(t) if failed => {
                        t.rollback()?;
                        Ok(Output::Command { tag: "ROLLBACK".into() })
                    }
                    Some(t) => {
                        let wrote = t.wrote();
                        t.commit()?;
                        if wrote {
                            self.commit_durably()?;
                        }
                        Ok(Output::Command { tag: "COMMIT".into() })
                    }
                    None => Ok(Output::Command { tag: "COMMIT".into() }),
                }
            }
            Plan::Rollback => {
                self.failed = false;
                self.savepoints.clear();
                self.cursors.end_transaction(false);
                if let Some(t) = self.txn.take() {
                    t.rollback()?;
                }
                Ok(Output::Command { tag: "ROLLBACK".into() })
            }
            Plan::SetVariable { name, value } => self.set(name, value.as_deref()),
            Plan::Access(statement) => self.run_access(statement),
            Plan::WithSubqueries { statement, param_types, .. } => {
                let stmt = crate::subqueries::substitute(statement, |q| self.subquery_rows(q, params))?;
                let plan = Planner::new(self.db.as_ref(), param_types.clone()).plan(&stmt)?;
                self.run(&plan, params)
            }
            Plan::SetConfig { name, value, if_exists } => {
                if *if_exists && self.setting(name).is_none() {
                    return Ok(Output::Rows { columns: plan_columns(plan), rows: vec![], tag: "SELECT 0".into() });
                }
                self.set(name, Some(value))?;
                let now = self.setting(name).unwrap_or_default().to_string();
                Ok(Output::Rows { columns: plan_columns(plan), rows: vec![vec![Datum::Text(now)]], tag: "SELECT 1".into() })
            }
            Plan::ShowVariable { name } if name == "all" => {
                let text = |s: &str| Datum::Text(s.to_string());
                let rows =
                    self.settings.iter().map(|(k, v)| vec![text(display_setting_name(k)), text(v), text(setting_description(k))]).collect();
                Ok(Output::Rows { columns: plan_columns(plan), rows, tag: "SHOW".into() })
            }
            Plan::ShowVariable { name } => {
                let value = match name.as_str() {
                    "session_authorization" => Some(self.user.clone()),
                    "role" => Some(self.role.clone().unwrap_or_else(|| "none".into())),
                    _ => self.setting(name).map(|s| s.to_string()),
                }
                .ok_or_else(|| QueryError::UndefinedParameter(name.clone()))?;
                Ok(Output::Rows {
                    columns: vec![OutputColumn { name: name.clone(), ty: SqlType::Text, source: None }],
                    rows: vec![vec![Datum::Text(value)]],
                    tag: "SHOW".into(),
                })
            }
            Plan::Reset { name: Some(name) } => match self.set(name, None)? {
                Output::Set { name, value, .. } => Ok(Output::Set { tag: "RESET".into(), name, value }),
                _ => Ok(Output::Command { tag: "RESET".into() }),
            },
            // The role stays, as PostgreSQL's RESET ALL leaves it.
            Plan::Reset { name: None } => {
                self.settings = self.db.defaults.read().clone();
                Ok(Output::Command { tag: "RESET".into() })
            }
            Plan::Discard { what } if what.eq_ignore_ascii_case("all") => {
                if self.txn.is_some() {
                    return Err(QueryError::ActiveTransaction("DISCARD ALL"));
                }
                self.settings = self.db.defaults.read().clone();
                self.role = None;
                self.cursors.close(None)?;
                self.statements.clear();
                Ok(Output::Command { tag: "DISCARD ALL".into() })
            }
            Plan::Discard { what } => Ok(Output::Command { tag: format!("DISCARD {}", what.to_uppercase()) }),
            Plan::CreateTable(c) => self.create_table(c),
            Plan::DropTable { names, if_exists } => {
                for n in names {
                    match self.db.store.drop_table(n) {
                        Ok(()) | Err(StoreError::UnknownTable(_)) if *if_exists => {}
                        Ok(()) => {}
                        Err(e) => {
                            self.db.invalidate();
                            return Err(e.into());
                        }
                    }
                }
                self.db.invalidate();
                Ok(Output::Command { tag: "DROP TABLE".into() })
            }
            Plan::Truncate { names } => {
                for n in names {
                    self.db.store.truncate_table(n)?;
                }
                Ok(Output::Command { tag: "TRUNCATE TABLE".into() })
            }
            Plan::SetOptions { table, set, reset } => {
                let mut o = self.db.store.table(table)?.options;
                let defaults = TableOptions::default();
                for (k, v) in set {
                    let text = match v {
                        Expr::Literal(Datum::Text(s), _) => s.clone(),
                        other => other.to_string(),
                    };
                    apply_option_text(&mut o, k, &text, false)?;
                }
                for k in reset {
                    match k.as_str() {
                        "ttl" => o.ttl = defaults.ttl,
                        "max_versions" => o.max_versions = defaults.max_versions,
                        "max_version_offset" => o.max_version_offset = defaults.max_version_offset,
                        "hash_prefix" => {
                            return Err(QueryError::InvalidParameterValue("hash_prefix is fixed when the table is created".into()))
                        }
                        other => return Err(QueryError::InvalidParameterValue(format!("unrecognized table option \"{other}\""))),
                    }
                }
                self.db.store.set_options(table, o)?;
                self.db.invalidate();
                Ok(Output::Command { tag: "ALTER TABLE".into() })
            }
            Plan::AddColumn { table, column, if_not_exists } => {
                let schema = self.db.table(table)?;
                if schema.column_index(&column.name).is_some() || column.name == VERSION_COLUMN {
                    if *if_not_exists {
                        return Ok(Output::Command { tag: "ALTER TABLE".into() });
                    }
                    return Err(QueryError::InvalidTableDefinition(format!(
                        "column \"{}\" of relation \"{table}\" already exists",
                        column.name
                    )));
                }
                tabula_store::value::validate_name(&column.name)?;
                if schema.dropped.contains(&column.name) {
                    return Err(QueryError::NotSupported(format!(
                        "column \"{}\" was dropped from \"{table}\" and its old values are still stored: choose another name",
                        column.name
                    )));
                }
                let mut altered = (*schema).clone();
                altered.columns.push(column.clone());
                self.db.store.set_user_meta(table, altered.encode())?;
                self.db.invalidate();
                Ok(Output::Command { tag: "ALTER TABLE".into() })
            }
            Plan::DropColumn { table, column, if_exists } => {
                let schema = self.db.table(table)?;
                let Some(i) = schema.columns.iter().position(|c| &c.name == column) else {
                    if *if_exists {
                        return Ok(Output::Command { tag: "ALTER TABLE".into() });
                    }
                    return Err(QueryError::UndefinedColumn(format!("{column}\" of relation \"{table}")));
                };
                if schema.is_pk(i) {
                    return Err(QueryError::NotSupported(format!("cannot drop primary key column \"{column}\"")));
                }
                let mut altered = (*schema).clone();
                altered.columns.remove(i);
                altered.dropped.push(column.clone());
                self.db.store.set_user_meta(table, altered.encode())?;
                self.db.invalidate();
                Ok(Output::Command { tag: "ALTER TABLE".into() })
            }
            Plan::Explain { plan, analyze } => self.explain(plan, *analyze, params),
            Plan::CopyFrom { table, targets, defaults, format } => {
                let generated = table.pk.iter().any(|&c| table.columns[c].identity);
                let (txn, bulk) = match (&self.txn, generated) {
                    (Some(_), _) => (None, None),
                    (None, true) => (Some(self.db.store.begin()), None),
                    (None, false) => (None, Some(self.db.store.bulk_load(&table.name)?)),
                };
                self.copy = Some(CopyIn {
                    table: table.clone(),
                    targets: targets.iter().chain(defaults.iter().map(|(c, _)| c)).copied().collect(),
                    given: targets.len(),
                    defaults: defaults.iter().map(|(_, e)| e.clone()).collect(),
                    format: format.clone(),
                    buf: Vec::new(),
                    txn,
                    bulk,
                    skipped_lines: 0,
                    rows: 0,
                    line: 0,
                    header_pending: format.header,
                    finished: false,
                    error: None,
                });
                Ok(Output::CopyIn { columns: targets.len() })
            }
            Plan::CopyTo { select, format } => {
                let (out, _) = self.run_dml(&Plan::Select(select.clone()), params, false)?;
                let Output::Rows { rows, columns, .. } = out else { return Err(QueryError::Internal("COPY TO without rows".into())) };
                let types: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
                let mut chunks = Vec::with_capacity(rows.len() + 1);
                if format.header {
                    let header: Vec<Datum> = columns.iter().map(|c| Datum::Text(c.name.clone())).collect();
                    let mut line = Vec::new();
                    format.format_row(&header, &vec![SqlType::Text; header.len()], &mut line);
                    chunks.push(line);
                }
                for r in &rows {
                    let mut line = Vec::with_capacity(64);
                    format.format_row(r, &types, &mut line);
                    chunks.push(line);
                }
                Ok(Output::CopyOut { columns: columns.len(), rows: chunks })
            }
            Plan::Select(_) | Plan::Insert(_) | Plan::Update(_) | Plan::Delete(_) => self.run_dml(plan, params, true).map(|(o, _)| o),
            Plan::InsertSelect { insert, query, defaults } => {
                let rows = self.query_rows(query, params)?;
                let width = insert.targets.len() - defaults.len();
                if let Some(r) = rows.iter().find(|r| r.len() != width) {
                    let more = if r.len() > width { "expressions than target columns" } else { "target columns than expressions" };
                    return Err(QueryError::Syntax(format!("INSERT has more {more}")));
                }
                let mut insert = insert.clone();
                insert.rows = rows
                    .into_iter()
                    .map(|r| {
                        let given = r.into_iter().zip(&insert.targets).map(|(d, &t)| Expr::Literal(d, insert.table.column_type(t)));
                        given.chain(defaults.iter().cloned()).collect()
                    })
                    .collect();
                self.run_dml(&Plan::Insert(insert), params, false).map(|(o, _)| o)
            }
        }
    }

    /// COPY data from the client.
    pub fn copy_data(&mut self, data: &[u8]) {
        self.copy_feed(data, false);
    }

    /// The end of COPY data: the remaining rows are written and the statement commits. Returns the count.
    pub fn copy_done(&mut self) -> Result<u64> {
        self.copy_feed(&[], true);
        let Some(copy) = self.copy.take() else { return Err(QueryError::Internal("no COPY in progress".into())) };
        if let Some(e) = copy.error {
            if let Some(t) = copy.txn {
                let _ = t.rollback();
            }
            self.note_error();
            return Err(e);
        }
        if let Some(t) = copy.txn {
            if let Err(e) = t.commit() {
                return Err(e.into());
            }
        }
        if let Some(b) = copy.bulk {
            match b.commit() {
                Ok(()) => {}
                Err(tabula_store::BulkError::Duplicate(i)) => {
                    self.note_error();
                    let line = copy.skipped_lines + i as u64 + 1;
                    return Err(
                        QueryError::UniqueViolation(copy.table.name.clone()).with_message(format!("COPY {}, line {line}", copy.table.name))
                    );
                }
                Err(tabula_store::BulkError::Store(e)) => {
                    self.note_error();
                    return Err(e.into());
                }
            }
        }
        // Inside a transaction block the rows commit with it (and COMMIT waits for them).
        if self.txn.is_none() {
            self.commit_durably()?;
        }
        Ok(copy.rows)
    }

    /// The client gave up the COPY: nothing of it is written.
    pub fn copy_fail(&mut self, message: &str) -> QueryError {
        if let Some(copy) = self.copy.take() {
            if let Some(t) = copy.txn {
                let _ = t.rollback();
            }
        }
        self.note_error();
        QueryError::Cancelled.with_message(format!("COPY from stdin failed: {message}"))
    }

    fn copy_feed(&mut self, data: &[u8], at_end: bool) {
        let Some(copy) = self.copy.as_mut() else { return };
        if copy.error.is_some() || copy.finished {
            return;
        }
        copy.buf.extend_from_slice(data);
        let mut records = Vec::new();
        match copy.format.take_records(&mut copy.buf, at_end, &mut records) {
            Ok(done) => copy.finished = done,
            Err(e) => {
                copy.error = Some(e);
                return;
            }
        }
        if copy.header_pending && !records.is_empty() {
            records.remove(0);
            copy.header_pending = false;
            copy.line += 1;
            copy.skipped_lines += 1;
        }
        let session_txn = self.txn.as_ref();
        let copy = self.copy.as_mut().unwrap();
        let access: &dyn Access = match (&copy.txn, session_txn) {
            (Some(t), _) => t,
            (None, Some(t)) => t,
            (None, None) if copy.bulk.is_some() => self.db.store.as_ref(),
            (None, None) => {
                copy.error = Some(QueryError::Internal("COPY without a transaction".into()));
                return;
            }
        };
        let defaults_ctx = EvalCtx {
            params: &[],
            now_us: self.db.store.clock().now_ms() * 1000,
            user: self.role.as_deref().unwrap_or(&self.user),
            session_user: &self.user,
            database: &self.database,
        };
        for chunk in records.chunks(COPY_BATCH) {
            let mut batch = Vec::with_capacity(chunk.len());
            for fields in chunk {
                copy.line += 1;
                let r = (|| {
                    if fields.len() != copy.given {
                        return Err(QueryError::InvalidText(format!(
                            "{} data for table \"{}\": expected {} columns, got {}",
                            if fields.len() < copy.given { "missing" } else { "extra" },
                            copy.table.name,
                            copy.given,
                            fields.len()
                        )));
                    }
                    let mut values = fields
                        .iter()
                        .zip(&copy.targets)
                        .map(|(f, &t)| match f {
                            None => Ok(Datum::Null),
                            Some(text) => {
                                Datum::parse(if t == copy.table.columns.len() { SqlType::Int8 } else { copy.table.column_type(t) }, text)
                            }
                        })
                        .collect::<Result<Vec<_>>>()?;
                    for e in &copy.defaults {
                        values.push(e.eval(&[], &defaults_ctx)?);
                    }
                    crate::exec::prepare_row(&copy.table, &copy.targets, values)
                })();
                match r {
                    Ok(p) => batch.push((p.pk, p.cells)),
                    Err(e) => {
                        copy.error = Some(e.with_message(format!("COPY {}, line {}", copy.table.name, copy.line)));
                        return;
                    }
                }
            }
            if let Some(bulk) = copy.bulk.as_mut() {
                let complete: Option<Vec<_>> =
                    batch.into_iter().map(|(pk, cells)| pk.into_iter().collect::<Option<Vec<_>>>().map(|pk| (pk, cells))).collect();
                let Some(rows) = complete else {
                    copy.error = Some(QueryError::Internal("COPY row without a complete primary key".into()));
                    return;
                };
                match bulk.add(&rows) {
                    Ok(()) => copy.rows += rows.len() as u64,
                    Err(e) => {
                        copy.error = Some(QueryError::from(e).with_message(format!("COPY {}, line {}", copy.table.name, copy.line)));
                        return;
                    }
                }
                continue;
            }
            match access.insert_rows(&copy.table.name, &batch) {
                Ok(_) => copy.rows += batch.len() as u64,
                Err(StoreError::RowExists) => {
                    copy.error = Some(QueryError::UniqueViolation(copy.table.name.clone()));
                    return;
                }
                Err(e) => {
                    copy.error = Some(e.into());
                    return;
                }
            }
        }
    }

    fn set(&mut self, name: &str, value: Option<&str>) -> Result<Output> {
        if name == "transaction_characteristics" || name == "session characteristics" {
            return Ok(Output::Command { tag: "SET".into() });
        }
        let key = match name {
            "transaction isolation level" | "transaction_isolation" => "transaction_isolation",
            "names" => "client_encoding",
            "time zone" => "timezone",
            other => other,
        }
        .to_string();
        let value = match value {
            Some(v) => v.to_string(),
            None => self.db.defaults.read().get(&key).cloned().unwrap_or_default(),
        };
        refuse_fixed(&key.to_lowercase())?;
        let (key, value) = check_setting(&key, &value)?;
        Arc::make_mut(&mut self.settings).insert(key.clone(), value.clone());
        if REPORTED_SETTINGS.contains(&key.as_str()) {
            Ok(Output::Set { tag: "SET".into(), name: display_setting_name(&key).to_string(), value })
        } else {
            Ok(Output::Command { tag: "SET".into() })
        }
    }

    fn create_table(&mut self, c: &CreateTablePlan) -> Result<Output> {
        let def = TableDef {
            name: c.name.clone(),
            primary_key: c
                .pk
                .iter()
                .map(|&i| PkColumn {
                    name: c.columns[i].name.clone(),
                    ty: c.columns[i].ty.pk_type().unwrap(),
                    auto_increment: c.columns[i].identity,
                })
                .collect(),
            partition_key_len: c.partition_key_len,
            options: c.options,
            user_meta: TableSchema::encode_meta(&c.columns, &[], self.current_user(), None),
        };
        for col in &c.columns {
            tabula_store::value::validate_name(&col.name)?;
        }
        match self.db.store.create_table(def) {
            Ok(()) => {}
            Err(StoreError::TableExists(_)) if c.if_not_exists => {}
            Err(e) => return Err(e.into()),
        }
        self.db.invalidate();
        Ok(Output::Command { tag: "CREATE TABLE".into() })
    }

    fn explain(&mut self, plan: &Plan, analyze: bool, params: &[Datum]) -> Result<Output> {
        let mut lines: Vec<String> = plan.to_string().lines().map(|l| l.to_string()).collect();
        if analyze {
            let started = Instant::now();
            let (out, stats) = self.run_dml(plan, params, false)?;
            let rows = match &out {
                Output::Rows { rows, .. } => rows.len(),
                _ => 0,
            };
            if let Some(stats) = stats {
                if let Some(i) = lines.iter().position(|l| l.contains(" on ")) {
                    lines[i].push_str(&format!(
                        " (actual rows={} examined={} engine_calls={} time={:.3} ms)",
                        stats.returned,
                        stats.examined,
                        stats.engine_calls,
                        stats.micros as f64 / 1000.0
                    ));
                }
            }
            if let Some(first) = lines.first_mut() {
                first.push_str(&format!(" (actual rows={rows})"));
            }
            lines.push(format!("Execution Time: {:.3} ms", started.elapsed().as_secs_f64() * 1000.0));
        }
        Ok(Output::Rows {
            columns: vec![OutputColumn { name: "QUERY PLAN".into(), ty: SqlType::Text, source: None }],
            rows: lines.into_iter().map(|l| vec![Datum::Text(l)]).collect(),
            tag: "EXPLAIN".into(),
        })
    }

    /// Runs a read or write: in the open transaction, straight on the store when one engine call does it
    /// atomically, or in a fresh transaction retried on write conflicts.
    /// `stream`: a SELECT may come back as a cursor that reads as the client consumes.
    fn run_dml(&mut self, plan: &Plan, params: &[Datum], stream: bool) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let autocommit_write = self.txn.is_none() && !matches!(plan, Plan::Select(_));
        let out = self.run_dml_once(plan, params, stream)?;
        if autocommit_write {
            self.commit_durably()?;
        }
        Ok(out)
    }

    /// Returns once what this session committed survives a power loss, unless `synchronous_commit` is off:
    /// then the store's background sync makes it durable within its interval, as PostgreSQL's WAL writer does.
    fn commit_durably(&self) -> Result<()> {
        if self.settings.get("synchronous_commit").map(String::as_str) != Some("off") {
            self.db.store.sync_wal()?;
        }
        Ok(())
    }

    fn run_dml_once(&mut self, plan: &Plan, params: &[Datum], stream: bool) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let now_us = self.db.store.clock().now_ms() * 1000;
        if let (Plan::Select(s), true) = (plan, stream) {
            // Rows stream from the latest data outside a transaction, and from its snapshot in one that has
            // not written (which is all it would read). Rows read FOR UPDATE in a transaction go through it.
            let reader: Option<crate::cursor::Reader> = match &self.txn {
                None => Some(self.db.store.clone()),
                Some(_) if s.lock => None,
                Some(txn) => txn.read_view().map(|v| v as crate::cursor::Reader),
            };
            if let Some(reader) = reader {
                let cursor = crate::cursor::Cursor::try_new(
                    reader,
                    s,
                    params,
                    now_us,
                    [self.current_user(), &self.user, &self.database],
                    &self.interrupt,
                )?;
                if let Some(cursor) = cursor {
                    return Ok((Output::Stream { columns: s.columns.clone(), cursor: RowStream::new(cursor) }, None));
                }
            }
        }
        if let Some(txn) = &self.txn {
            return self.exec_on(txn, plan, params, now_us);
        }
        if let Some(fast) = self.fast_upsert(plan, params, now_us)? {
            return Ok((fast, None));
        }
        if let Some(fast) = self.fast_update(plan, params, now_us)? {
            return Ok((fast, None));
        }
        if single_call(plan) {
            let store = self.db.store.clone();
            return self.exec_on_store(store.as_ref(), plan, params, now_us);
        }
        let mut attempt = 0;
        loop {
            let txn = self.db.store.begin();
            let r = self.exec_on(&txn, plan, params, now_us).and_then(|o| {
                txn.commit()?;
                Ok(o)
            });
            match r {
                Err(QueryError::SerializationFailure) if attempt < MAX_RETRIES => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_micros(100 * attempt as u64));
                }
                r => return r,
            }
        }
    }

    /// Runs on committed data, outside any transaction: full scans may read partitions in parallel.
    fn exec_on_store(&self, store: &Store, plan: &Plan, params: &[Datum], now_us: i64) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let mut ex = Executor::new(store, self.ctx(params, now_us), &self.interrupt);
        ex.store = Some(store);
        ex.system = Some(store);
        self.exec_with(ex, plan)
    }

    fn exec_on(&self, access: &dyn Access, plan: &Plan, params: &[Datum], now_us: i64) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let mut ex = Executor::new(access, self.ctx(params, now_us), &self.interrupt);
        ex.system = Some(self.db.store.as_ref());
        self.exec_with(ex, plan)
    }

    fn exec_with(&self, ex: Executor, plan: &Plan) -> Result<(Output, Option<crate::exec::ScanStats>)> {
        let out = match plan {
            Plan::Select(s) => {
                let rows = ex.select(s)?;
                Output::Rows { columns: s.columns.clone(), tag: format!("SELECT {}", rows.len()), rows }
            }
            Plan::Insert(i) => {
                let (n, rows) = ex.insert(i)?;
                dml_output(format!("INSERT 0 {n}"), &i.returning, rows)
            }
            Plan::Update(u) => {
                let (n, rows) = ex.update(u)?;
                dml_output(format!("UPDATE {n}"), &u.returning, rows)
            }
            Plan::Delete(d) => {
                let (n, rows) = ex.delete(d)?;
                dml_output(format!("DELETE {n}"), &d.returning, rows)
            }
            _ => return Err(QueryError::Internal("not a DML plan".into())),
        };
        Ok((out, Some(ex.stats.get())))
    }

    /// A one-row `INSERT ... ON CONFLICT (key) DO UPDATE SET c = <EXCLUDED values> | c = c + k`: one engine
    /// write that inserts the row or updates the stored one, instead of a transaction that tries, reads
    /// and updates.
    fn fast_upsert(&self, plan: &Plan, params: &[Datum], now_us: i64) -> Result<Option<Output>> {
        let Plan::Insert(i) = plan else { return Ok(None) };
        let OnConflict::DoUpdate { assignments, filter: None, version: None } = &i.on_conflict else { return Ok(None) };
        if i.rows.len() != 1 || i.returning.is_some() {
            return Ok(None);
        }
        let t = &i.table;
        let n = t.columns.len();
        let ctx = self.ctx(params, now_us);
        let values = i.rows[0].iter().map(|e| e.eval(&[], &ctx)).collect::<Result<Vec<_>>>()?;
        let prepared = crate::exec::prepare_row(t, &i.targets, values)?;
        let Some(pk) = prepared.pk.iter().cloned().collect::<Option<Vec<_>>>() else { return Ok(None) };
        // Assignments may read EXCLUDED (columns after the stored row and its _version), or add to themselves.
        let mut combined = vec![Datum::Null; n + 1];
        combined.extend(prepared.row.iter().take(n).cloned());
        let mut ops = Vec::with_capacity(assignments.len());
        for (col, e) in assignments {
            let name = t.columns[*col].name.clone();
            if let (Some(k), None) = (crate::exec::increment_of(e, *col), prepared.version) {
                // Adding NULL gives NULL: left to the general path.
                if let Some(k) = k.eval(&[], &ctx)?.cast(SqlType::Int8)?.as_int() {
                    ops.push((name, UpdateOp::Add(k)));
                    continue;
                }
            }
            let mut reads = Vec::new();
            e.columns(&mut reads);
            if reads.iter().any(|&c| c <= n) {
                return Ok(None);
            }
            let v = e.eval(&combined, &ctx)?.cast(t.column_type(*col))?;
            if v.is_null() && t.columns[*col].not_null {
                return Err(QueryError::NotNull { table: t.name.clone(), column: name });
            }
            ops.push((
                name,
                match v.to_value() {
                    Some(value) => UpdateOp::Put { value, version: prepared.version },
                    None => UpdateOp::DeleteAll,
                },
            ));
        }
        self.db.store.upsert_row(&t.name, &pk, &prepared.cells, &ops)?;
        Ok(Some(Output::Command { tag: "INSERT 0 1".into() }))
    }

    /// `UPDATE t SET c = const | c = c + k ... WHERE <full key>`: one conditional engine write, no read.
    fn fast_update(&self, plan: &Plan, params: &[Datum], now_us: i64) -> Result<Option<Output>> {
        let Plan::Update(u) = plan else { return Ok(None) };
        let AccessPath::PointGet { key } = &u.scan.access else { return Ok(None) };
        if u.returning.is_some() {
            return Ok(None);
        }
        let t = &u.scan.table;
        let ctx = self.ctx(params, now_us);
        // Column predicates become the engine's column condition, checked inside the one row write.
        let column = match &u.scan.filter {
            None => None,
            Some(f) => match crate::exec::column_condition(t, f, &ctx)? {
                Some(c) => Some(c),
                None => return Ok(None),
            },
        };
        let version =
            u.version.as_ref().map(|e| e.eval(&[], &ctx)).transpose()?.map(|d| d.cast(SqlType::Int8)).transpose()?.and_then(|d| d.as_int());
        let mut ops = Vec::new();
        for (col, e) in &u.assignments {
            let name = t.columns[*col].name.clone();
            let k = match (increment_of(e, *col), version) {
                (Some(k), None) => k.eval(&[], &ctx)?.cast(SqlType::Int8)?.as_int(),
                _ => None,
            };
            if let Some(k) = k {
                ops.push((name, UpdateOp::Add(k)));
            } else if e.is_constant() {
                let v = e.eval(&[], &ctx)?.cast(t.column_type(*col))?;
                if v.is_null() && t.columns[*col].not_null {
                    return Err(QueryError::NotNull { table: t.name.clone(), column: name });
                }
                ops.push((
                    name,
                    match v.to_value() {
                        Some(value) => UpdateOp::Put { value, version },
                        None => UpdateOp::DeleteAll,
                    },
                ));
            } else {
                return Ok(None);
            }
        }
        let mut pk = Vec::new();
        for (pos, e) in key.iter().enumerate() {
            let ty = t.column_type(t.pk[pos]);
            let d = e.eval(&[], &ctx)?;
            if d.is_null() {
                return Ok(Some(Output::Command { tag: "UPDATE 0".into() }));
            }
            let d = if matches!(d, Datum::Int(_)) && ty.is_integer() { d } else { d.cast(ty)? };
            match d.to_pk(ty) {
                Some(v) => pk.push(v),
                None => return Ok(Some(Output::Command { tag: "UPDATE 0".into() })),
            }
        }
        let cond = Condition { row: tabula_store::RowExistence::ExpectExist, column };
        match self.db.store.update_row(&t.name, &pk, &ops, &cond) {
            Ok(_) => Ok(Some(Output::Command { tag: "UPDATE 1".into() })),
            Err(StoreError::RowNotFound | StoreError::ConditionFailed(_)) => Ok(Some(Output::Command { tag: "UPDATE 0".into() })),
            Err(e) => Err(e.into()),
        }
    }
}

/// Statements one engine call does atomically: reads, and single-row inserts without DO UPDATE.
fn single_call(plan: &Plan) -> bool {
    match plan {
        Plan::Select(_) => true,
        // A plain multi-row INSERT is one atomic engine call too.
        Plan::Insert(i) => match i.on_conflict {
            OnConflict::Error => true,
            OnConflict::DoNothing { .. } => i.rows.len() == 1,
            OnConflict::DoUpdate { .. } => false,
        },
        _ => false,
    }
}

fn dml_output(tag: String, returning: &Option<Returning>, rows: Vec<SqlRow>) -> Output {
    match returning {
        Some(r) => Output::Rows { columns: r.columns.clone(), rows, tag },
        None => Output::Command { tag },
    }
}

/// The result columns a plan produces (RowDescription), known before it runs.
/// The highest `$n` in a statement.
fn max_placeholder(stmt: &Statement) -> usize {
    let mut n = 0;
    let _ = sqlparser::ast::visit_expressions(stmt, |e| {
        if let sqlparser::ast::Expr::Value(v) = e {
            if let sqlparser::ast::Value::Placeholder(p) = &v.value {
                n = n.max(p.strip_prefix('$').and_then(|d| d.parse().ok()).unwrap_or(0));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    n
}

/// DataFusion's EXPLAIN rows (plan type, plan) as PostgreSQL's: one `QUERY PLAN` line per row, the
/// physical plan (with its metrics under ANALYZE), whose scans name Tabula's access paths.
fn explain_rows(rows: Vec<SqlRow>) -> Output {
    let text = |d: &Datum| match d {
        Datum::Text(s) => s.clone(),
        _ => String::new(),
    };
    let physical: Vec<&SqlRow> =
        rows.iter().filter(|r| matches!(text(&r[0]).as_str(), "physical_plan" | "Plan with Metrics" | "Plan with Full Metrics")).collect();
    let chosen: Vec<&SqlRow> = if physical.is_empty() { rows.iter().collect() } else { physical };
    let lines: Vec<SqlRow> = chosen
        .iter()
        .flat_map(|r| r.get(1).map(text).unwrap_or_default().lines().map(|l| l.trim_end().to_string()).collect::<Vec<_>>())
        .filter(|l| !l.is_empty())
        .map(|l| vec![Datum::Text(l)])
        .collect();
    Output::Rows {
        columns: vec![OutputColumn { name: "QUERY PLAN".into(), ty: SqlType::Text, source: None }],
        rows: lines,
        tag: "EXPLAIN".into(),
    }
}

pub fn plan_columns(plan: &Plan) -> Vec<OutputColumn> {
    let text = |n: &str| vec![OutputColumn { name: n.into(), ty: SqlType::Text, source: None }];
    match plan {
        Plan::Select(s) => s.columns.clone(),
        Plan::Insert(InsertPlan { returning: Some(r), .. })
        | Plan::InsertSelect { insert: InsertPlan { returning: Some(r), .. }, .. }
        | Plan::Update(UpdatePlan { returning: Some(r), .. })
        | Plan::Delete(DeletePlan { returning: Some(r), .. }) => r.columns.clone(),
        Plan::Explain { .. } => text("QUERY PLAN"),
        Plan::SetConfig { .. } => text("set_config"),
        Plan::Fetch { columns, .. } | Plan::ExecutePrepared { columns, .. } | Plan::WithSubqueries { columns, .. } => columns.clone(),
        Plan::ShowVariable { name } if name == "all" => SHOW_ALL_COLUMNS.iter().flat_map(|n| text(n)).collect(),
        Plan::ShowVariable { name } => text(name),
        _ => vec![],
    }
}

fn parse_duration_ms(v: &str) -> Option<u64> {
    // Every statement reads statement_timeout, nearly always a plain number ("0").
    if let Ok(n) = v.parse::<u64>() {
        return Some(n);
    }
    parse_with_unit(v.trim().trim_matches('\''), "ms").filter(|n| *n >= 0.0).map(|n| n.round() as u64)
}

/// `version()` text, for the server's startup parameters.
pub fn server_version_text() -> String {
    version_string()
}

#[allow(dead_code)]
fn unused(_: ColumnDef) {}

#[cfg(test)]
mod setting_tests {
    use super::*;

    #[test]
    fn booleans_take_postgres_spellings_and_unique_prefixes() {
        for on in ["on", "ON", "true", "t", "tr", "yes", "y", "1"] {
            assert_eq!(parse_bool(on), Some(true), "{on}");
        }
        for off in ["off", "of", "false", "f", "no", "n", "0"] {
            assert_eq!(parse_bool(off), Some(false), "{off}");
        }
        for bad in ["o", "", "2", "flase", "onn"] {
            assert_eq!(parse_bool(bad), None, "{bad}");
        }
    }

    #[test]
    fn numbers_take_units_of_their_kind_and_show_in_the_largest_whole_unit() {
        assert_eq!(parse_with_unit("64MB", "kB"), Some(65536.0));
        assert_eq!(parse_with_unit("1GB", "8kB"), Some(131072.0));
        assert_eq!(parse_with_unit("2 min", "ms"), Some(120000.0));
        assert_eq!(parse_with_unit("1s", "kB"), None);
        assert_eq!(parse_with_unit("5", ""), Some(5.0));
        assert_eq!(parse_with_unit("5ms", ""), None);
        assert_eq!(parse_with_unit("lots", "kB"), None);
        assert_eq!(show_with_unit(65536.0, "kB"), "64MB");
        assert_eq!(show_with_unit(65537.0, "kB"), "65537kB");
        assert_eq!(show_with_unit(524288.0, "8kB"), "4GB");
        assert_eq!(show_with_unit(90000.0, "ms"), "90s");
        assert_eq!(show_with_unit(0.5, "ms"), "500us");
        assert_eq!(show_with_unit(0.0, "ms"), "0");
        assert_eq!(show_with_unit(-1.0, "kB"), "-1");
        assert_eq!(show_with_unit(100.0, ""), "100");
    }

    #[test]
    fn every_postgres_default_passes_its_own_check_unchanged() {
        // The table and the checks agree: PostgreSQL's defaults, as SHOW gives them, are valid and kept as they are.
        for (name, s) in postgres_settings() {
            assert_eq!(s.check(name, s.default).as_deref(), Ok(s.default), "{name}");
        }
    }
}
