//! Turning a value into the `Mutation`s that write it.
//!
//! Every `SetCell` carries an explicit, whole-millisecond timestamp computed by
//! the policy: there is no way to build one that leaves it to the server. Each
//! written column is first cleared (`DeleteFromColumn`, all versions) in the
//! same atomic row mutation, so the value read back is the last one written,
//! whatever the TTLs of earlier writes.

use std::marker::PhantomData;

use chrono::{DateTime, TimeDelta, Timelike, Utc};

use crate::model::codec::CellCodec;
use crate::model::entry::{EncodedEntry, EntryEncoder, PendingEntry};
use crate::model::error::{self, CodecError, Error, Result, RowLimit};
use crate::model::field::FieldError;
use crate::model::key::KeyPart;
use crate::model::limits::{
    MAX_CELL_BYTES, MAX_MUTATIONS_PER_REQUEST, MAX_QUALIFIER_BYTES, MAX_ROW_BYTES,
};
use crate::model::liveness::marker_value;
use crate::model::policy::{from_micros, millis_floor, Expiry, Policy};
use crate::model::proto::{mutation, mutation::Mutation as M, Mutation};
use crate::model::row::{BigtableRow, CellSink, MutationBuilder, MutationOut};
use crate::model::schema::{window_mark, Column, Schema, WhenAbsent, LEGACY_ROW_MARKER};

/// The mutations of one row write, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct RowMutation {
    /// The row key.
    pub row_key: Vec<u8>,
    /// The mutations, applied atomically and in order: Bigtable's v2
    /// messages, handed out by the raw data layer as its own `Mutation`s
    /// ([`crate::data::mutations_of`], `data::Entry::from`).
    pub(crate) mutations: Vec<Mutation>,
    /// The timestamp of the row-level cells (µs).
    pub timestamp_micros: i64,
    /// When the row expires.
    pub expires_at: DateTime<Utc>,
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
        let (row_key, expiry, row_ts) = self.head(now)?;
        let shadow_mutations = if schema.written_at.is_some() { 2 } else { 0 };
        let mut mutations =
            Vec::with_capacity(2 * schema.columns.len() + schema.maps.len() + shadow_mutations + 2);
        self.write_mutations(now, row_ts, MutationOut::values(&mut mutations))?;
        Ok(RowMutation {
            row_key,
            mutations,
            timestamp_micros: row_ts,
            expires_at: expires_at(schema.policy, expiry, row_ts)?,
        })
    }

    /// The write at `now` encoded at the end of `out` as one entry of a
    /// `MutateRowsRequest` (field and length prefix included), the same
    /// bytes as [`MutationBuilder::build_checked`]'s mutations in an
    /// `Entry` would be, without building them; `staged` is a buffer for
    /// cell values, kept from row to row. Nothing is appended when it
    /// fails.
    ///
    /// # Errors
    /// As [`MutationBuilder::build_checked`].
    pub(crate) fn encode_checked(
        &self,
        table: &str,
        now: DateTime<Utc>,
        out: &mut Vec<u8>,
        staged: &mut Vec<u8>,
    ) -> Result<EncodedRow> {
        let start = out.len();
        let encoded = self.encode(table, now, out, staged);
        if encoded.is_err() {
            out.truncate(start);
        }
        encoded
    }

    fn encode(
        &self,
        table: &str,
        now: DateTime<Utc>,
        out: &mut Vec<u8>,
        staged: &mut Vec<u8>,
    ) -> Result<EncodedRow> {
        let in_table = |e: Error| e.in_table(table);
        let (row_key, expiry, row_ts) = self.head(now).map_err(in_table)?;
        let mut entry = PendingEntry::begin(out, &row_key);
        let encoder = EntryEncoder {
            out,
            staged,
            entry: &mut entry,
        };
        self.write_mutations(now, row_ts, MutationOut::Wire(encoder))
            .map_err(in_table)?;
        check_row_size(table, &row_key, entry.mutations, entry.cell_bytes)?;
        let expires_at = expires_at(T::SCHEMA.policy, expiry, row_ts).map_err(in_table)?;
        Ok(EncodedRow {
            entry: entry.finish(out),
            row_key,
            timestamp_micros: row_ts,
            expires_at,
        })
    }

    /// The row key, the expiry asked for and the row's timestamp: what a
    /// write knows before its first cell.
    #[inline]
    fn head(&self, now: DateTime<Utc>) -> Result<(Vec<u8>, Expiry, i64)> {
        let schema = T::SCHEMA;
        let policy = schema.policy;
        let row_key = self.row.row_key()?;
        let expiry = self.expiry.unwrap_or_else(|| self.row.expiry());
        if expiry == Expiry::PolicyDefault && policy == Policy::CellExpiry {
            return Err(Error::from(error::MissingExpiry {
                table: Some(schema.table.to_owned()),
            }));
        }
        let row_ts = policy.cell_timestamp(now, expiry)?;
        Ok((row_key, expiry, row_ts))
    }

    /// Every mutation of the write, in order, into `out`: the owned family
    /// cleared, each column, the shadow column, the row marker.
    #[inline]
    fn write_mutations(&self, now: DateTime<Utc>, row_ts: i64, out: MutationOut<'_>) -> Result<()> {
        let schema = T::SCHEMA;
        let mut sink = CellSink {
            now,
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
            let written = from_micros(millis_floor(now)?)?;
            clear_column(out, schema, shadow.family, shadow.qualifier.as_bytes());
            out.stage(&written).map_err(|source| {
                Error::from(error::Encode {
                    field: "written_at",
                    source,
                })
            })?;
            out.set_staged(shadow.family, shadow.qualifier.as_bytes(), row_ts);
        }
        write_marker(out, schema, row_ts, expiry_ts(schema, now, row_ts));
        Ok(())
    }
}

