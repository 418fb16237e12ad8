//! The reaper: delete what expired more than a grace period ago, so that
//! readers other than this library (`cbt`, Google's clients, SQL, exports)
//! stop seeing it ([`Table::reap`]; by family name, [`reap`]).
//!
//! Rows are read with a server-side filter (only rows holding a cell that
//! expired before the cut-off, or a marker carrying such an expiry), a page
//! at a time, and each is judged by `model::death::Judge::plan`:
//!
//! * a row every cell of whose the judge owns had expired at `now - grace`
//!   (a dead row, as rows this library writes whole die), and a live row's
//!   expired cells (per-field TTLs, map entries, older versions): one
//!   `DeleteFromColumn` a column, **with a time range ending at the
//!   cut-off**, in `MutateRows` batches. Such a delete is conditional by
//!   its range, which Bigtable applies atomically with it: it can remove
//!   only cells that had expired at the cut-off, never one written,
//!   re-timed or touched since the row was read, nor any live cell;
//! * a struct's row that died while some of its cells are still visible
//!   (a required field with a shorter TTL of its own, entries outliving
//!   the row, a row another writer wrote column by column): everything the
//!   struct owns (`DeleteFromColumn`s and a map's `DeleteFromFamily`,
//!   never `DeleteFromRow`) in one `CheckAndMutateRow` whose predicate is
//!   the row as read (`model::condition::unchanged` with `Pin::Everything`,
//!   the re-times' own pin): a row written in between keeps everything;
//! * incomplete rows, another struct's rows, and rows that died less than
//!   the grace period ago are left alone, and counted.
//!
//! Before a page's deletes are sent, the rows about to die are handed to
//! the caller (`on_rows`), who may stop there: at least once across kills
//! and restarts (a run killed after handing them over and before deleting
//! hands them over again; each has a stable event id).

use std::num::NonZeroU32;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use futures_util::{StreamExt as _, TryStreamExt as _};

use crate::client::connection::Connection;
use crate::client::data::RawTable;
use crate::client::table::conditional::Checked;
use crate::client::table::Table;
use crate::client::telemetry;
use crate::model::cell::Cell;
use crate::model::clock::Clock;
use crate::model::condition::{unchanged, Pin};
use crate::model::death::{encode_range_deletes, Judge, Keep, Plan};
use crate::model::error::{self, Error, FailedRow, Result};
use crate::model::mutation::delete_owned;
use crate::model::row::BigtableRow;
use crate::model::row_cells::RowCells;
use crate::wire::codec::EncodedBatch;

use super::feed::{rows_of, ExpiredCells, ExpiredRow, FamilyRows};
use super::rate::TokenBucket;
use super::shard::Part;

/// How [`Table::reap`] and [`reap`] run.
///
/// ```
/// use std::num::NonZeroU32;
/// use std::time::Duration;
/// use bigtable_ttl::ops::ReapOptions;
///
/// let options = ReapOptions::new()
///     .with_grace(Duration::from_secs(3600))
///     .with_rows_per_second(NonZeroU32::new(100).unwrap())
///     .with_dry_run(true);
/// assert!(options.dry_run);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReapOptions {
    /// Only what expired at least this long ago goes (clock skew between
    /// writers and the reaper, readers still finishing with a row); one
    /// minute by default.
    pub grace: Duration,
    /// Rows deleted a second, at most (a token bucket); `None`: as fast as
    /// Bigtable takes them.
    pub rows_per_second: Option<NonZeroU32>,
    /// Count what would go and delete nothing.
    pub dry_run: bool,
    /// Rows per page: per `MutateRows` batch, per `on_rows` and per
    /// `on_page` call.
    pub page_rows: usize,
    /// Conditional deletes in flight at once.
    pub in_flight: usize,
}

impl Default for ReapOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl ReapOptions {
    /// A grace of one minute, no rate limit, pages of 500 rows.
    #[must_use]
    pub fn new() -> Self {
        Self {
            grace: Duration::from_secs(60),
            rows_per_second: None,
            dry_run: false,
            page_rows: 500,
            in_flight: 16,
        }
    }

