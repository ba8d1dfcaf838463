//! The listener: accepts connections, enforces limits, shuts down gracefully.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::StartupHandler;
use pgwire::api::{ClientInfo, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tabula_kv::Engine;
use tabula_kv_rocks::{RocksEngine, RocksOptions};
use tabula_kv_tikv::{TikvAddress, TikvEngine};
use tabula_query::Database;
use tabula_store::{Durability, Store, StoreConfig};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{info, warn};

use crate::auth::{AuthMethod, Users};
use crate::connection;
use crate::handler::{Handlers, Shared};
use crate::panics;
use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    /// A TiKV cluster to keep the data in (`tikv://pd:2379[,...][/prefix]`) instead of RocksDB in `data_dir`.
    pub store: Option<String>,
    pub listen: String,
    /// The default of `synchronous_commit`: whether a commit returns only once synced to disk. Sessions may
    /// set it either way; the log is opened for both (`Durability::Group`).
    pub synchronous_commit: bool,
    /// How often the log is synced for commits that did not wait for it (PostgreSQL's `wal_writer_delay`).
    pub wal_writer_delay: Duration,
    pub max_connections: usize,
    /// Statements slower than this are logged with their text (0: never).
    pub slow_statement_ms: u64,
    pub block_cache_bytes: usize,
    /// Memory one analytic statement may hold (bytes); over it, 53200 unless the operator spills.
    pub statement_memory_bytes: usize,
    /// Memory all analytic statements together may hold (bytes).
    pub memory_limit_bytes: usize,
    pub auth: AuthMethod,
    /// Serve `auth = trust` on an address other than loopback (refused otherwise: anyone reaching the port
    /// would log in as anyone).
    pub allow_trust_remote: bool,
    /// User names and passwords for the password methods.
    pub users: HashMap<String, String>,
    /// PEM certificate chain and private key: clients may then ask for TLS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Refuse clients that do not use TLS (needs `tls`).
    pub require_tls: bool,
    /// Partition size that triggers a split (bytes).
    pub split_bytes: i64,
    /// Longest statement text accepted (bytes); longer ones are refused with 54000.
    pub max_statement_bytes: usize,
    /// How long a connection's thread busy-polls its socket after a reply before it sleeps (zero: never).
    pub busy_poll: Duration,
    /// Bytes of log blocks written at start, for durable commits to overwrite (`RocksOptions::log_prefill_bytes`).
    pub wal_prefill_bytes: usize,
    /// Most bytes of keys and values one transaction block may write (`StoreConfig::max_transaction_bytes`).
    pub max_transaction_bytes: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            data_dir: PathBuf::from("tabula-data"),
            store: None,
            listen: "127.0.0.1:5432".into(),
            synchronous_commit: true,
            wal_writer_delay: Duration::from_millis(200),
            max_connections: 100,
            slow_statement_ms: 1000,
            block_cache_bytes: 256 << 20,
            statement_memory_bytes: tabula_query::memory::DEFAULT_STATEMENT_BYTES,
            memory_limit_bytes: tabula_query::memory::DEFAULT_SERVER_BYTES,
            auth: AuthMethod::Trust,
            allow_trust_remote: false,
            users: HashMap::new(),
            tls: None,
            require_tls: false,
            split_bytes: StoreConfig::default().split_bytes,
            max_statement_bytes: tabula_query::database::DEFAULT_MAX_STATEMENT_BYTES,
            busy_poll: Duration::from_micros(100),
            wal_prefill_bytes: RocksOptions::default().log_prefill_bytes,
            max_transaction_bytes: StoreConfig::default().max_transaction_bytes,
        }
    }
}

/// A server started in the background (tests, embedding).
pub struct RunningServer {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl RunningServer {
    /// Stops accepting, lets connections finish (up to a grace period), closes the store.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        self.task.await.map_err(|e| anyhow!("server task failed: {e}"))?
    }
}