/// The timestamp carrying the expiry of a row written whole at `now` with
/// `row_ts`: the earliest of its required columns' (a required field with a
/// shorter TTL of its own is stamped earlier; [`CellSink`] clamps every
/// field to the row's).
pub(crate) fn expiry_ts(schema: &Schema, now: DateTime<Utc>, row_ts: i64) -> i64 {
    schema
        .columns
        .iter()
        .filter(|c| c.is_required())
        .filter_map(|c| c.ttl)
        .filter_map(|ttl| schema.policy.cell_timestamp(now, Expiry::Ttl(ttl)).ok())
        .fold(row_ts, i64::min)
}

/// A row written by [`MutationBuilder::encode_checked`].
#[derive(Debug)]
pub(crate) struct EncodedRow {
    /// Its entry in the request.
    pub(crate) entry: EncodedEntry,
    /// The row key.
    pub(crate) row_key: Vec<u8>,
    /// The timestamp of the row-level cells (µs).
    pub(crate) timestamp_micros: i64,
    /// When the row expires.
    pub(crate) expires_at: DateTime<Utc>,
}

/// `policy.expiry_of(row_ts)`, without converting back from microseconds
/// when the write named its expiry: that instant truncated to the
/// millisecond is the same (whole-millisecond policies, which the derive's
/// always are).
#[inline]
fn expires_at(policy: Policy, expiry: Expiry, row_ts: i64) -> Result<DateTime<Utc>> {
    if let Expiry::At(at) = expiry {
        let nanos = at.timestamp_subsec_nanos();
        let whole_ms = policy.gc_max_age().subsec_nanos() % 1_000_000 == 0;
        // Not a leap second (chrono's nanos past 1e9).
        if whole_ms && nanos < 1_000_000_000 {
            if let Some(t) = at.naive_utc().with_nanosecond(nanos - nanos % 1_000_000) {
                let t = t.and_utc();
                debug_assert!(policy.expiry_of(row_ts).is_ok_and(|e| e == t));
                return Ok(t);
            }
        }
    }
    policy.expiry_of(row_ts)
}

