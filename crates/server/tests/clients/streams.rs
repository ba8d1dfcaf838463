//! Results read as the client takes them: streams, portals, statement timeouts and cancel requests.

use crate::common::{self, TestServer};
use tokio_postgres::error::SqlState;

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
