//! Change one row's TTL in place, race-free, and slide it on activity
//! (`touch`): methods on [`Table`]. The planner is pure
//! (`crate::model::retime`); this is the read, the conditional write and
//! its rounds, which updates and markers share (`rewrite_unchanged`).

use chrono::{DateTime, TimeDelta, Utc};
use futures_util::TryStreamExt as _;

use crate::client::retry::RETIME_ROUNDS;
use crate::client::table::conditional::{Checked, Sent};
use crate::client::table::Table;
use crate::client::telemetry;
use crate::model::cell::Cell;
use crate::model::condition::{unchanged, Pin};
use crate::model::error::{self, Error, Result};
use crate::model::filter::row_filter;
use crate::model::key::AsKey;
use crate::model::liveness::Verdict;
use crate::model::mutation::RowMutation;
use crate::model::policy::Expiry;
use crate::model::retime::{retime_row, Retime};
use crate::model::row::BigtableRow;
use crate::model::row_cells::RowCells;
use crate::model::scan::Scan;
use crate::model::view::Expiring;
use crate::model::writer::another_structs_row_error;
use crate::wire::merge::MergedRow;

/// What one round of [`Table::rewrite_unchanged`] planned from the row.
pub(crate) enum Round<'p, R, C> {
    /// Nothing to write: the call's answer.
    Done(R),
    /// Write this, conditional on the row still holding what `Pin` names,
    /// keeping `C` for the answer.
    Write(RowMutation, Pin<'p>, C),
}

/// Reads more of a row that looks torn (see `rewrite_rounds`).
const TORN_REREADS: usize = 2;

/// What [`Table::touch`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Touched {
    /// The row's expiry after the call.
    pub expires_at: DateTime<Utc>,
    /// Whether the row was re-timed (it had less time left than asked).
    pub rewritten: bool,
}

