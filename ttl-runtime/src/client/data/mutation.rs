//! What the raw layer writes, as this library's own types: [`Mutation`],
//! [`ReadModifyWriteRule`] and the [`Entry`] of a `MutateRows`. They say
//! what Bigtable's v2 messages say, and only the conversions here, private
//! to the crate, name those messages: a new release of the generated crate
//! changes none of these types.

use crate::model::mutation::RowMutation;
use crate::model::proto::{self, mutate_rows_request, mutation as wire, read_modify_write_rule};
use crate::model::proto::{value::Kind, Value};

/// One change to a row: what a `google.bigtable.v2.Mutation` holds.
///
/// Built with its constructors ([`Mutation::set_cell`], …); its variants
/// can be read (`match` with `..`: a later version may add fields and
/// kinds).
///
/// ```
/// use bigtable_ttl::data::Mutation;
///
/// let set = Mutation::set_cell("e", "kind", 1_700_000_000_000_000, "click");
/// if let Mutation::SetCell { family, value, .. } = &set {
///     assert_eq!((family.as_str(), value.as_slice()), ("e", b"click".as_slice()));
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mutation {
    /// Write `value` in the column `family:qualifier` at
    /// `timestamp_micros` (µs since the epoch; `-1`: the server's time,
    /// which makes the write not idempotent).
    #[non_exhaustive]
    SetCell {
        /// The column family.
        family: String,
        /// The column qualifier.
        qualifier: Vec<u8>,
        /// The cell's timestamp (µs; `-1`: the server's time).
        timestamp_micros: i64,
        /// The value.
        value: Vec<u8>,
    },
    /// Delete the cells of the column `family:qualifier` whose timestamp
    /// lies in `[start_micros, end_micros)`, as Bigtable reads a
    /// `TimestampRange`: `start_micros` 0 from the oldest, `end_micros` 0
    /// with no end (both 0: every cell of the column).
    #[non_exhaustive]
    DeleteFromColumn {
        /// The column family.
        family: String,
        /// The column qualifier.
        qualifier: Vec<u8>,
        /// The first timestamp deleted (µs, inclusive; 0: the oldest).
        start_micros: i64,
        /// The first timestamp kept after them (µs, exclusive; 0: no end).
        end_micros: i64,
    },
    /// Delete every cell of the family `family`.
    #[non_exhaustive]
    DeleteFromFamily {
        /// The column family.
        family: String,
    },
    /// Delete every cell of the row.
    DeleteFromRow,
    /// Add `input` to the cell `family:qualifier` at `timestamp_micros` of
    /// an aggregate family (sum, min, max, `HyperLogLog++`). Not idempotent.
    #[non_exhaustive]
    AddToCell {
        /// The aggregate column family.
        family: String,
        /// The column qualifier.
        qualifier: Vec<u8>,
        /// The cell's timestamp (µs, matching the family's granularity).
        timestamp_micros: i64,
        /// What is added.
        input: AggregateInput,
    },
    /// Merge the accumulated state `input` into the cell `family:qualifier`
    /// at `timestamp_micros` of an aggregate family. Not idempotent.
    #[non_exhaustive]
    MergeToCell {
        /// The aggregate column family.
        family: String,
        /// The column qualifier.
        qualifier: Vec<u8>,
        /// The cell's timestamp (µs, matching the family's granularity).
        timestamp_micros: i64,
        /// The state merged in.
        input: AggregateInput,
    },
}

/// What an [`Mutation::AddToCell`] adds or a [`Mutation::MergeToCell`]
/// merges: an `INT64` (sum, min, max) or raw bytes (`HyperLogLog++` input or
/// state).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AggregateInput {
    /// An `INT64` value.
    Int64(i64),
    /// Raw bytes.
    Raw(Vec<u8>),
}

impl From<i64> for AggregateInput {
    fn from(value: i64) -> Self {
        Self::Int64(value)
    }
}

impl From<Vec<u8>> for AggregateInput {
    fn from(value: Vec<u8>) -> Self {
        Self::Raw(value)
    }
}

impl Mutation {
    /// Write `value` in `family:qualifier` at `timestamp_micros` (µs since
    /// the epoch; `-1`: the server's time, never re-sent after a failure).
    #[must_use]
    pub fn set_cell(
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        timestamp_micros: i64,
        value: impl Into<Vec<u8>>,
    ) -> Self {
        Self::SetCell {
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp_micros,
            value: value.into(),
        }
    }

