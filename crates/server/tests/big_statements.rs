//! Statements over more rows than one transaction should hold. Outside a transaction block an UPDATE or
//! DELETE commits in batches of at most 10,000 rows (EXPLAIN ANALYZE counts them, an error in a later
//! batch says what the earlier ones committed); inside one, a transaction past `--max-transaction-mb` is
//! 54000 with a HINT and leaves nothing behind.

mod common;

use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

async fn connect(conn: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(conn, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn count(c: &Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.unwrap().get(0)
}

async fn many_rows(c: &Client, rows: i64) {
    c.batch_execute("CREATE TABLE t (k int PRIMARY KEY, v int, s text)").await.unwrap();
    let n = c.execute(&format!("INSERT INTO t SELECT g, g % 10, 'x' FROM generate_series(1, {rows}) g"), &[]).await.unwrap();
    assert_eq!(n, rows as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_and_delete_outside_a_transaction_block_commit_in_batches() {
    let (server, _dir, conn) = common::start_configured(|_| {}).await;
    let c = connect(&conn).await;
    many_rows(&c, 25_000).await;

    // Every row once, RETURNING included, across three batches.
    let returned = c.query("UPDATE t SET v = v + 100 WHERE v < 5 RETURNING k", &[]).await.unwrap();
    let mut keys: Vec<i32> = returned.iter().map(|r| r.get(0)).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 12_500);
    assert!(keys.iter().all(|k| k % 10 < 5));
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE v >= 100").await, 12_500);

    let plan: Vec<String> = c
        .simple_query("EXPLAIN ANALYZE UPDATE t SET v = v + 1")
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert!(plan.iter().any(|l| l.starts_with("Batches: 3 ")), "{plan:?}");
    assert_eq!(count(&c, "SELECT sum(v)::bigint FROM t").await, 12_500 * 100 + 25_000 * 9 / 2 + 25_000);

    assert_eq!(c.execute("DELETE FROM t WHERE k % 2 = 0", &[]).await.unwrap(), 12_500);
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 12_500);

    // A statement that fails in its second batch: the first stays committed, and the error says so.
    let e = c.execute("UPDATE t SET v = -1 * (k - 24001) / (k - 24001)", &[]).await.unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code(), &SqlState::DIVISION_BY_ZERO);
    let detail = db.detail().expect("a DETAIL").to_string();
    let committed: i64 = detail.split(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{detail}"));
    assert!(detail.contains("outside a transaction block, UPDATE and DELETE commit in batches"), "{detail}");
    assert!((10_000..12_000).contains(&committed), "{detail}");
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE v = -1").await, committed);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_block_past_its_size_limit_is_54000_and_leaves_nothing() {
    let (server, _dir, conn) = common::start_configured(|c| c.max_transaction_bytes = 1 << 20).await;
    let c = connect(&conn).await;
    many_rows(&c, 20_000).await;
    let long = "y".repeat(300);

    c.batch_execute("BEGIN").await.unwrap();
    let e = c.execute("UPDATE t SET s = $1", &[&long]).await.unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code(), &SqlState::PROGRAM_LIMIT_EXCEEDED);
    assert!(db.hint().is_some_and(|h| h.contains("--max-transaction-mb")), "{db:?}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE s <> 'x'").await, 0);

    // Rolled back to a savepoint, the failed statement's writes no longer count.
    c.batch_execute("BEGIN; UPDATE t SET v = 70 WHERE k <= 10; SAVEPOINT a").await.unwrap();
    let e = c.execute("UPDATE t SET s = $1", &[&long]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::PROGRAM_LIMIT_EXCEEDED));
    c.batch_execute("ROLLBACK TO SAVEPOINT a; UPDATE t SET v = 80 WHERE k = 11; COMMIT").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE v = 70").await, 10);
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE v = 80").await, 1);
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE s <> 'x'").await, 0);

    // The same statement outside a transaction block: in batches, each under the limit.
    assert_eq!(c.execute("UPDATE t SET s = $1", &[&long]).await.unwrap(), 20_000);
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE s = repeat('y', 300)").await, 20_000);

    // A key that moves could be found again by a later batch: such a statement is one transaction, under
    // the limit, and all or nothing.
    let e = c.execute("UPDATE t SET k = k + 100000", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::PROGRAM_LIMIT_EXCEEDED));
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE k > 100000").await, 0);
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 20_000);
    server.shutdown().await.unwrap();
}

/// COPY with `rows` lines of about 300 bytes into table `t` (k, v, s).
async fn copy_rows(c: &Client, rows: i64) -> Result<u64, tokio_postgres::Error> {
    use futures::SinkExt;
    let sink = c.copy_in("COPY t FROM STDIN").await?;
    futures::pin_mut!(sink);
    let long = "z".repeat(300);
    let data: String = (1..=rows).map(|k| format!("{k}\t{}\t{long}\n", k % 10)).collect();
    sink.send(bytes::Bytes::from(data)).await?;
    sink.finish().await
}

