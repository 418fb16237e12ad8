//! Counters on a [`Table`]: `increment` through `ReadModifyWriteRow`,
//! decided by the server's clock, counted again by a conditional write when
//! it landed on a counter whose window was over (see
//! `crate::model::counter` for why and how).

use chrono::{DateTime, Utc};

use crate::client::failure::status_error;
use crate::client::table::conditional::Checked;
use crate::client::table::Table;
use crate::client::telemetry;
use crate::model::condition::{exact_timestamp, live_row, not_live_row, unchanged, Pin};
use crate::model::counter::{
    count_in_row, increment_rules, landed, new_row, without_dead_stamps, Counted, CounterField,
    Landed,
};
use crate::model::error::{self, Error, Result};
use crate::model::key::AsKey;
use crate::model::liveness::Verdict;
use crate::model::mutation::{delete_column, mark_window};
use crate::model::policy::{Expiry, Policy};
use crate::model::proto::{Mutation, ReadModifyWriteRowRequest, RowFilter};
use crate::model::row::BigtableRow;
use crate::model::row_cells::RowCells;
use crate::model::schema::{window_mark, Column};
use crate::model::writer::another_structs_row_error;

/// Increments that landed on a counter whose window was over and lost the
/// race to count again to other writers, before [`Error::Conflict`].
const INCREMENT_ROUNDS: u32 = 4;

