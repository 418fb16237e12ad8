//! The `bigtable-ttl` command's integration tests, in one binary (as the
//! facade's `tests/it`) so that the library and its dependencies are
//! linked once rather than once per file. Each module is one topic; the
//! facade's shared support (`tests/support`) is declared here once.

#[path = "../../../tests/support/mod.rs"]
mod support;

mod fleet;
mod hostile_files;
mod k8s_example;
mod ops_cli;
mod reap_cli;
