//! Give rows written without the struct's row marker (by earlier versions,
//! whose one marker was shared by every struct of a family, or by other
//! programs) the marker that ends their ambiguity (see
//! [`crate::liveness`]): [`Table::add_markers`]. Which rows need one is
//! judged by `crate::model::markers`.

use std::ops::{Bound, ControlFlow};

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt as _;

use crate::client::table::conditional::Checked;
use crate::client::table::retime::Round;
use crate::client::table::Table;
use crate::model::cell::Cell;
use crate::model::condition::{legacy_marker_alone, Pin};
use crate::model::error::{self, Error, Result};
use crate::model::markers::{need, need_of, Need};
use crate::model::mutation::{set_cell, RowMutation};
use crate::model::row::BigtableRow;
use crate::model::row_cells::RowCells;
use crate::model::scan::Scan;
use crate::model::shards::Part;

/// How far [`Table::add_markers`] got: where to resume and what it did so
/// far (running totals across resumed runs), in which part of the key
/// space.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MarkProgress {
    /// The part of the key space this run covers (the whole table unless
    /// made by [`MarkProgress::for_part`]).
    pub part: Part,
    /// The last row done; resume after it. `None`: from the start.
    pub last_row_key: Option<Vec<u8>>,
    /// Rows read.
    pub rows_read: u64,
    /// Rows given the struct's marker.
    pub rows_marked: u64,
    /// Live rows that had the struct's marker already.
    pub rows_already_marked: u64,
    /// Incomplete rows (a required column without a cell, nothing showing
    /// it expired): left as they are, for a person to look at.
    pub rows_incomplete: u64,
    /// Rows not live (expired, deleted): left alone.
    pub rows_not_live: u64,
    /// Rows of another struct: carrying another struct's marker and not
    /// this struct's, or holding cells of this struct's families that it
    /// does not own (see the guide's "Several structs in one table"): left
    /// alone, never adopted.
    pub rows_other: u64,
}

impl MarkProgress {
    /// The start of a run over `part` only: one shard of a sharded run (see
    /// [`crate::ops::plan_parts`]).
    #[must_use]
    pub fn for_part(part: Part) -> Self {
        Self {
            part,
            ..Self::default()
        }
    }
}

/// How a run of [`Table::add_markers`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MarkStatus {
    /// Every row of the part was looked at.
    Done(MarkProgress),
    /// Stopped by the callback after a page: resume from this.
    Stopped(MarkProgress),
}

impl MarkProgress {
    /// Count a row that ended as `need`.
    fn count(&mut self, need: &Need) {
        let counter = match need {
            Need::Written => &mut self.rows_marked,
            Need::Marked => &mut self.rows_already_marked,
            Need::Incomplete => &mut self.rows_incomplete,
            Need::NotLive => &mut self.rows_not_live,
            // A row still needing its marker after its rounds ended in an
            // error, which the caller returns instead.
            Need::Other | Need::Marker(..) | Need::LegacyMarker(_) => &mut self.rows_other,
        };
        *counter += 1;
    }
}

/// Rows per page (and per callback).
const PAGE_ROWS: usize = 500;

impl<T: BigtableRow> Table<T> {
    /// Give every live row of `T` that lacks `T`'s row marker that marker:
    /// rows written before markers were per struct (their one-byte marker
    /// is ignored by a struct that does not own its family), or by another
    /// program. A marked row proves its own expiry, so once its required
    /// columns expire and are collected it stays absent instead of reading
    /// as incomplete (see the guide's "Rows and liveness").
    ///
    /// For each row, at the table clock's now: a live row without a
    /// visible marker of `T` gets one, at the newest timestamp of its
    /// required columns, carrying the row's expiry; a row of a struct whose
    /// fields are all `Option` held only by the legacy marker gets one at
    /// that marker's timestamp. Each write is conditional on the row's
    /// liveness being unchanged since it was read (a put in between wrote
    /// its own marker). Incomplete rows and rows that are not live are
    /// counted and left alone.
    ///
    /// Resumable and sharded as `migrate` is: pass the progress `on_page`
    /// was last given (or [`MarkProgress::for_part`]) as `resume`;
    /// `on_page` is called after each page and may stop the run. Running
    /// it again over marked rows writes nothing.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// # use bigtable_ttl::MarkStatus;
    /// # use std::ops::ControlFlow;
    /// # #[derive(BigtableRow)]
    /// # #[bigtable(table = "people", family = "p")]
    /// # #[ttl(default = "30d")]
    /// # struct Person { #[bigtable(key)] id: String, name: String }
    /// # async fn run(people: Table<Person>) -> bigtable_ttl::Result<()> {
    /// let status = people.add_markers(None, |p| {
    ///     println!("{} rows read, {} marked", p.rows_read, p.rows_marked);
    ///     ControlFlow::Continue(())
    /// }).await?;
    /// if let MarkStatus::Done(p) = status {
    ///     println!("{} incomplete rows to look at", p.rows_incomplete);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::Server`]; [`crate::Error::Conflict`] when a row keeps
    /// changing under the conditional writes.
    pub async fn add_markers(
        &self,
        resume: Option<MarkProgress>,
        mut on_page: impl FnMut(&MarkProgress) -> ControlFlow<()>,
    ) -> Result<MarkStatus> {
        let mut progress = resume.unwrap_or_default();
        if progress.part.is_empty() {
            return Ok(MarkStatus::Done(progress));
        }
        let start = match &progress.last_row_key {
            Some(key) if key.as_slice() >= progress.part.start.as_slice() => {
                Bound::Excluded(key.clone())
            }
            _ => Bound::Included(progress.part.start.clone()),
        };
        let end = progress
            .part
            .end
            .clone()
            .map_or(Bound::Unbounded, Bound::Excluded);
        let request = self.read_request(Scan::range((start, end)), None);
        let mut rows = Box::pin(self.raw_stream(request));
        let mut in_page = 0;
        while let Some((key, cells)) = rows.try_next().await? {
            let cells: Vec<Cell> = cells.into_iter().map(Cell::from).collect();
            progress.rows_read += 1;
            let outcome = match need(T::SCHEMA, &cells, self.clock().now()) {
                Need::Marker(..) => self.mark_row(&key).await?,
                Need::LegacyMarker(ts) => self.mark_legacy_row(&key, ts).await?,
                other => other,
            };
            progress.count(&outcome);
            progress.last_row_key = Some(key.to_vec());
            in_page += 1;
            if in_page == PAGE_ROWS {
                in_page = 0;
                if on_page(&progress).is_break() {
                    return Ok(MarkStatus::Stopped(progress));
                }
            }
        }
        if in_page > 0 && on_page(&progress).is_break() {
            return Ok(MarkStatus::Stopped(progress));
        }
        Ok(MarkStatus::Done(progress))
    }

