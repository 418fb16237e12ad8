//! What the client tells about its work: a `tracing` span per operation,
//! an event per retry, and (feature `metrics`) client-side metrics through
//! the [`metrics`](https://docs.rs/metrics) facade, named and labelled as
//! [`crate::telemetry`] documents.
//!
//! An operation's state (its labels, retries, rows) lives in a task-local
//! for the duration of the operation, so the retry loops deep below it
//! count into it without every signature carrying it; the bulk writer's
//! spawned requests take it along ([`in_operation_of`]). A stream or a
//! bulk writer is one operation from its first poll (its creation) to its
//! end ([`stream`], [`Operation`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tracing::Instrument as _;

use crate::model::error::{Error, Result};

tokio::task_local! {
    static CURRENT: Arc<OpState>;
}

/// `db.system.name` of every span: Google Cloud's prefix, as the
/// conventions name `gcp.spanner`.
const DB_SYSTEM: &str = "gcp.bigtable";

/// One operation under way.
struct OpState {
    table: Arc<str>,
    operation: &'static str,
    retries: AtomicU32,
    /// When the attempt under way started (the operation's start, then
    /// each retry's).
    attempt_started: Mutex<Instant>,
}

/// Run `call`, the operation `operation` on `table`, in its span and with
/// its metrics; `rows` says how many rows its result holds. The operation
/// starts at the first poll.
///
/// Not an `async fn`: `call` is boxed here, where it is made, and what is
/// returned is a few words. An `async fn` would hold `call` inline in its
/// own state until its first poll (16 KiB for `get`), and every caller's
/// future around it, each copied whole whenever it moves.
pub(crate) fn operation<'a, T, F, R>(
    table: &'a str,
    operation: &'static str,
    rows: R,
    call: F,
) -> InOperation<'a, F, R>
where
    F: std::future::Future<Output = Result<T>>,
    R: FnOnce(&T) -> u64 + Unpin,
{
    InOperation {
        call: Some(Box::pin(call)),
        table,
        operation,
        rows: Some(rows),
        op: None,
    }
}

/// The future of [`operation`].
pub(crate) struct InOperation<'a, F, R> {
    /// Before `op`: dropped first, within the operation (see `Drop`).
    call: Option<std::pin::Pin<Box<F>>>,
    table: &'a str,
    operation: &'static str,
    rows: Option<R>,
    op: Option<Operation>,
}

impl<T, F, R> std::future::Future for InOperation<'_, F, R>
where
    F: std::future::Future<Output = Result<T>>,
    R: FnOnce(&T) -> u64 + Unpin,
{
    type Output = Result<T>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<T>> {
        use std::task::Poll;
        let this = self.get_mut();
        let Some(call) = this.call.as_mut() else {
            panic!("an operation's future polled after it ended");
        };
        let op = this
            .op
            .get_or_insert_with(|| Operation::start(this.table, this.operation));
        let polled = op.enter(|| call.as_mut().poll(cx));
        if let Poll::Ready(result) = &polled {
            if let (Ok(value), Some(rows)) = (result, this.rows.take()) {
                op.set_rows(rows(value));
            }
            op.ended(result);
            this.call = None;
            // Recorded now, as the call returns.
            this.op = None;
        }
        polled
    }
}

impl<F, R> Drop for InOperation<'_, F, R> {
    /// A call dropped half-way is dropped in its operation (its span
    /// entered), as it ran; the operation then ends `CANCELLED`.
    fn drop(&mut self) {
        if let (Some(call), Some(op)) = (self.call.take(), self.op.as_ref()) {
            op.enter(|| drop(call));
        }
    }
}

/// One operation: its span, the state the retry loops below it count
/// into, and what it ended with, recorded (span fields and metrics) when
/// it is dropped. An operation dropped before it ended (a call whose
/// future was dropped, a stream or writer abandoned half-way) ends
/// `CANCELLED`.
pub(crate) struct Operation {
    span: tracing::Span,
    state: Arc<OpState>,
    started: Instant,
    rows: Option<u64>,
    outcome: Option<&'static str>,
}

impl Operation {
    /// The operation `operation` on `table`, starting now.
    pub(crate) fn start(table: &str, operation: &'static str) -> Self {
        // Beside the library's own fields, OpenTelemetry's database
        // conventions (a `tracing-opentelemetry` layer exports them as
        // they are): the system, the operation, the table, and the
        // server's address once the first request goes out.
        let span = tracing::info_span!(
            "bigtable_ttl",
            table,
            operation,
            rows = tracing::field::Empty,
            attempts = tracing::field::Empty,
            outcome = tracing::field::Empty,
            db.system.name = DB_SYSTEM,
            db.operation.name = operation,
            db.collection.name = table,
            server.address = tracing::field::Empty,
            server.port = tracing::field::Empty,
        );
        let started = Instant::now();
        Self {
            span,
            state: Arc::new(OpState {
                table: table.into(),
                operation,
                retries: AtomicU32::new(0),
                attempt_started: Mutex::new(started),
            }),
            started,
            rows: None,
            outcome: None,
        }
    }

