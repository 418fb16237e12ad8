//! The `Mutation`s that write a value, and where they go (`MutationOut`:
//! values, or the bulk writer's wire bytes). The builders that fill them,
//! `MutationBuilder` and `CellSink`, live in `row.rs` with their methods,
//! beside the trait they build for: the trait names them and they name it.
//!
//! Every `SetCell` carries an explicit, whole-millisecond timestamp computed by
//! the policy: there is no way to build one that leaves it to the server. Each
//! written column is first cleared (`DeleteFromColumn`, all versions) in the
//! same atomic row mutation, so the value read back is the last one written,
//! whatever the TTLs of earlier writes.

use chrono::{DateTime, Timelike, Utc};

use crate::model::codec::CellCodec;
use crate::model::entry::{EncodedEntry, EntryEncoder};
use crate::model::error::{self, CodecError, Error, Result, RowLimit};
use crate::model::limits::{MAX_MUTATIONS_PER_REQUEST, MAX_ROW_BYTES};
use crate::model::liveness::marker_value;
use crate::model::policy::{Expiry, Policy};
use crate::model::proto::{mutation, mutation::Mutation as M, Mutation};
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

/// The timestamp carrying the expiry of a row written whole at `now_ms` with
/// `row_ts`: the earliest of its required columns' (a required field with a
/// shorter TTL of its own is stamped earlier; [`CellSink`] clamps every
/// field to the row's).
///
/// Always inlined in optimized builds: with a struct's schema, a constant, the search over its
/// columns folds (for most structs to `row_ts`).
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
#[allow(clippy::inline_always)]
pub(crate) fn expiry_ts(schema: &Schema, now_ms: i64, row_ts: i64) -> i64 {
    schema
        .columns
        .iter()
        .filter(|c| c.is_required())
        .filter_map(|c| c.ttl)
        .filter_map(|ttl| {
            schema
                .policy
                .cell_timestamp_at(now_ms, Expiry::Ttl(ttl))
                .ok()
        })
        .fold(row_ts, i64::min)
}

/// A row written by [`MutationBuilder::encode_checked`].
#[derive(Debug)]
pub(crate) struct EncodedRow {
    /// Its entry in the request.
    pub(crate) entry: EncodedEntry,
    /// The timestamp of the row-level cells (µs).
    pub(crate) timestamp_micros: i64,
    /// The expiry the write asked for.
    pub(crate) expiry: Expiry,
    pub(crate) policy: Policy,
}

impl EncodedRow {
    /// When the row expires: the bulk writer's `send` never asks, `put_all`
    /// reports it. Checked representable when the row was encoded.
    ///
    /// # Errors
    /// None in fact (see [`Policy::check_expiry_of`]); as [`expires_at`].
    pub(crate) fn expires_at(&self) -> Result<DateTime<Utc>> {
        expires_at(self.policy, self.expiry, self.timestamp_micros)
    }
}

