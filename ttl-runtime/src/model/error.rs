//! The one error type of the runtime. Each variant says what the caller can
//! do; `Display` prints that one level, and the cause, where there is one,
//! is the error's `source()` (print the chain with a reporter such as
//! anyhow's `{:#}` to see both).

use crate::model::clash::LayoutClash;
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::duration::human;

/// A cause of an error, kept as the error's `source()`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A cause as its chain's text, each level saying something the levels
/// above it did not: what a dependency's error chain becomes before it is
/// an [`Error`]'s `source()`. tonic's `Status` prints its source's `Debug`
/// in its own `Display`, and its transport errors wrap each other printing
/// the same words ("tcp connect error" three times over one "Connection
/// refused"), so a reporter printing each level would name one cause
/// several times.
#[derive(Debug)]
pub(crate) struct Cause {
    text: String,
    source: Option<Box<Cause>>,
    /// Why nothing answered ("connection refused"), when the chain said
    /// so in its types before it became text.
    no_answer: Option<String>,
    /// The request never went out (no time left, no token): this level's
    /// text says why.
    not_sent: bool,
    /// Where the connection could not be made, when the chain said so
    /// ([`Unreachable`]) before it became text.
    unreachable: Option<(String, bool)>,
    /// The server refused the request before processing any of it (an
    /// HTTP/2 `REFUSED_STREAM`, a `GOAWAY` past its stream).
    refused: bool,
}

impl Cause {
    /// `text`, then each level of `source`'s chain whose text is not
    /// already part of a level kept above it.
    pub(crate) fn new(text: String, source: Option<&(dyn std::error::Error + 'static)>) -> Self {
        let mut levels = vec![text];
        for level in std::iter::successors(source, |e| e.source()) {
            let text = level.to_string();
            if !text.is_empty() && !levels.iter().any(|kept| kept.contains(&text)) {
                levels.push(text);
            }
        }
        let mut cause: Option<Box<Cause>> = None;
        while let Some(text) = levels.pop() {
            cause = Some(Box::new(Cause {
                text,
                source: cause,
                no_answer: None,
                not_sent: false,
                unreachable: None,
                refused: false,
            }));
        }
        let mut cause = cause.map_or_else(
            || Cause {
                text: String::new(),
                source: None,
                no_answer: None,
                not_sent: false,
                unreachable: None,
                refused: false,
            },
            |c| *c,
        );
        cause.no_answer = source.and_then(no_answer);
        cause.unreachable = source.and_then(unreachable);
        cause
    }

    /// This cause, marked as the reason a request was never sent.
    pub(crate) fn never_sent(mut self) -> Self {
        self.not_sent = true;
        self
    }

    /// This cause, marked as a refusal before processing: the request was
    /// not applied.
    pub(crate) fn refused(mut self) -> Self {
        self.refused = true;
        self
    }

    /// This cause, marked as the end of an attempt Bigtable did not answer
    /// (a timeout, a broken stream), its text saying why where nothing
    /// more precise was found.
    pub(crate) fn unanswered(mut self) -> Self {
        if self.no_answer.is_none() {
            self.no_answer = Some(self.text.clone());
        }
        self
    }

    /// `error`'s chain, each cause once.
    pub(crate) fn of(error: &(dyn std::error::Error + 'static)) -> Self {
        Self::new(error.to_string(), error.source())
    }

    /// Every level, joined as reporters join them (`a: b: c`).
    pub(crate) fn chain(&self) -> String {
        let mut text = self.text.clone();
        let mut next = self.source.as_deref();
        while let Some(level) = next {
            text.push_str(": ");
            text.push_str(&level.text);
            next = level.source.as_deref();
        }
        text
    }
}

/// Why nothing answered, when `error`'s chain shows a connection that
/// was never made (refused, no route): a failure of the network, not an
/// answer from Bigtable. A cause already flattened to text ([`Cause`])
/// keeps what it found; a bare message is read for the one such failure
/// it can name surely, the operating system's "Connection refused".
pub(crate) fn no_answer(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use std::io::ErrorKind;
    for level in std::iter::successors(Some(error), |e| e.source()) {
        if let Some(cause) = level.downcast_ref::<Cause>() {
            if cause.no_answer.is_some() {
                return cause.no_answer.clone();
            }
        }
        // Its own level is its source's, which the chain steps over.
        if let Some(wrapped) = level.downcast_ref::<Unreachable>() {
            if let Some(why) = no_answer(&*wrapped.source) {
                return Some(why);
            }
        }
        if let Some(io) = level.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
                    | ErrorKind::AddrNotAvailable
            ) {
                return Some(io.kind().to_string());
            }
        }
    }
    let last = std::iter::successors(Some(error), |e| e.source()).last()?;
    (last.source().is_none()
        && last.downcast_ref::<Cause>().is_none()
        && last.to_string().contains("Connection refused (os error"))
    .then(|| ErrorKind::ConnectionRefused.to_string())
}

/// A connection that could not be made, and to which address: kept in
/// the chain of the failure it wraps, whose text it shows as its own (so a
/// chain printed level by level does not grow a level), for the messages
/// that name the address. `first` when it was a connection to an emulator
/// that no connection had reached yet: a refusal then is not retried (the
/// emulator is not running there), rather than for half a minute.
#[derive(Debug)]
pub(crate) struct Unreachable {
    pub(crate) address: String,
    pub(crate) first: bool,
    pub(crate) source: BoxError,
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.source.fmt(f)
    }
}

impl std::error::Error for Unreachable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.source()
    }
}

