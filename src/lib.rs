//! Cell-level time-to-live for Google Cloud Bigtable, declared on your own
//! structs with `#[derive(BigtableRow)]`.
//!
//! This crate re-exports the runtime (`bigtable-ttl-runtime`) and the
//! derive (`bigtable-ttl-derive`). The README below is compiled as part of
//! the docs, so its quick start is checked on every test run.
//!
// The README's guide links are reference links whose definitions at its
// end name the Markdown pages of the repository; these, coming first, win
// here and lead to the same pages as modules of `guide`.
//! [conditional_writes]: crate::guide::conditional_writes
//! [counters]: crate::guide::counters
//! [evolving_structs]: crate::guide::evolving_structs
//! [layout]: crate::guide::layout
//! [maps]: crate::guide::maps
//! [observability]: crate::guide::observability
//! [operations]: crate::guide::operations
//! [partial_updates]: crate::guide::partial_updates
//! [production]: crate::guide::production
//! [raw_data_layer]: crate::guide::raw_data_layer
//! [reliability]: crate::guide::reliability
//! [rows_and_liveness]: crate::guide::rows_and_liveness
//! [sharing_tables]: crate::guide::sharing_tables
//! [time_and_clocks]: crate::guide::time_and_clocks
//! [writing_and_reading]: crate::guide::writing_and_reading
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
// No function of the library over about 100 lines without a reason
// stated next to it (the workspace allows long tests and `quote!` impls).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub use bigtable_ttl_derive::{BigtableRow, CellCodec, KeyPart};
pub use bigtable_ttl_runtime::*;

pub mod guide;
