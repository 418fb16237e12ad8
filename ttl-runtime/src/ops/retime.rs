//! Change one row's TTL in place, race-free, and slide it on activity
//! (`touch`): methods on [`Table`].

use chrono::{DateTime, TimeDelta, Utc};
use futures_util::TryStreamExt as _;

use crate::client::conditional::{Checked, Sent};
use crate::client::table::Table;
use crate::client::telemetry;
use crate::model::cell::Cell;
use crate::model::condition::{unchanged, Pin};
use crate::model::error::{self, Error, Overflow, Result};
use crate::model::filter::row_filter;
use crate::model::key::AsKey;
use crate::model::liveness::Verdict;
use crate::model::mutation::{delete_column, mark_window, push_marker, set_cell, RowMutation};
use crate::model::policy::{Expiry, Policy};
use crate::model::row::BigtableRow;
use crate::model::row_cells::RowCells;
use crate::model::scan::Scan;
use crate::model::schema::{Column, Schema, WhenAbsent};
use crate::model::view::Expiring;
use crate::wire::merge::MergedRow;

/// How to re-time a row.
///
/// Re-timing reads the row's visible cells with the table's read filter
/// (the newest live version of each column), computes the row's new
/// timestamp with the policy's rules, and sends one atomic `MutateRow` that,
/// per column, deletes every version (`DeleteFromColumn`) and writes the
/// value back (`SetCell`) at the new timestamp. The shadow column keeps its
/// value (the row was not rewritten by its owner, only re-timed), and a
/// column with its own shorter TTL (`#[ttl(for = "…")]`) keeps its own
/// expiry unless the row's new one is earlier: a field never outlives its
/// row.
///
/// The write is conditional (`CheckAndMutateRow`): it applies only if the
/// row still holds exactly the cells read (each column's newest live cell,
/// same timestamp, same value, and no live cell in a column that had none).
/// A write to the row in between makes it read again and retry, at most
/// [`RETIME_ROUNDS`] times, then fail with [`Error::Conflict`]: a re-time
/// never restores values older than the last acknowledged write. A write
/// whose answer is lost is never sent again: the row is read, and unless
/// it holds the re-timed cells the call ends with
/// [`Error::OutcomeUnknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retime {
    /// Live this long from now (longer or shorter than before).
    Ttl(TimeDelta),
    /// Expire at this instant.
    At(DateTime<Utc>),
    /// Move the current expiry by this much: positive extends, negative
    /// shortens.
    By(TimeDelta),
}

/// The mutation that re-times one row, from the row's cells as stored (any
/// cell not visible at `now` under the schema's policy, or not one of its
/// columns, marker or shadow, is ignored; of each column the newest visible
/// version is kept). `None` when the row is not live at `now`
/// ([`crate::liveness`]: a re-time never revives a row). Pure.
///
/// The row's current expiry is the one the typed reader reports;
/// [`Retime::By`] moves that. Every column, the shadow column and the row
/// marker are written back at the new timestamp (a row that had no marker
/// gets one: it is whole now); a column with its own TTL keeps its own
/// expiry unless the row's new one is earlier. Map entries keep theirs.
///
/// # Errors
/// What the policy rejects for the new expiry: [`Error::ExpiryNotInFuture`]
/// (shortening past now: use [`Table::delete`]),
/// [`Error::NonPositiveTtl`], out-of-range timestamps.
pub(crate) fn retime_mutation(
    schema: &Schema,
    row_key: &[u8],
    cells: &[Cell],
    now: DateTime<Utc>,
    how: Retime,
) -> Result<Option<RowMutation>> {
    retime_row(&RowCells::of(schema, cells, now), row_key, now, how)
}

/// [`retime_mutation`] of a row already judged.
pub(crate) fn retime_row(
    row: &RowCells<'_>,
    row_key: &[u8],
    now: DateTime<Utc>,
    how: Retime,
) -> Result<Option<RowMutation>> {
    let schema = row.schema();
    let policy = schema.policy;
    let Some(current_ts) = row.verdict().row_ts() else {
        return Ok(None);
    };
    let expiry = match how {
        Retime::Ttl(ttl) => Expiry::Ttl(ttl),
        Retime::At(at) => Expiry::At(at),
        Retime::By(delta) => {
            let current = policy.expiry_of(current_ts)?;
            Expiry::At(current.checked_add_signed(delta).ok_or_else(|| {
                Error::from(error::ExpiryOutOfRange {
                    overflow: Overflow::Sum {
                        micros: current.timestamp_micros(),
                        by: delta,
                    },
                })
            })?)
        }
    };
    if expiry == Expiry::PolicyDefault && policy == Policy::CellExpiry {
        return Err(Error::from(error::MissingExpiry {
            table: Some(schema.table.to_owned()),
        }));
    }
    let row_ts = policy.cell_timestamp(now, expiry)?;
    let mut mutations = Vec::with_capacity(2 * row.newest.len() + 2);
    // The earliest timestamp of a required column, carried by the marker.
    let mut expiry_ts = row_ts;
    for ((family, qualifier), cell) in &row.newest {
        mutations.push(delete_column(family, qualifier));
        if schema.is_marker(family, qualifier) {
            // Written anew below, the marker of a row whole at one timestamp.
            continue;
        }
        let column = schema
            .column_index(family, qualifier)
            .map(|i| &schema.columns[i]);
        let ts = match column.and_then(|c| c.ttl) {
            Some(_) => cell.timestamp_micros.min(row_ts),
            None => row_ts,
        };
        if column.is_some_and(Column::is_required) {
            expiry_ts = expiry_ts.min(ts);
        }
        mutations.push(set_cell(family, qualifier, ts, cell.value.clone()));
    }
    for column in schema.columns {
        // A counter's window mark moves with it (see `model::counter`).
        if column.when_absent == WhenAbsent::ReadsZero
            && row
                .get(column.family, column.qualifier.as_bytes())
                .is_some()
        {
            mutations.extend(mark_window(column, row_ts));
        }
    }
    push_marker(&mut mutations, schema, row_ts, expiry_ts);
    Ok(Some(RowMutation {
        row_key: row_key.to_vec(),
        mutations,
        timestamp_micros: row_ts,
        expires_at: policy.expiry_of(row_ts)?,
    }))
}

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

