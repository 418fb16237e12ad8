//! # bigtable-ttl
//!
//! Cell-level time-to-live for Google Cloud Bigtable, declared on your own
//! structs with `#[derive(BigtableRow)]`. See the README for the two
//! strategies and the pitfalls this guards against.

#![deny(unsafe_code)]

pub use ttl_derive::BigtableRow;
pub use ttl_runtime::*;
