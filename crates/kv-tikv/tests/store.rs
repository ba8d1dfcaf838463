//! The store's suites (versions, TTL, conditions, increments, bulk loads, DDL, indexes, partitions, the
//! model test) on a real TiKV cluster. They are compiled in only when `TABULA_TIKV_PD` names a cluster at
//! build time (`cfg(tikv_cluster)`, set by build.rs); otherwise one test says they were skipped.

#![allow(clippy::duplicate_mod)]

/// Listed as ignored, with the reason, when the suites are not compiled in.
#[cfg(not(tikv_cluster))]
#[test]
#[ignore = "skipped: TABULA_TIKV_PD not set when this test crate was built"]
fn the_store_suites_on_tikv() {}

#[cfg(tikv_cluster)]
#[path = "../../store/tests/common/mod.rs"]
mod common;
#[cfg(tikv_cluster)]
mod support;

/// Each store on a fresh keyspace; nothing is kept in files, so the tests of reopening, table files and
/// crashes return at once (they run on RocksDB).
#[cfg(tikv_cluster)]
fn tikv(_: &std::path::Path, _: &tabula_store::StoreConfig) -> std::sync::Arc<dyn tabula_kv::Engine> {
    std::sync::Arc::new(support::fresh(&support::cluster().expect("built with TABULA_TIKV_PD")))
}

#[cfg(tikv_cluster)]
const ENGINE: common::EngineChoice = common::EngineChoice { open: tikv, on_disk: false };

#[cfg(tikv_cluster)]
#[path = "../../store/tests/bulk.rs"]
mod bulk;
#[cfg(tikv_cluster)]
#[path = "../../store/tests/ddl.rs"]
mod ddl;
#[cfg(tikv_cluster)]
#[path = "../../store/tests/engine.rs"]
mod engine;
#[cfg(tikv_cluster)]
#[path = "../../store/tests/index.rs"]
mod index;
#[cfg(tikv_cluster)]
#[path = "../../store/tests/model.rs"]
mod model;
#[cfg(tikv_cluster)]
#[path = "../../store/tests/outside.rs"]
mod outside;
#[cfg(tikv_cluster)]
#[path = "../../store/tests/partitions.rs"]
mod partitions;
#[cfg(tikv_cluster)]
#[path = "../../store/tests/rebuild.rs"]
mod rebuild;
#[cfg(tikv_cluster)]
#[path = "../../store/tests/writes.rs"]
mod writes;
