//! A row read back: its cells ([`CellRef`]) reduced to the newest visible
//! one of each declared column ([`RowView`], what the derived `decode`
//! reads), and what a typed read returns ([`Expiring`]).

use std::ops::Deref;

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::codec::CellCodec;
use crate::model::error::{self, CodecError, Error, Result};
use crate::model::field::{decode_error, FieldError};
use crate::model::key::{KeyPart, KeyReader};
use crate::model::liveness::{verdict, Marker, Newest, Verdict};
use crate::model::schema::{Schema, ROW_MARKER_PREFIX};

/// A value read back, with its expiry metadata (as Cassandra's `TTL()` and
/// `WRITETIME()`).
#[derive(Debug, Clone, PartialEq)]
pub struct Expiring<T> {
    /// The value.
    pub value: T,
    /// When the row expires (its row-level cells; a per-field TTL may end sooner).
    pub expires_at: DateTime<Utc>,
    /// When the row was really written, from the shadow column, where declared.
    pub written_at: Option<DateTime<Utc>>,
}

impl<T> Expiring<T> {
    /// Time left before the row expires, as seen at `now` (zero once expired).
    #[must_use]
    pub fn time_left(&self, now: DateTime<Utc>) -> TimeDelta {
        (self.expires_at - now).max(TimeDelta::zero())
    }

    /// The value, dropping the metadata.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> Deref for Expiring<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// What one declared cell is to a row's decoder ([`crate::BigtableRow::column_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub enum ColumnOf {
    /// Column `index` of [`Schema::columns`].
    Column(usize),
    /// An entry of map `index` of [`Schema::maps`] (any qualifier of its family).
    MapEntry(usize),
    /// The shadow column holding the real write time.
    WrittenAt,
    /// The row marker (see [`crate::liveness`]).
    Marker,
    /// Not a cell of this struct.
    Other,
}

impl ColumnOf {
    /// Look `(family, qualifier)` up in `schema` (a linear search; the derive
    /// generates a `match` instead).
    #[must_use]
    pub fn in_schema(schema: &Schema, family: &str, qualifier: &[u8]) -> Self {
        if schema.is_marker(family, qualifier) {
            ColumnOf::Marker
        } else if let Some(i) = schema.column_index(family, qualifier) {
            ColumnOf::Column(i)
        } else if let Some(m) = schema.map_index(family) {
            ColumnOf::MapEntry(m)
        } else if schema.is_written_at(family, qualifier) {
            ColumnOf::WrittenAt
        } else {
            ColumnOf::Other
        }
    }
}

#[cold]
fn missing(index: usize) -> FieldError {
    FieldError::Column {
        column: index,
        source: CodecError::Missing,
    }
}

/// Decode one map entry's key and value.
pub(crate) fn decode_entry<K: KeyPart, V: CellCodec>(
    qualifier: &[u8],
    value: &[u8],
) -> Result<(K, V), CodecError> {
    Ok((K::read_key(qualifier)?, V::decode(value)?))
}

/// Keep `cell` as an entry of a map: a column's cells arrive together, so
/// only the last entry can be an older version of the same one.
#[inline]
fn push_entry<'a>(entries: &mut Vec<EntryCell<'a>>, cell: CellRef<'a>) {
    let entry = EntryCell {
        qualifier: cell.qualifier,
        value: cell.value,
        timestamp_micros: cell.timestamp_micros,
    };
    match entries.last_mut() {
        Some(last) if last.qualifier == cell.qualifier => {
            if last.timestamp_micros < entry.timestamp_micros {
                *last = entry;
            }
        }
        _ => entries.push(entry),
    }
}

/// One cell as read from Bigtable, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct CellRef<'a> {
    /// Column family.
    pub family: &'a str,
    /// Column qualifier.
    pub qualifier: &'a [u8],
    /// Value bytes.
    pub value: &'a [u8],
    /// Cell timestamp (µs).
    pub timestamp_micros: i64,
}

/// Columns kept inline, without allocating, up to this many.
const INLINE_COLUMNS: usize = 8;

/// The newest visible cell of each declared column: the first
/// [`INLINE_COLUMNS`] inline (decoding a row of the usual handful of columns
/// allocates nothing of its own), the rest on the heap. Column `i` of a
/// derived struct's `decode` is a constant, so reading it is one load.
#[derive(Debug)]
struct Slots<'a> {
    len: usize,
    inline: [Option<Slot<'a>>; INLINE_COLUMNS],
    heap: Vec<Option<Slot<'a>>>,
}

/// What a row view keeps of a column's cell: family and qualifier are the
/// schema's, so only the value and the timestamp (small rows move cheaply).
#[derive(Debug, Clone, Copy)]
struct Slot<'a> {
    value: &'a [u8],
    timestamp_micros: i64,
}

