//! The trait the derive implements, and what a read returns.

use std::ops::Deref;

use chrono::{DateTime, TimeDelta, Utc};

use crate::codec::CellCodec;
use crate::error::{CodecError, Error, Result};
use crate::key::KeyReader;
use crate::mutation::MutationBuilder;
use crate::policy::Expiry;
use crate::schema::Schema;

/// A struct stored as one Bigtable row. Implemented by `#[derive(BigtableRow)]`;
/// implementing it by hand is possible but not the intended use.
pub trait BigtableRow: Sized {
    /// The key: the key field's type, or a tuple of the key fields' types.
    type Key;

    /// Table, families, columns and policy.
    const SCHEMA: &'static Schema;

    /// The row key for `key`.
    ///
    /// # Errors
    /// Empty or over-long keys, a separator inside a key part.
    fn encode_key(key: &Self::Key) -> Result<Vec<u8>>;

    /// This row's key.
    ///
    /// # Errors
    /// As [`BigtableRow::encode_key`].
    fn row_key(&self) -> Result<Vec<u8>>;

    /// The expiry this value asks for through its `#[ttl(expire_at)]` field,
    /// or [`Expiry::PolicyDefault`].
    fn expiry(&self) -> Expiry;

    /// The cell value of each of [`Schema::columns`], in order; `None`
    /// deletes the column.
    ///
    /// # Errors
    /// [`Error::Encode`] when a field cannot be encoded.
    fn cell_values(&self) -> Result<Vec<Option<Vec<u8>>>>;

    /// Rebuild a value from a row read back.
    ///
    /// # Errors
    /// [`Error::Decode`] / [`Error::BadRowKey`] when a cell or the key does not decode.
    fn decode(row: &RowView<'_>) -> Result<Self>;

    /// A builder for the mutations that write this value, with per-write
    /// `.ttl(..)` / `.expire_at(..)` overrides.
    fn mutation(&self) -> MutationBuilder<'_, Self> {
        MutationBuilder::new(self)
    }
}

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

/// The newest visible cell of each declared column: inline for the usual
/// handful of columns (decoding a row allocates nothing of its own), on the
/// heap beyond [`INLINE_COLUMNS`].
#[derive(Debug)]
enum Slots<'a> {
    Inline(usize, [Option<Slot<'a>>; INLINE_COLUMNS]),
    Heap(Vec<Option<Slot<'a>>>),
}

/// What a row view keeps of a column's cell: family and qualifier are the
/// schema's, so only the value and the timestamp (small rows move cheaply).
#[derive(Debug, Clone, Copy)]
struct Slot<'a> {
    value: &'a [u8],
    timestamp_micros: i64,
}

impl<'a> From<CellRef<'a>> for Slot<'a> {
    fn from(cell: CellRef<'a>) -> Self {
        Slot {
            value: cell.value,
            timestamp_micros: cell.timestamp_micros,
        }
    }
}

impl<'a> Slots<'a> {
    fn new(len: usize) -> Self {
        if len <= INLINE_COLUMNS {
            Slots::Inline(len, [None; INLINE_COLUMNS])
        } else {
            Slots::Heap(vec![None; len])
        }
    }

    fn as_slice(&self) -> &[Option<Slot<'a>>] {
        match self {
            Slots::Inline(len, cells) => &cells[..*len],
            Slots::Heap(cells) => cells,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Option<Slot<'a>>] {
        match self {
            Slots::Inline(len, cells) => &mut cells[..*len],
            Slots::Heap(cells) => cells,
        }
    }
}

/// A row read back, reduced to the newest visible cell of each declared
/// column. What the derived `decode` reads from.
#[derive(Debug)]
pub struct RowView<'a> {
    schema: &'static Schema,
    key: &'a [u8],
    columns: Slots<'a>,
    expires_at: DateTime<Utc>,
    written_at: Option<DateTime<Utc>>,
}

