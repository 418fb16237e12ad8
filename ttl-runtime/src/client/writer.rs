//! Bulk writes: rows batched into `MutateRows` requests within Bigtable's
//! limits, a bounded number of requests in flight, every per-entry status
//! read, failed entries with retryable codes re-sent (see [`crate::retry`]),
//! and every row not surely written reported by key.
//!
//! [`BulkWriter`] streams: [`BulkWriter::send`] queues a row and sends a
//! request whenever one is full; [`BulkWriter::finish`] sends the rest and
//! waits. [`crate::Table::put_all`] runs the same machinery over a slice.
//!
//! A row is counted written only when Bigtable answered `OK` for its entry.
//! A row whose request failed or timed out without an answer for it has an
//! unknown outcome: it is re-sent (safe, the write is idempotent) and, if the
//! retries run out, reported failed (it may or may not be stored).
//!
//! Each request retries within the write policy's deadline, and no request
//! starts later than that deadline after the server's last answer (or
//! after the writer started sending with nothing in flight: its first
//! request, the first after a `flush`): against a server that stopped
//! answering, a bulk write ends one deadline later, every row not sent
//! reported failed, however many requests were left and however the rows
//! were paced. A request that ended without an answer does not make the
//! writer idle; a `flush` does, so a long-lived writer whose server came
//! back after such a stall sends again after its next `flush`.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::model::proto::mutate_rows_request::Entry;
use tokio::task::JoinSet;

use crate::client::connection::Connection;
pub use crate::client::data::mutate::WriteStats;
use crate::client::data::{bump, send_batch, BatchReport, Unwritten, WriteCounters};
use crate::client::retry::{deadline_after, status_text, RetryPolicy};
use crate::client::telemetry;
use crate::model::clock::Clock;
use crate::model::error::{Error, FailedRow, Result};
use crate::model::mutation::EncodedRow;
use crate::model::row::BigtableRow;
use crate::model::row::MutationBuilder;
use crate::wire::channel::DataChannel;
use crate::wire::codec::EncodedBatch;

use crate::model::limits::{MAX_MUTATIONS_PER_REQUEST, MAX_REQUEST_BYTES};

/// How a bulk write batches and retries.
///
/// ```
/// use bigtable_ttl::writer::WriteOptions;
///
/// let options = WriteOptions::default().with_max_in_flight(8);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Rows per `MutateRows` request, at most.
    pub max_rows_per_request: usize,
    /// Mutations per request, at most (Bigtable's limit is 100,000).
    pub max_mutations_per_request: usize,
    /// Bytes per request, about (an estimate from above of the encoding).
    pub max_request_bytes: usize,
    /// Requests sent and not yet answered, at most.
    pub max_in_flight: usize,
    /// Retries of each request's failed entries.
    pub retry: RetryPolicy,
}

impl Default for WriteOptions {
    /// 10,000 rows, 100,000 mutations or 16 MiB per request, 4 in flight,
    /// [`RetryPolicy::default`].
    fn default() -> Self {
        Self {
            max_rows_per_request: 10_000,
            max_mutations_per_request: MAX_MUTATIONS_PER_REQUEST,
            max_request_bytes: MAX_REQUEST_BYTES,
            max_in_flight: 4,
            retry: RetryPolicy::default(),
        }
    }
}

impl WriteOptions {
    /// At most `rows` rows per `MutateRows` request.
    #[must_use]
    pub fn with_max_rows_per_request(mut self, rows: usize) -> Self {
        self.max_rows_per_request = rows;
        self
    }

    /// At most `mutations` mutations per request (Bigtable's limit is
    /// 100,000).
    #[must_use]
    pub fn with_max_mutations_per_request(mut self, mutations: usize) -> Self {
        self.max_mutations_per_request = mutations;
        self
    }

    /// About `bytes` per request at most.
    #[must_use]
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// At most `requests` requests sent and not yet answered.
    #[must_use]
    pub fn with_max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests;
        self
    }

    /// Retries of each request's failed entries under `retry`.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// Write `entries` to `table` as one batch, with the bulk writer's per-entry
