//! The names of the library's own client-side metrics (feature
//! `metrics`; Google's built-in client-side metrics, feature
//! `opentelemetry`, are in [`builtin`]): recorded through the
//! [`metrics`](https://docs.rs/metrics) facade, so any exporter
//! (Prometheus, OpenTelemetry, `StatsD`, …) installed as the recorder gets
//! them. Without the feature nothing is recorded and no code is compiled
//! for it; with the feature and no recorder installed, each recording is a
//! check of an empty global.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | [`OPERATION_LATENCY`] | histogram, seconds | `table`, `operation`, `outcome` | one operation, all its attempts and delays |
//! | [`ATTEMPT_LATENCY`] | histogram, seconds | `table`, `operation` | one attempt of an operation |
//! | [`RETRIES`] | counter | `table`, `operation` | retries (attempts after the first) |
//! | [`ROWS_READ`], [`BYTES_READ`] | counters | `table` | rows read, their keys' and values' bytes |
//! | [`ROWS_WRITTEN`], [`BYTES_WRITTEN`] | counters | `table` | rows Bigtable acknowledged, their mutations' encoded bytes |
//! | [`REAP_ROWS_SCANNED`], [`REAP_ROWS_REAPED`], [`REAP_CELLS_REAPED`], [`REAP_ROWS_SKIPPED_LIVE`] | counters | `table` | the reaper's rows read, dead rows deleted, cells deleted, live rows left alone (`Table::reap`, `ops::reap`; with `dry_run`, what would go) |
//! | [`REAP_RATE`] | gauge, rows a second | `table` | dead rows deleted a second by the reaper's run, since it started |
//!
//! `operation` is the [`crate::Table`] method (`put`, `put_all`, `delete`, `get`, `scan`, `stream`, `scan_parallel`, `writer`, `insert_if_absent`, `put_if`, `delete_if`, `update`, `retime` (and `set_ttl`, `shift_expiry`), `touch`, `increment`, `put_entry`, `remove_entry`, `entries`, `split_scan` and `reap` (and `reap_with_events`);
//! a stream is one operation from its first poll to its end, a bulk
//! writer from `writer()` to `finish()`);
//! `outcome` is `ok` or what ended the operation (a gRPC
//! code such as `DEADLINE_EXCEEDED`, `partial_write`, `decode_error`, …;
//! `CANCELLED` for an operation dropped before its end: a stream left
//! half-read, a writer dropped without `finish`, a call whose future was
//! dropped).
//! The same operations open a `tracing` span `bigtable_ttl` with the fields
//! `table`, `operation`, `rows`, `attempts` and `outcome`, and each retry
//! is an event in it with its `attempt`, `delay_ms` and `reason`.

pub mod builtin;

/// Histogram of operation latencies, in seconds.
pub const OPERATION_LATENCY: &str = "bigtable_ttl.operation_latency";
/// Histogram of attempt latencies, in seconds.
pub const ATTEMPT_LATENCY: &str = "bigtable_ttl.attempt_latency";
/// Counter of retries.
pub const RETRIES: &str = "bigtable_ttl.retries";
/// Counter of rows read.
pub const ROWS_READ: &str = "bigtable_ttl.rows_read";
/// Counter of bytes read (row keys and cell values).
pub const BYTES_READ: &str = "bigtable_ttl.bytes_read";
/// Counter of rows written.
pub const ROWS_WRITTEN: &str = "bigtable_ttl.rows_written";
/// Counter of bytes written (encoded mutations).
pub const BYTES_WRITTEN: &str = "bigtable_ttl.bytes_written";
/// Counter of rows the reaper read.
pub const REAP_ROWS_SCANNED: &str = "bigtable_ttl.reap.rows_scanned";
/// Counter of dead rows the reaper deleted.
pub const REAP_ROWS_REAPED: &str = "bigtable_ttl.reap.rows_reaped";
/// Counter of cells the reaper deleted (dead rows' and live rows' expired
/// ones).
pub const REAP_CELLS_REAPED: &str = "bigtable_ttl.reap.cells_reaped";
/// Counter of live rows the reaper read and left alone.
pub const REAP_ROWS_SKIPPED_LIVE: &str = "bigtable_ttl.reap.rows_skipped_live";
/// Gauge of the reaper's dead rows deleted a second, over its run.
pub const REAP_RATE: &str = "bigtable_ttl.reap.rate";