    /// Write `T`'s marker to row `key` if it still needs one: what became
    /// of the row ([`Need::Written`], or what it needs now).
    async fn mark_row(&self, key: &[u8]) -> Result<Need> {
        let plan = |row: &RowCells<'_>, _now: DateTime<Utc>| {
            Ok(match need_of(row) {
                Need::Marker(ts, value) => {
                    let family = T::SCHEMA.marker_family();
                    let m = RowMutation {
                        row_key: key.to_vec(),
                        mutations: vec![set_cell(family, T::SCHEMA.marker, ts, value)],
                        timestamp_micros: ts,
                        expires_at: T::SCHEMA.policy.expiry_of(ts)?,
                    };
                    Round::Write(m, Pin::Everything, ())
                }
                other => Round::Done(other),
            })
        };
        self.rewrite_unchanged(key, plan, |_, (), _| Ok(Need::Written))
            .await
    }

    /// Write `T`'s marker at `ts` to row `key` if its newest legacy marker
    /// is still at `ts` and it still has no marker of `T`, nor of another
    /// struct: what became of the row. An answer lost is settled by
    /// reading the marker back; a row changed meanwhile is judged again.
    async fn mark_legacy_row(&self, key: &[u8], mut ts: i64) -> Result<Need> {
        const ROUNDS: u32 = 3;
        let schema = T::SCHEMA;
        let family = schema.marker_family();
        for _ in 0..ROUNDS {
            let now = self.clock().now();
            let predicate = legacy_marker_alone(schema, ts, now);
            let value = schema.marker_fingerprint();
            let mutation = set_cell(family, schema.marker, ts, value.clone());
            match self
                .check_and_mutate(key, predicate, vec![mutation], Vec::new())
                .await?
            {
                Checked::Answered(true) => return Ok(Need::Written),
                Checked::Answered(false) => {}
                Checked::Unknown(status) => {
                    let m = RowMutation {
                        row_key: key.to_vec(),
                        mutations: vec![set_cell(family, schema.marker, ts, value)],
                        timestamp_micros: ts,
                        expires_at: schema.policy.expiry_of(ts)?,
                    };
                    return if self.settle(&m, &status).await? {
                        Ok(Need::Written)
                    } else {
                        Err(self.outcome_unknown(key.to_vec(), status))
                    };
                }
            }
            // Changed since it was read: judge it again.
            let cells = self.stored_cells(key).await?;
            match need(schema, &cells, self.clock().now()) {
                Need::LegacyMarker(again) => ts = again,
                Need::Marker(..) => return self.mark_row(key).await,
                other => return Ok(other),
            }
        }
        Err(Error::from(error::Conflict {
            table: self.name().to_owned(),
            row_key: key.to_vec(),
            attempts: ROUNDS,
        }))
    }

    /// Every stored cell of row `key`, of every family, expired or not.
    async fn stored_cells(&self, key: &[u8]) -> Result<Vec<Cell>> {
        let request = self.read_request(Scan::keys([key]).limit(1), None);
        let rows: Vec<_> = self.raw_stream(request).try_collect().await?;
        Ok(rows
            .into_iter()
            .flat_map(|(_, cells)| cells)
            .map(Cell::from)
            .collect())
    }
}
