//! The trait the derive implements ([`BigtableRow`]), the builders its
//! methods hand out ([`MutationBuilder`], `CellSink`) with their methods
//! (one file: the trait names the builders and they name it), and the
//! decoding of a row read back into a value. The mutations they write and
//! where they go are `crate::model::mutation`'s.

use std::marker::PhantomData;

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::codec::CellCodec;
use crate::model::entry::{EntryEncoder, PendingEntry, Stamp};
use crate::model::error::Result;
use crate::model::error::{self, CodecError, Error};
use crate::model::field::{decode_error, FieldError};
use crate::model::key::KeyPart;
use crate::model::limits::{MAX_CELL_BYTES, MAX_QUALIFIER_BYTES};
use crate::model::liveness::Verdict;
use crate::model::mutation::{
    check_row, check_row_size, clear_column, expires_at, expiry_ts, write_marker, EncodedRow,
    MutationOut, RowMutation, MARK_LEAD_MICROS, WINDOW_MARK_VALUE,
};
use crate::model::policy::{from_micros, millis_floor_micros, Expiry, Policy};
use crate::model::schema::{window_mark, Schema, WhenAbsent};
use crate::model::view::{CellRef, ColumnOf, Expiring, RowView};
use crate::model::writer::another_structs_row_error;

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

    /// Append this row's key (what [`BigtableRow::row_key`] returns) to
    /// `out`, which is left as it was when this fails.
    ///
    /// The derive writes it for a key of one field: the bulk writer then
    /// encodes the key straight into its request, with no key of its own
    /// to allocate and free. Not part of the API (hidden, as
    /// `write_cells`).
    ///
    /// # Errors
    /// As [`BigtableRow::row_key`].
    #[doc(hidden)]
    #[inline]
    fn write_row_key(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(&self.row_key()?);
        Ok(())
    }

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
    /// The write's "now", a whole millisecond (µs since the epoch).
    pub(crate) now_ms: i64,
    pub(crate) row_ts: i64,
    pub(crate) out: MutationOut<'a>,
    pub(crate) row: PhantomData<fn() -> T>,
}

impl<'a, T: BigtableRow> MutationBuilder<'a, T> {
    /// A write of `row` with the expiry its fields or the policy give.
    pub fn new(row: &'a T) -> Self {
        Self { row, expiry: None }
    }

    /// Live `ttl` from the clock's now, overriding the default and any
    /// `expire_at` field.
    pub fn ttl(mut self, ttl: TimeDelta) -> Self {
        self.expiry = Some(Expiry::Ttl(ttl));
        self
    }

    /// Expire at `at`, overriding the default and any `expire_at` field.
    pub fn expire_at(mut self, at: DateTime<Utc>) -> Self {
        self.expiry = Some(Expiry::At(at));
        self
    }