    /// Keep what expired less than `grace` ago.
    #[must_use]
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// At most `rows` rows deleted a second.
    #[must_use]
    pub fn with_rows_per_second(mut self, rows: NonZeroU32) -> Self {
        self.rows_per_second = Some(rows);
        self
    }

    /// Count, delete nothing.
    #[must_use]
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// `rows` rows per page (at least 1).
    #[must_use]
    pub fn with_page_rows(mut self, rows: usize) -> Self {
        self.page_rows = rows.max(1);
        self
    }

    fn grace_delta(&self) -> TimeDelta {
        TimeDelta::from_std(self.grace).unwrap_or(TimeDelta::MAX)
    }
}

/// How far a reaper got: where to resume and what it did so far (running
/// totals across resumed runs), in which part of the key space. With
/// [`ReapOptions::dry_run`], what it would have done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ReapProgress {
    /// The last row done; resume after it. `None`: from the start.
    #[cfg_attr(feature = "serde", serde(flatten, with = "super::files::last_row_key"))]
    pub last_row_key: Option<Vec<u8>>,
    /// Rows read (only rows holding an expired cell are sent).
    pub rows_scanned: u64,
    /// Dead rows deleted.
    pub rows_reaped: u64,
    /// Live rows whose expired cells were deleted (and rows holding
    /// nothing but expired cells that never made a row).
    pub rows_trimmed: u64,
    /// Cells deleted, every version counted.
    pub cells_reaped: u64,
    /// Live rows with nothing expired long enough ago.
    pub rows_skipped_live: u64,
    /// Rows that died less than the grace period ago.
    pub rows_skipped_recent: u64,
    /// Dead rows changed since they were read (a write in between, or a
    /// conditional delete whose answer was lost): left for the next run.
    pub rows_skipped_changed: u64,
    /// Incomplete rows (see [`crate::liveness`]), or, judged without a
    /// struct, rows with visible cells and no live marker whose expired
    /// cells only a struct can tell apart: left alone.
    pub rows_skipped_unsure: u64,
    /// Another struct's rows: left alone.
    pub rows_skipped_other: u64,
    /// The part of the key space this run covers. In a file, `shard`,
    /// absent for the whole table.
    #[cfg_attr(
        feature = "serde",
        serde(
            rename = "shard",
            default,
            skip_serializing_if = "Part::is_whole",
            deserialize_with = "super::files::shard::deserialize"
        )
    )]
    pub part: Part,
}

impl ReapProgress {
    /// The start of a run over `part` only: one shard of a sharded run
    /// (see [`super::plan_parts`]).
    #[must_use]
    pub fn for_part(part: Part) -> Self {
        Self {
            part,
            ..Self::default()
        }
    }

    fn count_kept(&mut self, keep: Keep) {
        let counter = match keep {
            Keep::Nothing | Keep::Live => &mut self.rows_skipped_live,
            Keep::TooRecent => &mut self.rows_skipped_recent,
            Keep::Incomplete | Keep::Unsure => &mut self.rows_skipped_unsure,
            Keep::Other => &mut self.rows_skipped_other,
        };
        *counter += 1;
    }
}

/// How a reaper ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReapStatus {
    /// Every row of the part was looked at.
    Done(ReapProgress),
    /// Stopped by a callback: resume from this (the rows of a page stopped
    /// in `on_rows` were not deleted, and come again).
    Stopped(ReapProgress),
}

/// What a reaper works on: the table, the judge, how to make an event and
/// how to delete a row on condition.
pub(crate) trait Subject {
    /// What `on_rows` is handed.
    type Event;
    /// The table.
    fn raw(&self) -> &RawTable;
    /// The rule.
    fn judge(&self) -> &Judge;
    /// The clock.
    fn clock(&self) -> &Clock;
    /// Whether dead rows are handed to `on_rows`: without a consumer,
    /// their last values are not decoded at all (a dead row goes whether
    /// or not they decode).
    fn hands_over(&self) -> bool;
    /// The event of row `key`'s death at `died_at`; `None` to skip it.
    fn event(
        &self,
        key: &[u8],
        died_at: DateTime<Utc>,
        cells: &[Cell],
    ) -> Result<Option<Self::Event>>;
    /// Delete row `key`, read as `cells`, if it is still as read.
    async fn delete_unchanged(&self, key: &[u8], cells: &[Cell]) -> Result<bool>;
}

