//! What a row read that is not live, while some of its own cells are,
//! really is: partially expired, torn by a non-atomic read, or incomplete
//! (`Decoded::Partial`, settled by one more look at the stored cells).

use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt as _;

use crate::client::table::Table;
use crate::model::error::Result;
use crate::model::filter::required_newest_stripped;
use crate::model::liveness::{settle, Settled, Stored};
use crate::model::row::{classify_row, missing_column, BigtableRow, Decoded};
use crate::model::scan::Scan;
use crate::model::view::Expiring;
use crate::wire::merge::{Cell, MergedRow};

impl<T: BigtableRow> Table<T> {
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
    ///   [`crate::client::read::ReadStats::partially_expired`].
    /// * **Torn**: every required column is live. The emulator's
    ///   `ReadRows` is not row-atomic, and a read concurrent with a write of
    ///   the row can miss some of its cells (Cloud Bigtable's reads are
    ///   row-atomic). The row is read again.
    /// * **Incomplete**: a required column holds no cell at all, and nothing
    ///   proves it expired: a struct that gained a required field without
    ///   `#[bigtable(default)]`, a row another program wrote without it, or
    ///   one whose expired column was collected before markers existed.
    ///   [`crate::Error::Decode`] naming the table, row and column (skipped
    ///   and counted in [`crate::client::read::ReadStats::rows_incomplete`]
    ///   with [`crate::client::read::ReadOptions::skip_undecodable`]).
    ///   `insert_if_absent`'s condition follows the same three answers
    ///   (`model::liveness::present`, checked against this by its tests).
    pub(super) async fn settle_partial(
        &self,
        key: Vec<u8>,
        now: DateTime<Utc>,
        mut missing: usize,
    ) -> Result<Option<Expiring<T>>> {
        const REREADS: usize = 3;
        let schema = T::SCHEMA;
        for reread in 0..=REREADS {
            let stored = self.required_newest(&key).await?;
            let settled = settle(schema, |i| {
                let c = &schema.columns[i];
                match stored.iter().find(|(q, _)| {
                    (q.0.as_str(), q.1.as_slice()) == (c.family, c.qualifier.as_bytes())
                }) {
                    Some((_, ts)) if schema.policy.is_visible(*ts, now) => Stored::Visible,
                    Some(_) => Stored::Expired,
                    None => Stored::Nothing,
                }
            });
            match settled {
                Settled::PartlyExpired => return Ok(self.partially_expired(&key)),
                Settled::Incomplete { missing } => {
                    return Err(missing_column(schema, &key, missing).in_table(self.name()));
                }
                Settled::Torn => {}
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
}