impl<T: BigtableRow> Table<T> {
    /// Add `by` (negative subtracts) to the counter `counter` of the row with
    /// key `key`, atomically, and return its new value and expiry.
    ///
    /// A counter lives and expires with its row (its cell carries the row's
    /// timestamp), and its window is decided by **the server's clock**, not
    /// this table's: an increment the server applies before the expiry
    /// counts in the window and keeps its expiry (and is returned so, even
    /// when the answer comes after the expiry: it is never counted twice);
    /// one it applies at or after it never continues the old count. A
    /// window this table's clock sees over is replaced before the
    /// increment is sent.
    ///
    /// * In a **live row**, the counter is incremented (an absent counter,
    ///   as in a row written before the field existed, counts from zero),
    ///   and the row's expiry is the counter's (as Redis's `INCR` keeps a
    ///   key's TTL).
    /// * A row that is **not live** (never written, deleted, or expired,
    ///   even if not yet garbage-collected), in a struct whose other fields
    ///   are all `Option`, default or counters: the increment creates a
    ///   whole new row holding `by`, every other field absent (`None`, its
    ///   default, zero; maps empty), expiring as `expiry` says, from this
    ///   table's now (from the server's when that is later, for an
    ///   increment that found the server had closed the window). Nothing
    ///   of the old row comes back.
    /// * A row that is not live in a struct with **required fields**:
    ///   [`Error::NoLiveRow`]; an increment has no value for them, so it
    ///   never creates a row a reader could not read. Write the row first.
    ///
    /// `expiry` (used only when a row is created) must be `Expiry::Ttl` or
    /// `Expiry::At`: counters use one-second expiration, where every cell
    /// carries its expiry.
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
    /// [`Error::NonPositiveTtl`], key errors. [`Error::NoLiveRow`];
    /// [`Error::Server`]; [`Error::OutcomeUnknown`]; [`Error::Conflict`]
    /// when other writers kept winning the race to count into a new window;
    /// [`Error::Decode`] when the column holds something other than an
    /// 8-byte integer.
    pub async fn increment<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        counter: CounterField<T>,
        by: i64,
        expiry: Expiry,
    ) -> Result<Counted> {
        // Every step (the read, the new window, the increment, a recount
        // and the read settling it) within one deadline.
        let this = self.for_write_call();
        let call = this.increment_untraced(key, counter, by, expiry);
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
            return Err(Error::from(error::MissingExpiry {
                table: Some(self.name().to_owned()),
            }));
        }
        // What a new row would get, checked before anything is sent.
        policy.cell_timestamp(self.clock().now(), expiry)?;
        let has_required = T::SCHEMA.columns.iter().any(Column::is_required);
        for _ in 0..INCREMENT_ROUNDS {
            let now = self.clock().now();
            if has_required {
                // The increment cannot make a row: only into a live one.
                let cells = self.visible_cells(&row_key, now).await?;
                if RowCells::of(T::SCHEMA, &cells, now)
                    .verdict()
                    .row_ts()
                    .is_none()
                {
                    return Err(self.no_live_row(&row_key));
                }
            } else {
                self.open_window(&row_key, counter, expiry, now).await?;
            }
            let now = match self.read_modify_write(&row_key, counter, by).await? {
                Landed::Live {
                    counted,
                    counter_ts,
                    marked,
                } => {
                    if !marked {
                        // Counted: whatever becomes of the mark, the call
                        // succeeded.
                        if let Err(e) = self.mark_window(&row_key, counter, counter_ts).await {
                            tracing::debug!(table = %self.name(), error = %e, "a counter's window mark was not written");
                        }
                    }
                    return Ok(counted);
                }
                Landed::Dead { now } => now,
            };
            // The window was over (or there was none) when the increment
            // landed: count it again.
            if let Some(counted) = self.count_again(&row_key, counter, by, expiry, now).await? {
                return Ok(counted);
            }
        }
        Err(Error::from(error::Conflict {
            table: self.name().to_owned(),
            row_key,
            attempts: INCREMENT_ROUNDS,
        }))
    }

    fn no_live_row(&self, row_key: &[u8]) -> Error {
        Error::from(error::NoLiveRow {
            table: self.name().to_owned(),
            row_key: row_key.to_vec(),
        })
    }

    /// The step before an increment in a struct without required fields:
    /// a row that is not live at `now` gets a whole new row with the counter
    /// at zero, expiring as `expiry` says. Safe to lose: if it was not
    /// applied, the increment lands on no live window and is counted again.
    async fn open_window(
        &self,
        row_key: &[u8],
        counter: CounterField<T>,
        expiry: Expiry,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let row_ts = T::SCHEMA.policy.cell_timestamp(now, expiry)?;
        let create = new_row(counter, row_ts, 0, now)?;
        if let Checked::Unknown(status) = self
            .check_and_mutate(row_key, live_row(T::SCHEMA, now), Vec::new(), create)
            .await?
        {
            tracing::debug!(table = %self.name(), %status, "a counter's new window went unanswered");
        }
        Ok(())
    }

    /// One `ReadModifyWriteRow` of the increment, never re-sent.
    async fn read_modify_write(
        &self,
        row_key: &[u8],
        counter: CounterField<T>,
        by: i64,
    ) -> Result<Landed> {
        let request = ReadModifyWriteRowRequest {
            table_name: self.connection().table_path(self.name()),
            row_key: row_key.to_vec(),
            rules: increment_rules(counter, by),
            ..ReadModifyWriteRowRequest::default()
        };
        self.layout()?;
        match self.raw().read_modify_write_once(request).await {
            Ok(response) => landed(
                counter,
                self.name(),
                row_key,
                response.row.as_ref(),
                self.clock().now(),
            ),
            Err(status) if crate::client::table::conditional::outcome_unknown(&status) => {
                Err(self.outcome_unknown(row_key.to_vec(), status))
            }
            Err(status) => Err(status_error(
                self.name(),
                Some(row_key.to_vec()),
                status,
                None,
            )),
        }
    }

    /// Write the window mark the counter had not (a row written by an
    /// earlier version), so that later increments rewrite it in place
    /// rather than stamp a version each. Only while the counter's cell is
    /// still the one at `counter_ts`: a mark later than its counter would
    /// make a live window look over. Losing the answer is harmless.
    async fn mark_window(
        &self,
        row_key: &[u8],
        counter: CounterField<T>,
        counter_ts: i64,
    ) -> Result<()> {
        let column = counter.column();
        let predicate = exact_timestamp(column.family, column.qualifier.as_bytes(), counter_ts);
        self.check_and_mutate(
            row_key,
            predicate,
            mark_window(column, counter_ts).to_vec(),
            Vec::new(),
        )
        .await?;
        Ok(())
    }

    /// Count `by` again after an increment landed on a counter with no live
    /// window as of `now` (µs): into the live row at its timestamp, or into
    /// a new row (see [`Table::increment`]), by a conditional write decided
    /// at `now`. `None` when another write changed the row first (the
    /// caller increments again).
    async fn count_again(
        &self,
        row_key: &[u8],
        counter: CounterField<T>,
        by: i64,
        expiry: Expiry,
        now: i64,
    ) -> Result<Option<Counted>> {
        let policy = T::SCHEMA.policy;
        let now = DateTime::from_timestamp_micros(now).ok_or_else(|| {
            Error::from(error::TimestampOutOfRange {
                table: self.name().to_owned(),
                row_key: row_key.to_vec(),
                timestamp_micros: now,
            })
        })?;
        let cells = without_dead_stamps(counter, self.visible_cells(row_key, now).await?);
        let row = RowCells::of(T::SCHEMA, &cells, now);
        let column = counter.column();
        let (predicate, mutations, row_ts): (RowFilter, Vec<Mutation>, i64) = match row.verdict() {
            // Its marker's writer shares no name with this struct (see
            // `model::writer`): never counted into as this struct's.
            Verdict::WrittenByAnotherStruct => {
                return Err(another_structs_row_error(T::SCHEMA, row_key).in_table(self.name()));
            }
            // Another writer opened a window meanwhile: increment into it.
            Verdict::Live { .. }
                if row
                    .get(column.family, column.qualifier.as_bytes())
                    .is_some() =>
            {
                return Ok(None);
            }
            Verdict::Live { row_ts } => (
                unchanged(&row, now, Pin::LivenessAnd(&[counter.index()])),
                count_in_row(counter, row_ts, by),
                row_ts,
            ),
            Verdict::Absent | Verdict::Partial { .. }
                if T::SCHEMA.columns.iter().any(Column::is_required) =>
            {
                // Leave nothing of the refused increment behind (unless a
                // whole row was written meanwhile).
                let leftovers = vec![
                    delete_column(column.family, column.qualifier.as_bytes()),
                    delete_column(column.family, &window_mark(column.qualifier)),
                ];
                self.check_and_mutate(row_key, not_live_row(T::SCHEMA, now), leftovers, Vec::new())
                    .await?;
                return Err(self.no_live_row(row_key));
            }
            Verdict::Absent | Verdict::Partial { .. } => {
                // The new window's TTL runs from the later of the server's
                // clock (the stamp that closed the old window) and the
                // table's: from the table's alone, a clock behind the
                // server's by more than the TTL would open windows already
                // over at the server, each increment landing in none.
                let written = now.max(self.clock().now());
                let row_ts = policy.cell_timestamp(written, expiry)?;
                let mutations = new_row(counter, row_ts, by, written)?;
                (not_live_row(T::SCHEMA, now), mutations, row_ts)
            }
        };
        let counted = Counted {
            value: by,
            expires_at: policy.expiry_of(row_ts)?,
        };
        let m = crate::model::mutation::RowMutation {
            row_key: row_key.to_vec(),
            mutations,
            timestamp_micros: row_ts,
            expires_at: counted.expires_at,
        };
        match self
            .check_and_mutate(row_key, predicate, m.mutations.clone(), Vec::new())
            .await?
        {
            Checked::Answered(true) => Ok(Some(counted)),
            Checked::Answered(false) => Ok(None),
            // Not re-sent: it may have been applied and counted on since.
            Checked::Unknown(status) => {
                if self.settle(&m, &status).await? {
                    Ok(Some(counted))
                } else {
                    Err(self.outcome_unknown(row_key.to_vec(), status))
                }
            }
        }
    }
}
