//! The SQL layer on the store over the in-memory engine, without the wire: parallel partition scans, EXPLAIN ANALYZE.

use std::sync::Arc;

use tabula_kv::memory::MemoryEngine;
use tabula_query::{Database, Datum, Output};
use tabula_store::{Store, StoreConfig};

fn rows(out: Vec<tabula_query::Result<Output>>) -> Vec<Vec<Datum>> {
    match out.into_iter().last().unwrap().unwrap() {
        Output::Rows { rows, .. } => rows,
        Output::Stream { cursor, .. } => cursor.collect::<tabula_query::Result<Vec<_>>>().unwrap(),
        other => panic!("no rows: {other:?}"),
    }
}

/// A session on a store whose table `p (g, i, pad)` of 3000 rows is split into several partitions.
fn split_table() -> (Arc<Database>, tabula_query::Session) {
    let config = StoreConfig { split_bytes: 8 * 1024, merge_bytes: 1024, maintenance_interval: None, ..StoreConfig::default() };
    let store = Arc::new(Store::open(Arc::new(MemoryEngine::new()), config).unwrap());
    let db = Database::new(store.clone()).unwrap();
    let mut s = tabula_query::Session::new(&db, "tabula", "tabula");
    s.execute_sql("CREATE TABLE p (g bigint, i bigint, pad text, PRIMARY KEY (g, i))").into_iter().for_each(|r| {
        r.unwrap();
    });
    for chunk in 0..10 {
        let values: Vec<String> = (0..300).map(|n| format!("({}, {n}, '{}')", chunk * 7 % 10, "x".repeat(20 + n % 3))).collect();
        for r in s.execute_sql(&format!("INSERT INTO p VALUES {} ON CONFLICT DO NOTHING", values.join(","))) {
            r.unwrap();
        }
    }
    for _ in 0..5 {
        store.run_maintenance().unwrap();
    }
    assert!(store.partitions("p").unwrap().len() > 2, "the table split into several partitions");
    (db, s)
}

#[test]
fn full_scans_read_partitions_in_parallel_and_keep_key_order() {
    let (_db, mut s) = split_table();
    let all = rows(s.execute_sql("SELECT g, i FROM p"));
    assert_eq!(all.len(), 3000);
    let keys: Vec<(i64, i64)> = all.iter().map(|r| (r[0].as_int().unwrap(), r[1].as_int().unwrap())).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "partition results are concatenated in key order");
    let desc = rows(s.execute_sql("SELECT g, i FROM p ORDER BY g DESC, i DESC"));
    let dkeys: Vec<(i64, i64)> = desc.iter().map(|r| (r[0].as_int().unwrap(), r[1].as_int().unwrap())).collect();
    sorted.reverse();
    assert_eq!(dkeys, sorted);
    // A filtered full scan.
    assert_eq!(rows(s.execute_sql("SELECT i FROM p WHERE i = 7")).len(), 10);
    // EXPLAIN ANALYZE reports rows and time per node.
    let plan = rows(s.execute_sql("EXPLAIN ANALYZE SELECT i FROM p WHERE i = 7"));
    let text: Vec<String> = plan.iter().map(|r| r[0].to_pg_text(tabula_query::SqlType::Text).unwrap()).collect();
    assert!(text[0].starts_with("Project [i] (actual rows=10)"), "{text:?}");
    assert!(text[1].contains("FullScan forward on p filter=(i = 7) (actual rows=10 examined=3000"), "{text:?}");
    assert!(text.last().unwrap().starts_with("Execution Time:"), "{text:?}");
}