    /// The value being written.
    #[must_use]
    pub fn row(&self) -> &'a T {
        self.row
    }

    /// [`MutationBuilder::build`], checked against Bigtable's row limits
    /// for table `table` ([`check_row`]).
    pub(crate) fn build_checked(&self, table: &str, now: DateTime<Utc>) -> Result<RowMutation> {
        // The builder knows only the struct's table; the handle may be renamed.
        let m = self.build(now).map_err(|e| e.in_table(table))?;
        check_row(table, &m)?;
        Ok(m)
    }

    /// The mutations for a write at `now`.
    ///
    /// # Errors
    /// Everything the policy rejects ([`Error::ExpiryNotInFuture`],
    /// [`Error::NonPositiveTtl`], [`Error::MissingExpiry`], out-of-range
    /// timestamps), bad keys and values. Nothing is sent when this fails.
    pub fn build(&self, now: DateTime<Utc>) -> Result<RowMutation> {
        let schema = T::SCHEMA;
        let (row_key, expiry, now_ms, row_ts) = self.head(now.timestamp_micros())?;
        let shadow_mutations = if schema.written_at.is_some() { 2 } else { 0 };
        let mut mutations =
            Vec::with_capacity(2 * schema.columns.len() + schema.maps.len() + shadow_mutations + 2);
        self.write_mutations(now_ms, row_ts, MutationOut::values(&mut mutations))?;
        Ok(RowMutation {
            row_key,
            mutations,
            timestamp_micros: row_ts,
            expires_at: expires_at(schema.policy, expiry, row_ts)?,
        })
    }

    /// The write at `now_micros` (µs since the epoch) encoded at the end of
    /// `out` as one entry of a `MutateRowsRequest` (field and length prefix
    /// included), the same bytes as [`MutationBuilder::build_checked`]'s
    /// mutations in an `Entry` would be, without building them; `staged`
    /// is a buffer for map entries' values, kept from row to row. Nothing
    /// is appended when it fails.
    ///
    /// # Errors
    /// As [`MutationBuilder::build_checked`].
    pub(crate) fn encode_checked(
        &self,
        table: &str,
        now_micros: i64,
        out: &mut Vec<u8>,
        staged: &mut Vec<u8>,
    ) -> Result<EncodedRow> {
        let start = out.len();
        let encoded = self.encode(table, now_micros, out, staged);
        if encoded.is_err() {
            out.truncate(start);
        }
        encoded
    }

    fn encode(
        &self,
        table: &str,
        now_micros: i64,
        out: &mut Vec<u8>,
        staged: &mut Vec<u8>,
    ) -> Result<EncodedRow> {
        let in_table = |e: Error| e.in_table(table);
        let (mut entry, key) =
            PendingEntry::begin_with(out, |out| self.row.write_row_key(out)).map_err(in_table)?;
        let (expiry, now_ms, row_ts) = self.timing(now_micros).map_err(in_table)?;
        entry.stamp = Stamp::new(row_ts);
        let encoder = EntryEncoder {
            out,
            staged,
            entry: &mut entry,
        };
        self.write_mutations(now_ms, row_ts, MutationOut::Wire(encoder))
            .map_err(in_table)?;
        check_row_size(table, &out[key], entry.mutations, entry.cell_bytes)?;
        let policy = T::SCHEMA.policy;
        policy.check_expiry_of(row_ts).map_err(in_table)?;
        Ok(EncodedRow {
            entry: entry.finish(out),
            timestamp_micros: row_ts,
            expiry,
            policy,
        })
    }

    /// The row key, then what [`MutationBuilder::timing`] gives.
    #[inline]
    fn head(&self, now_micros: i64) -> Result<(Vec<u8>, Expiry, i64, i64)> {
        let row_key = self.row.row_key()?;
        let (expiry, now_ms, row_ts) = self.timing(now_micros)?;
        Ok((row_key, expiry, now_ms, row_ts))
    }

    /// The expiry asked for, "now" to the millisecond and the row's
    /// timestamp: what a write at `now_micros` knows, besides its key,
    /// before its first cell.
    #[inline]
    fn timing(&self, now_micros: i64) -> Result<(Expiry, i64, i64)> {
        let schema = T::SCHEMA;
        let policy = schema.policy;
        let expiry = self.expiry.unwrap_or_else(|| self.row.expiry());
        if expiry == Expiry::PolicyDefault && policy == Policy::CellExpiry {
            return Err(Error::from(error::MissingExpiry {
                table: Some(schema.table.to_owned()),
            }));
        }
        let now_ms = millis_floor_micros(now_micros)?;
        let row_ts = policy.cell_timestamp_at(now_ms, expiry)?;
        Ok((expiry, now_ms, row_ts))
    }

    /// Every mutation of the write, in order, into `out`: the owned family
    /// cleared, each column, the shadow column, the row marker.
    #[inline]
    fn write_mutations(&self, now_ms: i64, row_ts: i64, out: MutationOut<'_>) -> Result<()> {
        let schema = T::SCHEMA;
        let mut sink = CellSink {
            now_ms,
            row_ts,
            out,
            row: PhantomData,
        };
        if schema.owns_family {
            sink.out.delete_family(schema.marker_family());
        }
        if let Err(e) = self.row.write_cells(&mut sink) {
            return Err(e.into_write_error(schema));
        }
        let out = &mut sink.out;
        if let Some(shadow) = schema.written_at {
            let written = from_micros(now_ms)?;
            let qualifier = shadow.qualifier.as_bytes();
            clear_column(out, schema, shadow.family, qualifier);
            out.set_value(shadow.family, qualifier, row_ts, &written)
                .map_err(|source| {
                    Error::from(error::Encode {
                        field: "written_at",
                        source,
                    })
                })?;
        }
        // The fingerprint as the constant it is for `T`.
        let fingerprint = const { &T::SCHEMA.fingerprint() };
        write_marker(
            out,
            schema,
            fingerprint.as_bytes(),
            row_ts,
            expiry_ts(schema, now_ms, row_ts),
        );
        Ok(())
    }
}

