//! The predicates of conditional writes (`CheckAndMutateRow`), built on the
//! typed reader's rules: a predicate sees what a read at the same "now"
//! would show (only cells visible under the policy, the newest version of
//! each column), never an expired cell garbage collection has not removed
//! yet. Values are compared as bytes (a value range closed at both ends on
//! the field's own encoding), never through a regular expression.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};

use crate::model::codec::CellCodec;
use crate::model::error::{CodecError, Error, Result};
use crate::model::filter::{chain, families_filter, filter, one_column};
use crate::model::row::BigtableRow;
use crate::model::scan::RawCell;
use crate::model::schema::Schema;
use crate::proto::{
    row_filter::{Condition as Branch, Filter},
    value_range::{EndValue, StartValue},
    RowFilter, TimestampRange, ValueRange,
};

/// A typed handle on one stored field of `T`: what a condition is built
/// from. `#[derive(BigtableRow)]` generates one per stored field as an
/// associated const named after it (`Lease::OWNER` for `owner`); `V` is the
/// field's type, or `Option`'s inner type.
///
/// ```
/// use bigtable_ttl::BigtableRow;
/// use chrono::{DateTime, Utc};
///
/// #[derive(BigtableRow)]
/// #[bigtable(table = "leases", family = "l")]
/// struct Lease {
///     #[bigtable(key)]
///     name: String,
///     #[ttl(expire_at)]
///     expires_at: DateTime<Utc>,
///     owner: String,
/// }
///
/// // Holds when the live `owner` is exactly "worker-7".
/// let mine = Lease::OWNER.equals(&"worker-7".to_owned());
/// assert_eq!(mine.field(), "owner");
/// ```
pub struct Field<T, V> {
    column: usize,
    types: PhantomData<fn() -> (T, V)>,
}

impl<T, V> Clone for Field<T, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, V> Copy for Field<T, V> {}

impl<T, V> std::fmt::Debug for Field<T, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Field")
            .field("column", &self.column)
            .finish()
    }
}

impl<T, V> Field<T, V> {
    /// Column `column` of `T::SCHEMA.columns`; what the derive calls. No
    /// bounds: a field without a codec is reported once, where it is stored.
    #[doc(hidden)]
    #[must_use]
    pub const fn new(column: usize) -> Self {
        Self {
            column,
            types: PhantomData,
        }
    }

    /// Its index in `T::SCHEMA.columns`.
    pub(crate) fn index(self) -> usize {
        self.column
    }
}

impl<T: BigtableRow, V: CellCodec> Field<T, V> {
    /// The condition "the field's live value is exactly `value`": its newest
    /// visible cell holds `value`'s encoding, byte for byte.
    #[must_use]
    pub fn equals(&self, value: &V) -> Condition<T> {
        Condition {
            column: self.column,
            expected: value.encode(),
            row: PhantomData,
        }
    }

    /// The field's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        T::SCHEMA.columns[self.column].field
    }
}

/// A condition on a row's live value, for `Table::put_if` and
/// `Table::delete_if`: made by [`Field::equals`].
pub struct Condition<T> {
    column: usize,
    /// The field's encoding of the expected value, or why it has none.
    expected: std::result::Result<Vec<u8>, CodecError>,
    row: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Condition<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condition")
            .field("column", &self.column)
            .field("expected", &self.expected)
            .finish()
    }
}

impl<T: BigtableRow> Condition<T> {
    /// The field the condition is on.
    #[must_use]
    pub fn field(&self) -> &'static str {
        T::SCHEMA.columns[self.column].field
    }

    /// The predicate at `now`: matches when the field's newest visible cell
    /// holds exactly the expected bytes.
    ///
    /// # Errors
    /// [`Error::Encode`] when the expected value did not encode.
    pub(crate) fn predicate(&self, now: DateTime<Utc>) -> Result<RowFilter> {
        let bytes = self.expected.clone().map_err(|source| Error::Encode {
            field: self.field(),
            source,
        })?;
        let column = &T::SCHEMA.columns[self.column];
        Ok(chain(vec![
            one_column(column.family, column.qualifier.as_bytes()),
            visible(T::SCHEMA, now),
            filter(Filter::CellsPerColumnLimitFilter(1)),
            exactly(bytes),
        ]))
    }
}

