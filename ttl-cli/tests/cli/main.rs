//! The `bigtable-ttl` command's integration tests, in one binary (as the
//! facade's `tests/it`) so that the library and its dependencies are
//! linked once rather than once per file. Each module is one topic; the
//! facade's shared support (`tests/support`) is declared here once.

#[path = "../../../tests/support/mod.rs"]
mod support;

use bigtable_ttl::Connection;
use bigtable_ttl_cli::run_with;

/// Run `bigtable-ttl ARGS…` against `conn`'s instance; (status, stdout, stderr).
pub(crate) async fn cli(conn: &Connection, args: &[&str]) -> (i32, String, String) {
    let host = support::emulator_host();
    let mut argv = vec![
        "bigtable-ttl",
        "--project",
        conn.project(),
        "--instance",
        conn.instance(),
        "--emulator-host",
        &host,
    ];
    argv.extend_from_slice(args);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(argv, &mut out, &mut err).await;
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

mod fleet;
mod hostile_files;
mod k8s_example;
mod ops_cli;
mod reap_cli;
