//! The one error type of the runtime. Each variant says what the caller can
//! do; `Display` prints that one level, and the cause, where there is one,
//! is the error's `source()` (print the chain with a reporter such as
//! anyhow's `{:#}` to see both).

mod code;
pub mod kinds;
mod messages;
mod problems;

pub use code::{Code, CodecError};
pub use kinds::*;
pub(crate) use messages::Unanswered;
pub use problems::*;

use crate::model::clash::LayoutClash;
use chrono::TimeDelta;
use std::fmt;

use crate::model::duration::human;

/// A cause of an error, kept as the error's `source()`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a host or endpoint is not an address to connect to, found before
/// anything was tried: the cause of an [`Error::Connect`]. The problem is
/// the error's message, the form expected its cause, so that a reporter
/// printing every level says each once.
#[derive(Debug)]
pub(crate) struct BadAddress {
    /// What is wrong ("the host contains white space").
    pub(crate) problem: String,
    /// The form expected.
    pub(crate) expected: &'static str,
}

impl fmt::Display for BadAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expected)
    }
}

impl std::error::Error for BadAddress {}

/// No credentials were found where application default credentials are
/// looked for: the cause of an [`Error::Connect`] whose message says
/// where they were looked for and what to do. Its own text is the
/// credential library's reason, its source the reasons under it.
#[derive(Debug)]
pub(crate) struct NoCredentials(pub(crate) BoxError);

