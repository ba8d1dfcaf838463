//! Per-connection protocol handlers: startup, simple and extended query, cancel.

use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use async_trait::async_trait;
use bytes::BytesMut;
use futures::{stream, Sink};
use pgwire::api::auth::{finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata, StartupHandler};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::Format;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, PidSecretKeyGenerator, RandomPidSecretKeyGenerator};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::DataRow;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tabula_query::settings::{display_setting_name, REPORTED_SETTINGS};
use tabula_query::types::Zone;
use tabula_query::{Database, Datum, Output, QueryError, Session, SqlType};
use tracing::{debug, error, info_span, warn};

use crate::auth::{AuthMethod, Startup, Users};
use crate::errors::{error_info, to_pgwire};
use crate::extended::{Extended, StatementParser};
use crate::wire;

/// State all connections share.
pub struct Shared {
    pub db: Arc<Database>,
    pub auth: AuthMethod,
    pub users: Users,
    /// Running statements' cancel flags by backend pid, with the secret a cancel request must match.
    cancels: Mutex<HashMap<i32, (SecretKey, Arc<AtomicBool>)>>,
    /// One generator for every connection, whatever the authentication: backend pids are then unique, and a
    /// cancel request reaches the session it names.
    pub pids: Arc<dyn PidSecretKeyGenerator>,
    pub slow_statement_ms: u64,
    next_conn: AtomicI32,
}

impl Shared {
    pub fn new(db: Arc<Database>, slow_statement_ms: u64, auth: AuthMethod, users: Users) -> Arc<Shared> {
        Arc::new(Shared {
            db,
            auth,
            users,
            cancels: Mutex::new(HashMap::new()),
            pids: Arc::new(RandomPidSecretKeyGenerator::default()),
            slow_statement_ms,
            next_conn: AtomicI32::new(1),
        })
    }
}

/// The handlers of one connection; the session lives here.
pub struct Connection {
    pub shared: Arc<Shared>,
    /// Names of the statements the client prepared (Parse), for `DEALLOCATE ALL`.
    pub(crate) named: Mutex<std::collections::HashSet<String>>,
    session: Mutex<Option<Session>>,
    cancel: Arc<AtomicBool>,
    pid: OnceLock<i32>,
    pub id: i32,
    /// The address the client connected to.
    local: Option<SocketAddr>,
    /// When the COPY FROM STDIN under way started, and its text: it ends at CopyDone.
    copy_started: Mutex<Option<(Instant, String)>>,
}

impl Connection {
    pub fn new(shared: Arc<Shared>, local: Option<SocketAddr>) -> Arc<Connection> {
        let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
        Arc::new(Connection {
            shared,
            named: Mutex::new(Default::default()),
            session: Mutex::new(None),
            cancel: Arc::new(AtomicBool::new(false)),
            pid: OnceLock::new(),
            id,
            local,
            copy_started: Mutex::new(None),
        })
    }

    /// Runs `f` on the session, creating it on first use with the client's user and database.
    pub(crate) fn with_session<C: ClientInfo, T>(&self, client: &C, f: impl FnOnce(&mut Session) -> T) -> T {
        if self.pid.get().is_none() {
            // Password handlers assign the backend key; register it for cancel requests on first use.
            let (pid, key) = client.pid_and_secret_key();
            if self.pid.set(pid).is_ok() {
                self.shared.cancels.lock().unwrap_or_else(|p| p.into_inner()).insert(pid, (key, self.cancel.clone()));
            }
        }
        let mut guard = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let session = guard.get_or_insert_with(|| {
            let user = client.metadata().get("user").cloned().unwrap_or_else(|| "tabula".into());
            let database = client.metadata().get("database").cloned().unwrap_or_else(|| "tabula".into());
            let mut s = tabula_query::Session::new(&self.shared.db, &user, &database);
            s.interrupt.cancelled = self.cancel.clone();
            if let Err(e) = s.apply_startup(client.metadata().iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
                // Unreachable in practice: the same check refused the connection at startup.
                warn!(conn = self.id, "startup settings not applied: {e}");
            }
            s.set_backend(self.pid.get().copied().unwrap_or(0), Some(client.socket_addr()), self.local);
            s
        });
        self.cancel.store(false, Ordering::SeqCst);
        // Statements run right here on the worker: most take microseconds, and handing the worker's other
        // connections to another thread (block_in_place) costs more than it saves. Long reads stream page by
        // page as the client consumes them.
        f(session)
    }
}

