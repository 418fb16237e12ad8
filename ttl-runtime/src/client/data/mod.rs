//! The raw data layer: Bigtable's data API on any table, by row key and
//! column family, without a `#[derive(BigtableRow)]` struct, through the
//! same retry, deadline and resumption machinery as the typed
//! [`Table`](crate::Table), which is built on it.
//!
//! Use it for tables no struct manages, for tools and migrations, and for
//! what the typed layer does not express. Nothing here adds timestamps or
//! filters: a `SetCell` is written as given (a server timestamp, `-1`,
//! included), a read returns every cell the filter lets through, expired or
//! not.
//!
//! Its types are this library's own, each saying what one of Bigtable's v2
//! messages says: [`RawTable`], [`ReadRows`] and its [`RowFilter`], the
//! [`Row`]s of [`Cell`]s it returns, the [`Mutation`]s of a row or of an
//! [`Entry`] of `MutateRows` (failed ones an [`EntryError`]),
//! [`ReadModifyWriteRule`], [`KeySample`]; for GoogleSQL queries, [`Sql`]
//! and its [`SqlRow`]s of [`SqlValue`]s. No generated type is part of the
//! API, so a new release of the crate they come from changes nothing here.
//! The typed layer's values come here as these types: a typed read's
//! [`ReadFilter`] is a [`RowFilter`] (`From`), a typed write's mutations
//! are [`mutations_of`] it, or an [`Entry`] (`From`).
//!
//! What each call does when something fails:
//!
//! | call | retried | on |
//! |---|---|---|
//! | [`RawTable::read_rows`], [`RawTable::read_row`] | yes, resumed after the last row delivered or the server's last scanned key, the row limit reduced | `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`, `RESOURCE_EXHAUSTED`, transport failures, timeouts, any status with `RetryInfo` |
//! | [`RawTable::mutate_row`] | yes, whole, when idempotent; otherwise sent once, a lost answer [`Error::OutcomeUnknown`] | the same |
//! | [`RawTable::mutate_rows`] | yes, only the idempotent entries not written; the others reported with `answered: false` | the same, per entry and per request |
//! | [`RawTable::sample_row_keys`] | yes, whole | the same |
//! | [`RawTable::check_and_mutate_row`], [`RawTable::read_modify_write_row`] | **never** (not idempotent) | a lost answer is [`Error::OutcomeUnknown`] |
//! | [`Sql::prepare`], [`Sql::execute`], [`Sql::query`] (GoogleSQL) | yes, a broken stream resumed from the last resume token; an expired plan prepared again before the first token | `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`, transport failures, timeouts, `RetryInfo` (not `RESOURCE_EXHAUSTED` alone, as Google's clients); see [`Sql`] |
//!
//! Idempotent, as Google's clients judge it: a row none of whose mutations
//! is a `SetCell` at the server's time (`-1`), an `AddToCell` or a
//! `MergeToCell` (each would apply again).
//!
//! Every retry sends back the routing cookies (`x-goog-cbt-cookie-*`) the
//! server set on earlier attempts and waits the delay a `RetryInfo` asks
//! for, within the policy's attempts and deadline.
//!
//! ```no_run
//! # async fn run(conn: bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
//! use bigtable_ttl::data::{Mutation, RawTable, ReadRows};
//! use futures_util::TryStreamExt as _;
//!
//! let events = RawTable::new(&conn, "events");
//! let put = Mutation::set_cell("e", "kind", 1_700_000_000_000_000, "click");
//! events.mutate_row("e#0001", vec![put]).await?;
//! let rows: Vec<_> = events.read_rows(ReadRows::range("e#".."e$").limit(100)).try_collect().await?;
//! for row in rows {
//!     println!("{}: {} cells", row.key.escape_ascii(), row.cells.len());
//! }
//! # Ok(()) }
//! ```

mod filter;
mod messages;
pub(crate) mod mutate;
mod mutation;
mod rows;
mod sql;