    /// Delete every cell of the column `family:qualifier`.
    #[must_use]
    pub fn delete_from_column(family: impl Into<String>, qualifier: impl Into<Vec<u8>>) -> Self {
        Self::delete_from_column_in(family, qualifier, 0, 0)
    }

    /// Delete the cells of `family:qualifier` with a timestamp in
    /// `[start_micros, end_micros)` (µs; `end_micros` 0: no end, as in
    /// Bigtable's `TimestampRange`).
    #[must_use]
    pub fn delete_from_column_in(
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        start_micros: i64,
        end_micros: i64,
    ) -> Self {
        Self::DeleteFromColumn {
            family: family.into(),
            qualifier: qualifier.into(),
            start_micros,
            end_micros,
        }
    }

    /// Delete every cell of the family `family`.
    #[must_use]
    pub fn delete_from_family(family: impl Into<String>) -> Self {
        Self::DeleteFromFamily {
            family: family.into(),
        }
    }

    /// Delete every cell of the row.
    #[must_use]
    pub fn delete_from_row() -> Self {
        Self::DeleteFromRow
    }

    /// Add `input` to `family:qualifier` at `timestamp_micros` in an
    /// aggregate family.
    #[must_use]
    pub fn add_to_cell(
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        timestamp_micros: i64,
        input: impl Into<AggregateInput>,
    ) -> Self {
        Self::AddToCell {
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp_micros,
            input: input.into(),
        }
    }

    /// Merge the state `input` into `family:qualifier` at
    /// `timestamp_micros` in an aggregate family.
    #[must_use]
    pub fn merge_to_cell(
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        timestamp_micros: i64,
        input: impl Into<AggregateInput>,
    ) -> Self {
        Self::MergeToCell {
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp_micros,
            input: input.into(),
        }
    }

    /// The mutation as Bigtable's v2 message.
    pub(crate) fn into_wire(self) -> proto::Mutation {
        let raw = |bytes: Vec<u8>| Some(value(Kind::RawValue(bytes)));
        let at = |micros: i64| Some(value(Kind::RawTimestampMicros(micros)));
        let kind = match self {
            Self::SetCell {
                family,
                qualifier,
                timestamp_micros,
                value,
            } => wire::Mutation::SetCell(wire::SetCell {
                family_name: family,
                column_qualifier: qualifier,
                timestamp_micros,
                value,
            }),
            Self::DeleteFromColumn {
                family,
                qualifier,
                start_micros,
                end_micros,
            } => wire::Mutation::DeleteFromColumn(wire::DeleteFromColumn {
                family_name: family,
                column_qualifier: qualifier,
                time_range: (start_micros != 0 || end_micros != 0).then_some(
                    proto::TimestampRange {
                        start_timestamp_micros: start_micros,
                        end_timestamp_micros: end_micros,
                    },
                ),
            }),
            Self::DeleteFromFamily { family } => {
                wire::Mutation::DeleteFromFamily(wire::DeleteFromFamily {
                    family_name: family,
                })
            }
            Self::DeleteFromRow => wire::Mutation::DeleteFromRow(wire::DeleteFromRow {}),
            Self::AddToCell {
                family,
                qualifier,
                timestamp_micros,
                input,
            } => wire::Mutation::AddToCell(wire::AddToCell {
                family_name: family,
                column_qualifier: raw(qualifier),
                timestamp: at(timestamp_micros),
                input: Some(input.into_wire()),
            }),
            Self::MergeToCell {
                family,
                qualifier,
                timestamp_micros,
                input,
            } => wire::Mutation::MergeToCell(wire::MergeToCell {
                family_name: family,
                column_qualifier: raw(qualifier),
                timestamp: at(timestamp_micros),
                input: Some(input.into_wire()),
            }),
        };
        proto::Mutation {
            mutation: Some(kind),
        }
    }

