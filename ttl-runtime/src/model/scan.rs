//! What a read asks for ([`Scan`]) and how a broken read is narrowed to resume after the last
//! row it delivered (`resume_request`): request building, no I/O.

use std::ops::{Bound, RangeBounds};

use crate::model::error::{self, Error, Result};
use crate::model::proto::{
    row_range::{EndKey, StartKey},
    ReadRowsRequest, RowRange, RowSet,
};
use crate::model::row::{BigtableRow, KeyPrefix};

/// Which rows a read covers, by raw row key, and how many at most.
///
/// ```
/// use bigtable_ttl::Scan;
///
/// let everything = Scan::all();
/// let one_customer = Scan::prefix("customer-3#").limit(100);
/// let a_range = Scan::range("a".."m");
/// let some_keys = Scan::keys(["k1", "k7"]);
/// let newest_ten = Scan::prefix("customer-3#").reversed().limit(10);
/// # let _ = (everything, one_customer, a_range, some_keys, newest_ten);
/// ```
///
/// Keys are the encoded row keys (`T::encode_key`), in Bigtable's byte order.
/// A [`Scan::limit`] counts the rows a typed read returns: `limit(n)` gives
/// the first `n` live rows (the last `n` with [`Scan::reversed`]), or every
/// live row when there are fewer. Rows the reader leaves out (a row whose
/// required column has expired while another cell of it is live, one with
/// only columns the struct does not know, one skipped as undecodable under
/// [`crate::read::ReadOptions::with_skip_undecodable`]) do not count; a row
/// that does not decode, returned as its error, does. (The raw data
/// layer's [`crate::data::ReadRows::limit`] is Bigtable's own: rows the
/// server sends, none left out.)
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[must_use]
pub struct Scan {
    selection: Selection,
    limit: Option<u64>,
    reversed: bool,
    /// A typed key Bigtable would refuse, found while encoding the scan and
    /// reported when it is read, naming the table read (see [`BadKey`]).
    bad_key: Option<BadKey>,
}

/// A key of [`Scan::key_range`] or [`Scan::key_prefix`] that is empty or
/// over Bigtable's length limit. Reported when the scan is read rather
/// than when it is made: only then is the table known, which may be a
/// handle's own name ([`crate::Table::with_name`]) rather than the
/// struct's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BadKey {
    Empty,
    TooLong { len: usize, max: usize },
}

impl BadKey {
    /// The error for this key in `table`.
    fn in_table(self, table: &str) -> Error {
        let table = table.to_owned();
        match self {
            BadKey::Empty => Error::from(error::EmptyRowKey { table }),
            BadKey::TooLong { len, max } => Error::from(error::RowKeyTooLong { table, len, max }),
        }
    }

    /// `encoded`, or an empty placeholder where the key is one Bigtable
    /// would refuse (kept in `bad`); other errors as they are.
    fn defer(encoded: Result<Vec<u8>>, bad: &mut Option<BadKey>) -> Result<Vec<u8>> {
        let found = match encoded {
            Err(Error::EmptyRowKey { .. }) => BadKey::Empty,
            Err(Error::RowKeyTooLong(e)) => BadKey::TooLong {
                len: e.len,
                max: e.max,
            },
            other => return other,
        };
        bad.get_or_insert(found);
        Ok(Vec::new())
    }
}

