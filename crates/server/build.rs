//! Link options for the release binary.
//!
//! Each crate compiles its own copy of the generic code it uses (drop glue, `Clone`, `Hash` and the
//! sqlparser visitors of every AST type), once per codegen unit: the release binary held 105 identical
//! copies of `drop_in_place<sqlparser::ast::Statement>`, and 129 MB of machine code in all. The linker's
//! identical code folding keeps one copy of each. `all` rather than `safe`: rustc emits no address-
//! significance tables, so `safe` folds nothing, and Rust promises no distinct addresses for functions.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // `release`, and the profiles that inherit it (`profiling`); the dev profile links as fast as it can.
    if std::env::var("PROFILE").as_deref() == Ok("release") {
        println!("cargo:rustc-link-arg=-Wl,--icf=all");
    }
}
