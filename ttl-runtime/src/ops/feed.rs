//! The expiry feed: the rows that died within a window of time, with what
//! they held and when they died ([`Table::expired`]; by family name,
//! without a struct, [`expired`]).
//!
//! A row's death is computed from its stored cells alone (see
//! `model::death`): the instant its liveness ended, a whole millisecond.
//! A window `[from, to)` yields the rows whose death is in it, so windows
//! that tile time yield each death exactly once; a window must be of the
//! past (`to` at or before the clock's now). The read carries a server-side
//! filter: only rows holding a cell whose expiry is in the window (or a
//! marker carrying such an expiry) are sent, so what is read grows with the
//! cells that expired in the window, not with the table.
//!
//! What the feed cannot see: a death whose cells garbage collection has
//! already removed, or that a whole-row write (`put`) replaced before the
//! feed read it. Read windows soon after they close (see the guide's
//! "Expired data").

use std::ops::Bound;

use chrono::{DateTime, TimeDelta, Utc};
use futures_util::{Stream, StreamExt as _, TryStreamExt as _};

use crate::client::connection::Connection;
use crate::client::data::{RawTable, ReadRows, RowFilter};
use crate::client::table::Table;
use crate::model::cell::{cell_ref, Cell};
use crate::model::death::{event_id, Judge};
use crate::model::error::{self, Error, Result};
use crate::model::policy::Policy;
use crate::model::row::{classify_row, missing_column, BigtableRow, Decoded};

use super::shard::Part;

/// A window of death instants, `[from, to)`, and the part of the key space
/// to read, from its start or after a row already handled.
///
/// ```
/// use bigtable_ttl::ops::{ExpiryWindow, Part};
/// use chrono::{TimeDelta, Utc};
///
/// let to = Utc::now();
/// let window = ExpiryWindow::new(to - TimeDelta::minutes(5), to)
///     .with_part(Part::whole())
///     .resume_after(b"row#0042".to_vec());
/// assert_eq!(window.after.as_deref(), Some(&b"row#0042"[..]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExpiryWindow {
    /// The first death instant in the window (inclusive).
    pub from: DateTime<Utc>,
    /// The end of the window (exclusive); at or before the clock's now.
    pub to: DateTime<Utc>,
    /// The part of the key space (one shard; the whole table unless set).
    pub part: Part,
    /// Resume after this row (the last one handled), within the part.
    pub after: Option<Vec<u8>>,
}

impl ExpiryWindow {
    /// The deaths from `from` (inclusive) to `to` (exclusive), whole table.
    #[must_use]
    pub fn new(from: DateTime<Utc>, to: DateTime<Utc>) -> Self {
        Self {
            from,
            to,
            part: Part::whole(),
            after: None,
        }
    }

    /// Only the rows of `part` (one shard; see [`super::plan_parts`]).
    #[must_use]
    pub fn with_part(mut self, part: Part) -> Self {
        self.part = part;
        self
    }

    /// Start after row `key`: the last row a run handled (its checkpoint).
    #[must_use]
    pub fn resume_after(mut self, key: Vec<u8>) -> Self {
        self.after = Some(key);
        self
    }

    /// `Err(Error::InvalidWindow)` unless `from <= to <= now`.
    fn check(&self, now: DateTime<Utc>) -> Result<()> {
        if self.from <= self.to && self.to <= now {
            Ok(())
        } else {
            Err(Error::from(error::InvalidWindow {
                from: self.from,
                to: self.to,
                now,
            }))
        }
    }
}

/// A row of `T` that died, with its last values.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ExpiredRow<T> {
    /// The row key.
    pub row_key: Vec<u8>,
    /// When it died (a whole millisecond).
    pub died_at: DateTime<Utc>,
    /// What it held the millisecond before it died.
    pub value: T,
    /// When it was really written, from the shadow column, where declared.
    pub written_at: Option<DateTime<Utc>>,
    /// The death's stable id: the same in every run and on every machine
    /// (FNV-1a, 128 bits, of the table, the key and the instant), so a
    /// consumer of an at-least-once feed drops duplicates by it.
    pub event_id: String,
}