/// pgbench -i's `BEGIN; TRUNCATE ...; INSERT ...; COPY ...; COMMIT`: a COPY in a transaction block into a
/// table the transaction made (created or truncated since its last savepoint) and has not written loads
/// apart from the transaction, of any size; a rollback takes the table back without the rows. Otherwise
/// the rows go through the transaction, under its limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_into_a_table_the_transaction_made_is_not_bounded_by_its_size() {
    let (server, _dir, conn) = common::start_configured(|c| c.max_transaction_bytes = 1 << 20).await;
    let c = connect(&conn).await;
    many_rows(&c, 100).await;

    c.batch_execute("BEGIN; TRUNCATE t").await.unwrap();
    assert_eq!(copy_rows(&c, 20_000).await.unwrap(), 20_000);
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 20_000);
    c.batch_execute("UPDATE t SET v = -1 WHERE k = 7; COMMIT").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 20_000);
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE v = -1").await, 1);

    // Rolled back: the table is as it was, none of the loaded rows in it.
    c.batch_execute("BEGIN; TRUNCATE t").await.unwrap();
    assert_eq!(copy_rows(&c, 30_000).await.unwrap(), 30_000);
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 20_000);

    // Made before a savepoint, a rollback to it could not take the rows back: they go through the
    // transaction, whose limit then holds.
    c.batch_execute("BEGIN; TRUNCATE t; SAVEPOINT a").await.unwrap();
    let e = copy_rows(&c, 20_000).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::PROGRAM_LIMIT_EXCEEDED), "{e:?}");
    c.batch_execute("ROLLBACK").await.unwrap();
    // After the transaction wrote rows to other tables (pgbench -i's branches and tellers), the load goes
    // apart from it all the same; the transaction, whose snapshot is older, may not touch the table until
    // it ends.
    c.batch_execute("CREATE TABLE other (k int PRIMARY KEY); BEGIN; TRUNCATE t; INSERT INTO other VALUES (1)").await.unwrap();
    assert_eq!(copy_rows(&c, 25_000).await.unwrap(), 25_000);
    let e = c.query_one("SELECT count(*) FROM t", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::FEATURE_NOT_SUPPORTED), "{e:?}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 20_000);
    assert_eq!(count(&c, "SELECT count(*) FROM other").await, 0);
    c.batch_execute("BEGIN; TRUNCATE t; INSERT INTO other VALUES (2)").await.unwrap();
    assert_eq!(copy_rows(&c, 25_000).await.unwrap(), 25_000);
    c.batch_execute("INSERT INTO other VALUES (3); COMMIT").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 25_000);
    assert_eq!(count(&c, "SELECT count(*) FROM other").await, 2);

    // Rows written to the table itself first go through the transaction, under its limit.
    c.batch_execute("BEGIN; TRUNCATE t; INSERT INTO t VALUES (0, 1, 'x')").await.unwrap();
    let e = copy_rows(&c, 20_000).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::PROGRAM_LIMIT_EXCEEDED), "{e:?}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t").await, 25_000);
    server.shutdown().await.unwrap();
}

/// A COPY outside a transaction block into a table with indexes is a bulk load as into any table: of any
/// size (here past the transaction limit), its index entries written with its rows, all at once; a unique
/// index refuses it whole with 23505 naming the index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_into_a_table_with_indexes_is_not_bounded_by_the_transaction_limit() {
    let (server, _dir, conn) = common::start_configured(|c| c.max_transaction_bytes = 1 << 20).await;
    let c = connect(&conn).await;
    many_rows(&c, 0).await;
    c.batch_execute("CREATE INDEX t_v ON t (v) INCLUDE (s); CREATE UNIQUE INDEX t_k_v ON t (v, k)").await.unwrap();
    assert_eq!(copy_rows(&c, 20_000).await.unwrap(), 20_000);
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE v = 3").await, 2_000);
    let plan: Vec<String> = c.query("EXPLAIN SELECT k, s FROM t WHERE v = 3", &[]).await.unwrap().iter().map(|r| r.get(0)).collect();
    assert!(plan.iter().any(|l| l.contains("IndexOnlyScan index=t_v")), "{plan:?}");
    let e = c.batch_execute("CREATE UNIQUE INDEX t_s ON t (s)").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNIQUE_VIOLATION));

    // A second load whose rows collide with stored ones on a unique index only: refused whole.
    c.batch_execute("CREATE TABLE u (k bigint PRIMARY KEY, v bigint, s text); CREATE UNIQUE INDEX u_v ON u (v)").await.unwrap();
    c.batch_execute("INSERT INTO u VALUES (0, 15000, 'x')").await.unwrap();
    let sink = c.copy_in("COPY u FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    let data: String = (1..=20_000).map(|k| format!("{k}\t{k}\tz\n")).collect();
    use futures::SinkExt;
    sink.send(bytes::Bytes::from(data)).await.unwrap();
    let e = sink.finish().await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNIQUE_VIOLATION), "{e:?}");
    assert!(e.as_db_error().unwrap().message().contains("\"u_v\""), "{e:?}");
    assert_eq!(count(&c, "SELECT count(*) FROM u").await, 1);
    assert_eq!(count(&c, "SELECT count(*) FROM u WHERE v > 0").await, 1);
    server.shutdown().await.unwrap();
}
