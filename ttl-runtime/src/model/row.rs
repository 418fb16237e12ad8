//! The trait the derive implements ([`BigtableRow`]), the builders its
//! methods hand out, and the decoding of a row read back into a value.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};

use crate::model::entry::EntryEncoder;
use crate::model::error::Result;
use crate::model::error::{CodecError, Error};
use crate::model::field::{decode_error, FieldError};
use crate::model::liveness::Verdict;
use crate::model::policy::Expiry;
use crate::model::proto::Mutation;
use crate::model::schema::Schema;
use crate::model::view::{CellRef, ColumnOf, Expiring, RowView};

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

    /// Hand each of [`Schema::columns`], in order, to `sink` (which turns
    /// it into the column's mutations straight away: no per-row temporary).
    ///
    /// # Errors
    /// A field that cannot be encoded or is too large, as a [`FieldError`]
    /// the builder turns into [`crate::Error::Encode`] / [`crate::Error::ValueTooLarge`].
    ///
    /// Written by the derive; not part of the API (hidden, as serde hides
    /// its helpers).
    #[doc(hidden)]
    fn write_cells(&self, sink: &mut CellSink<'_, Self>) -> Result<(), FieldError>;

    /// Which declared column `(family, qualifier)` is, if any. The derive
    /// generates a `match` on the names; this default searches
    /// [`BigtableRow::SCHEMA`]. Written by the derive; not part of the API.
    #[doc(hidden)]
    #[must_use]
    fn column_of(family: &str, qualifier: &[u8]) -> ColumnOf {
        ColumnOf::in_schema(Self::SCHEMA, family, qualifier)
    }

    /// Rebuild a value from a row read back.
    ///
    /// # Errors
    /// A cell or key part that does not decode, as a small [`FieldError`];
    /// [`decode_row`] names the table, row and column. Written by the
    /// derive; not part of the API.
    #[doc(hidden)]
    fn decode(row: &RowView<'_>) -> Result<Self, FieldError>;

    /// A builder for the mutations that write this value, with per-write
    /// `.ttl(..)` / `.expire_at(..)` overrides.
    fn mutation(&self) -> MutationBuilder<'_, Self> {
        MutationBuilder::new(self)
    }
}

/// Builds the mutations for one write of a value.
///
/// ```
/// # use bigtable_ttl::{BigtableRow};
/// # use chrono::{TimeDelta, TimeZone, Utc};
/// #[derive(BigtableRow)]
/// #[bigtable(table = "clicks", family = "c")]
/// #[ttl(default = "2d")]
/// struct Click {
///     #[bigtable(key)]
///     id: String,
///     url: String,
/// }
///
/// let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
/// let click = Click { id: "c1".into(), url: "/home".into() };
/// let write = click.mutation().ttl(TimeDelta::hours(1)).build(now).unwrap();
/// assert_eq!(write.expires_at, now + TimeDelta::hours(1));
/// ```
#[derive(Debug)]
#[must_use]
pub struct MutationBuilder<'a, T> {
    pub(crate) row: &'a T,
    pub(crate) expiry: Option<Expiry>,
}

/// Where a derived struct's `write_cells` hands its columns: each one
/// becomes its `DeleteFromColumn` (unless the struct owns its family) and,
/// unless the value is `None`, its `SetCell`, written straight to where the
/// row's mutations go (`MutationOut`).
///
/// Generic over the row type so that, once inlined into the derived
/// `write_cells`, each column's family, qualifier and TTL are constants of
/// `T::SCHEMA`, as in hand-written code.
#[derive(Debug)]
#[doc(hidden)]
pub struct CellSink<'a, T> {
    pub(crate) now: DateTime<Utc>,
    pub(crate) row_ts: i64,
    pub(crate) out: MutationOut<'a>,
    pub(crate) row: PhantomData<fn() -> T>,
}

/// Where the mutations of a row write go.
#[derive(Debug)]
pub(crate) enum MutationOut<'a> {
    /// `Mutation` values (a single-row or conditional write sends them
    /// through the generated client).
    Values {
        mutations: &'a mut Vec<Mutation>,
        /// The next cell's value, encoded.
        staged: Vec<u8>,
    },
    /// Straight into the wire form of a `MutateRowsRequest` entry (the
    /// bulk writer's requests).
    Wire(EntryEncoder<'a>),
}