/// Where `error`'s chain says a connection could not be made, and whether
/// it was a first connection to an emulator ([`Unreachable`]).
pub(crate) fn unreachable(error: &(dyn std::error::Error + 'static)) -> Option<(String, bool)> {
    std::iter::successors(Some(error), |e| e.source()).find_map(|level| {
        if let Some(u) = level.downcast_ref::<Unreachable>() {
            return Some((u.address.clone(), u.first));
        }
        level.downcast_ref::<Cause>()?.unreachable.clone()
    })
}

/// Whether `error` is a refused (or unroutable) first connection to an
/// emulator: nothing listens where it was told to look, and retrying for
/// the policy's half a minute would only delay saying so.
pub(crate) fn emulator_not_there(error: &(dyn std::error::Error + 'static)) -> bool {
    no_answer(error).is_some() && unreachable(error).is_some_and(|(_, first)| first)
}

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
pub(crate) struct NoCredentials(pub(crate) Cause);

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

/// Where application default credentials are looked for, in order, and
/// what to do when none is there: [`NoCredentials`]'s message.
const NO_CREDENTIALS: &str = "no Google Cloud credentials found: looked for a service-account key \
    file named by GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default credentials \
    (~/.config/gcloud/application_default_credentials.json), the metadata server of a Google \
    Cloud machine, and `gcloud auth print-access-token`; run `gcloud auth application-default \
    login` or set GOOGLE_APPLICATION_CREDENTIALS for Cloud Bigtable, or set \
    BIGTABLE_EMULATOR_HOST=HOST:PORT to use Google's Bigtable emulator";

/// The message of an [`Error::Connect`]: what was tried, or for a
/// malformed address that nothing was, and why.
fn connect_message(target: &str, source: &(dyn std::error::Error + 'static)) -> String {
    if source.is::<NoCredentials>() {
        return NO_CREDENTIALS.to_owned();
    }
    match source.downcast_ref::<BadAddress>() {
        Some(bad) => format!("malformed Bigtable address ({target}): {}", bad.problem),
        None => format!("could not connect to Bigtable ({target})"),
    }
}

/// The message of an [`Error::Server`]: "no answer from Bigtable" when
/// the connection was never made, "not sent to Bigtable" when the request
/// never went out (no time left, no token), "Bigtable answered CODE" and
/// its reason otherwise.
fn server_message(
    table: &str,
    row_key: Option<&[u8]>,
    code: Code,
    attempts: Attempts,
    reason: Option<&str>,
    source: Option<&(dyn std::error::Error + 'static)>,
) -> String {
    let row = row_key
        .map(|k| format!(", row \"{}\"", k.escape_ascii()))
        .unwrap_or_default();
    let hint = if code == Code::NotFound {
        "; does the table exist? ensure_schema creates it"
    } else {
        ""
    };
    let Some(source) = source else {
        let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
        return format!(
            "Bigtable answered {code} for table `{table}`{row}{reason} ({attempts}){hint}"
        );
    };
    let refused = std::iter::successors(Some(source), |e| e.source())
        .filter_map(|level| level.downcast_ref::<Cause>())
        .find(|cause| cause.refused);
    if let Some(cause) = refused {
        return format!(
            "refused by Bigtable before processing, not applied, for table `{table}`{row}: {} ({code}, {attempts})",
            cause.text
        );
    }
    if let Some(why) = no_answer(source) {
        let (at, hint) = match unreachable(source) {
            Some((address, first)) => (
                format!(" at {address}"),
                if first {
                    "; is the emulator running there? start it, or point BIGTABLE_EMULATOR_HOST \
                     at the HOST:PORT it listens on"
                } else {
                    ""
                },
            ),
            None => (String::new(), ""),
        };
        return format!(
            "no answer from Bigtable{at} for table `{table}`{row}: {why} ({code}, {attempts}){hint}"
        );
    }
    // Not sent for want of time or a token (a refused connection is
    // told above, as no answer).
    let never_sent = std::iter::successors(Some(source), |e| e.source())
        .filter_map(|level| level.downcast_ref::<Cause>())
        .find(|cause| cause.not_sent);
    if let Some(cause) = never_sent {
        return format!(
            "not sent to Bigtable for table `{table}`{row}: {} ({code}, {attempts})",
            cause.text
        );
    }
    let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
    format!("Bigtable answered {code} for table `{table}`{row}{reason} ({attempts}){hint}")
}

/// An [`Error::Server`]'s reason and source, from the cause that ended the
/// call: when Bigtable answered, its status message is the reason (shown
/// in the message) and what lay under it the source; a connection never
/// made or a request never sent keep their whole cause, which the message
/// reads for why.
pub(crate) fn reason_and_source(cause: BoxError) -> (Option<String>, Option<BoxError>) {
    if no_answer(&*cause).is_some() {
        return (None, Some(cause));
    }
    match cause.downcast::<Cause>() {
        Ok(cause) if cause.not_sent || cause.refused || cause.text.is_empty() => {
            (None, Some(cause))
        }
        Ok(cause) => (
            Some(cause.text),
            cause.source.map(|below| below as BoxError),
        ),
        Err(other) => (None, Some(other)),
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
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
    #[non_exhaustive]
    #[error("expiry {expire_at} is not after now ({now}): the cell would be dead on arrival; choose a later expiry")]
    ExpiryNotInFuture {
        /// The requested expiry, truncated to the millisecond.
        expire_at: DateTime<Utc>,
        /// The clock's time, truncated to the millisecond.
        now: DateTime<Utc>,
    },
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
    #[non_exhaustive]
    #[error("expiry is outside the range Bigtable timestamps can represent: {overflow}")]
    ExpiryOutOfRange {
        /// What overflowed.
        overflow: Overflow,
    },
    /// The cell timestamp would fall before 1970-01-01, which Bigtable rejects.
    #[non_exhaustive]
    #[error("cell timestamp {timestamp_micros} µs is before the Unix epoch, which Bigtable rejects; choose a later expiry or a shorter default")]
    TimestampBeforeEpoch {
        /// The offending timestamp in microseconds.
        timestamp_micros: i64,
    },
    /// Under the one-second strategy every write needs an expiry.
    #[non_exhaustive]
    #[error("{}uses the one-second strategy: this write has no expiry; set the expire_at field or call .expire_at()/.ttl() on the builder", table.as_deref().map_or_else(|| "the policy ".to_owned(), |t| format!("table `{t}` ")))]
    MissingExpiry {
        /// The table the write was for; `None` when the policy was used on
        /// its own ([`crate::Policy::cell_timestamp`]).
        table: Option<String>,
    },
    /// The row key encodes to zero bytes, which Bigtable rejects.
    #[non_exhaustive]
    #[error("row key for table `{table}` is empty; Bigtable requires a non-empty key")]
    EmptyRowKey {
        /// The table the key was for.
        table: String,
    },
    /// The row key is longer than Bigtable's 4 KiB limit.
    #[non_exhaustive]
    #[error("row key for table `{table}` is {len} bytes, over Bigtable's limit of {max} bytes; shorten the key fields")]
    RowKeyTooLong {
        /// The table the key was for.
        table: String,
        /// Length of the encoded key.
        len: usize,
        /// The limit (4096).
        max: usize,
    },
    /// A part of a composite key contains a byte of the separator, so the
    /// key could not be split back into its fields one way only (and another
    /// key tuple could share its row). Choose another separator or clean the
    /// value.
    #[non_exhaustive]
    #[error("key field `{field}` contains a byte of the key separator {separator:?}; the key could not be split back one way only; pick a separator none of whose characters can appear in it")]
    KeySeparatorInPart {
        /// The key field at fault.
        field: &'static str,
        /// The separator declared on the struct.
        separator: &'static str,
    },
    /// A row key read back from Bigtable does not have the declared shape.
    #[non_exhaustive]
    #[error("row key \"{}\" of table `{table}` does not decode: {problem}", row_key.escape_ascii())]
    BadRowKey {
        /// The table.
        table: String,
        /// The key.
        row_key: Vec<u8>,
        /// What did not match.
        problem: KeyProblem,
    },
    /// A row read back holds a cell timestamp whose expiry cannot be
    /// represented (near `i64::MAX`): written by other code, not this
    /// library. Skip such rows with `ReadOptions::with_skip_undecodable`.
    #[non_exhaustive]
    #[error("row \"{}\" of table `{table}` holds a cell timestamp of {timestamp_micros} µs whose expiry is out of range", row_key.escape_ascii())]
    TimestampOutOfRange {
        /// The table.
        table: String,
        /// The row key.
        row_key: Vec<u8>,
        /// The cell timestamp.
        timestamp_micros: i64,
    },
    /// A field value could not be encoded.
    #[non_exhaustive]
    #[error("field `{field}` could not be encoded")]
    Encode {
        /// The field at fault.
        field: &'static str,
        /// Why.
        #[source]
        source: CodecError,
    },
    /// A cell read back could not be decoded into its field.
    #[non_exhaustive]
    #[error("table `{table}`, row \"{}\", column `{column}` does not decode", row_key.escape_ascii())]
    Decode {
        /// The table.
        table: String,
        /// The row key.
        row_key: Vec<u8>,
        /// `family:qualifier`.
        column: String,
        /// Why.
        #[source]
        source: CodecError,
    },
    /// A value is larger than Bigtable accepts for one cell.
    #[non_exhaustive]
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
    #[non_exhaustive]
    #[error("row \"{}\" of table `{table}` is over Bigtable's limits: {limit}; split the data over several rows", row_key.escape_ascii())]
    RowTooLarge {
        /// The table.
        table: String,
        /// The row key.
        row_key: Vec<u8>,
        /// Which limit, and by how much.
        limit: RowLimit,
    },
    /// A scan range whose start is after its end, refused before anything
    /// is sent (Bigtable would answer `INVALID_ARGUMENT`). Give ranges in
    /// ascending key order, reverse scans included: `Scan::range(a..b)`
    /// with `a <= b`, then `.reversed()` for descending order.
    #[non_exhaustive]
    #[error("scan range starts at \"{}\", after its end \"{}\"; give the range as start..end with start <= end (for rows in descending order, keep the range ascending and call .reversed())", start.escape_ascii(), end.escape_ascii())]
    InvalidRange {
        /// The range's start key.
        start: Vec<u8>,
        /// The range's end key.
        end: Vec<u8>,
    },
    /// An expiry window (`Table::expired`, `ops::expired`) that is not a
    /// span of the past: its start after its end, or its end after the
    /// clock's now (rows dying later in it would be missed by the next
    /// window, which starts at its end). Refused before anything is read.
    #[non_exhaustive]
    #[error("expiry window from {from} to {to} is not a span of the past (now is {now}): give from <= to <= now, and read the rest of the time in the next window")]
    InvalidWindow {
        /// Its start.
        from: DateTime<Utc>,
        /// Its end (exclusive).
        to: DateTime<Utc>,
        /// The clock's now.
        now: DateTime<Utc>,
    },
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
    #[non_exhaustive]
    #[error("updating row \"{}\" of table `{table}` would clear every cell that keeps it live, and a read would find no row; nothing was written: delete the row instead, or set a field", row_key.escape_ascii())]
    UpdateLeavesNoRow {
        /// The table.
        table: String,
        /// The row key.
        row_key: Vec<u8>,
    },
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
    #[non_exhaustive]
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
    #[non_exhaustive]
    #[error("table `{table}` does not exist; call ensure_schema to create it")]
    TableNotFound {
        /// The table.
        table: String,
    },
    /// The table has no family of that name. The message lists the
    /// families it has.
    #[non_exhaustive]
    #[error("table `{table}` has no family `{family}`; its families are: {}", if families.is_empty() { "none".to_owned() } else { families.join(", ") })]
    FamilyNotFound {
        /// The table.
        table: String,
        /// The family asked for.
        family: String,
        /// The families the table has, in name order.
        families: Vec<String>,
    },
    /// A shard (`index/count`) that does not exist, or more parts than
    /// [`crate::ops::MAX_PARTS`]: refused before anything is sent.
    #[non_exhaustive]
    #[error("{problem}")]
    InvalidShard {
        /// What is wrong with it.
        problem: crate::model::shards::ShardProblem,
    },
    /// Switching a family that holds cells to `max_age = 1s` would delete them.
    #[non_exhaustive]
    #[error("refusing to set family `{family}` of table `{table}` to max_age = 1s: it holds cells with ordinary timestamps that would all be deleted at the next compaction; migrate them first, or pass force to accept the loss")]
    WouldDeleteData {
        /// The table.
        table: String,
        /// The family.
        family: String,
    },
    /// A TTL policy written as text (`one-second`, `default=2d`) did not parse.
    #[non_exhaustive]
    #[error("invalid policy `{spec}`: {problem}")]
    InvalidPolicy {
        /// The text given.
        spec: String,
        /// What is wrong, and what is accepted.
        problem: PolicyProblem,
    },
    /// A family migration could not start or did not verify. The source
    /// family is never changed; fix the cause and run it again (copying a
    /// row twice is harmless).
    #[non_exhaustive]
    #[error("migration in table `{table}`: {problem}")]
    Migration {
        /// The table.
        table: String,
        /// What went wrong, and what to do.
        problem: MigrationProblem,
    },
    /// A migration's target family is a map field's: a map's family holds
    /// one cell per entry and nothing else, so copied columns (and their
    /// shadow column) would read back as entries. Nothing was written.
    #[non_exhaustive]
    #[error("migration in table `{table}`: target family `{family}` holds the entries of map field `{field}`, where copied columns would read back as entries; migrate into the struct's own family, and write entries with put_entry")]
    MigrateIntoMap {
        /// The table.
        table: String,
        /// The target family.
        family: String,
        /// The map field whose family it is.
        field: String,
    },
    /// Connecting to Bigtable failed, or the connection is misconfigured
    /// (the cause says which). A malformed host or endpoint, where nothing
    /// was tried, says so and what is wrong (`malformed Bigtable address
    /// (emulator at "a b:1"): the host contains white space`), the form
    /// expected being the cause.
    #[non_exhaustive]
    #[error("{}", connect_message(target, &**source))]
    Connect {
        /// Where we tried to connect.
        target: String,
        /// Why it failed.
        #[source]
        source: BoxError,
    },
    /// A [`crate::ConnectionBuilder`] setting outside the range it allows
    /// (a pool of 0 or of more than
    /// [`crate::ConnectionBuilder::MAX_POOL_SIZE`] connections, a
    /// keep-alive or a retry policy duration out of its bounds), refused by
    /// `connect` before anything is made: left alone it would panic inside
    /// a dependency or break every call. The message says the range.
    #[non_exhaustive]
    #[error("connection setting `{setting}` = {value} is out of range: {allowed}")]
    InvalidSetting {
        /// The setting (`pool_size`, `keep_alive.interval`,
        /// `retry.deadline`, …).
        setting: &'static str,
        /// The value given.
        value: String,
        /// The range allowed.
        allowed: String,
    },
    /// A connection was asked to send credentials over plaintext HTTP/2
    /// (an `http://` endpoint): bearer tokens would travel in the clear.
    /// Use an `https://` endpoint, or drop the credentials when the endpoint
    /// is an emulator.
    #[non_exhaustive]
    #[error("refusing to send credentials to {endpoint} in plaintext: use an https:// endpoint, or no credentials for an emulator")]
    PlaintextWithCredentials {
        /// The `http://` endpoint.
        endpoint: String,
    },
    /// The answer to a write that is not idempotent was lost (a timeout, a
    /// broken connection), or Bigtable answered with a status that does not
    /// say whether it applied it (`UNAVAILABLE`, `ABORTED`, …): a
    /// conditional write, a read-modify-write, or a raw write holding a
    /// `SetCell` at the server's time, an `AddToCell` or a `MergeToCell`.
    /// It may or may not have been applied, and it is not re-sent blindly.
    /// Read the row to find out. The message says which, how many attempts
    /// were made and how many Bigtable answered, and when the library cut
    /// the attempt itself at the write's horizon, which setting to change.
    #[non_exhaustive]
    #[error("{}", outcome_message(table, row_key, *attempts, *answered, *horizon, &**source))]
    OutcomeUnknown {
        /// The table.
        table: String,
        /// The row.
        row_key: Vec<u8>,
        /// Attempts sent, the first included (a conditional write sends
        /// another only once a read proved the last was not applied).
        attempts: u32,
        /// How many of them Bigtable answered.
        answered: u32,
        /// The write's horizon, when the library cut the last attempt
        /// there itself, before any answer
        /// ([`WriteOptions::horizon`](crate::writer::WriteOptions::horizon)):
        /// a link slower than that needs a longer one.
        horizon: Option<Duration>,
        /// What ended the attempt.
        #[source]
        source: BoxError,
    },
    /// Other writes to the row kept changing it between a read and the
    /// conditional write built on it; given up after `attempts` tries.
    #[non_exhaustive]
    #[error("row \"{}\" of table `{table}` kept changing under {attempts} conditional writes; try again later", row_key.escape_ascii())]
    Conflict {
        /// The table.
        table: String,
        /// The row.
        row_key: Vec<u8>,
        /// Tries made.
        attempts: u32,
    },
    /// An increment of a counter in a row that is not live, in a struct with
    /// required fields: the increment cannot make a whole row (it has no
    /// value for them), and a counter alone would be a row no read shows.
    #[non_exhaustive]
    #[error("row \"{}\" of table `{table}` is not live: a counter counts only in a live row of a struct with required fields; write the row first (put or insert_if_absent)", row_key.escape_ascii())]
    NoLiveRow {
        /// The table.
        table: String,
        /// The row.
        row_key: Vec<u8>,
    },
    /// A partial update tried to clear a field that is neither an `Option`
    /// nor `#[bigtable(default)]`: a row without it would no longer decode.
    #[non_exhaustive]
    #[error("field `{field}` of table `{table}` is required: only an `Option` or `#[bigtable(default)]` field can be cleared; set it instead")]
    RequiredField {
        /// The table.
        table: String,
        /// The field.
        field: &'static str,
    },
    /// A multi-row write left some rows unwritten (or with an unknown
    /// outcome); every other row was written. Retrying the whole write is
    /// safe: every mutation carries explicit timestamps, so writing a row
    /// twice stores the same cells.
    #[non_exhaustive]
    #[error("{} of {} rows of table `{table}` were not written (or not surely){}; retrying the write is safe", failed.len(), failed.len() + written, first_failures(failed))]
    PartialWrite {
        /// The table.
        table: String,
        /// How many rows were written.
        written: usize,
        /// Each row not written, with its key as sent and why.
        failed: Vec<FailedRow>,
    },
    /// A parameter of a GoogleSQL query that the prepared query cannot
    /// take: a name it did not declare, a value of another type, or one
    /// it declared and was given no value. Raised before anything is sent.
    #[non_exhaustive]
    #[error("query parameter `@{name}`: {problem}")]
    QueryParam {
        /// The parameter, without its `@`.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Bigtable's answer to a GoogleSQL query cannot be read: metadata
    /// without columns or with a type this library does not know, a batch
    /// whose checksum does not match, values that do not fit their
    /// column's type, an incomplete row, a stream that ended without
    /// making its last values final. No row of the batch at fault is
    /// handed out; [`Error::code`] is [`Code::Internal`], as in Google's
    /// clients, and it is not retried.
    #[non_exhaustive]
    #[error("Bigtable's answer to the query cannot be read: {problem}")]
    QueryResponse {
        /// What is wrong, naming the column where one is at fault.
        problem: String,
    },
    /// A value of a query's row read as a Rust type it is not
    /// ([`crate::data::SqlRow::get`]), or a column the query does not have.
    #[non_exhaustive]
    #[error("column `{column}` of the query: {problem}")]
    QueryColumn {
        /// The column's name (`#index` for a position past the last).
        column: String,
        /// What is wrong.
        problem: String,
    },
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
    #[non_exhaustive]
    #[error("{}", server_message(table, row_key.as_deref(), *code, Attempts { count: *attempts, elapsed: *elapsed, retries_exhausted: *retries_exhausted }, reason.as_deref(), source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))))]
    Server {
        /// The table.
        table: String,
        /// The row key involved, where there is one.
        row_key: Option<Vec<u8>>,
        /// The gRPC status code of the last attempt.
        code: Code,
        /// Attempts made, the first included.
        attempts: u32,
        /// How long the attempts took, delays between them included.
        elapsed: Duration,
        /// Whether the error was worth retrying and the retry budget (attempts
        /// or deadline) ran out; `false` for an error that is final at once.
        retries_exhausted: bool,
        /// What Bigtable said when it answered (its status message:
        /// `unknown family "c"`), part of the message; `None` when nothing
        /// answered or it said nothing.
        reason: Option<String>,
        /// The last attempt's failure under the reason: the transport's
        /// error, or why nothing answered.
        #[source]
        source: Option<BoxError>,
    },
}

/// The `table` field of `$error` (a `&Error` or a `&mut Error`), for every
/// variant whose table is always named (`MissingExpiry`'s is optional):
/// one list for [`Error::table`] and [`Error::in_table`].
macro_rules! named_table {
    ($error:expr) => {
        match $error {
            Error::EmptyRowKey { table }
            | Error::RowKeyTooLong { table, .. }
            | Error::BadRowKey { table, .. }
            | Error::TimestampOutOfRange { table, .. }
            | Error::Decode { table, .. }
            | Error::RowTooLarge { table, .. }
            | Error::SchemaDrift { table, .. }
            | Error::TableNotFound { table }
            | Error::FamilyNotFound { table, .. }
            | Error::WouldDeleteData { table, .. }
            | Error::Migration { table, .. }
            | Error::MigrateIntoMap { table, .. }
            | Error::OutcomeUnknown { table, .. }
            | Error::Conflict { table, .. }
            | Error::NoLiveRow { table, .. }
            | Error::RequiredField { table, .. }
            | Error::PartialWrite { table, .. }
            | Error::Server { table, .. } => Some(table),
            _ => None,
        }
    };
}

impl Error {
    /// The same error, naming table `name`: what a handle renamed with
    /// [`crate::Table::with_name`] applies to the errors the struct's code
    /// builds (the derive's key and decode code knows only the struct's
    /// `#[bigtable(table = ...)]`).
    #[must_use]
    pub(crate) fn in_table(mut self, name: &str) -> Self {
        if let Error::MissingExpiry { table: Some(table) } = &mut self {
            name.clone_into(table);
        }
        if let Some(table) = named_table!(&mut self) {
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
            Error::Server { code, .. } => Some(*code),
            Error::QueryResponse { .. } => Some(Code::Internal),
            Error::OutcomeUnknown { source, .. } => {
                source.downcast_ref::<Error>().and_then(Error::code)
            }
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
            Error::Server { code, .. } => code.is_transient(),
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
        matches!(
            self,
            Error::Server {
                retries_exhausted: true,
                ..
            }
        )
    }

    /// The table the error is about, where it names one.
    #[must_use]
    pub fn table(&self) -> Option<&str> {
        match self {
            Error::MissingExpiry { table } => table.as_deref(),
            _ => named_table!(self).map(String::as_str),
        }
    }

    /// The row key the error is about, where it names one (bytes, as
    /// stored).
    #[must_use]
    pub fn row_key(&self) -> Option<&[u8]> {
        match self {
            Error::BadRowKey { row_key, .. }
            | Error::TimestampOutOfRange { row_key, .. }
            | Error::Decode { row_key, .. }
            | Error::RowTooLarge { row_key, .. }
            | Error::OutcomeUnknown { row_key, .. }
            | Error::Conflict { row_key, .. }
            | Error::NoLiveRow { row_key, .. } => Some(row_key),
            Error::Server { row_key, .. } => row_key.as_deref(),
            _ => None,
        }
    }
}

/// What overflowed in [`Error::ExpiryOutOfRange`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Overflow {
    /// A timestamp (µs since the epoch) no date can stand for.
    Timestamp {
        /// The timestamp.
        micros: i64,
    },
    /// A duration too long to count in microseconds.
    Duration {
        /// The duration.
        duration: TimeDelta,
    },
    /// A timestamp moved by a duration, past what a timestamp can hold.
    Sum {
        /// The timestamp (µs since the epoch).
        micros: i64,
        /// The duration added (negative: subtracted).
        by: TimeDelta,
    },
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Overflow::Timestamp { micros } => write!(f, "{micros} µs since the epoch"),
            Overflow::Duration { duration } => {
                write!(f, "duration {} overflows microseconds", human(*duration))
            }
            Overflow::Sum { micros, by } => {
                write!(f, "{micros} µs + {} overflows", human(*by))
            }
        }
    }
}

/// What did not match in [`Error::BadRowKey`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyProblem {
    /// The key does not split into the declared number of key fields.
    Parts {
        /// Key fields declared.
        expected: usize,
        /// The separator joining them.
        separator: String,
        /// Parts found.
        found: usize,
    },
    /// One key field's bytes do not decode into its type.
    Field {
        /// The key field.
        field: &'static str,
        /// Why.
        source: CodecError,
    },
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyProblem::Parts {
                expected,
                separator,
                found,
            } => write!(
                f,
                "expected {expected} parts joined by {separator:?}, found {found}"
            ),
            KeyProblem::Field { field, source } => write!(f, "key field `{field}`: {source}"),
        }
    }
}

/// Which of Bigtable's per-row limits [`Error::RowTooLarge`] exceeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RowLimit {
    /// Mutations in one row's write.
    Mutations {
        /// Mutations the write would send.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Bytes in one row.
    Bytes {
        /// Bytes the write would store.
        bytes: usize,
        /// The limit.
        max: usize,
    },
}

impl fmt::Display for RowLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowLimit::Mutations { count, max } => write!(
                f,
                "{count} mutations, over Bigtable's limit of {max} per row"
            ),
            RowLimit::Bytes { bytes, max } => {
                write!(f, "{bytes} bytes, over Bigtable's limit of {max} per row")
            }
        }
    }
}

