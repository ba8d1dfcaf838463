//! What a hostile or careless client can do costs that client an error, never the server: malformed and
//! oversized protocol messages, statements nested past every stack, trust authentication off loopback,
//! and cancel keys under password authentication. Fixed seeds, bounded in count and time.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use tabula_server::auth::AuthMethod;
use tabula_server::{start, ServerConfig};
use tokio_postgres::error::SqlState;

/// A client that speaks the protocol byte by byte, to send what no driver would.
struct Raw(TcpStream);

impl Raw {
    fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw(s)
    }

    fn startup(port: u16, user: &str) -> Raw {
        let mut r = Raw::connect(port);
        r.send(&startup_packet(&[("user", user), ("database", "tabula")]));
        r
    }

    fn send(&mut self, bytes: &[u8]) {
        // The server may have closed the connection already: that is an answer too.
        let _ = self.0.write_all(bytes);
    }

    /// Backend messages until ReadyForQuery, the connection's end, or `limit` of them.
    fn messages(&mut self, limit: usize) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        while out.len() < limit {
            let mut head = [0u8; 5];
            if self.0.read_exact(&mut head).is_err() {
                break;
            }
            let len = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            if self.0.read_exact(&mut body).is_err() {
                break;
            }
            let ready = head[0] == b'Z';
            out.push((head[0], body));
            if ready {
                break;
            }
        }
        out
    }
}

