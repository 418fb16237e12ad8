//! The wire: the gRPC data channel the library's reads and writes go over,
//! the request and response codecs, `ReadRows` chunk decoding and the
//! merging of chunks into rows.
//!
//! It may use the pure core ([`crate::model`]), never the client or the
//! operations above it. Nothing here retries: that is the client's.

pub(crate) mod answer;
pub(crate) mod builtin_metrics;
pub(crate) mod cause;
pub(crate) mod channel;
pub(crate) mod chunk;
pub(crate) mod codec;
pub(crate) mod cookies;
pub(crate) mod framing;
#[cfg(test)]
mod fuzz;
pub(crate) mod headers;
pub(crate) mod merge;
pub(crate) mod mutate_answer;
pub(crate) mod protobuf;
pub(crate) mod read_error;
#[cfg(feature = "opentelemetry")]
pub(crate) mod server_signals;
pub(crate) mod status;
pub(crate) mod tokens;
pub(crate) mod transport;