/// Conditional re-time attempts made while other writes keep changing the
/// row (each answered: the condition failed, nothing was applied), before
/// [`Error::Conflict`].
pub const RETIME_ROUNDS: u32 = 8;

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
    /// use bigtable_ttl::ops::Retime;
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
            let row = RowCells::of(T::SCHEMA, &cells, horizon);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::codec::CellCodec;
    use crate::model::policy::Policy;
    use crate::model::proto::mutation;
    use crate::model::schema::{Column, ShadowColumn, WhenAbsent};

    static SCHEMA: Schema = Schema {
        table: "clicks",
        policy: Policy::DefaultTtl {
            ttl: TimeDelta::days(2),
        },
        families: &["c"],
        owns_family: false,
        columns: &[
            Column {
                field: "url",
                family: "c",
                qualifier: "url",
                ttl: None,
                when_absent: WhenAbsent::Required,
            },
            Column {
                field: "hot",
                family: "c",
                qualifier: "hot",
                ttl: Some(TimeDelta::hours(1)),
                when_absent: WhenAbsent::ReadsNone,
            },
        ],
        maps: &[],
        written_at: Some(ShadowColumn {
            family: "c",
            qualifier: "written_at",
        }),
        marker: b"\0\0Row",
        key_fields: &["id"],
        key_separator: "",
    };

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
    }

    fn cell(q: &str, ts: DateTime<Utc>, value: &[u8]) -> Cell {
        Cell {
            family: "c".into(),
            qualifier: q.as_bytes().to_vec(),
            value: value.to_vec(),
            timestamp_micros: ts.timestamp_micros(),
        }
    }

    fn sets(m: &RowMutation) -> Vec<(String, i64, Vec<u8>)> {
        let mut deletes = 0;
        let out: Vec<_> = m
            .mutations
            .iter()
            .filter_map(|m| match &m.mutation {
                Some(mutation::Mutation::SetCell(c)) => Some((
                    String::from_utf8_lossy(&c.column_qualifier).into_owned(),
                    c.timestamp_micros,
                    c.value.clone(),
                )),
                Some(mutation::Mutation::DeleteFromColumn(_)) => {
                    deletes += 1;
                    None
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(deletes, out.len(), "one delete per column");
        out
    }

    #[test]
    fn extending_moves_every_row_level_cell_and_keeps_values() {
        let now = now();
        let written = now - TimeDelta::hours(1);
        let ts = written; // default TTL: timestamp = write time, expiry = +2d
        let cells = [
            cell("url", ts, b"/new"),
            cell("url", ts - TimeDelta::minutes(1), b"/old"),
            cell(
                "hot",
                now - TimeDelta::days(2) + TimeDelta::minutes(30),
                b"x",
            ),
            cell("written_at", ts, &written.encode().unwrap()),
        ];
        let m = retime_mutation(&SCHEMA, b"k", &cells, now, Retime::By(TimeDelta::days(1)))
            .unwrap()
            .unwrap();
        let new_ts = (ts + TimeDelta::days(1)).timestamp_micros();
        assert_eq!(m.expires_at, written + TimeDelta::days(3));
        assert_eq!(
            sets(&m),
            vec![
                // the hot field keeps its own (earlier) expiry
                ("hot".to_owned(), cells[2].timestamp_micros, b"x".to_vec()),
                ("url".to_owned(), new_ts, b"/new".to_vec()),
                ("written_at".to_owned(), new_ts, written.encode().unwrap()),
                // A row written before the marker existed gets one: it is
                // whole at one timestamp now.
                ("\0\0Row".to_owned(), new_ts, Vec::new()),
            ]
        );
    }

    #[test]
    fn shortening_caps_per_field_ttls_and_cannot_pass_now() {
        let now = now();
        let cells = [
            cell("url", now, b"/u"),
            cell("hot", now - TimeDelta::days(2) + TimeDelta::hours(1), b"x"),
        ];
        let m = retime_mutation(
            &SCHEMA,
            b"k",
            &cells,
            now,
            Retime::Ttl(TimeDelta::minutes(10)),
        )
        .unwrap()
        .unwrap();
        assert_eq!(m.expires_at, now + TimeDelta::minutes(10));
        let got = sets(&m);
        assert!(
            got.iter().all(|(_, ts, _)| *ts == m.timestamp_micros),
            "{got:?}"
        );
        let err = retime_mutation(&SCHEMA, b"k", &cells, now, Retime::By(-TimeDelta::days(3)))
            .unwrap_err();
        assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err}");
    }

    #[test]
    fn an_expired_or_missing_row_is_none() {
        let now = now();
        let cells = [cell("url", now - TimeDelta::days(3), b"/u")];
        assert!(
            retime_mutation(&SCHEMA, b"k", &cells, now, Retime::Ttl(TimeDelta::hours(1)))
                .unwrap()
                .is_none()
        );
        assert!(
            retime_mutation(&SCHEMA, b"k", &[], now, Retime::Ttl(TimeDelta::hours(1)))
                .unwrap()
                .is_none()
        );
    }
}