fn startup_packet(params: &[(&str, &str)]) -> Vec<u8> {
    let mut body = 196608u32.to_be_bytes().to_vec();
    for (k, v) in params {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    m.extend(body);
    m
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// The SQLSTATE of an ErrorResponse body.
fn sqlstate(body: &[u8]) -> Option<String> {
    let mut fields = body.split(|&b| b == 0);
    fields.find(|f| f.first() == Some(&b'C')).map(|f| String::from_utf8_lossy(&f[1..]).into_owned())
}

/// A server on loopback with one user, authenticated by `auth`.
fn with_user(dir: &std::path::Path, auth: AuthMethod, user: &str, password: &str) -> ServerConfig {
    ServerConfig {
        data_dir: dir.join("data"),
        listen: "127.0.0.1:0".into(),
        auth,
        users: HashMap::from([(user.to_string(), password.to_string())]),
        block_cache_bytes: 8 << 20,
        ..Default::default()
    }
}

/// xorshift64*: the fuzz cases are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Well-formed messages of every kind a client sends after startup: the material the fuzzer breaks.
fn valid_messages() -> Vec<Vec<u8>> {
    let bind = [b"\0s1\0".as_slice(), &[0, 1, 0, 0], &[0, 1, 0, 0, 0, 1, b'7'], &[0, 1, 0, 1]].concat();
    vec![
        message(b'Q', b"SELECT 1\0"),
        message(b'P', &[b"s1\0SELECT $1::bigint\0".as_slice(), &[0, 1, 0, 0, 0, 20]].concat()),
        message(b'B', &bind),
        message(b'D', b"Ps1\0"),
        message(b'E', &[b"\0".as_slice(), &[0, 0, 0, 0]].concat()),
        message(b'C', b"Ss1\0"),
        message(b'H', b""),
        message(b'S', b""),
    ]
}

/// One broken message: a wrong length, a count past the end, a truncated body, flipped bytes, or a type
/// no client sends.
fn broken(rng: &mut Rng, valid: &[Vec<u8>]) -> Vec<u8> {
    let mut m = valid[rng.below(valid.len())].clone();
    match rng.below(6) {
        0 => {
            let len = [0u32, 3, 5, 0x7fff_ffff, 0xffff_ffff, rng.next() as u32][rng.below(6)];
            m[1..5].copy_from_slice(&len.to_be_bytes());
        }
        1 if m.len() > 6 => {
            // A count or length field set to something large.
            let at = 5 + rng.below(m.len() - 6);
            m[at] = 0x7f;
            m[at + 1] = 0xff;
        }
        2 => {
            let keep = 5 + rng.below(m.len().saturating_sub(5).max(1));
            m.truncate(keep);
            let len = (m.len() - 1) as u32;
            m[1..5].copy_from_slice(&len.to_be_bytes());
        }
        3 => {
            for _ in 0..1 + rng.below(4) {
                let at = 5 + rng.below(m.len().saturating_sub(5).max(1));
                if at < m.len() {
                    m[at] = rng.next() as u8;
                }
            }
        }
        4 => m[0] = [0u8, b'z', 0xff, b'p', b'K'][rng.below(5)],
        _ => {
            // Fields whose sizes do not add up to the length.
            m.extend_from_slice(&[0, 0, 0]);
        }
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_cost_their_connection_and_nothing_else() {
    let (server, _dir, conn) = common::start_configured(|c| c.max_connections = 4).await;
    let port = server.addr.port();
    let valid = valid_messages();
    let mut rng = Rng(0x7ab0_1a5e_ed00_0001);
    let mut internal = Vec::new();
    let cases = 400;
    for case in 0..cases {
        let valid = valid.clone();
        let bad = broken(&mut rng, &valid);
        let prefix = valid[rng.below(valid.len())].clone();
        let errors = tokio::task::spawn_blocking(move || {
            let mut c = Raw::startup(port, "fuzz");
            c.messages(64);
            c.send(&prefix);
            c.send(&bad);
            c.send(&message(b'S', b""));
            c.0.shutdown(std::net::Shutdown::Write).ok();
            let mut states = Vec::new();
            for _ in 0..4 {
                let got = c.messages(64);
                if got.is_empty() {
                    break;
                }
                states.extend(got.iter().filter(|(k, _)| *k == b'E').filter_map(|(_, b)| sqlstate(b)));
            }
            states
        })
        .await
        .unwrap();
        if errors.iter().any(|s| s == "XX000") {
            internal.push(case);
        }
    }
    assert!(internal.is_empty(), "internal errors (caught panics) in cases {internal:?}");
    // Every connection slot came back: as many clients as the limit allows log in, and work.
    let mut held = Vec::new();
    for _ in 0..4 {
        let (c, task) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.expect("a slot is free");
        tokio::spawn(task);
        assert_eq!(c.query_one("SELECT 1::bigint", &[]).await.unwrap().get::<_, i64>(0), 1);
        held.push(c);
    }
    drop(held);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_violations_are_08p01_and_long_messages_are_refused_unbuffered() {
    let (server, _dir, _conn) = common::start_configured(|c| c.max_statement_bytes = 1 << 10).await;
    let port = server.addr.port();
    tokio::task::spawn_blocking(move || {
        // A Bind whose parameter length runs past the message.
        let mut c = Raw::startup(port, "u");
        c.messages(64);
        c.send(&message(b'B', &[b"\0\0".as_slice(), &[0, 0, 0, 1, 0x7f, 0, 0, 0]].concat()));
        let got = c.messages(8);
        assert_eq!(got.last().map(|(k, b)| (*k, sqlstate(b))), Some((b'E', Some("08P01".into()))), "{got:?}");
        // A message type no client sends.
        let mut c = Raw::startup(port, "u");
        c.messages(64);
        c.send(&message(b'z', b""));
        assert_eq!(c.messages(8).last().and_then(|(_, b)| sqlstate(b)), Some("08P01".into()));
        // A startup packet without its terminator.
        let mut c = Raw::connect(port);
        let mut p = startup_packet(&[("user", "u")]);
        p.pop();
        p[3] -= 1;
        c.send(&p);
        assert_eq!(c.messages(8).last().and_then(|(_, b)| sqlstate(b)), Some("08P01".into()));
        // A 64 MiB Query on a 1 KiB limit: refused from its header, its body read and dropped.
        let mut c = Raw::startup(port, "u");
        c.messages(64);
        let mut head = vec![b'Q'];
        head.extend_from_slice(&((64u32 << 20) + 4).to_be_bytes());
        c.send(&head);
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..64 {
            c.send(&chunk);
        }
        let got = c.messages(8);
        assert_eq!(got.last().and_then(|(_, b)| sqlstate(b)), Some("54000".into()), "{got:?}");
    })
    .await
    .unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_nested_past_the_limit_are_54001_and_those_within_it_run() {
    let server = common::TestServer::start().await;
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE deep (k bigint PRIMARY KEY, v bigint); INSERT INTO deep VALUES (1, 1), (2, 2)").await.unwrap();
    let limit = tabula_query::depth::MAX_DEPTH;
    let too_deep = [
        format!("SELECT 1{}", " + 1".repeat(limit)),
        format!("SELECT k FROM deep WHERE v = 0{}", " OR v = 1".repeat(limit / 2)),
        format!("SELECT 1{}", " UNION SELECT 1".repeat(limit / 4)),
        format!("SELECT {}1{}", "(".repeat(60), ")".repeat(60)),
        format!("SELECT {}1", "- ".repeat(60)),
    ];
    for sql in &too_deep {
        let e = c.simple_query(sql).await.expect_err("refused");
        assert_eq!(e.code(), Some(&SqlState::STATEMENT_TOO_COMPLEX), "{e}");
        let e = c.prepare(sql).await.expect_err("refused");
        assert_eq!(e.code(), Some(&SqlState::STATEMENT_TOO_COMPLEX), "{e}");
    }
    // Just within the limit, on the key-value route and through DataFusion: answered, the server alive.
    let within = limit - 20;
    let n = c.query_one(&format!("SELECT (1{})::bigint", " + 1".repeat(within / 2)), &[]).await.unwrap();
    assert_eq!(n.get::<_, i64>(0), 1 + (within / 2) as i64);
    let ors = format!("SELECT count(*) FROM deep WHERE v = 0{}", " OR v = 2".repeat(within / 2 - 1));
    assert_eq!(c.query_one(&ors, &[]).await.unwrap().get::<_, i64>(0), 1);
    let joined = format!("SELECT count(*) FROM deep a JOIN deep b ON a.k = b.k WHERE a.v = 0{}", " OR a.v = 1".repeat(within / 2 - 4));
    assert_eq!(c.query_one(&joined, &[]).await.unwrap().get::<_, i64>(0), 1);
    // (A chain of additions at the limit through DataFusion is left out: its type coercion is quadratic in
    // the depth, minutes in a debug build. The OR chain above takes the same route at the same depth.)
    let unions = format!("SELECT count(*) FROM (SELECT 1{}) u", " UNION ALL SELECT 1".repeat(within / 4 - 10));
    assert_eq!(c.query_one(&unions, &[]).await.unwrap().get::<_, i64>(0), (within / 4 - 9) as i64);
    assert_eq!(c.query_one("SELECT count(*) FROM deep", &[]).await.unwrap().get::<_, i64>(0), 2);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_authentication_is_refused_off_loopback_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        ServerConfig { data_dir: dir.path().join("data"), listen: "0.0.0.0:0".into(), block_cache_bytes: 8 << 20, ..Default::default() };
    let e = start(config.clone()).await.err().expect("trust on every address is refused");
    assert!(e.to_string().contains("--allow-trust-remote"), "{e}");
    let forced = start(ServerConfig { allow_trust_remote: true, ..config.clone() }).await.expect("forced");
    forced.shutdown().await.unwrap();
    let users = HashMap::from([("u".to_string(), "p".to_string())]);
    let scram = start(ServerConfig { auth: AuthMethod::ScramSha256, users, ..config }).await.expect("a password method anywhere");
    scram.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_session_has_its_own_cancel_key_under_password_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(with_user(dir.path(), AuthMethod::Password, "u", "pw")).await.unwrap();
    let port = server.addr.port();
    let pids = tokio::task::spawn_blocking(move || {
        (0..3)
            .map(|_| {
                let mut c = Raw::startup(port, "u");
                let asked = c.messages(1);
                assert_eq!(asked.first().map(|(k, _)| *k), Some(b'R'), "a password is asked for");
                c.send(&message(b'p', b"pw\0"));
                let got = c.messages(64);
                let key = got.iter().find(|(k, _)| *k == b'K').expect("BackendKeyData").1.clone();
                (i32::from_be_bytes(key[..4].try_into().unwrap()), c)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let mut seen: Vec<i32> = pids.iter().map(|(p, _)| *p).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 3, "backend pids {seen:?}");
    drop(pids);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_answers_an_unknown_user_as_a_known_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(with_user(dir.path(), AuthMethod::ScramSha256, "known", "pw")).await.unwrap();
    let port = server.addr.port();
    let replies = tokio::task::spawn_blocking(move || {
        ["known", "unknown"].map(|user| {
            let mut c = Raw::startup(port, user);
            let offer = c.messages(1);
            assert_eq!(offer[0].1[..4], 10i32.to_be_bytes(), "SCRAM is offered to {user}");
            let first = b"n,,n=,r=fyko+d2lbbFgONRv9qkxdawL";
            let mut body = b"SCRAM-SHA-256\0".to_vec();
            body.extend_from_slice(&(first.len() as i32).to_be_bytes());
            body.extend_from_slice(first);
            c.send(&message(b'p', &body));
            let reply = c.messages(1);
            // AuthenticationSASLContinue (11) with the server's nonce, salt and iteration count.
            (reply[0].0, i32::from_be_bytes(reply[0].1[..4].try_into().unwrap()), String::from_utf8_lossy(&reply[0].1[4..]).into_owned())
        })
    })
    .await
    .unwrap();
    for (user, (kind, code, challenge)) in ["known", "unknown"].iter().zip(&replies) {
        assert_eq!((*kind, *code), (b'R', 11), "{user} is challenged");
        assert!(challenge.contains(",s=") && challenge.ends_with(",i=4096"), "{user}: {challenge}");
    }
    server.shutdown().await.unwrap();
}

/// statement_timeout stops analytic statements as it stops key-value scans: one streaming rows as fast as
/// they come, one working long without a row (a recursive query without end), and one long to plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_stops_analytic_statements() {
    use futures::StreamExt;
    let server = common::TestServer::start().await;
    let c = server.connect().await;
    c.batch_execute("SET statement_timeout = '1s'").await.unwrap();
    let bounded = Duration::from_secs(120);
    let streamed = tokio::time::timeout(bounded, async {
        let rows = c.query_raw("SELECT * FROM generate_series(1, 10000000000)", Vec::<i64>::new()).await?;
        futures::pin_mut!(rows);
        let mut n = 0u64;
        while let Some(r) = rows.next().await {
            r?;
            n += 1;
        }
        Ok::<u64, tokio_postgres::Error>(n)
    })
    .await
    .expect("the stream stops");
    let e = streamed.expect_err("timed out");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    let recursive = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r";
    let e = tokio::time::timeout(bounded, c.simple_query(recursive)).await.expect("the query stops").expect_err("timed out");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    // Planning counts: DataFusion plans a chain of 1,000 additions in seconds (the square of its depth), and
    // the statement times out while it does, on either protocol.
    c.batch_execute("CREATE TABLE sums (k bigint PRIMARY KEY, v bigint)").await.unwrap();
    let sum = format!("SELECT {} FROM sums GROUP BY v", vec!["v"; 1000].join(" + "));
    c.batch_execute("SET statement_timeout = '300ms'").await.unwrap();
    let e = tokio::time::timeout(bounded, c.simple_query(&sum)).await.expect("the query stops").expect_err("timed out");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    let e = tokio::time::timeout(bounded, c.prepare(&sum)).await.expect("the query stops").expect_err("timed out");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    // The session goes on.
    c.batch_execute("SET statement_timeout = 0").await.unwrap();
    assert_eq!(c.query_one("SELECT 1::bigint", &[]).await.unwrap().get::<_, i64>(0), 1);
    server.stop().await;
}

/// A statement that needs more memory than its budget fails with 53200, and the server, the session and
/// every other session go on; a text function asked for a value over PostgreSQL's 1 GB limit is 54000
/// before anything is allocated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_over_its_memory_budget_is_53200_and_the_server_goes_on() {
    let (server, _dir, conn) = common::start_configured(|c| c.statement_memory_bytes = 32 << 20).await;
    let (c, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let (other, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    c.batch_execute("CREATE TABLE t (k bigint PRIMARY KEY, v bigint); INSERT INTO t SELECT g, g % 10 FROM generate_series(1, 500) g")
        .await
        .unwrap();
    assert_eq!(c.query_one("SHOW tabula.statement_memory", &[]).await.unwrap().get::<_, String>(0), "32MB");
    // 3.1 billion rows, through hash joins whose build sides grow past the budget.
    let join = "SELECT count(*) FROM t a JOIN t b ON a.v = b.v JOIN t c ON b.v = c.v JOIN t d ON c.v = d.v JOIN t e ON d.v = e.v";
    let e = c.simple_query(join).await.expect_err("over the budget");
    assert_eq!(e.code(), Some(&SqlState::OUT_OF_MEMORY), "{e}");
    // In a transaction that has written, a result is held until the statement ends: 125 million rows from
    // a cross join whose own build side is small count against the budget, and fail the transaction.
    c.batch_execute("BEGIN; INSERT INTO t VALUES (501, 1)").await.unwrap();
    let e = c.simple_query("SELECT a.k, b.k, c.k FROM t a, t b, t c").await.expect_err("over the budget");
    assert_eq!(e.code(), Some(&SqlState::OUT_OF_MEMORY), "{e}");
    let e = c.simple_query("SELECT 1").await.expect_err("the transaction failed");
    assert_eq!(e.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION), "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    // A sort larger than the budget (300,000 rows of 100 bytes and more) spills to disk instead, and
    // finishes.
    let sorted = c.query("SELECT repeat('x', 100) || (g * 7919 % 300000) AS s FROM generate_series(1, 300000) g ORDER BY s", &[]).await;
    let sorted: Vec<String> = sorted.unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(sorted.len(), 300_000);
    assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "sorted");
    for (sql, state) in [
        ("SELECT length(repeat('x', 2147483647))", SqlState::PROGRAM_LIMIT_EXCEEDED),
        ("SELECT length(repeat('xy', 600000000))", SqlState::PROGRAM_LIMIT_EXCEEDED),
        ("SELECT length(lpad('x', 268435455))", SqlState::PROGRAM_LIMIT_EXCEEDED),
    ] {
        let e = c.simple_query(sql).await.expect_err(sql);
        assert_eq!(e.code(), Some(&state), "{sql}: {e}");
    }
    assert_eq!(c.query_one("SELECT length(repeat('x', 100000))", &[]).await.unwrap().get::<_, i32>(0), 100_000);
    // On the key-value route: a sort off the key holds every row (50 MB here); under a LIMIT only as many
    // as it returns.
    c.batch_execute("CREATE TABLE wide (k bigint PRIMARY KEY, v text); INSERT INTO wide SELECT g, repeat('x', 1000) || g FROM generate_series(1, 50000) g")
        .await
        .unwrap();
    let plan: Vec<String> = c.query("EXPLAIN SELECT k, v FROM wide ORDER BY v", &[]).await.unwrap().iter().map(|r| r.get(0)).collect();
    assert!(plan.iter().any(|l| l.contains("Sort")) && plan.iter().any(|l| l.contains("FullScan")), "{plan:?}");
    let e = c.query("SELECT k, v FROM wide ORDER BY v", &[]).await.expect_err("over the budget");
    assert_eq!(e.code(), Some(&SqlState::OUT_OF_MEMORY), "{e}");
    let top: Vec<i64> =
        c.query("SELECT k FROM wide ORDER BY v DESC LIMIT 3 OFFSET 1", &[]).await.unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(top, vec![9998, 9997, 9996], "the top rows of a bounded sort");
    // A transaction that has written holds its whole result, and fails with it.
    c.batch_execute("BEGIN; INSERT INTO wide VALUES (0, 'y')").await.unwrap();
    let e = c.query("SELECT k, v FROM wide", &[]).await.expect_err("over the budget");
    assert_eq!(e.code(), Some(&SqlState::OUT_OF_MEMORY), "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(c.query_one("SELECT count(*) FROM wide", &[]).await.unwrap().get::<_, i64>(0), 50_000);
    assert_eq!(other.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0), 500);
    server.shutdown().await.unwrap();
}

/// statement_timeout stops an analytic statement that never yields a row nor waits: a count over a cross
/// join of 62.5 billion rows, outside a transaction (streamed) and inside one (collected).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_stops_a_cross_join_that_never_yields() {
    let server = common::TestServer::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE t (k bigint PRIMARY KEY); INSERT INTO t SELECT g FROM generate_series(1, 500) g; SET statement_timeout = '1s'",
    )
    .await
    .unwrap();
    let cross = "SELECT count(*) FROM t a, t b, t c, t d";
    let bounded = Duration::from_secs(120);
    let e = tokio::time::timeout(bounded, c.simple_query(cross)).await.expect("the query stops").expect_err("timed out");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    c.batch_execute("BEGIN").await.unwrap();
    let e = tokio::time::timeout(bounded, c.query(cross, &[])).await.expect("the query stops").expect_err("timed out");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    c.batch_execute("ROLLBACK; SET statement_timeout = 0").await.unwrap();
    assert_eq!(c.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0), 500);
    server.stop().await;
}
