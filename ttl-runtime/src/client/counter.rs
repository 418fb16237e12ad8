//! Counters on a [`Table`]: `increment` through `ReadModifyWriteRow`, on a
//! cell first given its artificial timestamp by a conditional write (see
//! `crate::model::counter` for why).

use crate::client::conditional::Checked;
use crate::client::failure::status_error;
use crate::client::table::Table;
use crate::client::telemetry;
use crate::model::counter::{counted, ensure_live, increment_rule, Counted, CounterField};
use crate::model::error::{Error, Result};
use crate::model::key::AsKey;
use crate::model::policy::{Expiry, Policy};
use crate::model::row::BigtableRow;
use crate::proto::ReadModifyWriteRowRequest;

/// Increments that found their counter expired at the moment they landed,
/// before [`Error::Conflict`].
const INCREMENT_ROUNDS: u32 = 4;

impl<T: BigtableRow> Table<T> {
    /// Add `by` (negative subtracts) to the counter `counter` of the row with
    /// key `key`, atomically, and return its new value and expiry.
    ///
    /// A counter that has no live cell (never incremented, deleted, or
    /// expired even if not yet garbage-collected) starts again from zero,
    /// expiring as `expiry` says; increments of a live counter keep the
    /// expiry it was created with (as Redis's `INCR` keeps a key's TTL).
    /// `expiry` must be `Expiry::Ttl` or `Expiry::At`: counters use
    /// one-second expiration, where every cell carries its expiry.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Expiry, Table};
    /// # use chrono::{DateTime, TimeDelta, Utc};
    /// #[derive(BigtableRow)]
    /// #[bigtable(table = "limits", family = "l", key_separator = "#")]
    /// struct RateLimit {
    ///     #[bigtable(key)]
    ///     user: String,
    ///     #[bigtable(key)]
    ///     hour: u64,
    ///     #[ttl(expire_at)]
    ///     expires_at: DateTime<Utc>,
    ///     #[bigtable(counter)]
    ///     hits: i64,
    /// }
    /// # async fn run(limits: Table<RateLimit>) -> bigtable_ttl::Result<()> {
    /// let key = ("ann".to_owned(), 493_912);
    /// let hits = limits
    ///     .increment(&key, RateLimit::HITS, 1, Expiry::Ttl(TimeDelta::hours(2)))
    ///     .await?;
    /// if hits.value > 100 {
    ///     println!("rate limited until {}", hits.expires_at);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// An increment is not idempotent and is never re-sent: when its answer
    /// is lost, the call fails with [`Error::OutcomeUnknown`] (the counter
    /// may or may not have moved).
    ///
    /// # Errors
    /// Before anything is sent: [`Error::MissingExpiry`] for
    /// `Expiry::PolicyDefault`, [`Error::ExpiryNotInFuture`],
    /// [`Error::NonPositiveTtl`], key errors. [`Error::Server`];
    /// [`Error::OutcomeUnknown`]; [`Error::Conflict`] when the counter kept
    /// expiring under the increment; [`Error::Decode`] when the column holds
    /// something other than an 8-byte integer.
    pub async fn increment<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        counter: CounterField<T>,
        by: i64,
        expiry: Expiry,
    ) -> Result<Counted> {
        let call = self.increment_untraced(key, counter, by, expiry);
        telemetry::operation(self.name(), "increment", |_| 1, call).await
    }

    async fn increment_untraced<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        counter: CounterField<T>,
        by: i64,
        expiry: Expiry,
    ) -> Result<Counted> {
        let row_key = self.row_key(key)?;
        let policy = T::SCHEMA.policy;
        if expiry == Expiry::PolicyDefault && policy == Policy::CellExpiry {
            return Err(Error::MissingExpiry {
                table: Some(self.name().to_owned()),
            });
        }
        for _ in 0..INCREMENT_ROUNDS {
            let now = self.clock().now();
            let created_ts = policy.cell_timestamp(now, expiry)?;
            let (predicate, create) = ensure_live(counter, now, created_ts);
            // Safe to lose: if it was not applied, the increment lands on no
            // live cell and the round starts again.
            if let Checked::Unknown(status) = self
                .check_and_mutate(&row_key, predicate, Vec::new(), create)
                .await?
            {
                tracing::debug!(table = %self.name(), %status, "a counter's creation step went unanswered");
            }
            let request = ReadModifyWriteRowRequest {
                table_name: self.connection().table_path(self.name()),
                row_key: row_key.clone(),
                rules: vec![increment_rule(counter, by)],
                ..ReadModifyWriteRowRequest::default()
            };
            let answer = self.data().read_modify_write_once(request).await;
            let response = match answer {
                Ok(response) => response,
                Err(status) if crate::client::conditional::outcome_unknown(&status) => {
                    return Err(Error::OutcomeUnknown {
                        table: self.name().to_owned(),
                        row_key,
                        source: Box::new(status),
                    });
                }
                Err(status) => {
                    return Err(status_error(self.name(), Some(row_key), status, None));
                }
            };
            if let Some(counted) =
                counted(counter, self.name(), &row_key, response.row.as_ref(), now)?
            {
                return Ok(counted);
            }
            // The counter expired between the two steps: the increment went
            // to its dead cell, which the next round replaces with a zero.
        }
        Err(Error::Conflict {
            table: self.name().to_owned(),
            row_key,
            attempts: INCREMENT_ROUNDS,
        })
    }
}
