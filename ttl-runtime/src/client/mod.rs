//! The client, where the I/O happens: the [`Connection`](connection::Connection),
//! the typed [`Table`](table::Table), the bulk writer, reads resumed after a
//! break, parallel scans, schema administration, and the retry rules they
//! share.
//!
//! It may use the pure core ([`crate::model`]) and the wire (`crate::wire`,
//! private), never the operations above it ([`crate::ops`]).

pub mod admin;
pub(crate) mod builder;
pub mod connection;
pub mod data;
pub(crate) mod failure;
pub(crate) mod layouts;
pub(crate) mod limited;
pub mod read;
pub mod retry;
pub mod table;
pub(crate) mod telemetry;
pub mod writer;
