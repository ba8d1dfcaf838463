//! The store's micro-benchmarks on RocksDB (a bench harness, not timed tests):
//! `cargo bench --workspace --bench engine`.
//!
//! Each workload runs for a fixed number of operations, five times; the median throughput and latency are
//! printed as a Markdown table for BENCHMARKS.md.

use std::sync::Arc;
use std::time::Instant;

use tabula_kv_rocks::{RocksEngine, RocksOptions};
use tabula_store::*;

const ROWS: i64 = 100_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn bench(name: &str, ops: u64, mut f: impl FnMut(u64)) {
    let mut rates = Vec::new();
    let mut seq = 0u64;
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..ops {
            f(seq);
            seq += 1;
        }
        rates.push(ops as f64 / start.elapsed().as_secs_f64());
    }
    let rate = median(rates);
    println!("| {name} | {:.0} | {:.2} |", rate, 1e6 / rate);
}

fn main() {
    let durability = match std::env::var("TABULA_BENCH_DURABILITY").as_deref() {
        Ok("sync") => Durability::Sync,
        _ => Durability::Group { interval: std::time::Duration::from_millis(5) },
    };
    let dir = tempfile::tempdir().unwrap();
    let rocks = RocksOptions { sync_writes: durability == Durability::Sync, ..RocksOptions::default() };
    let engine = Arc::new(RocksEngine::open(dir.path(), &rocks).unwrap());
    let store = Arc::new(Store::open(engine, StoreConfig { durability, ..StoreConfig::default() }).unwrap());
    let def = TableDef {
        name: "b".into(),
        primary_key: vec![PkColumn { name: "k".into(), ty: PkType::Integer, auto_increment: false }],
        partition_key_len: 1,
        options: TableOptions { max_versions: 3, ..TableOptions::default() },
        user_meta: vec![],
        indexes: vec![],
    };
    store.create_table(def).unwrap();
    let cells = |i: i64| {
        vec![
            CellWrite::new("name", Value::String(format!("name-{i}"))),
            CellWrite::new("n", Value::Integer(i)),
            CellWrite::new("score", Value::Double(i as f64)),
        ]
    };
    for i in 0..ROWS {
        store.put_row("b", &[Some(PkValue::Integer(i))], &cells(i), &Condition::ignore()).unwrap();
    }
    let spec = ReadSpec::default();
    let key = |s: u64| PkValue::Integer(((s * 7919) % ROWS as u64) as i64);
    println!("durability: {durability:?}, {ROWS} rows of 3 attributes\n");
    println!("| workload | ops/s | µs/op |");
    println!("|---|---|---|");
    bench("get_row", 100_000, |s| {
        store.get_row("b", &[key(s)], &spec).unwrap().unwrap();
    });
    bench("batch_get (10 keys)", 10_000, |s| {
        let keys: Vec<Vec<PkValue>> = (0..10).map(|j| vec![key(s * 10 + j)]).collect();
        assert_eq!(store.batch_get("b", &keys, &spec).unwrap().len(), 10);
    });
    bench("put_row (new keys)", 20_000, |s| {
        store.put_row("b", &[Some(PkValue::Integer(ROWS + s as i64))], &cells(s as i64), &Condition::ignore()).unwrap();
    });
    bench("update_row (1 column)", 20_000, |s| {
        store
            .update_row(
                "b",
                &[key(s)],
                &[("name".into(), UpdateOp::Put { value: Value::String("x".into()), version: None })],
                &Condition::ignore(),
            )
            .unwrap();
    });
    bench("increment", 20_000, |s| {
        store.update_row("b", &[key(s % 100)], &[("n".into(), UpdateOp::Increment(1))], &Condition::ignore()).unwrap();
    });
    bench("get_range (100 rows)", 5_000, |s| {
        let start = ((s * 7919) % (ROWS as u64 - 200)) as i64;
        let req = RangeRequest {
            start: vec![PkBound::Value(PkValue::Integer(start))],
            end: vec![PkBound::InfMax],
            direction: Direction::Forward,
            limit: Some(100),
            read: spec.clone(),
            budget_bytes: None,
        };
        assert_eq!(store.get_range("b", &req).unwrap().rows.len(), 100);
    });
}