impl<T: BigtableRow> CellSink<'_, T> {
    /// Write column `index` (of [`crate::Schema::columns`]) with `value`.
    ///
    /// # Errors
    /// [`FieldError::Column`] when the value does not encode,
    /// [`FieldError::TooLarge`] over [`MAX_CELL_BYTES`].
    #[inline]
    pub fn required<V: CellCodec>(&mut self, index: usize, value: &V) -> Result<(), FieldError> {
        match self.out.stage(value) {
            Ok(len) => self.push(index, Some(len)),
            Err(source) => Err(FieldError::Column {
                column: index,
                source,
            }),
        }
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
        match value {
            Some(value) => self.required(index, value),
            None => self.push(index, None),
        }
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

    /// Column `index`: cleared, then set to the value just staged (its
    /// length `staged`), if any.
    #[inline]
    fn push(&mut self, index: usize, staged: Option<usize>) -> Result<(), FieldError> {
        let column = &T::SCHEMA.columns[index];
        clear_column(
            &mut self.out,
            T::SCHEMA,
            column.family,
            column.qualifier.as_bytes(),
        );
        let Some(len) = staged else {
            return Ok(());
        };
        if len > MAX_CELL_BYTES {
            return Err(FieldError::TooLarge { column: index, len });
        }
        let ts = match column.ttl {
            // A field never outlives its row.
            Some(ttl) => T::SCHEMA
                .policy
                .cell_timestamp(self.now, Expiry::Ttl(ttl))?
                .min(self.row_ts),
            None => self.row_ts,
        };
        self.out
            .set_staged(column.family, column.qualifier.as_bytes(), ts);
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

impl<'a> MutationOut<'a> {
    /// Into `mutations`, as `Mutation` values.
    pub(crate) fn values(mutations: &'a mut Vec<Mutation>) -> Self {
        MutationOut::Values {
            mutations,
            staged: Vec::new(),
        }
    }

    /// `DeleteFromColumn`: every version of one column.
    #[inline]
    pub(crate) fn delete_column(&mut self, family: &str, qualifier: &[u8]) {
        match self {
            MutationOut::Values { mutations, .. } => {
                mutations.push(delete_column(family, qualifier));
            }
            MutationOut::Wire(wire) => wire.delete_column(family, qualifier),
        }
    }

    /// `DeleteFromFamily`: every cell of one family.
    #[inline]
    pub(crate) fn delete_family(&mut self, family: &str) {
        match self {
            MutationOut::Values { mutations, .. } => mutations.push(delete_family(family)),
            MutationOut::Wire(wire) => wire.delete_family(family),
        }
    }

    /// `SetCell` of `value`.
    #[inline]
    pub(crate) fn set_cell(&mut self, family: &str, qualifier: &[u8], ts: i64, value: &[u8]) {
        match self {
            MutationOut::Values { mutations, .. } => {
                mutations.push(set_cell(family, qualifier, ts, value.to_vec()));
            }
            MutationOut::Wire(wire) => wire.set_cell(family, qualifier, ts, value),
        }
    }

    /// Encode `value` as the next cell's; its length comes back. The cell
    /// is written by [`MutationOut::set_staged`].
    #[inline]
    pub(crate) fn stage<V: CellCodec>(&mut self, value: &V) -> Result<usize, CodecError> {
        match self {
            MutationOut::Values { staged, .. } => {
                *staged = value.encode()?;
                Ok(staged.len())
            }
            MutationOut::Wire(wire) => wire.stage(|out| value.encode_into(out)),
        }
    }

    /// `SetCell` of the value last staged.
    #[inline]
    pub(crate) fn set_staged(&mut self, family: &str, qualifier: &[u8], ts: i64) {
        match self {
            MutationOut::Values { mutations, staged } => {
                let value = std::mem::take(staged);
                mutations.push(set_cell(family, qualifier, ts, value));
            }
            MutationOut::Wire(wire) => wire.set_staged(family, qualifier, ts),
        }
    }

    /// [`MutationOut::set_staged`] with a qualifier already owned.
    #[inline]
    pub(crate) fn set_staged_owned(&mut self, family: &str, qualifier: Vec<u8>, ts: i64) {
        match self {
            MutationOut::Values { mutations, staged } => {
                let value = std::mem::take(staged);
                mutations.push(set_cell_owned(family, qualifier, ts, value));
            }
            MutationOut::Wire(wire) => wire.set_staged(family, &qualifier, ts),
        }
    }
}

/// The struct's row marker of a whole-row write at `row_ts`, its expiry
/// carried by `expiry_ts` (see [`crate::liveness`]), replacing any earlier
/// one.
#[inline]
pub(crate) fn push_marker(
    mutations: &mut Vec<Mutation>,
    schema: &Schema,
    row_ts: i64,
    expiry_ts: i64,
) {
    write_marker(
        &mut MutationOut::values(mutations),
        schema,
        row_ts,
        expiry_ts,
    );
}

#[inline]
fn write_marker(out: &mut MutationOut<'_>, schema: &Schema, row_ts: i64, expiry_ts: i64) {
    let family = schema.marker_family();
    clear_column(out, schema, family, schema.marker);
    match marker_value(row_ts, expiry_ts) {
        None => out.set_cell(family, schema.marker, row_ts, &[]),
        Some(value) => out.set_cell(family, schema.marker, row_ts, &value),
    }
}

/// Clear column `family:qualifier` before it is written again: a
/// `DeleteFromColumn`, unless `family` is the struct's owned family, which
/// a whole-row write clears at once ([`Schema::owns_family`]).
#[inline]
fn clear_column(out: &mut MutationOut<'_>, schema: &Schema, family: &str, qualifier: &[u8]) {
    if !(schema.owns_family && family == schema.marker_family()) {
        out.delete_column(family, qualifier);
    }
}

/// A window mark's value (see `crate::model::counter`).
const WINDOW_MARK_VALUE: [u8; 8] = 0_i64.to_be_bytes();

/// How far before the counter's timestamp its window mark's is (µs).
pub(crate) const MARK_LEAD_MICROS: i64 = 1_000;

/// The mutations writing the window mark of `column` (a counter; see
/// `crate::model::counter`) for a
/// counter cell at `counter_ts`, replacing any other version.
pub(crate) fn mark_window(column: &Column, counter_ts: i64) -> [Mutation; 2] {
    let mark = window_mark(column.qualifier);
    [
        delete_column(column.family, &mark),
        set_cell(
            column.family,
            &mark,
            counter_ts - MARK_LEAD_MICROS,
            WINDOW_MARK_VALUE.to_vec(),
        ),
    ]
}

/// `DeleteFromColumn`: every version of one column.
#[inline]
pub(crate) fn delete_column(family: &str, qualifier: &[u8]) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::DeleteFromColumn(
            mutation::DeleteFromColumn {
                family_name: family.to_owned(),
                column_qualifier: qualifier.to_vec(),
                time_range: None,
            },
        )),
    }
}

