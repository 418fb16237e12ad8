//! Reads as a stream of merged rows, resumed after a break, each wait
//! bounded: each `ReadRows` call goes over the data channel (the `wire`
//! layer), its chunks are merged into rows, and a stream that breaks, stalls
//! or does not start in time is resumed after the last row it committed
//! ([`ReadOptions`] says how long each wait may take).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_util::Stream;
use tokio::time::Sleep;

use crate::client::retry::{retryable_status, Budget, RetryPolicy};
use crate::client::telemetry;
use crate::model::error::{self, Code, Error};
use crate::model::proto::ReadRowsRequest;
use crate::model::scan::resume_request;
use crate::wire::builtin_metrics::{scoped, Method, Rpc};
use crate::wire::cause::reason_and_source;
use crate::wire::channel::DataChannel;
use crate::wire::chunk::Message;
use crate::wire::cookies::RoutingCookies;
use crate::wire::merge::{Merged, RowMerger, RowSink};
use crate::wire::read_error::ReadError;
use crate::wire::status::code_of;

/// How reads wait and retry.
///
/// Every wait of a read is bounded, so a read against a server that accepts
/// the request and never answers, or that stops in the middle of a stream,
/// ends with an [`Error::Server`] whose code is
/// [`Code::DeadlineExceeded`]:
///
/// * an attempt must bring its first response within
///   [`RetryPolicy::attempt_timeout`];
/// * after that, each next response within [`ReadOptions::idle_timeout`];
/// * an attempt that breaks, stalls or times out is resumed after the last
///   row it delivered, with the policy's delays, for as long as the policy's
///   attempts and [`RetryPolicy::deadline`] allow;
/// * **rows renew the budget**: every row received starts the attempt
///   count, the delays and the deadline again, as Google's clients do for
///   streaming reads, so a long scan that meets a break now and then
///   finishes. The deadline bounds the time a read goes without a row.
///
/// ```
/// use std::time::Duration;
/// use bigtable_ttl::read::ReadOptions;
/// use bigtable_ttl::retry::RetryPolicy;
///
/// let impatient = ReadOptions::default()
///     .with_retry(
///         RetryPolicy::default()
///             .with_attempt_timeout(Duration::from_secs(2))
///             .with_deadline(Duration::from_secs(5)),
///     )
///     .with_idle_timeout(Duration::from_secs(2));
/// # let _ = impatient;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Attempts, delays, the first response's timeout and the deadline
    /// without a row.
    pub retry: RetryPolicy,
    /// The most time to wait for the next response of a stream already
    /// answering.
    pub idle_timeout: Duration,
    /// Skip a row that does not decode into the struct (a key of another
    /// shape, a cell that is not its field's encoding, a required column
    /// missing, an absurd timestamp) instead of ending the read with its
    /// error; each is counted in [`ReadStats::rows_skipped`] and logged.
    /// Off by default: such a row is an error naming table and row.
    pub skip_undecodable: bool,
}

impl Default for ReadOptions {
    /// [`RetryPolicy::default`] (30 s for a first response, 2 minutes
    /// without a row), 30 s between two responses.
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(30),
            skip_undecodable: false,
        }
    }
}

impl ReadOptions {
    /// Retries, first-response timeout and deadline under `retry`.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// At most `timeout` between two responses of a stream.
    #[must_use]
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Skip (and count) rows that do not decode instead of failing the read.
    #[must_use]
    pub fn with_skip_undecodable(mut self, skip: bool) -> Self {
        self.skip_undecodable = skip;
        self
    }
}

/// What reads through a table handle (and its clones) met so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadStats {
    /// Reads resumed after a broken or stalled stream, or re-sent after a
    /// failed start.
    pub resumes: u64,
    /// Rows left out because a required column of theirs has expired while
    /// other cells are still live (see [`crate::Table::stream`]).
    pub partially_expired: u64,
    /// Rows left out because they did not decode, with
    /// [`ReadOptions::skip_undecodable`] (incomplete ones included).
    pub rows_skipped: u64,
    /// Of [`ReadStats::rows_skipped`], the rows left out because they are
    /// incomplete: a required column holds no cell, and nothing stored
    /// proves it expired (see the guide's "Rows and liveness").
    pub rows_incomplete: u64,
    /// Rows left out because they carry another struct's row marker, where
    /// no struct writing that marker has a live handle on this table
    /// through this handle's connection, while every visible cell they hold
    /// in this struct's families is one this struct owns and, under its own
    /// marker, they would be its live rows: what a struct renamed without
    /// `#[bigtable(marker = "OldName")]` (and otherwise unchanged) finds of
    /// its old rows. Counted at each read that leaves one out (a row read
    /// twice counts twice); the first of each marker on a connection also
    /// logs a warning naming the marker. A clue, not a proof: another
    /// program's struct whose cells are a subset of this one's counts here
    /// too (see the guide's "Several structs in one table").
    pub rows_under_unknown_marker: u64,
}

