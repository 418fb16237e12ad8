//! When a request is retried, and how long the library keeps trying.
//!
//! Retrying is safe for everything this library sends. A write is a
//! `DeleteFromColumn` of each written column followed by a `SetCell` with an
//! explicit timestamp, in one atomic row mutation: applying it twice leaves
//! the same cells as applying it once. A read is resumed after the last row
//! it delivered, so nothing is delivered twice.
//!
//! What is retried:
//!
//! * **Per-entry statuses** of `MutateRows` and whole-request statuses with
//!   the codes Google's clients retry for idempotent requests:
//!   `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`, plus
//!   `RESOURCE_EXHAUSTED` (Bigtable's answer when it throttles a client:
//!   waiting and retrying is what it asks for).
//! * **Transport failures** (connection refused or reset, an HTTP/2 stream
//!   cut): the outcome of the request is unknown, and re-sending is safe.
//!   They are told apart from statuses the server sent by carrying the
//!   transport error as their source.
//! * An attempt that exceeds [`RetryPolicy::attempt_timeout`] (its outcome
//!   is unknown too).
//!
//! * **Any status carrying a `google.rpc.RetryInfo`**: the server asks for
//!   a retry after the delay it names, and that delay replaces the
//!   backoff's (as Google's Java client does); the attempt count and the
//!   overall deadline still hold, so a delay that would end past the
//!   deadline ends the call instead.
//!
//! Everything else (`NOT_FOUND`, `INVALID_ARGUMENT`, `PERMISSION_DENIED`,
//! `INTERNAL` sent by the server, `FAILED_PRECONDITION`, …) is final on the
//! first answer. `CheckAndMutateRow` and `ReadModifyWriteRow` are never
//! retried, whatever the answer (they are not idempotent).
//!
//! Delays grow exponentially with jitter ([`backon`]'s
//! `ExponentialBuilder`), and an overall deadline bounds the whole effort.
//!
//! # Which policy governs which call
//!
//! Every call ends by the deadline of the policy that governs it, whatever
//! the server does (answers nothing, sends headers and stops, answers
//! slowly): the attempt under way when the deadline comes is cut there,
//! not allowed its whole [`RetryPolicy::attempt_timeout`], and no attempt
//! starts after it. Fetching an access token (on Cloud Bigtable) is part
//! of the attempt: it counts against the attempt timeout and the deadline.
//!
//! | calls | policy | its deadline bounds |
//! |---|---|---|
//! | `Table::get`, `entries`; `RawTable::read_row`; `split_scan`, `sample_row_keys`, `ops::key_samples`, `ops::plan_parts` | the read options' ([`Table::with_read_options`](crate::Table::with_read_options), [`RawTable::with_read_options`](crate::data::RawTable::with_read_options)) | the whole call |
//! | `Table::scan`, `stream`, `scan_parallel`; `RawTable::read_rows` | the read options' | the time without a row: every row received renews it (each part of a parallel scan on its own) |
//! | `Table::put`, `put_with`, `delete`, `remove_entry`, `put_entry` in a struct without required fields; `RawTable::mutate_row`, `mutate_rows` | the write policy ([`Table::with_write_options`](crate::Table::with_write_options), [`RawTable::with_write_retry`](crate::data::RawTable::with_write_retry)) | the whole call |
//! | `Table::put_all`, `put_all_with`, `writer()` | the write policy | each request, and the time the write goes without an answer: a request that would start later than the deadline after the last answer (or after the write got busy) is not sent, its rows reported failed |
//! | conditional and multi-step calls: `insert_if_absent`, `put_if`, `delete_if`, `put_entry` (in a struct with a required field), `increment`, `update().apply()`, `retime`, `touch`, `set_ttl`, `shift_expiry`; `RawTable::check_and_mutate_row`, `read_modify_write_row` | the write policy | **the whole call, every step together**: its reads (each attempt within the read options' attempt timeout), its conditional writes and increments (each within the write policy's attempt timeout), the read that settles a lost answer, every round |
//! | `Table::ensure_schema`, `verify_schema`; `admin::ensure_schema`, `verify_schema`, `live_rules` | the connection's admin policy ([`ConnectionBuilder::admin_retry`](crate::ConnectionBuilder::admin_retry)) | the whole call, every request of it together (the read `ensure_schema` makes to see whether a family holds data included) |
//! | `ops::inspect` | the connection's policy ([`ConnectionBuilder::retry`](crate::ConnectionBuilder::retry)) | the whole call (its admin request also within the admin policy's) |
//! | `ops::audit`, `apply`, `expiries`, `migrate`, `verify`, `verify_part` | admin requests: the admin policy; reads and writes: the connection's policy | each admin request; each read the time without a row; each batch of `migrate`'s writes |
//!
//! A conditional write that carries a row forward (`put_if`,
//! `put_entry`, `update`, the re-times; not `insert_if_absent`,
//! `delete_if`, `increment`, nor `RawTable::check_and_mutate_row`, whose
//! predicate is the caller's) has its attempt cut at its *horizon*
//! ([`WriteOptions::horizon`](crate::writer::WriteOptions::horizon), 1 s
//! by default) after it decides, whatever the attempt timeout: it asks for
//! a row live until then, so that it cannot land on a row that expired
//! while it was in flight (a row that expires within that time counts as
//! expired to it). An attempt the library cut there before any answer says
//! so in its error, and names the setting. `insert_if_absent` and
//! `delete_if` are judged when they are sent and need no horizon (see the
//! conditional-writes guide).
//!
//! A request the server refused before processing it (an HTTP/2
//! `RST_STREAM REFUSED_STREAM`, or a stream past the last stream id of a
//! `GOAWAY`) was not applied, whatever the call: it is sent again at once
//! on another stream, at most three sends in all within the attempt (as
//! gRPC's transparent retry), then retried as above where the call is
//! retried at all; it never ends a call with an unknown outcome.
//!
//! A conditional call sends one attempt: when its answer is lost, the row
//! is read to settle what happened, within the same deadline; when that
//! read does not show it applied (or fails, or no time is left for it),
//! the call ends with [`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown),
//! never with the error of a later step. Only a write the read proves not
//! applied is sent again (an insert that finds neither its cells nor a
//! live row, a `delete_if` whose row still matches), at most 5 sends in
//! all; a re-time or an update never is. A call that ran out of time
//! before sending its conditional write sends nothing and fails with
//! `DEADLINE_EXCEEDED`.

