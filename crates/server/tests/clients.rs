//! End-to-end tests with real clients against a real server on a real socket.

mod common;

use std::process::Command;

use common::TestServer;
use tokio_postgres::error::SqlState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_typed_params_binary_results_and_errors() {
    let server = TestServer::start().await;
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE items (shop text, id bigint, name text, price double precision, qty integer, ok boolean, data bytea, at timestamp, PRIMARY KEY (shop, id))",
        )
        .await
        .unwrap();
    // One prepared statement, reused with typed parameters; NULLs both ways.
    let insert = client.prepare("INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6, $7, $8)").await.unwrap();
    let at = chrono::NaiveDate::from_ymd_opt(2024, 5, 6).unwrap().and_hms_micro_opt(7, 8, 9, 123456).unwrap();
    for i in 0..5i64 {
        let name = if i == 3 { None } else { Some(format!("item{i}")) };
        let n = client
            .execute(&insert, &[&"s1", &i, &name, &(i as f64 * 1.5), &(i as i32), &(i % 2 == 0), &vec![i as u8, 0, 255], &at])
            .await
            .unwrap();
        assert_eq!(n, 1);
    }
    let get = client.prepare("SELECT id, name, price, qty, ok, data, at FROM items WHERE shop = $1 AND id = $2").await.unwrap();
    let row = client.query_one(&get, &[&"s1", &2i64]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 2);
    assert_eq!(row.get::<_, Option<String>>(1).as_deref(), Some("item2"));
    assert_eq!(row.get::<_, f64>(2), 3.0);
    assert_eq!(row.get::<_, i32>(3), 2);
    assert!(row.get::<_, bool>(4));
    assert_eq!(row.get::<_, Vec<u8>>(5), vec![2, 0, 255]);
    assert_eq!(row.get::<_, chrono::NaiveDateTime>(6), at);
    let row = client.query_one(&get, &[&"s1", &3i64]).await.unwrap();
    assert_eq!(row.get::<_, Option<String>>(1), None);
    // Range with parameters, in key order.
    let ids: Vec<i64> = client
        .query("SELECT id FROM items WHERE shop = $1 AND id >= $2 ORDER BY id DESC", &[&"s1", &1i64])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, vec![4, 3, 2, 1]);
    // Error codes.
    let e = client.execute(&insert, &[&"s1", &1i64, &"dup", &0.0f64, &0i32, &true, &Vec::<u8>::new(), &at]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNIQUE_VIOLATION));
    // DETAIL names the key, as PostgreSQL's does.
    let detail = e.as_db_error().and_then(|d| d.detail()).unwrap_or_default().to_string();
    assert!(detail.starts_with("Key (") && detail.ends_with("already exists."), "{detail}");
    let e = client.query("SELECT * FROM missing", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE));
    let e = client.query("SELECT nope FROM items", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_COLUMN));
    let e = client.batch_execute("SELEC 1").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR));
    // Pipelining: many queries in flight on one connection.
    let ids: Vec<i64> = (0..5).collect();
    let futures: Vec<_> = ids.iter().map(|i| async { client.query_one(&get, &[&"s1", i]).await }).collect();
    let rows = futures::future::join_all(futures).await;
    for (i, r) in rows.into_iter().enumerate() {
        assert_eq!(r.unwrap().get::<_, i64>(0), i as i64);
    }
    // The simple protocol with several statements.
    let msgs = client
        .simple_query("UPDATE items SET qty = qty + 1 WHERE shop = 's1' AND id = 0; SELECT qty FROM items WHERE shop = 's1' AND id = 0")
        .await
        .unwrap();
    let qty = msgs.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(|s| s.to_string()),
        _ => None,
    });
    assert_eq!(qty.as_deref(), Some("1"));
    drop(client);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_over_the_wire() {
    let server = TestServer::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    a.batch_execute("CREATE TABLE acct (id bigint PRIMARY KEY, bal bigint); INSERT INTO acct VALUES (1, 10)").await.unwrap();
    a.batch_execute("BEGIN").await.unwrap();
    a.execute("UPDATE acct SET bal = 20 WHERE id = 1", &[]).await.unwrap();
    // b does not see a's uncommitted write.
    let bal: i64 = b.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(bal, 10);
    b.batch_execute("BEGIN").await.unwrap();
    b.execute("UPDATE acct SET bal = 30 WHERE id = 1", &[]).await.unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    let e = b.batch_execute("COMMIT").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::T_R_SERIALIZATION_FAILURE));
    let bal: i64 = b.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(bal, 20);
    server.stop().await;
}

