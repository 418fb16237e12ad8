//! The fields of [`Error`](super::Error)'s variants that hold more than two
//! words: each such variant holds them in a box, as the struct of the same
//! name here, so that every `Result` of the library stays small (an
//! `Error` is three words). Match `Error::Server(e)` and read `e.code`, or
//! destructure `&**e`.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::messages::{
    connect_message, first_failures, outcome_message, server_message, Attempts, Unanswered,
};
use super::{
    BoxError, Code, CodecError, FailedRow, KeyProblem, MigrationProblem, Overflow, PolicyProblem,
    RowLimit,
};

/// What an [`Error::ExpiryNotInFuture`](super::Error::ExpiryNotInFuture) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("expiry {expire_at} is not after now ({now}): the cell would be dead on arrival; choose a later expiry")]
pub struct ExpiryNotInFuture {
    /// The requested expiry, truncated to the millisecond.
    pub expire_at: DateTime<Utc>,
    /// The clock's time, truncated to the millisecond.
    pub now: DateTime<Utc>,
}

/// What an [`Error::ExpiryOutOfRange`](super::Error::ExpiryOutOfRange) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("expiry is outside the range Bigtable timestamps can represent: {overflow}")]
pub struct ExpiryOutOfRange {
    /// What overflowed.
    pub overflow: Overflow,
}

/// What an [`Error::MissingExpiry`](super::Error::MissingExpiry) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("{}uses the one-second strategy: this write has no expiry; set the expire_at field or call .expire_at()/.ttl() on the builder", table.as_deref().map_or_else(|| "the policy ".to_owned(), |t| format!("table `{t}` ")))]
pub struct MissingExpiry {
    /// The table the write was for; `None` when the policy was used on
    /// its own ([`crate::Policy::cell_timestamp`]).
    pub table: Option<String>,
}

/// What an [`Error::EmptyRowKey`](super::Error::EmptyRowKey) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("row key for table `{table}` is empty; Bigtable requires a non-empty key")]
pub struct EmptyRowKey {
    /// The table the key was for.
    pub table: String,
}

/// What an [`Error::RowKeyTooLong`](super::Error::RowKeyTooLong) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("row key for table `{table}` is {len} bytes, over Bigtable's limit of {max} bytes; shorten the key fields")]
pub struct RowKeyTooLong {
    /// The table the key was for.
    pub table: String,
    /// Length of the encoded key.
    pub len: usize,
    /// The limit (4096).
    pub max: usize,
}

/// What an [`Error::KeySeparatorInPart`](super::Error::KeySeparatorInPart) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("key field `{field}` contains a byte of the key separator {separator:?}; the key could not be split back one way only; pick a separator none of whose characters can appear in it")]
pub struct KeySeparatorInPart {
    /// The key field at fault.
    pub field: &'static str,
    /// The separator declared on the struct.
    pub separator: &'static str,
}

/// What an [`Error::BadRowKey`](super::Error::BadRowKey) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("row key \"{}\" of table `{table}` does not decode: {problem}", row_key.escape_ascii())]
pub struct BadRowKey {
    /// The table.
    pub table: String,
    /// The key.
    pub row_key: Vec<u8>,
    /// What did not match.
    pub problem: KeyProblem,
}

/// What an [`Error::TimestampOutOfRange`](super::Error::TimestampOutOfRange) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("row \"{}\" of table `{table}` holds a cell timestamp of {timestamp_micros} µs whose expiry is out of range", row_key.escape_ascii())]
pub struct TimestampOutOfRange {
    /// The table.
    pub table: String,
    /// The row key.
    pub row_key: Vec<u8>,
    /// The cell timestamp.
    pub timestamp_micros: i64,
}

/// What an [`Error::Encode`](super::Error::Encode) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("field `{field}` could not be encoded")]
pub struct Encode {
    /// The field at fault.
    pub field: &'static str,
    /// Why.
    #[source]
    pub source: CodecError,
}

/// What an [`Error::Decode`](super::Error::Decode) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("table `{table}`, row \"{}\", column `{column}` does not decode", row_key.escape_ascii())]
pub struct Decode {
    /// The table.
    pub table: String,
    /// The row key.
    pub row_key: Vec<u8>,
    /// `family:qualifier`.
    pub column: String,
    /// Why.
    #[source]
    pub source: CodecError,
}

/// What an [`Error::ValueTooLarge`](super::Error::ValueTooLarge) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("field `{field}` is {len} bytes, over Bigtable's cell limit of {max} bytes")]
pub struct ValueTooLarge {
    /// The field at fault.
    pub field: &'static str,
    /// Encoded length.
    pub len: usize,
    /// The limit.
    pub max: usize,
}

/// What an [`Error::RowTooLarge`](super::Error::RowTooLarge) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("row \"{}\" of table `{table}` is over Bigtable's limits: {limit}; split the data over several rows", row_key.escape_ascii())]
pub struct RowTooLarge {
    /// The table.
    pub table: String,
    /// The row key.
    pub row_key: Vec<u8>,
    /// Which limit, and by how much.
    pub limit: RowLimit,
}

