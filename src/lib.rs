//! Cell-level time-to-live for Google Cloud Bigtable, declared on your own
//! structs with `#[derive(BigtableRow)]`.
//!
//! This crate re-exports the runtime (`ttl-runtime`) and the derive
//! (`ttl-derive`). The README below is compiled as part of the docs, so its
//! quick start is checked on every test run.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
// No function of the library over about 100 lines without a reason
// stated next to it (the workspace allows long tests and `quote!` impls).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub use bigtable_ttl_derive::{BigtableRow, CellCodec, KeyPart};
pub use bigtable_ttl_runtime::*;

pub mod guide;
