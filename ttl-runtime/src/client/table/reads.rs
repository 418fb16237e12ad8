//! Typed reads of a [`Table`]: `get`, `scan` and `stream`, each row judged
//! at the clock's now by the liveness rule in one stream stage
//! (`Judging`), and the raw stream the other reads go through. A row that
//! is not live while some of its own cells are is handed to `settle.rs`.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures_util::{Stream, StreamExt as _, TryStreamExt as _};

use crate::client::data::FailureOf;
use crate::client::limited::{limited, Judged};
use crate::client::read::ReadFailure;
use crate::client::table::Table;
use crate::client::telemetry;
use crate::model::error::{CodecError, Error, Result};
use crate::model::key::AsKey;
use crate::model::other_marker::other_marker;
use crate::model::proto::{ReadRowsRequest, RowFilter};
use crate::model::row::{classify_row, BigtableRow, Decoded};
use crate::model::scan::Scan;
use crate::model::schema::ROW_MARKER_PREFIX;
use crate::model::view::{CellRef, Expiring};
use crate::wire::merge::{Cell, MergedRow, RowSink};

impl<T: BigtableRow> Table<T> {
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
            (_, request) => self.judged_rows(request, now).returned().right_stream(),
        }
    }

    /// The rows of `request` as the reader judges them at `now`, those it
    /// leaves out included (as `row: None`).
    fn judged_rows(
        &self,
        request: Result<Option<ReadRowsRequest>>,
        now: DateTime<Utc>,
    ) -> Judging<
        impl Stream<Item = std::result::Result<JudgedRow<T>, ReadFailure>>,
        T,
        impl Future<Output = Judged<Expiring<T>>>,
    > {
        // As `raw_stream`, its failures made errors by the stage.
        let rows = match self.layout_checked(request) {
            Err(e) => Rows::Refused(Some(e)),
            Ok(None) => Rows::Refused(None),
            Ok(Some(request)) => {
                let judge = Judge {
                    now,
                    row: PhantomData,
                };
                let (rows, failure) = self.raw().rows_failing(request, judge, true);
                Rows::Read(Box::pin(rows), failure)
            }
        };
        Judging {
            rows,
            table: self.clone(),
            now,
            met: MarkersMet::default(),
            settle: Self::settle_judged,
            settling: None,
        }
    }

    /// The row `key`, not live while some of its own cells are, as settled
    /// by more requests (see `settle_partial`).
    async fn settle_judged(
        self,
        key: Bytes,
        now: DateTime<Utc>,
        missing: usize,
    ) -> Judged<Expiring<T>> {
        let settled = self.settle_partial(key.to_vec(), now, missing).await;
        let row = self.skip_undecodable(settled).transpose();
        Judged {
            key: Some(key),
            row,
        }
    }

    /// A row left out as absent that would be `T`'s under its own marker,
    /// but carries marker `name` of a struct with no live handle on this
    /// table through this connection (see [`crate::model::other_marker`]):
    /// counted in
    /// [`crate::client::read::ReadStats::rows_under_unknown_marker`], and
    /// the first of each marker on this connection logged, with what to
    /// change if `T` is that struct renamed. `met` holds what this read
    /// learnt of each marker, so that the connection's registry is asked
    /// once a marker a read, not once a row. Out of line: rows left out are
    /// the uncommon path of a read.
    #[inline(never)]
    fn note_other_marker(&self, key: &[u8], name: &[u8], met: &mut MarkersMet) {
        let schema = T::SCHEMA;
        let known = if let Some(&(_, known)) = met.0.iter().find(|(m, _)| **m == *name) {
            known
        } else {
            let conn = self.connection();
            let known = conn.knows_marker(self.name(), schema.marker_family(), name);
            if !known && conn.first_warning(self.name(), schema.marker, name) {
                let name = String::from_utf8_lossy(name);
                let own = String::from_utf8_lossy(&schema.marker[ROW_MARKER_PREFIX.len()..]);
                tracing::warn!(
                    table = %self.name(),
                    row = %key.escape_ascii(),
                    "rows read as absent: they hold only {own}'s cells but carry the row marker \
                     of {name:?}, a struct with no handle on this table through this connection; \
                     if {own} is {name} renamed, keep its marker with \
                     #[bigtable(marker = {name:?})] (ReadStats::rows_under_unknown_marker \
                     counts these rows)"
                );
            }
            met.0.push((name.into(), known));
            known
        };
        if !known {
            self.raw
                .counters()
                .rows_under_unknown_marker
                .fetch_add(1, Ordering::Relaxed);
        }
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

    /// `request`, once the table's layout is checked: what every read sends
    /// (`raw_stream`, `judged_rows`).
    fn layout_checked(
        &self,
        request: Result<Option<ReadRowsRequest>>,
    ) -> Result<Option<ReadRowsRequest>> {
        request.and_then(|request| self.layout().map(|()| request))
    }

    /// The rows of `request` as the raw layer merges them, after the layout
    /// check: what every read of what is really stored goes through (a
    /// typed read does the same in its `Judging` stage).
    pub(crate) fn raw_stream(
        &self,
        request: Result<Option<ReadRowsRequest>>,
    ) -> impl Stream<Item = Result<MergedRow>> + Send + 'static {
        match self.layout_checked(request) {
            Err(e) => futures_util::stream::iter([Err(e)]).left_stream(),
            Ok(request) => self.raw().merged_rows(request).right_stream(),
        }
    }
}

