//! The store's suites (versions, TTL, conditions, increments, bulk loads, partitions, the model test) on
//! RocksDB: the store's own crate runs them on the in-memory engine. Here the tests that need files on disk
//! (reopening, table files, spilled runs) run too.

// Each suite brings its own copy of `common`, which reads this crate's `ENGINE`.
#![allow(clippy::duplicate_mod)]

#[path = "../../store/tests/common/mod.rs"]
mod common;
mod support;

const ENGINE: common::EngineChoice = support::ROCKS;

#[path = "../../store/tests/bulk.rs"]
mod bulk;
#[path = "../../store/tests/ddl.rs"]
mod ddl;
#[path = "../../store/tests/engine.rs"]
mod engine;
#[path = "../../store/tests/index.rs"]
mod index;
#[path = "../../store/tests/model.rs"]
mod model;
#[path = "../../store/tests/outside.rs"]
mod outside;
#[path = "../../store/tests/partitions.rs"]
mod partitions;
#[path = "../../store/tests/rebuild.rs"]
mod rebuild;
#[path = "../../store/tests/writes.rs"]
mod writes;
