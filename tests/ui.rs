//! Compile-fail tests: each file in `tests/ui/` makes one mistake (except
//! `three_mistakes.rs`), and its `.stderr` shows what the user reads.
//! Regenerate with `TRYBUILD=overwrite cargo test --test ui`, then read them.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