/// What a typed read makes of each merged row as the read hands it over:
/// the row judged at `now`, its cells read where they lie in the response
/// when the row lay whole in one message (no cell list made, no share of
/// the response taken a cell: about 600 instructions a row of a scan, of
/// some 5,800). What judging a row does beyond that (logging, counting,
/// settling a partial row) is [`Judging`]'s.
struct Judge<T> {
    now: DateTime<Utc>,
    row: PhantomData<fn() -> T>,
}

/// A row as [`Judge`] made it.
pub(crate) struct JudgedRow<T> {
    key: Bytes,
    verdict: RowVerdict<T>,
    /// The row's key and values, in bytes, with the `metrics` feature.
    bytes: u64,
}

/// What the liveness rule and the decoder said of a row.
enum RowVerdict<T> {
    Row(Expiring<T>),
    /// Not live; the marker of another struct it carries, when it would be
    /// `T`'s row under `T`'s own (see `Table::note_other_marker`).
    Absent(Option<Box<[u8]>>),
    /// Not live while some of its own cells are (see `settle_partial`).
    Partial {
        missing: usize,
    },
    Failed(Error),
}

impl<T: BigtableRow> Judge<T> {
    fn judge<'a>(
        &self,
        key: &'a [u8],
        cells: impl Iterator<Item = CellRef<'a>> + Clone,
    ) -> RowVerdict<T> {
        match classify_row::<T>(key, cells.clone(), self.now) {
            Ok(Decoded::Row(row)) => RowVerdict::Row(row),
            Ok(Decoded::Absent) => RowVerdict::Absent(
                other_marker(T::SCHEMA, T::column_of, key, cells, self.now).map(Box::from),
            ),
            Ok(Decoded::Partial { missing }) => RowVerdict::Partial { missing },
            Err(e) => RowVerdict::Failed(e),
        }
    }
}

/// The key's and the values' bytes, when the metrics count them.
fn metered<'a>(key: &[u8], cells: impl Iterator<Item = CellRef<'a>>) -> u64 {
    if cfg!(feature = "metrics") {
        (key.len() + cells.map(|c| c.value.len()).sum::<usize>()) as u64
    } else {
        0
    }
}

impl<T: BigtableRow> RowSink for Judge<T> {
    type Row = JudgedRow<T>;

    fn owned(&mut self, key: Bytes, cells: Vec<Cell>) -> JudgedRow<T> {
        let verdict = self.judge(&key, cells.iter().map(Cell::as_cell_ref));
        let bytes = metered(&key, cells.iter().map(Cell::as_cell_ref));
        JudgedRow {
            key,
            verdict,
            bytes,
        }
    }

    fn borrowed<'a>(
        &mut self,
        key: Bytes,
        row: &'a [u8],
        cells: impl Iterator<Item = CellRef<'a>> + Clone,
    ) -> JudgedRow<T> {
        JudgedRow {
            verdict: self.judge(row, cells.clone()),
            bytes: metered(row, cells),
            key,
        }
    }

    fn bytes(row: &JudgedRow<T>) -> u64 {
        row.bytes
    }
}