/// What is wrong with a policy in [`Error::InvalidPolicy`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyProblem {
    /// Neither `one-second` nor `default=DURATION`.
    UnknownForm,
    /// `default=` with a duration that does not parse.
    BadDuration {
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyProblem::UnknownForm => {
                f.write_str("expected `one-second` or `default=DURATION` (e.g. `default=2d`)")
            }
            PolicyProblem::BadDuration { reason } => f.write_str(reason),
        }
    }
}

/// Why [`Error::Migration`] stopped a migration (the source family is
/// never changed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MigrationProblem {
    /// The source and the target are the same family.
    SameFamily,
    /// One-second expiration has no default TTL, and none was given.
    NoTtl,
    /// The source family has a column named as the shadow column.
    ShadowColumnTaken {
        /// The source family.
        family: String,
        /// The shadow column's qualifier.
        qualifier: String,
    },
    /// The source family does not exist.
    NoSourceFamily {
        /// The family.
        family: String,
    },
    /// The target family exists with another garbage-collection rule.
    TargetRule {
        /// The target family.
        family: String,
        /// Its rule, described (`none` when it vanished).
        live: String,
        /// The policy's rule, described.
        expected: String,
    },
    /// The checkpoint to resume from was taken in another project or
    /// instance than the connection's: resuming it here would copy only
    /// the rows after its last key and fail the final check.
    OtherInstance {
        /// Where the checkpoint was taken (`projects/P/instances/I`).
        checkpoint: String,
        /// Where this run's connection goes.
        connection: String,
    },
    /// The checkpoint's last row key lies outside its own part of the
    /// key space: it is not a checkpoint of that part (another shard's, or
    /// edited), and resuming it would copy the part twice or not at all.
    CheckpointOutsidePart {
        /// The checkpoint's last row key.
        last_row_key: Vec<u8>,
        /// Its part, as `I/N ["start", "end")`.
        part: String,
        /// Past the part's end (else before its start).
        past: bool,
    },
    /// The final count check did not match.
    Verification {
        /// Source rows still alive under the policy.
        expected_rows: u64,
        /// Source cells still alive under the policy.
        expected_cells: u64,
        /// Live rows of the target.
        target_rows: u64,
        /// Live cells of the target.
        target_cells: u64,
    },
}