/// `SetCell` with an explicit timestamp: the only way this library writes
/// a cell.
#[inline]
pub(crate) fn set_cell(
    family: &str,
    qualifier: &[u8],
    timestamp_micros: i64,
    value: Vec<u8>,
) -> Mutation {
    set_cell_owned(family, qualifier.to_vec(), timestamp_micros, value)
}

/// `SetCell` with an explicit timestamp and a qualifier already owned.
#[inline]
pub(crate) fn set_cell_owned(
    family: &str,
    qualifier: Vec<u8>,
    timestamp_micros: i64,
    value: Vec<u8>,
) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: family.to_owned(),
            column_qualifier: qualifier,
            timestamp_micros,
            value,
        })),
    }
}

/// `DeleteFromFamily`: every cell of one family (a map field's entries).
#[inline]
pub(crate) fn delete_family(family: &str) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::DeleteFromFamily(
            mutation::DeleteFromFamily {
                family_name: family.to_owned(),
            },
        )),
    }
}

/// The mutations deleting every cell `schema`'s struct owns in a row, and
/// nothing else (see the guide's "Several structs in one table"): another
/// struct's row under the same key stays. One `DeleteFromFamily` for the
/// first family when the struct owns it, else one `DeleteFromColumn` for
/// each column, counter window mark, the shadow column, the marker and the
/// one-byte marker of earlier versions (which no struct can tell its own);
/// one `DeleteFromFamily` for each map's family.
#[must_use]
pub(crate) fn delete_owned(schema: &Schema) -> Vec<Mutation> {
    let first = schema.marker_family();
    let owned = |family: &str| schema.owns_family && family == first;
    let mut mutations = Vec::with_capacity(2 * schema.columns.len() + schema.maps.len() + 3);
    if schema.owns_family {
        mutations.push(delete_family(first));
    } else {
        mutations.push(delete_column(first, schema.marker));
        mutations.push(delete_column(first, LEGACY_ROW_MARKER));
    }
    for column in schema.columns.iter().filter(|c| !owned(c.family)) {
        mutations.push(delete_column(column.family, column.qualifier.as_bytes()));
        if column.when_absent == WhenAbsent::ReadsZero {
            mutations.push(delete_column(column.family, &window_mark(column.qualifier)));
        }
    }
    if let Some(shadow) = schema.written_at.filter(|s| !owned(s.family)) {
        mutations.push(delete_column(shadow.family, shadow.qualifier.as_bytes()));
    }
    mutations.extend(schema.maps.iter().map(|m| delete_family(m.family)));
    mutations
}

