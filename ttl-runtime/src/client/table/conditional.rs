//! Conditional writes (`CheckAndMutateRow`) on a [`Table`]: insert a row
//! only if no live row holds its key, put or delete one only if a field's
//! live value is what the caller expects. Every predicate sees what the
//! typed reader would see at the instant that makes the write safe
//! (`crate::model::condition`), so a cell that has expired but is not yet
//! garbage-collected never counts: an insert, which needs the row absent,
//! and a delete, which loses nothing if the row expires in flight, at the
//! table clock's "now" when they are sent; a `put_if`, which must not
//! carry a row past its expiry, at its horizon (that "now" plus the time
//! the server may still apply it, see `Table::horizon`), so that a row
//! that expires before it may land does not count.
//!
//! A conditional write is not idempotent: an attempt whose answer is lost
//! is never re-sent blindly (Google's clients do not retry it either).
//! Each call sends one attempt; when its answer is lost, the row is read: a
//! write whose cells are there, at their timestamps, was applied; an insert
//! that finds neither its cells nor any live row, and a delete whose row
//! still matches its condition, were not, and are sent again (at most
//! 5 sends in all); anything else, a read that fails or
//! finds no time left included, is [`Error::OutcomeUnknown`], saying how
//! many attempts were sent and how many Bigtable answered. A request the
//! server refused before processing it is sent again by the channel (it
//! was not applied). Every call keeps one deadline, its write policy's,
//! for all its steps
//! (see [`crate::retry`]).

use chrono::{DateTime, Utc};

use crate::client::failure::status_error;
use crate::client::table::{Table, Written};
use crate::client::telemetry;
use crate::model::condition::{present_row, Condition};
use crate::model::error::{self, Code, Error, Result};
use crate::model::key::AsKey;
use crate::model::mutation::{delete_owned, RowMutation};
use crate::model::policy::{from_micros, millis_floor};
use crate::model::proto::{mutation, CheckAndMutateRowRequest, Mutation, RowFilter};
use crate::model::row::{BigtableRow, MutationBuilder};
use crate::model::scan::Scan;
use crate::model::view::Expiring;
use crate::wire::status::{answered, code_of, cut_at_horizon, horizon_of};

/// What [`Table::insert_if_absent`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Insert<T> {
    /// No live row held the key: the row was written.
    Inserted(Written),
    /// A live row holds the key: nothing was written; this is the row.
    Exists(Expiring<T>),
}

/// The attempts a conditional call sent before its last, and how many of
/// them Bigtable answered: for the error that ends it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sent {
    pub(crate) attempts: u32,
    pub(crate) answered: u32,
}

impl Sent {
    /// One more attempt, answered or not.
    pub(crate) fn count(&mut self, answered: bool) {
        self.attempts += 1;
        self.answered += u32::from(answered);
    }
}

/// What a conditional attempt came to.
pub(crate) enum Checked {
    /// The server answered: whether the predicate matched.
    Answered(bool),
    /// The answer was lost: the write may or may not have been applied.
    Unknown(tonic::Status),
}

/// Tries of an insert whose row expires, is deleted or is not applied
/// while it runs, before it gives up with [`Error::Conflict`].
const INSERT_ROUNDS: u32 = 5;

/// Sends of one conditional write in all, when the answers to the ones
/// before were lost and a read proved them not applied (an insert that
/// finds neither its cells nor a live row, a delete whose row still
/// matches).
const CONDITIONAL_SENDS: u32 = INSERT_ROUNDS;