impl fmt::Display for MigrationProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MigrationProblem::SameFamily => f.write_str("--from and --to name the same family"),
            MigrationProblem::NoTtl => f.write_str(
                "one-second expiration has no default TTL: say how long copied cells live (--ttl)",
            ),
            MigrationProblem::ShadowColumnTaken { family, qualifier } => write!(
                f,
                "source family `{family}` has a column `{qualifier}`, the shadow column's name: pass another (--written-at)"
            ),
            MigrationProblem::NoSourceFamily { family } => {
                write!(f, "source family `{family}` does not exist")
            }
            MigrationProblem::TargetRule {
                family,
                live,
                expected,
            } => write!(
                f,
                "target family `{family}` has the rule {live}, not the policy's {expected}; apply the policy to it first"
            ),
            MigrationProblem::OtherInstance {
                checkpoint,
                connection,
            } => write!(
                f,
                "the checkpoint was taken in `{checkpoint}`, this run is connected to `{connection}`: \
                 resume it connected to `{checkpoint}` (--project, --instance), or migrate `{connection}` \
                 with a checkpoint of its own"
            ),
            MigrationProblem::CheckpointOutsidePart {
                last_row_key,
                part,
                past,
            } => write!(
                f,
                "the checkpoint's last row \"{}\" lies {} its part {part}, so it is not that part's checkpoint: \
                 resume with the part's own checkpoint, or start the part again without --resume",
                last_row_key.escape_ascii(),
                if *past { "past" } else { "before" }
            ),
            MigrationProblem::Verification {
                expected_rows,
                expected_cells,
                target_rows,
                target_cells,
            } => write!(
                f,
                "verification failed: the source implies {expected_rows} rows and {expected_cells} cells alive under the policy, \
                 the target holds {target_rows} rows and {target_cells} cells; the source is untouched, run the migration again"
            ),
        }
    }
}