/// Refuse a row Bigtable would refuse as a whole (over its row limits),
/// before anything is sent.
pub(crate) fn check_row(table: &str, m: &RowMutation) -> Result<()> {
    let bytes: usize = m
        .mutations
        .iter()
        .map(|m| match &m.mutation {
            Some(M::SetCell(c)) => c.value.len() + c.column_qualifier.len(),
            _ => 0,
        })
        .sum();
    check_row_size(table, &m.row_key, m.mutations.len(), bytes)
}

/// Refuse a row of `mutations` mutations whose cells' values and
/// qualifiers add up to `bytes` when Bigtable would refuse it.
fn check_row_size(table: &str, row_key: &[u8], mutations: usize, bytes: usize) -> Result<()> {
    let too_large = |limit: RowLimit| {
        Error::from(error::RowTooLarge {
            table: table.to_owned(),
            row_key: row_key.to_vec(),
            limit,
        })
    };
    if mutations > MAX_MUTATIONS_PER_REQUEST {
        return Err(too_large(RowLimit::Mutations {
            count: mutations,
            max: MAX_MUTATIONS_PER_REQUEST,
        }));
    }
    if bytes > MAX_ROW_BYTES {
        return Err(too_large(RowLimit::Bytes {
            bytes,
            max: MAX_ROW_BYTES,
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::error::Error;
    use crate::model::proto::{mutate_rows_request::Entry, mutation, Mutation};

    fn entry(key: &str, cells: usize, value: usize) -> Entry {
        Entry {
            row_key: key.as_bytes().to_vec(),
            mutations: (0..cells)
                .map(|_| Mutation {
                    mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
                        family_name: "c".into(),
                        column_qualifier: b"q".to_vec(),
                        timestamp_micros: 0,
                        value: vec![0; value],
                    })),
                })
                .collect(),
            ..Entry::default()
        }
    }

    #[test]
    fn rows_over_the_limits_are_refused() {
        let big = RowMutation {
            row_key: b"k".to_vec(),
            mutations: entry("k", 3, 0).mutations,
            timestamp_micros: 0,
            expires_at: chrono::DateTime::UNIX_EPOCH,
        };
        check_row("t", &big).unwrap();
        let many = RowMutation {
            mutations: entry("k", MAX_MUTATIONS_PER_REQUEST + 1, 0).mutations,
            ..big
        };
        assert!(matches!(
            check_row("t", &many),
            Err(Error::RowTooLarge { .. })
        ));
    }
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
    use crate::model::proto::{mutate_rows_request::Entry, MutateRowsRequest};

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
        let encoded = builder.encode_checked("renamed", now, &mut out, &mut staged);
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
                assert_eq!(row.row_key, m.row_key);
                assert_eq!(row.timestamp_micros, m.timestamp_micros);
                assert_eq!(row.expires_at, m.expires_at);
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
                .encode_checked("t", now, &mut out, &mut staged)
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