impl fmt::Display for NoCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for NoCredentials {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Everything that can go wrong in `bigtable-ttl` at run time.
///
/// Variants that reject input are raised before anything is sent to Bigtable,
/// so a rejected write leaves nothing half-written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A one-second (or explicit) expiry that is not after the clock's "now":
    /// the cell would be dead on arrival. Pick an expiry in the future.
    #[error(transparent)]
    ExpiryNotInFuture(Box<ExpiryNotInFuture>),
    /// A TTL of zero or less was requested. Use a positive duration, or
    /// [`crate::Table::delete`] to remove a row now.
    #[non_exhaustive]
    #[error("TTL must be positive, got {}; use a positive duration, or delete the row instead", human(*ttl))]
    NonPositiveTtl {
        /// The requested TTL.
        ttl: TimeDelta,
    },
    /// A TTL shorter than a millisecond: Bigtable's cell timestamps have
    /// millisecond granularity, so the cell could not outlive the write.
    /// Use at least one millisecond.
    #[non_exhaustive]
    #[error("TTL {} is shorter than a millisecond, the granularity of Bigtable's cell timestamps; use a TTL of at least 1ms", human(*ttl))]
    TtlUnderMillisecond {
        /// The requested TTL.
        ttl: TimeDelta,
    },
    /// The expiry or the cell timestamp it implies cannot be represented as a
    /// Bigtable timestamp (microseconds since the epoch, in an `i64`).
    #[error(transparent)]
    ExpiryOutOfRange(Box<ExpiryOutOfRange>),
    /// The cell timestamp would fall before 1970-01-01, which Bigtable rejects.
    #[non_exhaustive]
    #[error("cell timestamp {timestamp_micros} µs is before the Unix epoch, which Bigtable rejects; choose a later expiry or a shorter default")]
    TimestampBeforeEpoch {
        /// The offending timestamp in microseconds.
        timestamp_micros: i64,
    },
    /// Under the one-second strategy every write needs an expiry.
    #[error(transparent)]
    MissingExpiry(Box<MissingExpiry>),
    /// The row key encodes to zero bytes, which Bigtable rejects.
    #[error(transparent)]
    EmptyRowKey(Box<EmptyRowKey>),
    /// The row key is longer than Bigtable's 4 KiB limit.
    #[error(transparent)]
    RowKeyTooLong(Box<RowKeyTooLong>),
    /// A part of a composite key contains a byte of the separator, so the
    /// key could not be split back into its fields one way only (and another
    /// key tuple could share its row). Choose another separator or clean the
    /// value.
    #[error(transparent)]
    KeySeparatorInPart(Box<KeySeparatorInPart>),
    /// A row key read back from Bigtable does not have the declared shape.
    #[error(transparent)]
    BadRowKey(Box<BadRowKey>),
    /// A row read back holds a cell timestamp whose expiry cannot be
    /// represented (near `i64::MAX`): written by other code, not this
    /// library. Skip such rows with `ReadOptions::with_skip_undecodable`.
    #[error(transparent)]
    TimestampOutOfRange(Box<TimestampOutOfRange>),
    /// A field value could not be encoded.
    #[error(transparent)]
    Encode(Box<Encode>),
    /// A cell read back could not be decoded into its field.
    #[error(transparent)]
    Decode(Box<Decode>),
    /// A value is larger than Bigtable accepts for one cell.
    #[error(transparent)]
    ValueTooLarge(Box<ValueTooLarge>),
    /// One row's write is over Bigtable's per-row limits (256 MiB of data,
    /// 100,000 mutations); refused before anything is sent. Split the data
    /// over several rows.
    #[error(transparent)]
    RowTooLarge(Box<RowTooLarge>),
    /// A scan range whose start is after its end, refused before anything
    /// is sent (Bigtable would answer `INVALID_ARGUMENT`). Give ranges in
    /// ascending key order, reverse scans included: `Scan::range(a..b)`
    /// with `a <= b`, then `.reversed()` for descending order.
    #[error(transparent)]
    InvalidRange(Box<InvalidRange>),
    /// An expiry window (`Table::expired`, `ops::expired`) that is not a
    /// span of the past: its start after its end, or its end after the
    /// clock's now (rows dying later in it would be missed by the next
    /// window, which starts at its end). Refused before anything is read.
    #[error(transparent)]
    InvalidWindow(Box<InvalidWindow>),
    /// A read's row limit that is not a number of rows: zero (which
    /// Bigtable's API would take as no limit at all) or negative. Refused
    /// before anything is sent.
    #[non_exhaustive]
    #[error("row limit {limit} is not a number of rows: give a limit of at least 1, or none to read every row")]
    InvalidRowLimit {
        /// The limit given.
        limit: i64,
    },
    /// An `update` would clear every cell that keeps the row live (the
    /// options of a struct whose counter's window is over, say): nothing
    /// was written, since a read right after would find no row.
    #[error(transparent)]
    UpdateLeavesNoRow(Box<UpdateLeavesNoRow>),
    /// Two structs of one table would write the same cells (one marker,
    /// one map family, one shadow column, a family one of them owns): every
    /// operation of either, through the `Connection` that opened both, is
    /// refused before anything is sent. The clash says what to change.
    #[non_exhaustive]
    #[error("{clash}")]
    Layout {
        /// Which two structs, what they share and what to change.
        clash: Box<LayoutClash>,
    },
    /// The live table's schema differs from the struct's.
    #[error(transparent)]
    SchemaDrift(Box<SchemaDrift>),
    /// The table does not exist.
    #[error(transparent)]
    TableNotFound(Box<TableNotFound>),
    /// The table has no family of that name. The message lists the
    /// families it has.
    #[error(transparent)]
    FamilyNotFound(Box<FamilyNotFound>),
    /// A shard (`index/count`) that does not exist, or more parts than
    /// [`crate::ops::MAX_PARTS`]: refused before anything is sent.
    #[error(transparent)]
    InvalidShard(Box<InvalidShard>),
    /// Switching a family that holds cells to `max_age = 1s` would delete them.
    #[error(transparent)]
    WouldDeleteData(Box<WouldDeleteData>),
    /// A TTL policy written as text (`one-second`, `default=2d`) did not parse.
    #[error(transparent)]
    InvalidPolicy(Box<InvalidPolicy>),
    /// A family migration could not start or did not verify. The source
    /// family is never changed; fix the cause and run it again (copying a
    /// row twice is harmless).
    #[error(transparent)]
    Migration(Box<Migration>),
    /// A migration's target family is a map field's: a map's family holds
    /// one cell per entry and nothing else, so copied columns (and their
    /// shadow column) would read back as entries. Nothing was written.
    #[error(transparent)]
    MigrateIntoMap(Box<MigrateIntoMap>),
    /// Connecting to Bigtable failed, or the connection is misconfigured
    /// (the cause says which). A malformed host or endpoint, where nothing
    /// was tried, says so and what is wrong (`malformed Bigtable address
    /// (emulator at "a b:1"): the host contains white space`), the form
    /// expected being the cause.
    #[error(transparent)]
    Connect(Box<Connect>),
    /// A [`crate::ConnectionBuilder`] setting outside the range it allows
    /// (a pool of 0 or of more than
    /// [`crate::ConnectionBuilder::MAX_POOL_SIZE`] connections, a
    /// keep-alive or a retry policy duration out of its bounds), refused by
    /// `connect` before anything is made: left alone it would panic inside
    /// a dependency or break every call. The message says the range.
    #[error(transparent)]
    InvalidSetting(Box<InvalidSetting>),
    /// A connection was asked to send credentials over plaintext HTTP/2
    /// (an `http://` endpoint): bearer tokens would travel in the clear.
    /// Use an `https://` endpoint, or drop the credentials when the endpoint
    /// is an emulator.
    #[error(transparent)]
    PlaintextWithCredentials(Box<PlaintextWithCredentials>),
    /// The answer to a write that is not idempotent was lost (a timeout, a
    /// broken connection), or Bigtable answered with a status that does not
    /// say whether it applied it (`UNAVAILABLE`, `ABORTED`, …): a
    /// conditional write, a read-modify-write, or a raw write holding a
    /// `SetCell` at the server's time, an `AddToCell` or a `MergeToCell`.
    /// It may or may not have been applied, and it is not re-sent blindly.
    /// Read the row to find out. The message says which, how many attempts
    /// were made and how many Bigtable answered, and when the library cut
    /// the attempt itself at the write's horizon, which setting to change.
    #[error(transparent)]
    OutcomeUnknown(Box<OutcomeUnknown>),
    /// Other writes to the row kept changing it between a read and the
    /// conditional write built on it; given up after `attempts` tries.
    #[error(transparent)]
    Conflict(Box<Conflict>),
    /// An increment of a counter in a row that is not live, in a struct with
    /// required fields: the increment cannot make a whole row (it has no
    /// value for them), and a counter alone would be a row no read shows.
    #[error(transparent)]
    NoLiveRow(Box<NoLiveRow>),
    /// A partial update tried to clear a field that is neither an `Option`
    /// nor `#[bigtable(default)]`: a row without it would no longer decode.
    #[error(transparent)]
    RequiredField(Box<RequiredField>),
    /// A multi-row write left some rows unwritten (or with an unknown
    /// outcome); every other row was written. Retrying the whole write is
    /// safe: every mutation carries explicit timestamps, so writing a row
    /// twice stores the same cells.
    #[error(transparent)]
    PartialWrite(Box<PartialWrite>),
    /// A parameter of a GoogleSQL query that the prepared query cannot
    /// take: a name it did not declare, a value of another type, or one
    /// it declared and was given no value. Raised before anything is sent.
    #[error(transparent)]
    QueryParam(Box<QueryParam>),
    /// Bigtable's answer to a GoogleSQL query cannot be read: metadata
    /// without columns or with a type this library does not know, a batch
    /// whose checksum does not match, values that do not fit their
    /// column's type, an incomplete row, a stream that ended without
    /// making its last values final. No row of the batch at fault is
    /// handed out; [`Error::code`] is [`Code::Internal`], as in Google's
    /// clients, and it is not retried.
    #[error(transparent)]
    QueryResponse(Box<QueryResponse>),
    /// A value of a query's row read as a Rust type it is not
    /// ([`crate::data::SqlRow::get`]), or a column the query does not have.
    #[error(transparent)]
    QueryColumn(Box<QueryColumn>),
    /// A query returned more rows than the limit it was run with
    /// ([`crate::data::BoundQuery::max_rows`]): the rows of the batch that
    /// passed it are not handed out.
    #[non_exhaustive]
    #[error("the query returned more than its limit of {limit} rows; narrow it (a LIMIT clause, a key range) or raise the limit")]
    QueryRowLimit {
        /// The limit.
        limit: usize,
    },
    /// Bigtable answered with an error, or could not be reached, and the
    /// call ended. `code` is what to branch on. The message says whether
    /// Bigtable answered, and what it said (`Bigtable answered UNKNOWN for
    /// table `t`, row "c1": unknown family "c" (1 attempt)`, the server's
    /// reason being `reason`), or that the connection was never made, to
    /// which address and why (`no answer from Bigtable at 127.0.0.1:8086
    /// …: connection refused`), how many attempts were made over how long,
    /// and for [`Code::NotFound`] (a table that does not exist, most often)
    /// that `ensure_schema` creates the table. The transport failure under
    /// it, if any, is the `source()` chain, each cause once.
    #[error(transparent)]
    Server(Box<Server>),
}