/// Opens the store and binds the listener; serving starts in a background task.
pub async fn start(config: ServerConfig) -> anyhow::Result<RunningServer> {
    panics::install_hook();
    let tls = config.tls.as_ref().map(|(cert, key)| crate::auth::tls_acceptor(cert, key)).transpose()?;
    if config.require_tls && tls.is_none() {
        return Err(anyhow!("requiring TLS needs a certificate and key: give --tls-cert and --tls-key"));
    }
    if config.auth != AuthMethod::Trust && config.users.is_empty() {
        return Err(anyhow!(
            "authentication method {:?} needs users: give them in the configuration file's [users] table or TABULA_USERS",
            config.auth
        ));
    }
    let store_config = StoreConfig {
        durability: Durability::Group { interval: config.wal_writer_delay },
        split_bytes: config.split_bytes,
        merge_bytes: config.split_bytes / 8,
        max_transaction_bytes: config.max_transaction_bytes,
        ..StoreConfig::default()
    };
    // The log is synced by the store's group commit (sessions with synchronous_commit on wait for it), so
    // no commit syncs it itself.
    let rocks =
        RocksOptions { block_cache_bytes: config.block_cache_bytes, sync_writes: false, log_prefill_bytes: config.wal_prefill_bytes };
    let engine: Arc<dyn Engine> = match &config.store {
        None => Arc::new(RocksEngine::open(&config.data_dir, &rocks).map_err(|e| anyhow!("{e}"))?),
        Some(url) => {
            let address = TikvAddress::parse(url).map_err(|e| anyhow!("--store: {e}"))?;
            Arc::new(TikvEngine::open(&address).map_err(|e| anyhow!("{e}"))?)
        }
    };
    let store = Store::open(engine, store_config).map_err(|e| anyhow!("{e}"))?;
    let listener = TcpListener::bind(&config.listen).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            anyhow!(
                "cannot listen on {}: the address is already in use (is another server running? choose another with --listen)",
                config.listen
            )
        } else {
            anyhow!("cannot listen on {}: {e}", config.listen)
        }
    })?;
    let addr = listener.local_addr().context("local address")?;
    if config.auth == AuthMethod::Trust && !addr.ip().is_loopback() {
        if !config.allow_trust_remote {
            return Err(anyhow!(
                "refusing to serve {addr} with trust authentication: anyone who reaches it could log in as any user \
                 without a password. Choose --auth scram-sha-256 with users, listen on a loopback address, or start \
                 with --allow-trust-remote to accept that"
            ));
        }
        warn!(%addr, "trust authentication on an address other than loopback: anyone who reaches it logs in as any user");
    }
    let db = Database::new(Arc::new(store)).map_err(|e| anyhow!("cannot read the catalog's roles: {e}"))?;
    db.set_max_statement_bytes(config.max_statement_bytes);
    if config.statement_memory_bytes > config.memory_limit_bytes {
        return Err(anyhow!(
            "the statement memory budget ({} bytes) is larger than the server's memory limit ({} bytes)",
            config.statement_memory_bytes,
            config.memory_limit_bytes
        ));
    }
    db.set_memory_limits(config.statement_memory_bytes, config.memory_limit_bytes);
    db.set_default("synchronous_commit", if config.synchronous_commit { "on" } else { "off" }).map_err(|e| anyhow!("{e}"))?;
    for (name, value) in server_settings(&config) {
        db.set_server_setting(name, &value).map_err(|e| anyhow!("{e}"))?;
    }
    db.roles().set_configured(config.users.keys().cloned().collect());
    let users = Users::new(config.users.clone(), config.auth, db.clone());
    let shared = Shared::new(db, config.slow_statement_ms, config.auth, users);
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(serve(listener, shared, config, tls, stopped));
    Ok(RunningServer { addr, stop, task })
}

async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    config: ServerConfig,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    mut stopped: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let active = Arc::new(AtomicUsize::new(0));
    let mut conns = JoinSet::new();
    // Set when the grace period ends: connection threads drop their sessions and end.
    let (abort, _) = watch::channel(false);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        warn!(error = %e, "accept failed");
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                let (slot, n) = Slot::take(&active);
                if n > config.max_connections {
                    conns.spawn(async move {
                        let _slot = slot;
                        let _ = pgwire::tokio::process_socket(socket, None, TooManyClients).await;
                    });
                    continue;
                }
                let handlers = Handlers::new(shared.clone(), socket.local_addr().ok());
                let id = handlers.conn.id;
                let tls = tls.clone();
                let (done, finished) = tokio::sync::oneshot::channel::<()>();
                let mut aborted = abort.subscribe();
                // The closer shuts the socket down when the grace period ends: the connection's thread may be
                // asleep in `recv`.
                let (socket, closer) = match socket.into_std().and_then(|s| s.try_clone().map(|c| (s, c))) {
                    Ok(pair) => pair,
                    Err(e) => {
                        warn!(error = %e, "cannot detach an accepted socket");
                        continue;
                    }
                };
                let policy = connection::Policy {
                    busy_poll: config.busy_poll,
                    max_message: shared.db.max_statement_bytes().saturating_add(MESSAGE_OVERHEAD),
                    sasl: config.auth == AuthMethod::ScramSha256,
                    require_tls: config.require_tls,
                };
                // One thread per connection, each with its own single-threaded runtime, as PostgreSQL has
                // one process per connection: the kernel wakes exactly the thread whose socket became
                // readable, with no hand-off between scheduler workers on the way.
                let spawned = std::thread::Builder::new()
                    .name(format!("{}{id}", panics::CONNECTION_THREAD))
                    .stack_size(tabula_query::depth::STACK_BYTES)
                    .spawn(move || {
                        // Released however the thread ends, a panic's unwinding included.
                        let _slot = slot;
                        let _done = done;
                        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                            Ok(rt) => rt,
                            Err(e) => return warn!(error = %e, "cannot start a connection runtime"),
                        };
                        // Panics are caught per message (`connection`); this catches the rest (a handler's
                        // drop, say), so that none ends the thread without a word.
                        let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            rt.block_on(async move {
                                let span = tracing::info_span!("connection", conn = id, %peer);
                                let _e = span.enter();
                                let socket = match tokio::net::TcpStream::from_std(socket) {
                                    Ok(s) => s,
                                    Err(e) => return warn!(error = %e, "cannot register a connection socket"),
                                };
                                if let Err(e) = connection::serve(socket, tls, handlers, &policy).await {
                                    tracing::debug!(error = %e, "connection ended with an error");
                                }
                            })
                        }));
                        if let Err(payload) = served {
                            tracing::error!(conn = id, "internal error, connection closed: {}", panics::describe(payload.as_ref()));
                        }
                    });
                if let Err(e) = spawned {
                    warn!(error = %e, "cannot start a connection thread");
                    continue;
                }
                conns.spawn(async move {
                    tokio::pin!(finished);
                    let aborting = tokio::select! {
                        _ = &mut finished => false,
                        r = aborted.wait_for(|a| *a) => r.is_ok(),
                    };
                    if aborting {
                        let _ = closer.shutdown(std::net::Shutdown::Both);
                        let _ = finished.await;
                    }
                });
            }
            _ = stopped.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    info!("shutting down: no new connections; waiting for open ones");
    drop(listener);
    let grace = tokio::time::sleep(Duration::from_secs(5));
    tokio::pin!(grace);
    loop {
        tokio::select! {
            next = conns.join_next() => if next.is_none() { break },
            _ = &mut grace => {
                warn!(open = conns.len(), "closing connections still open after the grace period");
                let _ = abort.send(true);
                while conns.join_next().await.is_some() {}
                break;
            }
        }
    }
    // Dropping the last handle closes the store: statistics persisted, log flushed.
    drop(shared);
    info!("stopped");
    Ok(())
}

