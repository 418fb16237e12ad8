//! Writes of the raw layer: one row retried as a whole (`MutateRow`), many
//! rows with a status per entry (`MutateRows`), only the entries not yet
//! written re-sent. The bulk writer ([`crate::writer`]) sends its batches
//! through [`send_batch`] here.
//!
//! Only what may be applied twice is sent twice, as Google's clients decide
//! it: a row whose mutations are all idempotent (the library's own writes:
//! every cell at an explicit timestamp) is retried; one holding a `SetCell`
//! at the server's time (`-1`), an `AddToCell` or a `MergeToCell` is sent
//! once, and when its answer is lost its outcome is reported unknown.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::outcome_unknown;
use crate::client::failure::status_error;
use crate::client::retry::{retryable_code, retryable_status, status_text, Budget, RetryPolicy};
use crate::client::telemetry;
use crate::model::error::{self, Code, Error, Result};
use crate::model::idempotent::idempotent;
use crate::model::limits::{MAX_MUTATIONS_PER_REQUEST, MAX_REQUEST_BYTES};
use crate::model::proto::{MutateRowRequest, Mutation};
use crate::wire::builtin_metrics::{status_of, Method};
use crate::wire::channel::{at_deadline, DataChannel};
use crate::wire::codec::EncodedBatch;
use crate::wire::cookies::RoutingCookies;
use crate::wire::status::code_of;

/// How writes batch and retry, and how long a conditional write that
/// carries a row forward may be in flight (its horizon).
///
/// ```
/// use std::time::Duration;
/// use bigtable_ttl::writer::WriteOptions;
///
/// let options = WriteOptions::default().with_max_in_flight(8);
/// // Re-times and `put_if` over a link whose round trip can pass a second.
/// let slow_link = WriteOptions::default().with_horizon(Duration::from_secs(5));
/// # let _ = (options, slow_link);
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
    /// The longest a conditional write that must not carry a row past its
    /// expiry (`put_if`, `put_entry`, `update().apply()`, `touch`,
    /// `set_ttl`, `shift_expiry`, `retime`) may be in flight: its attempt
    /// is cut there (within the policy's attempt timeout and deadline),
    /// and it asks for the row live until then, so a row that expires
    /// sooner counts as expired to it. Longer lets it wait for a slower
    /// link; shorter lets it renew a lease or touch a row with less time
    /// left. `insert_if_absent`, `delete_if` and `increment` have none (see
    /// the conditional-writes guide).
    pub horizon: Duration,
}

impl Default for WriteOptions {
    /// 10,000 rows, 100,000 mutations or 16 MiB per request, 4 in flight,
    /// [`RetryPolicy::default`], a horizon of 1 second.
    fn default() -> Self {
        Self {
            max_rows_per_request: 10_000,
            max_mutations_per_request: MAX_MUTATIONS_PER_REQUEST,
            max_request_bytes: MAX_REQUEST_BYTES,
            max_in_flight: 4,
            retry: RetryPolicy::default(),
            horizon: DEFAULT_HORIZON,
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

    /// A conditional write that carries a row forward is in flight at most
    /// `horizon` ([`WriteOptions::horizon`]).
    #[must_use]
    pub fn with_horizon(mut self, horizon: Duration) -> Self {
        self.horizon = horizon;
        self
    }
}

/// The horizon of [`WriteOptions::default`]: short, as a lease renewed
/// with a second or two left is still renewed; far above a conditional
/// write's usual latency (a few milliseconds).
const DEFAULT_HORIZON: Duration = Duration::from_secs(1);

/// What a bulk write did, counted as it goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteStats {
    /// Rows handed to the writer and queued (bad input is not queued).
    pub rows_queued: u64,
    /// Rows Bigtable answered `OK` for.
    pub rows_written: u64,
    /// Rows reported failed (final status, retries exhausted, or not sent).
    pub rows_failed: u64,
    /// `MutateRows` requests sent, retries included.
    pub requests: u64,
    /// Requests that were retries of an earlier one's failed entries.
    pub retries: u64,
    /// Entries re-sent, summed over all retries.
    pub entries_retried: u64,
    /// Requests that failed as a whole (transport failure, timeout, or an
    /// error status for the request).
    pub request_failures: u64,
}

/// The counters behind [`WriteStats`], shared by a writer and its batches.
#[derive(Debug, Default)]
pub(crate) struct WriteCounters {
    pub(crate) rows_queued: AtomicU64,
    pub(crate) rows_written: AtomicU64,
    pub(crate) rows_failed: AtomicU64,
    requests: AtomicU64,
    retries: AtomicU64,
    entries_retried: AtomicU64,
    request_failures: AtomicU64,
}

/// Add `by` to `counter`.
pub(crate) fn bump(counter: &AtomicU64, by: usize) {
    counter.fetch_add(by as u64, Ordering::Relaxed);
}

impl WriteCounters {
    pub(crate) fn snapshot(&self) -> WriteStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WriteStats {
            rows_queued: get(&self.rows_queued),
            rows_written: get(&self.rows_written),
            rows_failed: get(&self.rows_failed),
            requests: get(&self.requests),
            retries: get(&self.retries),
            entries_retried: get(&self.entries_retried),
            request_failures: get(&self.request_failures),
        }
    }
}