/// A row of a family, judged without a struct, that died, with its last
/// cells (see [`expired`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExpiredCells {
    /// The row key.
    pub row_key: Vec<u8>,
    /// When it died (a whole millisecond).
    pub died_at: DateTime<Utc>,
    /// The newest cell of each of its columns in the family the
    /// millisecond before it died.
    pub cells: Vec<Cell>,
    /// The death's stable id (see [`ExpiredRow::event_id`]).
    pub event_id: String,
}

/// A family of a table to read, judged without a struct: by its row
/// markers and its cells' expiries under `policy` (see [`expired`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyRows {
    /// The table.
    pub table: String,
    /// The family.
    pub family: String,
    /// Its TTL policy (`ops::parse_policy`).
    pub policy: Policy,
}

impl FamilyRows {
    /// `family` of `table` under `policy`.
    #[must_use]
    pub fn new(table: impl Into<String>, family: impl Into<String>, policy: Policy) -> Self {
        Self {
            table: table.into(),
            family: family.into(),
            policy,
        }
    }

    pub(crate) fn judge(&self) -> Judge {
        Judge::Family {
            family: self.family.clone(),
            policy: self.policy,
        }
    }
}

/// The rows of `part`, after `after`, read with `filter`: raw, every cell
/// the filter lets through.
pub(crate) fn rows_of(
    raw: &RawTable,
    part: &Part,
    after: Option<&[u8]>,
    filter: crate::model::proto::RowFilter,
) -> impl Stream<Item = Result<(Vec<u8>, Vec<Cell>)>> + Send + 'static {
    if part.is_empty() {
        return futures_util::stream::empty().left_stream();
    }
    let start = match after {
        Some(key) if key >= part.start.as_slice() => Bound::Excluded(key.to_vec()),
        _ if part.start.is_empty() => Bound::Unbounded,
        _ => Bound::Included(part.start.clone()),
    };
    let end = part.end.clone().map_or(Bound::Unbounded, Bound::Excluded);
    raw.read_rows(ReadRows::range((start, end)).filter(RowFilter::from_wire(filter)))
        .map_ok(|row| (row.key, row.cells))
        .right_stream()
}

/// The rows `judge` finds dead in `window` at `now`, raw: key, death and
/// cells.
fn deaths(
    raw: &RawTable,
    judge: Judge,
    window: &ExpiryWindow,
    now: DateTime<Utc>,
) -> impl Stream<Item = Result<(Vec<u8>, DateTime<Utc>, Vec<Cell>)>> + Send + 'static {
    if let Err(e) = window.check(now) {
        return futures_util::stream::iter(vec![Err(e)]).left_stream();
    }
    let Some((lo, hi)) = judge.timestamps_expiring(window.from, window.to) else {
        return futures_util::stream::iter(Vec::new()).left_stream();
    };
    let (from, to) = (window.from, window.to);
    rows_of(
        raw,
        &window.part,
        window.after.as_deref(),
        judge.rows_touching(lo, Some(hi)),
    )
    .try_filter_map(move |(key, cells)| {
        let died = judge.died_at(&cells, now).filter(|d| from <= *d && *d < to);
        futures_util::future::ready(Ok(died.map(|d| (key, d, cells))))
    })
    .right_stream()
}

