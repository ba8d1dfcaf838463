#![allow(dead_code)]

use std::sync::Arc;

use tabula_store::*;

pub const NOW: i64 = 1_700_000_000_000;

pub fn open(dir: &std::path::Path, clock: Arc<ManualClock>) -> Store {
    let config = StoreConfig { clock, maintenance_interval: None, block_cache_bytes: 8 << 20, ..StoreConfig::default() };
    Store::open(dir, config).unwrap()
}

pub fn table(name: &str, pk: &[(&str, PkType)], options: TableOptions) -> TableDef {
    TableDef {
        name: name.into(),
        primary_key: pk.iter().map(|(n, t)| PkColumn { name: n.to_string(), ty: *t, auto_increment: false }).collect(),
        partition_key_len: 1,
        options,
        user_meta: vec![],
    }
}

pub fn int(i: i64) -> PkValue {
    PkValue::Integer(i)
}

pub fn s(v: &str) -> PkValue {
    PkValue::String(v.into())
}

pub fn all() -> ReadSpec {
    ReadSpec::default()
}