/// One entry of a batch that was not (surely) written.
#[derive(Debug, Clone)]
pub(crate) struct Unwritten {
    /// Its index in the batch.
    pub(crate) index: usize,
    /// The status Bigtable gave the entry; `None` when no answer came for
    /// it (its outcome is unknown).
    pub(crate) code: Option<Code>,
    /// The code of what ended the request that carried it, for an entry
    /// without an answer of its own.
    pub(crate) request_code: Code,
    /// Why, in words.
    pub(crate) why: String,
}

/// What one batch ended with.
#[derive(Debug, Default)]
pub(crate) struct BatchReport {
    pub(crate) written: usize,
    pub(crate) failed: Vec<Unwritten>,
    /// The first attempt failed as a whole with a final error and nothing
    /// was written (missing table, permission…): later batches would too.
    pub(crate) fatal: Option<tonic::Status>,
    /// Attempts made.
    pub(crate) attempts: u32,
    /// How long they took.
    pub(crate) elapsed: Duration,
    /// Whether the server answered for any entry: the write made progress.
    pub(crate) answered: bool,
}

/// One entry's answer in a `MutateRows` response.
#[derive(Debug, Clone)]
struct EntryStatus {
    code: Code,
    message: String,
}

/// Why an attempt failed as a whole (no answer, or an error status for the
/// request), and whether re-sending is worth it.
#[derive(Debug)]
struct RequestFailure {
    retryable: bool,
    status: tonic::Status,
}

impl RequestFailure {
    fn describe(&self) -> String {
        status_text(&self.status)
    }
}

/// An entry to retry: its index, its own code (if it had an answer), the
/// request's code otherwise, and why.
type Retry = (usize, Option<Code>, Code, String);

/// Send one batch, retrying its failed entries within `budget`: every
/// attempt sends the entries still pending from `batch`'s one encoding,
/// with the routing cookies and retry delays the server gave earlier
/// attempts. A budget already spent sends nothing: every entry is
/// reported not written.
pub(super) async fn send_batch(
    channel: DataChannel,
    table_name: Arc<str>,
    batch: Arc<EncodedBatch>,
    mut budget: Budget,
    counters: Arc<WriteCounters>,
) -> BatchReport {
    let mut report = BatchReport::default();
    if budget.expired() {
        report.attempts = 0;
        report.failed = none_sent(batch.len());
        return report;
    }
    let mut cookies = RoutingCookies::default();
    // Indices into `batch` of the entries still to write; `None`: all.
    let mut pending: Option<Vec<usize>> = None;
    let mut rpc = channel.rpc(&table_name, Method::MutateRows);
    let report = loop {
        bump(&counters.requests, 1);
        if let Some(pending) = &pending {
            bump(&counters.retries, 1);
            bump(&counters.entries_retried, pending.len());
        }
        let sent = pending.as_ref().map_or(batch.len(), Vec::len);
        rpc.attempt_started();
        let (statuses, outcome) = rpc
            .within(attempt_once(
                &channel,
                &table_name,
                &batch,
                pending.clone(),
                sent,
                budget.attempt_timeout(),
                &mut cookies,
            ))
            .await;
        rpc.attempt_ended(attempt_status(&statuses, &outcome));
        report.attempts = budget.attempts();
        report.elapsed = budget.elapsed();
        report.answered |= statuses.iter().any(Option::is_some);
        let pending_now: Vec<usize> = pending.take().unwrap_or_else(|| (0..batch.len()).collect());
        if let Err(failure) = &outcome {
            bump(&counters.request_failures, 1);
            if !failure.retryable && budget.attempts() == 1 && statuses.iter().all(Option::is_none)
            {
                report.failed = refused(pending_now, failure);
                report.fatal = Some(failure.status.clone());
                break report;
            }
        }
        let retry = sort_entries(
            &batch,
            &table_name,
            pending_now,
            statuses,
            &outcome,
            &mut report,
        );
        if retry.is_empty() {
            break report;
        }
        let reason = format!(
            "{} of {} entries not written, first: {}",
            retry.len(),
            batch.len(),
            retry[0].3
        );
        let server_delay = outcome
            .as_ref()
            .err()
            .and_then(|f| crate::wire::status::retry_delay(&f.status));
        if !budget.wait_for(&reason, server_delay).await {
            let attempts = budget.attempts();
            report.attempts = attempts;
            report.elapsed = budget.elapsed();
            report
                .failed
                .extend(
                    retry
                        .into_iter()
                        .map(|(index, code, request_code, why)| Unwritten {
                            index,
                            code,
                            request_code,
                            why: format!("{why} (gave up after {attempts} attempts)"),
                        }),
                );
            break report;
        }
        pending = Some(retry.into_iter().map(|(i, _, _, _)| i).collect());
    };
    rpc.ended(
        report
            .failed
            .first()
            .map_or(Code::Ok, |f| f.code.unwrap_or(f.request_code)),
    );
    report
}