/// Rows read FOR UPDATE are part of what a transaction's commit depends on: write skew between two
/// transactions that each check the other's row is refused at the second commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_read_for_update_fail_the_commit_if_changed_meanwhile() {
    let server = TestServer::start().await;
    let a = server.connect().await;
    let b = server.connect().await;
    a.batch_execute(
        "CREATE TABLE oncall (doctor text PRIMARY KEY, on_duty boolean); INSERT INTO oncall VALUES ('alice', true), ('bob', true)",
    )
    .await
    .unwrap();
    // Each takes itself off duty after checking that the other is on duty: one of them must fail.
    for (c, me, other) in [(&a, "alice", "bob"), (&b, "bob", "alice")] {
        c.batch_execute("BEGIN").await.unwrap();
        let rows = c.query("SELECT doctor FROM oncall WHERE doctor = $1 AND on_duty FOR UPDATE", &[&other]).await.unwrap();
        assert_eq!(rows.len(), 1);
        c.execute("UPDATE oncall SET on_duty = false WHERE doctor = $1", &[&me]).await.unwrap();
    }
    a.batch_execute("COMMIT").await.unwrap();
    let e = b.batch_execute("COMMIT").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::T_R_SERIALIZATION_FAILURE));
    let duty: Vec<(String, bool)> =
        a.query("SELECT doctor, on_duty FROM oncall", &[]).await.unwrap().iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(duty, vec![("alice".to_string(), false), ("bob".to_string(), true)]);

    // Without FOR UPDATE the same interleaving commits both (snapshot isolation allows write skew).
    a.batch_execute("UPDATE oncall SET on_duty = true").await.unwrap();
    for (c, me, other) in [(&a, "alice", "bob"), (&b, "bob", "alice")] {
        c.batch_execute("BEGIN").await.unwrap();
        assert_eq!(c.query("SELECT doctor FROM oncall WHERE doctor = $1 AND on_duty", &[&other]).await.unwrap().len(), 1);
        c.execute("UPDATE oncall SET on_duty = false WHERE doctor = $1", &[&me]).await.unwrap();
    }
    a.batch_execute("COMMIT").await.unwrap();
    b.batch_execute("COMMIT").await.unwrap();

    // A row locked by a range read, changed by another session before the commit; and a transaction that only
    // read FOR UPDATE (wrote nothing) is refused as well. Rows it did not return are not held.
    a.batch_execute("UPDATE oncall SET on_duty = true; BEGIN").await.unwrap();
    assert_eq!(a.query("SELECT doctor FROM oncall WHERE doctor >= 'b' FOR SHARE", &[]).await.unwrap().len(), 1);
    b.batch_execute("UPDATE oncall SET on_duty = false WHERE doctor = 'alice'").await.unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    a.batch_execute("BEGIN").await.unwrap();
    assert_eq!(a.query("SELECT doctor FROM oncall WHERE doctor >= 'b' FOR UPDATE", &[]).await.unwrap().len(), 1);
    b.batch_execute("DELETE FROM oncall WHERE doctor = 'bob'").await.unwrap();
    let e = a.batch_execute("COMMIT").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::T_R_SERIALIZATION_FAILURE));
    server.stop().await;
}

/// Table `big`: keys 0..2000 with values `value <k>`.
async fn create_big(c: &tokio_postgres::Client) {
    c.batch_execute("CREATE TABLE big (k bigint PRIMARY KEY, v text)").await.unwrap();
    let values: Vec<String> = (0..2000).map(|i| format!("({i}, 'value {i}')")).collect();
    for chunk in values.chunks(500) {
        c.batch_execute(&format!("INSERT INTO big VALUES {}", chunk.join(","))).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_stops_a_long_scan() {
    let server = TestServer::start().await;
    let c = server.connect().await;
    create_big(&c).await;
    c.batch_execute("SET statement_timeout = 1").await.unwrap();
    let mut timed_out = false;
    for _ in 0..20 {
        if let Err(e) = c.query("SELECT k FROM big WHERE v LIKE '%9%9%9%' ", &[]).await {
            assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED));
            timed_out = true;
            break;
        }
    }
    assert!(timed_out, "a 1 ms statement_timeout stopped a full scan of 2000 rows");
    c.batch_execute("SET statement_timeout = 0").await.unwrap();
    assert_eq!(c.query("SELECT k FROM big", &[]).await.unwrap().len(), 2000);
    server.stop().await;
}