/// The counters behind [`ReadStats`], shared by a handle's clones.
#[derive(Debug, Default)]
pub(crate) struct ReadCounters {
    pub(crate) resumes: AtomicU64,
    pub(crate) partially_expired: AtomicU64,
    pub(crate) rows_skipped: AtomicU64,
    pub(crate) rows_incomplete: AtomicU64,
    pub(crate) rows_under_unknown_marker: AtomicU64,
}

impl ReadCounters {
    pub(crate) fn snapshot(&self) -> ReadStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ReadStats {
            resumes: get(&self.resumes),
            partially_expired: get(&self.partially_expired),
            rows_skipped: get(&self.rows_skipped),
            rows_incomplete: get(&self.rows_incomplete),
            rows_under_unknown_marker: get(&self.rows_under_unknown_marker),
        }
    }
}

struct ReadState<R: RowSink> {
    channel: DataChannel,
    /// The request as first made, for resuming.
    base: ReadRowsRequest,
    request: Option<ReadRowsRequest>,
    response: Option<tonic::Streaming<Message>>,
    /// Routing cookies the server handed this read, sent on its retries.
    cookies: RoutingCookies,
    /// When the attempt under way must have brought its first response
    /// (the runtime's clock, as the timer's).
    first_response_by: Option<tokio::time::Instant>,
    /// The read's one timer, moved from wait to wait: a timer a wait was
    /// armed and dropped every time (the timer driver's lock twice), where
    /// moving an armed timer to a later deadline takes no lock. Made at the
    /// first attempt, inside the runtime.
    timer: Option<Pin<Box<Sleep>>>,
    merger: RowMerger,
    /// What the reader makes of each row.
    sink: R,
    /// Whether `sink` takes rows placed in their message.
    places: bool,
    ready: VecDeque<Merged>,
    done: bool,
    options: ReadOptions,
    /// Attempts, delays and deadline since the last row received.
    budget: Budget,
    /// The deadline of the call this read is a step of: rows do not renew
    /// the budget past it.
    cap: Option<Instant>,
    counters: Arc<ReadCounters>,
    started: Instant,
    /// Rows delivered and their bytes, for the metrics when the read ends.
    rows_read: u64,
    bytes_read: u64,
    /// The read as one RPC of the built-in metrics.
    rpc: Rpc,
}

impl<R: RowSink> Drop for ReadState<R> {
    /// Once per read, not per row: recording a labelled metric costs a
    /// key's allocation.
    fn drop(&mut self) {
        telemetry::read(
            telemetry::table_id(&self.base.table_name),
            self.rows_read,
            self.bytes_read,
        );
    }
}

/// Why a read ended early, with what it spent: what [`ReadFailure::into_error`]
/// turns into an [`Error::Server`] once the table and row are known.
#[derive(Debug)]
pub(crate) struct ReadFailure {
    pub(crate) error: ReadError,
    attempts: u32,
    elapsed: Duration,
    retries_exhausted: bool,
}

impl ReadFailure {
    /// The error ending a read of `table` (of row `row_key`, for one row).
    pub(crate) fn into_error(self, table: &str, row_key: Option<Vec<u8>>) -> Error {
        let code = match &self.error {
            ReadError::Status(status) => code_of(status),
            // The response broke the ReadRows protocol: ours to report.
            ReadError::Protocol(_) => Code::Internal,
        };
        let (reason, source, unanswered) = reason_and_source(Box::new(self.error.cause()));
        Error::from(error::Server {
            table: table.to_owned(),
            row_key,
            code,
            attempts: self.attempts,
            elapsed: self.elapsed,
            retries_exhausted: self.retries_exhausted,
            reason,
            source,
            unanswered,
        })
    }
}

