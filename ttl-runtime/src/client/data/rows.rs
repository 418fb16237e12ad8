//! What the raw layer reads: [`ReadRows`], a request for rows by any row set,
//! filter, limit and direction, and the [`Row`]s it returns.

use std::ops::{Bound, RangeBounds};

use crate::client::data::filter::RowFilter;
use crate::model::cell::Cell;
use crate::model::error::{Error, Result};
use crate::model::proto::row_range::{EndKey, StartKey};
use crate::model::proto::{self, ReadRowsRequest, RowRange, RowSet};
use crate::model::scan::Scan;
use crate::wire::merge::MergedRow;

/// Which rows a raw read covers and how: a row set of keys and ranges,
/// any [`RowFilter`], a row limit, a direction. What
/// `google.bigtable.v2.ReadRowsRequest` holds, table and app profile aside
/// (the [`RawTable`](super::RawTable) sets them).
///
/// ```
/// use bigtable_ttl::data::ReadRows;
///
/// let everything = ReadRows::all();
/// let some = ReadRows::keys(["k1", "k7"]).and_range("m".."n").limit(10);
/// let newest_first = ReadRows::range("a"..="f").reversed();
/// # let _ = (everything, some, newest_first);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct ReadRows {
    /// `None`: every row; a set: only its keys and ranges, none when empty.
    rows: Option<RowSet>,
    filter: Option<proto::RowFilter>,
    limit: Limit,
    reversed: bool,
}

/// A read's row limit, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Limit {
    #[default]
    None,
    Rows(u64),
    /// Not a number of rows (zero from [`ReadRows::limit`], a negative
    /// `rows_limit`): refused when the read is made.
    Invalid(i64),
}

impl ReadRows {
    /// Every row of the table.
    pub fn all() -> Self {
        Self::default()
    }

    /// The rows of `set` (Bigtable's row set: keys and ranges). An empty
    /// set reads no row, and nothing is sent (on the wire an empty set
    /// would read every row).
    pub(crate) fn rows(set: RowSet) -> Self {
        Self {
            rows: Some(set),
            ..Self::default()
        }
    }

    /// Exactly these row keys (those that exist), in key order. No key:
    /// no row, and nothing is sent.
    pub fn keys<K: AsRef<[u8]>>(keys: impl IntoIterator<Item = K>) -> Self {
        Self::rows(RowSet::default()).and_keys(keys)
    }

    /// The rows whose key lies in `range` (`"a".."m"`, `start..=end`,
    /// `start..`, `..end`: open or closed ends).
    pub fn range<K: AsRef<[u8]>>(range: impl RangeBounds<K>) -> Self {
        Self::rows(RowSet::default()).and_range(range)
    }

    /// These keys too (on [`ReadRows::all`], which already reads every
    /// row, they change nothing).
    pub fn and_keys<K: AsRef<[u8]>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        if let Some(rows) = &mut self.rows {
            rows.row_keys
                .extend(keys.into_iter().map(|k| k.as_ref().to_vec()));
        }
        self
    }

    /// This range too (on [`ReadRows::all`], nothing changes).
    pub fn and_range<K: AsRef<[u8]>>(mut self, range: impl RangeBounds<K>) -> Self {
        if let Some(rows) = &mut self.rows {
            rows.row_ranges.push(row_range(&range));
        }
        self
    }

    /// Only what `filter` lets through (cells, columns, versions, rows):
    /// a [`RowFilter`], or a typed read's filter
    /// ([`ReadFilter`](crate::data::ReadFilter)).
    pub fn filter(mut self, filter: impl Into<RowFilter>) -> Self {
        self.filter = Some(filter.into().into_wire());
        self
    }

    /// At most `rows` rows, however many the server sends. Zero is not a
    /// limit: the read fails with [`Error::InvalidRowLimit`] (leave the
    /// limit out to read every row).
    pub fn limit(mut self, rows: u64) -> Self {
        self.limit = match rows {
            0 => Limit::Invalid(0),
            rows => Limit::Rows(rows),
        };
        self
    }

    /// Rows in descending key order (Bigtable's reverse scan); with a
    /// limit, the last rows of the set.
    pub fn reversed(mut self) -> Self {
        self.reversed = true;
        self
    }

    /// The request for the table `table_name` (`projects/…/tables/…`);
    /// `None` when no row can match (nothing to send).
    ///
    /// # Errors
    /// [`Error::InvalidRowLimit`].
    pub(crate) fn into_request(self, table_name: String) -> Result<Option<ReadRowsRequest>> {
        let rows_limit = match self.limit {
            Limit::None => 0,
            Limit::Rows(rows) => i64::try_from(rows).unwrap_or(i64::MAX),
            Limit::Invalid(limit) => return Err(Error::InvalidRowLimit { limit }),
        };
        if self
            .rows
            .as_ref()
            .is_some_and(|r| r.row_keys.is_empty() && r.row_ranges.is_empty())
        {
            return Ok(None);
        }
        Ok(Some(ReadRowsRequest {
            table_name,
            rows: self.rows,
            filter: self.filter,
            rows_limit,
            reversed: self.reversed,
            ..ReadRowsRequest::default()
        }))
    }

    /// The read a `google.bigtable.v2.ReadRowsRequest` describes (its table
    /// name and app profile are not kept: the table handle sets them), as
    /// Bigtable reads it: no row set, or an empty one, is every row; a
    /// `rows_limit` of zero, no limit; a negative one is refused when the
    /// read is made ([`Error::InvalidRowLimit`]).
    pub(crate) fn from_proto(request: ReadRowsRequest) -> Self {
        Self {
            rows: request
                .rows
                .filter(|r| !r.row_keys.is_empty() || !r.row_ranges.is_empty()),
            filter: request.filter,
            limit: match u64::try_from(request.rows_limit) {
                Ok(0) => Limit::None,
                Ok(rows) => Limit::Rows(rows),
                Err(_) => Limit::Invalid(request.rows_limit),
            },
            reversed: request.reversed,
        }
    }
}