use std::error::Error as _;
use std::time::{Duration, Instant};

use backon::{BackoffBuilder as _, ExponentialBuilder};

use crate::client::telemetry;
use crate::model::error::Code;
use crate::wire::status::{code_of, retry_delay};

/// How requests are retried: attempts, delays and deadlines.
///
/// ```
/// use std::time::Duration;
/// use bigtable_ttl::retry::RetryPolicy;
///
/// let patient = RetryPolicy::default().with_deadline(Duration::from_secs(300));
/// let never = RetryPolicy::none();
/// # let _ = (patient, never);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1: never retry).
    pub max_attempts: u32,
    /// The delay before the first retry; each later one doubles, up to
    /// `max_delay`, and each is stretched by a random factor in `[1, 2)`.
    pub initial_delay: Duration,
    /// The longest delay between two attempts (before jitter).
    pub max_delay: Duration,
    /// The most time one attempt may take; a longer one is abandoned and its
    /// outcome counts as unknown (retried).
    pub attempt_timeout: Duration,
    /// The most time all attempts of one request (one batch of a write, one
    /// read) may take together, delays included: the attempt under way is
    /// cut there, and no retry starts after it. A call of several steps (a
    /// conditional write and the read settling it, an `update`'s rounds)
    /// keeps one such deadline for all of them; a scan's is renewed by
    /// every row. The [module documentation](self) says which policy
    /// governs which call.
    pub deadline: Duration,
}