/// The typed reaper's subject: the table, its rule, and whether a
/// consumer takes the events.
struct Typed<'t, T> {
    table: &'t Table<T>,
    judge: Judge,
    hands_over: bool,
}

impl<T: BigtableRow> Subject for Typed<'_, T> {
    type Event = ExpiredRow<T>;

    fn raw(&self) -> &RawTable {
        self.table.raw()
    }

    fn judge(&self) -> &Judge {
        &self.judge
    }

    fn clock(&self) -> &Clock {
        self.table.clock()
    }

    fn hands_over(&self) -> bool {
        self.hands_over
    }

    fn event(
        &self,
        key: &[u8],
        died_at: DateTime<Utc>,
        cells: &[Cell],
    ) -> Result<Option<ExpiredRow<T>>> {
        self.table.last_values(key.to_vec(), died_at, cells)
    }

    async fn delete_unchanged(&self, key: &[u8], cells: &[Cell]) -> Result<bool> {
        let table = self.table.for_write_call();
        let (cut, horizon) = table.horizon(table.clock().now());
        // Pinned as it will be at the latest instant the delete may land.
        let row = RowCells::of(T::SCHEMA, cells, horizon);
        let predicate = unchanged(&row, horizon, Pin::Everything);
        match cut
            .check_and_mutate(key, predicate, delete_owned(T::SCHEMA), Vec::new())
            .await?
        {
            Checked::Answered(deleted) => Ok(deleted),
            // Judged again by the next run, which sees whether it went.
            Checked::Unknown(status) => {
                tracing::debug!(table = %table.name(), row = %key.escape_ascii(), %status, "a conditional delete lost its answer");
                Ok(false)
            }
        }
    }
}

/// The family reaper's subject: no conditional deletes (a family judged
/// without a struct never plans one).
struct Family {
    raw: RawTable,
    judge: Judge,
    clock: Clock,
}

impl Subject for Family {
    type Event = ExpiredCells;

    fn raw(&self) -> &RawTable {
        &self.raw
    }

    fn judge(&self) -> &Judge {
        &self.judge
    }

    fn clock(&self) -> &Clock {
        &self.clock
    }

    fn hands_over(&self) -> bool {
        true
    }

    fn event(
        &self,
        key: &[u8],
        died_at: DateTime<Utc>,
        cells: &[Cell],
    ) -> Result<Option<ExpiredCells>> {
        Ok(Some(ExpiredCells {
            event_id: crate::model::death::event_id(self.raw.name(), key, died_at),
            row_key: key.to_vec(),
            died_at,
            cells: self.judge.last_cells(cells, died_at),
        }))
    }

    async fn delete_unchanged(&self, _key: &[u8], _cells: &[Cell]) -> Result<bool> {
        Ok(false)
    }
}

