//! [`Table`]: the typed handle that does the I/O.
//!
//! Writes turn values into mutations with the pure builders of
//! [`crate::mutation`] (every cell timestamp computed from the table's
//! [`Clock`]) and send them; reads carry [`crate::filter::read_filter`] for
//! the clock's "now" and decode with [`crate::row::decode_row`], so a cell
//! past its expiry is never shown, whether or not garbage collection has
//! removed it yet.

use std::marker::PhantomData;
use std::time::Duration;

use bigtable_rs::google::bigtable::v2::{
    mutate_rows_request, MutateRowRequest, MutateRowsRequest, Mutation, ReadRowsRequest, RowFilter,
};
use chrono::{DateTime, Utc};
use futures_util::{Stream, StreamExt as _, TryStreamExt as _};

use crate::admin::{EnsureOptions, SchemaReport};
use crate::clock::Clock;
use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::filter::read_filter;
use crate::mutation::{delete_row, MutationBuilder, RowMutation};
use crate::policy::{from_micros, millis_floor};
use crate::row::{decode_row, BigtableRow, Expiring};
use crate::scan::{read_rows, RawCell, RawRow, ReadError, Scan};

/// Most mutations Bigtable accepts in one `MutateRows` request.
pub const MAX_MUTATIONS_PER_REQUEST: usize = 100_000;

/// The request size [`Table::put_all`] aims to stay under. Bigtable's limit is
/// 256 MiB per request, but it recommends batches far smaller, and gRPC
/// channels often cap messages lower; 16 MiB is what Google's clients use.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// Attempts per row of a write on transient errors (`UNAVAILABLE`,
/// `DEADLINE_EXCEEDED`, `ABORTED`). Retrying is safe: every mutation carries
/// explicit timestamps, so applying it twice stores the same cells.
const MUTATE_ATTEMPTS: u32 = 3;

/// A typed handle on one Bigtable table holding rows of `T`.
///
/// Cheap to clone (it shares the [`Connection`] and the [`Clock`]). Every
/// write computes its cell timestamps from [`Table::clock`]; every read
/// filters by the same clock's "now".
///
/// Writes retry transient failures (they are idempotent: every cell carries
/// an explicit timestamp). Reads are not retried: a failed read returns
/// [`Error::Server`] and can simply be issued again.
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
    conn: Connection,
    name: String,
    clock: Clock,
    _row: PhantomData<fn() -> T>,
}

impl<T> Clone for Table<T> {
    fn clone(&self) -> Self {
        Self {
            conn: self.conn.clone(),
            name: self.name.clone(),
            clock: self.clock.clone(),
            _row: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Table<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name)
            .field("row", &std::any::type_name::<T>())
            .field("clock", &self.clock)
            .field("conn", &self.conn)
            .finish()
    }
}

/// What a successful write stored, for one row.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    fn new(m: &RowMutation, written_at: DateTime<Utc>) -> Self {
        Self {
            row_key: m.row_key.clone(),
            timestamp_micros: m.timestamp_micros,
            expires_at: m.expires_at,
            written_at,
        }
    }
}

impl<T: BigtableRow> Table<T> {
    /// A handle on `T::SCHEMA.table` over `conn`, on the system clock.
    #[must_use]
    pub fn new(conn: Connection) -> Self {
        Self {
            conn,
            name: T::SCHEMA.table.to_owned(),
            clock: Clock::system(),
            _row: PhantomData,
        }
    }