/// The `status` of one `MutateRows` attempt: the request's when it failed
/// as a whole, else the first failed entry's, else `OK`.
fn attempt_status(
    statuses: &[Option<EntryStatus>],
    outcome: &std::result::Result<(), RequestFailure>,
) -> Code {
    if let Err(failure) = outcome {
        return code_of(&failure.status);
    }
    statuses
        .iter()
        .flatten()
        .map(|s| s.code)
        .find(|code| *code != Code::Ok)
        .unwrap_or(Code::Ok)
}

/// Every entry of a batch of `len`, reported not written because the
/// write's deadline passed before anything was sent.
fn none_sent(len: usize) -> Vec<Unwritten> {
    (0..len)
        .map(|index| Unwritten {
            index,
            code: None,
            request_code: Code::DeadlineExceeded,
            why: "not sent: the write's deadline had passed".to_owned(),
        })
        .collect()
}

/// The `pending` entries of a first attempt the server refused as a whole
/// (a failure not worth retrying, no entry answered).
fn refused(pending: Vec<usize>, failure: &RequestFailure) -> Vec<Unwritten> {
    let why = format!("the request failed: {}", failure.describe());
    let code = code_of(&failure.status);
    pending
        .into_iter()
        .map(|index| Unwritten {
            index,
            code: None,
            request_code: code,
            why: why.clone(),
        })
        .collect()
}

/// Sort the entries `pending` of one attempt by their `statuses` and the
/// request's `outcome`: the written are counted in `report` (and in the
/// table's metrics), those that failed for good are added to its
/// `failed`, and those worth another attempt are returned.
fn sort_entries(
    batch: &EncodedBatch,
    table_name: &str,
    pending: Vec<usize>,
    statuses: Vec<Option<EntryStatus>>,
    outcome: &Result<(), RequestFailure>,
    report: &mut BatchReport,
) -> Vec<Retry> {
    let request_code = outcome
        .as_ref()
        .err()
        .map_or(Code::Unknown, |f| code_of(&f.status));
    let mut retry: Vec<Retry> = Vec::new();
    let (mut rows_written, mut bytes_written) = (0u64, 0u64);
    for (i, status) in pending.into_iter().zip(statuses) {
        match (status, outcome) {
            (Some(EntryStatus { code: Code::Ok, .. }), _) => {
                report.written += 1;
                rows_written += 1;
                bytes_written += batch.wire(i).len() as u64;
            }
            (Some(EntryStatus { code, message }), _) => {
                let why = format!("{code}: {message}");
                if retryable_code(code) {
                    retry.push((i, Some(code), code, why));
                } else {
                    report.failed.push(Unwritten {
                        index: i,
                        code: Some(code),
                        request_code: code,
                        why,
                    });
                }
            }
            // No status: the outcome is unknown.
            (None, Ok(())) => {
                retry.push((i, None, request_code, "no status returned".to_owned()));
            }
            (None, Err(failure)) if failure.retryable => retry.push((
                i,
                None,
                request_code,
                format!(
                    "outcome unknown, the request failed: {}",
                    failure.describe()
                ),
            )),
            (None, Err(failure)) => report.failed.push(Unwritten {
                index: i,
                code: None,
                request_code,
                why: format!("the request failed: {}", failure.describe()),
            }),
        }
    }
    telemetry::written(telemetry::table_id(table_name), rows_written, bytes_written);
    // What may not be applied twice is reported as it stands, never re-sent.
    let (retry, once): (Vec<Retry>, Vec<Retry>) =
        retry.into_iter().partition(|r| batch.repeatable(r.0));
    report.failed.extend(
        once.into_iter()
            .map(|(index, code, request_code, why)| Unwritten {
                index,
                code,
                request_code,
                why: format!("{why}; not sent again: {NOT_IDEMPOTENT}"),
            }),
    );
    retry
}

/// Why an entry or a row's mutations are sent at most once.
pub(crate) const NOT_IDEMPOTENT: &str = "its mutations are not idempotent (a SetCell at the \
     server's time, -1, an AddToCell or a MergeToCell would apply again)";

