//! The predicates of conditional writes (`CheckAndMutateRow`), built on the
//! typed reader's rules: a predicate sees what a read at the same "now"
//! would show (only cells visible under the policy, the newest version of
//! each column), never an expired cell garbage collection has not removed
//! yet. Values are compared as bytes (a value range closed at both ends on
//! the field's own encoding), never through a regular expression.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};

use crate::model::codec::CellCodec;
use crate::model::error::{self, CodecError, Error, Result};
use crate::model::filter::{chain, filter, one_column, only_family};
use crate::model::liveness::{self, Atom, Formula};
use crate::model::proto::{
    column_range::{EndQualifier, StartQualifier},
    row_filter::{Condition as Branch, Filter, Interleave},
    value_range::{EndValue, StartValue},
    ColumnRange, RowFilter, TimestampRange, ValueRange,
};
use crate::model::row::BigtableRow;
use crate::model::row_cells::RowCells;
use crate::model::schema::{Column, Schema, LEGACY_ROW_MARKER, ROW_MARKER_PREFIX};

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

    /// The predicate at `now`: matches when the row is live
    /// ([`crate::liveness`]) and the field's newest visible cell holds
    /// exactly the expected bytes.
    ///
    /// # Errors
    /// [`Error::Encode`] when the expected value did not encode.
    pub(crate) fn predicate(&self, now: DateTime<Utc>) -> Result<RowFilter> {
        let bytes = self.expected.clone().map_err(|source| {
            Error::from(error::Encode {
                field: self.field(),
                source,
            })
        })?;
        let column = &T::SCHEMA.columns[self.column];
        let field = chain(vec![
            one_column(column.family, column.qualifier.as_bytes()),
            visible(T::SCHEMA, now),
            filter(Filter::CellsPerColumnLimitFilter(1)),
            exactly(bytes),
        ]);
        Ok(and(vec![live_row(T::SCHEMA, now), field]))
    }

    /// The predicate of a write judged at `horizon` (`put_if`): the
    /// condition holds there, of a row that is not another struct's at
    /// `now` (a marker expiring in flight hands no row over).
    pub(crate) fn predicate_for_write(
        &self,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
    ) -> Result<RowFilter> {
        Ok(and(vec![
            not(another_structs_row(T::SCHEMA, now)),
            self.predicate(horizon)?,
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

/// Matches when the row is live at `now`: [`liveness::live`] compiled.
#[must_use]
pub(crate) fn live_row(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    compile(schema, now, &liveness::live(schema))
}

/// Matches when a row of `schema` exists at `now`, live or incomplete:
/// what a write that must never overwrite an existing row
/// (`insert_if_absent`) checks, the same answers the typed reader gives
/// ([`liveness::present`] compiled).
#[must_use]
pub(crate) fn present_row(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    compile(schema, now, &liveness::present(schema))
}

/// The predicate that matches a row exactly when `formula` holds of it at
/// `now` (a row holds a cell: a predicate matches when it outputs one).
pub(crate) fn compile(schema: &Schema, now: DateTime<Utc>, formula: &Formula) -> RowFilter {
    let each = |all: &[Formula]| all.iter().map(|f| compile(schema, now, f)).collect();
    match formula {
        Formula::Atom(a) => atom(schema, now, *a),
        Formula::All(all) => and(each(all)),
        Formula::Any(any) => or(each(any)),
        Formula::Not(f) => not(compile(schema, now, f)),
        Formula::If {
            test,
            then,
            otherwise,
        } => filter(Filter::Condition(Box::new(Branch {
            predicate_filter: Some(Box::new(compile(schema, now, test))),
            true_filter: Some(Box::new(compile(schema, now, then))),
            false_filter: Some(Box::new(compile(schema, now, otherwise))),
        }))),
    }
}

/// The predicate that matches a row exactly when `atom` holds of it at
/// `now`. Each column is selected by its exact name, so cells of no
/// declared column never count.
fn atom(schema: &Schema, now: DateTime<Utc>, atom: Atom) -> RowFilter {
    let column = |i: usize| &schema.columns[i];
    match atom {
        Atom::OwnMarker => own_marker(schema, now),
        Atom::MarkerRowLive => {
            // The marker's value is empty or its writer's fingerprint (its
            // own timestamp carries the row's expiry, and it is visible;
            // a fingerprint orders above every timestamp, so the range
            // below holds it) or that timestamp, 8 bytes big-endian, which
            // orders as the number does for the non-negative timestamps
            // Bigtable accepts.
            let row_not_expired = or(vec![
                exactly(Vec::new()),
                filter(Filter::ValueRangeFilter(ValueRange {
                    start_value: Some(StartValue::StartValueClosed(
                        schema.policy.visible_from(now).to_be_bytes().to_vec(),
                    )),
                    end_value: None,
                })),
            ]);
            chain(vec![
                own_marker_columns(schema),
                visible(schema, now),
                filter(Filter::CellsPerColumnLimitFilter(1)),
                row_not_expired,
            ])
        }
        Atom::ForeignMarker => foreign_marker(schema, now),
        Atom::Column(i) => live_column(
            schema,
            column(i).family,
            column(i).qualifier.as_bytes(),
            now,
        ),
        Atom::Expired(i) => {
            let first_visible = schema.policy.visible_from(now);
            if first_visible <= 0 {
                // Nothing has expired at a clock this early (and a range
                // ending at 0 would have no end).
                return block_all();
            }
            chain(vec![
                one_column(column(i).family, column(i).qualifier.as_bytes()),
                filter(Filter::CellsPerColumnLimitFilter(1)),
                filter(Filter::TimestampRangeFilter(TimestampRange {
                    start_timestamp_micros: 0,
                    end_timestamp_micros: first_visible,
                })),
            ])
        }
        Atom::WrittenAt => match schema.written_at {
            Some(shadow) => live_column(schema, shadow.family, shadow.qualifier.as_bytes(), now),
            None => block_all(),
        },
        Atom::Entry => or(schema
            .maps
            .iter()
            .map(|m| chain(vec![only_family(m.family), visible(schema, now)]))
            .collect()),
    }
}

/// Matches when the row carries another struct's marker and not this
/// struct's at `now`: it is not this struct's row (see
/// [`crate::liveness`]).
pub(crate) fn another_structs_row(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    and(vec![
        foreign_marker(schema, now),
        not(own_marker(schema, now)),
    ])
}

/// The struct's own row marker columns: its marker and, in a family it
/// owns, the one-byte marker of earlier versions ([`Schema::is_marker`]).
fn own_marker_columns(schema: &Schema) -> RowFilter {
    let family = schema.marker_family();
    let mut columns = vec![one_column(family, schema.marker)];
    if schema.owns_family {
        columns.push(one_column(family, LEGACY_ROW_MARKER));
    }
    or(columns)
}

/// Matches when the struct's own row marker has a visible cell at `now`.
fn own_marker(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    chain(vec![own_marker_columns(schema), visible(schema, now)])
}

/// Matches when another struct's row marker has a visible cell at `now`:
/// a qualifier starting with [`ROW_MARKER_PREFIX`] other than the
/// struct's own, in one of its families that is not a map's
/// ([`Schema::is_foreign_marker`]). Column ranges, not a regular
/// expression: the qualifiers starting with two NUL bytes are those from
/// `"\0\0"` up to, not including, `"\0\x01"`.
pub(crate) fn foreign_marker(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    let prefix = ROW_MARKER_PREFIX.to_vec();
    let past_prefix = vec![0, 1];
    let range = |family: &str, start: StartQualifier, end: EndQualifier| {
        filter(Filter::ColumnRangeFilter(ColumnRange {
            family_name: family.to_owned(),
            start_qualifier: Some(start),
            end_qualifier: Some(end),
        }))
    };
    let mut ranges = Vec::new();
    for &family in schema.families {
        if schema.map_index(family).is_some() {
            continue;
        }
        if family == schema.marker_family() {
            let own = schema.marker.to_vec();
            ranges.push(range(
                family,
                StartQualifier::StartQualifierClosed(prefix.clone()),
                EndQualifier::EndQualifierOpen(own.clone()),
            ));
            ranges.push(range(
                family,
                StartQualifier::StartQualifierOpen(own),
                EndQualifier::EndQualifierOpen(past_prefix.clone()),
            ));
        } else {
            ranges.push(range(
                family,
                StartQualifier::StartQualifierClosed(prefix.clone()),
                EndQualifier::EndQualifierOpen(past_prefix.clone()),
            ));
        }
    }
    chain(vec![or(ranges), visible(schema, now)])
}

/// Matches when the newest cell of the legacy one-byte marker
/// ([`LEGACY_ROW_MARKER`]) in `schema`'s marker family has timestamp `ts`
/// and neither the struct's own marker nor another struct's has a visible
/// cell at `now`: a row
/// `Table::add_markers` may give its marker, unchanged since it was read.
#[must_use]
pub(crate) fn legacy_marker_alone(schema: &Schema, ts: i64, now: DateTime<Utc>) -> RowFilter {
    let family = schema.marker_family();
    and(vec![
        exact_timestamp(family, LEGACY_ROW_MARKER, ts),
        not(live_column(schema, family, schema.marker, now)),
        not(foreign_marker(schema, now)),
    ])
}

/// Matches when the newest cell of column `family:qualifier`, expired or
/// not, has timestamp `ts` (a whole millisecond).
#[must_use]
pub(crate) fn exact_timestamp(family: &str, qualifier: &[u8], ts: i64) -> RowFilter {
    chain(vec![
        one_column(family, qualifier),
        filter(Filter::CellsPerColumnLimitFilter(1)),
        filter(Filter::TimestampRangeFilter(TimestampRange {
            start_timestamp_micros: ts,
            end_timestamp_micros: ts + 1_000,
        })),
    ])
}

/// Matches when the row is not live at `now` ([`live_row`] does not).
#[must_use]
pub(crate) fn not_live_row(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    not(live_row(schema, now))
}

/// What a conditional rewrite requires to be as it was read (see
/// [`unchanged`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pin<'s> {
    /// The row's liveness: the cells that make it live keep their
    /// timestamps. Enough for a write that only sets columns at the row's
    /// timestamp: other columns may change meanwhile (a counter being
    /// incremented, another field updated) without a conflict.
    Liveness,
    /// Its liveness, and these columns (indexes of `Schema::columns`)
    /// exactly as read.
    LivenessAnd(&'s [usize]),
    /// Every column, the marker and the shadow column exactly as read: for
    /// a write that copies them all (a re-time).
    Everything,
}

/// Matches when the row read as `row` at `now` still holds what `pin`
/// names: cells pinned by timestamp keep their newest visible timestamp,
/// cells pinned exactly keep timestamp and value, and a pinned column that
/// had no visible cell still has none. Any write to the row in between that
/// touches what is pinned (a put, a re-time) makes it fail.
#[must_use]
pub(crate) fn unchanged(row: &RowCells<'_>, now: DateTime<Utc>, pin: Pin<'_>) -> RowFilter {
    let schema = row.schema();
    let mut all = Vec::new();
    let mut pin_column =
        |family: &str, qualifier: &[u8], exact: bool| match row.get(family, qualifier) {
            Some(cell) => {
                let mut parts = vec![
                    one_column(family, qualifier),
                    visible(schema, now),
                    filter(Filter::CellsPerColumnLimitFilter(1)),
                    filter(Filter::TimestampRangeFilter(TimestampRange {
                        start_timestamp_micros: cell.timestamp_micros,
                        end_timestamp_micros: cell.timestamp_micros + 1_000,
                    })),
                ];
                if exact {
                    parts.push(exactly(cell.value.clone()));
                }
                all.push(chain(parts));
            }
            None if exact => all.push(not(live_column(schema, family, qualifier, now))),
            None => {}
        };
    let any_required = schema.columns.iter().any(Column::is_required);
    let everything = matches!(pin, Pin::Everything);
    for (i, c) in schema.columns.iter().enumerate() {
        let named = matches!(pin, Pin::LivenessAnd(columns) if columns.contains(&i));
        let anchors = !any_required || c.is_required();
        if everything || named || anchors {
            pin_column(c.family, c.qualifier.as_bytes(), everything || named);
        }
    }
    if let Some(shadow) = schema.written_at {
        if everything || !any_required {
            pin_column(shadow.family, shadow.qualifier.as_bytes(), everything);
        }
    }
    if everything || (!any_required && schema.marker_makes_row()) {
        pin_column(schema.marker_family(), schema.marker, everything);
    }
    if !row.marked() {
        // Read as a row of no struct's, judged by its columns: another
        // struct's marker written since would make it that struct's.
        all.push(not(foreign_marker(schema, now)));
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

/// Matches when any one of `filters` matches.
fn or(mut filters: Vec<RowFilter>) -> RowFilter {
    if filters.len() == 1 {
        filters.remove(0)
    } else {
        filter(Filter::Interleave(Interleave { filters }))
    }
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