/// Matches when column `family:qualifier` has a cell visible at `now` under
/// `schema`'s policy.
#[must_use]
pub(crate) fn live_column(
    schema: &Schema,
    family: &str,
    qualifier: &[u8],
    now: DateTime<Utc>,
) -> RowFilter {
    chain(vec![one_column(family, qualifier), visible(schema, now)])
}

/// Matches when the row has a cell the typed reader would show at `now`:
/// the read filter itself (the struct's families, the policy's timestamp
/// range, the newest version of each column), without the families of map
/// fields when their entries alone do not make a row.
#[must_use]
pub(crate) fn live_row(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    families_filter(schema, schema.liveness_families(), now)
}

/// Matches when the row still holds exactly `cells` (the newest visible
/// version of each of its columns, as read at `now`; map entries left out): each of those
/// columns' newest visible cell has the same timestamp and value, and no
/// declared column without a cell in `cells` has a visible cell. Any write
/// to the row in between (a put, another re-time) makes it fail.
#[must_use]
pub(crate) fn unchanged(schema: &Schema, cells: &[RawCell], now: DateTime<Utc>) -> RowFilter {
    let mut all = Vec::new();
    let live = |family: &str, qualifier: &[u8], rest: Vec<RowFilter>| {
        let mut parts = vec![one_column(family, qualifier), visible(schema, now)];
        parts.extend(rest);
        chain(parts)
    };
    // Map entries are never rewritten by what this guards (re-times and
    // updates leave them be), and a map may hold thousands.
    for cell in cells
        .iter()
        .filter(|c| schema.map_index(&c.family).is_none())
    {
        all.push(live(
            &cell.family,
            &cell.qualifier,
            vec![
                filter(Filter::CellsPerColumnLimitFilter(1)),
                filter(Filter::TimestampRangeFilter(TimestampRange {
                    start_timestamp_micros: cell.timestamp_micros,
                    end_timestamp_micros: cell.timestamp_micros + 1_000,
                })),
                exactly(cell.value.clone()),
            ],
        ));
    }
    let shadow = schema
        .written_at
        .map(|s| (s.family, s.qualifier.as_bytes()));
    let declared = schema
        .columns
        .iter()
        .map(|c| (c.family, c.qualifier.as_bytes()))
        .chain(shadow);
    for (family, qualifier) in declared {
        if !cells
            .iter()
            .any(|c| c.family == family && c.qualifier == qualifier)
        {
            all.push(not(live(family, qualifier, Vec::new())));
        }
    }
    and(all)
}

/// Cells whose value is exactly `bytes`: a value range closed at both ends
/// (never a regular expression, so no byte is special). The empty value is
/// `[empty, "\0")`, since an empty end may be read as "no end".
fn exactly(bytes: Vec<u8>) -> RowFilter {
    let end = if bytes.is_empty() {
        EndValue::EndValueOpen(vec![0])
    } else {
        EndValue::EndValueClosed(bytes.clone())
    };
    filter(Filter::ValueRangeFilter(ValueRange {
        start_value: Some(StartValue::StartValueClosed(bytes)),
        end_value: Some(end),
    }))
}

/// Matches when every one of `filters` matches (nested conditions).
fn and(filters: Vec<RowFilter>) -> RowFilter {
    filters
        .into_iter()
        .rev()
        .fold(pass_all(), |then, predicate| {
            filter(Filter::Condition(Box::new(Branch {
                predicate_filter: Some(Box::new(predicate)),
                true_filter: Some(Box::new(then)),
                false_filter: Some(Box::new(block_all())),
            })))
        })
}

/// Matches when `predicate` does not.
fn not(predicate: RowFilter) -> RowFilter {
    filter(Filter::Condition(Box::new(Branch {
        predicate_filter: Some(Box::new(predicate)),
        true_filter: Some(Box::new(block_all())),
        false_filter: Some(Box::new(pass_all())),
    })))
}

fn pass_all() -> RowFilter {
    filter(Filter::PassAllFilter(true))
}

fn block_all() -> RowFilter {
    filter(Filter::BlockAllFilter(true))
}

/// The cells visible at `now` under `schema`'s policy.
fn visible(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    filter(Filter::TimestampRangeFilter(TimestampRange {
        start_timestamp_micros: schema.policy.visible_from(now),
        end_timestamp_micros: 0,
    }))
}