impl<T: BigtableRow> CellSink<'_, T> {
    /// Write column `index` (of [`crate::Schema::columns`]) with `value`.
    ///
    /// # Errors
    /// [`FieldError::Column`] when the value does not encode,
    /// [`FieldError::TooLarge`] over [`MAX_CELL_BYTES`].
    #[inline]
    pub fn required<V: CellCodec>(&mut self, index: usize, value: &V) -> Result<(), FieldError> {
        self.push(index, Some(value))
    }

    /// Write column `index` with `value`; `None` only deletes the column.
    ///
    /// # Errors
    /// As [`CellSink::required`].
    #[inline]
    pub fn optional<V: CellCodec>(
        &mut self,
        index: usize,
        value: &Option<V>,
    ) -> Result<(), FieldError> {
        self.push(index, value.as_ref())
    }

    /// Replace map field `index` (of [`crate::Schema::maps`]) with `map`'s
    /// entries: its whole family is cleared, then each entry is written with
    /// the row's timestamp (its expiry is the row's).
    ///
    /// # Errors
    /// [`FieldError::Entry`] when a key or value does not encode or a value
    /// is over Bigtable's cell limit, [`FieldError::EntryKeyTooLarge`] for a
    /// key over its qualifier limit.
    #[inline]
    pub fn map<'m, K, V, M>(&mut self, index: usize, map: &'m M) -> Result<(), FieldError>
    where
        K: KeyPart + 'm,
        V: CellCodec + 'm,
        &'m M: IntoIterator<Item = (&'m K, &'m V)>,
    {
        let family = T::SCHEMA.maps[index].family;
        self.out.delete_family(family);
        for (key, value) in map {
            let entry_error = |qualifier: &[u8], source| FieldError::Entry {
                map: index,
                qualifier: qualifier.to_vec(),
                source,
            };
            let qualifier = key.to_key().map_err(|source| entry_error(&[], source))?;
            if qualifier.len() > MAX_QUALIFIER_BYTES {
                return Err(FieldError::EntryKeyTooLarge {
                    map: index,
                    len: qualifier.len(),
                });
            }
            let len = self
                .out
                .stage(value)
                .map_err(|source| entry_error(&qualifier, source))?;
            if len > MAX_CELL_BYTES {
                let source = CodecError::Custom(format!(
                    "{len} bytes, over Bigtable's cell limit of {MAX_CELL_BYTES} bytes"
                ));
                return Err(entry_error(&qualifier, source));
            }
            self.out.set_staged_owned(family, qualifier, self.row_ts);
        }
        Ok(())
    }

    /// Column `index`: cleared, then set to `value`, if any.
    ///
    /// Always inlined in optimized builds into the derived `write_cells`,
    /// where `index` is a constant and so are the column's names and TTL.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    #[allow(clippy::inline_always)]
    fn push<V: CellCodec>(&mut self, index: usize, value: Option<&V>) -> Result<(), FieldError> {
        let column = &T::SCHEMA.columns[index];
        let qualifier = column.qualifier.as_bytes();
        clear_column(&mut self.out, T::SCHEMA, column.family, qualifier);
        let Some(value) = value else {
            return Ok(());
        };
        let ts = match column.ttl {
            // A field never outlives its row.
            Some(ttl) => T::SCHEMA
                .policy
                .cell_timestamp_at(self.now_ms, Expiry::Ttl(ttl))
                .map(|ts| ts.min(self.row_ts)),
            None => Ok(self.row_ts),
        };
        // The value is written before its errors are known; a write that
        // fails leaves nothing (see `MutationBuilder::encode_checked`).
        // They come in the order they always did: the value's, its size,
        // then the timestamp's.
        let len = self
            .out
            .set_value(
                column.family,
                qualifier,
                *ts.as_ref().unwrap_or(&self.row_ts),
                value,
            )
            .map_err(|source| FieldError::Column {
                column: index,
                source,
            })?;
        if len > MAX_CELL_BYTES {
            return Err(FieldError::TooLarge { column: index, len });
        }
        let ts = ts?;
        if column.when_absent == WhenAbsent::ReadsZero {
            // A counter's window mark goes with it (see `model::counter`).
            let mark = window_mark(column.qualifier);
            clear_column(&mut self.out, T::SCHEMA, column.family, &mark);
            self.out.set_cell(
                column.family,
                &mark,
                ts - MARK_LEAD_MICROS,
                &WINDOW_MARK_VALUE,
            );
        }
        Ok(())
    }
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
/// [`crate::Error::Decode`] for a cell that does not decode or a row
/// another struct sharing the marker wrote
/// ([`crate::CodecError::WrittenByAnotherStruct`]),
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
        Verdict::WrittenByAnotherStruct => Err(another_structs_row_error(T::SCHEMA, key)),
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