/// An analytic statement's rows stream from DataFusion as the client reads them (here a 40,000-row join),
/// and statement_timeout stops an analytic statement too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analytic_results_stream_and_time_out() {
    use futures::{pin_mut, TryStreamExt};
    let server = TestServer::start().await;
    let c = server.connect().await;
    create_big(&c).await;
    let join = "SELECT a.k, b.k FROM big a CROSS JOIN big b WHERE a.k < 200 AND b.k < 200";
    let rows = c.query_raw(join, std::iter::empty::<i64>()).await.unwrap();
    pin_mut!(rows);
    let (mut n, mut sum) = (0i64, 0i64);
    while let Some(row) = rows.try_next().await.unwrap() {
        n += 1;
        sum += row.get::<_, i64>(0) * 1000 + row.get::<_, i64>(1);
    }
    assert_eq!((n, sum), (40_000, (0..200i64).map(|a| (0..200i64).map(|b| a * 1000 + b).sum::<i64>()).sum()));
    c.batch_execute("SET statement_timeout = 1").await.unwrap();
    let e = c.query("SELECT count(*) FROM big a CROSS JOIN big b WHERE a.v LIKE '%9%' AND b.v LIKE '%8%'", &[]).await.expect_err("stopped");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED));
    c.batch_execute("SET statement_timeout = 0").await.unwrap();
    let n: i64 = c.query_one("SELECT count(*) FROM big WHERE v LIKE '%99%'", &[]).await.unwrap().get(0);
    assert_eq!(n, 2000 - (0..2000).filter(|i| !i.to_string().contains("99")).count() as i64);
    server.stop().await;
}