/// What an [`Error::InvalidRange`](super::Error::InvalidRange) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("scan range starts at \"{}\", after its end \"{}\"; give the range as start..end with start <= end (for rows in descending order, keep the range ascending and call .reversed())", start.escape_ascii(), end.escape_ascii())]
pub struct InvalidRange {
    /// The range's start key.
    pub start: Vec<u8>,
    /// The range's end key.
    pub end: Vec<u8>,
}

/// What an [`Error::InvalidWindow`](super::Error::InvalidWindow) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("expiry window from {from} to {to} is not a span of the past (now is {now}): give from <= to <= now, and read the rest of the time in the next window")]
pub struct InvalidWindow {
    /// Its start.
    pub from: DateTime<Utc>,
    /// Its end (exclusive).
    pub to: DateTime<Utc>,
    /// The clock's now.
    pub now: DateTime<Utc>,
}

/// What an [`Error::UpdateLeavesNoRow`](super::Error::UpdateLeavesNoRow) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("updating row \"{}\" of table `{table}` would clear every cell that keeps it live, and a read would find no row; nothing was written: delete the row instead, or set a field", row_key.escape_ascii())]
pub struct UpdateLeavesNoRow {
    /// The table.
    pub table: String,
    /// The row key.
    pub row_key: Vec<u8>,
}

/// What an [`Error::SchemaDrift`](super::Error::SchemaDrift) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("schema drift in table `{table}`, family `{family}`: expected {expected}, live {live}; run ensure_schema or fix the struct")]
pub struct SchemaDrift {
    /// The table.
    pub table: String,
    /// The family at fault.
    pub family: String,
    /// What the struct declares.
    pub expected: String,
    /// What the live table has (`missing` when the family does not exist).
    pub live: String,
}

/// What an [`Error::TableNotFound`](super::Error::TableNotFound) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("table `{table}` does not exist; call ensure_schema to create it")]
pub struct TableNotFound {
    /// The table.
    pub table: String,
}

/// What an [`Error::FamilyNotFound`](super::Error::FamilyNotFound) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("table `{table}` has no family `{family}`; its families are: {}", if families.is_empty() { "none".to_owned() } else { families.join(", ") })]
pub struct FamilyNotFound {
    /// The table.
    pub table: String,
    /// The family asked for.
    pub family: String,
    /// The families the table has, in name order.
    pub families: Vec<String>,
}

/// What an [`Error::InvalidShard`](super::Error::InvalidShard) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("{problem}")]
pub struct InvalidShard {
    /// What is wrong with it.
    pub problem: crate::model::shards::ShardProblem,
}

/// What an [`Error::WouldDeleteData`](super::Error::WouldDeleteData) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("refusing to set family `{family}` of table `{table}` to max_age = 1s: it holds cells with ordinary timestamps that would all be deleted at the next compaction; migrate them first, or pass force to accept the loss")]
pub struct WouldDeleteData {
    /// The table.
    pub table: String,
    /// The family.
    pub family: String,
}

/// What an [`Error::InvalidPolicy`](super::Error::InvalidPolicy) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("invalid policy `{spec}`: {problem}")]
pub struct InvalidPolicy {
    /// The text given.
    pub spec: String,
    /// What is wrong, and what is accepted.
    pub problem: PolicyProblem,
}

/// What an [`Error::Migration`](super::Error::Migration) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("migration in table `{table}`: {problem}")]
pub struct Migration {
    /// The table.
    pub table: String,
    /// What went wrong, and what to do.
    pub problem: MigrationProblem,
}

/// What an [`Error::MigrateIntoMap`](super::Error::MigrateIntoMap) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("migration in table `{table}`: target family `{family}` holds the entries of map field `{field}`, where copied columns would read back as entries; migrate into the struct's own family, and write entries with put_entry")]
pub struct MigrateIntoMap {
    /// The table.
    pub table: String,
    /// The target family.
    pub family: String,
    /// The map field whose family it is.
    pub field: String,
}

/// What an [`Error::Connect`](super::Error::Connect) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("{}", connect_message(target, &**source))]
pub struct Connect {
    /// Where we tried to connect.
    pub target: String,
    /// Why it failed.
    #[source]
    pub source: BoxError,
}

/// What an [`Error::InvalidSetting`](super::Error::InvalidSetting) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("connection setting `{setting}` = {value} is out of range: {allowed}")]
pub struct InvalidSetting {
    /// The setting (`pool_size`, `keep_alive.interval`,
    /// `retry.deadline`, …).
    pub setting: &'static str,
    /// The value given.
    pub value: String,
    /// The range allowed.
    pub allowed: String,
}