use std::sync::Arc;
use std::time::Instant;

use futures_util::{Stream, StreamExt as _, TryStreamExt as _};

use crate::client::connection::Connection;
use crate::client::failure::{one_attempt_error, status_error};
use crate::client::read::{read_rows_with, ReadCounters, ReadFailure, ReadOptions};
use crate::client::retry::{retryable_status, Budget, RetryPolicy};
use crate::model::error::{self, Code, Error, Result};
use crate::model::proto::{
    self, mutate_rows_request, CheckAndMutateRowRequest, ReadModifyWriteRowRequest,
    ReadModifyWriteRowResponse, ReadRowsRequest,
};
use crate::wire::builtin_metrics::{status_of, Method};
use crate::wire::codec::EncodedBatch;
use crate::wire::cookies::RoutingCookies;
use crate::wire::merge::{AsMerged, MergedRow, RowSink};
use crate::wire::status::{code_of, not_sent, was_not_sent, was_undecodable};

pub use crate::model::cell::Cell;
pub use crate::model::read_filter::ReadFilter;
pub use filter::RowFilter;
pub use messages::mutations_of;
pub(crate) use mutate::{bump, BatchReport, Unwritten, WriteCounters};
use mutate::{send_batch, WriteOptions};
pub use mutation::{AggregateInput, Entry, Mutation, ReadModifyWriteRule};
pub use rows::{ReadRows, Row};
pub use sql::{
    BoundQuery, FromSql, PreparedQuery, Query, QueryResult, QueryRows, Sql, SqlColumn, SqlRow,
    SqlType, SqlValue, StructField,
};

/// A handle on one table for raw data calls: rows by key, cells by family
/// and qualifier, Bigtable's own mutations and filters. Cheap to clone.
///
/// Reads follow its [`ReadOptions`], writes its write [`RetryPolicy`];
/// both start as the connection's ([`Connection::retry`]).
///
/// Every data call the library makes goes through this type: the typed
/// [`Table`](crate::Table) holds one, and the bulk writer, the
/// [`ops`](crate::ops) and the schema checks read and write through it.
#[derive(Clone)]
pub struct RawTable {
    conn: Connection,
    name: Arc<str>,
    path: Arc<str>,
    read: ReadOptions,
    /// The write policy ([`RawTable::with_write_retry`]) and, for the bulk
    /// writer of a typed table, how it batches.
    write: WriteOptions,
    counters: Arc<ReadCounters>,
    /// The deadline of the call whose steps this handle makes (a typed
    /// table's conditional write, its re-read, …): every request through
    /// it ends by then. `None`: each call keeps its own policy's.
    deadline: Option<Instant>,
}

impl std::fmt::Debug for RawTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTable")
            .field("table", &self.path)
            .field("read", &self.read)
            .field("write", &self.write.retry)
            .finish_non_exhaustive()
    }
}

/// One entry of [`RawTable::mutate_rows`] that was not written, or not
/// surely.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryError {
    /// The entry's index in the request.
    pub index: usize,
    /// Its row key.
    pub row_key: Vec<u8>,
    /// The status Bigtable gave the entry or, when no answer came for it,
    /// the status that ended the request carrying it.
    pub code: Code,
    /// Whether Bigtable answered for this entry. When not, the entry may
    /// or may not have been applied.
    pub answered: bool,
    /// Why, in words.
    pub message: String,
}

/// One answer of `SampleRowKeys` ([`RawTable::sample_row_keys`]): a row
/// key and about how many bytes of the table come before it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeySample {
    /// The row key (empty: the end of the table).
    pub key: Vec<u8>,
    /// About how many bytes of the table sort before it.
    pub offset_bytes: i64,
}

impl RawTable {
    /// A handle on the table `table` (its id) of `conn`'s instance, under
    /// the connection's timeouts and retries.
    #[must_use]
    pub fn new(conn: &Connection, table: &str) -> Self {
        Self::on(conn.clone(), table)
    }