impl Connection {
    /// `DEALLOCATE name | ALL`: drops named statements from the client's store, as PostgreSQL drops them
    /// whether they came from SQL or from the protocol's Parse.
    pub(crate) fn deallocate<C>(&self, client: &C, name: Option<String>) -> Response
    where
        C: ClientPortalStore,
        C::PortalStore: PortalStore,
    {
        let store = client.portal_store();
        let mut named = self.named.lock().unwrap_or_else(|p| p.into_inner());
        match name {
            Some(name) => {
                if store.get_statement(&name).is_none() {
                    let message = format!("prepared statement \"{name}\" does not exist");
                    return Response::Error(Box::new(ErrorInfo::new("ERROR".into(), "26000".into(), message)));
                }
                store.rm_statement(&name);
                named.remove(&name);
                Response::Execution(command_tag("DEALLOCATE"))
            }
            None => {
                for n in named.drain() {
                    store.rm_statement(&n);
                }
                Response::Execution(command_tag("DEALLOCATE ALL"))
            }
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.get() {
            self.shared.cancels.lock().unwrap_or_else(|p| p.into_inner()).remove(pid);
        }
    }
}

/// The parameters reported at startup; the session's user and application come from the client.
pub struct Params;

pub fn server_parameters<C: ClientInfo>(client: &C) -> HashMap<String, String> {
    let mut m = HashMap::new();
    for (k, v) in [
        ("server_version", tabula_query::expr::SERVER_VERSION),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("TimeZone", "UTC"),
        ("IntervalStyle", "postgres"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("is_superuser", "on"),
        ("in_hot_standby", "off"),
        ("default_transaction_read_only", "off"),
        ("search_path", "\"$user\", public"),
    ] {
        m.insert(k.to_string(), v.to_string());
    }
    // The zone the client asked for (PGTZ, pgjdbc's JVM zone, `-c TimeZone=...` in its options), as SET
    // shows it; the startup settings were checked before the connection was accepted.
    let asked = tabula_query::settings::startup_settings(client.metadata().iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if let Some((_, zone)) = asked.ok().and_then(|s| s.into_iter().rfind(|(k, _)| k == "timezone")) {
        m.insert("TimeZone".into(), zone);
    }
    m.insert("session_authorization".into(), client.metadata().get("user").cloned().unwrap_or_else(|| "tabula".into()));
    m.insert("application_name".into(), client.metadata().get("application_name").cloned().unwrap_or_default());
    m
}

#[async_trait]
impl StartupHandler for Connection {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Trust authentication: any user name is accepted (the server listens on loopback by default).
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            let (pid, key) = self.shared.pids.generate(&*client);
            client.set_pid_and_secret_key(pid, key.clone());
            let _ = self.pid.set(pid);
            self.shared.cancels.lock().unwrap_or_else(|p| p.into_inner()).insert(pid, (key, self.cancel.clone()));
            finish_authentication(client, &Params).await?;
        }
        Ok(())
    }
}

pub struct Canceller {
    pub shared: Arc<Shared>,
}

#[async_trait]
impl CancelHandler for Canceller {
    async fn on_cancel_request(&self, req: CancelRequest) {
        let cancels = self.shared.cancels.lock().unwrap_or_else(|p| p.into_inner());
        match cancels.get(&req.pid) {
            Some((key, flag)) if key_bytes(key) == key_bytes(&req.secret_key) => flag.store(true, Ordering::SeqCst),
            _ => debug!(pid = req.pid, "cancel request for an unknown backend ignored"),
        }
    }
}

/// A backend secret as bytes: a cancel request may carry the 4-byte key of protocol 3.0 either way.
fn key_bytes(k: &SecretKey) -> Vec<u8> {
    match k {
        SecretKey::I32(v) => v.to_be_bytes().to_vec(),
        SecretKey::Bytes(b) => b.to_vec(),
    }
}

pub(crate) fn command_tag(tag: &str) -> Tag {
    Tag::new(tag)
}

/// A query response: rows with their RowDescription, tagged like PostgreSQL (the row count is appended
/// by the protocol layer).
fn rows_response(
    columns: &[tabula_query::OutputColumn],
    rows: Vec<Vec<Datum>>,
    tag: &str,
    format: Option<&Format>,
    zone: &Zone,
) -> PgWireResult<Response> {
    let fields: Arc<Vec<FieldInfo>> = Arc::new(wire::fields(columns, format));
    let types: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
    let mut buf = wire::row_buffer(rows.len());
    let encoded: Vec<PgWireResult<_>> =
        rows.iter().map(|r| wire::encode_owned_row(r, &fields, &types, zone, &mut buf).map_err(to_pgwire)).collect();
    let mut resp = QueryResponse::new(fields, stream::iter(encoded));
    // "SELECT 3" -> "SELECT", "INSERT 0 3" -> "INSERT 0": the count is added when the rows are sent.
    let base = match tag.rsplit_once(' ') {
        Some((head, n)) if n.parse::<u64>().is_ok() => head,
        _ => tag,
    };
    resp.set_command_tag(base);
    Ok(Response::Query(resp))
}

/// `zone`: the session's `TimeZone` when the statement ran.
pub(crate) fn to_response(out: Output, format: Option<&Format>, zone: Zone) -> PgWireResult<Response> {
    Ok(match out {
        Output::Rows { columns, rows, tag } => rows_response(&columns, rows, &tag, format, &zone)?,
        Output::Stream { columns, cursor } => {
            let fields: Arc<Vec<FieldInfo>> = Arc::new(wire::fields(&columns, format));
            let types: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
            let rows = EncodedRows { rows: cursor, fields: fields.clone(), types, zone, buf: BytesMut::new(), ready: VecDeque::new() };
            Response::Query(QueryResponse::new(fields, stream::iter(rows)))
        }
        Output::Command { tag } => match tag.as_str() {
            "BEGIN" => Response::TransactionStart(command_tag(&tag)),
            "COMMIT" | "ROLLBACK" => Response::TransactionEnd(command_tag(&tag)),
            _ => Response::Execution(command_tag(&tag)),
        },
        Output::Set { tag, .. } => Response::Execution(command_tag(&tag)),
        Output::CopyIn { columns, binary } => Response::CopyIn(CopyResponse::new(binary as i8, columns, stream::empty())),
        Output::CopyOut { columns, binary, prefix, rows, suffix } => {
            // In the order `crate::copy_out` reads it: the prefix, the rows, the suffix.
            let chunks = std::iter::once(prefix).chain(rows).chain(std::iter::once(suffix));
            let data = chunks.map(|c| Ok(CopyData::new(bytes::Bytes::from(c))));
            // Built as text and then marked binary: `CopyResponse::new` would append a second binary trailer.
            let mut response = CopyResponse::new(0, columns, stream::iter(data.collect::<Vec<_>>()));
            response.format = binary as i8;
            Response::CopyOut(response)
        }
        Output::Empty => Response::EmptyQuery,
        Output::Deallocate(_) => return Err(to_pgwire(QueryError::Internal("DEALLOCATE outside a query handler".into()))),
    })
}

/// A streamed result, encoded a batch (an engine page) at a time as the client takes it: memory stays
/// bounded, and rows go from the engine's buffers into DataRows without being copied into rows of their own.
struct EncodedRows {
    rows: tabula_query::output::RowStream,
    fields: Arc<Vec<FieldInfo>>,
    types: Vec<SqlType>,
    zone: Zone,
    buf: BytesMut,
    ready: VecDeque<PgWireResult<DataRow>>,
}

impl Iterator for EncodedRows {
    type Item = PgWireResult<DataRow>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(r);
            }
            let EncodedRows { rows, fields, types, zone, buf, ready } = self;
            let more = rows.next_rows(&mut |row| {
                ready.push_back(wire::encode_row(row, fields, types, zone, buf).map_err(to_pgwire));
                Ok(())
            });
            match more {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => self.ready.push_back(Err(to_pgwire(e))),
            }
        }
    }
}