/// A wait that ran out, as the status of the attempt.
fn timed_out(what: &str, after: Duration) -> ReadError {
    ReadError::Status(crate::wire::status::no_answer_within(format!(
        "{what} within {after:?}"
    )))
}

impl<R: RowSink> ReadState<R> {
    /// `error` ends the read.
    fn failure(&mut self, error: ReadError) -> ReadFailure {
        self.rpc.ended(match &error {
            ReadError::Status(status) => code_of(status),
            ReadError::Protocol(_) => Code::Internal,
        });
        ReadFailure {
            error,
            attempts: self.budget.attempts(),
            elapsed: self.started.elapsed(),
            retries_exhausted: self.budget.exhausted(),
        }
    }

    /// Rows came in: the next break starts a fresh budget.
    fn progressed(&mut self) {
        self.budget = self.options.retry.start_within(self.cap);
    }

    /// How long the next response may take from `now`: the rest of the
    /// first-response window, or the idle timeout; never past the budget's
    /// deadline.
    fn next_wait(&self, now: tokio::time::Instant) -> Duration {
        let left = self.budget.attempt_timeout();
        match self.first_response_by {
            Some(by) => by
                .saturating_duration_since(now)
                .min(left)
                .max(Duration::from_millis(1)),
            None => self.options.idle_timeout.min(left),
        }
    }

    /// After a retryable failure, and within the retry budget: set up the
    /// request for the rows not yet committed. Rows committed but not yet
    /// delivered stay queued; a half-received row is dropped and read again.
    async fn resume(&mut self, error: &ReadError) -> bool {
        let ReadError::Status(status) = error else {
            return false;
        };
        if !retryable_status(status) {
            return false;
        }
        self.rpc.attempt_ended(code_of(status));
        if !self.budget.wait_after(status).await {
            return false;
        }
        tracing::debug!(%status, committed = self.merger.committed, "resuming ReadRows");
        self.counters.resumes.fetch_add(1, Ordering::Relaxed);
        self.merger.reset();
        self.response = None;
        match &self.merger.last_key {
            None => self.request = Some(self.base.clone()),
            Some(last) => match resume_request(self.base.clone(), last, self.merger.committed) {
                Some(request) => self.request = Some(request),
                None => self.done = true,
            },
        }
        true
    }

    /// Whether the request's row limit is reached.
    fn limit_reached(&self) -> bool {
        u64::try_from(self.base.rows_limit)
            .is_ok_and(|limit| limit > 0 && self.merger.committed >= limit)
    }

    /// Send the next attempt's request; the response's headers must come
    /// within the attempt's timeout.
    async fn start_attempt(&mut self, request: ReadRowsRequest) -> Result<(), ReadError> {
        if self.budget.expired() {
            return Err(ReadError::Status(crate::wire::status::not_sent(
                "no time left for ReadRows before the deadline",
            )));
        }
        let timeout = self.budget.attempt_timeout();
        let by = tokio::time::Instant::now() + timeout;
        self.first_response_by = Some(by);
        self.rpc.attempt_started();
        // Boxed: the call's future is most of a read's state, and the read
        // stream (its room for the step under way) is moved whole, with
        // that room, into every future built on it; held inline it made a
        // one-row `get` copy about 6 KB several times a call.
        let call = Box::pin(self.channel.read_rows(request, &mut self.cookies));
        match before(set_timer(&mut self.timer, by), self.rpc.within(call)).await {
            Some(Ok(response)) => {
                self.response = Some(response);
                Ok(())
            }
            Some(Err(status)) => Err(status.into()),
            None => Err(timed_out("no answer to ReadRows", timeout)),
        }
    }