impl<T: BigtableRow> Table<T> {
    /// Write `row` only if no live row holds its key (an idempotency key, a
    /// dedupe marker, a lock). A row whose cells have all expired counts as
    /// absent even before garbage collection removes it. The row is judged
    /// when the insert is sent: a row live then wins, however soon it
    /// expires and however late the insert lands, so a lease taken with
    /// it is exclusive until its expiry (see the conditional-writes
    /// guide).
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table, Insert};
    /// # use chrono::{DateTime, Utc};
    /// #[derive(BigtableRow)]
    /// #[bigtable(table = "jobs", family = "j")]
    /// #[ttl(default = "1h")]
    /// struct Claim {
    ///     #[bigtable(key)]
    ///     job: String,
    ///     worker: String,
    /// }
    /// # async fn run(claims: Table<Claim>) -> bigtable_ttl::Result<()> {
    /// let claim = Claim { job: "job-42".into(), worker: "w7".into() };
    /// match claims.insert_if_absent(&claim).await? {
    ///     Insert::Inserted(written) => println!("mine until {}", written.expires_at),
    ///     Insert::Exists(other) => println!("{} has it", other.worker),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Table::put`] before anything is sent; [`Error::Server`];
    /// [`Error::Conflict`] when the key's row keeps appearing and vanishing.
    pub async fn insert_if_absent(&self, row: &T) -> Result<Insert<T>> {
        self.insert_if_absent_with(row.mutation()).await
    }

    /// [`Table::insert_if_absent`] with per-write overrides (`.ttl()`,
    /// `.expire_at()`): a lease for 30 seconds.
    ///
    /// # Errors
    /// As [`Table::insert_if_absent`].
    pub async fn insert_if_absent_with(
        &self,
        builder: MutationBuilder<'_, T>,
    ) -> Result<Insert<T>> {
        let this = self.for_write_call();
        let call = this.insert_if_absent_untraced(builder);
        telemetry::operation(self.name(), "insert_if_absent", |_| 1, call).await
    }

    async fn insert_if_absent_untraced(
        &self,
        builder: MutationBuilder<'_, T>,
    ) -> Result<Insert<T>> {
        // The last round's answer, when it was lost and the read showed the
        // insert was not applied: then nothing kept changing the row, and
        // the call ends with what went wrong, not `Conflict`.
        let mut last_lost = None;
        let mut sent = Sent::default();
        for _ in 0..INSERT_ROUNDS {
            let now = self.clock().now();
            let m = builder.build_checked(self.name(), now)?;
            // The row must be absent when the insert is sent, the earliest
            // instant the server can apply it: a row live then (a lease
            // still held) wins, however soon it expires and however late
            // the insert lands. An incomplete row exists: never
            // overwritten. No horizon: judged at its sending, the insert
            // is safe whenever it lands.
            let predicate = present_row(T::SCHEMA, now);
            let checked = self
                .check_and_mutate(&m.row_key, predicate, Vec::new(), m.mutations.clone())
                .await?;
            let lost = match checked {
                Checked::Answered(false) => return Ok(Insert::Inserted(written(&m, now)?)),
                Checked::Answered(true) => None,
                Checked::Unknown(status) => {
                    if self.settle_after(&m, &status, sent).await? {
                        return Ok(Insert::Inserted(written(&m, now)?));
                    }
                    tracing::debug!(table = %self.name(), %status, "an insert's answer was lost and its cells are not there");
                    Some(status)
                }
            };
            // A live row held the key (or the lost attempt was not applied):
            // that row, unless it has expired or gone since. After a lost
            // answer, only this read can show the insert was not applied.
            let live = match (self.live_row(&m.row_key).await, lost) {
                // Its cells are gone and another row is live: the insert
                // may have landed and been replaced since. Only a row
                // found absent shows the lost insert was not applied.
                (Ok(Some(_)), Some(status)) => {
                    return Err(self.outcome_unknown_after(m.row_key, status, sent));
                }
                (Ok(live), lost) => {
                    sent.count(lost.as_ref().is_none_or(answered));
                    last_lost = lost;
                    live
                }
                (Err(e), None) => return Err(e),
                (Err(e), Some(status)) => {
                    tracing::debug!(table = %self.name(), error = %e, "the read settling a lost insert failed");
                    return Err(self.outcome_unknown_after(m.row_key, status, sent));
                }
            };
            if let Some(live) = live {
                return Ok(Insert::Exists(live));
            }
        }
        let row_key = builder.row().row_key()?;
        if let Some(status) = last_lost {
            // Every lost attempt was proved not applied.
            return Err(self.not_applied(row_key, status, sent));
        }
        Err(Error::from(error::Conflict {
            table: self.name().to_owned(),
            row_key,
            attempts: INSERT_ROUNDS,
        }))
    }

    /// Write `row` (replacing its columns, as [`Table::put`]) only if
    /// `condition` holds for the live row: optimistic concurrency on a
    /// version field, "renew the lease only if I hold it". `None` when the
    /// condition did not hold and nothing was written. The row must be
    /// live, and the condition hold, at the write's horizon (the latest
    /// instant it may land, at most 1 s away): a row that expires sooner
    /// counts as expired, so a `put_if` never brings back a row that
    /// expired while it was in flight.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// #[derive(BigtableRow, Clone)]
    /// #[bigtable(table = "docs", family = "d")]
    /// #[ttl(default = "30d")]
    /// struct Doc {
    ///     #[bigtable(key)]
    ///     id: String,
    ///     version: i64,
    ///     body: String,
    /// }
    /// # async fn run(docs: Table<Doc>) -> bigtable_ttl::Result<()> {
    /// let read = docs.get(&"readme".to_owned()).await?.expect("a doc");
    /// let next = Doc { version: read.version + 1, body: "edited".into(), ..read.value.clone() };
    /// if docs.put_if(&next, Doc::VERSION.equals(&read.version)).await?.is_none() {
    ///     println!("someone else edited it first");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Table::put`] before anything is sent ([`Error::Encode`] for a
    /// condition whose value does not encode); [`Error::Server`];
    /// [`Error::OutcomeUnknown`] when the answer was lost and the row does
    /// not show whether it was applied.
    pub async fn put_if(&self, row: &T, condition: Condition<T>) -> Result<Option<Written>> {
        self.put_if_with(row.mutation(), condition).await
    }

    /// [`Table::put_if`] with per-write overrides (`.ttl()`, `.expire_at()`).
    ///
    /// # Errors
    /// As [`Table::put_if`].
    pub async fn put_if_with(
        &self,
        builder: MutationBuilder<'_, T>,
        condition: Condition<T>,
    ) -> Result<Option<Written>> {
        telemetry::operation(
            self.name(),
            "put_if",
            |w| u64::from(w.is_some()),
            async move {
                let this = self.for_write_call();
                let now = self.clock().now();
                let m = builder.build_checked(self.name(), now)?;
                let (cut, horizon) = this.horizon(now);
                let predicate = condition.predicate_for_write(now, horizon)?;
                let checked = cut
                    .check_and_mutate(&m.row_key, predicate, m.mutations.clone(), Vec::new())
                    .await?;
                match checked {
                    Checked::Answered(true) => Ok(Some(written(&m, now)?)),
                    Checked::Answered(false) => Ok(None),
                    Checked::Unknown(status) => {
                        if this.settle(&m, &status).await? {
                            Ok(Some(written(&m, now)?))
                        } else {
                            Err(self.outcome_unknown(m.row_key, status))
                        }
                    }
                }
            },
        )
        .await
    }

    /// Delete `T`'s row with key `key` (every cell `T` owns, as
    /// [`Table::delete`] does) only if `condition` holds for the live row
    /// ("release the lock only if I hold it"). Whether it was deleted. The
    /// condition is judged when the delete is sent (a delete that lands
    /// after the row expired removes nothing a reader could see): a
    /// holder's release succeeds while its lease is live.
    ///
    /// # Errors
    /// Key errors, [`Error::Encode`] for a condition whose value does not
    /// encode, before anything is sent; [`Error::Server`];
    /// [`Error::OutcomeUnknown`] when the answer was lost.
    pub async fn delete_if<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        condition: Condition<T>,
    ) -> Result<bool> {
        telemetry::operation(
            self.name(),
            "delete_if",
            |deleted| u64::from(*deleted),
            async move {
                let row_key = self.row_key(key)?;
                self.for_write_call()
                    .delete_if_untraced(row_key, &condition)
                    .await
            },
        )
        .await
    }

    async fn delete_if_untraced(&self, row_key: Vec<u8>, condition: &Condition<T>) -> Result<bool> {
        let mut sent = Sent::default();
        loop {
            // Judged when sent: a delete that lands after the row expired
            // removes nothing a reader could see, so it needs no horizon
            // (a holder's release of a lease about to expire still
            // succeeds).
            let predicate = condition.predicate(self.clock().now())?;
            let status = match self
                .check_and_mutate(&row_key, predicate, delete_owned(T::SCHEMA), Vec::new())
                .await?
            {
                Checked::Answered(deleted) => return Ok(deleted),
                Checked::Unknown(status) => status,
            };
            // The answer was lost: a row that still matches the condition
            // was not deleted (a delete applied leaves nothing of it to
            // match, unless another writer wrote the same value again), and
            // the delete is sent again; anything else cannot be told apart
            // from another writer's change.
            let now = self.clock().now();
            let still = self
                .raw()
                .read_row(
                    row_key.as_slice(),
                    Some(crate::client::data::RowFilter::from_wire(
                        condition.predicate(now)?,
                    )),
                )
                .await;
            match still {
                Ok(Some(_)) => {
                    sent.count(answered(&status));
                    if sent.attempts >= CONDITIONAL_SENDS {
                        return Err(self.not_applied(row_key, status, sent));
                    }
                    tracing::debug!(table = %self.name(), %status, "a delete's answer was lost and the row still matches: sending it again");
                }
                Ok(None) => return Err(self.outcome_unknown_after(row_key, status, sent)),
                Err(e) => {
                    tracing::debug!(table = %self.name(), error = %e, "the read settling a lost delete failed");
                    return Err(self.outcome_unknown_after(row_key, status, sent));
                }
            }
        }
    }

    /// The error of a conditional call whose attempts (`sent`, the last
    /// ending with `status`) were all proved not applied: the last
    /// attempt's failure, with every attempt counted.
    fn not_applied(&self, row_key: Vec<u8>, status: tonic::Status, sent: Sent) -> Error {
        let mut error = status_error(self.name(), Some(row_key), status, None);
        if let Error::Server(e) = &mut error {
            e.attempts = sent.attempts;
        }
        error
    }

    /// One `CheckAndMutateRow` attempt, never re-sent: an error the server
    /// answered with is final ([`Error::Server`]); a lost answer (a timeout,
    /// a broken connection) is [`Checked::Unknown`].
    pub(crate) async fn check_and_mutate(
        &self,
        row_key: &[u8],
        predicate: RowFilter,
        true_mutations: Vec<Mutation>,
        false_mutations: Vec<Mutation>,
    ) -> Result<Checked> {
        let request = CheckAndMutateRowRequest {
            table_name: self.connection().table_path(self.name()),
            row_key: row_key.to_vec(),
            predicate_filter: Some(predicate),
            true_mutations,
            false_mutations,
            ..CheckAndMutateRowRequest::default()
        };
        self.layout()?;
        let status = match self.raw().check_and_mutate_once(request).await {
            Ok(matched) => return Ok(Checked::Answered(matched)),
            Err(status) => status,
        };
        if outcome_unknown(&status) {
            // The library's own cut at the write's horizon says so, and
            // which setting to change.
            let status = match self.cut_at_horizon {
                Some(horizon) if code_of(&status) == Code::DeadlineExceeded => {
                    cut_at_horizon(&status, horizon)
                }
                _ => status,
            };
            Ok(Checked::Unknown(status))
        } else {
            Err(status_error(
                self.name(),
                Some(row_key.to_vec()),
                status,
                None,
            ))
        }
    }

    /// Whether the row holds every cell `m` sets, at its timestamp, with its
    /// value, and no cell in a column `m` only deletes: the write was
    /// applied (and not replaced since).
    pub(crate) async fn holds(&self, m: &RowMutation) -> Result<bool> {
        let cells = self
            .raw()
            .read_row(m.row_key.as_slice(), None)
            .await?
            .map(|row| row.cells)
            .unwrap_or_default();
        let sets = |family: &str, qualifier: &[u8]| {
            m.mutations.iter().any(|other| {
                matches!(&other.mutation, Some(mutation::Mutation::SetCell(set))
                    if set.family_name == family && set.column_qualifier == qualifier)
            })
        };
        Ok(m.mutations.iter().all(|mutation| match &mutation.mutation {
            Some(mutation::Mutation::SetCell(set)) => cells.iter().any(|c| {
                c.family == set.family_name
                    && c.qualifier == set.column_qualifier
                    && c.timestamp_micros == set.timestamp_micros
                    && c.value == set.value
            }),
            // A column only cleared holds no cell once the write is applied
            // (a write that clears nothing else could otherwise count as
            // applied without any evidence).
            Some(mutation::Mutation::DeleteFromColumn(d))
                if !sets(&d.family_name, &d.column_qualifier) =>
            {
                !cells
                    .iter()
                    .any(|c| c.family == d.family_name && c.qualifier == d.column_qualifier)
            }
            _ => true,
        }))
    }

    /// After a conditional write `m` whose answer was lost (`lost`):
    /// whether the row shows it applied ([`Table::holds`]). A read that
    /// fails, whatever its error (no time left for it included), settles
    /// nothing: [`Error::OutcomeUnknown`], never the read's own error.
    pub(crate) async fn settle(&self, m: &RowMutation, lost: &tonic::Status) -> Result<bool> {
        self.settle_after(m, lost, Sent::default()).await
    }

    /// [`Table::settle`] after the attempts `before` the lost one.
    pub(crate) async fn settle_after(
        &self,
        m: &RowMutation,
        lost: &tonic::Status,
        before: Sent,
    ) -> Result<bool> {
        self.holds(m).await.map_err(|e| {
            tracing::debug!(table = %self.name(), error = %e, "the read settling a lost conditional write failed");
            self.outcome_unknown_after(m.row_key.clone(), lost.clone(), before)
        })
    }

    /// The live row under `row_key`, read now.
    /// The live row at `row_key`; an incomplete one is
    /// [`Error::Decode`] whatever the read options say: it must not pass
    /// for an absent row.
    async fn live_row(&self, row_key: &[u8]) -> Result<Option<Expiring<T>>> {
        Ok(self
            .strict()
            .scan(Scan::keys([row_key]).limit(1))
            .await?
            .pop())
    }

    /// [`Error::OutcomeUnknown`] for the row `row_key` after one attempt,
    /// the answer lost (or not telling) being `status`.
    pub(crate) fn outcome_unknown(&self, row_key: Vec<u8>, status: tonic::Status) -> Error {
        self.outcome_unknown_after(row_key, status, Sent::default())
    }

    /// [`Table::outcome_unknown`] after the attempts `before` counted
    /// (those proved not applied, or answered, before the last).
    pub(crate) fn outcome_unknown_after(
        &self,
        row_key: Vec<u8>,
        status: tonic::Status,
        before: Sent,
    ) -> Error {
        let answered = before.answered + u32::from(answered(&status));
        let horizon = horizon_of(&status);
        let cause = crate::wire::status::cause(status);
        Error::from(error::OutcomeUnknown {
            table: self.name().to_owned(),
            row_key,
            attempts: before.attempts + 1,
            answered,
            horizon,
            lost: crate::wire::cause::no_answer(&cause),
            source: Box::new(cause),
        })
    }
}

/// Whether a failed conditional attempt may have been applied: its answer
/// was lost (a timeout, a transport failure, an unavailable server) rather
/// than an error the server decided on before applying anything.
pub(crate) fn outcome_unknown(status: &tonic::Status) -> bool {
    crate::client::data::outcome_unknown(status)
}

/// What a write at `now` stored, as [`Written`].
fn written(m: &RowMutation, now: DateTime<Utc>) -> Result<Written> {
    Ok(Written::new(m, from_micros(millis_floor(now)?)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_answers_are_unknown_and_server_decisions_are_not() {
        for status in [
            tonic::Status::deadline_exceeded("timed out"),
            tonic::Status::unavailable("connection reset"),
            tonic::Status::cancelled("Timeout expired"),
        ] {
            assert!(outcome_unknown(&status), "{status:?}");
        }
        for status in [
            tonic::Status::not_found("no table"),
            tonic::Status::invalid_argument("bad filter"),
            tonic::Status::permission_denied("no"),
            tonic::Status::failed_precondition("no"),
        ] {
            assert!(!outcome_unknown(&status), "{status:?}");
        }
    }
}
