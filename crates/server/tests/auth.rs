//! Authentication methods with many simultaneous logins of different users, and TLS with psql.

use std::collections::HashMap;
use std::process::Command;

use tabula_server::auth::AuthMethod;
use tabula_server::{start, ServerConfig};
use tokio_postgres::error::SqlState;

async fn server(
    auth: AuthMethod,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    require_tls: bool,
    dir: &std::path::Path,
) -> tabula_server::RunningServer {
    let users: HashMap<String, String> = (0..8).map(|i| (format!("user{i}"), format!("secret-{i}"))).collect();
    let config = ServerConfig {
        data_dir: dir.join("data"),
        listen: "127.0.0.1:0".into(),
        auth,
        users,
        tls,
        require_tls,
        block_cache_bytes: 8 << 20,
        ..Default::default()
    };
    start(config).await.expect("server starts")
}

async fn login(port: u16, user: &str, password: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let conn = format!("host=127.0.0.1 port={port} user={user} password={password} dbname=tabula");
    let (client, task) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await?;
    tokio::spawn(task);
    Ok(client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_methods_with_concurrent_logins_of_different_users() {
    for method in [AuthMethod::Password, AuthMethod::Md5, AuthMethod::ScramSha256] {
        let dir = tempfile::tempdir().unwrap();
        let s = server(method, None, false, dir.path()).await;
        let port = s.addr.port();
        // Many logins at once, each as its own user; each session sees its own user.
        let logins: Vec<_> = (0..16)
            .map(|n| {
                tokio::spawn(async move {
                    let i = n % 8;
                    let c = login(port, &format!("user{i}"), &format!("secret-{i}")).await.unwrap();
                    let row = c.query_one("SELECT current_user", &[]).await.unwrap();
                    assert_eq!(row.get::<_, String>(0), format!("user{i}"), "{method:?}");
                })
            })
            .collect();
        for l in logins {
            l.await.unwrap();
        }
        let Err(e) = login(port, "user1", "wrong").await else { panic!("{method:?}: a wrong password was accepted") };
        assert_eq!(e.code(), Some(&SqlState::INVALID_PASSWORD), "{method:?}: {e:?}");
        let Err(e) = login(port, "nobody", "secret-1").await else { panic!("{method:?}: an unknown user was accepted") };
        assert_eq!(e.code(), Some(&SqlState::INVALID_PASSWORD), "{method:?}: {e:?}");
        s.shutdown().await.unwrap();
    }
}

/// psql's output and whether it succeeded, for one connection string.
async fn psql(conninfo: String, password: &'static str) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        Command::new("psql").args(["-X", "-At", "-c", "SELECT current_user"]).arg(conninfo).env("PGPASSWORD", password).output().unwrap()
    })
    .await
    .unwrap()
}

fn certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("server.crt"), dir.join("server.key"));
    let ok = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl is installed")
        .status
        .success();
    assert!(ok, "certificate generated");
    (cert, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_psql() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(AuthMethod::ScramSha256, Some(certificate(dir.path())), false, dir.path()).await;
    let port = s.addr.port();
    let out = psql(format!("host=127.0.0.1 port={port} user=user3 dbname=tabula sslmode=require"), "secret-3").await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "user3\n");
    // TLS offered, not required: a client may still come without it.
    let out = psql(format!("host=127.0.0.1 port={port} user=user3 dbname=tabula sslmode=disable"), "secret-3").await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_tls_refuses_clients_without_it() {
    let dir = tempfile::tempdir().unwrap();
    // Requiring TLS without a certificate does not start.
    let config = ServerConfig { data_dir: dir.path().join("none"), listen: "127.0.0.1:0".into(), require_tls: true, ..Default::default() };
    let Err(e) = start(config).await else { panic!("required TLS without a certificate started") };
    assert!(e.to_string().contains("--tls-cert"), "{e}");

    let s = server(AuthMethod::Password, Some(certificate(dir.path())), true, dir.path()).await;
    let port = s.addr.port();
    let out = psql(format!("host=127.0.0.1 port={port} user=user2 dbname=tabula sslmode=require"), "secret-2").await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "user2\n");
    // Without TLS the cleartext password is never asked for: the startup message is answered with 28000.
    let out = psql(format!("host=127.0.0.1 port={port} user=user2 dbname=tabula sslmode=disable"), "secret-2").await;
    assert!(!out.status.success(), "a client without TLS was let in");
    assert!(String::from_utf8_lossy(&out.stderr).contains("requires TLS"), "{}", String::from_utf8_lossy(&out.stderr));
    let Err(e) = login(port, "user2", "secret-2").await else { panic!("a client without TLS was let in") };
    assert_eq!(e.code(), Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION), "{e:?}");
    s.shutdown().await.unwrap();
}
