#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use tabula_kv::Engine;
use tabula_kv_rocks::{RocksEngine, RocksOptions};
use tabula_store::*;

pub const NOW: i64 = 1_700_000_000_000;

/// Whether the suite runs on the in-memory engine rather than RocksDB: each test crate says so in its
/// `ON_MEMORY` (`on_memory.rs` runs the engine suites again with it set). Tests that need a disk (a reopen,
/// files, a crash) take RocksDB either way, with [`rocks`].
pub fn on_memory() -> bool {
    crate::ON_MEMORY
}

/// RocksDB in `dir`, syncing its log at each commit when the store's durability asks for it.
pub fn rocks(dir: &Path, config: &StoreConfig) -> Arc<dyn Engine> {
    let options =
        RocksOptions { block_cache_bytes: 8 << 20, sync_writes: config.durability == Durability::Sync, ..RocksOptions::default() };
    Arc::new(RocksEngine::open(dir, &options).unwrap())
}

/// The engine of this run (see [`on_memory`]); `dir` is RocksDB's.
pub fn engine(dir: &Path, config: &StoreConfig) -> Arc<dyn Engine> {
    if on_memory() {
        Arc::new(tabula_kv::memory::MemoryEngine::new())
    } else {
        rocks(dir, config)
    }
}

/// A store on the engine of this run.
pub fn open_with(dir: &Path, config: StoreConfig) -> Store {
    Store::open(engine(dir, &config), config).unwrap()
}

/// A store on RocksDB in `dir`, whatever the run's engine.
pub fn open_rocks(dir: &Path, config: StoreConfig) -> Store {
    Store::open(rocks(dir, &config), config).unwrap()
}

pub fn open(dir: &Path, clock: Arc<ManualClock>) -> Store {
    open_with(dir, StoreConfig { clock, maintenance_interval: None, ..StoreConfig::default() })
}

/// [`open`] on RocksDB always: for tests that reopen what they wrote, or look at its files.
pub fn open_disk(dir: &Path, clock: Arc<ManualClock>) -> Store {
    open_rocks(dir, StoreConfig { clock, maintenance_interval: None, ..StoreConfig::default() })
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