/// Every way a scan's rows come (streamed from the store, gathered with the partitions read in parallel,
/// gathered through a transaction that reads one way) gives the same rows in the same order.
#[test]
fn streamed_and_gathered_scans_agree() {
    let (_db, mut s) = split_table();
    let plan = |s: &mut tabula_query::Session, sql: &str| -> String {
        rows(s.execute_sql(&format!("EXPLAIN {sql}")))
            .iter()
            .map(|r| r[0].to_pg_text(tabula_query::SqlType::Text).unwrap() + "\n")
            .collect()
    };
    for (streamed, gathered) in [
        // Filtered full scans, both directions: the gathered form sorts by the key the stream is in.
        ("SELECT g, i, pad FROM p WHERE i % 7 = 0", "SELECT g, i, pad FROM p WHERE i % 7 = 0 ORDER BY g, i, pad"),
        ("SELECT g, i FROM p ORDER BY g DESC, i DESC", "SELECT g, i FROM p ORDER BY g DESC, i DESC, pad"),
        // A history read is gathered, one row per version: here each row has one.
        ("SELECT g, i, pad FROM p WHERE pad <> ''", "SELECT g, i, pad FROM p(latest_n => 1) WHERE pad <> ''"),
        // Ranges, and a limit that bounds the pages read.
        ("SELECT i, pad FROM p WHERE g = 3 AND i >= 100", "SELECT i, pad FROM p WHERE g = 3 AND i >= 100 ORDER BY i, pad"),
        ("SELECT g, i FROM p LIMIT 700", "SELECT g, i FROM p ORDER BY g, i, pad LIMIT 700"),
    ] {
        assert!(plan(&mut s, streamed).contains("streamed"), "{streamed}: {}", plan(&mut s, streamed));
        assert!(!plan(&mut s, gathered).contains("streamed"), "{gathered}");
        let want = rows(s.execute_sql(streamed));
        assert!(!want.is_empty(), "{streamed}");
        assert_eq!(rows(s.execute_sql(gathered)), want, "{gathered}");
        // In a transaction that has written, the same read goes through the transaction, one way.
        rows(s.execute_sql("BEGIN; INSERT INTO p VALUES (-1, -1, 'mine') ON CONFLICT DO NOTHING; SELECT 1"));
        let mut mine = rows(s.execute_sql(streamed));
        rows(s.execute_sql("ROLLBACK; SELECT 1"));
        mine.retain(|r| r[0] != Datum::Int(-1) && r.get(1) != Some(&Datum::Int(-1)));
        if !streamed.contains("LIMIT") {
            assert_eq!(mine, want, "{streamed} in a transaction");
        }
    }
}

/// A cursor lends rows straight from the engine's pages when it only picks columns, and builds them when it
/// filters or computes: both give the same rows, through page boundaries, OFFSET and LIMIT.
#[test]
fn a_cursor_lends_and_builds_the_same_rows() {
    let store =
        Arc::new(Store::open(Arc::new(MemoryEngine::new()), StoreConfig { maintenance_interval: None, ..StoreConfig::default() }).unwrap());
    let db = Database::new(store).unwrap();
    let mut s = tabula_query::Session::new(&db, "tabula", "tabula");
    let values: Vec<String> = (0..1500).map(|k| format!("({k}, 'v{k}')")).collect();
    rows(s.execute_sql(&format!("CREATE TABLE t (k bigint PRIMARY KEY, v text); INSERT INTO t VALUES {}; SELECT 1", values.join(","))));
    for (lent, built, n) in [
        ("SELECT k, v FROM t", "SELECT k, v FROM t WHERE v <> ''", 1500),
        ("SELECT k, v FROM t LIMIT 700 OFFSET 600", "SELECT k, v FROM t WHERE v <> '' LIMIT 700 OFFSET 600", 700),
        ("SELECT v, k FROM t WHERE k >= 1000 ORDER BY k DESC", "SELECT v, k + 0 FROM t WHERE k >= 1000 ORDER BY k DESC", 500),
        ("SELECT k, _version FROM t LIMIT 3", "SELECT k, _version FROM t WHERE v <> '' LIMIT 3", 3),
    ] {
        let want = rows(s.execute_sql(lent));
        assert_eq!(want.len(), n, "{lent}");
        assert_eq!(rows(s.execute_sql(built)), want, "{built}");
    }
}

/// COPY checks each row against the table's CHECK constraints: one bad row and nothing of the load is
/// written, with the line named.
#[test]
fn copy_rows_meet_check_constraints() {
    let store = Arc::new(Store::open(Arc::new(MemoryEngine::new()), StoreConfig::default()).unwrap());
    let db = Database::new(store).unwrap();
    let mut s = tabula_query::Session::new(&db, "tabula", "tabula");
    for r in s.execute_sql("CREATE TABLE t (id bigint PRIMARY KEY, qty int CHECK (qty >= 0))") {
        r.unwrap();
    }
    for data in ["1\t5\n2\t-1\n3\t2\n", "1\t5\n2\t\\N\n"] {
        assert!(matches!(s.execute_sql("COPY t FROM STDIN").pop(), Some(Ok(Output::CopyIn { .. }))));
        s.copy_data(data.as_bytes());
        match s.copy_done() {
            Ok(n) => assert_eq!(n, 2, "NULL passes"),
            Err(e) => {
                assert_eq!(e.sqlstate(), "23514");
                assert!(e.detail().unwrap().contains("Failing row contains (2, -1)"), "{:?}", e.detail());
                assert!(e.detail().unwrap().contains("line 2"), "{:?}", e.detail());
                assert!(rows(s.execute_sql("SELECT * FROM t")).is_empty(), "nothing of the failed load");
            }
        }
    }
    assert_eq!(rows(s.execute_sql("SELECT id FROM t")).len(), 2);
}

