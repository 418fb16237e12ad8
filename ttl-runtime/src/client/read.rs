//! Reads as a stream of merged rows, resumed after a break: each `ReadRows`
//! call goes over the data channel ([`crate::wire::channel`]), its chunks are
//! merged into rows ([`crate::wire::merge`]), and a stream that breaks with a
//! retryable error is resumed after the last row it committed
//! ([`crate::model::scan::resume_request`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::Stream;

use crate::client::retry::{retryable_status, Budget, RetryPolicy};
use crate::model::error::{Code, Error};
use crate::model::scan::{resume_request, RawCell, RawRow};
use crate::proto::ReadRowsRequest;
use crate::wire::channel::DataChannel;
use crate::wire::chunk::Chunk;
use crate::wire::merge::{MergedRow, RowMerger};
use crate::wire::read_error::ReadError;
use crate::wire::status::code_of;

struct ReadState {
    channel: DataChannel,
    /// The request as first made, for resuming.
    base: ReadRowsRequest,
    request: Option<ReadRowsRequest>,
    response: Option<tonic::Streaming<Vec<Chunk>>>,
    merger: RowMerger,
    ready: VecDeque<MergedRow>,
    done: bool,
    policy: RetryPolicy,
    budget: Option<Budget>,
    resumes: Arc<AtomicU64>,
    started: Instant,
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
        Error::Server {
            table: table.to_owned(),
            row_key,
            code,
            attempts: self.attempts,
            elapsed: self.elapsed,
            retries_exhausted: self.retries_exhausted,
            source: Box::new(self.error),
        }
    }
}

impl ReadState {
    /// `error` ends the read.
    fn failure(&self, error: ReadError) -> ReadFailure {
        ReadFailure {
            error,
            attempts: self.budget.as_ref().map_or(1, Budget::attempts),
            elapsed: self.started.elapsed(),
            retries_exhausted: self.budget.as_ref().is_some_and(Budget::exhausted),
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
        let policy = self.policy;
        if !self
            .budget
            .get_or_insert_with(|| policy.start())
            .wait()
            .await
        {
            return false;
        }
        tracing::debug!(%status, committed = self.merger.committed, "resuming ReadRows");
        self.resumes.fetch_add(1, Ordering::Relaxed);
        self.merger.reset();
        self.response = None;
        match &self.merger.last_committed {
            None => self.request = Some(self.base.clone()),
            Some(last) => match resume_request(self.base.clone(), last, self.merger.committed) {
                Some(request) => self.request = Some(request),
                None => self.done = true,
            },
        }
        true
    }
}

/// The rows `request` reads, merged, as a stream; lazily sent on first poll;
/// resumed after a break within [`RetryPolicy::default`] (see [`read_rows_with`]).
pub(crate) fn read_rows(
    channel: DataChannel,
    request: ReadRowsRequest,
) -> impl Stream<Item = Result<RawRow, ReadFailure>> + Send + 'static {
    use futures_util::TryStreamExt as _;
    read_rows_with(channel, request, RetryPolicy::default(), Arc::default())
        .map_ok(|(key, cells)| (key, cells.into_iter().map(RawCell::from).collect()))
}

/// The rows `request` reads, merged, as a stream; lazily sent on first poll.
/// A stream that breaks with a retryable error (see [`crate::retry`]) is
/// resumed after the last row it committed, within `policy`; each resume is
/// counted in `resumes`.
pub(crate) fn read_rows_with(
    channel: DataChannel,
    request: ReadRowsRequest,
    policy: RetryPolicy,
    resumes: Arc<AtomicU64>,
) -> impl Stream<Item = Result<MergedRow, ReadFailure>> + Send + 'static {
    let state = ReadState {
        channel,
        base: request.clone(),
        request: Some(request),
        response: None,
        merger: RowMerger::default(),
        ready: VecDeque::new(),
        done: false,
        policy,
        budget: None,
        resumes,
        started: Instant::now(),
    };
    // Boxed: the state moves into and out of the stream's future at every
    // row, and a pointer is cheaper to move than the state.
    futures_util::stream::unfold(Box::new(state), |mut st| async move {
        loop {
            if let Some(row) = st.ready.pop_front() {
                return Some((Ok(row), st));
            }
            if st.done {
                return None;
            }
            if let Some(request) = st.request.take() {
                match st.channel.read_rows(request).await {
                    Ok(response) => st.response = Some(response),
                    Err(status) => {
                        let error = ReadError::from(status);
                        if st.resume(&error).await {
                            continue;
                        }
                        st.done = true;
                        let failure = st.failure(error);
                        return Some((Err(failure), st));
                    }
                }
            }
            let response = st.response.as_mut()?;
            let step = match response.message().await {
                Ok(Some(message)) => {
                    let ReadState { merger, ready, .. } = &mut *st;
                    merger.feed(message, ready)
                }
                Ok(None) => {
                    st.done = true;
                    st.merger.finish()
                }
                Err(status) => Err(status.into()),
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