impl<T: BigtableRow> Table<T> {
    /// Delete what expired in `T`'s rows more than `options.grace` ago
    /// (see the module `ops::reap` and the guide's "Expired data"): dead
    /// rows whole (what `T` owns, never another struct's cells), and the
    /// expired cells of live rows (per-field TTLs, map entries, older
    /// versions), so that other readers stop seeing them. No delete can
    /// remove a cell of a row written, renewed, re-timed or touched after
    /// it was read, nor a live cell. Nothing is decoded: a dead row goes
    /// whether or not its values still decode as `T` (to be handed the
    /// rows first, see [`Table::reap_with_events`]).
    ///
    /// Resumable and sharded as `migrate` is: pass the progress `on_page`
    /// was last given (or [`ReapProgress::for_part`]) as `resume`;
    /// `on_page` is called after each page and may stop the run.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # use std::ops::ControlFlow;
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "sessions", family = "s")]
    /// # #[ttl(default = "30m")]
    /// # struct Session { #[bigtable(key)] id: String, user: String }
    /// # async fn run(sessions: Table<Session>) -> bigtable_ttl::Result<()> {
    /// use bigtable_ttl::ops::{ReapOptions, ReapStatus};
    ///
    /// let status = sessions.reap(&ReapOptions::new(), None, |p| {
    ///     println!("{} rows reaped, {} cells", p.rows_reaped, p.cells_reaped);
    ///     ControlFlow::Continue(())
    /// }).await?;
    /// assert!(matches!(status, ReapStatus::Done(_)));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Layout`]; [`Error::Server`]; [`Error::PartialWrite`] when
    /// some deletes of a page failed (resume from the last progress).
    pub async fn reap(
        &self,
        options: &ReapOptions,
        resume: Option<ReapProgress>,
        on_page: impl FnMut(&ReapProgress) -> ControlFlow<()>,
    ) -> Result<ReapStatus> {
        self.reap_typed(
            options,
            resume,
            false,
            |_| async { ControlFlow::Continue(()) },
            on_page,
        )
        .await
    }

    /// [`Table::reap`], handing each page's dead rows (their key, last
    /// values, death instant and stable event id) to `on_rows` before any
    /// of them is deleted: the outbox pattern. When `on_rows` breaks, the
    /// run stops before deleting them ([`ReapStatus::Stopped`] with the
    /// progress before that page), so every deleted row was handed over
    /// at least once, across kills and restarts; a consumer drops
    /// duplicates by [`ExpiredRow::event_id`]. Only dead rows are handed
    /// over, not the expired cells of live rows.
    ///
    /// # Errors
    /// As [`Table::reap`]; [`Error::Decode`] for a dead row whose last
    /// values do not decode (skipped, and not deleted, with
    /// `ReadOptions::with_skip_undecodable(true)`).
    pub async fn reap_with_events<F>(
        &self,
        options: &ReapOptions,
        resume: Option<ReapProgress>,
        on_rows: impl FnMut(Vec<ExpiredRow<T>>) -> F,
        on_page: impl FnMut(&ReapProgress) -> ControlFlow<()>,
    ) -> Result<ReapStatus>
    where
        F: std::future::Future<Output = ControlFlow<()>>,
    {
        self.reap_typed(options, resume, true, on_rows, on_page)
            .await
    }

    /// The typed reaper, its events decoded only when `hands_over`.
    async fn reap_typed<F>(
        &self,
        options: &ReapOptions,
        resume: Option<ReapProgress>,
        hands_over: bool,
        on_rows: impl FnMut(Vec<ExpiredRow<T>>) -> F,
        on_page: impl FnMut(&ReapProgress) -> ControlFlow<()>,
    ) -> Result<ReapStatus>
    where
        F: std::future::Future<Output = ControlFlow<()>>,
    {
        self.layout()?;
        let subject = Typed {
            table: self,
            judge: Judge::Struct(T::SCHEMA),
            hands_over,
        };
        telemetry::operation(
            self.name(),
            "reap",
            |status: &ReapStatus| match status {
                ReapStatus::Done(p) | ReapStatus::Stopped(p) => p.rows_reaped,
            },
            run(
                &subject,
                options,
                resume.unwrap_or_default(),
                on_rows,
                on_page,
            ),
        )
        .await
    }
}