/// The rows of one read as the reader judges them (`Table::judged_rows`).
///
/// One stage written by hand, not `then` over the merged rows (and a
/// `filter_map` after it for a read without a limit), and making the read's
/// failure an error itself, not through `raw_stream`'s `map_err`: every row
/// then goes through one poll, not through a future made, polled and
/// dropped and the stages around it, each moving the row (about 240
/// instructions a row of a scan, of some 5,900). The common path is
/// synchronous; only a row that is not live while some of its own cells
/// are (see `settle_partial`) waits, on a future held in `settling`.
struct Judging<S, T, F> {
    rows: Rows<S>,
    table: Table<T>,
    now: DateTime<Utc>,
    met: MarkersMet,
    /// `Table::settle_judged`, whose future's type is `F`.
    settle: fn(Table<T>, Bytes, DateTime<Utc>, usize) -> F,
    /// The partial row being settled. Boxed: it is rare, and a read's
    /// state would make the stage that large to move.
    settling: Option<Pin<Box<F>>>,
}

/// The judged rows a [`Judging`] stage reads.
enum Rows<S> {
    /// The read, boxed once: the stage needs no pinning.
    Read(Pin<Box<S>>, FailureOf),
    /// No read: the error refusing it, until returned; none for a read of
    /// no row.
    Refused(Option<Error>),
}

impl<S, T, F> Judging<S, T, F>
where
    S: Stream<Item = std::result::Result<JudgedRow<T>, ReadFailure>>,
    T: BigtableRow,
    F: Future<Output = Judged<Expiring<T>>>,
{
    /// The next row as judged, those left out included.
    fn poll_judged(&mut self, cx: &mut Context<'_>) -> Poll<Option<Judged<Expiring<T>>>> {
        loop {
            if let Some(settling) = &mut self.settling {
                let judged = ready!(settling.as_mut().poll(cx));
                self.settling = None;
                return Poll::Ready(Some(judged));
            }
            let next = match &mut self.rows {
                Rows::Read(rows, failure) => match ready!(rows.as_mut().poll_next(cx)) {
                    Some(row) => row.map_err(|e| failure.error(e)),
                    None => return Poll::Ready(None),
                },
                Rows::Refused(refused) => match refused.take() {
                    Some(e) => Err(e),
                    None => return Poll::Ready(None),
                },
            };
            let JudgedRow { key, verdict, .. } = match next {
                Ok(row) => row,
                Err(e) => {
                    return Poll::Ready(Some(Judged {
                        key: None,
                        row: Some(Err(e)),
                    }))
                }
            };
            let this = &self.table;
            let row = match verdict {
                RowVerdict::Row(row) => Some(Ok(row)),
                RowVerdict::Absent(other) => {
                    if let Some(name) = other {
                        this.note_other_marker(&key, &name, &mut self.met);
                    }
                    None
                }
                RowVerdict::Partial { missing } => {
                    let settling = (self.settle)(this.clone(), key, self.now, missing);
                    self.settling = Some(Box::pin(settling));
                    continue;
                }
                RowVerdict::Failed(e) => this
                    .skip_undecodable(Err(e.in_table(this.name())))
                    .transpose(),
            };
            return Poll::Ready(Some(Judged {
                key: Some(key),
                row,
            }));
        }
    }

    /// The rows the reader returns: those left out are passed over.
    fn returned(mut self) -> impl Stream<Item = Result<Expiring<T>>> {
        futures_util::stream::poll_fn(move |cx| loop {
            match ready!(self.poll_judged(cx)) {
                Some(Judged { row: None, .. }) => {}
                judged => return Poll::Ready(judged.and_then(|judged| judged.row)),
            }
        })
    }
}

impl<S, T, F> Stream for Judging<S, T, F>
where
    S: Stream<Item = std::result::Result<JudgedRow<T>, ReadFailure>>,
    T: BigtableRow,
    F: Future<Output = Judged<Expiring<T>>>,
{
    type Item = Judged<Expiring<T>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_judged(cx)
    }
}

/// The other structs' markers one read has met (see
/// `Table::note_other_marker`), each with whether a struct writing it has a
/// handle on the table through the read's connection.
#[derive(Default)]
struct MarkersMet(Vec<(Box<[u8]>, bool)>);

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
