//! [`RowFilter`]: which cells a raw read returns and what a conditional
//! write tests, as this library's own type. It holds Bigtable's v2 message,
//! which only the crate sees.

use std::fmt;
use std::ops::{Bound, RangeBounds};

use crate::model::proto::{self, column_range, row_filter, row_filter::Filter, value_range};
use crate::model::read_filter::{describe, ReadFilter};

/// A filter of `google.bigtable.v2.RowFilter`: every kind Bigtable has,
/// built with the constructors below and combined with
/// [`RowFilter::chain`], [`RowFilter::interleave`] and
/// [`RowFilter::condition`]. Its `Display` says what it keeps.
///
/// A typed read's filter ([`crate::filter::read_filter`],
/// [`crate::Table::read_filter`]) converts into one (`From`).
///
/// ```
/// use bigtable_ttl::data::RowFilter;
///
/// let newest_live = RowFilter::chain([
///     RowFilter::family("e"),
///     RowFilter::timestamp_range(1_700_000_000_000_000, 0),
///     RowFilter::cells_per_column_limit(1),
/// ]);
/// assert_eq!(
///     newest_live.to_string(),
///     "chain(family e, timestamp >= 1700000000000000, newest 1 per column)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RowFilter(proto::RowFilter);

impl RowFilter {
    fn of(filter: Filter) -> Self {
        Self(proto::RowFilter {
            filter: Some(filter),
        })
    }

    /// Every cell.
    #[must_use]
    pub fn pass_all() -> Self {
        Self::of(Filter::PassAllFilter(true))
    }

    /// No cell.
    #[must_use]
    pub fn block_all() -> Self {
        Self::of(Filter::BlockAllFilter(true))
    }

    /// Every cell that reaches it, sent to the output whatever follows
    /// (in an [`RowFilter::interleave`]).
    #[must_use]
    pub fn sink() -> Self {
        Self::of(Filter::Sink(true))
    }

    /// `filters` one after another, each on what the previous kept.
    #[must_use]
    pub fn chain(filters: impl IntoIterator<Item = RowFilter>) -> Self {
        Self::of(Filter::Chain(row_filter::Chain {
            filters: filters.into_iter().map(|f| f.0).collect(),
        }))
    }

    /// `filters` side by side, each on every cell; what they keep, merged.
    #[must_use]
    pub fn interleave(filters: impl IntoIterator<Item = RowFilter>) -> Self {
        Self::of(Filter::Interleave(row_filter::Interleave {
            filters: filters.into_iter().map(|f| f.0).collect(),
        }))
    }

    /// `then` on a row where `predicate` keeps any cell, `otherwise` on the
    /// others (`None`: no cell).
    #[must_use]
    pub fn condition(
        predicate: RowFilter,
        then: Option<RowFilter>,
        otherwise: Option<RowFilter>,
    ) -> Self {
        Self::of(Filter::Condition(Box::new(row_filter::Condition {
            predicate_filter: Some(Box::new(predicate.0)),
            true_filter: then.map(|f| Box::new(f.0)),
            false_filter: otherwise.map(|f| Box::new(f.0)),
        })))
    }

    /// The rows whose key matches the RE2 regular expression `regex`.
    #[must_use]
    pub fn row_key_regex(regex: impl Into<Vec<u8>>) -> Self {
        Self::of(Filter::RowKeyRegexFilter(regex.into()))
    }

    /// Each row with probability `probability` (0 to 1, exclusive).
    #[must_use]
    pub fn row_sample(probability: f64) -> Self {
        Self::of(Filter::RowSampleFilter(probability))
    }

    /// The cells of the families whose name matches the RE2 regular
    /// expression `regex` (whole name).
    #[must_use]
    pub fn family_name_regex(regex: impl Into<String>) -> Self {
        Self::of(Filter::FamilyNameRegexFilter(regex.into()))
    }

    /// The cells of every column of the family `family` (its exact name).
    #[must_use]
    pub fn family(family: impl Into<String>) -> Self {
        Self::of(Filter::ColumnRangeFilter(proto::ColumnRange {
            family_name: family.into(),
            start_qualifier: None,
            end_qualifier: None,
        }))
    }

    /// The cells whose qualifier matches the RE2 regular expression
    /// `regex`.
    #[must_use]
    pub fn column_qualifier_regex(regex: impl Into<Vec<u8>>) -> Self {
        Self::of(Filter::ColumnQualifierRegexFilter(regex.into()))
    }

    /// The cells of `family` whose qualifier lies in `qualifiers` (open or
    /// closed ends).
    #[must_use]
    pub fn column_range<K: AsRef<[u8]>>(
        family: impl Into<String>,
        qualifiers: impl RangeBounds<K>,
    ) -> Self {
        Self::of(Filter::ColumnRangeFilter(proto::ColumnRange {
            family_name: family.into(),
            start_qualifier: match qualifiers.start_bound() {
                Bound::Included(k) => Some(column_range::StartQualifier::StartQualifierClosed(
                    k.as_ref().to_vec(),
                )),
                Bound::Excluded(k) => Some(column_range::StartQualifier::StartQualifierOpen(
                    k.as_ref().to_vec(),
                )),
                Bound::Unbounded => None,
            },
            end_qualifier: match qualifiers.end_bound() {
                Bound::Included(k) => Some(column_range::EndQualifier::EndQualifierClosed(
                    k.as_ref().to_vec(),
                )),
                Bound::Excluded(k) => Some(column_range::EndQualifier::EndQualifierOpen(
                    k.as_ref().to_vec(),
                )),
                Bound::Unbounded => None,
            },
        }))
    }

