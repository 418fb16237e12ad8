//! [`Table`]: the typed handle that does the I/O.
//!
//! Writes turn values into mutations with the pure builders of
//! [`crate::mutation`] (every cell timestamp computed from the table's
//! [`Clock`]) and send them; reads carry [`crate::model::filter::read_filter`] for
//! the clock's "now" and decode with [`crate::model::row::decode_row`], so a cell
//! past its expiry is never shown, whether or not garbage collection has
//! removed it yet.
//!
//! What a `Table` can do is in this folder: this file holds the handle,
//! whole-row writes, reads and schema checks; the files beside it the rest
//! (`retime.rs`: re-timing, `touch` and the conditional rewrite rounds
//! they share; `update.rs`: partial updates; `markers.rs`: giving old rows
//! their struct's marker).

pub(crate) mod markers;
pub(crate) mod retime;
pub(crate) mod update;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::model::proto::{Mutation, ReadRowsRequest, RowFilter};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::future::Either;
use futures_util::{Stream, StreamExt as _, TryStreamExt as _};

use crate::client::admin::{EnsureOptions, SchemaReport};
use crate::client::connection::Connection;
use crate::client::data::RawTable;
use crate::client::failure::status_error;
use crate::client::layouts::Registration;
use crate::client::limited::{limited, Judged};
use crate::client::read::{ReadOptions, ReadStats};
use crate::client::telemetry;
use crate::client::writer::{BulkWriter, WriteOptions};
use crate::model::clock::Clock;
use crate::model::error::{CodecError, Error, Result};
use crate::model::filter::required_newest_stripped;
use crate::model::filter::{row_filter, row_filter_sole_families};
use crate::model::key::AsKey;
use crate::model::mutation::{delete_owned, RowMutation};
use crate::model::policy::{from_micros, millis_floor};
use crate::model::read_filter::ReadFilter;
use crate::model::row::MutationBuilder;
use crate::model::row::{classify_row, missing_column, BigtableRow, Decoded};
use crate::model::scan::Scan;
use crate::model::view::Expiring;
use crate::wire::merge::{Cell, MergedRow};

/// A typed handle on one Bigtable table holding rows of `T`.
///
/// Cheap to clone (it shares the [`Connection`] and the [`Clock`]). Every
/// write computes its cell timestamps from [`Table::clock`]; every read
/// filters by the same clock's "now".
///
/// Writes retry transient failures (they are idempotent: every cell carries
/// an explicit timestamp), reads resume after the last row they delivered;
/// see [`crate::retry`] for what is retried and
/// [`Table::with_write_options`] / [`Table::with_read_options`] to tune it.
///
/// ```no_run
/// use bigtable_ttl::{BigtableRow, Connection, Scan, Table};
/// use chrono::TimeDelta;
///
/// #[derive(BigtableRow)]
/// #[bigtable(table = "clicks", family = "c")]
/// #[ttl(default = "2d", written_at)]
/// struct Click {
///     #[bigtable(key)]
///     id: String,
///     url: String,
///     referrer: Option<String>,
/// }
///
/// # async fn run() -> bigtable_ttl::Result<()> {
/// let conn = Connection::connect("my-project", "my-instance").await?;
/// let clicks = Table::<Click>::new(conn);
/// clicks.ensure_schema().await?;
///
/// let click = Click { id: "c3#0001".into(), url: "/home".into(), referrer: None };
/// clicks.put(&click).await?; // lives 2 days
/// clicks.put_with(click.mutation().ttl(TimeDelta::hours(1))).await?; // now 1 hour
///
/// if let Some(read) = clicks.get(&"c3#0001".to_owned()).await? {
///     println!("{} expires at {}", read.url, read.expires_at);
/// }
/// for click in clicks.scan(Scan::prefix("c3#").limit(10)).await? {
///     println!("{}", click.url);
/// }
/// # Ok(()) }
/// ```
pub struct Table<T> {
    /// The raw data layer on this table: its name, timeouts and retries,
    /// read statistics and call deadline. Every read and write goes through
    /// it.
    raw: RawTable,
    clock: Clock,
    /// The live table was seen (by `ensure_schema` or `verify_schema` on this
    /// handle or a clone) to hold no family but `T`'s: reads need not select
    /// families ([`crate::model::filter::read_filter_sole_families`]).
    sole_families: Arc<AtomicBool>,
    /// `T` as the connection knows it on this table: refused when another
    /// struct of the table would write the same cells
    /// ([`crate::client::layouts`]).
    layout: Arc<Registration>,
    /// Set on the handle of one conditional attempt that the library cuts
    /// at the write's horizon, shorter than the policy allows
    /// ([`Table::horizon`]): an attempt that ends without an answer then
    /// says so, and which setting to change.
    pub(crate) cut_at_horizon: Option<std::time::Duration>,
    _row: PhantomData<fn() -> T>,
}

