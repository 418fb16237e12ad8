//! Runtime of `bigtable-ttl`: cell-level time-to-live for Google Cloud Bigtable.
//!
//! Use it through the `bigtable-ttl` facade crate and `#[derive(BigtableRow)]`.
//!
//! The source is in layers, each a folder that uses only the ones below it
//! (a test, `tests/layers.rs`, keeps it so):
//!
//! * [`model`], the pure core: timestamp math in [`policy`], mutation building
//!   in [`mutation`], the read filter in [`filter`], decoding in [`row`], all
//!   on Bigtable's own v2 protobuf types ([`proto`]) and tested without a server;
//! * `wire`: the gRPC data channel, its codecs, `ReadRows` chunk decoding and
//!   row merging;
//! * [`client`]: the I/O: [`Connection`], [`Table`], the bulk writer, resumed
//!   reads, schema administration, retries;
//! * [`ops`]: operations on families by name (audit, apply, inspect, migrate,
//!   re-timing rows), on top of the client.

#![deny(unsafe_code)]
#![warn(missing_docs)]
#![warn(clippy::pedantic)]
// Every public fallible function documents its errors on the `Error` enum's
// variants; repeating a `# Errors` section on each small helper adds noise.
#![allow(clippy::missing_errors_doc)]
// Names like `policy::Policy` read better at the use site than the alternatives.
#![allow(clippy::module_name_repetitions)]

pub mod client;
#[cfg(feature = "emulator")]
pub mod emulator;
pub mod model;
pub mod ops;
pub(crate) mod wire;

// The paths users write: each module where it was before the layers.
pub use client::{admin, connection, retry, table, writer};
pub use model::{clock, codec, error, filter, key, mutation, policy, row, scan, schema};

pub use admin::{ensure_schema, verify_schema, EnsureOptions, SchemaReport};
pub use clock::Clock;
pub use codec::CellCodec;
#[cfg(feature = "json")]
pub use codec::Json;
pub use connection::Connection;
pub use error::{Code, CodecError, Error, FailedRow, Result};
pub use key::KeyPart;
pub use mutation::{MutationBuilder, RowMutation};
pub use policy::{Expiry, Policy};
pub use row::{BigtableRow, Expiring};
pub use scan::{RawCell, Scan};
pub use schema::{Column, FamilyRule, Schema, ShadowColumn};
pub use table::{Table, Written};
pub use writer::{BulkWriter, WriteOptions, WriteStats};

/// Bigtable's v2 protobuf types (`Mutation`, `RowFilter`, …), as used by the
/// pure core.
pub use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as proto;

/// What the derive's expansion calls. Not a public API: no semver promise.
#[doc(hidden)]
pub mod __private {
    pub use crate::codec::CellCodec;
    pub use crate::error::{Error, Result};
    pub use crate::key::{KeyBuilder, KeyPart, KeyReader};
    pub use crate::mutation::CellSink;
    pub use crate::policy::{Expiry, Policy};
    pub use crate::row::{expiry_at, expiry_at_opt, BigtableRow, ColumnOf, FieldError, RowView};
    pub use crate::schema::{Column, Schema, ShadowColumn};
    pub use chrono::{DateTime, TimeDelta, Utc};

    /// A `TimeDelta` of `millis` milliseconds, for durations parsed at compile time.
    #[must_use]
    pub const fn millis(millis: i64) -> TimeDelta {
        TimeDelta::milliseconds(millis)
    }
}
