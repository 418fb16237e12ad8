//! Parallel scans: a scan cut at the row keys `SampleRowKeys` returns
//! ([`crate::model::split`]), its parts read at once, each as
//! [`Table::stream`] reads (same filter, decoding, timeouts and resumes).

use futures_util::future::Either;
use futures_util::{Stream, StreamExt as _, TryStreamExt as _};

use crate::client::table::Table;
use crate::client::telemetry;
use crate::model::error::Result;
use crate::model::row::BigtableRow;
use crate::model::scan::Scan;
use crate::model::split::split;
use crate::model::view::Expiring;

/// Parts a parallel scan cuts its range into per stream read at once: more
/// parts than streams, so that a stream done early takes the next part
/// while a slow one finishes.
const PARTS_PER_STREAM: usize = 4;

impl<T: BigtableRow> Table<T> {
    /// The rows `scan` covers, as [`Table::stream`] reads them, with up to
    /// `concurrency` parts of its key range read at once (0 counts as 1).
    ///
    /// **Rows come in no overall order**: each row once, each part's rows in
    /// the scan's order (ascending keys, descending for
    /// [`Scan::reversed`]), the parts interleaved as their answers arrive.
    /// Use [`Table::stream`] for one ordered stream, or read the parts of
    /// [`Table::split_scan`] one after another.
    ///
    /// The range is cut at the row keys Bigtable's `SampleRowKeys` returns
    /// (into at most 4 × `concurrency` parts, taken evenly among the keys
    /// inside the range; see [`Table::split_scan`]). Every part is read as
    /// [`Table::stream`] reads: the same timestamp filter, all parts at the
    /// clock's time when `scan_parallel` is called, the same decoding, and
    /// each part resumed on its own after a break, as [`crate::read::ReadOptions`]
    /// says. A scan with a [`Scan::limit`] or of a list of keys is read as
    /// one part (a limit means the first rows in key order).
    ///
    /// The parts' requests overlap; the rows are decoded on the task that
    /// polls the stream. `SampleRowKeys` is sent when the stream is first
    /// polled, retried under the read options; a failure of it, or of any
    /// part, comes out of the stream as an error (the other parts go on
    /// until the stream is dropped; `try_collect` and `try_next` stop at
    /// the first).
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Scan, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d")]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>) -> bigtable_ttl::Result<()> {
    /// use futures_util::TryStreamExt as _;
    /// // Count the clicks on "/home", reading 4 parts of the table at once.
    /// let mut rows = std::pin::pin!(clicks.scan_parallel(Scan::all(), 4));
    /// let mut home = 0;
    /// while let Some(click) = rows.try_next().await? {
    ///     home += usize::from(click.url == "/home");
    /// }
    /// println!("{home} clicks on /home");
    /// # Ok(()) }
    /// ```
    ///
    /// On Google's emulator, `SampleRowKeys` returns the table's last row
    /// key and about one key in a hundred, picked at random; an empty
    /// table or a range no sample falls in is read as one part.
    ///
    /// The stream is one operation (span and metrics,
    /// [`crate::telemetry`]), `SampleRowKeys` and every part included,
    /// from its first poll to its end.
    pub fn scan_parallel(
        &self,
        scan: Scan,
        concurrency: usize,
    ) -> impl Stream<Item = Result<Expiring<T>>> {
        let concurrency = concurrency.max(1);
        let now = self.clock().now();
        let this = self.clone();
        let parts = {
            let this = self.clone();
            futures_util::stream::once(async move {
                this.split(scan, concurrency * PARTS_PER_STREAM).await
            })
            .map_ok(|parts| futures_util::stream::iter(parts).map(Ok))
            .try_flatten()
        };
        let rows = parts
            .map(move |part| match part {
                // Boxed: a part's stream is not `Unpin`, which reading
                // several at once needs.
                Ok(part) => Either::Left(Box::pin(this.stream_at(part, now))),
                Err(e) => Either::Right(futures_util::stream::iter([Err(e)])),
            })
            .flatten_unordered(concurrency);
        telemetry::stream(self.name(), "scan_parallel", rows)
    }

    /// `scan` cut into at most `max_parts` parts at the row keys Bigtable's
    /// `SampleRowKeys` returns for the table (keys that cut it into parts
    /// of about equal size; when there are more inside the range than
    /// cuts, the cuts are taken evenly among them), in the scan's order:
    /// reading the parts one after another gives the rows of `scan` in
    /// order, reading them on several workers divides the work. Each part
    /// is a range scan of the same direction; the parts are disjoint and
    /// cover exactly the keys of `scan`.
    ///
    /// A scan with a [`Scan::limit`] or of a list of keys is one part,
    /// itself; so is a range no sample falls in.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Scan, Table};
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "clicks", family = "c")]
    /// # #[ttl(default = "2d")]
    /// # struct Click { #[bigtable(key)] id: String, url: String }
    /// # async fn run(clicks: Table<Click>) -> bigtable_ttl::Result<()> {
    /// // One part per worker, each read in key order.
    /// let parts = clicks.split_scan(Scan::prefix("c3#"), 8).await?;
    /// for (worker, part) in parts.into_iter().enumerate() {
    ///     let clicks = clicks.clone();
    ///     tokio::spawn(async move {
    ///         let rows = clicks.scan(part).await?;
    ///         println!("worker {worker}: {} rows", rows.len());
    ///         Ok::<_, bigtable_ttl::Error>(())
    ///     });
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::Server`] when `SampleRowKeys` fails (transient
    /// failures are retried under the table's read options);
    /// [`crate::Error::InvalidRange`] before anything is sent.
    pub async fn split_scan(&self, scan: Scan, max_parts: usize) -> Result<Vec<Scan>> {
        telemetry::operation(
            self.name(),
            "split_scan",
            |parts| parts.len() as u64,
            self.split(scan, max_parts),
        )
        .await
    }

    /// [`Table::split_scan`] within the operation under way.
    async fn split(&self, scan: Scan, max_parts: usize) -> Result<Vec<Scan>> {
        scan.check(self.name())?;
        if max_parts <= 1 || scan.row_limit().is_some() || scan.key_bounds().is_none() {
            // One part whatever the samples: nothing to ask the server.
            return Ok(vec![scan]);
        }
        let samples = self.sample_row_keys().await?;
        Ok(split(&scan, &samples, max_parts))
    }

    /// The row keys `SampleRowKeys` returns for the table, in key order;
    /// each attempt within the read policy's attempt timeout, transient
    /// failures retried within its budget (the call only reads), through
    /// the raw layer.
    async fn sample_row_keys(&self) -> Result<Vec<Vec<u8>>> {
        let samples = self.raw().sample_row_keys().await?;
        Ok(samples.into_iter().map(|s| s.key).collect())
    }
}
