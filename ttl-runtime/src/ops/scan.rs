//! Paged, raw reads of one family: every version, expired or not, in key
//! order, a page of rows at a time, within one part of the key space, so
//! long scans show progress and a migration can checkpoint between pages.

use crate::model::proto::{
    row_filter::Filter,
    row_range::{EndKey, StartKey},
    RowRange, RowSet,
};
use std::pin::Pin;

use futures_util::{Stream, TryStreamExt as _};

use crate::client::connection::Connection;
use crate::client::data::{RawTable, ReadRows, RowFilter};
use crate::model::cell::Cell;
use crate::model::error::Result;
use crate::model::filter::{chain, filter, only_family};

use super::shard::Part;

/// Rows per page unless the caller says otherwise.
pub(crate) const DEFAULT_PAGE_ROWS: usize = 1_000;

/// How far a long operation got, for progress bars.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScanProgress {
    /// Rows read so far.
    pub rows: u64,
    /// Cells read so far.
    pub cells: u64,
    /// The last row read (how far into the key space: see
    /// [`super::fraction_done`]).
    pub last_row_key: Option<Vec<u8>>,
}

/// Reads the rows holding cells of `family`, page by page.
pub(crate) struct FamilyPages {
    table: RawTable,
    family: String,
    after: Option<Vec<u8>>,
    part: Part,
    page_rows: usize,
    strip_values: bool,
    /// The part's rows, once the first page is asked for.
    rows: Option<RowStream>,
    done: bool,
}

/// One `ReadRows` stream of raw rows.
type RowStream = Pin<Box<dyn Stream<Item = Result<(Vec<u8>, Vec<Cell>)>> + Send>>;

impl FamilyPages {
    pub(crate) fn new(conn: &Connection, table: &str, family: &str) -> Self {
        Self {
            table: RawTable::new(conn, table),
            family: family.to_owned(),
            after: None,
            part: Part::whole(),
            page_rows: DEFAULT_PAGE_ROWS,
            strip_values: false,
            rows: None,
            done: false,
        }
    }

    /// Start after row `key` (exclusive).
    pub(crate) fn after(mut self, key: Option<Vec<u8>>) -> Self {
        self.after = key;
        self
    }

    /// Only the rows of `part`.
    pub(crate) fn part(mut self, part: &Part) -> Self {
        self.done = part.is_empty();
        self.part = part.clone();
        self
    }

    pub(crate) fn page_rows(mut self, rows: usize) -> Self {
        self.page_rows = rows.max(1);
        self
    }

    /// Values are not needed (counting only): ask the server to drop them.
    pub(crate) fn strip_values(mut self) -> Self {
        self.strip_values = true;
        self
    }

    /// The next page; `None` once the family is exhausted.
    ///
    /// The pages are cut from one `ReadRows` stream over the part, under the
    /// connection's policy ([`Connection::retry`]: resumed after the last
    /// row on a break, as every read is, its deadline the time without a
    /// row), not asked for
    /// one request each: a server that gathers a request's whole range
    /// before applying its row limit, as Google's emulator does, would
    /// otherwise go over the rest of the part once per page.
    pub(crate) async fn next_page(&mut self) -> Result<Option<Vec<(Vec<u8>, Vec<Cell>)>>> {
        if self.done {
            return Ok(None);
        }
        if self.rows.is_none() {
            let mut filters = vec![only_family(&self.family)];
            if self.strip_values {
                filters.push(filter(Filter::StripValueTransformer(true)));
            }
            let rows = match self.row_set() {
                Some(set) => ReadRows::rows(set),
                None => ReadRows::all(),
            };
            self.rows = Some(Box::pin(
                self.table
                    .read_rows(rows.filter(RowFilter::from_wire(chain(filters))))
                    .map_ok(|row| (row.key, row.cells)),
            ));
        }
        let Some(rows) = self.rows.as_mut() else {
            return Ok(None);
        };
        let mut page = Vec::with_capacity(self.page_rows.min(DEFAULT_PAGE_ROWS));
        while page.len() < self.page_rows {
            let Some(row) = rows.try_next().await? else {
                self.done = true;
                self.rows = None;
                break;
            };
            page.push(row);
        }
        match page.last() {
            Some((key, _)) => self.after = Some(key.clone()),
            None => return Ok(None),
        }
        Ok(Some(page))
    }

    /// What is left to read: after the last row read, within the part;
    /// `None` (every row) for the whole table from the start.
    fn row_set(&self) -> Option<RowSet> {
        let start_key = match &self.after {
            Some(key) if key.as_slice() >= self.part.start.as_slice() => {
                Some(StartKey::StartKeyOpen(key.clone()))
            }
            _ if self.part.start.is_empty() => None,
            _ => Some(StartKey::StartKeyClosed(self.part.start.clone())),
        };
        let end_key = self.part.end.clone().map(EndKey::EndKeyOpen);
        if start_key.is_none() && end_key.is_none() {
            return None;
        }
        Some(RowSet {
            row_keys: vec![],
            row_ranges: vec![RowRange { start_key, end_key }],
        })
    }
}
