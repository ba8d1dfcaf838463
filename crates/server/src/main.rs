//! The `tabula` binary: `tabula` alone serves an embedded store in `./tabula-data` on 127.0.0.1:5432.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use serde::Deserialize;
use tabula_server::{start, ServerConfig};

#[derive(Parser, Debug)]
#[command(name = "tabula", version, about = "Tabula: a PostgreSQL-compatible wide-column database on RocksDB or TiKV")]
struct Cli {
    /// Directory of the embedded store [default: ./tabula-data]
    #[arg(long, env = "TABULA_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Keep the data in a TiKV cluster instead: tikv://pd-host:port[,pd-host:port...][/keyspace-prefix]
    /// [default: the embedded store in --data-dir]
    #[arg(long, env = "TABULA_STORE")]
    store: Option<String>,
    /// Address to listen on [default: 127.0.0.1:5432]
    #[arg(long, env = "TABULA_LISTEN")]
    listen: Option<String>,
    /// Default commit durability: `sync` (synchronous_commit = on: a commit returns once synced) or `group`
    /// (synchronous_commit = off: the log is synced every --wal-writer-delay); sessions may set either [default: sync]
    #[arg(long, env = "TABULA_DURABILITY")]
    durability: Option<String>,
    /// Milliseconds between syncs of the log for commits that do not wait for one [default: 200]
    #[arg(long, env = "TABULA_WAL_WRITER_DELAY")]
    wal_writer_delay: Option<u64>,
    /// Most simultaneous connections [default: 100]
    #[arg(long, env = "TABULA_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Log statements slower than this many milliseconds (0: never) [default: 1000]
    #[arg(long, env = "TABULA_SLOW_STATEMENT_MS")]
    slow_statement_ms: Option<u64>,
    /// Longest statement text accepted, in bytes [default: 16777216]
    #[arg(long, env = "TABULA_MAX_STATEMENT_BYTES")]
    max_statement_bytes: Option<usize>,
    /// Microseconds a connection busy-polls its socket after each reply before it sleeps (0: never) [default: 100]
    #[arg(long, env = "TABULA_BUSY_POLL_US")]
    busy_poll_us: Option<u64>,
    /// MiB of memory for the block cache of recently read table blocks (PostgreSQL's shared_buffers) [default: 256]
    #[arg(long, env = "TABULA_BLOCK_CACHE_MB")]
    block_cache_mb: Option<usize>,
    /// MiB of memory one analytic statement may hold (joins, sorts, aggregates); over it a sort or aggregate
    /// spills to disk and a join fails with 53200 [default: 1024]
    #[arg(long, env = "TABULA_STATEMENT_MEMORY_MB")]
    statement_memory_mb: Option<usize>,
    /// MiB of memory all analytic statements together may hold; over it statements fail with 53200 [default: 4096]
    #[arg(long, env = "TABULA_MEMORY_LIMIT_MB")]
    memory_limit_mb: Option<usize>,
    /// MiB of keys and values one transaction block may write (its writes are held in memory until it
    /// commits); over it a write fails with 54000 [default: 64]
    #[arg(long, env = "TABULA_MAX_TRANSACTION_MB")]
    max_transaction_mb: Option<usize>,
    /// MiB of log blocks written at start, for durable commits to overwrite rather than append to (0: none) [default: 16]
    #[arg(long, env = "TABULA_WAL_PREFILL_MB")]
    wal_prefill_mb: Option<usize>,
    /// Log level: error, warn, info, debug, trace [default: info]
    #[arg(long, env = "TABULA_LOG")]
    log_level: Option<String>,
    /// Authentication: trust, password, md5 or scram-sha-256 [default: trust]
    #[arg(long, env = "TABULA_AUTH")]
    auth: Option<String>,
    /// Allow --auth trust on an address other than loopback: anyone who reaches the port logs in as anyone
    #[arg(long, env = "TABULA_ALLOW_TRUST_REMOTE")]
    allow_trust_remote: bool,
    /// Users as `name:password,name:password` (also the configuration file's [users] table)
    #[arg(long, env = "TABULA_USERS", hide_env_values = true)]
    users: Option<String>,
    /// TLS certificate chain (PEM); with --tls-key, clients may use TLS
    #[arg(long, env = "TABULA_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM)
    #[arg(long, env = "TABULA_TLS_KEY")]
    tls_key: Option<PathBuf>,
    /// Refuse every client that does not use TLS (28000), as pg_hba's hostssl; needs --tls-cert and --tls-key
    #[arg(long, env = "TABULA_REQUIRE_TLS")]
    require_tls: bool,
    /// A TOML file with any of the settings above (flags and environment win)
    #[arg(long, env = "TABULA_CONFIG")]
    config: Option<PathBuf>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    data_dir: Option<PathBuf>,
    store: Option<String>,
    listen: Option<String>,
    durability: Option<String>,
    wal_writer_delay: Option<u64>,
    max_connections: Option<usize>,
    slow_statement_ms: Option<u64>,
    max_statement_bytes: Option<usize>,
    busy_poll_us: Option<u64>,
    block_cache_mb: Option<usize>,
    statement_memory_mb: Option<usize>,
    memory_limit_mb: Option<usize>,
    wal_prefill_mb: Option<usize>,
    max_transaction_mb: Option<usize>,
    log_level: Option<String>,
    auth: Option<String>,
    allow_trust_remote: Option<bool>,
    users: Option<std::collections::HashMap<String, String>>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    require_tls: Option<bool>,
}

/// A setting given in MiB, in bytes.
fn mib(flag: &str, mb: usize) -> anyhow::Result<usize> {
    mb.checked_mul(1 << 20).with_context(|| format!("{flag} {mb} is too large"))
}