/// The bulk writer's path ([`MutationBuilder::encode_checked`]) against
/// prost's encoding of [`MutationBuilder::build_checked`]'s mutations:
/// the same bytes for every kind of field, or the same error and nothing
/// written.
#[cfg(test)]
mod wire_tests {
    use std::collections::{BTreeMap, HashMap};

    use chrono::{DateTime, TimeDelta, TimeZone as _, Utc};
    use prost::Message as _;

    use super::*;
    use crate::model::codec::Json;
    use crate::model::limits::{MAX_MUTATIONS_PER_REQUEST, MAX_ROW_KEY_BYTES};
    use crate::model::proto::{
        mutate_rows_request::Entry, mutation::Mutation as M, MutateRowsRequest,
    };

    #[derive(bigtable_ttl::CellCodec, Debug, Clone, PartialEq)]
    #[bigtable(crate = crate)]
    struct UserId(String);

    #[derive(bigtable_ttl::CellCodec, Debug, Clone, Copy, PartialEq)]
    #[bigtable(crate = crate, by_name)]
    enum Status {
        Active,
        OnHold,
    }

    #[derive(bigtable_ttl::CellCodec, Debug, Clone, Copy, PartialEq)]
    #[bigtable(crate = crate, by_number)]
    #[repr(i32)]
    enum Plan {
        Free = 0,
        Team = -7,
    }

    /// One-second expiration, every built-in codec, a composite key.
    #[derive(bigtable_ttl::BigtableRow, Debug, Clone)]
    #[bigtable(crate = crate, table = "plain", family = "p", key_separator = "#")]
    struct Plain {
        #[bigtable(key)]
        tenant: String,
        #[bigtable(key)]
        seq: u64,
        #[ttl(expire_at)]
        expires_at: DateTime<Utc>,
        text: String,
        bytes: Vec<u8>,
        flag: bool,
        n64: i64,
        u64_: u64,
        n32: i32,
        u32_: u32,
        n16: i16,
        u16_: u16,
        n8: i8,
        u8_: u8,
        f64_: f64,
        f32_: f32,
        at: DateTime<Utc>,
        #[bigtable(family = "other", column = "elsewhere")]
        elsewhere: String,
    }

    /// Default expiration with a shadow column: options, per-field TTLs,
    /// defaults, JSON, derived codecs, an optional expiry, maps.
    #[derive(bigtable_ttl::BigtableRow, Debug, Clone)]
    #[bigtable(crate = crate, table = "rich", family = "r")]
    #[ttl(default = "2d", written_at)]
    struct Rich {
        #[bigtable(key)]
        id: String,
        #[ttl(expire_at)]
        expires: Option<DateTime<Utc>>,
        name: Option<String>,
        #[ttl(for = "1h")]
        hot: Option<bool>,
        #[bigtable(default)]
        #[ttl(for = "30m")]
        seats: u32,
        json: Json<BTreeMap<String, Vec<u32>>>,
        user: Option<UserId>,
        status: Status,
        plan: Option<Plan>,
        #[bigtable(map, family = "items")]
        items: BTreeMap<String, u64>,
        #[bigtable(map, family = "ids")]
        ids: HashMap<Vec<u8>, String>,
    }

    /// A struct owning its family, with a counter, a map, a shadow column
    /// and a field in another family.
    #[derive(bigtable_ttl::BigtableRow, Debug, Clone)]
    #[bigtable(crate = crate, table = "owned", family = "o", owns_family)]
    #[ttl(written_at)]
    struct Owned {
        #[bigtable(key)]
        id: String,
        #[ttl(expire_at)]
        expires_at: DateTime<Utc>,
        note: Option<String>,
        #[bigtable(counter)]
        views: i64,
        #[bigtable(family = "x")]
        outside: String,
        #[bigtable(map, family = "m")]
        items: BTreeMap<String, String>,
    }

    /// Counters in a family the struct does not own: their window marks
    /// cleared one by one.
    #[derive(bigtable_ttl::BigtableRow, Debug, Clone)]
    #[bigtable(crate = crate, table = "counted", family = "c")]
    struct Counted {
        #[bigtable(key)]
        id: String,
        #[ttl(expire_at)]
        expires_at: DateTime<Utc>,
        #[bigtable(counter)]
        hits: i64,
        #[bigtable(counter, family = "d")]
        misses: i64,
    }

