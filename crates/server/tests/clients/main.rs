//! End-to-end tests with real clients against a real server on a real socket: tokio-postgres here,
//! psql in `psql`, the server's settings and limits in `server`, streamed results, timeouts and
//! cancellation in `streams`.

#[path = "../common/mod.rs"]
mod common;
mod psql;
mod server;
mod streams;

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
    // And the error's fields name the table and the constraint, as PostgreSQL's do.
    let db = e.as_db_error().unwrap();
    assert_eq!((db.schema(), db.table(), db.constraint()), (Some("public"), Some("items"), Some("items_pkey")));
    let e = client.execute("INSERT INTO items (shop, id) VALUES (NULL, 9)", &[]).await.unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!((db.code(), db.table(), db.column()), (&SqlState::NOT_NULL_VIOLATION, Some("items"), Some("shop")));
    let e = client.query("SELECT * FROM missing", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE));
    let e = client.query("SELECT nope FROM items", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_COLUMN));
    let e = client.batch_execute("SELEC 1").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR));
    // Worded as PostgreSQL words it, with the position psql draws its caret at (in the whole query string).
    let e = client.batch_execute("SELECT 1;\nSELEC 2").await.unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.message(), "syntax error at or near \"SELEC\"");
    assert_eq!(db.position(), Some(&tokio_postgres::error::ErrorPosition::Original(11)));
    let e = client.prepare("SELECT 1 +").await.unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!((db.message(), db.position()), ("syntax error at end of input", Some(&tokio_postgres::error::ErrorPosition::Original(11))));
    // An unknown column's error is at the name, as PostgreSQL's (the positions it gives for these), on both
    // engine routes and in both protocols.
    for (sql, position) in [
        ("SELECT nosuch FROM items", 8),
        ("SELECT id, items.nosuch FROM items", 12),
        ("SELECT id FROM items WHERE\n  \"Nosuch\" = 1", 30),
        ("UPDATE items SET qty = nosuch WHERE shop = 's1' AND id = 0", 24),
        ("SELECT count(nosuch) FROM items", 14),
        ("SELECT a.id FROM items a JOIN items b ON a.id = b.nosuch", 49),
        ("SELECT shop FROM items GROUP BY shop HAVING max(zz) > 1", 49),
    ] {
        let simple = client.batch_execute(sql).await.unwrap_err();
        let extended = client.prepare(sql).await.unwrap_err();
        for e in [simple, extended] {
            let db = e.as_db_error().unwrap();
            assert_eq!(
                (db.code(), db.position()),
                (&SqlState::UNDEFINED_COLUMN, Some(&tokio_postgres::error::ErrorPosition::Original(position))),
                "{sql}"
            );
        }
    }
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