/// A range of row keys: its start and its end.
pub(crate) type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Selection {
    #[default]
    All,
    Prefix(Vec<u8>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Keys(Vec<Vec<u8>>),
}

impl Scan {
    /// Every row of the table.
    pub fn all() -> Self {
        Self::default()
    }

    /// The rows whose key starts with `prefix` (every row for an empty prefix).
    pub fn prefix(prefix: impl AsRef<[u8]>) -> Self {
        Self {
            selection: Selection::Prefix(prefix.as_ref().to_vec()),
            limit: None,
            reversed: false,
            bad_key: None,
        }
    }

    /// The rows whose key lies in `range` (`"a".."m"`, `start..=end`, `start..`).
    pub fn range<K: AsRef<[u8]>>(range: impl RangeBounds<K>) -> Self {
        let own = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Self {
            selection: Selection::Range(own(range.start_bound()), own(range.end_bound())),
            limit: None,
            reversed: false,
            bad_key: None,
        }
    }

    /// Every row of `T` whose key starts with the key fields `prefix` (the
    /// first one or more of a composite key, as a tuple): every row of one
    /// tenant, say. See [`crate::KeyPrefix`].
    ///
    /// # Errors
    /// As [`crate::BigtableRow::encode_key`] for the prefix's fields
    /// ([`Error::KeySeparatorInPart`], [`Error::Encode`]). A prefix over
    /// Bigtable's key length limit is [`Error::RowKeyTooLong`] when the
    /// scan is read, naming the table read (a handle's
    /// [`crate::Table::with_name`], not necessarily the struct's table).
    pub fn key_prefix<T: BigtableRow>(prefix: &impl KeyPrefix<T>) -> Result<Self> {
        let mut bad_key = None;
        let prefix = BadKey::defer(prefix.key_prefix(), &mut bad_key)?;
        Ok(Self {
            bad_key,
            ..Self::prefix(prefix)
        })
    }

    /// The rows of `T` whose keys lie in `range`, given as key values
    /// (`T::Key`, a tuple for a composite key) and encoded as the derive
    /// encodes them: `Scan::key_range::<Visit>(&start..&end)`.
    ///
    /// # Errors
    /// As [`crate::BigtableRow::encode_key`] ([`Error::KeySeparatorInPart`],
    /// [`Error::Encode`]). A bound that encodes to an empty key or one over
    /// Bigtable's length limit is [`Error::EmptyRowKey`] or
    /// [`Error::RowKeyTooLong`] when the scan is read, naming the table
    /// read (a handle's [`crate::Table::with_name`], not necessarily the
    /// struct's table).
    pub fn key_range<'k, T: BigtableRow>(range: impl RangeBounds<&'k T::Key>) -> Result<Self>
    where
        T::Key: 'k,
    {
        let mut bad_key = None;
        let mut encode = |b: Bound<&&T::Key>| -> Result<Bound<Vec<u8>>> {
            Ok(match b {
                Bound::Included(k) => {
                    Bound::Included(BadKey::defer(T::encode_key(k), &mut bad_key)?)
                }
                Bound::Excluded(k) => {
                    Bound::Excluded(BadKey::defer(T::encode_key(k), &mut bad_key)?)
                }
                Bound::Unbounded => Bound::Unbounded,
            })
        };
        let selection = Selection::Range(encode(range.start_bound())?, encode(range.end_bound())?);
        Ok(Self {
            selection,
            limit: None,
            reversed: false,
            bad_key,
        })
    }

    /// Exactly these row keys (those that exist), in key order.
    pub fn keys<K: AsRef<[u8]>>(keys: impl IntoIterator<Item = K>) -> Self {
        Self {
            selection: Selection::Keys(keys.into_iter().map(|k| k.as_ref().to_vec()).collect()),
            limit: None,
            reversed: false,
            bad_key: None,
        }
    }

    /// At most `rows` rows: the first `rows` the typed reader returns, rows
    /// it leaves out not counted (see the type's docs). A limit of zero
    /// means no limit, as in Bigtable's API.
    ///
    /// The limit is sent to the server, so a read asks for no more rows
    /// than it needs when every row it meets is live; when the server's
    /// limit is used up by rows the reader left out, the read goes on after
    /// the last key the server sent (below it, reversed), in as many more
    /// requests as it takes (each asking for at least twice as many rows as
    /// the one before), and stops once it has `rows` rows.
    pub fn limit(mut self, rows: u64) -> Self {
        self.limit = (rows > 0).then_some(rows);
        self
    }

    /// The limit, if any.
    #[must_use]
    pub fn row_limit(&self) -> Option<u64> {
        self.limit
    }

    /// The same rows in descending key order (Bigtable's reverse scan,
    /// `ReadRowsRequest.reversed`): with [`Scan::limit`], the *last* `n`
    /// rows of the range (the latest, when keys end in an ascending time).
    ///
    /// ```
    /// use bigtable_ttl::Scan;
    ///
    /// // The 10 greatest keys of customer 3, greatest first.
    /// let latest = Scan::prefix("customer-3#").reversed().limit(10);
    /// assert!(latest.is_reversed());
    /// ```
    ///
    /// A reversed read that breaks resumes *below* the last row it
    /// delivered, so it too delivers every row once, in its order. Cloud
    /// Bigtable serves reverse scans to clients that announce them (this
    /// library does, in the `bigtable-features` header of every read);
    /// Google's emulator serves them too (since mid-2023; the tests run
    /// reverse scans on it, plain and resumed through broken connections).
    pub fn reversed(mut self) -> Self {
        self.reversed = true;
        self
    }

    /// Whether rows come in descending key order ([`Scan::reversed`]).
    #[must_use]
    pub fn is_reversed(&self) -> bool {
        self.reversed
    }

    /// The keys this scan covers as one range; `None` for a list of keys.
    pub(crate) fn key_bounds(&self) -> Option<KeyRange> {
        match &self.selection {
            Selection::All => Some((Bound::Unbounded, Bound::Unbounded)),
            Selection::Prefix(prefix) => {
                let end = match prefix_range(prefix).end_key {
                    Some(EndKey::EndKeyOpen(end)) => Bound::Excluded(end),
                    _ => Bound::Unbounded,
                };
                Some((Bound::Included(prefix.clone()), end))
            }
            Selection::Range(start, end) => Some((start.clone(), end.clone())),
            Selection::Keys(_) => None,
        }
    }

    /// Whether Bigtable can serve this scan of `table`: its typed keys
    /// within Bigtable's limits, and a range that does not start after it
    /// ends (reversed scans included: Bigtable takes their range in
    /// ascending order too).
    ///
    /// # Errors
    /// [`Error::EmptyRowKey`] and [`Error::RowKeyTooLong`] naming `table`;
    /// [`Error::InvalidRange`].
    pub(crate) fn check(&self, table: &str) -> Result<()> {
        if let Some(bad) = self.bad_key {
            return Err(bad.in_table(table));
        }
        if let Selection::Range(start, end) = &self.selection {
            let key = |b: &Bound<Vec<u8>>| match b {
                Bound::Included(k) | Bound::Excluded(k) => Some(k.clone()),
                Bound::Unbounded => None,
            };
            if let (Some(start), Some(end)) = (key(start), key(end)) {
                if start > end {
                    return Err(Error::from(error::InvalidRange { start, end }));
                }
            }
        }
        Ok(())
    }

    /// The `RowSet` and `rows_limit` of a `ReadRowsRequest` for this scan.
    /// `None` means "no row can match" (an empty key list), which Bigtable
    /// would otherwise read as "every row".
    ///
    /// # Errors
    /// As [`Scan::check`], before anything is sent.
    pub(crate) fn into_request(self, table_name: String) -> Result<Option<ReadRowsRequest>> {
        // A table id holds no `/`: the last one ends `…/tables/`. A byte's
        // search, not a substring's (made on every read).
        let table = table_name
            .rsplit_once('/')
            .map_or(table_name.as_str(), |(_, id)| id);
        self.check(table)?;
        let rows = match self.selection {
            Selection::All => None,
            Selection::Prefix(prefix) => Some(RowSet {
                row_keys: vec![],
                row_ranges: vec![prefix_range(&prefix)],
            }),
            Selection::Range(start, end) => Some(RowSet {
                row_keys: vec![],
                row_ranges: vec![RowRange {
                    start_key: match start {
                        Bound::Included(k) => Some(StartKey::StartKeyClosed(k)),
                        Bound::Excluded(k) => Some(StartKey::StartKeyOpen(k)),
                        Bound::Unbounded => None,
                    },
                    end_key: match end {
                        Bound::Included(k) => Some(EndKey::EndKeyClosed(k)),
                        Bound::Excluded(k) => Some(EndKey::EndKeyOpen(k)),
                        Bound::Unbounded => None,
                    },
                }],
            }),
            Selection::Keys(keys) if keys.is_empty() => return Ok(None),
            Selection::Keys(keys) => Some(RowSet {
                row_keys: keys,
                row_ranges: vec![],
            }),
        };
        Ok(Some(ReadRowsRequest {
            table_name,
            rows,
            rows_limit: self
                .limit
                .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX)),
            reversed: self.reversed,
            ..ReadRowsRequest::default()
        }))
    }
}