impl<'a> From<CellRef<'a>> for Slot<'a> {
    #[inline]
    fn from(cell: CellRef<'a>) -> Self {
        Slot {
            value: cell.value,
            timestamp_micros: cell.timestamp_micros,
        }
    }
}

impl<'a> Slots<'a> {
    #[inline]
    fn new(len: usize) -> Self {
        Slots {
            len,
            inline: [None; INLINE_COLUMNS],
            heap: if len > INLINE_COLUMNS {
                vec![None; len - INLINE_COLUMNS]
            } else {
                Vec::new()
            },
        }
    }

    #[inline]
    fn get(&self, index: usize) -> Option<Slot<'a>> {
        if index < INLINE_COLUMNS {
            // Never set at or beyond `len`.
            self.inline[index]
        } else {
            self.heap.get(index - INLINE_COLUMNS).copied().flatten()
        }
    }

    #[inline]
    fn get_mut(&mut self, index: usize) -> Option<&mut Option<Slot<'a>>> {
        if index >= self.len {
            None
        } else if index < INLINE_COLUMNS {
            Some(&mut self.inline[index])
        } else {
            self.heap.get_mut(index - INLINE_COLUMNS)
        }
    }
}

/// One visible entry of a map field, as read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryCell<'a> {
    pub(crate) qualifier: &'a [u8],
    pub(crate) value: &'a [u8],
    pub(crate) timestamp_micros: i64,
}

/// A row read back, reduced to the newest visible cell of each declared
/// column. What the derived `decode` reads from.
#[derive(Debug)]
#[doc(hidden)]
pub struct RowView<'a> {
    schema: &'static Schema,
    key: &'a [u8],
    columns: Slots<'a>,
    /// The visible entries of each map field, in qualifier order (no
    /// allocation for a struct without maps).
    maps: Vec<Vec<EntryCell<'a>>>,
    expires_at: DateTime<Utc>,
    written_at: Option<DateTime<Utc>>,
}

impl<'a> RowView<'a> {
    /// A view of row `key` with no cell yet.
    #[inline]
    pub(crate) fn empty(schema: &'static Schema, key: &'a [u8]) -> Self {
        Self {
            schema,
            key,
            columns: Slots::new(schema.columns.len()),
            maps: if schema.maps.is_empty() {
                Vec::new()
            } else {
                vec![Vec::new(); schema.maps.len()]
            },
            expires_at: DateTime::UNIX_EPOCH,
            written_at: None,
        }
    }

    /// Fill an [`RowView::empty`] view in place (it is a few hundred bytes:
    /// not moved through `Result`s) with `cells`, the columns told apart by
    /// `column_of` (the derive's generated `match`), and judge the row by
    /// [the liveness rule](crate::liveness). The view's expiry and
    /// write time are set only for a live row.
    #[inline]
    pub(crate) fn reduce(
        &mut self,
        schema: &'static Schema,
        column_of: impl Fn(&str, &[u8]) -> ColumnOf,
        cells: impl IntoIterator<Item = CellRef<'a>>,
        now: DateTime<Utc>,
    ) -> Result<Verdict> {
        debug_assert!(std::ptr::eq(schema, self.schema));
        let policy = schema.policy;
        let mut shadow: Option<Slot<'a>> = None;
        let mut marker: Option<Slot<'a>> = None;
        let mut newest = Newest::default();
        let visibility = policy.visibility(now);
        for cell in cells {
            let ts = cell.timestamp_micros;
            if !visibility.is_visible(ts) {
                continue;
            }
            let slot = match column_of(cell.family, cell.qualifier) {
                ColumnOf::Column(i) => match self.columns.get_mut(i) {
                    Some(slot) => slot,
                    None => continue,
                },
                ColumnOf::WrittenAt => &mut shadow,
                ColumnOf::Marker => &mut marker,
                ColumnOf::MapEntry(m) => {
                    if let Some(entries) = self.maps.get_mut(m) {
                        newest.entry = newest.entry.max(Some(ts));
                        push_entry(entries, cell);
                    }
                    continue;
                }
                ColumnOf::Other => {
                    if cell.qualifier.starts_with(ROW_MARKER_PREFIX)
                        && schema.is_foreign_marker(cell.family, cell.qualifier)
                    {
                        newest.foreign_marker = true;
                    }
                    continue;
                }
            };
            // The newest version of a column wins.
            if slot.is_none_or(|old| old.timestamp_micros < ts) {
                *slot = Some(cell.into());
            }
        }
        newest.written_at = shadow.map(|s| s.timestamp_micros);
        newest.marker = marker.map(|m| Marker::read(m.timestamp_micros, m.value, visibility));
        let columns = &self.columns;
        let verdict = verdict(schema, newest, |i| {
            columns.get(i).map(|s| s.timestamp_micros)
        });
        let Verdict::Live { row_ts } = verdict else {
            return Ok(verdict);
        };
        self.expires_at = policy.expiry_of(row_ts).map_err(|_| {
            Error::from(error::TimestampOutOfRange {
                table: schema.table.to_owned(),
                row_key: self.key.to_vec(),
                timestamp_micros: row_ts,
            })
        })?;
        if let Some(cell) = shadow {
            self.written_at = Some(DateTime::<Utc>::decode(cell.value).map_err(|source| {
                let (family, qualifier) = schema
                    .written_at
                    .map_or(("", ""), |s| (s.family, s.qualifier));
                decode_error(schema, self.key, qualifier, family, source)
            })?);
        }
        Ok(verdict)
    }