    /// The cells whose timestamp lies in `[start_micros, end_micros)` (µs),
    /// as Bigtable reads a `TimestampRange`: `end_micros` 0 is no end.
    #[must_use]
    pub fn timestamp_range(start_micros: i64, end_micros: i64) -> Self {
        Self::of(Filter::TimestampRangeFilter(proto::TimestampRange {
            start_timestamp_micros: start_micros,
            end_timestamp_micros: end_micros,
        }))
    }

    /// The cells whose value matches the RE2 regular expression `regex`.
    #[must_use]
    pub fn value_regex(regex: impl Into<Vec<u8>>) -> Self {
        Self::of(Filter::ValueRegexFilter(regex.into()))
    }

    /// The cells whose value lies in `values` (open or closed ends).
    #[must_use]
    pub fn value_range<K: AsRef<[u8]>>(values: impl RangeBounds<K>) -> Self {
        Self::of(Filter::ValueRangeFilter(proto::ValueRange {
            start_value: match values.start_bound() {
                Bound::Included(k) => Some(value_range::StartValue::StartValueClosed(
                    k.as_ref().to_vec(),
                )),
                Bound::Excluded(k) => {
                    Some(value_range::StartValue::StartValueOpen(k.as_ref().to_vec()))
                }
                Bound::Unbounded => None,
            },
            end_value: match values.end_bound() {
                Bound::Included(k) => {
                    Some(value_range::EndValue::EndValueClosed(k.as_ref().to_vec()))
                }
                Bound::Excluded(k) => {
                    Some(value_range::EndValue::EndValueOpen(k.as_ref().to_vec()))
                }
                Bound::Unbounded => None,
            },
        }))
    }

    /// Each row's cells after its first `offset`.
    #[must_use]
    pub fn cells_per_row_offset(offset: i32) -> Self {
        Self::of(Filter::CellsPerRowOffsetFilter(offset))
    }

    /// Each row's first `limit` cells.
    #[must_use]
    pub fn cells_per_row_limit(limit: i32) -> Self {
        Self::of(Filter::CellsPerRowLimitFilter(limit))
    }

    /// Each column's newest `limit` cells.
    #[must_use]
    pub fn cells_per_column_limit(limit: i32) -> Self {
        Self::of(Filter::CellsPerColumnLimitFilter(limit))
    }

    /// Every cell, its value emptied.
    #[must_use]
    pub fn strip_value() -> Self {
        Self::of(Filter::StripValueTransformer(true))
    }

    /// Every cell, labelled `label` (the raw layer does not return labels).
    #[must_use]
    pub fn apply_label(label: impl Into<String>) -> Self {
        Self::of(Filter::ApplyLabelTransformer(label.into()))
    }

    /// A filter the crate built as Bigtable's message.
    pub(crate) fn from_wire(filter: proto::RowFilter) -> Self {
        Self(filter)
    }

    /// The filter as Bigtable's message.
    pub(crate) fn into_wire(self) -> proto::RowFilter {
        self.0
    }
}

impl From<ReadFilter> for RowFilter {
    /// The filter a typed read sends, to send it through the raw layer.
    fn from(filter: ReadFilter) -> Self {
        Self(filter.into_wire())
    }
}

impl fmt::Display for RowFilter {
    /// The filters this library builds in words (`chain(family c,
    /// timestamp >= 5, newest 1 per column)`); any other as its message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        describe(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_keep_their_open_and_closed_ends() {
        let wire = RowFilter::column_range("f", "a"..="c").into_wire();
        let Some(Filter::ColumnRangeFilter(range)) = wire.filter else {
            panic!("{wire:?}");
        };
        assert_eq!(
            range.start_qualifier,
            Some(column_range::StartQualifier::StartQualifierClosed(
                b"a".to_vec()
            ))
        );
        assert_eq!(
            range.end_qualifier,
            Some(column_range::EndQualifier::EndQualifierClosed(
                b"c".to_vec()
            ))
        );
        let open: (Bound<&str>, Bound<&str>) = (Bound::Excluded("a"), Bound::Unbounded);
        let wire = RowFilter::value_range::<&str>(open).into_wire();
        let Some(Filter::ValueRangeFilter(range)) = wire.filter else {
            panic!("{wire:?}");
        };
        assert_eq!(
            range.start_value,
            Some(value_range::StartValue::StartValueOpen(b"a".to_vec()))
        );
        assert_eq!(range.end_value, None);
    }

    #[test]
    fn a_condition_keeps_its_three_parts_and_says_what_it_keeps() {
        let filter =
            RowFilter::condition(RowFilter::family("f"), Some(RowFilter::strip_value()), None);
        let Some(Filter::Condition(condition)) = filter.clone().into_wire().filter else {
            panic!("{filter:?}");
        };
        assert!(condition.predicate_filter.is_some());
        assert!(condition.true_filter.is_some());
        assert!(condition.false_filter.is_none());
        assert_eq!(
            RowFilter::chain([
                RowFilter::family("c"),
                RowFilter::timestamp_range(5, 0),
                RowFilter::cells_per_column_limit(1),
            ])
            .to_string(),
            "chain(family c, timestamp >= 5, newest 1 per column)"
        );
    }
}