/// Delete what expired in `family`'s rows more than `options.grace` ago,
/// judged without a struct (what `bigtable-ttl reap` does):
///
/// * a row every cell of whose in the family expired: all of them (by
///   time range, as [`Table::reap`] does), handed to `on_rows` first when
///   the row died (see [`super::expired`] for when a family's row dies);
/// * a row carrying a live row marker (a qualifier starting with two NUL
///   bytes): its expired cells, the marker proving the row's expiry;
/// * any other row: the expired older versions of columns whose newest
///   version is live. Its other expired cells stay for garbage
///   collection: without a struct there is no telling a required column
///   (whose expired cell proves that a row written column by column
///   expired) from an optional one. [`Table::reap`] knows.
///
/// Never a conditional delete, never a visible cell.
///
/// # Errors
/// [`Error::Server`]; [`Error::PartialWrite`].
pub async fn reap<F>(
    conn: &Connection,
    rows: &FamilyRows,
    options: &ReapOptions,
    resume: Option<ReapProgress>,
    clock: &Clock,
    on_rows: impl FnMut(Vec<ExpiredCells>) -> F,
    on_page: impl FnMut(&ReapProgress) -> ControlFlow<()>,
) -> Result<ReapStatus>
where
    F: std::future::Future<Output = ControlFlow<()>>,
{
    let subject = Family {
        raw: RawTable::new(conn, &rows.table),
        judge: rows.judge(),
        clock: clock.clone(),
    };
    run(
        &subject,
        options,
        resume.unwrap_or_default(),
        on_rows,
        on_page,
    )
    .await
}

/// The reaper's pages over `subject`.
async fn run<S: Subject, F>(
    subject: &S,
    options: &ReapOptions,
    mut progress: ReapProgress,
    mut on_rows: impl FnMut(Vec<S::Event>) -> F,
    mut on_page: impl FnMut(&ReapProgress) -> ControlFlow<()>,
) -> Result<ReapStatus>
where
    F: std::future::Future<Output = ControlFlow<()>>,
{
    let judge = subject.judge();
    let grace = options.grace_delta();
    let started = (Instant::now(), progress.rows_reaped);
    let before = crate::model::death::cutoff(judge.policy(), subject.clock().now(), grace);
    let mut rows = std::pin::pin!(rows_of(
        subject.raw(),
        &progress.part,
        progress.last_row_key.as_deref(),
        judge.rows_touching(0, Some(before)),
    ));
    let mut bucket = options.rows_per_second.map(TokenBucket::new);
    let mut page = Vec::with_capacity(options.page_rows.min(1_000));
    loop {
        let next = rows.try_next().await?;
        let last = next.is_none();
        if let Some(row) = next {
            page.push(row);
        }
        if page.len() >= options.page_rows || (last && !page.is_empty()) {
            let done = std::mem::take(&mut page);
            let outcome = reap_page(
                subject,
                options,
                &mut bucket,
                progress.clone(),
                done,
                &mut on_rows,
            )
            .await?;
            let Some(next) = outcome else {
                return Ok(ReapStatus::Stopped(progress));
            };
            record(subject.raw().name(), &progress, &next, started);
            progress = next;
            if on_page(&progress).is_break() {
                return Ok(ReapStatus::Stopped(progress));
            }
        }
        if last {
            return Ok(ReapStatus::Done(progress));
        }
    }
}

