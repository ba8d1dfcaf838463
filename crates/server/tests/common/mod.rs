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

/// Runs a COPY FROM STDIN with all its data in one message; returns the row count.
pub async fn copy_in(c: &tokio_postgres::Client, sql: &str, data: String) -> u64 {
    use futures::SinkExt;
    let sink = c.copy_in(sql).await.expect("COPY starts");
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from(data)).await.expect("COPY data is sent");
    sink.finish().await.expect("COPY completes")
}
