//! Conditional writes (`CheckAndMutateRow`) on a [`Table`]: insert a row
//! only if no live row holds its key, put or delete one only if a field's
//! live value is what the caller expects. Every predicate sees what the
//! typed reader would see at the write's horizon (the table clock's "now"
//! plus the time the server may still apply it, see `Table::horizon`;
//! `crate::model::condition`), so a cell that has expired but is not yet
//! garbage-collected never counts, nor one that expires before the write
//! may land.
//!
//! A conditional write is not idempotent: an attempt whose answer is lost
//! is never re-sent blindly (Google's clients do not retry it either). When
//! the answer is lost, the row is read: a write whose cells are there, at
//! their timestamps, was applied; an insert that finds neither its cells
//! nor any live row was not, and is sent again; anything else, a read that
//! fails or finds no time left included, is [`Error::OutcomeUnknown`].
//! Every call keeps one deadline, its write policy's, for all its steps
//! (see [`crate::retry`]).

use chrono::{DateTime, Utc};

use crate::client::failure::status_error;
use crate::client::table::{Table, Written};
use crate::client::telemetry;
use crate::model::condition::{present_row, Condition};
use crate::model::error::{Error, Result};
use crate::model::key::AsKey;
use crate::model::mutation::{delete_owned, RowMutation};
use crate::model::policy::{from_micros, millis_floor};
use crate::model::proto::{mutation, CheckAndMutateRowRequest, Mutation, RowFilter};
use crate::model::row::{BigtableRow, MutationBuilder};
use crate::model::scan::Scan;
use crate::model::view::Expiring;

/// What [`Table::insert_if_absent`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Insert<T> {
    /// No live row held the key: the row was written.
    Inserted(Written),
    /// A live row holds the key: nothing was written; this is the row.
    Exists(Expiring<T>),
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

impl<T: BigtableRow> Table<T> {
    /// Write `row` only if no live row holds its key (an idempotency key, a
    /// dedupe marker, a lock). A row whose cells have all expired counts as
    /// absent even before garbage collection removes it, and so does one
    /// that expires before the write may land (within its horizon, at most
    /// 1 s: see the conditional-writes guide), which the insert replaces.
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
        for _ in 0..INSERT_ROUNDS {
            let now = self.clock().now();
            let m = builder.build_checked(self.name(), now)?;
            // A row that expires before the insert may land counts as
            // absent: the insert replaces it rather than report it. An
            // incomplete row exists: never overwritten.
            let (cut, horizon) = self.horizon(now);
            let predicate = present_row(T::SCHEMA, horizon);
            let checked = cut
                .check_and_mutate(&m.row_key, predicate, Vec::new(), m.mutations.clone())
                .await?;
            let lost = match checked {
                Checked::Answered(false) => return Ok(Insert::Inserted(written(&m, now)?)),
                Checked::Answered(true) => None,
                Checked::Unknown(status) => {
                    if self.settle(&m, &status).await? {
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
                (Ok(live), lost) => {
                    last_lost = lost;
                    live
                }
                (Err(e), None) => return Err(e),
                (Err(e), Some(status)) => {
                    tracing::debug!(table = %self.name(), error = %e, "the read settling a lost insert failed");
                    return Err(self.outcome_unknown(m.row_key, status));
                }
            };
            if let Some(live) = live {
                return Ok(Insert::Exists(live));
            }
        }
        let row_key = builder.row().row_key()?;
        if let Some(status) = last_lost {
            return Err(status_error(self.name(), Some(row_key), status, None));
        }
        Err(Error::Conflict {
            table: self.name().to_owned(),
            row_key,
            attempts: INSERT_ROUNDS,
        })
    }

    /// Write `row` (replacing its columns, as [`Table::put`]) only if
    /// `condition` holds for the live row: optimistic concurrency on a
    /// version field, "renew the lease only if I hold it". `None` when the
    /// condition did not hold and nothing was written.
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
                let predicate = condition.predicate(horizon)?;
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
    /// ("release the lock only if I hold it"). Whether it was deleted.
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
                let (cut, horizon) = self.for_write_call().horizon(self.clock().now());
                let predicate = condition.predicate(horizon)?;
                match cut
                    .check_and_mutate(&row_key, predicate, delete_owned(T::SCHEMA), Vec::new())
                    .await?
                {
                    Checked::Answered(deleted) => Ok(deleted),
                    Checked::Unknown(status) => Err(self.outcome_unknown(row_key, status)),
                }
            },
        )
        .await
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
        self.holds(m).await.map_err(|e| {
            tracing::debug!(table = %self.name(), error = %e, "the read settling a lost conditional write failed");
            self.outcome_unknown(m.row_key.clone(), lost.clone())
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

    /// [`Error::OutcomeUnknown`] for the row `row_key`, the answer lost
    /// being `status`.
    pub(crate) fn outcome_unknown(&self, row_key: Vec<u8>, status: tonic::Status) -> Error {
        Error::OutcomeUnknown {
            table: self.name().to_owned(),
            row_key,
            source: Box::new(crate::wire::status::cause(status)),
        }
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