    /// [`RawTable::new`], keeping `conn` (a typed table's own).
    pub(crate) fn on(conn: Connection, table: &str) -> Self {
        let retry = conn.retry();
        Self {
            path: conn.table_path(table).into(),
            conn,
            name: table.into(),
            read: ReadOptions::default().with_retry(retry),
            write: WriteOptions::default().with_retry(retry),
            counters: Arc::default(),
            deadline: None,
        }
    }

    /// The same handle with these timeouts and retries for reads.
    #[must_use]
    pub fn with_read_options(mut self, options: ReadOptions) -> Self {
        self.read = options;
        self
    }

    /// The same handle with these timeouts and retries for writes
    /// (`MutateRow`, `MutateRows`) and the attempt timeout of the calls
    /// never retried.
    #[must_use]
    pub fn with_write_retry(mut self, policy: RetryPolicy) -> Self {
        self.write.retry = policy;
        self
    }

    /// The same handle with these write settings: its write policy and
    /// how a bulk writer on it batches.
    pub(crate) fn with_write_options(mut self, options: WriteOptions) -> Self {
        self.write = options;
        self
    }

    /// The write settings.
    pub(crate) fn write_options(&self) -> &WriteOptions {
        &self.write
    }

    /// The timeouts and retries of reads.
    pub(crate) fn read_options(&self) -> &ReadOptions {
        &self.read
    }

    /// What reads through this handle (and the handles sharing its
    /// counters) met.
    pub(crate) fn counters(&self) -> &Arc<ReadCounters> {
        &self.counters
    }

    /// The deadline of the call this handle makes the steps of, if any.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The connection.
    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The same handle on the table `name` of the same instance, with the
    /// same settings and counters.
    pub(crate) fn renamed(mut self, name: &str) -> Self {
        self.path = self.conn.table_path(name).into();
        self.name = name.into();
        self
    }

    /// The same handle for the steps of one call that must end by
    /// `deadline` (none: each call within its own policy).
    pub(crate) fn within(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// The table's id.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `projects/{project}/instances/{instance}/tables/{table}`.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    // ----- reads ---------------------------------------------------------

    /// The rows `read` asks for, as a stream, sent on first poll. A stream
    /// that breaks, stalls or does not start in time is resumed after the
    /// last row it delivered (or the last key the server said it scanned),
    /// with what is left of the row limit, as the read options say; rows
    /// come once each, in key order (descending for a reversed read), never
    /// more than the limit. A read of no row (an empty key list) sends
    /// nothing.
    ///
    /// # Errors
    /// As the stream's item: [`Error::InvalidRowLimit`] before anything is
    /// sent; [`Error::Server`].
    pub fn read_rows(&self, read: ReadRows) -> impl Stream<Item = Result<Row>> + Send + 'static {
        match read.into_request(self.path.to_string()) {
            Ok(request) => self
                .merged_rows(request)
                .map_ok(Row::from_merged)
                .left_stream(),
            Err(refused) => futures_util::stream::once(async move { Err(refused) }).right_stream(),
        }
    }

    /// The row `key`, as `filter` (if any) lets it through; `None` when no
    /// cell of it passes or it does not exist.
    ///
    /// # Errors
    /// [`Error::Server`].
    pub async fn read_row(
        &self,
        key: impl AsRef<[u8]>,
        filter: Option<RowFilter>,
    ) -> Result<Option<Row>> {
        let mut read = ReadRows::keys([key]).limit(1);
        if let Some(filter) = filter {
            read = read.filter(filter);
        }
        let mut rows = std::pin::pin!(self.read_rows(read));
        rows.try_next().await
    }

