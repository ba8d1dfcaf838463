//! A TiKV cluster for the tests: named by `TABULA_TIKV_PD` (`host:port[,host:port...]`), each engine in a
//! keyspace of its own, so that every test starts from an empty database on one shared cluster.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use tabula_kv_tikv::{TikvAddress, TikvEngine};

/// The cluster's PD endpoints, or `None` (then the caller says it skipped).
pub fn cluster() -> Option<String> {
    std::env::var("TABULA_TIKV_PD").ok().filter(|pd| !pd.is_empty())
}

/// A fresh, empty database on the cluster.
pub fn fresh(pd: &str) -> TikvEngine {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let prefix = format!("test-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
    let address = TikvAddress::parse(&format!("tikv://{pd}/{prefix}")).unwrap();
    TikvEngine::open(&address).unwrap_or_else(|e| panic!("TABULA_TIKV_PD={pd} is set, but: {e}"))
}