/// The key range of every key starting with `prefix`.
///
/// The end is the prefix with trailing `0xFF` bytes dropped and the last
/// byte incremented (`b"a\xff"` ends before `b"b"`), open-ended when the
/// prefix is all `0xFF`. (`bigtable_rs::util::get_row_range_from_prefix`
/// keeps the length instead and ends `b"a\xff"` at `b"b\0"`, which lets the
/// key `b"b"` in.)
fn prefix_range(prefix: &[u8]) -> RowRange {
    let mut end = prefix.to_vec();
    while end.last() == Some(&0xFF) {
        end.pop();
    }
    let end_key = match end.last_mut() {
        Some(last) => {
            *last += 1;
            Some(EndKey::EndKeyOpen(end))
        }
        None => None,
    };
    RowRange {
        start_key: Some(StartKey::StartKeyClosed(prefix.to_vec())),
        end_key,
    }
}

/// `request` narrowed to the rows it has not delivered yet: those after
/// `last_key`, or before it for a reversed read (which delivers keys in
/// descending order), with `delivered` rows taken off its limit; `None`
/// when nothing is left to read.
pub(crate) fn resume_request(
    mut request: ReadRowsRequest,
    last_key: &[u8],
    delivered: u64,
) -> Option<ReadRowsRequest> {
    if request.rows_limit > 0 {
        let left = request
            .rows_limit
            .saturating_sub(i64::try_from(delivered).unwrap_or(i64::MAX));
        if left <= 0 {
            return None;
        }
        request.rows_limit = left;
    }
    let mut set = request.rows.take().unwrap_or_default();
    if set.row_keys.is_empty() && set.row_ranges.is_empty() {
        // Every row: one unbounded range, narrowed below.
        set.row_ranges.push(RowRange::default());
    }
    if request.reversed {
        set.row_keys.retain(|k| k.as_slice() < last_key);
        set.row_ranges
            .retain_mut(|range| narrow_below(range, last_key));
    } else {
        set.row_keys.retain(|k| k.as_slice() > last_key);
        set.row_ranges
            .retain_mut(|range| narrow_above(range, last_key));
    }
    if set.row_keys.is_empty() && set.row_ranges.is_empty() {
        // An empty set would mean every row.
        return None;
    }
    request.rows = Some(set);
    Some(request)
}

