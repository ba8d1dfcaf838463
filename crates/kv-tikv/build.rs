//! The tests that need a TiKV cluster run only when `TABULA_TIKV_PD` names one at build time
//! (`cfg(tikv_cluster)`); otherwise they are listed as ignored, with the reason.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(tikv_cluster)");
    println!("cargo::rerun-if-env-changed=TABULA_TIKV_PD");
    if std::env::var("TABULA_TIKV_PD").is_ok_and(|pd| !pd.is_empty()) {
        println!("cargo::rustc-cfg=tikv_cluster");
    }
}
