//! Versions and TTL through SQL, on the embedded SQL layer. `cargo run --example versions_ttl`

use std::sync::Arc;

use tabula_kv_rocks::{RocksEngine, RocksOptions};
use tabula_query::{Database, Output};
use tabula_store::{Store, StoreConfig};

fn print_rows(columns: &[tabula_query::OutputColumn], rows: impl IntoIterator<Item = Vec<tabula_query::Datum>>) {
    println!("{}", columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(" | "));
    for r in rows {
        let cells: Vec<String> = r.iter().zip(columns).map(|(d, c)| d.to_pg_text(c.ty).unwrap_or_else(|| "NULL".into())).collect();
        println!("{}", cells.join(" | "));
    }
}

fn show(out: Vec<tabula_query::Result<Output>>) {
    for o in out {
        match o {
            Ok(Output::Stream { cursor, columns }) => print_rows(&columns, cursor.flatten()),
            Ok(Output::Rows { rows, columns, .. }) => print_rows(&columns, rows),
            Ok(other) => println!("{other:?}"),
            Err(e) => println!("ERROR {}: {e}", e.sqlstate()),
        }
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let engine = RocksEngine::open(dir.path(), &RocksOptions::default()).unwrap();
    let db = Database::new(Arc::new(Store::open(Arc::new(engine), StoreConfig::default()).unwrap())).unwrap();
    let mut s = tabula_query::Session::new(&db, "tabula", "tabula");
    show(s.execute_sql("CREATE TABLE m (id text PRIMARY KEY, v bigint) WITH (max_versions = 5, ttl = 2, max_version_offset = 60)"));
    for v in 1..=3 {
        show(s.execute_sql(&format!("INSERT INTO m VALUES ('x', {v}) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v")));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    show(s.execute_sql("SELECT v, _version FROM m(latest_n => 5) WHERE id = 'x'"));
    show(s.execute_sql("INSERT INTO m (id, v, _version) VALUES ('y', 1, 1000)"));
    std::thread::sleep(std::time::Duration::from_millis(2100));
    println!("after the TTL:");
    show(s.execute_sql("SELECT v FROM m WHERE id = 'x'"));
}