impl<T: BigtableRow> Table<T> {
    /// The rows of `T` that died within `window`, in key order, each with
    /// its last values, the instant it died (by [the liveness
    /// rule](crate::liveness), per-field TTLs and maps included) and a
    /// stable event id; judged at the table clock's now.
    ///
    /// The read carries a server-side filter: only rows holding a cell of
    /// `T`'s families that expires in the window (or a marker carrying
    /// such an expiry) are sent. Windows that tile time yield each death
    /// once; a feed is sharded by [`ExpiryWindow::with_part`] and resumed
    /// with [`ExpiryWindow::resume_after`] the last row handled. A death
    /// whose cells garbage collection already removed is not seen (see
    /// the guide's "Expired data").
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "sessions", family = "s")]
    /// # #[ttl(default = "30m")]
    /// # struct Session { #[bigtable(key)] id: String, user: String }
    /// # async fn run(sessions: Table<Session>) -> bigtable_ttl::Result<()> {
    /// use bigtable_ttl::ops::ExpiryWindow;
    /// use chrono::TimeDelta;
    /// use futures_util::TryStreamExt as _;
    ///
    /// let to = sessions.clock().now();
    /// let mut gone = std::pin::pin!(sessions.expired(&ExpiryWindow::new(to - TimeDelta::minutes(5), to)));
    /// while let Some(row) = gone.try_next().await? {
    ///     println!("{} of {} ended at {} ({})", row.value.id, row.value.user, row.died_at, row.event_id);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As the stream's item: [`Error::InvalidWindow`] before anything is
    /// read; [`Error::Layout`]; [`Error::Server`]; [`Error::Decode`] for a
    /// row whose last values do not decode (skipped, counted and logged
    /// with `ReadOptions::with_skip_undecodable(true)`).
    pub fn expired(&self, window: &ExpiryWindow) -> impl Stream<Item = Result<ExpiredRow<T>>> {
        let now = self.clock().now();
        if let Err(e) = self.layout() {
            return futures_util::stream::iter([Err(e)]).left_stream();
        }
        let this = self.clone();
        deaths(self.raw(), Judge::Struct(T::SCHEMA), window, now)
            .try_filter_map(move |(key, died_at, cells)| {
                futures_util::future::ready(this.last_values(key, died_at, &cells))
            })
            .right_stream()
    }

    /// Row `key`, stored as `cells`, as it was the millisecond before it
    /// died at `died_at`; `None` for a row that does not decode when the
    /// read options skip such rows.
    pub(crate) fn last_values(
        &self,
        key: Vec<u8>,
        died_at: DateTime<Utc>,
        cells: &[Cell],
    ) -> Result<Option<ExpiredRow<T>>> {
        let before = died_at - TimeDelta::milliseconds(1);
        let decoded = match classify_row::<T>(&key, cells.iter().map(cell_ref), before) {
            Ok(Decoded::Row(row)) => Ok(row),
            // Live the millisecond before by its marker alone, a required
            // column since collected: what it held is not all there.
            Ok(Decoded::Partial { missing }) => Err(missing_column(T::SCHEMA, &key, missing)),
            Ok(Decoded::Absent) => Err(missing_column(T::SCHEMA, &key, 0)),
            Err(e) => Err(e),
        }
        .map_err(|e| e.in_table(self.name()));
        match decoded {
            Ok(row) => Ok(Some(ExpiredRow {
                event_id: event_id(self.name(), &key, died_at),
                row_key: key,
                died_at,
                value: row.value,
                written_at: row.written_at,
            })),
            Err(e) if self.read_options().skip_undecodable => {
                tracing::warn!(table = %self.name(), error = %e, "skipping an expired row whose last values do not decode");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// The rows of `family` that died within `window`, judged at `now`
/// without a struct: a row carrying row markers (qualifiers starting with
/// two NUL bytes, which this library writes) died when the latest row
/// expiry they carry passed; a row without one, when its last cell of the
/// family expired. Each with the newest cell of each of its columns the
/// millisecond before. What the command line's `bigtable-ttl expired`
/// prints; [`Table::expired`] judges a struct's rows by its own rule
/// (required fields, maps, other structs' markers).
///
/// # Errors
/// As the stream's item: [`Error::InvalidWindow`]; [`Error::Server`].
pub fn expired(
    conn: &Connection,
    rows: &FamilyRows,
    window: &ExpiryWindow,
    now: DateTime<Utc>,
) -> impl Stream<Item = Result<ExpiredCells>> + Send + 'static {
    let judge = rows.judge();
    let table = rows.table.clone();
    deaths(
        &RawTable::new(conn, &rows.table),
        judge.clone(),
        window,
        now,
    )
    .map_ok(move |(key, died_at, cells)| ExpiredCells {
        event_id: event_id(&table, &key, died_at),
        cells: judge.last_cells(&cells, died_at),
        row_key: key,
        died_at,
    })
}