/// Judge, hand over and delete one page; the progress after it, or `None`
/// when `on_rows` stopped the run before its deletes.
async fn reap_page<S: Subject, F>(
    subject: &S,
    options: &ReapOptions,
    bucket: &mut Option<TokenBucket>,
    mut progress: ReapProgress,
    page: Vec<(Vec<u8>, Vec<Cell>)>,
    on_rows: &mut impl FnMut(Vec<S::Event>) -> F,
) -> Result<Option<ReapProgress>>
where
    F: std::future::Future<Output = ControlFlow<()>>,
{
    let judge = subject.judge();
    let now = subject.clock().now();
    let grace = options.grace_delta();
    // The deletes by time range, encoded as they are planned (no
    // `Mutation` values: they are most of what a reaper does).
    let mut deletes = EncodedBatch::with_capacity(page.len(), 0);
    let mut events = Vec::new();
    // The page's last key, once, rather than a copy of every key.
    if let Some((last, _)) = page.last() {
        progress.last_row_key = Some(last.clone());
    }
    // The page's rows to delete on condition, by index in it.
    let mut doomed: Vec<usize> = Vec::new();
    for (i, (key, cells)) in page.iter().enumerate() {
        let (key, cells) = (key.as_slice(), cells.as_slice());
        progress.rows_scanned += 1;
        let plan = judge.plan(cells, now, grace);
        if let Some(died_at) = plan.died_at().filter(|_| subject.hands_over()) {
            let Some(event) = subject.event(key, died_at, cells)? else {
                // Not decodable, and skipped: not deleted either.
                progress.rows_skipped_unsure += 1;
                continue;
            };
            events.push(event);
        }
        match plan {
            Plan::Keep(keep) => progress.count_kept(keep),
            Plan::Whole {
                died_at,
                columns,
                before,
                cells: n,
            } => {
                if died_at.is_some() {
                    progress.rows_reaped += 1;
                } else {
                    progress.rows_trimmed += 1;
                }
                progress.cells_reaped += n;
                let Ok(()) = deletes.push_with(|out| {
                    encode_range_deletes(out, key, &columns, before);
                    Ok::<(), std::convert::Infallible>(())
                });
            }
            Plan::Cells {
                columns,
                before,
                cells: n,
            } => {
                progress.rows_trimmed += 1;
                progress.cells_reaped += n;
                let Ok(()) = deletes.push_with(|out| {
                    encode_range_deletes(out, key, &columns, before);
                    Ok::<(), std::convert::Infallible>(())
                });
            }
            Plan::Conditional { .. } => doomed.push(i),
        }
    }
    if !events.is_empty() && on_rows(events).await.is_break() {
        return Ok(None);
    }
    let rows = (deletes.len() + doomed.len()) as u64;
    if let Some(bucket) = bucket.as_mut() {
        bucket.take(rows).await;
    }
    if options.dry_run {
        for &i in &doomed {
            progress.rows_reaped += 1;
            progress.cells_reaped += owned(judge, &page[i].1);
        }
        return Ok(Some(progress));
    }
    write_all(subject.raw(), deletes).await?;
    let results: Vec<(u64, Result<bool>)> = futures_util::stream::iter(doomed)
        .map(|i| {
            let (key, cells) = &page[i];
            async move {
                let n = owned(judge, cells);
                (n, subject.delete_unchanged(key, cells).await)
            }
        })
        .buffer_unordered(options.in_flight.max(1))
        .collect()
        .await;
    for (cells, deleted) in results {
        if deleted? {
            progress.rows_reaped += 1;
            progress.cells_reaped += cells;
        } else {
            progress.rows_skipped_changed += 1;
        }
    }
    Ok(Some(progress))
}

/// How many of `cells` the judge owns.
fn owned(judge: &Judge, cells: &[Cell]) -> u64 {
    cells.iter().filter(|c| judge.owns(c)).count() as u64
}

/// Write `deletes` through `MutateRows` (each retried when idempotent, as
/// time-ranged deletes are), every row not surely written named.
///
/// # Errors
/// [`Error::PartialWrite`]; [`Error::Server`].
async fn write_all(table: &RawTable, deletes: EncodedBatch) -> Result<()> {
    if deletes.is_empty() {
        return Ok(());
    }
    let results = table.mutate_rows_encoded(deletes).await?;
    let written = results.iter().filter(|r| r.is_ok()).count();
    let failed: Vec<FailedRow> = results
        .into_iter()
        .filter_map(std::result::Result::err)
        .map(|e| FailedRow::new(e.row_key, e.answered.then_some(e.code), e.message))
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(Error::from(error::PartialWrite {
        table: table.name().to_owned(),
        written,
        failed,
    }))
}

/// The reaper's metrics for one page (see [`crate::telemetry`]); `started`
/// is when this run started and how many rows were reaped before it.
fn record(table: &str, before: &ReapProgress, after: &ReapProgress, started: (Instant, u64)) {
    let seconds = started.0.elapsed().as_secs_f64();
    #[allow(clippy::cast_precision_loss)] // a rate for a dashboard
    let rate = if seconds > 0.0 {
        after.rows_reaped.saturating_sub(started.1) as f64 / seconds
    } else {
        0.0
    };
    telemetry::reaped(
        table,
        after.rows_scanned - before.rows_scanned,
        after.rows_reaped - before.rows_reaped,
        after.cells_reaped - before.cells_reaped,
        after.rows_skipped_live - before.rows_skipped_live,
        rate,
    );
}