/// psql as a subprocess against the test server: (succeeded, stdout, stderr).
fn run_psql(port: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", port, "-U", "tabula", "-d", "tabula", "-X", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .output()
        .expect("psql is installed");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_runs_scripts() {
    let server = TestServer::start().await;
    let port = server.port().to_string();
    let psql = |args: &[&str]| run_psql(&port, args);
    let (ok, _, err) = psql(&["-c", "CREATE TABLE p (k text PRIMARY KEY, n bigint)", "-c", "INSERT INTO p VALUES ('a', 1), ('b', 2)"]);
    assert!(ok, "{err}");
    let (ok, out, err) = psql(&["-At", "-c", "SELECT k, n FROM p ORDER BY k DESC"]);
    assert!(ok, "{err}");
    assert_eq!(out, "b|2\na|1\n");
    let (ok, _, err) = psql(&["-c", "SELECT * FROM nothing_here"]);
    assert!(!ok);
    assert!(err.contains("relation \"nothing_here\" does not exist"), "{err}");
    // With FETCH_COUNT psql reads a result through a cursor, FETCH_COUNT rows at a time.
    let (ok, out, err) = psql(&["-At", "-v", "FETCH_COUNT=2", "-c", "SELECT k, n FROM p ORDER BY k", "-c", "SELECT k FROM p WHERE n > 5"]);
    assert!(ok, "{err}");
    assert_eq!(out, "a|1\nb|2\n");
    server.stop().await;
}

/// psql's describe commands run its own catalog queries (on DataFusion over the generated pg_catalog);
/// the output is what PostgreSQL 15 prints for the same table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_describes_tables_and_copies() {
    let server = TestServer::start().await;
    let port = server.port().to_string();
    let psql = |args: &[&str]| {
        let (ok, out, err) = run_psql(&port, args);
        assert!(ok, "psql {args:?}: {err}");
        out
    };
    psql(&[
        "-c",
        "CREATE TABLE devices (site text, id bigint GENERATED ALWAYS AS IDENTITY, name varchar, temp double precision, \
         seen timestamptz, meta jsonb, active boolean DEFAULT true, PRIMARY KEY (site, id))",
    ]);
    let described = psql(&["-c", "\\d devices"]);
    let expected = r#"                                 Table "public.devices"
 Column |           Type           | Collation | Nullable |           Default            
--------+--------------------------+-----------+----------+------------------------------
 site   | text                     |           | not null | 
 id     | bigint                   |           | not null | generated always as identity
 name   | character varying        |           |          | 
 temp   | double precision         |           |          | 
 seen   | timestamp with time zone |           |          | 
 meta   | jsonb                    |           |          | 
 active | boolean                  |           |          | true
Indexes:
    "devices_pkey" PRIMARY KEY, btree (site, id)

"#;
    assert_eq!(described, expected);
    let tables = psql(&["-c", "\\dt"]);
    assert_eq!(
        tables,
        "         List of relations\n Schema |  Name   | Type  | Owner  \n--------+---------+-------+--------\n public | devices | table | tabula\n(1 row)\n\n"
    );
    let sized = psql(&["-At", "-c", "\\dt+"]);
    assert_eq!(sized, "public|devices|table|tabula|permanent|heap|0 bytes|\n");
    let schemas = psql(&["-At", "-c", "\\dn"]);
    assert_eq!(schemas, "public|tabula\ntabula|tabula\n");
    let databases = psql(&["-At", "-c", "\\l"]);
    assert!(databases.starts_with("tabula|tabula|UTF8|"), "{databases}");

    // \copy streams a local file through COPY FROM STDIN, and back out through COPY TO STDOUT.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "lab,Probe 1,21.5,true\nlab,Probe 2,19,false\n").unwrap();
    let load = format!("\\copy devices (site, name, temp, active) FROM '{}' WITH (FORMAT csv)", input.display());
    assert_eq!(psql(&["-c", &load]), "COPY 2\n");
    let output = dir.path().join("out.csv");
    let dump = format!("\\copy (SELECT id, name, temp FROM devices ORDER BY id) TO '{}' WITH (FORMAT csv)", output.display());
    assert_eq!(psql(&["-c", &dump]), "COPY 2\n");
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "1,Probe 1,21.5\n2,Probe 2,19\n");
    server.stop().await;
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_in_and_out_with_tokio_postgres() {
    use futures::SinkExt;
    let server = TestServer::start().await;
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE cp (k bigint PRIMARY KEY, name text, score double precision)").await.unwrap();
    let sink = c.copy_in("COPY cp (k, name, score) FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let mut data = String::new();
    for i in 0..5000 {
        data.push_str(&format!("{i}\tname\\t{i}\t{}\n", if i % 10 == 0 { "\\N".to_string() } else { format!("{i}.5") }));
    }
    // Split mid-row on purpose: rows span CopyData messages.
    let bytes = data.into_bytes();
    for chunk in bytes.chunks(777) {
        sink.send(bytes::Bytes::copy_from_slice(chunk)).await.unwrap();
    }
    assert_eq!(sink.finish().await.unwrap(), 5000);
    let row = c.query_one("SELECT name, score FROM cp WHERE k = 42", &[]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "name\t42");
    assert_eq!(row.get::<_, Option<f64>>(1), Some(42.5));
    assert_eq!(c.query_one("SELECT score FROM cp WHERE k = 40", &[]).await.unwrap().get::<_, Option<f64>>(0), None);

    // A bad value or a duplicate key fails the whole COPY: nothing of it is written.
    for bad in ["9001\tx\t1.0\n9002\tx\tnot-a-number\n", "9003\tx\t1.0\n1\tdup\t2.0\n"] {
        let sink = c.copy_in("COPY cp FROM STDIN").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from(bad)).await.unwrap();
        let e = sink.finish().await.unwrap_err();
        assert!(matches!(e.code(), Some(&SqlState::INVALID_TEXT_REPRESENTATION) | Some(&SqlState::UNIQUE_VIOLATION)), "{e:?}");
    }
    assert!(c.query("SELECT k FROM cp WHERE k >= 9000", &[]).await.unwrap().is_empty());

    // A key twice in one load is a duplicate too; the error names the line of the second.
    let sink = c.copy_in("COPY cp FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from("9004\tx\t1.0\n9005\tx\t1.0\n9004\ty\t2.0\n")).await.unwrap();
    let e = sink.finish().await.unwrap_err();
    let db = e.as_db_error().expect("server error");
    assert_eq!(db.code(), &SqlState::UNIQUE_VIOLATION);
    assert!(db.detail().is_some_and(|d| d.contains("line 3")), "{db:?}");
    assert!(c.query("SELECT k FROM cp WHERE k >= 9000", &[]).await.unwrap().is_empty());

    // Inside a transaction the rows join it: visible to it at once, gone with its rollback.
    c.batch_execute("BEGIN").await.unwrap();
    let sink = c.copy_in("COPY cp FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from("9006\tx\t1.0\n")).await.unwrap();
    assert_eq!(sink.finish().await.unwrap(), 1);
    assert_eq!(c.query("SELECT k FROM cp WHERE k >= 9000", &[]).await.unwrap().len(), 1);
    c.batch_execute("ROLLBACK").await.unwrap();
    assert!(c.query("SELECT k FROM cp WHERE k >= 9000", &[]).await.unwrap().is_empty());

    // COPY TO STDOUT.
    let out = c.copy_out("COPY (SELECT k, name FROM cp WHERE k < 3) TO STDOUT").await.unwrap();
    futures::pin_mut!(out);
    let mut text = Vec::new();
    while let Some(chunk) = futures::StreamExt::next(&mut out).await {
        text.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(String::from_utf8(text).unwrap(), "0\tname\\t0\n1\tname\\t1\n2\tname\\t2\n");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_copy_csv_from_a_file_and_back() {
    let server = TestServer::start().await;
    let port = server.port().to_string();
    let csv = server.dir.path().join("in.csv");
    std::fs::write(&csv, "id,city,note\n1,Paris,\"a, quoted \"\"note\"\"\"\n2,Oslo,\n").unwrap();
    let psql = |cmd: &str| {
        let (ok, out, err) = run_psql(&port, &["-At", "-c", cmd]);
        assert!(ok, "{err}");
        out
    };
    psql("CREATE TABLE cities (id bigint PRIMARY KEY, city text, note text)");
    let out = psql(&format!("\\copy cities FROM '{}' WITH (FORMAT csv, HEADER true)", csv.display()));
    assert!(out.contains("COPY 2"), "{out}");
    assert_eq!(psql("SELECT id, city, note IS NULL FROM cities"), "1|Paris|f\n2|Oslo|t\n");
    assert_eq!(psql("\\copy cities TO STDOUT WITH (FORMAT csv)"), "1,Paris,\"a, quoted \"\"note\"\"\"\n2,Oslo,\n");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_stops_a_running_scan() {
    let server = TestServer::start().await;
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE slow (k bigint PRIMARY KEY, v text)").await.unwrap();
    common::copy_in(&c, "COPY slow FROM STDIN", (0..100_000).map(|i| format!("{i}\tvalue number {i}\n")).collect()).await;
    let token = c.cancel_token();
    let mut cancelled = false;
    for _ in 0..5 {
        let query = c.query("SELECT k FROM slow WHERE v LIKE '%9%9%9%9%' OR v LIKE '%8%8%8%8%8%'", &[]);
        let canceller = async {
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            token.cancel_query(tokio_postgres::NoTls).await.unwrap();
        };
        let (result, _) = tokio::join!(query, canceller);
        if let Err(e) = result {
            assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e:?}");
            cancelled = true;
            break;
        }
    }
    assert!(cancelled, "a cancel request stopped the scan");
    // The connection is fine afterwards.
    assert_eq!(c.query("SELECT k FROM slow WHERE k = 5", &[]).await.unwrap().len(), 1);
    server.stop().await;
}

/// Counts the rows a statement sends before it fails, and checks the failure is a division by zero.
async fn rows_before_division_by_zero(c: &impl tokio_postgres::GenericClient, sql: &str) -> usize {
    let stream = c.query_raw(sql, std::iter::empty::<i64>()).await.unwrap();
    futures::pin_mut!(stream);
    let mut before = 0;
    loop {
        match futures::StreamExt::next(&mut stream).await {
            Some(Ok(_)) => before += 1,
            Some(Err(e)) => {
                assert_eq!(e.code(), Some(&SqlState::DIVISION_BY_ZERO), "{e}");
                return before;
            }
            None => panic!("{sql}: the statement should fail"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_string_runs_its_statements_in_order() {
    let server = TestServer::start().await;
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE s (k bigint PRIMARY KEY); INSERT INTO s VALUES (1), (2), (3)").await.unwrap();
    // The first SELECT's rows are what it read before the DELETE ran, though they are sent after it ran.
    let msgs = c.simple_query("SELECT k FROM s; DELETE FROM s WHERE k = 2; SELECT k FROM s").await.unwrap();
    let mut results = vec![vec![]];
    for m in &msgs {
        match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => results.last_mut().unwrap().push(r.get(0).unwrap().to_string()),
            tokio_postgres::SimpleQueryMessage::CommandComplete(_) => results.push(vec![]),
            _ => {}
        }
    }
    assert_eq!(results, vec![vec!["1", "2", "3"], vec![], vec!["1", "3"], vec![]]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_in_a_transaction_stream_from_its_snapshot() {
    let server = TestServer::start().await;
    let mut c = server.connect().await;
    let other = server.connect().await;
    c.batch_execute("CREATE TABLE t (k bigint PRIMARY KEY, v bigint); CREATE TABLE u (k bigint PRIMARY KEY)").await.unwrap();
    common::copy_in(&c, "COPY t FROM STDIN", (0..20_000).map(|i| format!("{i}\t{i}\n")).collect()).await;
    common::copy_in(&c, "COPY u FROM STDIN", (0..10).map(|i| format!("{i}\n")).collect()).await;

    let tx = c.transaction().await.unwrap();
    assert_eq!(tx.query_one("SELECT v FROM t WHERE k = 7", &[]).await.unwrap().get::<_, i64>(0), 7);
    // Committed by another session after the transaction's snapshot: not for this transaction to see.
    other.batch_execute("INSERT INTO t VALUES (20000, 0), (20001, 0); UPDATE t SET v = -1 WHERE k = 7").await.unwrap();
    // A scan of a transaction that has not written streams (the rows before the failing one come first, as
    // outside a transaction), and reads the snapshot. Its error fails the transaction, as in PostgreSQL: a
    // savepoint takes it back.
    tx.batch_execute("SAVEPOINT before_the_error").await.unwrap();
    assert_eq!(rows_before_division_by_zero(&tx, "SELECT k, 1 / (k - 15000) FROM t").await, 15_000);
    let e = tx.query_one("SELECT 1::bigint", &[]).await.expect_err("the transaction failed");
    assert_eq!(e.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION));
    tx.batch_execute("ROLLBACK TO SAVEPOINT before_the_error").await.unwrap();
    let rows = tx.query("SELECT k, v FROM t WHERE k >= 5", &[]).await.unwrap();
    assert_eq!(rows.len(), 19_995);
    assert_eq!(rows[2].get::<_, i64>(1), 7);
    // So do analytic statements (DataFusion).
    let n: i64 = tx.query_one("SELECT count(*) FROM t JOIN u ON t.k = u.k WHERE t.v = 7", &[]).await.unwrap().get(0);
    assert_eq!(n, 1);
    assert_eq!(tx.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0), 20_000);
    // A portal opened before the transaction writes keeps reading what it saw when it opened.
    let stmt = tx.prepare("SELECT k FROM t WHERE k >= 19990").await.unwrap();
    let portal = tx.bind(&stmt, &[]).await.unwrap();
    assert_eq!(tx.query_portal(&portal, 5).await.unwrap().len(), 5);
    tx.execute("INSERT INTO t VALUES (-1, -1)", &[]).await.unwrap();
    assert_eq!(tx.query_portal(&portal, 100).await.unwrap().len(), 5);
    // Once it has written, its reads include its own writes, and still not the other session's.
    let ks: Vec<i64> = tx.query("SELECT k FROM t WHERE k < 1 OR k >= 19999", &[]).await.unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(ks, vec![-1, 0, 19_999]);
    assert_eq!(tx.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0), 20_001);
    tx.commit().await.unwrap();
    // After it, everything committed is visible.
    assert_eq!(c.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0), 20_003);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_stream_and_portals_suspend() {
    let server = TestServer::start().await;
    let mut c = server.connect().await;
    c.batch_execute("CREATE TABLE many (k bigint PRIMARY KEY, v text)").await.unwrap();
    common::copy_in(&c, "COPY many FROM STDIN", (0..30_000).map(|i| format!("{i}\tv{i}\n")).collect()).await;
    // Streamed through the simple and the extended protocol, in key order.
    let rows = c.query("SELECT k FROM many WHERE k >= $1", &[&10i64]).await.unwrap();
    assert_eq!(rows.len(), 29_990);
    assert!(rows.windows(2).all(|w| w[0].get::<_, i64>(0) < w[1].get::<_, i64>(0)));
    let msgs = c.simple_query("SELECT k, v FROM many ORDER BY k DESC LIMIT 5 OFFSET 2").await.unwrap();
    let ks: Vec<String> = msgs
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(ks, vec!["29997", "29996", "29995", "29994", "29993"]);
    // Rows leave as they are produced, in the extended protocol too: the rows before a failing one reach the
    // client ahead of the error, as from PostgreSQL, instead of the whole result being gathered first.
    assert_eq!(rows_before_division_by_zero(&c, "SELECT k, 1 / (k - 20000) FROM many").await, 20_000);
    // A portal fetched 1000 rows at a time (Execute with a row limit, PortalSuspended in between).
    let tx = c.transaction().await.unwrap();
    let stmt = tx.prepare("SELECT k FROM many").await.unwrap();
    let portal = tx.bind(&stmt, &[]).await.unwrap();
    let mut total = 0;
    loop {
        let batch = tx.query_portal(&portal, 1000).await.unwrap();
        total += batch.len();
        if batch.len() < 1000 {
            break;
        }
    }
    assert_eq!(total, 30_000);
    tx.commit().await.unwrap();
    server.stop().await;
}

/// The protocol by hand, for what no client library shows: the command tags of a portal executed again.
/// Sends `messages` (type byte and body each) and returns every reply up to ReadyForQuery.
async fn exchange(s: &mut tokio::net::TcpStream, messages: &[(u8, Vec<u8>)]) -> Vec<(u8, Vec<u8>)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut out = Vec::new();
    for (t, body) in messages {
        out.push(*t);
        out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        out.extend_from_slice(body);
    }
    s.write_all(&out).await.unwrap();
    let mut replies = Vec::new();
    loop {
        let t = s.read_u8().await.unwrap();
        let len = s.read_i32().await.unwrap() as usize;
        let mut body = vec![0; len - 4];
        s.read_exact(&mut body).await.unwrap();
        replies.push((t, body));
        if t == b'Z' {
            return replies;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_portal_executed_again_completes_with_no_rows() {
    let server = TestServer::start().await;
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", server.port())).await.unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let params = b"user\0tabula\0database\0tabula\0\0";
        let mut startup = ((params.len() + 8) as i32).to_be_bytes().to_vec();
        startup.extend_from_slice(&196_608i32.to_be_bytes());
        startup.extend_from_slice(params);
        s.write_all(&startup).await.unwrap();
    }
    exchange(&mut s, &[]).await; // authentication, parameters, ReadyForQuery
    let tags = |replies: Vec<(u8, Vec<u8>)>| -> Vec<String> {
        replies.into_iter().filter(|(t, _)| *t == b'C').map(|(_, b)| String::from_utf8_lossy(&b[..b.len() - 1]).into_owned()).collect()
    };
    let execute = |max_rows: i32| (b'E', [&b"p1\0"[..], &max_rows.to_be_bytes()].concat());
    let sync = (b'S', Vec::new());
    exchange(&mut s, &[(b'Q', b"BEGIN\0".to_vec())]).await;
    let replies = exchange(
        &mut s,
        &[(b'P', b"\0SELECT 1 AS x UNION ALL SELECT 2\0\0\0".to_vec()), (b'B', b"p1\0\0\0\0\0\0\0\0".to_vec()), execute(0), sync.clone()],
    )
    .await;
    assert_eq!(replies.iter().filter(|(t, _)| *t == b'D').count(), 2);
    assert_eq!(tags(replies), ["SELECT 2"]);
    // PostgreSQL 15 answers both with `SELECT 0` (checked by hand).
    assert_eq!(tags(exchange(&mut s, &[execute(0), sync.clone()]).await), ["SELECT 0"]);
    assert_eq!(tags(exchange(&mut s, &[execute(1), sync]).await), ["SELECT 0"]);
    server.stop().await;
}