/// What an [`Error::PlaintextWithCredentials`](super::Error::PlaintextWithCredentials) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("refusing to send credentials to {endpoint} in plaintext: use an https:// endpoint, or no credentials for an emulator")]
pub struct PlaintextWithCredentials {
    /// The `http://` endpoint.
    pub endpoint: String,
}

/// What an [`Error::OutcomeUnknown`](super::Error::OutcomeUnknown) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("{}", outcome_message(table, row_key, *attempts, *answered, *horizon, lost.as_deref(), &**source))]
pub struct OutcomeUnknown {
    /// The table.
    pub table: String,
    /// The row.
    pub row_key: Vec<u8>,
    /// Attempts sent, the first included (a conditional write sends
    /// another only once a read proved the last was not applied).
    pub attempts: u32,
    /// How many of them Bigtable answered.
    pub answered: u32,
    /// The write's horizon, when the library cut the last attempt
    /// there itself, before any answer
    /// ([`WriteOptions::horizon`](crate::writer::WriteOptions::horizon)):
    /// a link slower than that needs a longer one.
    pub horizon: Option<Duration>,
    /// What ended the attempt.
    #[source]
    pub source: BoxError,
    /// Why the answer was lost, when the transport said it was (a
    /// connection refused or broken): found where the error was made.
    pub(crate) lost: Option<String>,
}

/// What an [`Error::Conflict`](super::Error::Conflict) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("row \"{}\" of table `{table}` kept changing under {attempts} conditional writes; try again later", row_key.escape_ascii())]
pub struct Conflict {
    /// The table.
    pub table: String,
    /// The row.
    pub row_key: Vec<u8>,
    /// Tries made.
    pub attempts: u32,
}

/// What an [`Error::NoLiveRow`](super::Error::NoLiveRow) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("row \"{}\" of table `{table}` is not live: a counter counts only in a live row of a struct with required fields; write the row first (put or insert_if_absent)", row_key.escape_ascii())]
pub struct NoLiveRow {
    /// The table.
    pub table: String,
    /// The row.
    pub row_key: Vec<u8>,
}

/// What an [`Error::RequiredField`](super::Error::RequiredField) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("field `{field}` of table `{table}` is required: only an `Option` or `#[bigtable(default)]` field can be cleared; set it instead")]
pub struct RequiredField {
    /// The table.
    pub table: String,
    /// The field.
    pub field: &'static str,
}

/// What an [`Error::PartialWrite`](super::Error::PartialWrite) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("{} of {} rows of table `{table}` were not written (or not surely){}; retrying the write is safe", failed.len(), failed.len() + written, first_failures(failed))]
pub struct PartialWrite {
    /// The table.
    pub table: String,
    /// How many rows were written.
    pub written: usize,
    /// Each row not written, with its key as sent and why.
    pub failed: Vec<FailedRow>,
}

/// What an [`Error::QueryParam`](super::Error::QueryParam) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("query parameter `@{name}`: {problem}")]
pub struct QueryParam {
    /// The parameter, without its `@`.
    pub name: String,
    /// What is wrong with it.
    pub problem: String,
}

/// What an [`Error::QueryResponse`](super::Error::QueryResponse) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("Bigtable's answer to the query cannot be read: {problem}")]
pub struct QueryResponse {
    /// What is wrong, naming the column where one is at fault.
    pub problem: String,
}

/// What an [`Error::QueryColumn`](super::Error::QueryColumn) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("column `{column}` of the query: {problem}")]
pub struct QueryColumn {
    /// The column's name (`#index` for a position past the last).
    pub column: String,
    /// What is wrong.
    pub problem: String,
}

/// What an [`Error::Server`](super::Error::Server) holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("{}", server_message(table, row_key.as_deref(), *code, Attempts { count: *attempts, elapsed: *elapsed, retries_exhausted: *retries_exhausted }, reason.as_deref(), unanswered.as_ref()))]
pub struct Server {
    /// The table.
    pub table: String,
    /// The row key involved, where there is one.
    pub row_key: Option<Vec<u8>>,
    /// The gRPC status code of the last attempt.
    pub code: Code,
    /// Attempts made, the first included.
    pub attempts: u32,
    /// How long the attempts took, delays between them included.
    pub elapsed: Duration,
    /// Whether the error was worth retrying and the retry budget (attempts
    /// or deadline) ran out; `false` for an error that is final at once.
    pub retries_exhausted: bool,
    /// What Bigtable said when it answered (its status message:
    /// `unknown family "c"`), part of the message; `None` when nothing
    /// answered or it said nothing.
    pub reason: Option<String>,
    /// The last attempt's failure under the reason: the transport's
    /// error, or why nothing answered.
    #[source]
    pub source: Option<BoxError>,
    /// How the call ended when Bigtable did not answer it (refused, no
    /// answer, not sent): found where the error was made, from the
    /// transport's types, and told by the message.
    pub(crate) unanswered: Option<Unanswered>,
}