/// `policy.expiry_of(row_ts)`, without converting back from microseconds
/// when the write named its expiry: that instant truncated to the
/// millisecond is the same (whole-millisecond policies, which the derive's
/// always are).
#[inline]
pub(crate) fn expires_at(policy: Policy, expiry: Expiry, row_ts: i64) -> Result<DateTime<Utc>> {
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
    ///
    /// Always inlined in optimized builds, as [`MutationOut::set_value`].
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    #[allow(clippy::inline_always)]
    pub(crate) fn set_cell(&mut self, family: &str, qualifier: &[u8], ts: i64, value: &[u8]) {
        match self {
            MutationOut::Values { mutations, .. } => {
                push_cell(mutations, family, qualifier, ts, value);
            }
            MutationOut::Wire(wire) => wire.set_cell(family, qualifier, ts, value),
        }
    }

    /// Encode `value` as the next cell's; its length comes back. The cell
    /// is written by [`MutationOut::set_staged_owned`].
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

    /// `SetCell` of `value`, encoded where it goes; its length comes back.
    ///
    /// Always inlined in optimized builds: into a derived struct's `write_cells`, where the
    /// family and qualifier are constants the bulk writer's encoding folds
    /// ([`EntryEncoder::set_encoded`]).
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    #[allow(clippy::inline_always)]
    pub(crate) fn set_value<V: CellCodec>(
        &mut self,
        family: &str,
        qualifier: &[u8],
        ts: i64,
        value: &V,
    ) -> Result<usize, CodecError> {
        match self {
            MutationOut::Values { mutations, .. } => {
                push_value(mutations, family, qualifier, ts, value)
            }
            MutationOut::Wire(wire) => {
                wire.set_encoded(family, qualifier, ts, |out| value.encode_into(out))
            }
        }
    }

    /// `SetCell` of the value last staged ([`MutationOut::stage`]), its
    /// qualifier owned.
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

/// `SetCell` of `value`, as a `Mutation`. Out of line, as [`push_value`].
#[inline(never)]
fn push_cell(mutations: &mut Vec<Mutation>, family: &str, qualifier: &[u8], ts: i64, value: &[u8]) {
    mutations.push(set_cell(family, qualifier, ts, value.to_vec()));
}

/// `SetCell` of `value`, encoded, as a `Mutation`; its length comes back.
/// Out of line: the cell writes are inlined for the bulk writer's
/// encoding, and this branch inlined beside it at every column made the
/// derive's `build` about 4 % slower (criterion, `codec`).
#[inline(never)]
fn push_value<V: CellCodec>(
    mutations: &mut Vec<Mutation>,
    family: &str,
    qualifier: &[u8],
    ts: i64,
    value: &V,
) -> Result<usize, CodecError> {
    let value = value.encode()?;
    let len = value.len();
    mutations.push(set_cell(family, qualifier, ts, value));
    Ok(len)
}

/// The struct's row marker at `row_ts` of a write that is not a whole-row
/// one (a re-time, an update, an increment), its expiry carried by
/// `expiry_ts` (see [`crate::liveness`]), replacing any earlier one.
#[inline]
pub(crate) fn push_marker(
    mutations: &mut Vec<Mutation>,
    schema: &Schema,
    row_ts: i64,
    expiry_ts: i64,
) {
    if schema.owns_family {
        // No `DeleteFromFamily` came first, as in a whole-row write: the
        // marker's versions are deleted here, those expired already too.
        mutations.push(delete_column(schema.marker_family(), schema.marker));
    }
    write_marker(
        &mut MutationOut::values(mutations),
        schema,
        schema.fingerprint().as_bytes(),
        row_ts,
        expiry_ts,
    );
}

/// The struct's row marker at `row_ts`, its expiry carried by `expiry_ts`:
/// its value that timestamp when it differs, else `fingerprinted`, the
/// struct's fingerprint ([`Schema::marker_fingerprint`]; a whole-row write
/// passes it computed when the struct compiled).
///
/// Always inlined in optimized builds: its schema is a constant of the struct's, and so are
/// its family, qualifier and, most often, its value.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
#[allow(clippy::inline_always)]
pub(crate) fn write_marker(
    out: &mut MutationOut<'_>,
    schema: &Schema,
    fingerprinted: &[u8],
    row_ts: i64,
    expiry_ts: i64,
) {
    let family = schema.marker_family();
    clear_column(out, schema, family, schema.marker);
    match marker_value(row_ts, expiry_ts) {
        None => out.set_cell(family, schema.marker, row_ts, fingerprinted),
        Some(value) => out.set_cell(family, schema.marker, row_ts, &value),
    }
}

/// Clear column `family:qualifier` before it is written again: a
/// `DeleteFromColumn`, unless `family` is the struct's owned family, which
/// a whole-row write clears at once ([`Schema::owns_family`]).
///
/// Always inlined in optimized builds: with a struct's schema, a constant, the test folds
/// (left out of line, it compared the names at every column).
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
#[allow(clippy::inline_always)]
pub(crate) fn clear_column(
    out: &mut MutationOut<'_>,
    schema: &Schema,
    family: &str,
    qualifier: &[u8],
) {
    if !(schema.owns_family && family == schema.marker_family()) {
        out.delete_column(family, qualifier);
    }
}

/// A window mark's value (see `crate::model::counter`).
pub(crate) const WINDOW_MARK_VALUE: [u8; 8] = 0_i64.to_be_bytes();

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
pub(crate) fn check_row_size(
    table: &str,
    row_key: &[u8],
    mutations: usize,
    bytes: usize,
) -> Result<()> {
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