impl<'a> RowView<'a> {
    /// Reduce `cells` of row `key` to what is visible at `now`; `None` when
    /// no declared cell is visible (the row is absent).
    ///
    /// # Errors
    /// [`Error::Decode`] when the shadow column is malformed,
    /// [`Error::ExpiryOutOfRange`] for absurd timestamps.
    pub fn new(
        schema: &'static Schema,
        key: &'a [u8],
        cells: impl IntoIterator<Item = CellRef<'a>>,
        now: DateTime<Utc>,
    ) -> Result<Option<Self>> {
        let policy = schema.policy;
        let mut slots = Slots::new(schema.columns.len());
        let columns = slots.as_mut_slice();
        let mut shadow: Option<CellRef<'a>> = None;
        let newest = |slot: &mut Option<Slot<'a>>, cell: CellRef<'a>| {
            if slot.is_none_or(|old| old.timestamp_micros < cell.timestamp_micros) {
                *slot = Some(cell.into());
            }
        };
        let visibility = policy.visibility(now);
        for cell in cells {
            if !visibility.is_visible(cell.timestamp_micros) {
                continue;
            }
            if let Some(i) = schema.column_index(cell.family, cell.qualifier) {
                newest(&mut columns[i], cell);
            } else if schema.is_written_at(cell.family, cell.qualifier)
                && shadow.is_none_or(|old| old.timestamp_micros < cell.timestamp_micros)
            {
                shadow = Some(cell);
            }
        }
        let row_level = columns
            .iter()
            .zip(schema.columns)
            .filter(|(_, c)| c.ttl.is_none())
            .filter_map(|(cell, _)| cell.as_ref())
            .map(|c| c.timestamp_micros)
            .chain(shadow.as_ref().map(|c| c.timestamp_micros))
            .max();
        let newest_ts =
            row_level.or_else(|| columns.iter().flatten().map(|c| c.timestamp_micros).max());
        let Some(ts) = newest_ts else {
            return Ok(None);
        };
        let expires_at = policy.expiry_of(ts)?;
        let written_at = match shadow {
            None => None,
            Some(cell) => Some(DateTime::<Utc>::decode(cell.value).map_err(|source| {
                decode_error(
                    schema,
                    key,
                    schema.written_at.map_or("", |s| s.qualifier),
                    cell.family,
                    source,
                )
            })?),
        };
        Ok(Some(Self {
            schema,
            key,
            columns: slots,
            expires_at,
            written_at,
        }))
    }

    /// The row key.
    #[must_use]
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// The key split into the schema's key fields.
    ///
    /// # Errors
    /// [`Error::BadRowKey`] when the key does not have the declared shape.
    pub fn key_reader(&self) -> Result<KeyReader<'a>> {
        KeyReader::new(
            self.schema.table,
            self.key,
            self.schema.key_separator,
            self.schema.key_fields.len(),
        )
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

    /// The newest visible cell of column `index`.
    #[must_use]
    pub fn cell(&self, index: usize) -> Option<CellRef<'a>> {
        let column = self.schema.columns.get(index)?;
        self.slot(index).map(|slot| CellRef {
            family: column.family,
            qualifier: column.qualifier.as_bytes(),
            value: slot.value,
            timestamp_micros: slot.timestamp_micros,
        })
    }

    fn slot(&self, index: usize) -> Option<Slot<'a>> {
        self.columns.as_slice().get(index).copied().flatten()
    }

    /// Decode required column `index`.
    ///
    /// # Errors
    /// [`Error::Decode`] when absent or malformed.
    pub fn required<T: CellCodec>(&self, index: usize) -> Result<T> {
        match self.slot(index) {
            Some(cell) => T::decode(cell.value).map_err(|e| self.column_error(index, e)),
            None => Err(self.column_error(index, CodecError::Missing)),
        }
    }

    /// Decode optional column `index` (`None` when absent).
    ///
    /// # Errors
    /// [`Error::Decode`] when malformed.
    pub fn optional<T: CellCodec>(&self, index: usize) -> Result<Option<T>> {
        self.slot(index)
            .map(|cell| T::decode(cell.value).map_err(|e| self.column_error(index, e)))
            .transpose()
    }

    fn column_error(&self, index: usize, source: CodecError) -> Error {
        let column = &self.schema.columns[index];
        decode_error(
            self.schema,
            self.key,
            column.qualifier,
            column.family,
            source,
        )
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

fn decode_error(
    schema: &Schema,
    key: &[u8],
    qualifier: &str,
    family: &str,
    source: CodecError,
) -> Error {
    Error::Decode {
        table: schema.table.to_owned(),
        row_key: String::from_utf8_lossy(key).into_owned(),
        column: format!("{family}:{qualifier}"),
        source,
    }
}

/// Decode one row read back into an [`Expiring`] value; `None` when every
/// declared cell has expired at `now`.
///
/// # Errors
/// [`Error::Decode`] / [`Error::BadRowKey`].
pub fn decode_row<'a, T: BigtableRow>(
    key: &'a [u8],
    cells: impl IntoIterator<Item = CellRef<'a>>,
    now: DateTime<Utc>,
) -> Result<Option<Expiring<T>>> {
    match RowView::new(T::SCHEMA, key, cells, now)? {
        None => Ok(None),
        Some(view) => {
            let value = T::decode(&view)?;
            Ok(Some(view.into_expiring(value)))
        }
    }
}

/// The expiry a required `#[ttl(expire_at)]` field asks for.
#[must_use]
pub fn expiry_at(at: DateTime<Utc>) -> Expiry {
    Expiry::At(at)
}

/// The expiry an optional `#[ttl(expire_at)]` field asks for.
#[must_use]
pub fn expiry_at_opt(at: Option<DateTime<Utc>>) -> Expiry {
    at.map_or(Expiry::PolicyDefault, Expiry::At)
}
