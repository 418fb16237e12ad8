//! What the raw layer reads: [`ReadRows`], a request for rows by any row set,
//! filter, limit and direction, and the [`Row`]s and [`Cell`]s it returns.

use std::ops::{Bound, RangeBounds};

use crate::model::error::{Error, Result};
use crate::model::scan::Scan;
use crate::proto::row_range::{EndKey, StartKey};
use crate::proto::{self, ReadRowsRequest, RowFilter, RowRange, RowSet};
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
    /// No row can match (an empty key list of a typed scan).
    none: bool,
    rows: RowSet,
    filter: Option<RowFilter>,
    limit: u64,
    reversed: bool,
}

impl ReadRows {
    /// Every row of the table.
    pub fn all() -> Self {
        Self::default()
    }

    /// The rows of `set` (Bigtable's own row set: keys and ranges; an empty
    /// set means every row).
    pub fn rows(set: RowSet) -> Self {
        Self {
            rows: set,
            ..Self::default()
        }
    }

    /// Exactly these row keys (those that exist), in key order.
    pub fn keys<K: AsRef<[u8]>>(keys: impl IntoIterator<Item = K>) -> Self {
        Self::all().and_keys(keys)
    }

    /// The rows whose key lies in `range` (`"a".."m"`, `start..=end`,
    /// `start..`, `..end`: open or closed ends).
    pub fn range<K: AsRef<[u8]>>(range: impl RangeBounds<K>) -> Self {
        Self::all().and_range(range)
    }

    /// These keys too.
    pub fn and_keys<K: AsRef<[u8]>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        self.rows
            .row_keys
            .extend(keys.into_iter().map(|k| k.as_ref().to_vec()));
        self
    }

    /// This range too.
    pub fn and_range<K: AsRef<[u8]>>(mut self, range: impl RangeBounds<K>) -> Self {
        self.rows.row_ranges.push(row_range(&range));
        self
    }

    /// Only what `filter` lets through (cells, columns, versions, rows).
    pub fn filter(mut self, filter: RowFilter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// At most `rows` rows (zero: no limit, as in Bigtable's API).
    pub fn limit(mut self, rows: u64) -> Self {
        self.limit = rows;
        self
    }

    /// Rows in descending key order (Bigtable's reverse scan); with a
    /// limit, the last rows of the set.
    pub fn reversed(mut self) -> Self {
        self.reversed = true;
        self
    }

    /// The request for the table `table_name` (`projects/…/tables/…`);
    /// `None` when no row can match.
    pub(crate) fn into_request(self, table_name: String) -> Option<ReadRowsRequest> {
        if self.none {
            return None;
        }
        let rows = (!self.rows.row_keys.is_empty() || !self.rows.row_ranges.is_empty())
            .then_some(self.rows);
        Some(ReadRowsRequest {
            table_name,
            rows,
            filter: self.filter,
            rows_limit: i64::try_from(self.limit).unwrap_or(i64::MAX),
            reversed: self.reversed,
            ..ReadRowsRequest::default()
        })
    }

    /// The read a `google.bigtable.v2.ReadRowsRequest` describes (its table
    /// name and app profile are not kept: the table handle sets them).
    pub fn from_proto(request: ReadRowsRequest) -> Self {
        Self {
            none: false,
            rows: request.rows.unwrap_or_default(),
            filter: request.filter,
            limit: u64::try_from(request.rows_limit).unwrap_or(0),
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
            None => Self {
                none: true,
                ..Self::default()
            },
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

/// One cell of a [`Row`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cell {
    /// Column family.
    pub family: String,
    /// Column qualifier.
    pub qualifier: Vec<u8>,
    /// Cell timestamp (µs since the epoch).
    pub timestamp_micros: i64,
    /// Value bytes.
    pub value: Vec<u8>,
}

impl Row {
    /// The row as `google.bigtable.v2.Row`: cells grouped by family, then
    /// by column, in the order they came.
    #[must_use]
    pub fn into_proto(self) -> proto::Row {
        let mut families: Vec<proto::Family> = Vec::new();
        for cell in self.cells {
            let family = match families.last_mut() {
                Some(family) if family.name == cell.family => family,
                _ => {
                    families.push(proto::Family {
                        name: cell.family,
                        columns: Vec::new(),
                    });
                    families.last_mut().unwrap_or_else(|| unreachable!())
                }
            };
            let proto_cell = proto::Cell {
                timestamp_micros: cell.timestamp_micros,
                value: cell.value,
                labels: Vec::new(),
            };
            match family.columns.last_mut() {
                Some(column) if column.qualifier == cell.qualifier => column.cells.push(proto_cell),
                _ => family.columns.push(proto::Column {
                    qualifier: cell.qualifier,
                    cells: vec![proto_cell],
                }),
            }
        }
        proto::Row {
            key: self.key,
            families,
        }
    }

    /// The row `google.bigtable.v2.Row` holds, its cells in its order.
    #[must_use]
    pub fn from_proto(row: proto::Row) -> Self {
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
            key,
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
    fn a_row_groups_into_families_and_columns_and_back() {
        let row = Row {
            key: b"r".to_vec(),
            cells: vec![
                cell("a", "q1", 2, "new"),
                cell("a", "q1", 1, "old"),
                cell("a", "q2", 1, "x"),
                cell("b", "q1", 1, "y"),
            ],
        };
        let proto = row.clone().into_proto();
        assert_eq!(proto.families.len(), 2);
        assert_eq!(proto.families[0].columns.len(), 2);
        assert_eq!(proto.families[0].columns[0].cells.len(), 2);
        assert_eq!(Row::from_proto(proto), row);
    }

    #[test]
    fn a_request_keeps_keys_ranges_filter_limit_and_direction() {
        let request = ReadRows::keys(["k"])
            .and_range("a"..="c")
            .and_range(..b"z".as_slice())
            .filter(RowFilter::default())
            .limit(3)
            .reversed()
            .into_request("t".into())
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
        assert_eq!(ReadRows::all().into_request("t".into()).unwrap().rows, None);
        assert_eq!(
            ReadRows::from_proto(request.clone()).into_request("t".into()),
            Some(request)
        );
    }

    #[test]
    fn a_scan_reads_the_same_rows() {
        let request = ReadRows::try_from(Scan::prefix("c3#").limit(5).reversed())
            .unwrap()
            .into_request("t".into())
            .unwrap();
        assert_eq!(request.rows_limit, 5);
        assert!(request.reversed);
        assert_eq!(
            request.rows.unwrap().row_ranges[0].start_key,
            Some(StartKey::StartKeyClosed(b"c3#".to_vec()))
        );
        // No key: no row, not every row.
        let none = ReadRows::try_from(Scan::keys(Vec::<Vec<u8>>::new())).unwrap();
        assert_eq!(none.into_request("t".into()), None);
        assert!(ReadRows::try_from(Scan::range("b".."a")).is_err());
    }
}