    /// The row key.
    #[must_use]
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// When the row expires.
    #[must_use]
    pub fn expires_at(&self) -> DateTime<Utc> {
        self.expires_at
    }

    /// The real write time from the shadow column.
    #[must_use]
    pub fn written_at(&self) -> Option<DateTime<Utc>> {
        self.written_at
    }

    #[inline]
    fn slot(&self, index: usize) -> Option<Slot<'a>> {
        self.columns.get(index)
    }

    /// Decode required column `index`, with a small error (what the derived
    /// `decode` calls; [`crate::model::row::decode_row`] adds the context).
    ///
    /// # Errors
    /// [`FieldError::Column`] when absent or malformed.
    // Measured (callgrind, bench codec): without `always` LLVM keeps one
    // out-of-line copy per codec and decode costs about 1% more.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn column<T: CellCodec>(&self, index: usize) -> Result<T, FieldError> {
        match self.slot(index) {
            Some(cell) => match T::decode(cell.value) {
                Ok(value) => Ok(value),
                Err(source) => Err(FieldError::Column {
                    column: index,
                    source,
                }),
            },
            None => Err(missing(index)),
        }
    }

    /// Decode optional column `index` (`None` when absent), with a small error.
    ///
    /// # Errors
    /// [`FieldError::Column`] when malformed.
    // Measured (callgrind, bench codec): without `always` LLVM keeps one
    // out-of-line copy per codec and decode costs about 1% more.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn column_opt<T: CellCodec>(&self, index: usize) -> Result<Option<T>, FieldError> {
        match self.slot(index) {
            Some(cell) => match T::decode(cell.value) {
                Ok(value) => Ok(Some(value)),
                Err(source) => Err(FieldError::Column {
                    column: index,
                    source,
                }),
            },
            None => Ok(None),
        }
    }

    /// Decode map field `index` (its visible entries), with a small error.
    ///
    /// # Errors
    /// [`FieldError::Entry`] when an entry's key or value does not decode.
    #[inline]
    pub fn map<K: KeyPart, V: CellCodec, M: FromIterator<(K, V)>>(
        &self,
        index: usize,
    ) -> Result<M, FieldError> {
        self.entries(index)
            .iter()
            .map(|e| {
                decode_entry(e.qualifier, e.value).map_err(|source| FieldError::Entry {
                    map: index,
                    qualifier: e.qualifier.to_vec(),
                    source,
                })
            })
            .collect()
    }

    /// The visible entries of map field `index`.
    pub(crate) fn entries(&self, index: usize) -> &[EntryCell<'a>] {
        self.maps.get(index).map_or(&[], Vec::as_slice)
    }

    /// The key of a struct with one key field, decoded, with a small error.
    ///
    /// # Errors
    /// [`FieldError::Key`] when it does not decode.
    #[inline]
    pub fn key_field<K: KeyPart>(&self) -> Result<K, FieldError> {
        K::read_key(self.key).map_err(|source| FieldError::Key { part: 0, source })
    }

    /// The key split into the schema's key fields, with a small error.
    ///
    /// # Errors
    /// [`FieldError::KeyShape`] when the key does not have the declared shape.
    #[inline]
    pub fn key_parts(&self) -> Result<KeyReader<'a>, FieldError> {
        KeyReader::split(
            self.schema.table,
            self.key,
            self.schema.key_separator,
            self.schema.key_fields.len(),
        )
        .map_err(|found| FieldError::KeyShape { found })
    }

    /// Turn the decoded value into what a read returns.
    #[must_use]
    pub fn into_expiring<T>(&self, value: T) -> Expiring<T> {
        Expiring {
            value,
            expires_at: self.expires_at,
            written_at: self.written_at,
        }
    }
}