impl Connection {
    /// Logs a statement that took longer than the threshold, with the plan it ran.
    pub(crate) fn log_slow(&self, sql: &str, started: Instant) {
        log_slow(self.id, self.shared.slow_statement_ms, sql, self.last_plan(), started);
    }

    /// The plan of the session's last statement, printed only if a statement turns out slow.
    fn last_plan(&self) -> Option<Arc<tabula_query::Plan>> {
        self.session.lock().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(|s| s.last_plan_shared())
    }

    /// A statement's result, timed to its real end for the slow-statement log: a streamed result when its
    /// stream ends, a COPY FROM STDIN at its CopyDone, anything else now. A failed statement is logged at
    /// ERROR with its text, as PostgreSQL logs it (`log_min_error_statement`).
    pub(crate) fn timed(&self, sql: &str, started: Instant, out: Result<Output, QueryError>) -> Result<Output, QueryError> {
        match out {
            Ok(Output::Stream { columns, cursor }) => {
                let (id, threshold, sql, plan) = (self.id, self.shared.slow_statement_ms, sql.to_string(), self.last_plan());
                Ok(Output::Stream { columns, cursor: cursor.on_drop(move || log_slow(id, threshold, &sql, plan, started)) })
            }
            Ok(out @ Output::CopyIn { .. }) => {
                *self.copy_started.lock().unwrap_or_else(|p| p.into_inner()) = Some((started, sql.to_string()));
                Ok(out)
            }
            Err(e) => {
                log_failed(self.id, sql, &e);
                Err(e)
            }
            out => {
                self.log_slow(sql, started);
                out
            }
        }
    }
}

