#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use tabula_kv::memory::MemoryEngine;
use tabula_kv::Engine;
use tabula_store::*;

pub const NOW: i64 = 1_700_000_000_000;

/// The engine a test crate runs its suites on, named by the crate's `ENGINE`: [`MEMORY`] in the store's
/// own crates; RocksDB in `tabula-kv-rocks`'s `store.rs`, which runs the same suites again.
pub struct EngineChoice {
    pub open: fn(&Path, &StoreConfig) -> Arc<dyn Engine>,
    /// Whether it keeps its data in files under the directory it is given.
    pub on_disk: bool,
}

fn in_memory(_: &Path, _: &StoreConfig) -> Arc<dyn Engine> {
    Arc::new(MemoryEngine::new())
}

pub const MEMORY: EngineChoice = EngineChoice { open: in_memory, on_disk: false };

/// Whether the run's engine keeps files on disk: tests of a reopen, of table files or of a crash need one,
/// and return at once without it (they run with the suite on RocksDB).
pub fn on_disk() -> bool {
    crate::ENGINE.on_disk
}

/// A store on the run's engine, in `dir` when the engine is on disk.
pub fn open_with(dir: &Path, config: StoreConfig) -> Store {
    Store::open((crate::ENGINE.open)(dir, &config), config).unwrap()
}

pub fn open(dir: &Path, clock: Arc<ManualClock>) -> Store {
    open_with(dir, StoreConfig { clock, maintenance_interval: None, ..StoreConfig::default() })
}

pub fn table(name: &str, pk: &[(&str, PkType)], options: TableOptions) -> TableDef {
    TableDef {
        name: name.into(),
        primary_key: pk.iter().map(|(n, t)| PkColumn { name: n.to_string(), ty: *t, auto_increment: false }).collect(),
        partition_key_len: 1,
        options,
        user_meta: vec![],
        indexes: vec![],
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

/// A store on the run's engine with table `t` keyed by `(a text, b bigint)`.
pub fn setup_ab(options: TableOptions) -> (tempfile::TempDir, Arc<ManualClock>, Store) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let store = open(dir.path(), clock.clone());
    store.create_table(table("t", &[("a", PkType::String), ("b", PkType::Integer)], options)).unwrap();
    (dir, clock, store)
}

/// Writes row `(a, b)` of `t` with these cells, unconditionally.
pub fn put(store: &Store, a: &str, b: i64, cells: &[(&str, Value)]) -> Result<WriteOutcome> {
    let cells: Vec<CellWrite> = cells.iter().map(|(c, v)| CellWrite::new(*c, v.clone())).collect();
    store.put_row("t", &[Some(s(a)), Some(int(b))], &cells, &Condition::ignore())
}