/// Each boxed variant from its fields: `Error::from(Server { .. })`.
macro_rules! from_fields {
    ($($v:ident),*) => {
        $(impl From<$v> for Error {
            fn from(fields: $v) -> Self {
                Error::$v(Box::new(fields))
            }
        })*
    };
}

from_fields!(
    ExpiryNotInFuture,
    ExpiryOutOfRange,
    MissingExpiry,
    EmptyRowKey,
    RowKeyTooLong,
    KeySeparatorInPart,
    BadRowKey,
    TimestampOutOfRange,
    Encode,
    Decode,
    ValueTooLarge,
    RowTooLarge,
    InvalidRange,
    InvalidWindow,
    UpdateLeavesNoRow,
    SchemaDrift,
    TableNotFound,
    FamilyNotFound,
    InvalidShard,
    WouldDeleteData,
    InvalidPolicy,
    Migration,
    MigrateIntoMap,
    Connect,
    InvalidSetting,
    PlaintextWithCredentials,
    OutcomeUnknown,
    Conflict,
    NoLiveRow,
    RequiredField,
    PartialWrite,
    QueryParam,
    QueryResponse,
    QueryColumn,
    Server
);

/// The accessors of the `table` and `row_key` fields that several
/// variants share, each written once over the list of variants that have
/// the field (`MissingExpiry`'s table and `Server`'s row key are optional,
/// and read on their own).
macro_rules! shared_fields {
    (table: $($t:ident),*; row_key: $($k:ident),*) => {
        impl Error {
            /// The table named by a variant whose table is always named.
            fn named_table(&self) -> Option<&String> {
                match self {
                    $(Error::$t(e) => Some(&e.table),)*
                    _ => None,
                }
            }

            /// The same, to rename it.
            fn named_table_mut(&mut self) -> Option<&mut String> {
                match self {
                    $(Error::$t(e) => Some(&mut e.table),)*
                    _ => None,
                }
            }

            /// The row key of a variant whose row key is always named.
            fn named_row_key(&self) -> Option<&[u8]> {
                match self {
                    $(Error::$k(e) => Some(&e.row_key),)*
                    _ => None,
                }
            }
        }
    };
}

