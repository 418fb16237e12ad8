//! [`Table`]: the typed handle that does the I/O.
//!
//! Writes turn values into mutations with the pure builders of
//! [`crate::mutation`] (every cell timestamp computed from the table's
//! [`Clock`]) and send them; reads carry [`crate::model::filter::read_filter`] for
//! the clock's "now" and decode with [`crate::model::row::decode_row`], so a cell
//! past its expiry is never shown, whether or not garbage collection has
//! removed it yet.
//!
//! What a `Table` can do is in this folder: this file holds the handle, its
//! settings, the per-call deadlines and schema checks; the files beside it
//! the rest, by what they do: whole-row writes and deletes (`writes.rs`),
//! reads (`reads.rs`) and what a row not live while some of its cells are
//! really is (`settle.rs`), conditional writes (`conditional.rs`),
//! counters (`counter.rs`), map entries (`map.rs`), parallel scans
//! (`parallel.rs`), re-timing, `touch` and the conditional rewrite rounds
//! they share (`retime.rs`), partial updates (`update.rs`), and giving old
//! rows their struct's marker (`markers.rs`).

pub(crate) mod conditional;
pub(crate) mod counter;
pub(crate) mod map;
pub(crate) mod markers;
pub(crate) mod parallel;
mod reads;
pub(crate) mod retime;
mod settle;
pub(crate) mod update;
mod writes;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, TimeDelta, Utc};

use crate::client::admin::{EnsureOptions, SchemaReport};
use crate::client::connection::Connection;
use crate::client::data::RawTable;
use crate::client::layouts::Registration;
use crate::client::read::{ReadOptions, ReadStats};
use crate::client::telemetry;
use crate::client::writer::{BulkWriter, WriteOptions};
use crate::model::clock::Clock;
use crate::model::error::Result;
use crate::model::filter::{row_filter, row_filter_sole_families};
use crate::model::key::AsKey;
use crate::model::mutation::RowMutation;
use crate::model::proto::RowFilter;
use crate::model::read_filter::ReadFilter;
use crate::model::row::BigtableRow;

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
    /// partially expired rows left out, undecodable rows skipped, rows
    /// left out under an unknown struct's marker.
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
    /// [`crate::Error::Layout`] before anything is sent; otherwise as
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
    /// [`crate::Error::Layout`] before anything is sent; otherwise as
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
}