impl TryFrom<Scan> for ReadRows {
    type Error = Error;

    /// The same rows, limit and direction as a typed [`Scan`], unfiltered.
    /// An empty key list reads no row (not every row).
    ///
    /// # Errors
    /// [`Error::InvalidRange`] for a range that starts after it ends.
    fn try_from(scan: Scan) -> Result<Self> {
        Ok(match scan.into_request(String::new())? {
            Some(request) => Self::from_proto(request),
            None => Self::rows(RowSet::default()),
        })
    }
}

fn row_range<K: AsRef<[u8]>>(range: &impl RangeBounds<K>) -> RowRange {
    RowRange {
        start_key: match range.start_bound() {
            Bound::Included(k) => Some(StartKey::StartKeyClosed(k.as_ref().to_vec())),
            Bound::Excluded(k) => Some(StartKey::StartKeyOpen(k.as_ref().to_vec())),
            Bound::Unbounded => None,
        },
        end_key: match range.end_bound() {
            Bound::Included(k) => Some(EndKey::EndKeyClosed(k.as_ref().to_vec())),
            Bound::Excluded(k) => Some(EndKey::EndKeyOpen(k.as_ref().to_vec())),
            Bound::Unbounded => None,
        },
    }
}

/// One row as read: its key and its cells, in the server's order (family,
/// then qualifier, then newest first).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Row {
    /// The row key.
    pub key: Vec<u8>,
    /// Its cells, as the filter let them through.
    pub cells: Vec<Cell>,
}

impl Row {
    /// The row `google.bigtable.v2.Row` holds, its cells in its order.
    pub(crate) fn from_proto(row: proto::Row) -> Self {
        let cells = row
            .families
            .into_iter()
            .flat_map(|family| {
                let name = family.name;
                family.columns.into_iter().flat_map(move |column| {
                    let name = name.clone();
                    column.cells.into_iter().map(move |cell| Cell {
                        family: name.clone(),
                        qualifier: column.qualifier.clone(),
                        timestamp_micros: cell.timestamp_micros,
                        value: cell.value,
                    })
                })
            })
            .collect();
        Self {
            key: row.key,
            cells,
        }
    }
}

