//! Bigtable's v2 protobuf types (`Mutation`, `RowFilter`, …), as the pure
//! core uses them and the raw data layer ([`crate::data`]) takes and returns
//! them. They live in the bottom layer because every layer speaks them.

pub use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::*;

/// Shadows the generated crate's tonic client, which the glob above would
/// re-export: calls go through [`crate::data::RawTable`], and no tonic type
/// is part of this crate's API.
#[allow(dead_code, hidden_glob_reexports)]
mod bigtable_client {}
