//! Real drivers in other languages against a real server: Python (psycopg 3, psycopg2, asyncpg, pandas, Django),
//! node-postgres and pgjdbc. `scripts/test` installs them and says where (TABULA_PYTHON,
//! TABULA_NODE_MODULES, TABULA_PGJDBC_JAR); the defaults are where it puts them.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::TestServer;

fn cache() -> PathBuf {
    std::env::var_os("TABULA_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/tabula"))
}

fn tool(var: &str, default: PathBuf) -> PathBuf {
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or(default);
    assert!(p.exists(), "{} not found at {}: run scripts/test, which installs the drivers", var, p.display());
    p
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(mut cmd: Command) {
    let out = tokio::task::block_in_place(|| cmd.output().expect("driver runs"));
    assert!(out.status.success(), "stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_psycopg3_psycopg2_asyncpg_pandas() {
    let server = TestServer::start().await;
    let mut cmd = Command::new(tool("TABULA_PYTHON", cache().join("venv/bin/python")));
    cmd.arg(repo().join("tests/python/clients.py")).arg(server.port().to_string());
    run(cmd);
    server.stop().await;
}

/// Django with its defaults: migrate, the ORM, integrity errors, a migration down to zero and back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn django_migrate_and_orm() {
    let server = TestServer::start().await;
    let mut cmd = Command::new(tool("TABULA_PYTHON", cache().join("venv/bin/python")));
    cmd.arg(repo().join("tests/python/django_e2e.py")).arg(server.port().to_string());
    run(cmd);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_postgres() {
    let server = TestServer::start().await;
    let mut cmd = Command::new("node");
    cmd.arg(repo().join("tests/node/clients.js"))
        .arg(server.port().to_string())
        .env("NODE_PATH", tool("TABULA_NODE_MODULES", cache().join("node/node_modules")));
    run(cmd);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgjdbc() {
    let jar = tool("TABULA_PGJDBC_JAR", PathBuf::from("/usr/share/java/postgresql.jar"));
    let classes = tempfile::tempdir().unwrap();
    let mut javac = Command::new("javac");
    javac.arg("-d").arg(classes.path()).arg(repo().join("tests/java/ClientsTest.java"));
    run(javac);
    let server = TestServer::start().await;
    let mut java = Command::new("java");
    java.arg("-cp").arg(format!("{}:{}", jar.display(), classes.path().display())).arg("ClientsTest").arg(server.port().to_string());
    run(java);
    server.stop().await;
}