    /// A JSON value serde cannot write (a map keyed by bytes).
    #[derive(bigtable_ttl::BigtableRow, Debug, Clone)]
    #[bigtable(crate = crate, table = "bad", family = "b")]
    #[ttl(default = "1h")]
    struct BadJson {
        #[bigtable(key)]
        id: String,
        first: String,
        json: Json<BTreeMap<Vec<u8>, u8>>,
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap() + TimeDelta::microseconds(123_456)
    }

    /// `builder`'s write through both paths, into a buffer already holding
    /// other bytes: the same bytes, or the same error and nothing written.
    fn same_write<T: BigtableRow>(builder: &MutationBuilder<'_, T>, now: DateTime<Utc>) {
        let built = builder.build_checked("renamed", now);
        let mut out = b"earlier entries".to_vec();
        let mut staged = b"an earlier value".to_vec();
        let encoded =
            builder.encode_checked("renamed", now.timestamp_micros(), &mut out, &mut staged);
        match (built, encoded) {
            (Ok(m), Ok(row)) => {
                let expected = MutateRowsRequest {
                    entries: vec![Entry {
                        row_key: m.row_key.clone(),
                        mutations: m.mutations.clone(),
                        ..Entry::default()
                    }],
                    ..MutateRowsRequest::default()
                }
                .encode_to_vec();
                assert!(
                    out[15..] == expected[..],
                    "{}: {:?}",
                    T::SCHEMA.table,
                    m.mutations
                );
                assert_eq!(&out[..15], b"earlier entries");
                assert_eq!(row.entry.len, expected.len());
                assert_eq!(row.entry.mutations, m.mutations.len());
                assert_eq!(row.timestamp_micros, m.timestamp_micros);
                assert_eq!(row.expires_at().unwrap(), m.expires_at);
            }
            (Err(built), Err(encoded)) => {
                assert_eq!(format!("{built:?}"), format!("{encoded:?}"));
                assert_eq!(out, b"earlier entries", "{encoded}");
            }
            (built, encoded) => panic!("built {built:?}, encoded {encoded:?}"),
        }
    }

    fn plain(i: usize, now: DateTime<Utc>) -> Plain {
        #[allow(clippy::cast_possible_wrap)]
        let n = i as i64;
        Plain {
            tenant: format!("t{i}"),
            seq: i as u64,
            expires_at: now + TimeDelta::minutes(5) + TimeDelta::microseconds(n * 999),
            // Lengths across the one-, two- and three-byte length prefixes.
            text: "x".repeat([0, 5, 127, 128, 16_383, 16_384, 70_000][i % 7]),
            bytes: vec![0xff; i % 300],
            flag: i.is_multiple_of(2),
            n64: -n,
            u64_: u64::MAX - i as u64,
            #[allow(clippy::cast_possible_truncation)]
            #[allow(clippy::cast_possible_wrap)]
            n32: -(i as i32),
            #[allow(clippy::cast_possible_truncation)]
            u32_: i as u32,
            n16: -3,
            u16_: 3,
            n8: -1,
            u8_: 255,
            f64_: -0.5,
            f32_: 1.25,
            at: now - TimeDelta::days(400),
            elsewhere: "e".repeat(i % 3),
        }
    }

    #[test]
    fn every_built_in_codec_and_length_is_written_as_prost_writes_it() {
        let now = now();
        for i in 0..14 {
            let row = plain(i, now);
            same_write(&row.mutation(), now);
            same_write(&row.mutation().expire_at(now + TimeDelta::days(3)), now);
        }
    }

    #[test]
    fn options_ttls_defaults_json_derived_codecs_and_maps_are_written_as_prost_writes_them() {
        let now = now();
        let full = Rich {
            id: "r1".into(),
            expires: Some(now + TimeDelta::hours(5)),
            name: Some("ann".into()),
            hot: Some(true),
            seats: 12,
            json: Json(BTreeMap::from([("a".to_owned(), vec![1, 2, 3])])),
            user: Some(UserId("u-1".into())),
            status: Status::OnHold,
            plan: Some(Plan::Team),
            items: BTreeMap::from([
                ("apple".to_owned(), 3),
                (String::new(), 0),
                ("k".repeat(200), u64::MAX),
            ]),
            ids: HashMap::from([(vec![0, 1, 2], "x".to_owned()), (vec![9], String::new())]),
        };
        let empty = Rich {
            expires: None,
            name: None,
            hot: None,
            seats: 0,
            json: Json(BTreeMap::new()),
            user: None,
            status: Status::Active,
            plan: None,
            items: BTreeMap::new(),
            ids: HashMap::new(),
            ..full.clone()
        };
        let free = Rich {
            plan: Some(Plan::Free),
            ..empty.clone()
        };
        for row in [&full, &empty, &free] {
            same_write(&row.mutation(), now);
            same_write(&row.mutation().ttl(TimeDelta::minutes(20)), now);
            same_write(&row.mutation().ttl(TimeDelta::days(9)), now);
        }
    }