shared_fields!(
    table: EmptyRowKey, RowKeyTooLong, BadRowKey, TimestampOutOfRange, Decode, RowTooLarge,
        SchemaDrift, TableNotFound, FamilyNotFound, WouldDeleteData, Migration, MigrateIntoMap,
        OutcomeUnknown, Conflict, NoLiveRow, RequiredField, PartialWrite, Server;
    row_key: BadRowKey, TimestampOutOfRange, Decode, RowTooLarge, OutcomeUnknown, Conflict,
        NoLiveRow
);

impl Error {
    /// The same error, naming table `name`: what a handle renamed with
    /// [`crate::Table::with_name`] applies to the errors the struct's code
    /// builds (the derive's key and decode code knows only the struct's
    /// `#[bigtable(table = ...)]`).
    #[must_use]
    pub(crate) fn in_table(mut self, name: &str) -> Self {
        if let Error::MissingExpiry(e) = &mut self {
            if let Some(table) = &mut e.table {
                name.clone_into(table);
            }
        }
        if let Some(table) = self.named_table_mut() {
            name.clone_into(table);
        }
        self
    }
}

/// Questions a caller asks an error, in the manner of hyper's and Google's
/// Rust clients' errors, so that deciding what to do does not take a match
/// over every variant:
///
/// ```
/// use bigtable_ttl::Error;
///
/// /// What a caller does after a failed call.
/// enum Next {
///     RetryLater,
///     ReadTheRowFirst,
///     CreateTheTable,
///     Fix,
/// }
///
/// fn next(e: &Error) -> Next {
///     if e.is_outcome_unknown() {
///         Next::ReadTheRowFirst // it may have been applied: never re-send blindly
///     } else if e.is_retryable() {
///         Next::RetryLater // transient, the library's own retries ran out
///     } else if e.is_not_found() {
///         Next::CreateTheTable // ensure_schema
///     } else {
///         Next::Fix // bad input, a schema that does not match, …
///     }
/// }
/// # let _ = next;
/// ```
impl Error {
    /// The gRPC code of the answer that ended the call, where Bigtable (or
    /// the transport) gave one: an [`Error::Server`]'s code, and that of
    /// the lost attempt behind an [`Error::OutcomeUnknown`] raised by the
    /// raw layer ([`crate::data`]); [`Code::Internal`] for an
    /// [`Error::QueryResponse`], as Google's clients report an answer they
    /// cannot read. `None` for errors the library raises
    /// itself (bad input, decoding, schema drift, …).
    #[must_use]
    pub fn code(&self) -> Option<Code> {
        match self {
            Error::Server(e) => Some(e.code),
            Error::QueryResponse { .. } => Some(Code::Internal),
            Error::OutcomeUnknown(e) => e.source.downcast_ref::<Error>().and_then(Error::code),
            _ => None,
        }
    }