/// One row a multi-row write did not (surely) write.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FailedRow {
    /// The row key, as sent: write it again with these bytes.
    pub row_key: Vec<u8>,
    /// The status Bigtable gave the row; `None` when no answer came for it
    /// (the request failed, timed out or was not sent), so the row may or
    /// may not be stored.
    pub code: Option<Code>,
    /// Why, in words.
    pub reason: String,
}

impl FailedRow {
    /// A row that failed with `code` (or no answer) for `reason`.
    #[must_use]
    pub fn new(row_key: Vec<u8>, code: Option<Code>, reason: impl Into<String>) -> Self {
        Self {
            row_key,
            code,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for FailedRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\": {}", self.row_key.escape_ascii(), self.reason)
    }
}

/// The first few failed rows, for a one-line message.
fn first_failures(failed: &[FailedRow]) -> String {
    let shown: Vec<String> = failed.iter().take(3).map(ToString::to_string).collect();
    if shown.is_empty() {
        String::new()
    } else {
        format!(": {}", shown.join("; "))
    }
}

/// The message of an [`Error::OutcomeUnknown`]: why the outcome is
/// unknown (the library's cut at the horizon, a lost answer, an answer
/// that does not tell), and the attempts.
fn outcome_message(
    table: &str,
    row_key: &[u8],
    attempts: u32,
    answered: u32,
    horizon: Option<Duration>,
    source: &(dyn std::error::Error + 'static),
) -> String {
    let why = match (horizon, no_answer(source)) {
        (Some(horizon), _) => format!(
            "the library cut its attempt at the write's horizon, {horizon:?} after sending it, \
             before any answer (WriteOptions::horizon: on a link slower than that, set a \
             longer one with WriteOptions::with_horizon)"
        ),
        (None, Some(why)) => format!("its answer was lost ({why})"),
        (None, None) => {
            let answer = match source.downcast_ref::<Error>() {
                Some(Error::Server { code, .. }) => code.to_string(),
                _ => source.to_string(),
            };
            format!("Bigtable answered {answer}, which does not say whether it applied it")
        }
    };
    let plural = if attempts == 1 { "" } else { "s" };
    let answered = match answered {
        0 => "none answered".to_owned(),
        n if n == attempts && n == 1 => "answered".to_owned(),
        n => format!("{n} answered"),
    };
    format!(
        "the write to row \"{}\" of table `{table}` may or may not have been applied: \
         {why} ({attempts} attempt{plural}, {answered}); read the row to find out",
        row_key.escape_ascii()
    )
}

/// "1 attempt" / "10 attempts over 23.1s, retries exhausted".
#[derive(Clone, Copy)]
struct Attempts {
    count: u32,
    elapsed: Duration,
    retries_exhausted: bool,
}

impl fmt::Display for Attempts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.count == 1 { "" } else { "s" };
        write!(f, "{} attempt{plural}", self.count)?;
        // A call refused before anything went out (no time left, no
        // token) has no time of its own to tell.
        if !self.elapsed.is_zero() {
            write!(f, " over {:.1?}", self.elapsed)?;
        }
        if self.retries_exhausted {
            f.write_str(", retries exhausted")?;
        }
        Ok(())
    }
}