/// statuses and retries, for callers that build raw entries (migrations).
///
/// # Errors
/// [`Error::PartialWrite`] naming every row not written.
pub(crate) async fn write_entries(
    conn: &Connection,
    table: &str,
    entries: Vec<Entry>,
    policy: RetryPolicy,
) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut batch = EncodedBatch::with_capacity(
        entries.len(),
        entries.iter().map(EncodedBatch::size_of).sum(),
    );
    for entry in &entries {
        batch.push(entry);
    }
    let batch = Arc::new(batch);
    let report = send_batch(
        conn.data_channel(),
        conn.table_path(table).into(),
        batch.clone(),
        policy.start(),
        Arc::default(),
    )
    .await;
    if report.failed.is_empty() {
        Ok(())
    } else {
        Err(Error::PartialWrite {
            table: table.to_owned(),
            written: report.written,
            failed: failed_rows(&batch, report.failed),
        })
    }
}

/// The rows of `batch` a report left unwritten, by key.
fn failed_rows(batch: &EncodedBatch, failed: Vec<Unwritten>) -> Vec<FailedRow> {
    failed
        .into_iter()
        .map(|f| FailedRow::new(batch.key(f.index), f.code, f.why))
        .collect()
}

/// A streaming bulk writer: rows in, `MutateRows` requests out, failures
/// reported by key. From [`crate::Table::writer`].
///
/// ```no_run
/// # use bigtable_ttl::{BigtableRow, Table};
/// # #[derive(BigtableRow)]
/// # #[bigtable(table = "clicks", family = "c")]
/// # #[ttl(default = "2d")]
/// # struct Click { #[bigtable(key)] id: String, url: String }
/// # async fn run(clicks: Table<Click>, incoming: Vec<Click>) -> bigtable_ttl::Result<()> {
/// let mut writer = clicks.writer();
/// for click in &incoming {
///     writer.send(click).await?; // bad input: an error for this row, nothing sent for it
/// }
/// let stats = writer.finish().await?; // Error::PartialWrite names every row not written
/// println!("{} rows in {} requests ({} retries)", stats.rows_written, stats.requests, stats.retries);
/// # Ok(()) }
/// ```
///
/// Each row's timestamps come from the table's clock when it is sent.
/// Requests are sent as they fill, at most
/// [`WriteOptions::max_in_flight`] at a time (`send` waits for one to
/// finish when that many are out). Rows are not ordered across requests: two
/// writes of one key in one writer may land in either order. Dropping a
/// writer without [`BulkWriter::finish`] abandons the queued rows and
/// cancels the requests in flight (their outcome is then unknown).
pub struct BulkWriter<T> {
    row: std::marker::PhantomData<fn(&T)>,
    /// The table's id, for errors.
    table_name: String,
    clock: Clock,
    channel: DataChannel,
    table_path: Arc<str>,
    options: WriteOptions,
    /// The rows queued, encoded as the next request will carry them.
    batch: EncodedBatch,
    /// Where each cell's value is encoded before it is written into the
    /// batch (kept from row to row).
    staged: Vec<u8>,
    buffer_mutations: usize,
    buffer_bytes: usize,
    tasks: JoinSet<BatchReport>,
    /// Each batch in flight, to report its keys if its task dies.
    in_flight: HashMap<tokio::task::Id, Arc<EncodedBatch>>,
    written: usize,
    failed: Vec<FailedRow>,
    /// Set once a request failed with a final error: later rows are not sent.
    stopped: Option<tonic::Status>,
    /// When the server last answered a request of this writer, or the
    /// writer last started sending with nothing in flight since its
    /// previous send (first, or after a flush): no request starts later
    /// than the write policy's deadline after it.
    progress_at: Instant,
    counters: Arc<WriteCounters>,
    /// The writer's own operation (span and metrics), from
    /// [`crate::Table::writer`]; `None` inside another operation
    /// (`put_all`), whose span its requests then count in.
    operation: Option<telemetry::Operation>,
}

impl<T> std::fmt::Debug for BulkWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkWriter")
            .field("table", &self.table_path)
            .field("options", &self.options)
            .field("queued", &self.batch.len())
            .field("in_flight", &self.tasks.len())
            .field("stats", &self.counters.snapshot())
            .finish_non_exhaustive()
    }
}

