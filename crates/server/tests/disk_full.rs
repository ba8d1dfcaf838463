//! A full disk, for real: the data directory on a 40 MB tmpfs. Writes fail with 53100 (disk_full), reads go
//! on, nothing acknowledged is lost, and once there is room again the same server takes writes (RocksDB's
//! file manager polls the free space every 5 seconds and resumes by itself), and a restart has every row.
//! Mounting needs root (CAP_SYS_ADMIN), as the test command has on the machines it runs on; elsewhere the
//! test says so and does nothing.

use std::process::Command;

use tabula_server::{start, ServerConfig};
use tokio_postgres::error::SqlState;

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let ok =
            Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir.path()).status().ok()?.success();
        ok.then_some(Tmpfs(dir))
    }

    fn resize(&self, size: &str) {
        let ok = Command::new("mount").args(["-o", &format!("remount,size={size}")]).arg(self.0.path()).status().unwrap().success();
        assert!(ok, "tmpfs resized");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

async fn connect(port: u16) -> tokio_postgres::Client {
    let conn = format!("host=127.0.0.1 port={port} user=tabula dbname=tabula");
    let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_53100_reads_go_on_writes_resume_and_nothing_acknowledged_is_lost() {
    let Some(fs) = Tmpfs::mount("40m") else {
        eprintln!("a_full_disk_is_53100: cannot mount a tmpfs here (not root): not run");
        return;
    };
    let config = ServerConfig {
        data_dir: fs.0.path().join("data"),
        listen: "127.0.0.1:0".into(),
        block_cache_bytes: 8 << 20,
        wal_prefill_bytes: 0,
        ..Default::default()
    };
    let server = start(config.clone()).await.unwrap();
    let c = connect(server.addr.port()).await;
    c.batch_execute("CREATE TABLE t (k bigint PRIMARY KEY, v text)").await.unwrap();
    let insert = c.prepare("INSERT INTO t VALUES ($1, $2 || $1::text)").await.unwrap();
    // 20 KB of hex digits from a fixed sequence a row: what compression cannot shrink much.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut payload = || {
        (0..2_500)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("{:08x}", x as u32)
            })
            .collect::<String>()
    };
    let mut acked = 0i64;
    let full = loop {
        assert!(acked < 5_000, "40 MB never filled");
        match c.execute(&insert, &[&acked, &payload()]).await {
            Ok(_) => acked += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(full.code(), Some(&SqlState::DISK_FULL), "{full:?}");
    assert!(acked > 100, "rows were written before the disk filled ({acked})");
    // Reads go on, on a new connection too, and see every acknowledged row.
    let other = connect(server.addr.port()).await;
    for client in [&c, &other] {
        assert_eq!(client.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0), acked);
    }
    let v: String = other.query_one("SELECT v FROM t WHERE k = $1", &[&(acked - 1)]).await.unwrap().get(0);
    assert!(v.ends_with(&(acked - 1).to_string()));
    drop(other);

    // Room again: the same server takes writes once it has seen the space come back, with no restart.
    fs.resize("400m");
    let after = c.prepare("INSERT INTO t VALUES ($1, 'after')").await.unwrap();
    let started = std::time::Instant::now();
    loop {
        match c.execute(&after, &[&acked]).await {
            Ok(_) => break,
            Err(e) if e.code() == Some(&SqlState::DISK_FULL) && started.elapsed().as_secs() < 60 => {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await
            }
            Err(e) => panic!("writes did not resume after {:?}: {e:?}", started.elapsed()),
        }
    }
    eprintln!("writes resumed {:?} after the disk had room", started.elapsed());
    assert_eq!(c.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0), acked + 1);
    drop(c);
    server.shutdown().await.unwrap();

    // A restarted server has every acknowledged row, the one written after the resume included.
    let server = start(config).await.unwrap();
    let c = connect(server.addr.port()).await;
    assert_eq!(c.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0), acked + 1);
    drop(c);
    server.shutdown().await.unwrap();
}