    /// `poll`, run in this operation (one poll of a call or a stream).
    fn enter<R>(&self, poll: impl FnOnce() -> R) -> R {
        CURRENT.sync_scope(self.state.clone(), || self.span.in_scope(poll))
    }

    /// The operation's result holds `rows` rows.
    pub(crate) fn set_rows(&mut self, rows: u64) {
        self.rows = Some(rows);
    }

    /// The operation ended with `result`.
    pub(crate) fn ended<T>(&mut self, result: &Result<T>) {
        self.outcome = Some(match result {
            Ok(_) => "ok",
            Err(e) => outcome_of(e),
        });
    }

    /// The operation goes on after an end (a writer given more rows after
    /// a flush): dropped before it ends again, it was cancelled.
    pub(crate) fn resumed(&mut self) {
        self.outcome = None;
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        let outcome = self.outcome.unwrap_or("CANCELLED");
        self.span
            .record("attempts", self.state.retries.load(Ordering::Relaxed) + 1);
        self.span.record("outcome", outcome);
        if let Some(rows) = self.rows {
            self.span.record("rows", rows);
        }
        record::operation(
            &self.state.table,
            self.state.operation,
            outcome,
            self.started.elapsed(),
        );
        record::attempt(
            &self.state.table,
            self.state.operation,
            self.state.attempt_elapsed(),
        );
    }
}

/// `stream` as the operation `operation` on `table`: its span opens at
/// the first poll and closes when the stream ends or is dropped; `rows`
/// counts the rows it yielded, `outcome` is its first error, `ok` when it
/// ended without one, `CANCELLED` when it was dropped before its end
/// without one.
pub(crate) fn stream<S, T>(
    table: &str,
    operation: &'static str,
    stream: S,
) -> impl futures_util::Stream<Item = Result<T>>
where
    S: futures_util::Stream<Item = Result<T>>,
{
    OperationStream {
        table: table.into(),
        operation,
        // Boxed: the wrapper then needs no pinning of its own.
        inner: Box::pin(stream),
        op: None,
        ended: false,
    }
}

struct OperationStream<S> {
    table: Box<str>,
    operation: &'static str,
    inner: std::pin::Pin<Box<S>>,
    op: Option<Operation>,
    ended: bool,
}

impl<S, T> futures_util::Stream for OperationStream<S>
where
    S: futures_util::Stream<Item = Result<T>>,
{
    type Item = Result<T>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<T>>> {
        use std::task::Poll;
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let op = this.op.get_or_insert_with(|| {
            let mut op = Operation::start(&this.table, this.operation);
            op.set_rows(0);
            op
        });
        let inner = &mut this.inner;
        let polled = op.enter(|| inner.as_mut().poll_next(cx));
        match &polled {
            Poll::Ready(Some(Ok(_))) => op.rows = Some(op.rows.unwrap_or(0) + 1),
            Poll::Ready(Some(Err(e))) => {
                op.outcome.get_or_insert_with(|| outcome_of(e));
            }
            Poll::Ready(None) => {
                op.outcome.get_or_insert("ok");
                this.op = None;
                this.ended = true;
            }
            Poll::Pending => {}
        }
        polled
    }
}

impl OpState {
    fn attempt_elapsed(&self) -> std::time::Duration {
        self.attempt_started
            .lock()
            .map(|started| started.elapsed())
            .unwrap_or_default()
    }
}

/// `call` in `op` when there is one, else in the operation (and span)
/// under way, if any: for tasks an operation spawns.
pub(crate) fn in_operation_of<F>(
    op: Option<&Operation>,
    call: F,
) -> impl std::future::Future<Output = F::Output>
where
    F: std::future::Future,
{
    let (state, call) = match op {
        Some(op) => (Some(op.state.clone()), call.instrument(op.span.clone())),
        None => (
            CURRENT.try_with(Arc::clone).ok(),
            call.instrument(tracing::Span::current()),
        ),
    };
    async move {
        match state {
            Some(state) => CURRENT.scope(state, call).await,
            None => call.await,
        }
    }
}

/// A retry is about to wait `delay` after attempt `attempt` failed for
/// `reason`: the event, and the metrics of the failed attempt.
pub(crate) fn retrying(attempt: u32, delay: std::time::Duration, reason: &dyn std::fmt::Display) {
    tracing::info!(
        attempt,
        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        reason = %reason,
        "retrying",
    );
    let _ = CURRENT.try_with(|state| {
        state.retries.fetch_add(1, Ordering::Relaxed);
        record::attempt(&state.table, state.operation, state.attempt_elapsed());
        record::retry(&state.table, state.operation);
    });
}

/// The next attempt starts now (after a retry's delay).
pub(crate) fn attempt_started() {
    let _ = CURRENT.try_with(|state| {
        if let Ok(mut started) = state.attempt_started.lock() {
            *started = Instant::now();
        }
    });
}

/// The `outcome` of a failed operation: the gRPC code's name for a server
/// error, else what kind of error it was.
fn outcome_of(e: &Error) -> &'static str {
    match e {
        Error::Server(e) => e.code.as_str(),
        Error::PartialWrite { .. } => "partial_write",
        Error::Decode { .. } => "decode_error",
        Error::Connect { .. } => "connect_error",
        _ => "invalid_input",
    }
}

