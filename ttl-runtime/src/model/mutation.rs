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
use crate::model::error::{CodecError, Error, Result, RowLimit};
use crate::model::field::FieldError;
use crate::model::key::KeyPart;
use crate::model::limits::{
    MAX_CELL_BYTES, MAX_MUTATIONS_PER_REQUEST, MAX_QUALIFIER_BYTES, MAX_ROW_BYTES,
};
use crate::model::policy::{from_micros, millis_floor, Expiry, Policy};
use crate::model::row::{BigtableRow, CellSink, MutationBuilder};
use crate::model::schema::{window_mark, Column, Schema, WhenAbsent, ROW_MARKER};
use crate::proto::{mutation, mutation::Mutation as M, Mutation};

/// The mutations of one row write, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct RowMutation {
    /// The row key.
    pub row_key: Vec<u8>,
    /// The mutations, applied atomically and in order.
    pub mutations: Vec<Mutation>,
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
        let policy = schema.policy;
        let row_key = self.row.row_key()?;
        let expiry = self.expiry.unwrap_or_else(|| self.row.expiry());
        if expiry == Expiry::PolicyDefault && policy == Policy::CellExpiry {
            return Err(Error::MissingExpiry {
                table: Some(schema.table.to_owned()),
            });
        }
        let row_ts = policy.cell_timestamp(now, expiry)?;
        let shadow_mutations = if schema.written_at.is_some() { 2 } else { 0 };
        let mut mutations =
            Vec::with_capacity(2 * schema.columns.len() + schema.maps.len() + shadow_mutations + 2);
        if schema.owns_family {
            mutations.push(delete_family(schema.marker_family()));
        }
        let mut sink = CellSink {
            now,
            row_ts,
            mutations: &mut mutations,
            row: PhantomData,
        };
        if let Err(e) = self.row.write_cells(&mut sink) {
            return Err(e.into_write_error(schema));
        }
        if let Some(shadow) = schema.written_at {
            let written = from_micros(millis_floor(now)?)?;
            clear_column(
                &mut mutations,
                schema,
                shadow.family,
                shadow.qualifier.as_bytes(),
            );
            mutations.push(set_cell(
                shadow.family,
                shadow.qualifier.as_bytes(),
                row_ts,
                written.encode().map_err(|source| Error::Encode {
                    field: "written_at",
                    source,
                })?,
            ));
        }
        push_marker(&mut mutations, schema, row_ts);
        Ok(RowMutation {
            row_key,
            mutations,
            timestamp_micros: row_ts,
            expires_at: expires_at(policy, expiry, row_ts)?,
        })
    }
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
        match value.encode() {
            Ok(bytes) => self.push(index, Some(bytes)),
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
        self.mutations.push(delete_family(family));
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
            let value = value
                .encode()
                .map_err(|source| entry_error(&qualifier, source))?;
            if value.len() > MAX_CELL_BYTES {
                let source = CodecError::Custom(format!(
                    "{} bytes, over Bigtable's cell limit of {MAX_CELL_BYTES} bytes",
                    value.len()
                ));
                return Err(entry_error(&qualifier, source));
            }
            self.mutations
                .push(set_cell_owned(family, qualifier, self.row_ts, value));
        }
        Ok(())
    }

    #[inline]
    fn push(&mut self, index: usize, value: Option<Vec<u8>>) -> Result<(), FieldError> {
        let column = &T::SCHEMA.columns[index];
        clear_column(
            self.mutations,
            T::SCHEMA,
            column.family,
            column.qualifier.as_bytes(),
        );
        let Some(value) = value else {
            return Ok(());
        };
        if value.len() > MAX_CELL_BYTES {
            return Err(FieldError::TooLarge {
                column: index,
                len: value.len(),
            });
        }
        let ts = match column.ttl {
            // A field never outlives its row.
            Some(ttl) => T::SCHEMA
                .policy
                .cell_timestamp(self.now, Expiry::Ttl(ttl))?
                .min(self.row_ts),
            None => self.row_ts,
        };
        self.mutations.push(set_cell(
            column.family,
            column.qualifier.as_bytes(),
            ts,
            value,
        ));
        if column.when_absent == WhenAbsent::ReadsZero {
            // A counter's window mark goes with it (see `model::counter`).
            let [clear, set] = mark_window(column, ts);
            if !(T::SCHEMA.owns_family && column.family == T::SCHEMA.marker_family()) {
                self.mutations.push(clear);
            }
            self.mutations.push(set);
        }
        Ok(())
    }
}

/// The row marker of a whole-row write at `row_ts` (see
/// [`crate::liveness`]), replacing any earlier one.
#[inline]
pub(crate) fn push_marker(mutations: &mut Vec<Mutation>, schema: &Schema, row_ts: i64) {
    let family = schema.marker_family();
    clear_column(mutations, schema, family, ROW_MARKER);
    mutations.push(set_cell(family, ROW_MARKER, row_ts, Vec::new()));
}

/// Clear column `family:qualifier` before it is written again: a
/// `DeleteFromColumn`, unless `family` is the struct's owned family, which
/// a whole-row write clears at once ([`Schema::owns_family`]).
#[inline]
fn clear_column(mutations: &mut Vec<Mutation>, schema: &Schema, family: &str, qualifier: &[u8]) {
    if !(schema.owns_family && family == schema.marker_family()) {
        mutations.push(delete_column(family, qualifier));
    }
}

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
            0_i64.to_be_bytes().to_vec(),
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

/// The mutation that deletes a whole row.
#[must_use]
pub(crate) fn delete_row() -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::DeleteFromRow(
            mutation::DeleteFromRow {},
        )),
    }
}

/// Refuse a row Bigtable would refuse as a whole (over its row limits),
/// before anything is sent.
pub(crate) fn check_row(table: &str, m: &RowMutation) -> Result<()> {
    let too_large = |limit: RowLimit| Error::RowTooLarge {
        table: table.to_owned(),
        row_key: m.row_key.clone(),
        limit,
    };
    if m.mutations.len() > MAX_MUTATIONS_PER_REQUEST {
        return Err(too_large(RowLimit::Mutations {
            count: m.mutations.len(),
            max: MAX_MUTATIONS_PER_REQUEST,
        }));
    }
    let bytes: usize = m
        .mutations
        .iter()
        .map(|m| match &m.mutation {
            Some(M::SetCell(c)) => c.value.len() + c.column_qualifier.len(),
            _ => 0,
        })
        .sum();
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
    use crate::proto::{mutate_rows_request::Entry, mutation, Mutation};

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