impl<T: BigtableRow> Table<T> {
    /// Re-time the row with key `key` in place (see [`Retime`]
    /// for how): its live cells are rewritten with the new
    /// timestamp and their older versions removed, in one atomic row
    /// mutation. Returns what was stored (`expires_at` is the new expiry),
    /// or `None` when the row does not exist or has expired.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d", written_at)]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>) -> bigtable_ttl::Result<()> {
    /// use bigtable_ttl::Retime;
    /// use chrono::TimeDelta;
    ///
    /// let key = "c1".to_owned();
    /// clicks.retime(&key, Retime::By(TimeDelta::days(1))).await?;   // one more day
    /// clicks.retime(&key, Retime::Ttl(TimeDelta::hours(1))).await?; // an hour from now
    /// clicks.delete(&key).await?;                                   // gone
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// What the policy rejects for the new expiry:
    /// [`Error::ExpiryNotInFuture`] (shortening past now: use
    /// [`Table::delete`]), [`Error::NonPositiveTtl`], out-of-range
    /// timestamps; key errors; [`Error::Server`].
    pub async fn retime<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        how: Retime,
    ) -> Result<Option<RowMutation>> {
        telemetry::operation(
            self.name(),
            "retime",
            |m| u64::from(m.is_some()),
            async move {
                let outcome = self.retime_when(key, how, None).await?;
                Ok(outcome.and_then(|(m, _)| m))
            },
        )
        .await
    }

    /// Sliding expiry (time-to-idle): give the row with key `key` a TTL of
    /// `ttl` from now, but only when it has less than `when_less_than` left,
    /// so a row read on every request is rewritten once in a while, not on
    /// every read. `None` when the row does not exist or has expired (a
    /// touch never revives a row).
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "sessions", family = "s")]
    /// # #[ttl(default = "30m")]
    /// # struct Session { #[bigtable(key)] id: String, user: String }
    /// # async fn run(sessions: Table<Session>) -> bigtable_ttl::Result<()> {
    /// use chrono::TimeDelta;
    ///
    /// // 30 idle minutes, renewed at most once every 5 minutes of activity.
    /// let key = "s1".to_owned();
    /// if let Some(t) = sessions.touch(&key, TimeDelta::minutes(30), TimeDelta::minutes(25)).await? {
    ///     println!("alive until {} (rewritten: {})", t.expires_at, t.rewritten);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Table::retime`].
    pub async fn touch<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        ttl: TimeDelta,
        when_less_than: TimeDelta,
    ) -> Result<Option<Touched>> {
        telemetry::operation(
            self.name(),
            "touch",
            |t| u64::from(t.is_some()),
            async move {
                let outcome = self
                    .retime_when(key, Retime::Ttl(ttl), Some(when_less_than))
                    .await?;
                Ok(outcome.map(|(m, expires_at)| Touched {
                    expires_at: m.as_ref().map_or(expires_at, |m| m.expires_at),
                    rewritten: m.is_some(),
                }))
            },
        )
        .await
    }

    /// Re-time the row, conditional on it still holding what was read;
    /// with `when_less_than` (a touch), only when it has less time left than
    /// that and the new expiry is later than the current one. `None` when
    /// the row is not live; else the mutation applied (if any) and the
    /// expiry read.
    async fn retime_when<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        how: Retime,
        when_less_than: Option<TimeDelta>,
    ) -> Result<Option<(Option<RowMutation>, DateTime<Utc>)>> {
        let row_key = self.row_key(key)?;
        let policy = T::SCHEMA.policy;
        let plan = |row: &RowCells<'_>, now| {
            if row.written_by_another_struct() {
                // Its marker's writer shares no name with this struct (see
                // `model::writer`): not its row, whatever the touch would do.
                return Err(another_structs_row_error(T::SCHEMA, &row_key).in_table(self.name()));
            }
            let Some(current) = row.verdict().row_ts() else {
                return Ok(Round::Done(None));
            };
            let current = policy.expiry_of(current)?;
            if let Some(threshold) = when_less_than {
                // A touch slides the expiry: never earlier than it is.
                let sooner = match how {
                    Retime::Ttl(ttl) => policy
                        .expiry_of(policy.cell_timestamp(now, Expiry::Ttl(ttl))?)
                        .map(|new| new <= current)?,
                    Retime::At(_) | Retime::By(_) => false,
                };
                if current - now >= threshold || sooner {
                    return Ok(Round::Done(Some((None, current))));
                }
            }
            let m = retime_row(row, &row_key, now, how).map_err(|e| e.in_table(self.name()))?;
            Ok(m.map_or(Round::Done(None), |m| {
                Round::Write(m, Pin::Everything, current)
            }))
        };
        let applied = |m, current, _| Ok(Some((Some(m), current)));
        self.rewrite_unchanged(&row_key, plan, applied).await
    }

    /// Read the row's visible cells, `plan` a rewrite from them, and write it
    /// conditional on the row still holding what the plan pins
    /// ([`unchanged`]): when another write came in between (the server
    /// answered that the condition failed: nothing was applied), read and
    /// plan again, at most [`RETIME_ROUNDS`] times, then
    /// [`Error::Conflict`]. A write whose answer is lost is never sent
    /// again: applied if its cells are there, else
    /// [`Error::OutcomeUnknown`] (a second re-time could apply twice).
    /// `applied` makes the answer from what was written, the plan's
    /// context and the round's now.
    ///
    /// Every round keeps the one deadline of the call (the write policy's).
    pub(crate) async fn rewrite_unchanged<'p, R, C>(
        &self,
        row_key: &[u8],
        plan: impl FnMut(&RowCells<'_>, DateTime<Utc>) -> Result<Round<'p, R, C>>,
        applied: impl FnOnce(RowMutation, C, DateTime<Utc>) -> Result<R>,
    ) -> Result<R> {
        self.for_write_call()
            .rewrite_rounds(row_key, plan, applied)
            .await
    }

    /// The rounds of [`Table::rewrite_unchanged`].
    async fn rewrite_rounds<'p, R, C>(
        &self,
        row_key: &[u8],
        mut plan: impl FnMut(&RowCells<'_>, DateTime<Utc>) -> Result<Round<'p, R, C>>,
        applied: impl FnOnce(RowMutation, C, DateTime<Utc>) -> Result<R>,
    ) -> Result<R> {
        let mut sent = Sent::default();
        for _ in 0..RETIME_ROUNDS {
            let now = self.clock().now();
            // A row missing a required column while others are there may be
            // a read torn by a concurrent write (the emulator's reads are
            // not row-atomic): read it again, as the typed reader does,
            // before taking it for a row that is not live.
            let mut rereads = 0;
            let judged_at = self.horizon(now).1;
            let cells = loop {
                let cells = self.visible_cells(row_key, now).await?;
                let partial = matches!(
                    RowCells::of(T::SCHEMA, &cells, judged_at).verdict(),
                    Verdict::Partial { .. }
                );
                if !partial || rereads == TORN_REREADS {
                    break cells;
                }
                rereads += 1;
            };
            // The row is judged, and pinned, as it will be at the latest
            // instant the write may land: one that expires sooner is not
            // live to it (no write revives a row expiring in flight). The
            // write's time starts after the read, which may take longer
            // than the horizon on a large row or a loaded machine.
            let (cut, horizon) = self.horizon(now);
            let claimed = RowCells::of(T::SCHEMA, &cells, now);
            let row = if claimed.foreign_marker() && !claimed.marked() {
                // Another struct's row now: not this struct's, though that
                // marker may expire before the horizon (a marker expiring
                // in flight hands no row over; a read right after the
                // answer would still find the other struct's row).
                claimed
            } else {
                RowCells::of(T::SCHEMA, &cells, horizon)
            };
            let (m, pin, context) = match plan(&row, now)? {
                Round::Done(answer) => return Ok(answer),
                Round::Write(m, pin, context) => (m, pin, context),
            };
            let predicate = unchanged(&row, horizon, pin);
            let written = match cut
                .check_and_mutate(row_key, predicate, m.mutations.clone(), Vec::new())
                .await?
            {
                Checked::Answered(matched) => {
                    sent.count(true);
                    matched
                }
                // One attempt, as for every conditional write: a lost
                // answer is settled by reading the row, never by sending
                // the write again (a second re-time could apply twice).
                Checked::Unknown(status) => {
                    if self.settle_after(&m, &status, sent).await? {
                        true
                    } else {
                        return Err(self.outcome_unknown_after(row_key.to_vec(), status, sent));
                    }
                }
            };
            if written {
                return applied(m, context, now);
            }
        }
        Err(Error::from(error::Conflict {
            table: self.name().to_owned(),
            row_key: row_key.to_vec(),
            attempts: RETIME_ROUNDS,
        }))
    }

    /// The row's newest visible cell of each column at `now`, read under
    /// this table's read options.
    pub(crate) async fn visible_cells(
        &self,
        row_key: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Vec<Cell>> {
        let request = self.read_request(
            Scan::keys([row_key]).limit(1),
            Some(row_filter(T::SCHEMA, now)),
        );
        let rows: Vec<MergedRow> = self.raw_stream(request).try_collect().await?;
        Ok(rows
            .into_iter()
            .next()
            .map(|(_, cells)| cells.into_iter().map(Cell::from).collect())
            .unwrap_or_default())
    }

    /// Give the row with key `key` a new TTL from now, longer or shorter
    /// ([`Table::retime`] with [`Retime::Ttl`]).
    ///
    /// # Errors
    /// As [`Table::retime`].
    pub async fn set_ttl<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        ttl: TimeDelta,
    ) -> Result<Option<RowMutation>> {
        self.retime(key, Retime::Ttl(ttl)).await
    }

    /// Move the expiry of the row with key `key` by `by`: positive extends,
    /// negative shortens ([`Table::retime`] with [`Retime::By`]).
    ///
    /// # Errors
    /// As [`Table::retime`]; [`Error::ExpiryNotInFuture`] when shortening
    /// past now (use [`Table::delete`]).
    pub async fn shift_expiry<Q: ?Sized + AsKey<T::Key>>(
        &self,
        key: &Q,
        by: TimeDelta,
    ) -> Result<Option<RowMutation>> {
        self.retime(key, Retime::By(by)).await
    }

    /// Time left before `row` expires, by this table's clock (zero once
    /// expired). [`Expiring::time_left`] takes "now" explicitly; there is no
    /// clock-free variant on `Expiring` because the system clock would
    /// silently disagree with a table on a manual clock.
    #[must_use]
    pub fn time_left(&self, row: &Expiring<T>) -> TimeDelta {
        row.time_left(self.clock().now())
    }
}