    /// The same handle on the table `name` instead (per test, per
    /// environment: `clicks_staging`). The schema is still `T::SCHEMA`.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
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
        &self.name
    }

    /// The connection.
    #[must_use]
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    fn path(&self) -> String {
        self.conn.table_path(&self.name)
    }

    fn server_error(&self, row_key: Option<String>, source: impl Into<BoxError>) -> Error {
        Error::Server {
            table: self.name.clone(),
            row_key,
            source: source.into(),
        }
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
        let now = self.clock.now();
        let m = builder.build(now)?;
        let written_at = from_micros(millis_floor(now)?)?;
        self.mutate_row(m.row_key.clone(), m.mutations.clone())
            .await?;
        Ok(Written::new(&m, written_at))
    }

    /// Write many rows, each as [`Table::put`] would, through `MutateRows`.
    ///
    /// Every row's mutations are built first, all with the same "now": a bad
    /// row anywhere fails the call before anything is sent. They are then
    /// sent in requests of at most [`MAX_MUTATIONS_PER_REQUEST`] mutations and
    /// about [`MAX_REQUEST_BYTES`] bytes. Bigtable applies each row
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
        let now = self.clock.now();
        let written_at = from_micros(millis_floor(now)?)?;
        let built = builders
            .into_iter()
            .map(|b| b.build(now))
            .collect::<Result<Vec<RowMutation>>>()?;
        let written: Vec<Written> = built.iter().map(|m| Written::new(m, written_at)).collect();
        let entries: Vec<mutate_rows_request::Entry> = built
            .into_iter()
            .map(|m| mutate_rows_request::Entry {
                row_key: m.row_key,
                mutations: m.mutations,
                ..mutate_rows_request::Entry::default()
            })
            .collect();
        self.mutate_rows(entries).await?;
        Ok(written)
    }

    /// Delete the row with key `key`, every column and version, now
    /// (`DeleteFromRow`). Deleting a missing row is not an error.
    ///
    /// # Errors
    /// Key errors; [`Error::Server`].
    pub async fn delete(&self, key: &T::Key) -> Result<()> {
        let row_key = T::encode_key(key)?;
        self.mutate_row(row_key, vec![delete_row()]).await
    }

    async fn mutate_row(&self, row_key: Vec<u8>, mutations: Vec<Mutation>) -> Result<()> {
        let request = MutateRowRequest {
            table_name: self.path(),
            row_key,
            mutations,
            ..MutateRowRequest::default()
        };
        let mut client = self.conn.data_client();
        let mut attempt = 1;
        loop {
            match client.mutate_row(request.clone()).await {
                Ok(_) => return Ok(()),
                Err(bigtable_rs::bigtable::Error::RpcError(status))
                    if attempt < MUTATE_ATTEMPTS && transient(status.code()) =>
                {
                    backoff(attempt).await;
                    attempt += 1;
                }
                Err(e) => {
                    let key = String::from_utf8_lossy(&request.row_key).into_owned();
                    return Err(self.server_error(Some(key), e));
                }
            }
        }
    }

    /// Send `entries` in bounded requests, retrying transient per-entry
    /// failures; report every row not written.
    async fn mutate_rows(&self, entries: Vec<mutate_rows_request::Entry>) -> Result<()> {
        let table_name = self.path();
        let mut failed: Vec<(Vec<u8>, String)> = Vec::new();
        let mut written = 0usize;
        let mut batches = batches(entries).into_iter();
        while let Some(batch) = batches.next() {
            let len = batch.len();
            match self.send_batch(&table_name, batch).await {
                BatchOutcome::Done { failed: f } => {
                    written += len - f.len();
                    failed.extend(f);
                }
                BatchOutcome::RequestFailed {
                    error,
                    written: w,
                    failed: f,
                } => {
                    if written == 0 && w == 0 && failed.is_empty() {
                        // Nothing got through (missing table, bad request…):
                        // the plain server error says it best.
                        return Err(self.server_error(None, error));
                    }
                    written += w;
                    failed.extend(f);
                    for rest in batches.by_ref() {
                        failed.extend(rest.into_iter().map(|e| {
                            (e.row_key, "not sent: an earlier request failed".to_owned())
                        }));
                    }
                }
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(Error::PartialWrite {
                table: self.name.clone(),
                written,
                failed: failed
                    .into_iter()
                    .map(|(k, msg)| (String::from_utf8_lossy(&k).into_owned(), msg))
                    .collect(),
            })
        }
    }

    async fn send_batch(
        &self,
        table_name: &str,
        mut pending: Vec<mutate_rows_request::Entry>,
    ) -> BatchOutcome {
        let mut client = self.conn.data_client();
        let mut failed: Vec<(Vec<u8>, String)> = Vec::new();
        let mut written = 0usize;
        for attempt in 1..=MUTATE_ATTEMPTS {
            let request = MutateRowsRequest {
                table_name: table_name.to_owned(),
                entries: pending.clone(),
                ..MutateRowsRequest::default()
            };
            let mut status: Vec<Option<(i32, String)>> = vec![None; pending.len()];
            let outcome = match client.mutate_rows(request).await {
                Ok(mut stream) => loop {
                    match stream.message().await {
                        Ok(Some(response)) => {
                            for entry in response.entries {
                                let slot = usize::try_from(entry.index)
                                    .ok()
                                    .and_then(|i| status.get_mut(i));
                                if let Some(slot) = slot {
                                    let (code, message) = entry
                                        .status
                                        .map(|s| (s.code, s.message))
                                        .unwrap_or_default();
                                    *slot = Some((code, message));
                                }
                            }
                        }
                        Ok(None) => break Ok(()),
                        Err(status) => {
                            break Err((Some(status.code()), Box::new(status) as BoxError))
                        }
                    }
                },
                Err(bigtable_rs::bigtable::Error::RpcError(status)) => {
                    Err((Some(status.code()), Box::new(status) as BoxError))
                }
                Err(e) => Err((None, Box::new(e) as BoxError)),
            };
            // A request that failed as a whole with a transient error: the
            // entries without a status are retried with the others.
            let retry_unknown = attempt < MUTATE_ATTEMPTS
                && matches!(&outcome, Err((Some(code), _)) if transient(*code));
            let mut retry = Vec::new();
            let mut unknown = Vec::new();
            for (entry, status) in pending.into_iter().zip(status) {
                match status {
                    Some((0, _)) => written += 1,
                    Some((code, _))
                        if attempt < MUTATE_ATTEMPTS && transient(tonic::Code::from(code)) =>
                    {
                        retry.push(entry);
                    }
                    None if retry_unknown => retry.push(entry),
                    Some((code, message)) => failed.push((
                        entry.row_key,
                        format!("{}: {message}", tonic::Code::from(code)),
                    )),
                    None => unknown.push(entry),
                }
            }
            if let (Err((_, error)), false) = (outcome, retry_unknown) {
                let note = format!("outcome unknown, the request failed: {error}");
                failed.extend(
                    unknown
                        .into_iter()
                        .chain(retry)
                        .map(|e| (e.row_key, note.clone())),
                );
                return BatchOutcome::RequestFailed {
                    error,
                    written,
                    failed,
                };
            }
            // A stream that ends without a status for an entry breaks the
            // protocol; never count such a row as written.
            failed.extend(
                unknown
                    .into_iter()
                    .map(|e| (e.row_key, "no status returned for this entry".to_owned())),
            );
            if retry.is_empty() {
                break;
            }
            backoff(attempt).await;
            pending = retry;
        }
        BatchOutcome::Done { failed }
    }

    // ----- schema --------------------------------------------------------

    /// Create the table and its families as `T::SCHEMA` declares, or bring
    /// their GC rules in line ([`crate::admin::ensure_schema`] on this
    /// table's name). Safe to call on every start.
    ///
    /// # Errors
    /// As [`crate::admin::ensure_schema`].
    pub async fn ensure_schema(&self) -> Result<SchemaReport> {
        self.ensure_schema_with(EnsureOptions::default()).await
    }

    /// [`Table::ensure_schema`] with options (forcing a switch to one-second
    /// expiration on a family that holds data).
    ///
    /// # Errors
    /// As [`crate::admin::ensure_schema`].
    pub async fn ensure_schema_with(&self, options: EnsureOptions) -> Result<SchemaReport> {
        crate::admin::ensure_schema(&self.conn, &self.name, T::SCHEMA, options).await
    }

    /// Check that the live table's families and GC rules are what
    /// `T::SCHEMA` declares ([`crate::admin::verify_schema`]).
    ///
    /// # Errors
    /// As [`crate::admin::verify_schema`].
    pub async fn verify_schema(&self) -> Result<()> {
        crate::admin::verify_schema(&self.conn, &self.name, T::SCHEMA).await
    }

    // ----- reads ---------------------------------------------------------

    fn read_request(&self, scan: Scan, filter: Option<RowFilter>) -> Option<ReadRowsRequest> {
        scan.into_request(self.path()).map(|mut request| {
            request.filter = filter;
            request
        })
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
    pub async fn get(&self, key: &T::Key) -> Result<Option<Expiring<T>>> {
        let row_key = T::encode_key(key)?;
        let mut rows = self.scan(Scan::keys([row_key]).limit(1)).await?;
        Ok(rows.pop())
    }

    /// The rows `scan` covers, as visible now, in key order; rows whose cells
    /// have all expired are skipped.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub async fn scan(&self, scan: Scan) -> Result<Vec<Expiring<T>>> {
        self.stream(scan).try_collect().await
    }

    /// As [`Table::scan`], one row at a time as the server sends them. The
    /// request is sent when the stream is first polled; "now" is the clock's
    /// time when `stream` is called.
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
        let now = self.clock.now();
        let request = self.read_request(scan, Some(read_filter(T::SCHEMA, now)));
        let table = self.name.clone();
        self.raw_stream(request).filter_map(move |row| {
            let out = match row {
                Ok((key, cells)) => {
                    decode_row::<T>(&key, cells.iter().map(RawCell::as_cell_ref), now).transpose()
                }
                Err((key, e)) => Some(Err(Error::Server {
                    table: table.clone(),
                    row_key: key,
                    source: e.into(),
                })),
            };
            futures_util::future::ready(out)
        })
    }

    /// Every stored cell of the rows `scan` covers, **unfiltered**: all
    /// versions, expired or not, until garbage collection removes them. For
    /// tests and operators who need to see what is really stored; typed
    /// reads never return expired cells.
    ///
    /// # Errors
    /// [`Error::Server`].
    pub async fn raw_rows(&self, scan: Scan) -> Result<Vec<(Vec<u8>, Vec<RawCell>)>> {
        let request = self.read_request(scan, None);
        self.raw_stream(request)
            .map_err(|(key, e)| self.server_error(key, e))
            .try_collect()
            .await
    }

    fn raw_stream(
        &self,
        request: Option<ReadRowsRequest>,
    ) -> impl Stream<Item = std::result::Result<RawRow, (Option<String>, ReadError)>> + Send + 'static
    {
        match request {
            None => futures_util::stream::empty().left_stream(),
            Some(request) => {
                let single_key = request
                    .rows
                    .as_ref()
                    .filter(|r| r.row_ranges.is_empty() && r.row_keys.len() == 1)
                    .map(|r| String::from_utf8_lossy(&r.row_keys[0]).into_owned());
                read_rows(self.conn.data_client(), request)
                    .map_err(move |e| (single_key.clone(), e))
                    .right_stream()
            }
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

enum BatchOutcome {
    Done {
        failed: Vec<(Vec<u8>, String)>,
    },
    RequestFailed {
        error: BoxError,
        written: usize,
        failed: Vec<(Vec<u8>, String)>,
    },
}

/// Per-entry codes worth retrying (Google's clients retry these for
/// idempotent mutations).
fn transient(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Aborted
    )
}

async fn backoff(attempt: u32) {
    tokio::time::sleep(Duration::from_millis(50 << attempt.min(6))).await;
}

/// An estimate (from above) of an entry's encoded size.
fn entry_bytes(entry: &mutate_rows_request::Entry) -> usize {
    use bigtable_rs::google::bigtable::v2::mutation::Mutation as M;
    let per_mutation = |m: &Mutation| {
        16 + match &m.mutation {
            Some(M::SetCell(c)) => {
                c.family_name.len() + c.column_qualifier.len() + c.value.len() + 11
            }
            Some(M::DeleteFromColumn(c)) => c.family_name.len() + c.column_qualifier.len() + 24,
            Some(M::DeleteFromFamily(f)) => f.family_name.len(),
            _ => 64,
        }
    };
    16 + entry.row_key.len() + entry.mutations.iter().map(per_mutation).sum::<usize>()
}

/// Split `entries` into requests within Bigtable's limits; an entry too big
/// on its own goes alone (and Bigtable's answer is reported for it).
fn batches(entries: Vec<mutate_rows_request::Entry>) -> Vec<Vec<mutate_rows_request::Entry>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    let (mut mutations, mut bytes) = (0usize, 0usize);
    for entry in entries {
        let (m, b) = (entry.mutations.len(), entry_bytes(&entry));
        if !current.is_empty()
            && (mutations + m > MAX_MUTATIONS_PER_REQUEST || bytes + b > MAX_REQUEST_BYTES)
        {
            out.push(std::mem::take(&mut current));
            (mutations, bytes) = (0, 0);
        }
        mutations += m;
        bytes += b;
        current.push(entry);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigtable_rs::google::bigtable::v2::mutation;

    fn entry(key: &str, cells: usize, value: usize) -> mutate_rows_request::Entry {
        mutate_rows_request::Entry {
            row_key: key.as_bytes().to_vec(),
            mutations: (0..cells)
                .map(|_| Mutation {
                    mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
                        family_name: "c".into(),
                        column_qualifier: b"q".to_vec(),
                        timestamp_micros: 0,
                        value: vec![0; value],
                    })),
                })
                .collect(),
            ..mutate_rows_request::Entry::default()
        }
    }

    #[test]
    fn batches_respect_the_mutation_count() {
        let entries: Vec<_> = (0..5).map(|i| entry(&i.to_string(), 40_000, 0)).collect();
        let sizes: Vec<usize> = batches(entries).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![2, 2, 1]);
    }

    #[test]
    fn batches_respect_the_byte_budget_and_keep_order() {
        let entries: Vec<_> = (0..10).map(|i| entry(&i.to_string(), 1, 5 << 20)).collect();
        let out = batches(entries);
        assert!(out
            .iter()
            .all(|b| b.iter().map(entry_bytes).sum::<usize>() <= MAX_REQUEST_BYTES));
        let keys: Vec<_> = out.concat().into_iter().map(|e| e.row_key).collect();
        assert_eq!(
            keys,
            (0..10)
                .map(|i| i.to_string().into_bytes())
                .collect::<Vec<_>>()
        );
        // an oversized entry still goes, alone
        let big = batches(vec![
            entry("a", 1, 1),
            entry("b", 1, 20 << 20),
            entry("c", 1, 1),
        ]);
        assert_eq!(big.iter().map(Vec::len).collect::<Vec<_>>(), vec![1, 1, 1]);
    }
}
