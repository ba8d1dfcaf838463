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
        // PostgreSQL's words, naming the user under every method (SCRAM's messages carry no name).
        let message = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
        assert_eq!(message, "password authentication failed for user \"user1\"", "{method:?}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_made_in_sql_log_in_under_every_password_method_and_have_only_their_privileges() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(AuthMethod::ScramSha256, None, false, dir.path()).await;
    let port = s.addr.port();
    let admin = login(port, "user0", "secret-0").await.unwrap();
    admin
        .batch_execute(
            "CREATE TABLE secrets (k bigint PRIMARY KEY, v text); INSERT INTO secrets VALUES (1, 'x');
             CREATE USER web WITH PASSWORD 'pw-1'; CREATE ROLE quiet PASSWORD 'pw-2';",
        )
        .await
        .unwrap();
    let web = login(port, "web", "pw-1").await.unwrap();
    assert_eq!(web.query_one("SELECT current_user", &[]).await.unwrap().get::<_, String>(0), "web");
    let e = web.query("SELECT * FROM secrets", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{e:?}");
    let e = web.query("SELECT count(*) FROM secrets", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{e:?}");
    let e = web.batch_execute("CREATE ROLE sneaky SUPERUSER").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{e:?}");
    let e = web.batch_execute("SET ROLE user0").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{e:?}");
    admin.batch_execute("GRANT SELECT ON secrets TO web").await.unwrap();
    assert_eq!(web.query_one("SELECT count(*) FROM secrets", &[]).await.unwrap().get::<_, i64>(0), 1);

    let Err(e) = login(port, "web", "pw-2").await else { panic!("a wrong password was accepted") };
    assert_eq!(e.code(), Some(&SqlState::INVALID_PASSWORD), "{e:?}");
    // NOLOGIN: its password does not let it in.
    let Err(e) = login(port, "quiet", "pw-2").await else { panic!("a role without LOGIN logged in") };
    assert_eq!(e.code(), Some(&SqlState::INVALID_PASSWORD), "{e:?}");
    web.batch_execute("ALTER ROLE web PASSWORD 'pw-3'").await.unwrap();
    assert!(login(port, "web", "pw-1").await.is_err(), "the old password still works");
    drop(login(port, "web", "pw-3").await.unwrap());

    // A role dropped while its session lives keeps no privileges (it does not become a superuser).
    admin.batch_execute("REVOKE ALL ON secrets FROM web; DROP ROLE web").await.unwrap();
    let e = web.query("SELECT * FROM secrets", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{e:?}");
    let e = web.batch_execute("CREATE ROLE sneaky").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{e:?}");
    assert!(login(port, "web", "pw-3").await.is_err(), "a dropped role logged in");
    admin.batch_execute("CREATE USER app PASSWORD 'pw-app'; GRANT SELECT ON secrets TO app").await.unwrap();
    drop((admin, web));
    s.shutdown().await.unwrap();

    // Roles, their secrets and their privileges are in the catalog: they outlive a restart, under any method.
    for method in [AuthMethod::Md5, AuthMethod::Password, AuthMethod::ScramSha256] {
        let s = server(method, None, false, dir.path()).await;
        let app = login(s.addr.port(), "app", "pw-app").await.unwrap_or_else(|e| panic!("{method:?}: {e:?}"));
        assert_eq!(app.query_one("SELECT count(*) FROM secrets", &[]).await.unwrap().get::<_, i64>(0), 1, "{method:?}");
        let e = app.batch_execute("DELETE FROM secrets").await.unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{method:?}: {e:?}");
        let Err(e) = login(s.addr.port(), "app", "pw-wrong").await else { panic!("{method:?}: a wrong password was accepted") };
        assert_eq!(e.code(), Some(&SqlState::INVALID_PASSWORD), "{method:?}: {e:?}");
        drop(app);
        s.shutdown().await.unwrap();
    }

    // Under trust a role without LOGIN is refused; a name that is no role is the superuser it claims to be.
    let s = server(AuthMethod::Trust, None, false, dir.path()).await;
    let Err(e) = login(s.addr.port(), "quiet", "").await else { panic!("a role without LOGIN logged in") };
    assert_eq!(e.code(), Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION), "{e:?}");
    let app = login(s.addr.port(), "app", "").await.unwrap();
    assert!(app.query("SELECT * FROM secrets", &[]).await.is_ok());
    assert!(app.batch_execute("DELETE FROM secrets").await.is_err());
    drop(app);
    s.shutdown().await.unwrap();
}
