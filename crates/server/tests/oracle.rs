//! PostgreSQL as the oracle: `tests/oracle/oracle.py` runs seeded random statements on Tabula and on a
//! throwaway PostgreSQL side by side, and fails on any difference (see its docstring). The README's test
//! command runs a bounded slice with fixed seeds; `scripts/oracle` runs a longer one.
//!
//! TABULA_ORACLE_STATEMENTS (statements per seed, default 2000) and TABULA_ORACLE_SEEDS (comma-separated,
//! default 1,2,3) choose the slice.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::TestServer;

/// A PostgreSQL server in a temporary directory, stopped and removed on drop. As root, it runs as the
/// `postgres` system user (initdb and postgres refuse root).
struct Postgres {
    child: Child,
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    user: String,
    as_root: bool,
}

impl Postgres {
    fn start() -> Postgres {
        let bin = postgres_bin();
        let dir = tempfile::tempdir().unwrap();
        let as_root = unsafe { libc::geteuid() } == 0;
        let user = if as_root { "postgres".to_string() } else { std::env::var("USER").unwrap_or_else(|_| "postgres".into()) };
        if as_root {
            assert!(Command::new("chown").arg("postgres").arg(dir.path()).status().unwrap().success(), "chown of the data directory");
        }
        let data = dir.path().join("data");
        let initdb = command(as_root, &bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", &user, "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdout(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(initdb.status.success(), "initdb: {}", String::from_utf8_lossy(&initdb.stderr));
        let port = free_port();
        let child = command(as_root, &bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .arg("-k")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres starts");
        let pg = Postgres { child, bin, dir, port, user, as_root };
        let started = Instant::now();
        while !pg.ready() {
            assert!(started.elapsed() < Duration::from_secs(60), "PostgreSQL did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        pg
    }

    fn ready(&self) -> bool {
        Command::new(self.bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = command(self.as_root, &self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["stop", "-m", "immediate"])
            .stdout(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

fn command(as_root: bool, program: &Path) -> Command {
    if as_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// The newest PostgreSQL installed from Debian's packages (`scripts/test` installs it).
fn postgres_bin() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (scripts/test installs it)")
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("postgres").exists())
        .collect();
    found.sort();
    found.pop().expect("a PostgreSQL server binary under /usr/lib/postgresql")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn python() -> PathBuf {
    std::env::var_os("TABULA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/tabula/venv/bin/python"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabula_answers_as_postgresql_does() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let statements = std::env::var("TABULA_ORACLE_STATEMENTS").unwrap_or_else(|_| "2000".into());
    let seeds = std::env::var("TABULA_ORACLE_SEEDS").unwrap_or_else(|_| "1,2,3".into());
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/oracle/oracle.py");
    for seed in seeds.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // A fresh Tabula per seed, as PostgreSQL's tables are dropped and made again.
        let server = TestServer::start().await;
        let mut cmd = Command::new(python());
        cmd.arg(&script)
            .args(["--tabula", &server.port().to_string(), "--postgres", &pg.port.to_string(), "--postgres-user", &pg.user])
            .args(["--seed", seed, "--statements", &statements]);
        let out = tokio::task::block_in_place(|| cmd.output().expect("the oracle runs"));
        let report = String::from_utf8_lossy(&out.stdout);
        println!("{report}");
        assert!(out.status.success(), "differences from PostgreSQL:\n{report}\n{}", String::from_utf8_lossy(&out.stderr));
        server.stop().await;
    }
}