    /// Receive and merge the next response of the attempt under way.
    async fn next_response(&mut self) -> Result<(), ReadError> {
        let now = tokio::time::Instant::now();
        let wait = self.next_wait(now);
        let first = self.first_response_by.is_some();
        let Some(response) = self.response.as_mut() else {
            return Ok(());
        };
        // The first response's deadline is the one the answer's head had:
        // the timer stays as it is.
        let timer = set_timer(&mut self.timer, now + wait);
        match before(timer, response.message()).await {
            None if first => Err(timed_out("no first response", wait)),
            None => Err(timed_out("the stream stalled: no response", wait)),
            Some(Err(status)) => {
                self.cookies.learn(status.metadata());
                Err(status.into())
            }
            Some(Ok(None)) => {
                self.done = true;
                let finished = self.merger.finish();
                if finished.is_ok() {
                    self.rpc.ended(Code::Ok);
                }
                finished
            }
            Some(Ok(Some(message))) => {
                self.first_response_by = None;
                self.rpc.first_response();
                if self
                    .merger
                    .feed_message(&message, self.places, &mut self.ready)?
                {
                    self.progressed();
                }
                if self.limit_reached() {
                    // Every row asked for is here: what the stream might
                    // still bring (an error, a trailer) changes nothing.
                    self.done = true;
                    self.response = None;
                    self.rpc.ended(Code::Ok);
                }
                Ok(())
            }
        }
    }
}

/// `timer`, made or moved to go off at `until` (left alone when it is set
/// for `until` already).
fn set_timer(timer: &mut Option<Pin<Box<Sleep>>>, until: tokio::time::Instant) -> Pin<&mut Sleep> {
    match timer {
        Some(timer) => {
            if timer.deadline() != until {
                timer.as_mut().reset(until);
            }
            timer.as_mut()
        }
        None => timer
            .insert(Box::pin(tokio::time::sleep_until(until)))
            .as_mut(),
    }
}

/// `future`'s output, or `None` if `timer` goes off first; polled first, a
/// future that is ready wins over a timer that has gone off (as
/// `tokio::time::timeout`).
async fn before<F: Future>(mut timer: Pin<&mut Sleep>, future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// The rows `request` reads, merged and made what `sink` makes of them (a
/// row lying whole in one message read where it lies, when `places`), as a
/// stream; lazily sent on first poll.
/// Every wait is bounded and a stream that breaks, stalls or does not answer
/// is resumed after the last row it committed, as [`ReadOptions`] says; each
/// resume is counted in `counters`. Within `cap`, the deadline of the call
/// the read is a step of, when there is one: rows renew the budget up to
/// it, never past it.
pub(crate) fn read_rows_with<R: RowSink>(
    channel: DataChannel,
    request: ReadRowsRequest,
    options: ReadOptions,
    counters: Arc<ReadCounters>,
    cap: Option<Instant>,
    sink: R,
    places: bool,
) -> impl Stream<Item = Result<R::Row, ReadFailure>> {
    let rpc = channel.rpc(&request.table_name, Method::of_read(&request));
    let state = ReadState {
        rpc,
        channel,
        merger: RowMerger::new(request.reversed).with_limit(request.rows_limit),
        sink,
        places,
        base: request.clone(),
        request: Some(request),
        response: None,
        cookies: RoutingCookies::default(),
        first_response_by: None,
        timer: None,
        ready: VecDeque::new(),
        done: false,
        options,
        budget: options.retry.start_within(cap),
        cap,
        counters,
        started: Instant::now(),
        rows_read: 0,
        bytes_read: 0,
    };
    // Boxed: the state moves into and out of the stream's future at every
    // row, and a pointer is cheaper to move than the state.
    futures_util::stream::unfold(Box::new(state), |mut st| async move {
        st.rpc.asked_again();
        loop {
            if let Some(row) = st.ready.pop_front() {
                let row = st.merger.hand_over(row, &mut st.sink);
                st.rpc.handed_over();
                if cfg!(feature = "metrics") {
                    st.rows_read += 1;
                    st.bytes_read += R::bytes(&row);
                }
                return Some((Ok(row), st));
            }
            if st.done {
                st.rpc.ended(Code::Ok);
                return None;
            }
            let step = match st.request.take() {
                Some(request) => st.start_attempt(request).await,
                None if st.response.is_none() => {
                    st.rpc.ended(Code::Ok);
                    return None;
                }
                None => scoped(st.rpc.slot(), st.next_response()).await,
            };
            if let Err(e) = step {
                if st.resume(&e).await {
                    continue;
                }
                st.done = true;
                st.ready.clear();
                let failure = st.failure(e);
                return Some((Err(failure), st));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_a_retryable_deadline() {
        let ReadError::Status(status) = timed_out("no first response", Duration::from_secs(2))
        else {
            panic!("a status");
        };
        assert_eq!(code_of(&status), Code::DeadlineExceeded);
        assert!(retryable_status(&status));
        assert!(status.message().contains("within 2s"), "{status}");
    }
}
