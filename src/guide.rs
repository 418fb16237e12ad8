//! The guide: one page per topic, each a module without items.
//!
//! The same pages are in `guide/` of the repository, where they read as
//! Markdown; here their Rust examples are compiled and run as doc tests.

/// Writing and reading: `put`, `put_all`, the bulk writer, `get`, scans (prefix, range, reversed, parallel), keys, field types, what the library guards against.
///
#[doc = include_str!("../guide/writing-and-reading.md")]
pub mod writing_and_reading {}

/// Time and clocks: the table's clock, manual clocks in tests, garbage collection on real time, the two strategies in detail.
///
#[doc = include_str!("../guide/time-and-clocks.md")]
pub mod time_and_clocks {}

/// Rows and liveness: when a row is alive, the row marker, rows written at different times.
///
#[doc = include_str!("../guide/rows-and-liveness.md")]
pub mod rows_and_liveness {}

/// Several structs in one table: what each struct owns, whose row a row is, deletes that remove only the struct's own cells, layouts refused.
///
#[doc = include_str!("../guide/sharing-tables.md")]
pub mod sharing_tables {}

/// Conditional writes and leases: `insert_if_absent`, `put_if`, `delete_if`, typed conditions, lost answers.
///
#[doc = include_str!("../guide/conditional-writes.md")]
pub mod conditional_writes {}

/// Partial updates: `update().set(..).clear(..)`, keeping or re-timing the row.
///
#[doc = include_str!("../guide/partial-updates.md")]
pub mod partial_updates {}

/// Counters: `#[bigtable(counter)]`, `increment`, windows decided by the server's clock.
///
#[doc = include_str!("../guide/counters.md")]
pub mod counters {}

/// Maps with a TTL per entry: `#[bigtable(map)]`, `put_entry`, `entries`.
///
#[doc = include_str!("../guide/maps.md")]
pub mod maps {}

/// Structs that evolve: default, skip, `rename_all`, `CellCodec` and `KeyPart` derives, enums.
///
#[doc = include_str!("../guide/evolving-structs.md")]
pub mod evolving_structs {}

/// Operations: `ops`: audit, apply, inspect, migrate, sharded runs; re-timing rows (`set_ttl`, `touch`).
///
#[doc = include_str!("../guide/operations.md")]
pub mod operations {}

/// The raw data layer: `bigtable_ttl::data`: any table by row key, the client `Table` is built on.
///
#[doc = include_str!("../guide/raw-data-layer.md")]
pub mod raw_data_layer {}

/// Reliability: retries, deadlines, resumed reads, errors you can branch on, Google's conformance suite, beside the Java client.
///
#[doc = include_str!("../guide/reliability.md")]
pub mod reliability {}

/// Connecting in production: credentials, endpoints, app profiles, TLS, pools, timeouts.
///
#[doc = include_str!("../guide/production.md")]
pub mod production {}

/// Traces and metrics: tracing spans, client-side metrics.
///
#[doc = include_str!("../guide/observability.md")]
pub mod observability {}

/// Project layout: where the code is, its layers.
///
#[doc = include_str!("../guide/layout.md")]
pub mod layout {}
