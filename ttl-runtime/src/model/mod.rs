//! The pure core: TTL policies and their timestamp rules, the clock, cell
//! and key codecs, the schema, row decoding, and the building of mutations,
//! filters and read requests, all on Bigtable's own protobuf types.
//!
//! No I/O, no tokio, no tonic: everything here is tested without a server.
//! It uses nothing from the layers above it (`wire`, [`crate::client`],
//! [`crate::ops`]).

pub mod cell;
pub(crate) mod clash;
pub mod clock;
pub mod codec;
pub(crate) mod condition;
pub(crate) mod counter;
pub(crate) mod death;
pub(crate) mod duration;
pub(crate) mod entry;
pub mod error;
pub(crate) mod field;
pub mod filter;
pub mod gc_rule;
pub(crate) mod idempotent;
pub mod key;
pub(crate) mod layout;
pub mod limits;
pub mod liveness;
pub(crate) mod map;
pub(crate) mod markers;
pub mod mutation;
pub(crate) mod other_marker;
pub mod policy;
pub(crate) mod proto;
pub(crate) mod read_filter;
pub(crate) mod retime;
pub mod row;
pub(crate) mod row_cells;
pub mod scan;
pub mod schema;
pub(crate) mod shards;
pub(crate) mod split;
pub(crate) mod sql_batch;
pub mod sql_row;
pub mod sql_type;
pub mod sql_value;
pub mod telemetry;
pub(crate) mod update;
pub(crate) mod view;
pub(crate) mod writer;