    /// The mutation Bigtable's message `m` holds: every kind the typed
    /// layer writes (set, delete), and aggregates whose qualifier,
    /// timestamp and input are of the kinds this type holds; `None` for
    /// any other (an empty message, a kind a later proto adds).
    pub(crate) fn from_wire(m: proto::Mutation) -> Option<Self> {
        Some(match m.mutation? {
            wire::Mutation::SetCell(set) => Self::set_cell(
                set.family_name,
                set.column_qualifier,
                set.timestamp_micros,
                set.value,
            ),
            wire::Mutation::DeleteFromColumn(delete) => {
                let range = delete.time_range.unwrap_or_default();
                Self::delete_from_column_in(
                    delete.family_name,
                    delete.column_qualifier,
                    range.start_timestamp_micros,
                    range.end_timestamp_micros,
                )
            }
            wire::Mutation::DeleteFromFamily(delete) => {
                Self::delete_from_family(delete.family_name)
            }
            wire::Mutation::DeleteFromRow(_) => Self::DeleteFromRow,
            wire::Mutation::AddToCell(add) => Self::AddToCell {
                family: add.family_name,
                qualifier: raw_of(add.column_qualifier)?,
                timestamp_micros: micros_of(add.timestamp)?,
                input: AggregateInput::from_wire(add.input)?,
            },
            wire::Mutation::MergeToCell(merge) => Self::MergeToCell {
                family: merge.family_name,
                qualifier: raw_of(merge.column_qualifier)?,
                timestamp_micros: micros_of(merge.timestamp)?,
                input: AggregateInput::from_wire(merge.input)?,
            },
        })
    }
}

impl AggregateInput {
    fn into_wire(self) -> Value {
        value(match self {
            Self::Int64(i) => Kind::IntValue(i),
            Self::Raw(bytes) => Kind::RawValue(bytes),
        })
    }

    fn from_wire(v: Option<Value>) -> Option<Self> {
        match v?.kind? {
            Kind::IntValue(i) => Some(Self::Int64(i)),
            Kind::RawValue(bytes) => Some(Self::Raw(bytes)),
            _ => None,
        }
    }
}

/// A `Value` of `kind`, untyped.
fn value(kind: Kind) -> Value {
    Value {
        r#type: None,
        kind: Some(kind),
    }
}

fn raw_of(v: Option<Value>) -> Option<Vec<u8>> {
    match v?.kind? {
        Kind::RawValue(bytes) => Some(bytes),
        _ => None,
    }
}

fn micros_of(v: Option<Value>) -> Option<i64> {
    match v?.kind? {
        Kind::RawTimestampMicros(micros) => Some(micros),
        _ => None,
    }
}

/// One rule of a `ReadModifyWriteRow`: append to a cell's value, or add to
/// it as a 64-bit big-endian integer.
///
/// ```
/// use bigtable_ttl::data::ReadModifyWriteRule;
///
/// let hits = ReadModifyWriteRule::increment("stats", "hits", 1);
/// let log = ReadModifyWriteRule::append("stats", "log", "|seen");
/// # let _ = (hits, log);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadModifyWriteRule {
    /// Append `value` to the newest cell of `family:qualifier` (an empty
    /// one when there is none).
    #[non_exhaustive]
    Append {
        /// The column family.
        family: String,
        /// The column qualifier.
        qualifier: Vec<u8>,
        /// The bytes appended.
        value: Vec<u8>,
    },
    /// Add `amount` to the newest cell of `family:qualifier`, read as a
    /// 64-bit big-endian signed integer (0 when there is none).
    #[non_exhaustive]
    Increment {
        /// The column family.
        family: String,
        /// The column qualifier.
        qualifier: Vec<u8>,
        /// What is added (negative: subtracted).
        amount: i64,
    },
}

impl ReadModifyWriteRule {
    /// Append `value` to `family:qualifier`.
    #[must_use]
    pub fn append(
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> Self {
        Self::Append {
            family: family.into(),
            qualifier: qualifier.into(),
            value: value.into(),
        }
    }

    /// Add `amount` to `family:qualifier`.
    #[must_use]
    pub fn increment(
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        amount: i64,
    ) -> Self {
        Self::Increment {
            family: family.into(),
            qualifier: qualifier.into(),
            amount,
        }
    }

    /// The rule as Bigtable's v2 message.
    pub(crate) fn into_wire(self) -> proto::ReadModifyWriteRule {
        let (family_name, column_qualifier, rule) = match self {
            Self::Append {
                family,
                qualifier,
                value,
            } => (
                family,
                qualifier,
                read_modify_write_rule::Rule::AppendValue(value),
            ),
            Self::Increment {
                family,
                qualifier,
                amount,
            } => (
                family,
                qualifier,
                read_modify_write_rule::Rule::IncrementAmount(amount),
            ),
        };
        proto::ReadModifyWriteRule {
            family_name,
            column_qualifier,
            rule: Some(rule),
        }
    }
}

/// One row of a `MutateRows` ([`RawTable::mutate_rows`](super::RawTable::mutate_rows)):
/// its key and its mutations, applied atomically and in order. A typed
/// write becomes one with `Entry::from(row_mutation)`.
///
/// ```
/// use bigtable_ttl::data::{Entry, Mutation};
///
/// let entry = Entry::new("e#0001", vec![Mutation::delete_from_row()]);
/// assert_eq!(entry.row_key, b"e#0001");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    /// The row key.
    pub row_key: Vec<u8>,
    /// Its mutations.
    pub mutations: Vec<Mutation>,
}

