//! The key-value conformance suite on RocksDB (the in-memory engine runs it in `tabula-kv`).

use tabula_kv::conformance::{capabilities, CASES};
use tabula_kv_rocks::{RocksEngine, RocksOptions};

#[test]
fn rocksdb_passes_the_conformance_suite() {
    let options = RocksOptions { block_cache_bytes: 8 << 20, sync_writes: false, log_prefill_bytes: 0 };
    for (name, case) in CASES {
        let dir = tempfile::tempdir().unwrap();
        let engine = RocksEngine::open(dir.path(), &options).unwrap();
        assert_eq!(capabilities(&engine), ["ingest", "compaction hook", "size stats"]);
        eprintln!("conformance on rocksdb: {name}");
        case(&engine);
    }
}