/// A gRPC status code, as Bigtable answers it (the codes of
/// `google.rpc.Code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// Not an error.
    Ok,
    /// The call was cancelled.
    Cancelled,
    /// An unknown error (also any code this library does not know).
    Unknown,
    /// The request is invalid.
    InvalidArgument,
    /// The deadline passed before the call finished.
    DeadlineExceeded,
    /// The table (or instance) does not exist.
    NotFound,
    /// What was to be created exists.
    AlreadyExists,
    /// The credentials lack a permission.
    PermissionDenied,
    /// Throttled or out of quota: wait and retry.
    ResourceExhausted,
    /// The system is not in a state the call needs.
    FailedPrecondition,
    /// Aborted, usually by a conflict.
    Aborted,
    /// Out of the valid range.
    OutOfRange,
    /// Not implemented by the server (the emulator lacks some calls).
    Unimplemented,
    /// An internal error.
    Internal,
    /// The service is unavailable or the connection failed.
    Unavailable,
    /// Unrecoverable data loss.
    DataLoss,
    /// No valid credentials.
    Unauthenticated,
}

impl Code {
    /// Whether the code says the request may succeed if sent again (for
    /// an idempotent request): `UNAVAILABLE`, `DEADLINE_EXCEEDED`,
    /// `ABORTED`, and `RESOURCE_EXHAUSTED` (Bigtable's answer when it
    /// throttles a client: waiting and retrying is what it asks for).
    #[must_use]
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::ResourceExhausted
        )
    }

    /// The code numbered `code` in `google.rpc.Code` ([`Code::Unknown`] for
    /// a number it does not define).
    #[must_use]
    pub fn from_i32(code: i32) -> Self {
        const CODES: [Code; 17] = [
            Code::Ok,
            Code::Cancelled,
            Code::Unknown,
            Code::InvalidArgument,
            Code::DeadlineExceeded,
            Code::NotFound,
            Code::AlreadyExists,
            Code::PermissionDenied,
            Code::ResourceExhausted,
            Code::FailedPrecondition,
            Code::Aborted,
            Code::OutOfRange,
            Code::Unimplemented,
            Code::Internal,
            Code::Unavailable,
            Code::DataLoss,
            Code::Unauthenticated,
        ];
        usize::try_from(code)
            .ok()
            .and_then(|i| CODES.get(i).copied())
            .unwrap_or(Code::Unknown)
    }

    /// The code's name as gRPC spells it (`UNAVAILABLE`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// A cell of a `#[derive(CellCodec)]` enum holds a name or number that
    /// is none of its variants: written by a newer version of the enum, or
    /// by hand. Add the variant (or a `rename`), or rewrite the cell.
    #[error("`{enum_name}` has no variant stored as {value}; add one (or a `rename`) to the enum, or rewrite the cell")]
    UnknownVariant {
        /// The enum.
        enum_name: &'static str,
        /// The stored value: a quoted, escaped name or a number.
        value: String,
    },
    /// A user codec's own error.
    #[error("{0}")]
    Custom(String),
}

