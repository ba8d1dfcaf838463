//! Embedded use of the engine: no server, no SQL. `cargo run --example embedded`

use std::sync::Arc;

use tabula_kv_rocks::{RocksEngine, RocksOptions};
use tabula_store::*;

fn main() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("tabula-embedded-{}", std::process::id()));
    // The store keeps its rows in RocksDB here; `tabula_kv::memory::MemoryEngine` would keep them in memory.
    let engine = RocksEngine::open(&dir, &RocksOptions::default())?;
    let store = Store::open(Arc::new(engine), StoreConfig::default())?;
    store.create_table(TableDef {
        name: "purchases".into(),
        primary_key: vec![
            PkColumn { name: "DeviceID".into(), ty: PkType::Integer, auto_increment: false },
            PkColumn { name: "OrderNumber".into(), ty: PkType::Integer, auto_increment: false },
        ],
        partition_key_len: 1,
        options: TableOptions::default(),
        user_meta: vec![],
        indexes: vec![],
    })?;
    for (device, order, amount) in [(16, 200001, 1.5), (54, 200003, 2.5), (54, 200004, 3.5), (167, 200002, 4.5)] {
        let pk = [Some(PkValue::Integer(device)), Some(PkValue::Integer(order))];
        store.put_row("purchases", &pk, &[CellWrite::new("amount", Value::Double(amount))], &Condition::expect_not_exist())?;
    }
    // DeviceID in [15, 100).
    let req = RangeRequest {
        start: vec![PkBound::Value(PkValue::Integer(15)), PkBound::InfMin],
        end: vec![PkBound::Value(PkValue::Integer(100)), PkBound::InfMin],
        direction: Direction::Forward,
        limit: None,
        read: ReadSpec::default(),
        budget_bytes: None,
    };
    for row in store.get_range("purchases", &req)?.rows {
        println!("{:?} amount={:?}", row.pk, row.get("amount"));
    }
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
