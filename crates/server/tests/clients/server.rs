//! The server's settings, startup options and limits, as clients meet them.

use crate::common::{self, TestServer};
use tokio_postgres::error::SqlState;

async fn show(c: &tokio_postgres::Client, name: &str) -> String {
    c.query_one(&format!("SHOW {name}"), &[]).await.unwrap().get(0)
}

/// `synchronous_commit` starts as the server's `--durability` says, and a client may set it (or any setting)
/// in the startup message's `options`, as libpq's PGOPTIONS does; a bad one refuses the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synchronous_commit_and_startup_options() {
    let (server, _dir, conn) = common::start_configured(|c| c.synchronous_commit = false).await;
    let connect = |options: &str| {
        let conn = format!("{conn} options='{options}'");
        async move {
            let (c, task) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(task);
            c
        }
    };
    let plain = connect("").await;
    assert_eq!(show(&plain, "synchronous_commit").await, "off");
    plain.batch_execute("CREATE TABLE sc (k bigint PRIMARY KEY, v text); INSERT INTO sc VALUES (1, 'async')").await.unwrap();

    let durable = connect("-c synchronous_commit=on -cstatement_timeout=5s --application-name=bench\\\\ one").await;
    assert_eq!(show(&durable, "synchronous_commit").await, "on");
    assert_eq!(show(&durable, "statement_timeout").await, "5s");
    assert_eq!(show(&durable, "application_name").await, "bench one");
    // Durable commits of every kind: autocommit, a transaction block, COPY.
    durable.execute("INSERT INTO sc VALUES (2, 'durable')", &[]).await.unwrap();
    durable.batch_execute("BEGIN; UPDATE sc SET v = 'both' WHERE k = 1; COMMIT").await.unwrap();
    assert_eq!(common::copy_in(&durable, "COPY sc FROM STDIN", "3\tcopied\n".into()).await, 1);
    let rows = plain.query("SELECT k, v FROM sc ORDER BY k", &[]).await.unwrap();
    let got: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(1, "both".into()), (2, "durable".into()), (3, "copied".into())]);

    // A bad setting refuses the connection (FATAL), as in PostgreSQL.
    let refused = |options: &str| {
        let conn = format!("{conn} options='{options}'");
        async move { tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.err().expect("connection refused") }
    };
    let e = refused("-c synchronous_commit=bogus").await;
    assert_eq!(e.code(), Some(&SqlState::INVALID_PARAMETER_VALUE));
    assert_eq!(e.as_db_error().unwrap().severity(), "FATAL");
    assert!(e.as_db_error().unwrap().message().contains("\"synchronous_commit\": \"bogus\""), "{e}");
    let e = refused("-c server_version=1").await;
    assert_eq!(e.code(), Some(&SqlState::CANT_CHANGE_RUNTIME_PARAM));
    let e = refused("-c max_connections=5").await;
    assert_eq!(e.code(), Some(&SqlState::CANT_CHANGE_RUNTIME_PARAM));
    assert!(e.as_db_error().unwrap().message().contains("cannot be changed without restarting the server"), "{e}");
    let e = refused("-c statment_timeout=5s").await;
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_OBJECT));
    assert!(e.as_db_error().unwrap().message().contains("unrecognized configuration parameter \"statment_timeout\""), "{e}");
    let e = refused("-x").await;
    assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR));
    assert!(e.as_db_error().unwrap().message().contains("invalid command-line argument for server process: -x"), "{e}");
    // The server goes on serving.
    assert_eq!(show(&plain, "synchronous_commit").await, "off");
    drop((plain, durable));
    server.shutdown().await.unwrap();
}

/// `SHOW ALL` lists every setting of the session with its value as `SHOW` gives it, in PostgreSQL's columns
/// and order, and says which ones Tabula acts on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_all_lists_the_sessions_settings() {
    let (server, _dir, conn) = common::start_configured(|_| {}).await;
    let (c, task) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(task);
    c.batch_execute("SET statement_timeout = '3s'; SET myapp.tenant = 'acme'; SET work_mem = '64MB'").await.unwrap();
    // Prepared, so that its columns are described before it runs.
    let rows = c.query("SHOW ALL", &[]).await.unwrap();
    let cols: Vec<&str> = rows[0].columns().iter().map(|c| c.name()).collect();
    assert_eq!(cols, ["name", "setting", "description"]);
    let all: Vec<(String, String, String)> = rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
    let find = |name: &str| all.iter().find(|(n, _, _)| n == name).unwrap_or_else(|| panic!("{name} missing"));
    assert_eq!(find("statement_timeout").1, "3s");
    assert!(find("statement_timeout").2.starts_with("Cancels"), "{:?}", find("statement_timeout"));
    assert_eq!(find("myapp.tenant").1, "acme");
    assert_eq!(find("work_mem").1, "64MB");
    assert!(find("work_mem").2.contains("does not act on it"));
    assert_eq!(find("TimeZone").1, "UTC");
    assert_eq!(find("tabula.busy_poll").1, show(&c, "tabula.busy_poll").await);
    let names: Vec<String> = all.iter().map(|(n, _, _)| n.to_lowercase()).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted by name");
    drop(c);
    server.shutdown().await.unwrap();
}