/// The result type of the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: Code, retries_exhausted: bool) -> Error {
        Error::Server {
            table: "t".into(),
            row_key: Some(b"k".to_vec()),
            code,
            attempts: 3,
            elapsed: Duration::from_secs(1),
            retries_exhausted,
            reason: None,
            source: Some("cause".into()),
        }
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
        assert!(Error::TableNotFound { table: "t".into() }.is_not_found());
        let unknown = Error::OutcomeUnknown {
            table: "t".into(),
            row_key: b"k".to_vec(),
            attempts: 1,
            answered: 1,
            horizon: None,
            source: Box::new(server(Code::Unavailable, false)),
        };
        assert!(unknown.is_outcome_unknown() && !unknown.is_retryable());
        assert_eq!(unknown.code(), Some(Code::Unavailable));
        let conflict = Error::Conflict {
            table: "t".into(),
            row_key: b"k".to_vec(),
            attempts: 8,
        };
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
            Error::Encode {
                field: "url",
                source: CodecError::Json("key must be a string".into()),
            },
            Error::Decode {
                table: "clicks".into(),
                row_key: b"c\xff1".to_vec(),
                column: "c:url".into(),
                source: CodecError::InvalidUtf8("invalid utf-8 sequence".into()),
            },
            Error::Server {
                table: "clicks".into(),
                row_key: Some(b"c1".to_vec()),
                code: Code::Unavailable,
                attempts: 10,
                elapsed: Duration::from_millis(23_100),
                retries_exhausted: true,
                reason: None,
                source: Some(Box::new(status)),
            },
            Error::Connect {
                target: "emulator at ::::".into(),
                source: "invalid authority".into(),
            },
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

    /// What the server said is part of the message, and not repeated by
    /// the chain under it.
    #[test]
    fn a_servers_reason_is_in_the_message_once() {
        let (reason, source) =
            reason_and_source(Box::new(Cause::new("unknown family \"c\"".into(), None)));
        let err = Error::Server {
            table: "nofamily_t".into(),
            row_key: Some(b"c1".to_vec()),
            code: Code::Unknown,
            attempts: 1,
            elapsed: Duration::from_millis(3),
            retries_exhausted: false,
            reason,
            source,
        };
        assert_eq!(
            chain(&err),
            vec!["Bigtable answered UNKNOWN for table `nofamily_t`, row \"c1\": unknown family \"c\" \
                  (1 attempt over 3.0ms)"
                .to_owned()]
        );
    }

    #[test]
    fn a_call_never_sent_tells_no_time_it_did_not_take() {
        let err = Error::Server {
            table: "visits".into(),
            row_key: Some(b"v1".to_vec()),
            code: Code::DeadlineExceeded,
            attempts: 1,
            elapsed: Duration::ZERO,
            retries_exhausted: false,
            reason: None,
            source: Some(Box::new(Cause::new(
                "no time left for CheckAndMutateRow before the deadline".into(),
                None,
            ))),
        };
        assert_eq!(
            err.to_string(),
            "Bigtable answered DEADLINE_EXCEEDED for table `visits`, row \"v1\" (1 attempt)"
        );
        let err = Error::Server {
            table: "visits".into(),
            row_key: Some(b"v1".to_vec()),
            code: Code::DeadlineExceeded,
            attempts: 1,
            elapsed: Duration::ZERO,
            retries_exhausted: false,
            reason: None,
            source: Some(Box::new(
                Cause::new(
                    "no time left for CheckAndMutateRow before the deadline".into(),
                    None,
                )
                .never_sent(),
            )),
        };
        assert_eq!(
            err.to_string(),
            "not sent to Bigtable for table `visits`, row \"v1\": no time left for \
             CheckAndMutateRow before the deadline (DEADLINE_EXCEEDED, 1 attempt)"
        );
    }

    #[test]
    fn a_refused_connection_is_no_answer_and_a_status_is_an_answer() {
        let server = |source: BoxError| {
            let (reason, source) = reason_and_source(source);
            Error::Server {
                table: "clicks".into(),
                row_key: Some(b"c1".to_vec()),
                code: Code::Unavailable,
                attempts: 10,
                elapsed: Duration::from_secs(28),
                retries_exhausted: true,
                reason,
                source,
            }
        };
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let transport = Cause::new("UNAVAILABLE: tcp connect error".into(), Some(&refused));
        let err = server(Box::new(transport));
        assert_eq!(
            err.to_string(),
            "no answer from Bigtable for table `clicks`, row \"c1\": connection refused \
             (UNAVAILABLE, 10 attempts over 28.0s, retries exhausted)"
        );
        // The raw layer's bulk write keeps only its rows' reasons, as text.
        let err = server("outcome unknown: Connection refused (os error 111)".into());
        assert!(
            err.to_string().starts_with("no answer from Bigtable"),
            "{err}"
        );
        let answered = server(Box::new(Cause::new("UNAVAILABLE: overloaded".into(), None)));
        assert!(
            answered
                .to_string()
                .starts_with("Bigtable answered UNAVAILABLE for table `clicks`"),
            "{answered}"
        );
    }

    #[test]
    fn a_malformed_address_says_why_and_that_nothing_was_tried() {
        let err = Error::Connect {
            target: "emulator at \"not a host\"".into(),
            source: Box::new(BadAddress {
                problem: "the host contains white space".into(),
                expected: "expected HOST:PORT",
            }),
        };
        assert_eq!(
            chain(&err),
            [
                "malformed Bigtable address (emulator at \"not a host\"): the host contains white space",
                "expected HOST:PORT"
            ]
        );
    }

    /// An error whose `Display` repeats its source's, as tonic's and
    /// hyper's connection errors do.
    #[derive(Debug)]
    struct Level(&'static str, Option<Box<Level>>);

    impl fmt::Display for Level {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Level {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn a_cause_keeps_each_level_once() {
        let refused = Level("Connection refused (os error 111)", None);
        let hyper = Level("tcp connect error", Some(Box::new(refused)));
        let tonic = Level("tcp connect error", Some(Box::new(hyper)));
        let transport = Level("transport error", Some(Box::new(tonic)));
        let cause = Cause::new("UNAVAILABLE: tcp connect error".into(), Some(&transport));
        assert_eq!(
            chain(&cause),
            [
                "UNAVAILABLE: tcp connect error",
                "transport error",
                "Connection refused (os error 111)"
            ]
        );
        assert_eq!(
            cause.chain(),
            "UNAVAILABLE: tcp connect error: transport error: Connection refused (os error 111)"
        );
        assert_eq!(
            Cause::of(&transport).chain(),
            "transport error: tcp connect error: Connection refused (os error 111)"
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
