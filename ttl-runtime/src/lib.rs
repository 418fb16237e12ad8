//! Runtime of `bigtable-ttl`: cell-level time-to-live for Google Cloud Bigtable.
//!
//! Use it through the `bigtable-ttl` facade crate and `#[derive(BigtableRow)]`.
//!
//! The source is in layers, each a folder that uses only the ones below it
//! (a test, `tests/layers.rs`, keeps it so):
//!
//! * `model`, the pure core: timestamp math ([`Policy`]), keys and cell
//!   codecs, the schema, mutation building ([`MutationBuilder`]), the read
//!   [`filter`], row decoding, all on Bigtable's own v2 protobuf types
//!   (internal: no generated type is part of the API) and tested without a
//!   server;
//! * `wire`: the gRPC data channel, its codecs, `ReadRows` chunk decoding and
//!   row merging;
//! * `client`: the I/O: [`Connection`], the raw data layer ([`data`]: any
//!   table by row key and family, with Bigtable's mutations and filters as
//!   types of this crate),
//!   [`Table`] built on it, the bulk [`writer`], resumed and parallel reads,
//!   schema administration ([`admin`]), [`retry`];
//! * [`ops`]: operations on families by name (audit, apply, inspect, migrate,
//!   the expiry feed, the reaper), on top of the client.
//!
//! Every public item has one path: the types a program names at the root
//! ([`Table`], [`Connection`], [`Scan`], [`Error`], …), the rest in the
//! modules [`data`], [`admin`], [`telemetry`], [`read`], [`writer`],
//! [`retry`], [`filter`], [`limits`] and [`ops`]; [`liveness`]
//! states the one rule for when a row is alive. What the derive's expansion calls is behind a
//! hidden door and not part of the API.
//!
//! # Features
//!
//! * `json`: the `Json` cell codec, any serde type stored as JSON
//!   (`serde`, `serde_json`).
//! * `metrics`: client-side metrics through the `metrics` facade
//!   ([`telemetry`] lists them). Off by default: without it no metric code
//!   is compiled.
//! * `opentelemetry`: Google's built-in client-side metrics through
//!   OpenTelemetry ([`telemetry::builtin`] lists them). Off by default.
// No function of the library over about 100 lines without a reason
// stated next to it (the workspace allows long tests and `quote!` impls).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
#![cfg_attr(docsrs, feature(doc_cfg))]
// An error built eagerly (`ok_or(Error::from(..))`) is an allocation on the
// path that succeeds (the error's large payloads are boxed): a scan paid one
// a row for it.
#![warn(clippy::or_fun_call)]

mod client;
mod model;
pub mod ops;
mod wire;

pub use client::{admin, data, read, retry, writer};
pub use model::error::kinds as error;
pub use model::{filter, limits, liveness, telemetry};

pub use client::connection::{Connection, ConnectionBuilder, Credentials};
pub use client::table::conditional::Insert;
pub use client::table::markers::{MarkProgress, MarkStatus};
pub use client::table::retime::Touched;
pub use client::table::update::Update;
pub use client::table::{Table, Written};
pub use model::clash::{ClashKind, LayoutClash};
pub use model::clock::Clock;
pub use model::codec::CellCodec;
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub use model::codec::Json;
pub use model::condition::{Condition, Field};
pub use model::counter::{Counted, CounterField};
pub use model::duration::{human, HumanDuration};
pub use model::error::{
    Code, CodecError, Error, FailedRow, KeyProblem, MigrationProblem, Overflow, PolicyProblem,
    Result, RowLimit,
};
pub use model::key::{AsKey, KeyPart};
pub use model::map::{MapEntry, MapField};
pub use model::mutation::RowMutation;
pub use model::policy::{Expiry, Policy};
pub use model::retime::Retime;
pub use model::row::{BigtableRow, KeyPrefix, MutationBuilder};
pub use model::scan::Scan;
pub use model::schema::{
    row_marker, Column, MapColumn, Schema, ShadowColumn, WhenAbsent, LEGACY_ROW_MARKER,
    ROW_MARKER_PREFIX,
};
pub use model::view::Expiring;
pub use wire::tokens::{AccessToken, TokenSource};

/// The `chrono` this library is built on: its `DateTime<Utc>` fields,
/// `TimeDelta` TTLs and clock, without a `chrono` line of your own
/// (`use bigtable_ttl::chrono::{DateTime, TimeDelta, Utc};`).
pub use chrono;

/// What the derive's expansion calls. Not a public API: no semver promise.
#[doc(hidden)]
pub mod __private {
    pub use crate::model::cell::cell_ref;
    pub use crate::model::codec::{fixed as fixed_width, unknown_name, unknown_number, CellCodec};
    pub use crate::model::condition::Field;
    pub use crate::model::counter::CounterField;
    pub use crate::model::error::{CodecError, Error, Result};
    pub use crate::model::field::FieldError;
    pub use crate::model::key::{KeyBuilder, KeyPart};
    pub use crate::model::map::MapField;
    pub use crate::model::policy::{Expiry, Policy};
    pub use crate::model::row::{
        decode_row, expiry_at, expiry_at_opt, BigtableRow, CellSink, KeyPrefix,
    };
    pub use crate::model::schema::{Column, MapColumn, Schema, ShadowColumn, WhenAbsent};
    pub use crate::model::view::{CellRef, ColumnOf, RowView};
    pub use chrono::{DateTime, TimeDelta, Utc};

    /// A `TimeDelta` of `millis` milliseconds, for durations parsed at compile time.
    #[must_use]
    pub const fn millis(millis: i64) -> TimeDelta {
        TimeDelta::milliseconds(millis)
    }
}