fn log_slow(conn: i32, threshold_ms: u64, sql: &str, plan: Option<Arc<tabula_query::Plan>>, started: Instant) {
    let ms = started.elapsed().as_millis() as u64;
    if threshold_ms > 0 && ms >= threshold_ms {
        let plan = plan.map(|p| p.to_string()).unwrap_or_default();
        warn!(conn, ms, sql, plan = %plan.trim_end(), "slow statement");
    }
}

fn log_failed(conn: i32, sql: &str, e: &QueryError) {
    error!(conn, code = e.sqlstate(), statement = sql, "{e}");
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn on_query<C>(&self, client: &mut C, query: pgwire::messages::simplequery::Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        crate::copy_out::on_query(self, client, query).await
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let span = info_span!("statement", conn = self.id, protocol = "simple");
        let _e = span.enter();
        let started = std::time::Instant::now();
        let (results, reported, notices) = self.with_session(client, |s| {
            let r = s.execute_sql_zoned(query);
            let reported: Vec<(String, String)> = REPORTED_SETTINGS
                .iter()
                .filter_map(|k| s.setting(k).map(|v| (display_setting_name(k).to_string(), v.to_string())))
                .collect();
            (r, reported, s.take_notices())
        });
        let streamed = results.iter().any(|(r, _)| matches!(r, Ok(Output::Stream { .. } | Output::CopyIn { .. })));
        if !streamed {
            self.log_slow(query, started);
        }
        send_notices(client, notices).await?;
        let mut out = Vec::new();
        for (r, zone) in results {
            let r = match r {
                r @ Ok(Output::Stream { .. } | Output::CopyIn { .. }) | r @ Err(_) => self.timed(query, started, r),
                r => r,
            };
            match r {
                Ok(Output::Set { name, value, tag }) => {
                    report_parameter(client, &name, &value, &reported).await?;
                    out.push(Response::Execution(command_tag(&tag)));
                }
                Ok(Output::Deallocate(name)) => out.push(self.deallocate(client, name)),
                Ok(o) => out.push(to_response(o, None, zone)?),
                Err(e) => out.push(Response::Error(Box::new(error_info(&e)))),
            }
        }
        Ok(out)
    }
}

/// NOTICEs go out before the results they belong to (of several statements in one query, before all of
/// their results, as settings' reports do).
pub(crate) async fn send_notices<C>(client: &mut C, notices: Vec<tabula_query::Notice>) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    use futures::SinkExt;
    for n in notices {
        let mut info = ErrorInfo::new(n.severity.to_string(), n.sqlstate.to_string(), tabula_query::temp::visible(&n.message));
        info.hint = n.hint.map(|h| tabula_query::temp::visible(&h));
        client.feed(PgWireBackendMessage::NoticeResponse(info.into())).await?;
    }
    Ok(())
}

pub(crate) async fn report_parameter<C>(client: &mut C, name: &str, value: &str, _all: &[(String, String)]) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    use futures::SinkExt;
    client
        .feed(PgWireBackendMessage::ParameterStatus(pgwire::messages::startup::ParameterStatus::new(name.to_string(), value.to_string())))
        .await?;
    Ok(())
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.with_session(client, |s| s.copy_data(&data.data));
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        use futures::SinkExt;
        let rows = self.with_session(client, |s| s.copy_done());
        let copy = self.copy_started.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((started, sql)) = copy {
            match &rows {
                Ok(_) => self.log_slow(&sql, started),
                Err(e) => log_failed(self.id, &sql, e),
            }
        }
        let rows = rows.map_err(to_pgwire)?;
        client.send(PgWireBackendMessage::CommandComplete(Tag::new("COPY").with_rows(rows as usize).into())).await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.copy_started.lock().unwrap_or_else(|p| p.into_inner()).take();
        to_pgwire(self.with_session(client, |s| s.copy_fail(&fail.message)))
    }
}

/// Everything pgwire asks for, for one connection.
pub struct Handlers {
    pub conn: Arc<Connection>,
    extended: Arc<Extended>,
    canceller: Arc<Canceller>,
    startup: Arc<Startup>,
}

impl Handlers {
    pub fn new(shared: Arc<Shared>, local: Option<SocketAddr>) -> Handlers {
        let conn = Connection::new(shared.clone(), local);
        let parser = Arc::new(StatementParser { conn: Arc::downgrade(&conn) });
        let startup = Arc::new(Startup::new(shared.auth, &shared.users, shared.pids.clone(), conn.clone()));
        Handlers { extended: Arc::new(Extended { conn: conn.clone(), parser }), canceller: Arc::new(Canceller { shared }), conn, startup }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.conn.clone()
    }
    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.extended.clone()
    }
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }
    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.canceller.clone()
    }
    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.conn.clone()
    }
}

#[allow(dead_code)]
fn _assert(e: QueryError) -> PgWireError {
    to_pgwire(e)
}
