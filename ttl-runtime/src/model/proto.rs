//! Bigtable's v2 protobuf types (`Mutation`, `RowFilter`, …), as the crate
//! builds and reads its requests with them. They live in the bottom layer
//! because every layer speaks them, and stay inside the crate: the raw data
//! layer ([`crate::data`]) has types of its own, so that a new release of
//! the generated crate is not a breaking release of this one.

pub(crate) use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::*;
