//! The engine suites again, on the in-memory engine: the store is the same code over either engine, and
//! so must answer the same. Tests that need a disk (a reopen, files, a crash) take RocksDB here too.

// Each suite brings its own copy of `common`, which reads this crate's `ON_MEMORY`.
#![allow(clippy::duplicate_mod)]

const ON_MEMORY: bool = true;

#[path = "engine.rs"]
mod engine;
#[path = "model.rs"]
mod model;
#[path = "partitions.rs"]
mod partitions;
#[path = "writes.rs"]
mod writes;