    #[test]
    fn an_owned_family_counters_and_their_window_marks_are_written_as_prost_writes_them() {
        let now = now();
        let owned = Owned {
            id: "o1".into(),
            expires_at: now + TimeDelta::hours(1),
            note: Some("n".into()),
            views: 41,
            outside: "out".into(),
            items: BTreeMap::from([("a".to_owned(), "b".to_owned())]),
        };
        same_write(&owned.mutation(), now);
        let bare = Owned {
            note: None,
            items: BTreeMap::new(),
            ..owned
        };
        same_write(&bare.mutation(), now);
        let counted = Counted {
            id: "c1".into(),
            expires_at: now + TimeDelta::hours(1),
            hits: -2,
            misses: 0,
        };
        same_write(&counted.mutation(), now);
        // What each write holds, to be sure the cases above cover them.
        let kinds = |m: &RowMutation| {
            m.mutations
                .iter()
                .filter(|m| matches!(m.mutation, Some(M::DeleteFromFamily(_))))
                .count()
        };
        assert_eq!(
            kinds(&owned_built(&bare, now)),
            2,
            "the family and the map's"
        );
    }

    fn owned_built(row: &Owned, now: DateTime<Utc>) -> RowMutation {
        row.mutation().build(now).unwrap()
    }

    #[test]
    fn a_row_that_fails_leaves_nothing_written_and_the_same_error() {
        let now = now();
        // Before any cell: the expiry, the key.
        same_write(&plain(1, now).mutation().expire_at(now), now);
        let bad_key = Plain {
            tenant: "a#b".into(),
            ..plain(2, now)
        };
        same_write(&bad_key.mutation(), now);
        // A key of one field, written in place: empty, over the limit, and
        // long (its length two bytes) but fine.
        for id in [
            String::new(),
            "k".repeat(MAX_ROW_KEY_BYTES + 1),
            "k".repeat(300),
        ] {
            let owned = Owned {
                id,
                expires_at: now + TimeDelta::hours(1),
                note: None,
                views: 1,
                outside: String::new(),
                items: BTreeMap::new(),
            };
            same_write(&owned.mutation(), now);
        }
        // Halfway through: a JSON value serde refuses after a first column,
        // a map key over the qualifier limit after a first entry.
        let json = BadJson {
            id: "j".into(),
            first: "written first".into(),
            json: Json(BTreeMap::from([(vec![1], 1)])),
        };
        same_write(&json.mutation(), now);
        let long_key = Owned {
            id: "o".into(),
            expires_at: now + TimeDelta::hours(1),
            note: None,
            views: 1,
            outside: String::new(),
            items: BTreeMap::from([
                ("a".to_owned(), "first".to_owned()),
                ("k".repeat(MAX_QUALIFIER_BYTES + 1), String::new()),
            ]),
        };
        same_write(&long_key.mutation(), now);
        // After every cell: over Bigtable's mutations per row.
        let many = Owned {
            items: (0..=MAX_MUTATIONS_PER_REQUEST)
                .map(|i| (i.to_string(), String::new()))
                .collect(),
            ..long_key
        };
        same_write(&many.mutation(), now);
    }

    /// Rows after rows into one buffer, the value buffer reused: the
    /// request prost would encode from the same entries.
    #[test]
    fn consecutive_rows_make_the_request_prost_would_encode() {
        let now = now();
        let (mut out, mut staged) = (Vec::new(), Vec::new());
        let mut entries = Vec::new();
        for i in 0..20 {
            let row = plain(i % 7, now);
            let m = row.mutation().build_checked("t", now).unwrap();
            row.mutation()
                .encode_checked("t", now.timestamp_micros(), &mut out, &mut staged)
                .unwrap();
            entries.push(Entry {
                row_key: m.row_key,
                mutations: m.mutations,
                ..Entry::default()
            });
        }
        let expected = MutateRowsRequest {
            entries,
            ..MutateRowsRequest::default()
        };
        assert!(out == expected.encode_to_vec());
    }
}
