//! The key-value conformance suite on a real TiKV cluster, when `TABULA_TIKV_PD` named one as this test
//! crate was built (see the README: `tiup playground`). Without one, the tests that need it are listed as
//! ignored, with the reason, and only what needs no cluster runs.

mod support;

use tabula_kv::conformance::{capabilities, CASES};
use tabula_kv_tikv::{TikvAddress, TikvEngine};

#[test]
#[cfg_attr(not(tikv_cluster), ignore = "skipped: TABULA_TIKV_PD not set")]
fn tikv_passes_the_conformance_suite() {
    let pd = support::cluster().expect("TABULA_TIKV_PD names a cluster");
    for (name, case) in CASES {
        let engine = support::fresh(&pd);
        assert!(capabilities(&engine).is_empty(), "TiKV neither ingests files nor runs a compaction filter");
        eprintln!("conformance on tikv: {name}");
        case(&engine);
    }
}

#[test]
#[cfg_attr(not(tikv_cluster), ignore = "skipped: TABULA_TIKV_PD not set")]
fn a_second_server_over_one_keyspace_is_refused_until_the_first_is_gone() {
    let pd = support::cluster().expect("TABULA_TIKV_PD names a cluster");
    let address = TikvAddress::parse(&format!("tikv://{pd}/lease-{}", std::process::id())).unwrap();
    let first = TikvEngine::open(&address).unwrap();
    let second = TikvEngine::open(&address).err().expect("a second server over one keyspace is refused");
    assert!(second.to_string().contains("another Tabula server serves this TiKV keyspace"), "{second}");
    drop(first);
    TikvEngine::open(&address).expect("the lease was given back when the first server closed");
}

#[test]
fn an_unreachable_pd_is_a_clear_error() {
    // A port nothing listens on: the client's connection is refused at once.
    let address = TikvAddress::parse("tikv://127.0.0.1:9/anything").unwrap();
    let e = TikvEngine::open(&address).err().expect("nothing to connect to");
    assert!(e.to_string().starts_with("storage error: cannot reach TiKV through PD at 127.0.0.1:9"), "{e}");
}