    /// The merged rows of `request` (`None`: no row), with the table's
    /// read options: what a typed table decodes.
    pub(crate) fn merged_rows(
        &self,
        request: Option<ReadRowsRequest>,
    ) -> impl Stream<Item = Result<MergedRow>> + Send + 'static {
        let Some(request) = request else {
            return futures_util::stream::empty().left_stream();
        };
        let (rows, failure) = self.merged_rows_failing(request);
        rows.map_err(move |e| failure.error(e)).right_stream()
    }

    /// The merged rows of `request` as `RawTable::merged_rows` reads
    /// them, a failure as the read reports it, and what makes it the error
    /// `merged_rows` returns: for a reader mapping it in a stage of its own.
    pub(crate) fn merged_rows_failing(
        &self,
        request: ReadRowsRequest,
    ) -> (
        impl Stream<Item = std::result::Result<MergedRow, ReadFailure>> + Send + 'static,
        FailureOf,
    ) {
        self.rows_failing(request, AsMerged, false)
    }

    /// [`RawTable::merged_rows_failing`], each row made what `sink` makes
    /// of it; one lying whole in a message read where it lies, when
    /// `places`.
    pub(crate) fn rows_failing<R: RowSink>(
        &self,
        request: ReadRowsRequest,
        sink: R,
        places: bool,
    ) -> (
        impl Stream<Item = std::result::Result<R::Row, ReadFailure>>,
        FailureOf,
    ) {
        let single_key = request
            .rows
            .as_ref()
            .filter(|r| r.row_ranges.is_empty() && r.row_keys.len() == 1)
            .map(|r| r.row_keys[0].clone());
        let failure = FailureOf {
            table: self.name.clone(),
            single_key,
        };
        let rows = read_rows_with(
            self.conn.data_channel().clone(),
            request,
            self.read,
            self.counters.clone(),
            self.deadline,
            sink,
            places,
        );
        (rows, failure)
    }

    // ----- writes --------------------------------------------------------

    /// Apply `mutations` to the row `key`, atomically (`MutateRow`),
    /// retried within the write policy when they are idempotent; sent once
    /// when one is a `SetCell` at the server's time (`-1`), an `AddToCell`
    /// or a `MergeToCell`.
    ///
    /// # Errors
    /// [`Error::Server`]; [`Error::OutcomeUnknown`] when mutations sent
    /// once lost their answer (they may have been applied).
    pub async fn mutate_row(
        &self,
        key: impl Into<Vec<u8>>,
        mutations: Vec<Mutation>,
    ) -> Result<()> {
        let mutations = mutations.into_iter().map(Mutation::into_wire).collect();
        self.mutate_row_wire(key.into(), mutations).await
    }

    /// [`RawTable::mutate_row`] of mutations the crate built as Bigtable's
    /// messages (a typed table's writes).
    pub(crate) async fn mutate_row_wire(
        &self,
        key: Vec<u8>,
        mutations: Vec<proto::Mutation>,
    ) -> Result<()> {
        mutate::mutate_row(
            self.conn.data_channel(),
            &self.name,
            self.path.to_string(),
            key,
            mutations,
            self.write.retry.start_within(self.deadline),
        )
        .await
    }

    /// Apply each entry's mutations to its row (`MutateRows`, one request;
    /// each row atomic, the batch not), retrying the entries that failed
    /// with a retryable status or got no answer, never those written, nor
    /// those that are not idempotent (see [`RawTable::mutate_row`]): such
    /// an entry is reported with its status, or `answered: false` when its
    /// answer was lost.
    ///
    /// Returns one result per entry, in input order.
    ///
    /// # Errors
    /// [`Error::Server`] when the request failed as a whole and no entry
    /// was answered (a missing table, a deadline passed): every entry then
    /// failed with that code.
    pub async fn mutate_rows(
        &self,
        entries: Vec<Entry>,
    ) -> Result<Vec<std::result::Result<(), EntryError>>> {
        self.mutate_rows_wire(entries.into_iter().map(Entry::into_wire).collect())
            .await
    }

    /// [`RawTable::mutate_rows`] of entries the crate built as Bigtable's
    /// messages (a migration's rows).
    pub(crate) async fn mutate_rows_wire(
        &self,
        entries: Vec<mutate_rows_request::Entry>,
    ) -> Result<Vec<std::result::Result<(), EntryError>>> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let mut batch = EncodedBatch::with_capacity(
            entries.len(),
            entries.iter().map(EncodedBatch::size_of).sum(),
        );
        for entry in &entries {
            batch.push(entry);
        }
        self.mutate_rows_encoded(batch).await
    }

    /// [`RawTable::mutate_rows`] of entries the crate encoded itself (the
    /// reaper's deletes), one result per entry.
    pub(crate) async fn mutate_rows_encoded(
        &self,
        batch: EncodedBatch,
    ) -> Result<Vec<std::result::Result<(), EntryError>>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let batch = Arc::new(batch);
        let budget = self.write.retry.start_within(self.deadline);
        let report = self
            .mutate_encoded(batch.clone(), budget, Arc::default())
            .await;
        let mut results: Vec<std::result::Result<(), EntryError>> = vec![Ok(()); batch.len()];
        // An entry sent once whose answer was lost is reported on its own:
        // it may have been applied.
        let unknown_once = report.fatal.is_none()
            && report
                .failed
                .iter()
                .any(|f| f.code.is_none() && !batch.repeatable(f.index));
        if report.written == 0 && !unknown_once && report.failed.iter().all(|f| f.code.is_none()) {
            if let Some(first) = report.failed.first() {
                let retries_exhausted = report.fatal.is_none();
                let source: crate::model::error::BoxError = match report.fatal {
                    Some(status) => Box::new(crate::wire::status::cause_under_code(status)),
                    None => first.why.clone().into(),
                };
                let (reason, source, unanswered) = crate::wire::cause::reason_and_source(source);
                return Err(Error::from(error::Server {
                    table: self.name.to_string(),
                    row_key: None,
                    code: first.request_code,
                    attempts: report.attempts,
                    elapsed: report.elapsed,
                    retries_exhausted,
                    reason,
                    source,
                    unanswered,
                }));
            }
        }
        for failed in report.failed {
            if let Some(slot) = results.get_mut(failed.index) {
                *slot = Err(EntryError {
                    index: failed.index,
                    row_key: batch.key(failed.index),
                    code: failed.code.unwrap_or(failed.request_code),
                    answered: failed.code.is_some(),
                    message: failed.why,
                });
            }
        }
        Ok(results)
    }

    /// `MutateRows` of entries already encoded (the bulk writer's batches,
    /// [`RawTable::mutate_rows`]'s), within `budget`, counted in
    /// `counters`: only the entries not yet written are re-sent, and of
    /// those only the idempotent ones. Owns what it needs, so that it can
    /// be spawned.
    pub(crate) fn mutate_encoded(
        &self,
        batch: Arc<EncodedBatch>,
        budget: Budget,
        counters: Arc<WriteCounters>,
    ) -> impl std::future::Future<Output = BatchReport> + Send + 'static {
        send_batch(
            self.conn.data_channel().clone(),
            self.path.clone(),
            batch,
            budget,
            counters,
        )
    }

    /// Apply `true_mutations` to the row `key` if `predicate` matches any
    /// of its cells (no predicate: if the row has any cell), else
    /// `false_mutations`, atomically (`CheckAndMutateRow`). Whether the
    /// predicate matched. Sent once, never retried.
    ///
    /// # Errors
    /// [`Error::OutcomeUnknown`] when the answer was lost (a timeout, a
    /// broken connection, `UNAVAILABLE`): the row may or may not have been
    /// changed; [`Error::Server`] when Bigtable refused it.
    pub async fn check_and_mutate_row(
        &self,
        key: impl Into<Vec<u8>>,
        predicate: Option<RowFilter>,
        true_mutations: Vec<Mutation>,
        false_mutations: Vec<Mutation>,
    ) -> Result<bool> {
        let started = std::time::Instant::now();
        let key = key.into();
        let wire =
            |mutations: Vec<Mutation>| mutations.into_iter().map(Mutation::into_wire).collect();
        let request = CheckAndMutateRowRequest {
            table_name: self.path.to_string(),
            row_key: key.clone(),
            predicate_filter: predicate.map(RowFilter::into_wire),
            true_mutations: wire(true_mutations),
            false_mutations: wire(false_mutations),
            ..CheckAndMutateRowRequest::default()
        };
        match self.check_and_mutate_once(request).await {
            Ok(matched) => Ok(matched),
            Err(status) => Err(self.single_attempt_error(key, status, started)),
        }
    }

    /// Apply `rules` (appends, increments) to the row `key`, atomically
    /// (`ReadModifyWriteRow`); the cells they wrote, as the row. Sent once,
    /// never retried.
    ///
    /// # Errors
    /// As [`RawTable::check_and_mutate_row`].
    pub async fn read_modify_write_row(
        &self,
        key: impl Into<Vec<u8>>,
        rules: Vec<ReadModifyWriteRule>,
    ) -> Result<Row> {
        let started = std::time::Instant::now();
        let key = key.into();
        let request = ReadModifyWriteRowRequest {
            table_name: self.path.to_string(),
            row_key: key.clone(),
            rules: rules
                .into_iter()
                .map(ReadModifyWriteRule::into_wire)
                .collect(),
            ..ReadModifyWriteRowRequest::default()
        };
        match self.read_modify_write_once(request).await {
            Ok(response) => Ok(response.row.map_or_else(
                || Row {
                    key: key.clone(),
                    cells: Vec::new(),
                },
                Row::from_proto,
            )),
            Err(status) => Err(self.single_attempt_error(key, status, started)),
        }
    }

    /// The error of a call never re-sent: a lost answer is an unknown
    /// outcome, anything else the server's refusal.
    fn single_attempt_error(
        &self,
        key: Vec<u8>,
        status: tonic::Status,
        started: std::time::Instant,
    ) -> Error {
        let unknown = outcome_unknown(&status);
        let answered = u32::from(crate::wire::status::answered(&status));
        let refused = one_attempt_error(&self.name, Some(key.clone()), status, started);
        if unknown {
            Error::from(error::OutcomeUnknown {
                table: self.name.to_string(),
                row_key: key,
                attempts: 1,
                answered,
                horizon: None,
                lost: crate::wire::cause::no_answer(&refused),
                source: Box::new(refused),
            })
        } else {
            refused
        }
    }

    /// The time one attempt of a call never retried may take: the write
    /// policy's attempt timeout, within its deadline and the call's; `None`
    /// when the call's deadline has passed (nothing may be sent).
    fn single_attempt_timeout(&self) -> Option<std::time::Duration> {
        let budget = self.write.retry.start_within(self.deadline);
        (!budget.expired()).then(|| budget.attempt_timeout())
    }

    /// One `CheckAndMutateRow` attempt, within the write policy's attempt
    /// timeout (and deadline, and the call's): whether the predicate
    /// matched, or the status that ended it (a timeout is
    /// `DEADLINE_EXCEEDED`; a request not sent for want of time says so,
    /// see [`outcome_unknown`]).
    pub(crate) async fn check_and_mutate_once(
        &self,
        request: CheckAndMutateRowRequest,
    ) -> std::result::Result<bool, tonic::Status> {
        let Some(timeout) = self.single_attempt_timeout() else {
            return Err(not_sent(
                "no time left for CheckAndMutateRow before the deadline",
            ));
        };
        let channel = self.conn.data_channel();
        // The call's future boxed (here and in the other single-row calls):
        // it is most of the operation's state, which is moved whole into
        // the futures built on it; inline, every move copied it.
        let mut rpc = channel.rpc(&request.table_name, Method::CheckAndMutateRow);
        rpc.attempt_started();
        let answer = rpc
            .within(Box::pin(channel.check_and_mutate_row(request, timeout)))
            .await;
        rpc.ended(status_of(&answer));
        answer.map(|response| response.predicate_matched)
    }

    /// One `ReadModifyWriteRow` attempt, as [`RawTable::check_and_mutate_once`].
    pub(crate) async fn read_modify_write_once(
        &self,
        request: ReadModifyWriteRowRequest,
    ) -> std::result::Result<ReadModifyWriteRowResponse, tonic::Status> {
        let Some(timeout) = self.single_attempt_timeout() else {
            return Err(not_sent(
                "no time left for ReadModifyWriteRow before the deadline",
            ));
        };
        let channel = self.conn.data_channel();
        let mut rpc = channel.rpc(&request.table_name, Method::ReadModifyWriteRow);
        rpc.attempt_started();
        let answer = rpc
            .within(Box::pin(channel.read_modify_write_row(request, timeout)))
            .await;
        rpc.ended(status_of(&answer));
        answer
    }

    /// The row keys `SampleRowKeys` returns for the table, in key order,
    /// each with the bytes stored before it: keys that cut the table into
    /// parts of about equal size. Retried (it only reads) under the read
    /// options' policy.
    ///
    /// # Errors
    /// [`Error::Server`].
    pub async fn sample_row_keys(&self) -> Result<Vec<KeySample>> {
        let mut budget = self.read.retry.start_within(self.deadline);
        let mut cookies = RoutingCookies::default();
        let channel = self.conn.data_channel();
        let mut rpc = channel.rpc(&self.path, Method::SampleRowKeys);
        loop {
            if budget.expired() {
                let status = not_sent("no time left for SampleRowKeys before the deadline");
                rpc.ended(code_of(&status));
                return Err(status_error(&self.name, None, status, Some(&budget)));
            }
            rpc.attempt_started();
            let answer = rpc
                .within(channel.sample_row_keys(&self.path, budget.attempt_timeout(), &mut cookies))
                .await;
            rpc.attempt_ended(status_of(&answer));
            let status = match answer {
                Ok(samples) => {
                    rpc.ended(Code::Ok);
                    return Ok(samples
                        .into_iter()
                        .map(|s| KeySample {
                            key: s.row_key,
                            offset_bytes: s.offset_bytes,
                        })
                        .collect());
                }
                Err(status) => status,
            };
            if !(retryable_status(&status) && budget.wait_after(&status).await) {
                rpc.ended(code_of(&status));
                return Err(status_error(&self.name, None, status, Some(&budget)));
            }
            tracing::debug!(%status, table = %self.name, "retrying SampleRowKeys");
        }
    }
}

/// Whether a failed attempt of a call never retried may have been applied:
/// its answer was lost (a timeout, a transport failure, an unavailable
/// server) rather than an error the server decided on before applying
/// anything, or a request never sent (no time, no access token).
pub(crate) fn outcome_unknown(status: &tonic::Status) -> bool {
    if was_not_sent(status) {
        return false;
    }
    if was_undecodable(status) {
        return true;
    }
    matches!(
        code_of(status),
        Code::DeadlineExceeded
            | Code::Unavailable
            | Code::Unknown
            | Code::Cancelled
            | Code::Aborted
    ) || retryable_status(status)
}

/// What makes a failure of one read (`RawTable::merged_rows_failing`) the
/// error it returns: the table, and the row of a read of one row.
pub(crate) struct FailureOf {
    table: Arc<str>,
    single_key: Option<Vec<u8>>,
}

impl FailureOf {
    /// `failure` as the error the read returns.
    pub(crate) fn error(&self, failure: ReadFailure) -> Error {
        failure.into_error(&self.table, self.single_key.clone())
    }
}