/// Whether commits wait for the log's sync by default (`synchronous_commit`).
fn synchronous_commit(s: &str) -> anyhow::Result<bool> {
    match s {
        "sync" => Ok(true),
        "group" => Ok(false),
        other => anyhow::bail!("unknown durability \"{other}\": use sync or group"),
    }
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("tabula: {e:#}");
        std::process::exit(1);
    }
}

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let file: FileConfig = match &cli.config {
        Some(p) => toml::from_str(&std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?)
            .with_context(|| format!("bad configuration file {}", p.display()))?,
        None => FileConfig::default(),
    };
    let level = cli.log_level.or(file.log_level).unwrap_or_else(|| "info".into());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(format!(
                "tabula={level},tabula_server={level},tabula_query={level},tabula_store={level}"
            ))
            .context("bad log level")?,
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal: a log file or journald gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let defaults = ServerConfig::default();
    let config = ServerConfig {
        data_dir: cli.data_dir.or(file.data_dir).unwrap_or(defaults.data_dir),
        store: cli.store.or(file.store),
        listen: cli.listen.or(file.listen).unwrap_or(defaults.listen),
        synchronous_commit: synchronous_commit(cli.durability.or(file.durability).as_deref().unwrap_or("sync"))?,
        wal_writer_delay: match cli.wal_writer_delay.or(file.wal_writer_delay) {
            Some(0) => anyhow::bail!("--wal-writer-delay must be at least 1 millisecond"),
            Some(ms) => Duration::from_millis(ms),
            None => defaults.wal_writer_delay,
        },
        max_connections: cli.max_connections.or(file.max_connections).unwrap_or(defaults.max_connections),
        slow_statement_ms: cli.slow_statement_ms.or(file.slow_statement_ms).unwrap_or(defaults.slow_statement_ms),
        block_cache_bytes: match cli.block_cache_mb.or(file.block_cache_mb) {
            Some(0) => anyhow::bail!("--block-cache-mb must be at least 1"),
            Some(mb) => mib("--block-cache-mb", mb)?,
            None => defaults.block_cache_bytes,
        },
        statement_memory_bytes: match cli.statement_memory_mb.or(file.statement_memory_mb) {
            Some(0) => anyhow::bail!("--statement-memory-mb must be at least 1"),
            Some(mb) => mib("--statement-memory-mb", mb)?,
            None => defaults.statement_memory_bytes,
        },
        memory_limit_bytes: match cli.memory_limit_mb.or(file.memory_limit_mb) {
            Some(0) => anyhow::bail!("--memory-limit-mb must be at least 1"),
            Some(mb) => mib("--memory-limit-mb", mb)?,
            None => defaults.memory_limit_bytes,
        },
        max_statement_bytes: cli.max_statement_bytes.or(file.max_statement_bytes).unwrap_or(defaults.max_statement_bytes),
        auth: cli.auth.or(file.auth).as_deref().unwrap_or("trust").parse().map_err(|e: String| anyhow::anyhow!(e))?,
        allow_trust_remote: cli.allow_trust_remote || file.allow_trust_remote.unwrap_or(false),
        users: match cli.users {
            Some(list) => {
                // Given on the command line (not through the environment, which clap also reads into it), the
                // passwords are in every user's process list.
                if std::env::var("TABULA_USERS").ok().as_deref() != Some(list.as_str()) {
                    tracing::warn!(
                        "passwords given with --users can be read by any user of this machine in the process list: \
                         give them in TABULA_USERS or in the configuration file's [users] table"
                    );
                }
                parse_users(&list)?
            }
            None => file.users.unwrap_or_default(),
        },
        tls: match (cli.tls_cert.or(file.tls_cert), cli.tls_key.or(file.tls_key)) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => anyhow::bail!("TLS needs both --tls-cert and --tls-key"),
        },
        require_tls: cli.require_tls || file.require_tls.unwrap_or(false),
        split_bytes: defaults.split_bytes,
        busy_poll: cli.busy_poll_us.or(file.busy_poll_us).map_or(defaults.busy_poll, Duration::from_micros),
        wal_prefill_bytes: match cli.wal_prefill_mb.or(file.wal_prefill_mb) {
            Some(mb) => mib("--wal-prefill-mb", mb)?,
            None => defaults.wal_prefill_bytes,
        },
        max_transaction_bytes: match cli.max_transaction_mb.or(file.max_transaction_mb) {
            Some(0) => anyhow::bail!("--max-transaction-mb must be at least 1"),
            Some(mb) => mib("--max-transaction-mb", mb)? as u64,
            None => defaults.max_transaction_bytes,
        },
    };
    let server = start(config.clone()).await?;
    let addr = server.addr;
    let serving = config.store.clone().unwrap_or_else(|| config.data_dir.display().to_string());
    println!("Tabula {} serving {serving} on {addr}", env!("CARGO_PKG_VERSION"));
    println!("Connect with: psql -h {} -p {} -U tabula tabula", addr.ip(), addr.port());
    shutdown_signal().await;
    eprintln!("tabula: shutting down");
    server.shutdown().await
}

fn parse_users(list: &str) -> anyhow::Result<std::collections::HashMap<String, String>> {
    list.split(',')
        .filter(|u| !u.trim().is_empty())
        .map(|u| match u.split_once(':') {
            Some((name, password)) if !name.is_empty() => Ok((name.trim().to_string(), password.to_string())),
            _ => anyhow::bail!("bad user \"{u}\": write name:password"),
        })
        .collect()
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("install SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