impl Entry {
    /// The row `row_key` changed by `mutations`.
    #[must_use]
    pub fn new(row_key: impl Into<Vec<u8>>, mutations: Vec<Mutation>) -> Self {
        Self {
            row_key: row_key.into(),
            mutations,
        }
    }

    /// The entry as Bigtable's v2 message.
    pub(crate) fn into_wire(self) -> mutate_rows_request::Entry {
        mutate_rows_request::Entry {
            row_key: self.row_key,
            mutations: self
                .mutations
                .into_iter()
                .map(Mutation::into_wire)
                .collect(),
            ..mutate_rows_request::Entry::default()
        }
    }
}

impl From<RowMutation> for Entry {
    /// A typed write as one entry: its row key and mutations.
    ///
    /// ```
    /// use bigtable_ttl::{data::Entry, BigtableRow};
    /// use chrono::{TimeZone, Utc};
    ///
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
    /// let write = Click { id: "c1".into(), url: "/home".into() }.mutation().build(now).unwrap();
    /// let entry = Entry::from(write);
    /// assert_eq!(entry.row_key, b"c1");
    /// assert!(!entry.mutations.is_empty());
    /// ```
    fn from(write: RowMutation) -> Self {
        // The typed layer writes only cells and deletes, each of which
        // `Mutation` holds (the tests below convert every kind).
        Self {
            row_key: write.row_key,
            mutations: write
                .mutations
                .into_iter()
                .filter_map(Mutation::from_wire)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_goes_to_the_wire_and_back() {
        let all = [
            Mutation::set_cell("f", "q", 5, "v"),
            Mutation::set_cell("f", "q", -1, ""),
            Mutation::delete_from_column("f", "q"),
            Mutation::delete_from_column_in("f", "q", 1_000, 2_000),
            Mutation::delete_from_column_in("f", "q", 1_000, 0),
            Mutation::delete_from_family("f"),
            Mutation::delete_from_row(),
            Mutation::add_to_cell("sum", "q", 0, 3),
            Mutation::merge_to_cell("hll", "q", 0, b"state".to_vec()),
        ];
        for m in all {
            assert_eq!(Mutation::from_wire(m.clone().into_wire()), Some(m));
        }
    }

    #[test]
    fn a_column_delete_of_every_timestamp_sends_no_range() {
        let wire = Mutation::delete_from_column("f", "q").into_wire();
        let Some(wire::Mutation::DeleteFromColumn(delete)) = wire.mutation else {
            panic!("{wire:?}");
        };
        assert_eq!(delete.time_range, None);
    }

    #[test]
    fn aggregates_carry_raw_qualifiers_and_timestamps() {
        let wire = Mutation::add_to_cell("sum", "q", 7, 3).into_wire();
        let Some(wire::Mutation::AddToCell(add)) = wire.mutation else {
            panic!("{wire:?}");
        };
        assert_eq!(
            add.column_qualifier,
            Some(value(Kind::RawValue(b"q".to_vec())))
        );
        assert_eq!(add.timestamp, Some(value(Kind::RawTimestampMicros(7))));
        assert_eq!(add.input, Some(value(Kind::IntValue(3))));
        // What this type cannot hold is not made up.
        let empty = proto::Mutation {
            mutation: Some(wire::Mutation::AddToCell(wire::AddToCell::default())),
        };
        assert_eq!(Mutation::from_wire(empty), None);
        assert_eq!(Mutation::from_wire(proto::Mutation::default()), None);
    }

    #[test]
    fn rules_name_their_kind_on_the_wire() {
        let add = ReadModifyWriteRule::increment("f", "n", -2).into_wire();
        assert_eq!(
            add.rule,
            Some(read_modify_write_rule::Rule::IncrementAmount(-2))
        );
        assert_eq!(
            (add.family_name.as_str(), add.column_qualifier.as_slice()),
            ("f", b"n".as_slice())
        );
        let append = ReadModifyWriteRule::append("f", "l", "x").into_wire();
        assert_eq!(
            append.rule,
            Some(read_modify_write_rule::Rule::AppendValue(b"x".to_vec()))
        );
    }
}