/// A connection's thread sleeps in a blocking `recv` between statements (or busy-polls before it): shutdown
/// must still end a connection the client keeps open, once the grace period is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_connections_left_open_after_the_grace_period() {
    let (server, _dir, conn) = common::start_configured(|_| {}).await;
    let (c, conn_task) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
    let closed = tokio::spawn(conn_task);
    c.batch_execute("CREATE TABLE open_conn (k bigint PRIMARY KEY); INSERT INTO open_conn VALUES (1)").await.unwrap();
    assert_eq!(c.query_one("SELECT count(*) FROM open_conn", &[]).await.unwrap().get::<_, i64>(0), 1);
    let started = std::time::Instant::now();
    tokio::time::timeout(std::time::Duration::from_secs(60), server.shutdown()).await.expect("shutdown ends").unwrap();
    // It waited for the connection (the 5 s grace period), then closed it.
    assert!(started.elapsed() >= std::time::Duration::from_secs(4), "{:?}", started.elapsed());
    tokio::time::timeout(std::time::Duration::from_secs(10), closed).await.expect("the client sees the connection end").unwrap().ok();
    assert!(c.is_closed() || c.simple_query("SELECT 1").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_connections_is_53300() {
    let (server, _dir, conn) = common::start_configured(|c| c.max_connections = 2).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let (c, conn_task) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn_task);
        c.simple_query("SELECT 1").await.unwrap();
        held.push(c);
    }
    let e = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.err().expect("third connection refused");
    assert_eq!(e.code(), Some(&SqlState::TOO_MANY_CONNECTIONS));
    drop(held);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_over_the_size_limit_are_54000() {
    let (server, _dir, conn) = common::start_configured(|c| c.max_statement_bytes = 64).await;
    let (c, conn_task) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn_task);
    let long = format!("SELECT '{}'", "x".repeat(100));
    let e = c.simple_query(&long).await.expect_err("simple protocol refuses it");
    assert_eq!(e.code(), Some(&SqlState::PROGRAM_LIMIT_EXCEEDED));
    assert!(e.as_db_error().unwrap().message().contains("the limit is 64"), "{e}");
    let e = c.prepare(&long).await.expect_err("extended protocol refuses it");
    assert_eq!(e.code(), Some(&SqlState::PROGRAM_LIMIT_EXCEEDED));
    // The connection goes on.
    let rows = c.query("SELECT 1::bigint", &[]).await.unwrap();
    assert_eq!(rows[0].get::<_, i64>(0), 1);
    drop(c);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_data_directory_and_a_taken_port_are_clear_errors() {
    let server = TestServer::start().await;
    let dir = server.dir.path().join("data");
    let again = tabula_server::ServerConfig { data_dir: dir, listen: "127.0.0.1:0".into(), ..Default::default() };
    let e = tabula_server::start(again).await.err().expect("second server on the same directory fails");
    assert!(e.to_string().contains("locked by another process"), "{e}");
    let other = tempfile::tempdir().unwrap();
    let taken = tabula_server::ServerConfig {
        data_dir: other.path().join("d"),
        listen: format!("127.0.0.1:{}", server.port()),
        ..Default::default()
    };
    let e = tabula_server::start(taken).await.err().expect("a taken port fails");
    assert!(e.to_string().contains("already in use"), "{e}");
    server.stop().await;
}

/// `pg_stat_activity` lists every session with its backend pid (the one `pg_backend_pid()` gives and a
/// cancel request names), state and query; a role that is no superuser sees other roles' queries as
/// `<insufficient privilege>`; a session gone is gone from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_activity_shows_each_session() {
    let server = TestServer::start().await;
    let conn = server.conn_string();
    let connect = |extra: &'static str| {
        let conn = format!("{conn} {extra}");
        async move {
            let (c, task) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(task);
            c
        }
    };
    let a = connect("application_name=watcher").await;
    let b = connect("").await;
    b.batch_execute("CREATE TABLE act (k int PRIMARY KEY); BEGIN; INSERT INTO act VALUES (1)").await.unwrap();
    let a_pid: i32 = a.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    let b_pid: i32 = b.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    assert!(a_pid != b_pid && a_pid > 1 && b_pid > 1, "{a_pid} {b_pid}");

    let mine = a
        .query_one("SELECT state, query, usename, application_name, client_addr FROM pg_stat_activity WHERE pid = pg_backend_pid()", &[])
        .await
        .unwrap();
    assert_eq!(mine.get::<_, String>(0), "active");
    assert!(mine.get::<_, String>(1).contains("pg_stat_activity"));
    assert_eq!((mine.get::<_, String>(2), mine.get::<_, String>(3)), ("tabula".into(), "watcher".into()));
    assert_eq!(mine.get::<_, String>(4), "127.0.0.1");
    let other = a.query_one("SELECT state, query, xact_start IS NOT NULL FROM pg_stat_activity WHERE pid = $1", &[&b_pid]).await.unwrap();
    assert_eq!(other.get::<_, String>(0), "idle in transaction");
    assert_eq!(other.get::<_, String>(1), "SELECT pg_backend_pid()");
    assert!(other.get::<_, bool>(2));

    // Another role sees who, not what.
    a.batch_execute("CREATE ROLE plain LOGIN").await.unwrap();
    let (p, task) = tokio_postgres::connect(&conn.replace("user=tabula", "user=plain"), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(task);
    let seen = p.query_one("SELECT usename, query, state FROM pg_stat_activity WHERE pid = $1", &[&b_pid]).await.unwrap();
    assert_eq!(seen.get::<_, String>(0), "tabula");
    assert_eq!(seen.get::<_, String>(1), "<insufficient privilege>");
    assert_eq!(seen.get::<_, Option<String>>(2), None);

    drop(b);
    let started = std::time::Instant::now();
    while a.query_one("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", &[&b_pid]).await.unwrap().get::<_, i64>(0) != 0 {
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "the closed session is still listed");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.stop().await;
}