impl<T> Clone for Table<T> {
    fn clone(&self) -> Self {
        Self {
            raw: self.raw.clone(),
            clock: self.clock.clone(),
            sole_families: self.sole_families.clone(),
            layout: self.layout.clone(),
            cut_at_horizon: self.cut_at_horizon,
            _row: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Table<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.raw.name())
            .field("row", &std::any::type_name::<T>())
            .field("clock", &self.clock)
            .field("conn", self.raw.connection())
            .field("write", self.raw.write_options())
            .field("read", self.raw.read_options())
            .finish_non_exhaustive()
    }
}

/// What a successful write stored, for one row.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Written {
    /// The row key.
    pub row_key: Vec<u8>,
    /// The timestamp of the row-level cells (µs; a column with its own
    /// shorter TTL may carry an earlier one).
    pub timestamp_micros: i64,
    /// When the row expires.
    pub expires_at: DateTime<Utc>,
    /// The clock's time of the write, truncated to the millisecond (what the
    /// `written_at` shadow column holds, where declared).
    pub written_at: DateTime<Utc>,
}

impl Written {
    pub(crate) fn new(m: &RowMutation, written_at: DateTime<Utc>) -> Self {
        Self {
            row_key: m.row_key.clone(),
            timestamp_micros: m.timestamp_micros,
            expires_at: m.expires_at,
            written_at,
        }
    }
}

impl<T: BigtableRow> Table<T> {
    /// A handle on `T::SCHEMA.table` over `conn`, on the system clock, its
    /// reads and writes under the connection's timeouts and retries
    /// ([`Connection::retry`]).
    #[must_use]
    pub fn new(conn: Connection) -> Self {
        let layout = conn.register(T::SCHEMA.table, std::any::type_name::<T>(), T::SCHEMA);
        Self {
            layout,
            raw: RawTable::on(conn, T::SCHEMA.table),
            clock: Clock::system(),
            sole_families: Arc::default(),
            cut_at_horizon: None,
            _row: PhantomData,
        }
    }

    /// The same handle with these batching and retry settings for writes
    /// ([`Table::put`], [`Table::put_all`], [`Table::writer`],
    /// [`Table::delete`]); its policy's deadline also bounds each
    /// conditional or multi-step write as a whole (`insert_if_absent`,
    /// `put_if`, `update`, `increment`, …: see [`crate::retry`]).
    #[must_use]
    pub fn with_write_options(mut self, options: WriteOptions) -> Self {
        self.raw = self.raw.with_write_options(options);
        self
    }

    /// The same handle with these timeouts and retries for reads: a read
    /// whose stream breaks, stalls or does not answer in time is resumed
    /// after the last row it delivered (with the remaining row limit), and
    /// ends with [`crate::Code::DeadlineExceeded`] once it has gone the
    /// policy's deadline without a row (see [`ReadOptions`]).
    #[must_use]
    pub fn with_read_options(mut self, options: ReadOptions) -> Self {
        self.raw = self.raw.with_read_options(options);
        self
    }

    /// The write settings.
    #[must_use]
    pub fn write_options(&self) -> &WriteOptions {
        self.raw.write_options()
    }

    /// What reads through this handle (and its clones) met so far: resumes,
    /// partially expired rows left out, undecodable rows skipped.
    #[must_use]
    pub fn read_stats(&self) -> ReadStats {
        self.raw.counters().snapshot()
    }

