//! Compile-fail cases of the DSL (`ui/`, one mistake each, with the blessed compiler output) and
//! programs that must compile and run (`pass/`).
//!
//! Bless changed messages with `TRYBUILD=overwrite cargo test -p taskweave-tests --test compiletest`
//! and read every `.stderr` it rewrites.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
    t.pass("pass/*.rs");
}