/// One `MutateRows` attempt with `batch`'s entries `selected` (all when
/// `None`; `sent` of them): each entry's status where the server gave one,
/// and the failure when the request failed as a whole.
async fn attempt_once(
    channel: &DataChannel,
    table_name: &Arc<str>,
    batch: &Arc<EncodedBatch>,
    selected: Option<Vec<usize>>,
    sent: usize,
    timeout: Duration,
    cookies: &mut RoutingCookies,
) -> (
    Vec<Option<EntryStatus>>,
    std::result::Result<(), RequestFailure>,
) {
    let mut statuses: Vec<Option<EntryStatus>> = vec![None; sent];
    let started = std::time::Instant::now();
    let call = async {
        let mut stream = channel
            .mutate_rows(
                table_name.clone(),
                batch.clone(),
                selected,
                timeout,
                cookies,
            )
            .await?;
        loop {
            let response = match stream.message().await {
                Ok(Some(response)) => response,
                Ok(None) => break,
                Err(status) => {
                    cookies.learn(status.metadata());
                    return Err(at_deadline(status, started, timeout));
                }
            };
            for entry in response.entries {
                let slot = usize::try_from(entry.index)
                    .ok()
                    .and_then(|i| statuses.get_mut(i));
                if let Some(slot) = slot {
                    let status = entry.status.unwrap_or_default();
                    *slot = Some(EntryStatus {
                        code: Code::from_i32(status.code),
                        message: status.message,
                    });
                }
            }
        }
        Ok::<(), tonic::Status>(())
    };
    let outcome = match tokio::time::timeout(timeout, call).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(status)) => {
            let status = at_deadline(status, started, timeout);
            Err(RequestFailure {
                retryable: retryable_status(&status),
                status,
            })
        }
        Err(_) => Err(RequestFailure {
            retryable: true,
            status: crate::wire::status::no_answer_within("the attempt timed out".into()),
        }),
    };
    (statuses, outcome)
}

/// One `MutateRow` on `table` (its id, for errors) at `table_path`,
/// retried within `budget` (routing cookies and the server's retry delays
/// honoured).
pub(crate) async fn mutate_row(
    channel: &DataChannel,
    table: &str,
    table_path: String,
    row_key: Vec<u8>,
    mutations: Vec<Mutation>,
    mut budget: Budget,
) -> Result<()> {
    let request = Arc::new(MutateRowRequest {
        table_name: table_path,
        row_key,
        mutations,
        app_profile_id: channel.app_profile().to_owned(),
        ..MutateRowRequest::default()
    });
    let mut cookies = RoutingCookies::default();
    let repeatable = idempotent(&request.mutations);
    let mut rpc = channel.rpc(&request.table_name, Method::MutateRow);
    loop {
        if budget.expired() {
            let status =
                crate::wire::status::not_sent("no time left for MutateRow before the deadline");
            return Err(status_error(
                table,
                Some(request.row_key.clone()),
                status,
                Some(&budget),
            ));
        }
        let timeout = budget.attempt_timeout();
        rpc.attempt_started();
        let answer = rpc
            .within(Box::pin(channel.mutate_row(
                &request,
                timeout,
                &mut cookies,
            )))
            .await;
        rpc.attempt_ended(status_of(&answer));
        let Err(status) = answer else {
            rpc.ended(Code::Ok);
            if cfg!(feature = "metrics") {
                let bytes: usize = request
                    .mutations
                    .iter()
                    .map(prost::Message::encoded_len)
                    .sum();
                telemetry::written(table, 1, (request.row_key.len() + bytes) as u64);
            }
            return Ok(());
        };
        if !repeatable && outcome_unknown(&status) {
            rpc.ended(code_of(&status));
            return Err(once_error(table, request.row_key.clone(), status, &budget));
        }
        if !(retryable_status(&status) && budget.wait_after(&status).await) {
            rpc.ended(code_of(&status));
            let key = Some(request.row_key.clone());
            return Err(status_error(table, key, status, Some(&budget)));
        }
    }
}

/// The error of a `MutateRow` sent once for want of idempotence whose
/// answer was lost: it may have been applied.
fn once_error(table: &str, row_key: Vec<u8>, status: tonic::Status, budget: &Budget) -> Error {
    tracing::debug!(%status, "MutateRow not sent again: {NOT_IDEMPOTENT}");
    let answered = u32::from(crate::wire::status::answered(&status));
    let lost = status_error(table, Some(row_key.clone()), status, Some(budget));
    Error::from(error::OutcomeUnknown {
        table: table.to_owned(),
        row_key,
        attempts: budget.attempts(),
        answered,
        horizon: None,
        lost: crate::wire::cause::no_answer(&lost),
        source: Box::new(lost),
    })
}