impl Row {
    /// The row as the merger put it together. Not a `From` impl: that
    /// would be public and name the merger's private cell type.
    pub(crate) fn from_merged((key, cells): MergedRow) -> Self {
        Self {
            key: key.into(),
            cells: cells
                .into_iter()
                .map(|c| Cell {
                    family: c.family.as_ref().to_owned(),
                    qualifier: c.qualifier.into(),
                    timestamp_micros: c.timestamp_micros,
                    value: c.value.into(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(family: &str, qualifier: &str, ts: i64, value: &str) -> Cell {
        Cell {
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp_micros: ts,
            value: value.into(),
        }
    }

    #[test]
    fn a_row_of_families_and_columns_is_its_cells_in_order() {
        let column = |qualifier: &str, cells: &[(i64, &str)]| proto::Column {
            qualifier: qualifier.into(),
            cells: cells
                .iter()
                .map(|&(ts, value)| proto::Cell {
                    timestamp_micros: ts,
                    value: value.into(),
                    labels: Vec::new(),
                })
                .collect(),
        };
        let wire = proto::Row {
            key: b"r".to_vec(),
            families: vec![
                proto::Family {
                    name: "a".into(),
                    columns: vec![
                        column("q1", &[(2, "new"), (1, "old")]),
                        column("q2", &[(1, "x")]),
                    ],
                },
                proto::Family {
                    name: "b".into(),
                    columns: vec![column("q1", &[(1, "y")])],
                },
            ],
        };
        let row = Row {
            key: b"r".to_vec(),
            cells: vec![
                cell("a", "q1", 2, "new"),
                cell("a", "q1", 1, "old"),
                cell("a", "q2", 1, "x"),
                cell("b", "q1", 1, "y"),
            ],
        };
        assert_eq!(Row::from_proto(wire), row);
    }

    #[test]
    fn a_request_keeps_keys_ranges_filter_limit_and_direction() {
        let request = ReadRows::keys(["k"])
            .and_range("a"..="c")
            .and_range(..b"z".as_slice())
            .filter(RowFilter::pass_all())
            .limit(3)
            .reversed()
            .into_request("t".into())
            .unwrap()
            .unwrap();
        let rows = request.rows.clone().unwrap();
        assert_eq!(rows.row_keys, vec![b"k".to_vec()]);
        assert_eq!(
            rows.row_ranges[0].end_key,
            Some(EndKey::EndKeyClosed(b"c".to_vec()))
        );
        assert_eq!(rows.row_ranges[1].start_key, None);
        assert_eq!(
            rows.row_ranges[1].end_key,
            Some(EndKey::EndKeyOpen(b"z".to_vec()))
        );
        assert_eq!((request.rows_limit, request.reversed), (3, true));
        assert!(request.filter.is_some());
        let all = ReadRows::all().into_request("t".into()).unwrap().unwrap();
        assert_eq!(all.rows, None);
        assert_eq!(
            ReadRows::from_proto(request.clone())
                .into_request("t".into())
                .unwrap(),
            Some(request)
        );
    }

    #[test]
    fn a_scan_reads_the_same_rows() {
        let request = ReadRows::try_from(Scan::prefix("c3#").limit(5).reversed())
            .unwrap()
            .into_request("t".into())
            .unwrap()
            .unwrap();
        assert_eq!(request.rows_limit, 5);
        assert!(request.reversed);
        assert_eq!(
            request.rows.unwrap().row_ranges[0].start_key,
            Some(StartKey::StartKeyClosed(b"c3#".to_vec()))
        );
        // No key: no row, not every row.
        let none = ReadRows::try_from(Scan::keys(Vec::<Vec<u8>>::new())).unwrap();
        assert_eq!(none.into_request("t".into()).unwrap(), None);
        assert!(ReadRows::try_from(Scan::range("b".."a")).is_err());
    }

    #[test]
    fn no_key_reads_nothing_and_a_limit_is_a_number_of_rows() {
        let nothing = |read: ReadRows| read.into_request("t".into()).unwrap();
        assert_eq!(nothing(ReadRows::keys(Vec::<Vec<u8>>::new())), None);
        assert_eq!(nothing(ReadRows::rows(RowSet::default())), None);
        assert_eq!(nothing(ReadRows::keys([b"k"; 0]).limit(3).reversed()), None);
        // Proto semantics for a request made elsewhere: no set is every row.
        let whole = ReadRowsRequest {
            rows: Some(RowSet::default()),
            ..ReadRowsRequest::default()
        };
        assert_eq!(nothing(ReadRows::from_proto(whole)).unwrap().rows, None);

        let refused = |read: ReadRows| read.into_request("t".into()).unwrap_err();
        assert!(matches!(
            refused(ReadRows::all().limit(0)),
            Error::InvalidRowLimit { limit: 0 }
        ));
        let negative = ReadRowsRequest {
            rows_limit: -1,
            ..ReadRowsRequest::default()
        };
        let err = refused(ReadRows::from_proto(negative));
        assert!(matches!(err, Error::InvalidRowLimit { limit: -1 }), "{err}");
        assert!(err.to_string().contains("-1"), "{err}");
        assert_eq!(nothing(ReadRows::all().limit(2)).unwrap().rows_limit, 2);
    }
}
