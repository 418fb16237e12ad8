//! Whole-row writes and deletes of a [`Table`]: `put`, `put_with`,
//! `put_all`, `put_all_with`, `delete`, and the one `MutateRow` they and
//! the conditional writes' lost answers go through.

use crate::client::failure::status_error;
use crate::client::table::{Table, Written};
use crate::client::telemetry;
use crate::client::writer::BulkWriter;
use crate::model::error::{Error, Result};
use crate::model::key::AsKey;
use crate::model::mutation::delete_owned;
use crate::model::policy::{from_micros, millis_floor};
use crate::model::proto::Mutation;
use crate::model::row::{BigtableRow, MutationBuilder};

impl<T: BigtableRow> Table<T> {
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
            let (row, full) = writer.queue(&b, now.timestamp_micros())?;
            written.push(Written {
                expires_at: row.expires_at()?,
                // Not kept by the encoding (the bulk writer's rows need
                // none); the key was just checked, so this cannot fail.
                row_key: b.row().row_key()?,
                timestamp_micros: row.timestamp_micros,
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
}
