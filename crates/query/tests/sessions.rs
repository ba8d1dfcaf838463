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

#[test]
fn full_scans_read_partitions_in_parallel_and_keep_key_order() {
    let config = StoreConfig { split_bytes: 8 * 1024, merge_bytes: 1024, maintenance_interval: None, ..StoreConfig::default() };
    let store = Arc::new(Store::open(Arc::new(MemoryEngine::new()), config).unwrap());
    let db = Database::new(store.clone()).unwrap();
    let mut s = tabula_query::Session::new(&db, "tabula", "tabula");
    s.execute_sql("CREATE TABLE p (g bigint, i bigint, pad text, PRIMARY KEY (g, i))").into_iter().for_each(|r| {
        r.unwrap();
    });
    for chunk in 0..10 {
        let values: Vec<String> = (0..300).map(|n| format!("({}, {n}, '{}')", chunk * 7 % 10, "x".repeat(20))).collect();
        for r in s.execute_sql(&format!("INSERT INTO p VALUES {} ON CONFLICT DO NOTHING", values.join(","))) {
            r.unwrap();
        }
    }
    for _ in 0..5 {
        store.run_maintenance().unwrap();
    }
    assert!(store.partitions("p").unwrap().len() > 2, "the table split into several partitions");
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
