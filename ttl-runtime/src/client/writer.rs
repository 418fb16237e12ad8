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

use tokio::task::JoinSet;

pub use crate::client::data::mutate::{WriteOptions, WriteStats};
use crate::client::data::{bump, BatchReport, RawTable, Unwritten, WriteCounters};
use crate::client::layouts::Registration;
use crate::client::retry::{deadline_after, status_text};
use crate::client::telemetry;
use crate::model::clock::Clock;
use crate::model::error::{self, Error, FailedRow, Result};
use crate::model::mutation::EncodedRow;
use crate::model::row::BigtableRow;
use crate::model::row::MutationBuilder;
use crate::wire::codec::EncodedBatch;

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
    /// Where every request goes: the raw layer's `MutateRows`, its
    /// per-entry retry decisions included.
    table: RawTable,
    clock: Clock,
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
    /// The struct as its connection knows it on this table: a struct
    /// another of the table clashes with queues nothing
    /// ([`crate::client::layouts`]).
    layout: Option<Arc<Registration>>,
}

impl<T> std::fmt::Debug for BulkWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkWriter")
            .field("table", &self.table.path())
            .field("options", self.table.write_options())
            .field("queued", &self.batch.len())
            .field("in_flight", &self.tasks.len())
            .field("stats", &self.counters.snapshot())
            .finish_non_exhaustive()
    }
}

impl<T: BigtableRow> BulkWriter<T> {
    /// A writer on `table`, under its write options.
    pub(crate) fn new(table: RawTable, clock: Clock) -> Self {
        Self {
            row: std::marker::PhantomData,
            table,
            clock,
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
            layout: None,
        }
    }

    /// The same writer, refusing every row while `layout` clashes.
    pub(crate) fn with_layout(mut self, layout: Arc<Registration>) -> Self {
        self.layout = Some(layout);
        self
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
        let (_, full) = self.queue(&builder, self.clock.now_micros())?;
        if let Some(full) = full {
            self.dispatch(full).await;
        }
        Ok(())
    }

    /// Encode the write `builder` makes at `now_micros` (µs since the
    /// epoch; checked) into the batch being filled; when the row does not
    /// fit there, the batch so far comes back, closed, and the row starts
    /// the next one. A row that fails is not queued.
    pub(crate) fn queue(
        &mut self,
        builder: &MutationBuilder<'_, T>,
        now_micros: i64,
    ) -> Result<(EncodedRow, Option<EncodedBatch>)> {
        if let Some(layout) = &self.layout {
            layout.check()?;
        }
        let (table, staged) = (self.table.name(), &mut self.staged);
        // Written straight into the request's bytes: no `Mutation` values.
        let row = self
            .batch
            .push_with(|bytes| builder.encode_checked(table, now_micros, bytes, staged))?;
        bump(&self.counters.rows_queued, 1);
        if let Some(op) = &mut self.operation {
            op.resumed();
        }
        let (mutations, bytes) = (row.entry.mutations, row.entry.len);
        let before = self.batch.len() - 1;
        let options = *self.table.write_options();
        // Room for a full request of rows like this one at once: no
        // regrowing (the rows limit is usually what ends a batch).
        let rows = options.max_rows_per_request.clamp(1, 16_384);
        let capacity = bytes
            .saturating_mul(rows)
            .min(options.max_request_bytes.saturating_add(bytes));
        let full = before > 0
            && (before >= options.max_rows_per_request.max(1)
                || self.buffer_mutations + mutations > options.max_mutations_per_request
                || self.buffer_bytes + bytes > options.max_request_bytes);
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
        while self.tasks.len() >= self.table.write_options().max_in_flight.max(1) {
            self.reap_one().await;
        }
        // No request starts later than the policy's deadline after the
        // last answer: against a server that stopped answering, the write
        // ends one deadline after it did, however many requests are left.
        let retry = self.table.write_options().retry;
        let budget = retry.start_within(Some(deadline_after(self.progress_at, retry.deadline)));
        let batch = Arc::new(batch);
        // The request counts in the writer's operation, or in the one
        // (and span) that sent it.
        let handle = self.tasks.spawn(telemetry::in_operation_of(
            self.operation.as_ref(),
            self.table
                .mutate_encoded(batch.clone(), budget, self.counters.clone()),
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
            Err(Error::from(error::PartialWrite {
                table: self.table.name().to_owned(),
                written,
                failed,
            }))
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