/// The first key fields of `T`, as a tuple of their types: what a scan of
/// every row starting with them takes ([`crate::Scan::key_prefix`]), so
/// that key bytes are never encoded by hand. `#[derive(BigtableRow)]`
/// implements it for the tuples of the first 1, 2, … key fields of a
/// composite key (all but the last: a whole key is [`crate::Scan::keys`]).
///
/// ```
/// use bigtable_ttl::{BigtableRow, Scan};
///
/// #[derive(BigtableRow)]
/// #[bigtable(table = "visits", family = "v", key_separator = "#")]
/// #[ttl(default = "1h")]
/// struct Visit {
///     #[bigtable(key)]
///     tenant: String,
///     #[bigtable(key)]
///     user: String,
///     #[bigtable(key)]
///     seq: u64,
///     page: String,
/// }
///
/// let one_tenant = Scan::key_prefix::<Visit>(&("acme".to_owned(),)).unwrap();
/// let one_user = Scan::key_prefix::<Visit>(&("acme".to_owned(), "ann".to_owned())).unwrap();
/// # let _ = (one_tenant, one_user);
/// ```
pub trait KeyPrefix<T: BigtableRow> {
    /// The bytes every row key starting with these fields starts with.
    ///
    /// # Errors
    /// As [`BigtableRow::encode_key`].
    fn key_prefix(&self) -> Result<Vec<u8>>;
}

/// What a row read back is, by [the liveness rule](crate::liveness).
#[derive(Debug)]
pub(crate) enum Decoded<T> {
    /// Live: the value, with its expiry metadata.
    Row(Expiring<T>),
    /// Not live, nothing of its own visible.
    Absent,
    /// Not live, though some of its own cells are visible (see
    /// [`Verdict::Partial`]): the caller tells a partially expired row from
    /// a torn read or a struct that does not match the table.
    Partial {
        /// The first required column (an index of `Schema::columns`)
        /// without a visible cell.
        missing: usize,
    },
}

/// Judge and decode one row read back at `now`.
///
/// # Errors
/// [`crate::Error::Decode`] for a cell that does not decode,
/// [`crate::Error::BadRowKey`], [`crate::Error::TimestampOutOfRange`].
#[inline]
pub(crate) fn classify_row<'a, T: BigtableRow>(
    key: &'a [u8],
    cells: impl IntoIterator<Item = CellRef<'a>>,
    now: DateTime<Utc>,
) -> Result<Decoded<T>> {
    let mut view = RowView::empty(T::SCHEMA, key);
    // The schema passed again as the constant it is: per-column facts fold.
    match view.reduce(T::SCHEMA, T::column_of, cells, now)? {
        Verdict::Live { .. } => match T::decode(&view) {
            Ok(value) => Ok(Decoded::Row(view.into_expiring(value))),
            Err(e) => Err(e.into_read_error(T::SCHEMA, key)),
        },
        Verdict::Absent => Ok(Decoded::Absent),
        Verdict::Partial { missing, .. } => Ok(Decoded::Partial { missing }),
    }
}

/// Decode one row read back into an [`Expiring`] value; `None` when the row
/// is not live at `now` ([the liveness rule](crate::liveness)).
///
/// # Errors
/// [`crate::Error::Decode`] / [`crate::Error::BadRowKey`]; an incomplete row
/// (some required columns visible, or its marker live, while another
/// required column is missing: see [`crate::liveness`]) is
/// [`crate::Error::Decode`] naming the missing column. A [`crate::Table`]
/// looks at that column's stored cells before it says so (a torn read, or
/// a column whose expired cell is still stored, is not incomplete); this
/// function judges `cells` alone.
pub fn decode_row<'a, T: BigtableRow>(
    key: &'a [u8],
    cells: impl IntoIterator<Item = CellRef<'a>>,
    now: DateTime<Utc>,
) -> Result<Option<Expiring<T>>> {
    match classify_row::<T>(key, cells, now)? {
        Decoded::Row(row) => Ok(Some(row)),
        Decoded::Absent => Ok(None),
        Decoded::Partial { missing, .. } => Err(missing_column(T::SCHEMA, key, missing)),
    }
}

/// The error for required column `index` of `schema` missing from row `key`.
pub(crate) fn missing_column(schema: &Schema, key: &[u8], index: usize) -> Error {
    let column = &schema.columns[index];
    decode_error(
        schema,
        key,
        column.qualifier,
        column.family,
        CodecError::Missing,
    )
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
