//! RocksDB as the engine of the store's test suites.

use std::path::Path;
use std::sync::Arc;

use tabula_kv::Engine;
use tabula_kv_rocks::{RocksEngine, RocksOptions};
use tabula_store::{Durability, StoreConfig};

use crate::common::EngineChoice;

pub const ROCKS: EngineChoice = EngineChoice { open: rocks, on_disk: true };

/// RocksDB in `dir`, syncing its log at each commit when the store's durability asks for it.
fn rocks(dir: &Path, config: &StoreConfig) -> Arc<dyn Engine> {
    let options =
        RocksOptions { block_cache_bytes: 8 << 20, sync_writes: config.durability == Durability::Sync, ..RocksOptions::default() };
    Arc::new(RocksEngine::open(dir, &options).unwrap())
}