impl Default for RetryPolicy {
    /// 10 attempts, 50 ms doubling to 5 s, 30 s per attempt, 2 minutes in all.
    fn default() -> Self {
        Self {
            max_attempts: 10,
            initial_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(5),
            attempt_timeout: Duration::from_secs(30),
            deadline: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// At most `attempts` attempts, the first included (1: never retry).
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// `delay` before the first retry (doubling after).
    #[must_use]
    pub fn with_initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// At most `delay` between two attempts (before jitter).
    #[must_use]
    pub fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// At most `timeout` for one attempt.
    #[must_use]
    pub fn with_attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = timeout;
        self
    }

    /// At most `deadline` for all attempts of one request together.
    #[must_use]
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// One attempt, no retry.
    #[must_use]
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The delays before the 2nd, 3rd, … attempt.
    pub(crate) fn delays(&self) -> impl Iterator<Item = Duration> + Send {
        ExponentialBuilder::new()
            .with_jitter()
            .with_min_delay(self.initial_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_attempts.saturating_sub(1) as usize)
            .build()
    }

    /// The instant a call starting now must end by: now plus the deadline
    /// (far in the future for a deadline no instant can hold).
    pub(crate) fn deadline_from_now(&self) -> Instant {
        deadline_after(Instant::now(), self.deadline)
    }

    /// A fresh retry budget, starting now, its first attempt under way.
    pub(crate) fn start(&self) -> Budget {
        self.start_within(None)
    }

    /// [`RetryPolicy::start`], its deadline no later than `cap` (an
    /// operation's overall deadline, for a step of it).
    pub(crate) fn start_within(&self, cap: Option<Instant>) -> Budget {
        let started = Instant::now();
        let own = deadline_after(started, self.deadline);
        Budget {
            policy: *self,
            delays: None,
            deadline: cap.map_or(own, |cap| cap.min(own)),
            attempt_timeout: self.attempt_timeout,
            started,
            attempts: 1,
            exhausted: false,
        }
    }
}

/// Thirty years: later than any deadline a policy means, and still an
/// instant (`Duration::MAX` from now is not one).
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// `start + deadline`; a deadline past what an instant can hold is no
/// deadline.
pub(crate) fn deadline_after(start: Instant, deadline: Duration) -> Instant {
    start
        .checked_add(deadline)
        .unwrap_or_else(|| start + FAR_FUTURE)
}

/// The attempts left for one request, and what was spent so far (for the
/// error that ends it).
pub(crate) struct Budget {
    policy: RetryPolicy,
    /// Made at the first retry: most calls never retry, and a call of
    /// several steps makes a budget for each.
    delays: Option<Box<dyn Iterator<Item = Duration> + Send>>,
    deadline: Instant,
    attempt_timeout: Duration,
    started: Instant,
    attempts: u32,
    exhausted: bool,
}

impl Budget {
    /// The time the next attempt may take.
    pub(crate) fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
            .min(self.deadline.saturating_duration_since(Instant::now()))
            .max(Duration::from_millis(1))
    }

    /// Wait before the next attempt, the last one having failed for
    /// `reason` (told in a `tracing` event and counted in the operation's
    /// metrics); `false` when no attempt is left (count or deadline),
    /// without waiting.
    pub(crate) async fn wait(&mut self, reason: &(dyn std::fmt::Display + Sync)) -> bool {
        self.wait_for(reason, None).await
    }

    /// [`Budget::wait`] after a failed attempt whose status was `status`:
    /// the server's retry delay (`RetryInfo`), when it names one, replaces
    /// the backoff's.
    pub(crate) async fn wait_after(&mut self, status: &tonic::Status) -> bool {
        self.wait_for(&status_text(status), retry_delay(status))
            .await
    }

    /// [`Budget::wait`], waiting `server_delay` instead of the backoff's
    /// delay when the server asked for one. The attempt still counts.
    pub(crate) async fn wait_for(
        &mut self,
        reason: &(dyn std::fmt::Display + Sync),
        server_delay: Option<Duration>,
    ) -> bool {
        let policy = self.policy;
        let delays = self.delays.get_or_insert_with(|| Box::new(policy.delays()));
        let Some(backoff) = delays.next() else {
            self.exhausted = true;
            return false;
        };
        let delay = server_delay.unwrap_or(backoff);
        if Instant::now()
            .checked_add(delay)
            .is_none_or(|next| next >= self.deadline)
        {
            self.exhausted = true;
            return false;
        }
        telemetry::retrying(self.attempts, delay, reason);
        tokio::time::sleep(delay).await;
        telemetry::attempt_started();
        self.attempts += 1;
        true
    }

    /// The time left before the deadline.
    pub(crate) fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed: nothing more may be sent.
    pub(crate) fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Attempts started so far, the first included.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Time since the first attempt started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether [`Budget::wait`] refused a retry because the budget ran out.
    pub(crate) fn exhausted(&self) -> bool {
        self.exhausted
    }
}

/// A status in one line, for errors and retry events: its code, message
/// and the chain of its sources, each cause once
/// (`UNAVAILABLE: tcp connect error: transport error: Connection refused`).
pub(crate) fn status_text(status: &tonic::Status) -> String {
    crate::wire::status::cause(status).chain()
}

/// Whether a status code (of a request, or of one entry of `MutateRows`)
/// is worth retrying for an idempotent request ([`Code::is_transient`]).
#[must_use]
pub fn retryable_code(code: Code) -> bool {
    code.is_transient()
}

/// Rounds of a conditional rewrite of one row (`Table::retime`, `touch`,
/// `update`, `add_markers`) made while other writes keep changing the row:
/// each round reads the row, plans the write and sends it conditional on
/// the row being unchanged; a round whose condition failed was answered
/// (nothing was applied) and starts again from a new read. After this many,
/// [`crate::Error::Conflict`].
pub const RETIME_ROUNDS: u32 = 8;