/// A unique index's 23505 names the values as their columns' types print them, as PostgreSQL's DETAIL
/// does (a date as a date, not the day number the engine stores); so does a build over duplicates.
#[test]
fn a_duplicate_key_detail_prints_values_by_type() {
    let store = Arc::new(Store::open(Arc::new(MemoryEngine::new()), StoreConfig::default()).unwrap());
    let db = Database::new(store).unwrap();
    let mut s = tabula_query::Session::new(&db, "tabula", "tabula");
    for sql in [
        "CREATE TABLE t (id int PRIMARY KEY, d date UNIQUE, at timestamp, u uuid)",
        "INSERT INTO t VALUES (1, '2024-01-02', '2024-01-02 03:04:05', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')",
        "INSERT INTO t VALUES (2, '2024-01-03', '2024-01-02 03:04:05', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')",
    ] {
        for r in s.execute_sql(sql) {
            r.unwrap();
        }
    }
    let err = |s: &mut tabula_query::Session, sql: &str| s.execute_sql(sql).pop().unwrap().unwrap_err();
    let e = err(&mut s, "INSERT INTO t VALUES (3, '2024-01-02', NULL, NULL)");
    assert_eq!((e.sqlstate(), e.detail().as_deref()), ("23505", Some("Key (d)=(2024-01-02) already exists.")));
    let e = err(&mut s, "CREATE UNIQUE INDEX t_at_u ON t (at, u)");
    assert_eq!(e.detail().as_deref(), Some("Key (at, u)=(2024-01-02 03:04:05, a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11) is duplicated."));
}

/// A temporary table is its session's alone, and goes with it; a permanent table of the same name stays.
#[test]
fn a_temporary_table_goes_with_its_session() {
    let store =
        Arc::new(Store::open(Arc::new(MemoryEngine::new()), StoreConfig { maintenance_interval: None, ..StoreConfig::default() }).unwrap());
    let db = Database::new(store.clone()).unwrap();
    let mut first = tabula_query::Session::new(&db, "tabula", "tabula");
    let mut second = tabula_query::Session::new(&db, "tabula", "tabula");
    for sql in [
        "CREATE TABLE t (k int PRIMARY KEY)",
        "INSERT INTO t VALUES (1)",
        "CREATE TEMP TABLE t (k int PRIMARY KEY)",
        "INSERT INTO t VALUES (2), (3)",
    ] {
        first.execute_sql(sql).into_iter().for_each(|r| {
            r.unwrap();
        });
    }
    let count = |s: &mut tabula_query::Session| rows(s.execute_sql("SELECT count(*) FROM t"))[0][0].as_int().unwrap();
    assert_eq!(count(&mut first), 2, "the temporary table hides the permanent one");
    assert_eq!(count(&mut second), 1, "another session sees the permanent one");
    assert_eq!(store.table_names(), vec!["t".to_string()], "the catalog lists no temporary table");
    // The session numbered 1 owns its temporary tables under this private name (`tabula_query::temp`).
    let private = tabula_store::value::private_table_name(1, "t");
    assert!(store.table(&private).is_ok());
    drop(first);
    assert!(store.table(&private).is_err(), "the session's end drops its temporary tables");
    assert_eq!(count(&mut second), 1);
}

/// `tabula.partitions` lists a global index's partitions under its name, bounded by entries shown as the
/// indexed values (as literals of the column's type) and the row's key after them.
#[test]
fn an_index_split_shows_its_bounds_by_value() {
    let (db, mut s) = split_table();
    for r in s.execute_sql("CREATE INDEX p_by_pad ON p (pad DESC, i)") {
        r.unwrap();
    }
    for _ in 0..5 {
        db.store().run_maintenance().unwrap();
    }
    let parts = rows(
        s.execute_sql("SELECT start_key, end_key, approx_rows FROM tabula.partitions WHERE index_name = 'p_by_pad' ORDER BY partition_id"),
    );
    assert!(parts.len() > 2, "the index split: {parts:?}");
    let total: i64 = parts.iter().map(|r| if let Datum::Int(n) = r[2] { n } else { 0 }).sum();
    assert_eq!(total, 3000, "one entry per row");
    // A bound between two partitions: ('xxx…', i, g, i) — the padding, then i, then the row's key (g, i).
    let bound = match &parts[1][0] {
        Datum::Text(t) => t.clone(),
        other => panic!("{other:?}"),
    };
    let fields: Vec<&str> = bound.trim_matches(|c| c == '(' || c == ')').split(", ").collect();
    assert_eq!(fields.len(), 4, "{bound}");
    assert!(fields[0].starts_with("'xxxxxxxxxxxxxxxxxxxx") && fields[0].ends_with('\''), "{bound}");
    assert_eq!(fields[1], fields[3], "{bound}: the index's i is the row's i");
    assert!(matches!(&parts[0][0], Datum::Text(t) if t == "-inf"));
    assert!(matches!(&parts.last().unwrap()[1], Datum::Text(t) if t == "+inf"));
}
