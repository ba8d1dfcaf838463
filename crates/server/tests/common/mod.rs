//! A real server on a real socket, for the end-to-end tests.

#![allow(dead_code)]

use tabula_server::{start, RunningServer, ServerConfig};

pub struct TestServer {
    pub server: Option<RunningServer>,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = ServerConfig {
            data_dir: dir.path().join("data"),
            store: tikv_store(),
            listen: "127.0.0.1:0".into(),
            block_cache_bytes: 8 << 20,
            ..ServerConfig::default()
        };
        let server = start(config).await.expect("server starts");
        TestServer { server: Some(server), dir }
    }

    pub fn port(&self) -> u16 {
        self.server.as_ref().unwrap().addr.port()
    }

    pub fn conn_string(&self) -> String {
        format!("host=127.0.0.1 port={} user=tabula dbname=tabula", self.port())
    }

    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.conn_string(), tokio_postgres::NoTls).await.expect("connect");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client
    }

    pub async fn stop(mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown().await.expect("clean shutdown");
        }
    }
}

/// With `TABULA_TIKV_PD` naming a TiKV cluster, the suites' servers keep their data there, each in a fresh
/// keyspace; otherwise in RocksDB, in a temporary directory.
pub fn tikv_store() -> Option<String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let pd = std::env::var("TABULA_TIKV_PD").ok().filter(|pd| !pd.is_empty())?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    Some(format!("tikv://{pd}/sql-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)))
}

/// A server started with `change` made to the test configuration; returns its connection string too.
pub async fn start_configured(
    change: impl FnOnce(&mut tabula_server::ServerConfig),
) -> (tabula_server::RunningServer, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = tabula_server::ServerConfig { data_dir: dir.path().join("d"), listen: "127.0.0.1:0".into(), ..Default::default() };
    change(&mut config);
    let server = tabula_server::start(config).await.unwrap();
    let conn = format!("host=127.0.0.1 port={} user=tabula dbname=tabula", server.addr.port());
    (server, dir, conn)
}

/// Runs a COPY FROM STDIN with all its data in one message; returns the row count.
pub async fn copy_in(c: &tokio_postgres::Client, sql: &str, data: String) -> u64 {
    use futures::SinkExt;
    let sink = c.copy_in(sql).await.expect("COPY starts");
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from(data)).await.expect("COPY data is sent");
    sink.finish().await.expect("COPY completes")
}
