//! Shared support for the integration tests: connections to Google's Bigtable
//! emulator, each on a fresh instance, and `cbt` to look at what is really
//! stored. Every test binary uses a subset, hence the `dead_code` allowances.
//! (`recorder.rs` and `tokens.rs` beside it are declared by the test files
//! that use them: other crates' tests include this module, without their
//! dependencies.)

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use bigtable_ttl::{BigtableRow, Clock, Connection, Scan, Table};

/// A loopback TCP proxy that injects connection faults.
#[allow(dead_code)]
pub mod proxy;

/// Loopback only: where the tests' servers listen and forward to.
#[allow(dead_code)]
pub mod loopback;

/// Google's Python client, installed for the tests that need another
/// reader.
#[allow(dead_code)]
pub mod google_python;

/// The row structs several test files share.
#[allow(dead_code)]
pub mod rows;

/// The stateful property tests' checks of what they read against their
/// models.
#[allow(dead_code)]
pub mod model_check;

/// Google's `cbt` tool.
#[allow(dead_code)]
pub const CBT: &str = "/usr/bin/cbt";

/// The project every test connection uses.
#[allow(dead_code)]
pub const PROJECT: &str = "test-project";

/// `HOST:PORT` of the emulator of this test process: `BIGTABLE_EMULATOR_HOST`
/// when set, else one started for the process. Panics with the emulator's
/// error, which says how to install it: a missing emulator fails the tests,
/// it never skips them.
#[allow(dead_code)]
pub fn emulator_host() -> String {
    bigtable_ttl_emulator::shared_host()
        .unwrap_or_else(|e| panic!("integration tests need the Bigtable emulator: {e}"))
}

/// A connection to a fresh instance (`test-{pid}-{n}`) on the emulator, so
/// tests never see each other's tables. Call it inside a tokio runtime.
#[allow(dead_code)]
pub fn connection() -> Connection {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let instance = format!(
        "test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let host = emulator_host();
    Connection::emulator(&host, PROJECT, &instance)
        .unwrap_or_else(|e| panic!("connecting to the emulator at {host}: {e}"))
}

/// A direct connection to the emulator's instance of `conn` (which may go
/// through a proxy).
#[allow(dead_code)]
pub fn connection_to(conn: &Connection) -> Connection {
    Connection::emulator(&emulator_host(), conn.project(), conn.instance())
        .unwrap_or_else(|e| panic!("connecting to the emulator: {e}"))
}

/// Run `cbt -project P -instance I ARGS…` against the emulator of `conn` and
/// return its standard output. Panics when `cbt` is missing or fails.
#[allow(dead_code)]
pub fn cbt(conn: &Connection, args: &[&str]) -> String {
    let output = Command::new(CBT)
        .env("BIGTABLE_EMULATOR_HOST", emulator_host())
        .args(["-project", conn.project(), "-instance", conn.instance()])
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "running {CBT}: {e}; install Google's cbt tool \
                 (`apt-get install google-cloud-cli-cbt` or `gcloud components install cbt`)"
            )
        });
    assert!(
        output.status.success(),
        "cbt {args:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A `Table<T>` on a fresh instance of the emulator, on `clock`, with its
/// table and families created.
#[allow(dead_code)]
pub async fn table<T: BigtableRow>(clock: &Clock) -> Table<T> {
    let table = Table::<T>::new(connection()).with_clock(clock.clone());
    table
        .ensure_schema()
        .await
        .unwrap_or_else(|e| panic!("creating table `{}`: {e}", table.name()));
    table
}

/// What `f` takes from each row a full scan of `table` reads (the typed
/// reader: live rows only), in key order.
#[allow(dead_code)]
pub async fn scanned<T: BigtableRow, V>(table: &Table<T>, f: impl FnMut(T) -> V) -> Vec<V> {
    let rows = table.scan(Scan::all()).await.unwrap();
    rows.into_iter().map(|row| row.value).map(f).collect()
}

/// Every cell stored in row `key` of `table`, expired or not, every
/// version: what the emulator really holds, past the typed reader.
#[allow(dead_code)]
pub async fn stored_cells<T: BigtableRow>(
    table: &Table<T>,
    key: impl AsRef<[u8]>,
) -> Vec<bigtable_ttl::data::Cell> {
    table
        .raw()
        .read_row(key, None)
        .await
        .unwrap()
        .map(|row| row.cells)
        .unwrap_or_default()
}

/// Write one cell to row `key` through the raw layer, as another program
/// (or an earlier version of this library) would: `SetCell` alone, at
/// `timestamp_micros`, nothing deleted.
#[allow(dead_code)]
pub async fn raw_set(
    raw: &bigtable_ttl::data::RawTable,
    key: &str,
    family: &str,
    qualifier: &[u8],
    timestamp_micros: i64,
    value: &[u8],
) {
    use bigtable_ttl::data::Mutation;
    raw.mutate_row(
        key,
        vec![Mutation::set_cell(
            family,
            qualifier.to_vec(),
            timestamp_micros,
            value.to_vec(),
        )],
    )
    .await
    .unwrap_or_else(|e| {
        panic!(
            "writing {family}:{} of row {key}: {e}",
            qualifier.escape_ascii()
        )
    });
}