/// pg_stat_progress_copy shows a COPY FROM STDIN while its data comes: the table, the bytes received and
/// the rows written so far; once it ends, nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_progress_copy_follows_a_copy_from_stdin() {
    use futures::SinkExt;
    let server = TestServer::start().await;
    let loader = server.connect().await;
    let watcher = server.connect().await;
    loader.batch_execute("CREATE TABLE loaded (k bigint PRIMARY KEY, v text)").await.unwrap();
    let pid: i32 = loader.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
    let sink = loader.copy_in::<_, bytes::Bytes>("COPY loaded FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let data: String = (0..5000).map(|k| format!("{k}\tvalue {k}\n")).collect();
    sink.send(bytes::Bytes::from(data.clone())).await.unwrap();
    let progress = "SELECT pid, relid = 'loaded'::regclass::oid, command, type, bytes_processed, tuples_processed \
                    FROM pg_stat_progress_copy";
    let mut seen = None;
    for _ in 0..200 {
        let rows = watcher.query(progress, &[]).await.unwrap();
        if let Some(r) = rows.first().filter(|r| r.get::<_, i64>(5) == 5000) {
            seen = Some((r.get::<_, i32>(0), r.get::<_, bool>(1), r.get::<_, String>(2), r.get::<_, String>(3), r.get::<_, i64>(4)));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(seen, Some((pid, true, "COPY FROM".to_string(), "PIPE".to_string(), data.len() as i64)));
    assert_eq!(sink.finish().await.unwrap(), 5000);
    assert!(watcher.query(progress, &[]).await.unwrap().is_empty(), "the COPY is over");
    server.stop().await;
}

/// pg_stat_progress_create_index shows a CREATE INDEX while it builds: the table, the index, PostgreSQL's
/// name of the phase and the rows done of about how many; once it ends, nothing. A build too quick to be
/// seen is made again on a table four times the size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_progress_create_index_follows_a_build() {
    let server = TestServer::start().await;
    let builder = server.connect().await;
    let watcher = server.connect().await;
    builder.batch_execute("CREATE TABLE indexed (k bigint PRIMARY KEY, card bigint)").await.unwrap();
    let progress = "SELECT pid, relid = 'indexed'::regclass::oid, index_relid IS NOT NULL, command, phase, tuples_done, \
                    tuples_total FROM pg_stat_progress_create_index";
    let mut rows = 0i64;
    let mut seen = None;
    for _ in 0..5 {
        let more = if rows == 0 { 50_000 } else { rows * 3 };
        let fill = format!("INSERT INTO indexed SELECT g, g % 97 FROM generate_series({}, {}) g", rows + 1, rows + more);
        builder.batch_execute(&fill).await.unwrap();
        rows += more;
        let building = server.connect().await;
        let pid: i32 = building.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
        let build = tokio::spawn(async move { building.batch_execute("CREATE INDEX indexed_card ON indexed (card)").await });
        while !build.is_finished() {
            let found = watcher.query(progress, &[]).await.unwrap();
            if let Some(r) = found.first().filter(|r| r.get::<_, i64>(5) > 0) {
                let row = (r.get::<_, bool>(1), r.get::<_, bool>(2), r.get::<_, String>(3), r.get::<_, String>(4));
                seen = Some((row, r.get::<_, i32>(0) == pid, r.get::<_, i64>(5) <= r.get::<_, i64>(6)));
                break;
            }
        }
        build.await.unwrap().unwrap();
        if seen.is_some() {
            break;
        }
        builder.batch_execute("DROP INDEX indexed_card").await.unwrap();
    }
    let scanning = (true, true, "CREATE INDEX".to_string(), "building index: scanning table".to_string());
    assert_eq!(seen, Some((scanning, true, true)), "a build of up to {rows} rows was never seen");
    assert!(watcher.query(progress, &[]).await.unwrap().is_empty(), "the build is over");
    server.stop().await;
}
