//! The conformance suite on the in-memory engine (`tabula-kv-rocks` runs it on RocksDB).

use tabula_kv::conformance::{capabilities, CASES};
use tabula_kv::memory::MemoryEngine;

#[test]
fn the_memory_engine_passes_the_conformance_suite() {
    assert_eq!(capabilities(&MemoryEngine::new()), ["ingest", "compaction hook", "size stats"]);
    for (name, case) in CASES {
        let engine = MemoryEngine::new();
        eprintln!("conformance on memory: {name}");
        case(&engine);
    }
}

#[test]
fn a_snapshot_reads_its_version_under_many_later_writes() {
    use tabula_kv::{Batch, Engine, Read};
    let e = MemoryEngine::new();
    let (txn, snap) = e.begin_with_snapshot().unwrap();
    for i in 0..10u8 {
        let mut b = Batch::default();
        b.put(b"k", &[i]);
        e.write(b).unwrap();
    }
    // The snapshot still reads the key's absence; the latest reads the last write.
    assert_eq!((&*snap as &dyn Read).get(b"k").unwrap(), None);
    assert_eq!((&e as &dyn Read).get(b"k").unwrap(), Some(vec![9]));
    drop((txn, snap));
    let mut b = Batch::default();
    b.put(b"k", b"last");
    e.write(b).unwrap();
    assert_eq!((&e as &dyn Read).get(b"k").unwrap(), Some(b"last".to_vec()));
}