/// Room in a message beyond the statement text it may carry: names, parameter types, parameters.
const MESSAGE_OVERHEAD: usize = 1 << 20;

/// One connection's place under `--max-connections`, given back when dropped: on every path out of a
/// connection, a panic's unwinding included.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// Takes a place; returns it with the number of connections counting this one.
    fn take(active: &Arc<AtomicUsize>) -> (Slot, usize) {
        let n = active.fetch_add(1, Ordering::SeqCst) + 1;
        (Slot(active.clone()), n)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers a connection over the limit with 53300, as PostgreSQL does.
struct TooManyClients;

#[async_trait]
impl StartupHandler for TooManyClients {
    async fn on_startup<C>(&self, client: &mut C, _message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let info = ErrorInfo::new("FATAL".into(), "53300".into(), "sorry, too many clients already".into());
        client.send(PgWireBackendMessage::ErrorResponse(info.into())).await?;
        Err(PgWireError::IoError(std::io::Error::other("too many clients")))
    }
}

impl PgWireServerHandlers for TooManyClients {
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::new(TooManyClients)
    }
}

/// The configuration `SHOW` gives (`tabula_query::settings::SERVER_SETTINGS`), written as PostgreSQL writes
/// its own memory and time settings.
fn server_settings(config: &ServerConfig) -> [(&'static str, String); 7] {
    [
        ("tabula.statement_memory", pg_size(config.statement_memory_bytes)),
        ("tabula.memory_limit", pg_size(config.memory_limit_bytes)),
        ("max_connections", config.max_connections.to_string()),
        ("wal_writer_delay", pg_duration(config.wal_writer_delay)),
        ("tabula.block_cache_size", pg_size(config.block_cache_bytes)),
        ("tabula.busy_poll", pg_duration(config.busy_poll)),
        ("tabula.wal_prefill_size", pg_size(config.wal_prefill_bytes)),
    ]
}

/// A size in the largest unit that divides it, as PostgreSQL shows `shared_buffers` (`1GB`, `256MB`, `8kB`).
fn pg_size(bytes: usize) -> String {
    const UNITS: [(&str, usize); 4] = [("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)];
    match UNITS.iter().find(|(_, size)| bytes > 0 && bytes.is_multiple_of(*size)) {
        Some((unit, size)) => format!("{}{unit}", bytes / size),
        None if bytes == 0 => "0".into(),
        None => format!("{bytes}B"),
    }
}

/// A duration in the largest unit that divides it, as PostgreSQL shows `wal_writer_delay` (`200ms`, `1s`).
fn pg_duration(d: Duration) -> String {
    const UNITS: [(&str, u128); 6] =
        [("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000), ("s", 1_000_000), ("ms", 1_000), ("us", 1)];
    let us = d.as_micros();
    match UNITS.iter().find(|(_, size)| us > 0 && us.is_multiple_of(*size)) {
        Some((unit, size)) => format!("{}{unit}", us / size),
        None => "0".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_as_postgresql_writes_them() {
        assert_eq!(pg_size(256 << 20), "256MB");
        assert_eq!(pg_size(1 << 30), "1GB");
        assert_eq!(pg_size(1536 << 20), "1536MB");
        assert_eq!(pg_size(8 << 10), "8kB");
        assert_eq!(pg_size(1000), "1000B");
        assert_eq!(pg_size(0), "0");
        assert_eq!(pg_duration(Duration::from_millis(200)), "200ms");
        assert_eq!(pg_duration(Duration::from_micros(100)), "100us");
        assert_eq!(pg_duration(Duration::from_secs(120)), "2min");
        assert_eq!(pg_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(pg_duration(Duration::ZERO), "0");
    }
}