/// Whether a failed idempotent request (a status the server sent, or one
/// tonic made of a transport failure) is worth retrying: a retryable code,
/// a transport failure, or a status in which the server asks for a retry
/// (`RetryInfo`).
pub(crate) fn retryable_status(status: &tonic::Status) -> bool {
    // An emulator that refuses a first connection is not running there:
    // said at once, not after the policy's attempts.
    if crate::wire::cause::emulator_not_there(status) {
        return false;
    }
    retryable_code(code_of(status)) || is_transport(status) || retry_delay(status).is_some()
}

/// A status tonic made of a transport failure (it keeps the failure as its
/// source); a status the server sent has none.
fn is_transport(status: &tonic::Status) -> bool {
    status.source().is_some()
        && !matches!(
            status.code(),
            tonic::Code::InvalidArgument
                | tonic::Code::NotFound
                | tonic::Code::PermissionDenied
                | tonic::Code::Unauthenticated
                | tonic::Code::Unimplemented
                | tonic::Code::FailedPrecondition
                | tonic::Code::OutOfRange
                | tonic::Code::AlreadyExists
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_with_jitter_and_stop_at_the_attempt_count() {
        let policy = RetryPolicy {
            max_attempts: 5,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(40),
            ..RetryPolicy::default()
        };
        let delays: Vec<_> = policy.delays().collect();
        assert_eq!(delays.len(), 4);
        for (d, base) in delays.iter().zip([10, 20, 40, 40]) {
            let base = Duration::from_millis(base);
            assert!(*d >= base && *d < 2 * base, "{d:?} vs {base:?}");
        }
        assert_eq!(RetryPolicy::none().delays().count(), 0);
    }

    #[tokio::test]
    async fn the_deadline_stops_retries() {
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(30),
            deadline: Duration::from_millis(20),
            ..RetryPolicy::default()
        };
        let mut budget = policy.start();
        assert!(!budget.wait(&"a test").await);
        assert!(budget.attempt_timeout() <= Duration::from_millis(20));
    }

    #[tokio::test]
    async fn the_servers_delay_replaces_the_backoff_within_the_deadline() {
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(1),
            deadline: Duration::from_millis(400),
            ..RetryPolicy::default()
        };
        let mut budget = policy.start();
        let started = Instant::now();
        assert!(
            budget
                .wait_for(&"asked", Some(Duration::from_millis(150)))
                .await
        );
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert_eq!(budget.attempts(), 2);
        // A delay past the deadline ends the call at once.
        let before = Instant::now();
        assert!(
            !budget
                .wait_for(&"asked", Some(Duration::from_secs(5)))
                .await
        );
        assert!(budget.exhausted());
        assert!(before.elapsed() < Duration::from_millis(100));
    }

    #[tokio::test]
    async fn a_budget_makes_its_delays_at_its_first_retry() {
        let policy = RetryPolicy::default().with_initial_delay(Duration::from_millis(1));
        let mut budget = policy.start();
        assert!(
            budget.delays.is_none(),
            "made for a call that may never retry"
        );
        assert!(budget.wait(&"a test").await);
        assert!(budget.delays.is_some());
        assert_eq!(budget.attempts(), 2);
    }

    #[test]
    fn a_cap_brings_the_deadline_forward() {
        let cap = Instant::now() + Duration::from_millis(10);
        let budget = RetryPolicy::default().start_within(Some(cap));
        assert_eq!(budget.deadline, cap);
        assert!(budget.attempt_timeout() <= Duration::from_millis(10));
        assert!(!budget.expired());
        let passed = RetryPolicy::default().start_within(Some(Instant::now()));
        assert!(passed.expired());
    }

    #[test]
    fn codes() {
        assert!(retryable_code(Code::Unavailable));
        assert!(retryable_code(Code::ResourceExhausted));
        assert!(!retryable_code(Code::Internal));
        assert!(!retryable_code(Code::NotFound));
        // Sent by the server: no source.
        assert!(!retryable_status(&tonic::Status::internal("boom")));
        assert!(retryable_status(&tonic::Status::unavailable("down")));
        // Made of a transport failure.
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let status = tonic::Status::from_error(Box::new(reset));
        assert!(retryable_status(&status), "{status:?}");
        // Any code, when the server asks for a retry.
        let asked = crate::wire::status::tests::with_retry_info(
            tonic::Code::Internal,
            Duration::from_millis(5),
        );
        assert!(retryable_status(&asked));
    }
}