impl<T: BigtableRow> BulkWriter<T> {
    pub(crate) fn new(conn: &Connection, table: &str, clock: Clock, options: WriteOptions) -> Self {
        let channel = conn.data_channel();
        let table_path = conn.table_path(table).into();
        Self {
            row: std::marker::PhantomData,
            table_name: table.to_owned(),
            clock,
            channel,
            table_path,
            options,
            batch: EncodedBatch::default(),
            staged: Vec::new(),
            buffer_mutations: 0,
            buffer_bytes: 0,
            tasks: JoinSet::new(),
            in_flight: HashMap::new(),
            written: 0,
            failed: Vec::new(),
            stopped: None,
            progress_at: Instant::now(),
            counters: Arc::new(WriteCounters::default()),
            operation: None,
        }
    }

    /// The same writer, its requests and retries counted in `operation`
    /// until it is finished or dropped.
    pub(crate) fn in_operation(mut self, operation: telemetry::Operation) -> Self {
        self.operation = Some(operation);
        self
    }

    /// Queue `row` for writing, as [`crate::Table::put`] would write it.
    ///
    /// # Errors
    /// Bad input ([`Error::ExpiryNotInFuture`], key and value errors,
    /// [`Error::RowTooLarge`], …): this row is not queued, nothing of it is
    /// sent, and the writer goes on. Failures of the write itself come out of
    /// [`BulkWriter::flush`] and [`BulkWriter::finish`].
    pub async fn send(&mut self, row: &T) -> Result<()> {
        self.send_with(row.mutation()).await
    }

    /// [`BulkWriter::send`] with per-row overrides (`.ttl()`, `.expire_at()`).
    ///
    /// # Errors
    /// As [`BulkWriter::send`].
    pub async fn send_with(&mut self, builder: MutationBuilder<'_, T>) -> Result<()> {
        let (_, full) = self.queue(&builder, self.clock.now())?;
        if let Some(full) = full {
            self.dispatch(full).await;
        }
        Ok(())
    }

    /// Encode the write `builder` makes at `now` (checked) into the batch
    /// being filled; when the row does not fit there, the batch so far
    /// comes back, closed, and the row starts the next one. A row that
    /// fails is not queued.
    pub(crate) fn queue(
        &mut self,
        builder: &MutationBuilder<'_, T>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(EncodedRow, Option<EncodedBatch>)> {
        let (table, staged) = (&self.table_name, &mut self.staged);
        // Written straight into the request's bytes: no `Mutation` values.
        let row = self
            .batch
            .push_with(|bytes| builder.encode_checked(table, now, bytes, staged))?;
        bump(&self.counters.rows_queued, 1);
        if let Some(op) = &mut self.operation {
            op.resumed();
        }
        let (mutations, bytes) = (row.entry.mutations, row.entry.len);
        let before = self.batch.len() - 1;
        // Room for a full request of rows like this one at once: no
        // regrowing (the rows limit is usually what ends a batch).
        let rows = self.options.max_rows_per_request.clamp(1, 16_384);
        let capacity = bytes
            .saturating_mul(rows)
            .min(self.options.max_request_bytes.saturating_add(bytes));
        let full = before > 0
            && (before >= self.options.max_rows_per_request.max(1)
                || self.buffer_mutations + mutations > self.options.max_mutations_per_request
                || self.buffer_bytes + bytes > self.options.max_request_bytes);
        let full = full.then(|| {
            let next = self.batch.split_last(rows, capacity);
            self.take_batch_and_start(next)
        });
        if before == 0 {
            self.batch.reserve_total(rows, capacity);
        }
        self.buffer_mutations += mutations;
        self.buffer_bytes += bytes;
        Ok((row, full))
    }

    /// The batch being filled, closed; `next` is filled from now on.
    fn take_batch_and_start(&mut self, next: EncodedBatch) -> EncodedBatch {
        (self.buffer_mutations, self.buffer_bytes) = (0, 0);
        std::mem::replace(&mut self.batch, next)
    }

    /// The batch being filled, closed; an empty one starts.
    pub(crate) fn take_batch(&mut self) -> EncodedBatch {
        (self.buffer_mutations, self.buffer_bytes) = (0, 0);
        std::mem::take(&mut self.batch)
    }