    /// A streaming bulk writer on this table, with its write options: one
    /// operation (span and metrics, [`crate::telemetry`]) until
    /// [`BulkWriter::finish`].
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d")]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>) -> bigtable_ttl::Result<()> {
    /// let mut writer = clicks.writer();
    /// for i in 0..100_000 {
    ///     writer.send(&Click { id: format!("c{i:06}"), url: "/".into() }).await?;
    /// }
    /// let stats = writer.finish().await?;
    /// assert_eq!(stats.rows_written, 100_000);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn writer(&self) -> BulkWriter<T> {
        BulkWriter::new(self.raw.clone(), self.clock.clone())
            .with_layout(self.layout.clone())
            .in_operation(telemetry::Operation::start(self.name(), "writer"))
    }

    /// The same handle on the table `name` instead (per test, per
    /// environment: `clicks_staging`). The schema is still `T::SCHEMA`.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.layout = self
            .connection()
            .register(&name, std::any::type_name::<T>(), T::SCHEMA);
        self.raw = self.raw.renamed(&name);
        // What was learnt of the other table's families says nothing of this one.
        self.sole_families = Arc::default();
        self
    }

    /// The same handle on `clock` (a [`Clock::manual`] in tests and
    /// simulations).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The clock writes and reads use.
    #[must_use]
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The table's id.
    #[must_use]
    pub fn name(&self) -> &str {
        self.raw.name()
    }

    /// The connection.
    #[must_use]
    pub fn connection(&self) -> &Connection {
        self.raw.connection()
    }

    /// The row key for `key`, its errors naming this handle's table.
    pub(crate) fn row_key<Q: ?Sized + AsKey<T::Key>>(&self, key: &Q) -> Result<Vec<u8>> {
        key.with_key(T::encode_key)
            .map_err(|e| e.in_table(self.name()))
    }

    pub(crate) fn path(&self) -> String {
        self.raw.path().to_owned()
    }

    /// The timeouts and retries of reads.
    pub(crate) fn read_options(&self) -> &ReadOptions {
        self.raw.read_options()
    }

    /// This handle for the steps of one call that must all end by
    /// `deadline` (or by the deadline it already has, when earlier): every
    /// request it makes, reads, conditional writes and re-reads alike, is
    /// cut there.
    pub(crate) fn until(&self, deadline: Instant) -> Self {
        let mut call = self.clone();
        let earliest = self.raw.deadline().map_or(deadline, |d| d.min(deadline));
        call.raw = call.raw.within(Some(earliest));
        call
    }

    /// This handle for one call governed by the write policy, from now
    /// (conditional and multi-step writes; see [`crate::retry`]).
    pub(crate) fn for_write_call(&self) -> Self {
        self.until(self.write_options().retry.deadline_from_now())
    }

    /// For a conditional write that must not carry a row past its expiry
    /// (`put_if`, `put_entry`, an update, a re-time), about to be sent: this handle, its attempt cut at the write's horizon, and
    /// that horizon on the table's clock. The horizon is now plus the time
    /// the attempt may take (the write policy's attempt timeout within the
    /// call's deadline, at most [`WriteOptions::horizon`]), the `grpc-timeout` it
    /// carries: the server does not apply it later, so a predicate asking
    /// for a row alive at the horizon cannot let the write land on a row
    /// that expired meanwhile (a row that expires sooner counts as
    /// expired). Never earlier than `now` plus that time, `now` being the
    /// instant the caller decides at (a counter's recount decides at the
    /// server's stamp, which may be ahead of the table's clock). The read
    /// settling a lost answer goes through the uncut handle.
    pub(crate) fn horizon(&self, now: DateTime<Utc>) -> (Self, DateTime<Utc>) {
        let allowed = self
            .write_options()
            .retry
            .start_within(self.raw.deadline())
            .attempt_timeout();
        let horizon = self.write_options().horizon;
        let span = allowed.min(horizon);
        let mut cut = self.until(Instant::now() + span);
        cut.cut_at_horizon = (horizon < allowed).then_some(horizon);
        // Read after the cut is set, so the horizon is never earlier than
        // the instant the attempt is cut at.
        let at = TimeDelta::from_std(span)
            .ok()
            .and_then(|span| self.clock.now().max(now).checked_add_signed(span))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        (cut, at)
    }

    /// This handle for one call governed by the read options, from now.
    pub(crate) fn for_read_call(&self) -> Self {
        self.until(self.read_options().retry.deadline_from_now())
    }

    // ----- writes -------------------------------------------------------

    /// Write `row` with the expiry its fields or the table's policy give,
    /// replacing the columns it writes (a `None` field deletes its column).
    /// One atomic `MutateRow`.
    ///
    /// Returns what was stored: key, cell timestamp, expiry and write time.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # use chrono::{DateTime, TimeDelta, Utc};
    /// #[derive(BigtableRow)]
    /// #[bigtable(table = "sessions", family = "s")]
    /// struct Session {
    ///     #[bigtable(key)]
    ///     id: String,
    ///     #[ttl(expire_at)]
    ///     expires_at: DateTime<Utc>,
    ///     user: String,
    /// }
    /// # async fn run(sessions: Table<Session>) -> bigtable_ttl::Result<()> {
    /// let now = sessions.clock().now();
    /// let s = Session { id: "s1".into(), expires_at: now + TimeDelta::minutes(30), user: "ann".into() };
    /// let written = sessions.put(&s).await?;
    /// println!("expires at {} (to the millisecond)", written.expires_at);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Before anything is sent: [`Error::ExpiryNotInFuture`],
    /// [`Error::NonPositiveTtl`], [`Error::MissingExpiry`],
    /// [`Error::ExpiryOutOfRange`], [`Error::TimestampBeforeEpoch`], key and
    /// value errors. [`Error::Server`] when Bigtable rejects the write.
    pub async fn put(&self, row: &T) -> Result<Written> {
        self.put_with(row.mutation()).await
    }

    /// Write with per-write overrides from the builder:
    /// `table.put_with(click.mutation().ttl(TimeDelta::hours(1)))`.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # use chrono::TimeDelta;
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d")]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>, click: Click) -> bigtable_ttl::Result<()> {
    /// clicks.put_with(click.mutation().ttl(TimeDelta::hours(1))).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Table::put`].
    pub async fn put_with(&self, builder: MutationBuilder<'_, T>) -> Result<Written> {
        telemetry::operation(self.name(), "put", |_| 1, async {
            let now = self.clock.now();
            let mut m = builder.build_checked(self.name(), now)?;
            let written_at = from_micros(millis_floor(now)?)?;
            let mutations = std::mem::take(&mut m.mutations);
            self.mutate_row(m.row_key.clone(), mutations).await?;
            Ok(Written::new(&m, written_at))
        })
        .await
    }

    /// Write many rows, each as [`Table::put`] would, through `MutateRows`.
    ///
    /// Every row's mutations are built, checked and encoded first, all with
    /// the same "now": a bad row anywhere fails the call before anything is
    /// sent. All the encoded requests (about the size of the rows' data) are
    /// therefore held until sent; for more rows than that should take in
    /// memory, stream them through [`Table::writer`], which holds only the
    /// requests in flight. They are sent in requests of at most [`crate::limits::MAX_MUTATIONS_PER_REQUEST`] mutations and
    /// about [`crate::limits::MAX_REQUEST_BYTES`] bytes. Bigtable applies each row
    /// atomically but the batch is not atomic; the status of every entry is
    /// read, entries failing with a transient error are retried (safe: every
    /// mutation carries explicit timestamps, so sending it twice stores the
    /// same thing), and any row still not written is reported in
    /// [`Error::PartialWrite`]. Success means every row was written.
    ///
    /// Returns one [`Written`] per row, in input order.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d")]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>, batch: Vec<Click>) -> bigtable_ttl::Result<()> {
    /// let written = clicks.put_all(&batch).await?;
    /// assert_eq!(written.len(), batch.len());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Table::put`] for bad input (nothing sent);
    /// [`Error::PartialWrite`] when some rows were not (or not surely)
    /// written; [`Error::Server`] when the first request fails as a whole
    /// and nothing was written.
    pub async fn put_all<'a, I>(&self, rows: I) -> Result<Vec<Written>>
    where
        I: IntoIterator<Item = &'a T>,
        T: 'a,
    {
        self.put_all_with(rows.into_iter().map(BigtableRow::mutation))
            .await
    }

    /// [`Table::put_all`] with per-row builders (per-row `.ttl()` /
    /// `.expire_at()` overrides).
    ///
    /// # Errors
    /// As [`Table::put_all`].
    pub async fn put_all_with<'a, I>(&self, builders: I) -> Result<Vec<Written>>
    where
        I: IntoIterator<Item = MutationBuilder<'a, T>>,
        T: 'a,
    {
        telemetry::operation(
            self.name(),
            "put_all",
            |written: &Vec<Written>| written.len() as u64,
            self.put_all_inner(builders),
        )
        .await
    }

    async fn put_all_inner<'a, I>(&self, builders: I) -> Result<Vec<Written>>
    where
        I: IntoIterator<Item = MutationBuilder<'a, T>>,
        T: 'a,
    {
        let now = self.clock.now();
        let written_at = from_micros(millis_floor(now)?)?;
        // Every row is built, checked and encoded before anything is sent:
        // bad input leaves nothing written. The encoded batches (about the
        // size of the rows' data) are all that is held.
        let mut writer = BulkWriter::<T>::new(self.raw.clone(), self.clock.clone())
            .with_layout(self.layout.clone());
        let mut batches = Vec::new();
        let mut written = Vec::new();
        for b in builders {
            let (row, full) = writer.queue(&b, now)?;
            written.push(Written {
                row_key: row.row_key,
                timestamp_micros: row.timestamp_micros,
                expires_at: row.expires_at,
                written_at,
            });
            batches.extend(full);
        }
        batches.push(writer.take_batch());
        for batch in batches {
            writer.dispatch(batch).await;
        }
        match writer.flush().await {
            Ok(()) => Ok(written),
            // Nothing got through (missing table, bad request…): the plain
            // server error says it best.
            Err(Error::PartialWrite(e)) if e.written == 0 => match writer.stopped_status() {
                Some(status) => Err(status_error(self.name(), None, status.clone(), None)),
                None => Err(Error::PartialWrite(e)),
            },
            Err(e) => Err(e),
        }
    }

    /// Delete `T`'s row with key `key`, every version of every cell `T`
    /// owns, now: its columns, counter window marks, `written_at` shadow,
    /// marker and map entries (see the guide's "Several structs in one
    /// table"). Another struct's row under the same key, and cells of no
    /// struct, stay. One atomic `MutateRow` of one `DeleteFromColumn` per
    /// column, window mark, shadow and marker and one `DeleteFromFamily`
    /// per map (with `#[bigtable(owns_family)]`, one `DeleteFromFamily` for
    /// the owned family instead of its columns). Deleting a missing row is
    /// not an error.
    ///
    /// To delete every cell of a row whatever struct wrote it, send
    /// Bigtable's `DeleteFromRow` through the raw layer ([`Table::raw`]).
    ///
    /// # Errors
    /// Key errors; [`Error::Layout`]; [`Error::Server`].
    pub async fn delete<Q: ?Sized + AsKey<T::Key>>(&self, key: &Q) -> Result<()> {
        telemetry::operation(self.name(), "delete", |()| 1, async {
            let row_key = self.row_key(key)?;
            self.mutate_row(row_key, delete_owned(T::SCHEMA)).await
        })
        .await
    }

    /// One `MutateRow`, retried within the write policy (safe: the
    /// mutations are idempotent), through the raw layer.
    pub(crate) async fn mutate_row(
        &self,
        row_key: Vec<u8>,
        mutations: Vec<Mutation>,
    ) -> Result<()> {
        self.layout()?;
        self.raw().mutate_row_wire(row_key, mutations).await
    }

    /// `Err(Error::Layout)` when another struct opened on this table
    /// through the same connection would write the same cells; what every
    /// call checks before it sends anything.
    #[inline]
    pub(crate) fn layout(&self) -> Result<()> {
        self.layout.check()
    }

    /// This table as the raw data layer sees it, the handle every call of
    /// this one goes through: the same name, connection, timeouts and
    /// retries. For what is really stored (every version, expired or not,
    /// unfiltered) and what the typed layer does not express:
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d")]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>) -> bigtable_ttl::Result<()> {
    /// use bigtable_ttl::data::ReadRows;
    /// use futures_util::TryStreamExt as _;
    ///
    /// let rows: Vec<_> = clicks.raw().read_rows(ReadRows::keys(["c1"])).try_collect().await?;
    /// for cell in rows.iter().flat_map(|row| &row.cells) {
    ///     println!("{}:{} at {}", cell.family, cell.qualifier.escape_ascii(), cell.timestamp_micros);
    /// }
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn raw(&self) -> &RawTable {
        &self.raw
    }

    // ----- schema --------------------------------------------------------

    /// Create the table and its families as `T::SCHEMA` declares, or bring
    /// their GC rules in line ([`crate::client::admin::ensure_schema`] on this
    /// table's name). Safe to call on every start.
    ///
    /// # Errors
    /// As [`Table::ensure_schema_with`].
    pub async fn ensure_schema(&self) -> Result<SchemaReport> {
        self.ensure_schema_with(EnsureOptions::default()).await
    }

    /// [`Table::ensure_schema`] with options (forcing a switch to one-second
    /// expiration on a family that holds data).
    ///
    /// # Errors
    /// [`Error::Layout`] before anything is sent; otherwise as
    /// [`crate::client::admin::ensure_schema`].
    pub async fn ensure_schema_with(&self, options: EnsureOptions) -> Result<SchemaReport> {
        // A clashing layout is refused here too: the table it would create
        // could only ever be written by one of the two structs.
        self.layout()?;
        let report =
            crate::client::admin::ensure_schema(self.connection(), self.name(), T::SCHEMA, options)
                .await?;
        self.sole_families
            .store(report.other_families.is_empty(), Ordering::Relaxed);
        Ok(report)
    }

    /// Check that the live table's families and GC rules are what
    /// `T::SCHEMA` declares ([`crate::client::admin::verify_schema`]).
    ///
    /// # Errors
    /// [`Error::Layout`] before anything is sent; otherwise as
    /// [`crate::client::admin::verify_schema`].
    pub async fn verify_schema(&self) -> Result<()> {
        self.layout()?;
        let others =
            crate::client::admin::verify_schema_families(self.connection(), self.name(), T::SCHEMA)
                .await?;
        self.sole_families
            .store(others.is_empty(), Ordering::Relaxed);
        Ok(())
    }

    /// The filter a typed read sends at `now`: cells visible at `now`, the
    /// newest per column, of `T`'s families. Families are selected unless
    /// [`Table::ensure_schema`] or [`Table::verify_schema`] found the table
    /// holding no other family, which spares the server a pass over every
    /// cell ([`crate::model::filter::read_filter_sole_families`]).
    #[must_use]
    pub fn read_filter(&self, now: DateTime<Utc>) -> ReadFilter {
        ReadFilter::new(self.row_filter(now))
    }

    /// [`Table::read_filter`]'s message.
    pub(crate) fn row_filter(&self, now: DateTime<Utc>) -> RowFilter {
        if self.sole_families.load(Ordering::Relaxed) {
            row_filter_sole_families(T::SCHEMA, now)
        } else {
            row_filter(T::SCHEMA, now)
        }
    }

    // ----- reads ---------------------------------------------------------

    /// The request reading `scan` with `filter`; `Ok(None)` when no row can
    /// match, an error (before anything is sent) for a scan Bigtable would
    /// refuse.
    pub(crate) fn read_request(
        &self,
        scan: Scan,
        filter: Option<RowFilter>,
    ) -> Result<Option<ReadRowsRequest>> {
        Ok(scan.into_request(self.path())?.map(|mut request| {
            request.filter = filter;
            request
        }))
    }

    /// The row with key `key` as visible now, with its expiry metadata;
    /// `None` when it does not exist or every cell has expired.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d", written_at)]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>) -> bigtable_ttl::Result<()> {
    /// if let Some(click) = clicks.get(&"c1".to_owned()).await? {
    ///     println!("{} expires at {}, written at {:?}", click.url, click.expires_at, click.written_at);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Key errors; [`Error::Server`]; [`Error::Decode`] when a stored cell
    /// does not decode into its field.
    pub async fn get<Q: ?Sized + AsKey<T::Key>>(&self, key: &Q) -> Result<Option<Expiring<T>>> {
        telemetry::operation(
            self.name(),
            "get",
            |row: &Option<_>| u64::from(row.is_some()),
            async {
                let row_key = self.row_key(key)?;
                // The row, and the re-reads a row torn or partly expired
                // needs, within one deadline.
                let mut rows: Vec<Expiring<T>> = self
                    .for_read_call()
                    .stream_at(Scan::keys([row_key]).limit(1), self.clock.now())
                    .try_collect()
                    .await?;
                Ok(rows.pop())
            },
        )
        .await
    }

    /// The rows `scan` covers, as visible now, in key order (descending for
    /// a [`Scan::reversed`] scan); rows whose cells have all expired are
    /// skipped. With [`Scan::limit`]`(n)`, the first `n` rows this returns
    /// (the last `n`, reversed): rows left out do not count.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub async fn scan(&self, scan: Scan) -> Result<Vec<Expiring<T>>> {
        telemetry::operation(
            self.name(),
            "scan",
            |rows: &Vec<_>| rows.len() as u64,
            self.stream_at(scan, self.clock.now()).try_collect(),
        )
        .await
    }

    /// As [`Table::scan`], one row at a time as the server sends them. The
    /// request is sent when the stream is first polled; "now" is the clock's
    /// time when `stream` is called. The stream is one operation (span and
    /// metrics, [`crate::telemetry`]) from its first poll to its end.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Scan, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d")]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>) -> bigtable_ttl::Result<()> {
    /// use futures_util::TryStreamExt as _;
    /// let mut rows = std::pin::pin!(clicks.stream(Scan::all()));
    /// while let Some(click) = rows.try_next().await? {
    ///     println!("{}", click.url);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn stream(&self, scan: Scan) -> impl Stream<Item = Result<Expiring<T>>> {
        telemetry::stream(
            self.name(),
            "stream",
            self.stream_at(scan, self.clock.now()),
        )
    }

    /// [`Table::stream`] of the rows as visible at `now`. A limited scan
    /// returns its first rows the reader returns, whatever the server
    /// counts ([`crate::client::limited`]).
    pub(crate) fn stream_at(
        &self,
        scan: Scan,
        now: DateTime<Utc>,
    ) -> impl Stream<Item = Result<Expiring<T>>> {
        let limit = scan.row_limit();
        match (limit, self.read_request(scan, Some(self.row_filter(now)))) {
            (Some(limit), Ok(Some(request))) => {
                let this = self.clone();
                let pages = move |request| this.judged_rows(Ok(Some(request)), now);
                limited(request, limit, pages).left_stream()
            }
            (_, request) => self
                .judged_rows(request, now)
                .filter_map(|judged| futures_util::future::ready(judged.row))
                .right_stream(),
        }
    }

    /// The rows of `request` as the reader judges them at `now`, those it
    /// leaves out included (as `row: None`).
    fn judged_rows(
        &self,
        request: Result<Option<ReadRowsRequest>>,
        now: DateTime<Utc>,
    ) -> impl Stream<Item = Judged<Expiring<T>>> {
        let this = self.clone();
        let ready = |key, row| Either::Left(futures_util::future::ready(Judged { key, row }));
        self.raw_stream(request).then(move |row| {
            // The common path stays synchronous: only a row that is not live
            // while some of its own cells are (see `settle_partial`) needs a
            // handle and more requests.
            let (key, cells) = match row {
                Ok(row) => row,
                Err(e) => return ready(None, Some(Err(e))),
            };
            let decoded = classify_row::<T>(&key, cells.iter().map(Cell::as_cell_ref), now)
                .map_err(|e| e.in_table(this.name()));
            match decoded {
                Ok(Decoded::Row(row)) => ready(Some(key), Some(Ok(row))),
                Ok(Decoded::Absent) => ready(Some(key), None),
                Ok(Decoded::Partial { missing, .. }) => {
                    let this = this.clone();
                    // Boxed: the stream holds room for its pending future,
                    // and a read's state would make every row's ready
                    // result that large to move.
                    Either::Right(Box::pin(async move {
                        let settled = this.settle_partial(key.clone(), now, missing).await;
                        let row = this.skip_undecodable(settled).transpose();
                        Judged {
                            key: Some(key),
                            row,
                        }
                    }))
                }
                Err(e) => {
                    let row = this.skip_undecodable(Err(e)).transpose();
                    ready(Some(key), row)
                }
            }
        })
    }

    /// With [`ReadOptions::skip_undecodable`], a row that does not decode
    /// becomes no row (counted and logged); otherwise the result as it is.
    fn skip_undecodable(&self, row: Result<Option<Expiring<T>>>) -> Result<Option<Expiring<T>>> {
        match row {
            Err(e) if self.read_options().skip_undecodable && is_undecodable(&e) => {
                self.raw
                    .counters()
                    .rows_skipped
                    .fetch_add(1, Ordering::Relaxed);
                if is_incomplete(&e) {
                    self.raw
                        .counters()
                        .rows_incomplete
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(table = %self.name(), error = %e, "skipping an incomplete row: a required column holds no cell and nothing shows it expired");
                } else {
                    tracing::warn!(table = %self.name(), error = %e, "skipping a row that does not decode");
                }
                Ok(None)
            }
            other => other,
        }
    }

    /// This handle, reporting rows that do not decode instead of skipping
    /// them: for a write deciding whether a row exists, an incomplete row
    /// exists.
    pub(crate) fn strict(&self) -> Self {
        let mut strict = self.clone();
        let mut read = *self.read_options();
        read.skip_undecodable = false;
        strict.raw = strict.raw.with_read_options(read);
        strict
    }

    /// What a row read at `now` that is not live, while some of its own
    /// required cells (or its live marker) are, really is
    /// ([`Decoded::Partial`]): a required column has no visible cell. One
    /// unfiltered look at the required columns (the newest cell of each,
    /// value stripped) tells:
    ///
    /// * **Partially expired**: a missing column's newest cell is stored
    ///   and has expired (a row written column by column whose older
    ///   required column expired before garbage collection removed it).
    ///   The stored cells prove it: the row is not live, left out as a row
    ///   whose cells have all expired is, and counted in
    ///   [`ReadStats::partially_expired`].
    /// * **Torn**: every required column is live. The emulator's
    ///   `ReadRows` is not row-atomic, and a read concurrent with a write of
    ///   the row can miss some of its cells (Cloud Bigtable's reads are
    ///   row-atomic). The row is read again.
    /// * **Incomplete**: a required column holds no cell at all, and nothing
    ///   proves it expired: a struct that gained a required field without
    ///   `#[bigtable(default)]`, a row another program wrote without it, or
    ///   one whose expired column was collected before markers existed.
    ///   [`Error::Decode`] naming the table, row and column (skipped and
    ///   counted in [`ReadStats::rows_incomplete`] with
    ///   [`ReadOptions::skip_undecodable`]). `insert_if_absent`'s condition
    ///   follows the same three answers (`model::condition::present_row`).
    async fn settle_partial(
        &self,
        key: Vec<u8>,
        now: DateTime<Utc>,
        mut missing: usize,
    ) -> Result<Option<Expiring<T>>> {
        const REREADS: usize = 3;
        let schema = T::SCHEMA;
        for reread in 0..=REREADS {
            let stored = self.required_newest(&key).await?;
            let mut none = None;
            for (i, c) in schema.columns.iter().enumerate() {
                if !c.is_required() {
                    continue;
                }
                match stored.iter().find(|(q, _)| {
                    (q.0.as_str(), q.1.as_slice()) == (c.family, c.qualifier.as_bytes())
                }) {
                    Some((_, ts)) if schema.policy.is_visible(*ts, now) => {}
                    Some(_) => return Ok(self.partially_expired(&key)),
                    None => {
                        none.get_or_insert(i);
                    }
                }
            }
            if let Some(column) = none {
                return Err(missing_column(schema, &key, column).in_table(self.name()));
            }
            // Every required column live: the read was torn.
            if reread == REREADS {
                break;
            }
            tracing::debug!(table = %self.name(), row = %key.escape_ascii(), "reading a row again that was not live while some of its cells were");
            match self.read_row_at(&key, now).await? {
                Decoded::Row(row) => return Ok(Some(row)),
                Decoded::Absent => return Ok(None),
                Decoded::Partial { missing: m, .. } => missing = m,
            }
        }
        Err(missing_column(schema, &key, missing).in_table(self.name()))
    }

    /// The newest stored timestamp of each required column of row `key`
    /// that holds a cell, expired or not, by `(family, qualifier)`.
    async fn required_newest(&self, key: &[u8]) -> Result<Vec<((String, Vec<u8>), i64)>> {
        let Some(filter) = required_newest_stripped(T::SCHEMA) else {
            return Ok(Vec::new());
        };
        let request = self.read_request(Scan::keys([key]).limit(1), Some(filter));
        let rows: Vec<MergedRow> = self.raw_stream(request).try_collect().await?;
        Ok(rows
            .into_iter()
            .flat_map(|(_, cells)| cells)
            .map(|c| {
                let cell = c.as_cell_ref();
                (
                    (cell.family.to_owned(), cell.qualifier.to_vec()),
                    cell.timestamp_micros,
                )
            })
            .collect())
    }

    /// Count and log a row left out because it is partially expired.
    fn partially_expired(&self, key: &[u8]) -> Option<Expiring<T>> {
        self.raw
            .counters()
            .partially_expired
            .fetch_add(1, Ordering::Relaxed);
        tracing::debug!(table = %self.name(), row = %key.escape_ascii(), "leaving out a row that is not live: a required column has expired while other cells of it have not");
        None
    }

    /// Row `key` read and judged at `now`.
    async fn read_row_at(&self, key: &[u8], now: DateTime<Utc>) -> Result<Decoded<T>> {
        let request = self.read_request(Scan::keys([key]).limit(1), Some(self.row_filter(now)));
        let rows: Vec<MergedRow> = self.raw_stream(request).try_collect().await?;
        let Some((row_key, cells)) = rows.into_iter().next() else {
            return Ok(Decoded::Absent);
        };
        classify_row::<T>(&row_key, cells.iter().map(Cell::as_cell_ref), now)
            .map_err(|e| e.in_table(self.name()))
    }

    pub(crate) fn raw_stream(
        &self,
        request: Result<Option<ReadRowsRequest>>,
    ) -> impl Stream<Item = Result<MergedRow>> + Send + 'static {
        match request.and_then(|request| self.layout().map(|()| request)) {
            Err(e) => futures_util::stream::iter([Err(e)]).left_stream(),
            Ok(request) => self.raw().merged_rows(request).right_stream(),
        }
    }
}

/// Whether `e` reports an incomplete row: a required column without a cell.
fn is_incomplete(e: &Error) -> bool {
    matches!(e, Error::Decode(e) if e.source == CodecError::Missing)
}

/// A row that does not decode into the struct (not a read that failed).
fn is_undecodable(e: &Error) -> bool {
    matches!(
        e,
        Error::Decode { .. } | Error::BadRowKey { .. } | Error::TimestampOutOfRange { .. }
    )
}
