//! The root crate's integration tests, in one binary (the layout of
//! ripgrep's and cargo's test suites) so that tonic, hyper and rustls are
//! linked once rather than once per file. Each module is one topic; the
//! shared support is declared here once.
//!
//! Two test files stay binaries of their own: `tests/ui.rs` (trybuild
//! compiles the UI cases itself) and `tests/telemetry.rs`, which installs a
//! process-global tracing subscriber that would capture every other test's
//! spans here.

#[path = "../support/mod.rs"]
mod support;

#[path = "../support/raw_rows.rs"]
mod raw_rows;

#[path = "../support/recorder.rs"]
#[allow(dead_code)]
mod recorder;

#[path = "../support/tokens.rs"]
#[allow(dead_code)]
mod tokens;

#[path = "../support/fake_bigtable.rs"]
#[allow(dead_code)]
mod fake_bigtable;

/// The test proxy's conversions between Bigtable's v2 messages and the raw
/// layer's types: to replay a filter the library sent, and to script a
/// fake server's GoogleSQL answers.
#[path = "../../ttl-testproxy/src/convert.rs"]
#[allow(dead_code)]
mod convert;

/// Bigtable's v2 messages, as the scripted servers answer and as the
/// requests the library sent are decoded: the library's API names none of
/// them, so the tests take them from the crate the library is built on.
mod proto {
    pub use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::*;
}

#[cfg(feature = "opentelemetry")]
mod builtin_metrics;
mod client_behaviour;
mod cloud_path;
mod conditional;
mod connection_builder;
mod connection_config;
mod counter_windows;
mod counters;
mod deadlines;
mod derive_schema;
mod doc_claims;
mod every_call_deadline;
mod evolve;
mod expiry_feed;
mod field_types;
mod hygiene;
mod inflight_expiry;
mod layouts_state_machine;
mod leases;
mod liveness_agreement;
mod lost_answers;
mod many_structs;
mod maps;
mod namesakes;
mod no_revival;
mod one_road;
mod ops_retime;
mod partial_expiry;
mod properties;
mod public_api;
mod raw_data;
mod raw_idempotence;
mod raw_reads;
mod raw_sql;
mod readme;
mod reaper;
mod refused_streams;
mod reliability_emulator_kill;
mod reliability_faults;
mod reliability_load;
mod scan_limits;
mod scans;
mod schema_admin;
mod shared_rows;
mod shared_state_machine;
mod shopping;
mod slow_link;
mod story;
mod table_errors;
mod table_io;
mod unreachable;
mod updates;