    /// Whether the same call, made again later, may succeed: Bigtable (or
    /// the network) answered with a transient code
    /// ([`crate::retry::retryable_code`]: unavailable, deadline exceeded,
    /// aborted, resource exhausted) and the library's own retries gave up;
    /// a multi-row write left rows to write again ([`Error::PartialWrite`]:
    /// retrying it is safe); or other writes kept changing a row under a
    /// conditional write ([`Error::Conflict`]). `false` for an unknown
    /// outcome ([`Error::is_outcome_unknown`]: a conditional call may have
    /// been applied, and sending it again could apply it twice; read the
    /// row first), and for everything the caller has to fix.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Server(e) => e.code.is_transient(),
            Error::PartialWrite { .. } | Error::Conflict { .. } => true,
            _ => false,
        }
    }

    /// Whether the call ran out of time: its deadline (or an attempt's
    /// timeout) passed without an answer, [`Code::DeadlineExceeded`].
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        self.code() == Some(Code::DeadlineExceeded)
    }

    /// Whether the table (or another resource) does not exist:
    /// [`Error::TableNotFound`], or Bigtable's [`Code::NotFound`].
    /// `ensure_schema` creates a struct's table.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::TableNotFound { .. }) || self.code() == Some(Code::NotFound)
    }

    /// Whether a conditional call's answer was lost, so it may or may not
    /// have been applied ([`Error::OutcomeUnknown`]).
    #[must_use]
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, Error::OutcomeUnknown { .. })
    }

    /// Whether the library retried the call until its retry policy ran out
    /// (attempts or deadline) before giving up.
    #[must_use]
    pub fn is_exhausted(&self) -> bool {
        matches!(self, Error::Server(e) if e.retries_exhausted)
    }

    /// The table the error is about, where it names one.
    #[must_use]
    pub fn table(&self) -> Option<&str> {
        match self {
            Error::MissingExpiry(e) => e.table.as_deref(),
            _ => self.named_table().map(String::as_str),
        }
    }

    /// The row key the error is about, where it names one (bytes, as
    /// stored).
    #[must_use]
    pub fn row_key(&self) -> Option<&[u8]> {
        match self {
            Error::Server(e) => e.row_key.as_deref(),
            _ => self.named_row_key(),
        }
    }
}

