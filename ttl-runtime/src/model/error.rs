//! The one error type of the runtime. Each variant says what the caller can do.

use chrono::{DateTime, TimeDelta, Utc};

/// Everything that can go wrong in `bigtable-ttl` at run time.
///
/// Variants that reject input are raised before anything is sent to Bigtable,
/// so a rejected write leaves nothing half-written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A one-second (or explicit) expiry that is not after the clock's "now":
    /// the cell would be dead on arrival. Pick an expiry in the future.
    #[error("expiry {expire_at} is not after now ({now}): the cell would be dead on arrival; choose a later expiry")]
    ExpiryNotInFuture {
        /// The requested expiry, truncated to the millisecond.
        expire_at: DateTime<Utc>,
        /// The clock's time, truncated to the millisecond.
        now: DateTime<Utc>,
    },
    /// A TTL of zero or less was requested. Use a positive duration, or
    /// [`crate::Table::delete`] to remove a row now.
    #[error("TTL must be positive, got {ttl}; use a positive duration, or delete the row instead")]
    NonPositiveTtl {
        /// The requested TTL.
        ttl: TimeDelta,
    },
    /// The expiry or the cell timestamp it implies cannot be represented as a
    /// Bigtable timestamp (microseconds since the epoch, in an `i64`).
    #[error("expiry is outside the range Bigtable timestamps can represent: {detail}")]
    ExpiryOutOfRange {
        /// What overflowed.
        detail: String,
    },
    /// The cell timestamp would fall before 1970-01-01, which Bigtable rejects.
    #[error("cell timestamp {timestamp_micros} µs is before the Unix epoch, which Bigtable rejects; choose a later expiry or a shorter default")]
    TimestampBeforeEpoch {
        /// The offending timestamp in microseconds.
        timestamp_micros: i64,
    },
    /// Under the one-second strategy every write needs an expiry.
    #[error("table `{table}` uses the one-second strategy: this write has no expiry; set the expire_at field or call .expire_at()/.ttl() on the builder")]
    MissingExpiry {
        /// The table the write was for.
        table: &'static str,
    },
    /// The row key encodes to zero bytes, which Bigtable rejects.
    #[error("row key for table `{table}` is empty; Bigtable requires a non-empty key")]
    EmptyRowKey {
        /// The table the key was for.
        table: &'static str,
    },
    /// The row key is longer than Bigtable's 4 KiB limit.
    #[error("row key for table `{table}` is {len} bytes, over Bigtable's limit of {max} bytes; shorten the key fields")]
    RowKeyTooLong {
        /// The table the key was for.
        table: &'static str,
        /// Length of the encoded key.
        len: usize,
        /// The limit (4096).
        max: usize,
    },
    /// A part of a composite key contains the separator, so the key could not
    /// be split back into its fields. Choose another separator or clean the value.
    #[error("key field `{field}` contains the key separator {separator:?}; the key could not be decoded again; pick a separator that cannot appear in it")]
    KeySeparatorInPart {
        /// The key field at fault.
        field: &'static str,
        /// The separator declared on the struct.
        separator: &'static str,
    },
    /// A row key read back from Bigtable does not have the declared shape.
    #[error("row key {row_key:?} of table `{table}` does not decode: {reason}")]
    BadRowKey {
        /// The table.
        table: String,
        /// The key, lossily as UTF-8.
        row_key: String,
        /// What did not match.
        reason: String,
    },
    /// A field value could not be encoded.
    #[error("field `{field}` could not be encoded: {source}")]
    Encode {
        /// The field at fault.
        field: &'static str,
        /// Why.
        #[source]
        source: CodecError,
    },
    /// A cell read back could not be decoded into its field.
    #[error("table `{table}`, row {row_key:?}, column `{column}`: {source}")]
    Decode {
        /// The table.
        table: String,
        /// The row key, lossily as UTF-8.
        row_key: String,
        /// `family:qualifier`.
        column: String,
        /// Why.
        #[source]
        source: CodecError,
    },
    /// A value is larger than Bigtable accepts for one cell.
    #[error("field `{field}` is {len} bytes, over Bigtable's cell limit of {max} bytes")]
    ValueTooLarge {
        /// The field at fault.
        field: &'static str,
        /// Encoded length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// One row's write is over Bigtable's per-row limits (256 MiB of data,
    /// 100,000 mutations); refused before anything is sent. Split the data
    /// over several rows.
    #[error("row {row_key:?} of table `{table}` is over Bigtable's limits: {detail}; split the data over several rows")]
    RowTooLarge {
        /// The table.
        table: String,
        /// The row key, lossily as UTF-8.
        row_key: String,
        /// Which limit, and by how much.
        detail: String,
    },
    /// The live table's schema differs from the struct's.
    #[error("schema drift in table `{table}`, family `{family}`: expected {expected}, live {live}; run ensure_schema or fix the struct")]
    SchemaDrift {
        /// The table.
        table: String,
        /// The family at fault.
        family: String,
        /// What the struct declares.
        expected: String,
        /// What the live table has (`missing` when the family does not exist).
        live: String,
    },
    /// The table does not exist.
    #[error("table `{table}` does not exist; call ensure_schema to create it")]
    TableNotFound {
        /// The table.
        table: String,
    },
    /// Switching a family that holds cells to `max_age = 1s` would delete them.
    #[error("refusing to set family `{family}` of table `{table}` to max_age = 1s: it holds cells with ordinary timestamps that would all be deleted at the next compaction; migrate them first, or pass force to accept the loss")]
    WouldDeleteData {
        /// The table.
        table: String,
        /// The family.
        family: String,
    },
    /// A TTL policy written as text (`one-second`, `default=2d`) did not parse.
    #[error("invalid policy `{spec}`: {reason}")]
    InvalidPolicy {
        /// The text given.
        spec: String,
        /// What is wrong and what is accepted.
        reason: String,
    },
    /// A family migration could not start or did not verify. The source
    /// family is never changed; fix the cause and run it again (copying a
    /// row twice is harmless).
    #[error("migration in table `{table}`: {reason}")]
    Migration {
        /// The table.
        table: String,
        /// What went wrong and what to do.
        reason: String,
    },
    /// Connecting to Bigtable failed.
    #[error("could not connect to Bigtable ({target}): {reason}")]
    Connect {
        /// Where we tried to connect.
        target: String,
        /// Why it failed.
        reason: String,
    },
    /// A multi-row write left some rows unwritten (or with an unknown
    /// outcome); every other row was written. Retrying the whole write is
    /// safe: every mutation carries explicit timestamps, so writing a row
    /// twice stores the same cells.
    #[error("{} of {} rows of table `{table}` were not written (or not surely): {}; retrying the write is safe", failed.len(), failed.len() + written, failed.iter().take(3).map(|(k, m)| format!("{k:?}: {m}")).collect::<Vec<_>>().join("; "))]
    PartialWrite {
        /// The table.
        table: String,
        /// How many rows were written.
        written: usize,
        /// Each row not written: its key (lossily as UTF-8) and why.
        failed: Vec<(String, String)>,
    },
    /// Bigtable answered with an error.
    #[error("Bigtable error on table `{table}`{}: {source}", row_key.as_deref().map(|k| format!(", row {k:?}")).unwrap_or_default())]
    Server {
        /// The table.
        table: String,
        /// The row key involved, where there is one.
        row_key: Option<String>,
        /// The underlying status or transport error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

/// Why a value could not be turned into cell bytes or back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// A fixed-width value had the wrong number of bytes.
    #[error("expected {expected} bytes, found {actual}")]
    WrongWidth {
        /// Bytes the type needs.
        expected: usize,
        /// Bytes the cell holds.
        actual: usize,
    },
    /// A `String` field's cell is not UTF-8.
    #[error("cell is not valid UTF-8: {0}")]
    InvalidUtf8(String),
    /// A `bool` cell holds something other than 0 or 1.
    #[error("expected a boolean byte 0 or 1, found {0}")]
    InvalidBool(u8),
    /// A timestamp value outside chrono's range.
    #[error("timestamp {0} µs is out of range")]
    TimestampOutOfRange(i64),
    /// A required column is absent from a row that has other live cells.
    #[error("required column is missing")]
    Missing,
    /// The JSON codec failed.
    #[error("JSON: {0}")]
    Json(String),
    /// A user codec's own error.
    #[error("{0}")]
    Custom(String),
}

/// The result type of the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;