/// The table id of `projects/…/tables/{id}`. A table id holds no `/`:
/// the last one ends `…/tables/` (a byte's search, not a substring's: this
/// runs once per read).
pub(crate) fn table_id(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, id)| id)
}

pub(crate) use record::{read, reaped, written};

/// The metrics, through the facade; nothing at all without the feature.
#[cfg(feature = "metrics")]
mod record {
    use std::time::Duration;

    use crate::model::telemetry::{
        ATTEMPT_LATENCY, BYTES_READ, BYTES_WRITTEN, OPERATION_LATENCY, RETRIES, ROWS_READ,
        ROWS_WRITTEN,
    };

    pub(crate) fn operation(
        table: &str,
        operation: &'static str,
        outcome: &'static str,
        took: Duration,
    ) {
        metrics::histogram!(OPERATION_LATENCY, "table" => table.to_owned(), "operation" => operation, "outcome" => outcome)
            .record(took.as_secs_f64());
    }

    pub(crate) fn attempt(table: &str, operation: &'static str, took: Duration) {
        metrics::histogram!(ATTEMPT_LATENCY, "table" => table.to_owned(), "operation" => operation)
            .record(took.as_secs_f64());
    }

    pub(crate) fn retry(table: &str, operation: &'static str) {
        metrics::counter!(RETRIES, "table" => table.to_owned(), "operation" => operation)
            .increment(1);
    }

    /// `rows` rows of `bytes` bytes (keys and values) read from `table`.
    pub(crate) fn read(table: &str, rows: u64, bytes: u64) {
        if rows > 0 {
            metrics::counter!(ROWS_READ, "table" => table.to_owned()).increment(rows);
            metrics::counter!(BYTES_READ, "table" => table.to_owned()).increment(bytes);
        }
    }

    /// `rows` rows of `bytes` bytes (encoded mutations) written to `table`.
    pub(crate) fn written(table: &str, rows: u64, bytes: u64) {
        if rows > 0 {
            metrics::counter!(ROWS_WRITTEN, "table" => table.to_owned()).increment(rows);
            metrics::counter!(BYTES_WRITTEN, "table" => table.to_owned()).increment(bytes);
        }
    }

    /// One page of the reaper on `table`: rows read, dead rows and cells
    /// deleted, live rows left alone, and its rate so far (rows a second).
    pub(crate) fn reaped(
        table: &str,
        scanned: u64,
        rows: u64,
        cells: u64,
        skipped_live: u64,
        rate: f64,
    ) {
        use crate::model::telemetry::{
            REAP_CELLS_REAPED, REAP_RATE, REAP_ROWS_REAPED, REAP_ROWS_SCANNED,
            REAP_ROWS_SKIPPED_LIVE,
        };
        metrics::counter!(REAP_ROWS_SCANNED, "table" => table.to_owned()).increment(scanned);
        metrics::counter!(REAP_ROWS_REAPED, "table" => table.to_owned()).increment(rows);
        metrics::counter!(REAP_CELLS_REAPED, "table" => table.to_owned()).increment(cells);
        metrics::counter!(REAP_ROWS_SKIPPED_LIVE, "table" => table.to_owned())
            .increment(skipped_live);
        metrics::gauge!(REAP_RATE, "table" => table.to_owned()).set(rate);
    }
}

#[cfg(not(feature = "metrics"))]
mod record {
    use std::time::Duration;

    #[inline(always)]
    pub(crate) fn operation(_: &str, _: &'static str, _: &'static str, _: Duration) {}
    #[inline(always)]
    pub(crate) fn attempt(_: &str, _: &'static str, _: Duration) {}
    #[inline(always)]
    pub(crate) fn retry(_: &str, _: &'static str) {}
    #[inline(always)]
    pub(crate) fn read(_: &str, _: u64, _: u64) {}
    #[inline(always)]
    pub(crate) fn written(_: &str, _: u64, _: u64) {}
    #[inline(always)]
    pub(crate) fn reaped(_: &str, _: u64, _: u64, _: u64, _: u64, _: f64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_s_future_holds_its_call_boxed() {
        // A call whose state is large, as a read's is.
        let call = async {
            let state = [7u8; 4096];
            tokio::task::yield_now().await;
            Ok::<u8, Error>(std::hint::black_box(state)[0])
        };
        let op = operation("t", "get", |_: &u8| 1, call);
        assert!(
            std::mem::size_of_val(&op) <= 512,
            "{} bytes, copied whole by every caller that moves it",
            std::mem::size_of_val(&op)
        );
    }

    #[tokio::test]
    async fn an_operation_returns_its_call_s_result() {
        let call = async {
            tokio::task::yield_now().await;
            Ok::<u8, Error>(7)
        };
        assert_eq!(operation("t", "get", |_: &u8| 1, call).await.unwrap(), 7);
    }

    #[test]
    fn table_ids_from_paths() {
        assert_eq!(table_id("projects/p/instances/i/tables/clicks"), "clicks");
        assert_eq!(table_id("clicks"), "clicks");
    }
}