/// The result type of the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn server(code: Code, retries_exhausted: bool) -> Error {
        Error::from(Server {
            table: "t".into(),
            row_key: Some(b"k".to_vec()),
            code,
            attempts: 3,
            elapsed: Duration::from_secs(1),
            retries_exhausted,
            reason: None,
            source: Some("cause".into()),
            unanswered: None,
        })
    }

    /// Every `Result` of the library carries an `Error`: the variants with
    /// more than two words of fields hold them boxed, so that an `Ok` does
    /// not pay for the largest failure (hyper's and gax's errors are one
    /// pointer).
    #[test]
    fn an_error_is_at_most_three_words() {
        assert!(
            std::mem::size_of::<Error>() <= 24,
            "Error is {} bytes: box the fields of the variant that grew",
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn callers_branch_on_questions_not_variants() {
        let unavailable = server(Code::Unavailable, true);
        assert!(unavailable.is_retryable() && unavailable.is_exhausted());
        assert_eq!(unavailable.code(), Some(Code::Unavailable));
        assert_eq!(
            (unavailable.table(), unavailable.row_key()),
            (Some("t"), Some(&b"k"[..]))
        );
        let deadline = server(Code::DeadlineExceeded, true);
        assert!(deadline.is_timeout() && deadline.is_retryable());
        let denied = server(Code::PermissionDenied, false);
        assert!(!denied.is_retryable() && !denied.is_exhausted());
        assert!(server(Code::NotFound, false).is_not_found());
        assert!(Error::from(TableNotFound { table: "t".into() }).is_not_found());
        let unknown = Error::from(OutcomeUnknown {
            table: "t".into(),
            row_key: b"k".to_vec(),
            attempts: 1,
            answered: 1,
            horizon: None,
            lost: None,
            source: Box::new(server(Code::Unavailable, false)),
        });
        assert!(unknown.is_outcome_unknown() && !unknown.is_retryable());
        assert_eq!(unknown.code(), Some(Code::Unavailable));
        let conflict = Error::from(Conflict {
            table: "t".into(),
            row_key: b"k".to_vec(),
            attempts: 8,
        });
        assert!(conflict.is_retryable());
        let bad = Error::NonPositiveTtl {
            ttl: TimeDelta::zero(),
        };
        assert!(!bad.is_retryable() && bad.code().is_none() && bad.table().is_none());
    }

    /// Each level of `e`'s chain, as a reporter prints it.
    fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
        std::iter::successors(Some(e), |e| e.source())
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn every_level_of_a_chain_is_printed_once() {
        let status = std::io::Error::other("connection reset by peer");
        let errors = [
            Error::from(Encode {
                field: "url",
                source: CodecError::Json("key must be a string".into()),
            }),
            Error::from(Decode {
                table: "clicks".into(),
                row_key: b"c\xff1".to_vec(),
                column: "c:url".into(),
                source: CodecError::InvalidUtf8("invalid utf-8 sequence".into()),
            }),
            Error::from(Server {
                table: "clicks".into(),
                row_key: Some(b"c1".to_vec()),
                code: Code::Unavailable,
                attempts: 10,
                elapsed: Duration::from_millis(23_100),
                retries_exhausted: true,
                reason: None,
                source: Some(Box::new(status)),
                unanswered: None,
            }),
            Error::from(Connect {
                target: "emulator at ::::".into(),
                source: "invalid authority".into(),
            }),
        ];
        for error in &errors {
            let levels = chain(error);
            assert_eq!(levels.len(), 2, "{levels:?}");
            assert!(
                !levels[0].contains(&levels[1]),
                "the cause is printed twice: {levels:?}"
            );
        }
        let server = errors[2].to_string();
        assert!(
            server.contains("UNAVAILABLE")
                && server.contains("\"c1\"")
                && server.contains("10 attempts over 23.1s, retries exhausted"),
            "{server}"
        );
        // Keys are bytes, shown escaped, not lossily.
        assert!(
            errors[1].to_string().contains(r#""c\xff1""#),
            "{}",
            errors[1]
        );
    }

    #[test]
    fn durations_in_messages_read_as_people_write_them() {
        let text = |ttl| Error::NonPositiveTtl { ttl }.to_string();
        assert!(
            text(-TimeDelta::hours(1)).contains("got -1h;"),
            "{}",
            text(-TimeDelta::hours(1))
        );
        assert!(text(TimeDelta::zero()).contains("got 0s;"));
        let short = Error::TtlUnderMillisecond {
            ttl: TimeDelta::microseconds(500),
        };
        assert!(
            short.to_string().starts_with("TTL 500us is shorter"),
            "{short}"
        );
        let sum = Overflow::Sum {
            micros: 1,
            by: TimeDelta::days(3),
        };
        assert_eq!(sum.to_string(), "1 µs + 3days overflows");
    }

    #[test]
    fn a_malformed_address_says_why_and_that_nothing_was_tried() {
        let err = Error::from(Connect {
            target: "emulator at \"not a host\"".into(),
            source: Box::new(BadAddress {
                problem: "the host contains white space".into(),
                expected: "expected HOST:PORT",
            }),
        });
        assert_eq!(
            chain(&err),
            [
                "malformed Bigtable address (emulator at \"not a host\"): the host contains white space",
                "expected HOST:PORT"
            ]
        );
    }

    #[test]
    fn codes_round_trip_their_numbers() {
        for n in (0..17).filter(|n| *n != 2) {
            let code = Code::from_i32(n);
            assert_ne!(code, Code::Unknown, "{n}");
            assert!(code
                .as_str()
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_'));
        }
        assert_eq!(Code::from_i32(2), Code::Unknown);
        assert_eq!(Code::from_i32(14), Code::Unavailable);
        assert_eq!(Code::from_i32(99), Code::Unknown);
        assert_eq!(Code::from_i32(-1), Code::Unknown);
    }
}