/// `range` cut to its keys after `last`; `false` when none is left. An
/// empty key is an unbounded end, as in Bigtable's API.
fn narrow_above(range: &mut RowRange, last: &[u8]) -> bool {
    let ends_at_or_before = match &range.end_key {
        Some(EndKey::EndKeyOpen(e) | EndKey::EndKeyClosed(e)) if !e.is_empty() => {
            e.as_slice() <= last
        }
        _ => false,
    };
    let starts_at_or_before = match &range.start_key {
        Some(StartKey::StartKeyClosed(s)) => s.as_slice() <= last,
        Some(StartKey::StartKeyOpen(s)) => s.as_slice() < last,
        None => true,
    };
    if starts_at_or_before {
        range.start_key = Some(StartKey::StartKeyOpen(last.to_vec()));
    }
    !ends_at_or_before
}

/// `range` cut to its keys before `last` (a reversed read's rest); `false`
/// when none is left.
fn narrow_below(range: &mut RowRange, last: &[u8]) -> bool {
    let starts_at_or_after = match &range.start_key {
        Some(StartKey::StartKeyClosed(s) | StartKey::StartKeyOpen(s)) => s.as_slice() >= last,
        None => false,
    };
    let ends_after = match &range.end_key {
        Some(EndKey::EndKeyClosed(e)) if !e.is_empty() => e.as_slice() >= last,
        Some(EndKey::EndKeyOpen(e)) if !e.is_empty() => e.as_slice() > last,
        _ => true,
    };
    if ends_after {
        range.end_key = Some(EndKey::EndKeyOpen(last.to_vec()));
    }
    !starts_at_or_after
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ranges_end_right_after_the_prefix() {
        let end = |p: &[u8]| prefix_range(p).end_key;
        assert_eq!(end(b"ab"), Some(EndKey::EndKeyOpen(b"ac".to_vec())));
        assert_eq!(end(b"a\xff"), Some(EndKey::EndKeyOpen(b"b".to_vec())));
        assert_eq!(end(b"\xff\xff"), None);
        assert_eq!(end(b""), None);
    }

    #[test]
    fn a_range_starting_after_its_end_is_refused_reversed_or_not() {
        for scan in [Scan::range("m".."a"), Scan::range("m"..="a").reversed()] {
            let err = scan.into_request("t".into()).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidRange(e) if e.start == b"m" && e.end == b"a"),
                "{err}"
            );
            assert!(err.to_string().contains(".reversed()"), "{err}");
        }
        // A reversed scan takes its range in ascending order, as Bigtable does.
        assert!(Scan::range("a".."m")
            .reversed()
            .into_request("t".into())
            .is_ok());
        assert!(Scan::range("a"..="a").into_request("t".into()).is_ok());
    }

    #[test]
    fn an_empty_key_list_reads_nothing() {
        assert!(Scan::keys(Vec::<Vec<u8>>::new())
            .into_request("t".into())
            .unwrap()
            .is_none());
        assert_eq!(Scan::all().limit(0).row_limit(), None);
    }

    fn resumed(scan: Scan, last: &str, delivered: u64) -> Option<ReadRowsRequest> {
        resume_request(
            scan.into_request("t".into()).unwrap()?,
            last.as_bytes(),
            delivered,
        )
    }

    #[test]
    fn a_resumed_read_starts_after_the_last_row_and_keeps_the_rest_of_the_limit() {
        let open = |k: &str| Some(StartKey::StartKeyOpen(k.as_bytes().to_vec()));
        let r = resumed(Scan::all().limit(10), "k5", 4).unwrap();
        assert_eq!(r.rows_limit, 6);
        let ranges = r.rows.unwrap().row_ranges;
        assert_eq!(ranges.len(), 1);
        assert_eq!(ranges[0].start_key, open("k5"));
        assert_eq!(ranges[0].end_key, None);
        // The limit used up: nothing left.
        assert!(resumed(Scan::all().limit(4), "k5", 4).is_none());

        let r = resumed(Scan::range("b".."m"), "d", 3).unwrap();
        let range = &r.rows.unwrap().row_ranges[0];
        assert_eq!(range.start_key, open("d"));
        assert_eq!(range.end_key, Some(EndKey::EndKeyOpen(b"m".to_vec())));
        // A range starting after the last key is kept as it is.
        let r = resumed(Scan::range("e"..), "d", 0).unwrap();
        assert_eq!(
            r.rows.unwrap().row_ranges[0].start_key,
            Some(StartKey::StartKeyClosed(b"e".to_vec()))
        );
        // The last row closed the range.
        assert!(resumed(Scan::range("b"..="d"), "d", 3).is_none());
        assert!(resumed(Scan::prefix("ab"), "abz", 1).is_some());

        let r = resumed(Scan::keys(["a", "c", "e"]), "c", 2).unwrap();
        assert_eq!(r.rows.unwrap().row_keys, vec![b"e".to_vec()]);
        assert!(resumed(Scan::keys(["a", "c"]), "c", 2).is_none());
    }

    #[test]
    fn a_reversed_scan_asks_for_descending_keys() {
        let request = Scan::prefix("p")
            .reversed()
            .into_request("t".into())
            .unwrap()
            .unwrap();
        assert!(request.reversed);
        assert!(
            !Scan::prefix("p")
                .into_request("t".into())
                .unwrap()
                .unwrap()
                .reversed
        );
        assert!(Scan::all().reversed().limit(3).is_reversed());
    }

    #[test]
    fn a_resumed_reversed_read_ends_before_the_last_row_and_keeps_the_rest_of_the_limit() {
        let open_end = |k: &str| Some(EndKey::EndKeyOpen(k.as_bytes().to_vec()));
        // Every row: everything below the last key delivered.
        let r = resumed(Scan::all().reversed().limit(10), "k5", 4).unwrap();
        assert!(r.reversed, "the resumed read is reversed too");
        assert_eq!(r.rows_limit, 6);
        let ranges = r.rows.unwrap().row_ranges;
        assert_eq!(ranges.len(), 1);
        assert_eq!(ranges[0].start_key, None);
        assert_eq!(ranges[0].end_key, open_end("k5"));
        assert!(resumed(Scan::all().reversed().limit(4), "k5", 4).is_none());

        // A range keeps its start; its end (open, closed or none) becomes
        // open at the last key.
        for scan in [
            Scan::range("b".."m"),
            Scan::range("b"..="m"),
            Scan::range("b"..),
        ] {
            let r = resumed(scan.reversed(), "d", 3).unwrap();
            let range = &r.rows.unwrap().row_ranges[0];
            assert_eq!(
                range.start_key,
                Some(StartKey::StartKeyClosed(b"b".to_vec()))
            );
            assert_eq!(range.end_key, open_end("d"));
        }
        // A range ending below the last key is kept as it is.
        let r = resumed(Scan::range(.."c").reversed(), "d", 0).unwrap();
        assert_eq!(r.rows.unwrap().row_ranges[0].end_key, open_end("c"));
        // The last row opened the range: nothing is left.
        assert!(resumed(Scan::range("d"..="m").reversed(), "d", 3).is_none());
        assert!(resumed(Scan::range("d"..).reversed(), "d", 3).is_none());
        // Keys below an exclusive start are not the range's: still none left.
        let after_c = Scan::range::<&str>((Bound::Excluded("c"), Bound::Unbounded));
        assert!(resumed(after_c.clone().reversed(), "c", 1).is_none());
        assert!(resumed(after_c.reversed(), "ca", 1).is_some());
        // A prefix: the end becomes the last key, the start stays the prefix.
        let r = resumed(Scan::prefix("ab").reversed(), "abm", 1).unwrap();
        let range = &r.rows.unwrap().row_ranges[0];
        assert_eq!(
            range.start_key,
            Some(StartKey::StartKeyClosed(b"ab".to_vec()))
        );
        assert_eq!(range.end_key, open_end("abm"));

        // Keys: those below the last key.
        let r = resumed(Scan::keys(["a", "c", "e"]).reversed(), "c", 2).unwrap();
        assert_eq!(r.rows.unwrap().row_keys, vec![b"a".to_vec()]);
        assert!(resumed(Scan::keys(["c", "e"]).reversed(), "c", 2).is_none());
    }
}