    /// Send `batch` as one request, once fewer than `max_in_flight` are out.
    pub(crate) async fn dispatch(&mut self, batch: EncodedBatch) {
        if batch.is_empty() {
            return;
        }
        if let Some(status) = &self.stopped {
            let why = format!(
                "not sent: an earlier request failed: {}",
                status_text(status)
            );
            bump(&self.counters.rows_failed, batch.len());
            self.failed
                .extend(batch.keys().map(|k| FailedRow::new(k, None, why.clone())));
            return;
        }
        // A writer that had nothing in flight since its last dispatch
        // starts its progress clock afresh: the time it sat idle, between
        // two sends, is not a stall. Requests that ended in the meantime
        // without an answer are a stall, not idleness: they restart
        // nothing (an answered one restarts the clock in `take_in`).
        if self.tasks.is_empty() {
            self.progress_at = Instant::now();
        }
        while let Some(joined) = self.tasks.try_join_next_with_id() {
            self.take_in(joined);
        }
        while self.tasks.len() >= self.options.max_in_flight.max(1) {
            self.reap_one().await;
        }
        // No request starts later than the policy's deadline after the
        // last answer: against a server that stopped answering, the write
        // ends one deadline after it did, however many requests are left.
        let deadline = deadline_after(self.progress_at, self.options.retry.deadline);
        let budget = self.options.retry.start_within(Some(deadline));
        let batch = Arc::new(batch);
        // The request counts in the writer's operation, or in the one
        // (and span) that sent it.
        let handle = self.tasks.spawn(telemetry::in_operation_of(
            self.operation.as_ref(),
            send_batch(
                self.channel.clone(),
                self.table_path.clone(),
                batch.clone(),
                budget,
                self.counters.clone(),
            ),
        ));
        self.in_flight.insert(handle.id(), batch);
    }

    /// Wait for one request in flight and take in its outcome.
    async fn reap_one(&mut self) {
        if let Some(joined) = self.tasks.join_next_with_id().await {
            self.take_in(joined);
        }
    }

    /// Take in the outcome of a request that finished.
    fn take_in(
        &mut self,
        joined: std::result::Result<(tokio::task::Id, BatchReport), tokio::task::JoinError>,
    ) {
        match joined {
            Ok((id, report)) => {
                let batch = self.in_flight.remove(&id).unwrap_or_default();
                let BatchReport {
                    written,
                    failed,
                    fatal,
                    answered,
                    ..
                } = report;
                if answered {
                    self.progress_at = Instant::now();
                }
                if let (Some(why), None) = (&fatal, &self.stopped) {
                    self.stopped = Some(why.clone());
                }
                self.written += written;
                bump(&self.counters.rows_written, written);
                bump(&self.counters.rows_failed, failed.len());
                self.failed.extend(failed_rows(&batch, failed));
            }
            Err(e) => {
                // Never count a row whose batch died as written.
                let batch = self.in_flight.remove(&e.id()).unwrap_or_default();
                let why = format!("outcome unknown, the request's task failed: {e}");
                bump(&self.counters.rows_failed, batch.len());
                self.failed
                    .extend(batch.keys().map(|k| FailedRow::new(k, None, why.clone())));
            }
        }
    }

    /// Send everything queued and wait for every request in flight.
    ///
    /// # Errors
    /// [`Error::PartialWrite`] naming the rows not (or not surely) written
    /// since the last flush; the writer stays usable.
    pub async fn flush(&mut self) -> Result<()> {
        let rest = self.take_batch();
        self.dispatch(rest).await;
        while !self.tasks.is_empty() {
            self.reap_one().await;
        }
        let written = std::mem::take(&mut self.written);
        let failed = std::mem::take(&mut self.failed);
        let result = if failed.is_empty() {
            Ok(())
        } else {
            Err(Error::PartialWrite {
                table: self.table_name.clone(),
                written,
                failed,
            })
        };
        if let Some(op) = &mut self.operation {
            op.set_rows(self.counters.rows_written.load(Ordering::Relaxed));
            op.ended(&result);
        }
        result
    }

    /// [`BulkWriter::flush`], then the final counts.
    ///
    /// # Errors
    /// As [`BulkWriter::flush`].
    pub async fn finish(mut self) -> Result<WriteStats> {
        self.flush().await?;
        Ok(self.stats())
    }

    /// The counts so far.
    #[must_use]
    pub fn stats(&self) -> WriteStats {
        self.counters.snapshot()
    }

    /// Whether a request failed with a final error (a missing table, …), so
    /// that later rows are reported failed without being sent; the message
    /// says why.
    #[must_use]
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_ref().map(tonic::Status::message)
    }

    /// The status that stopped the writer ([`BulkWriter::stopped`]).
    pub(crate) fn stopped_status(&self) -> Option<&tonic::Status> {
        self.stopped.as_ref()
    }
}
