//! The timestamp filter every typed read carries.
//!
//! Garbage collection runs late (up to a week on Cloud Bigtable), so an expired
//! cell can still be stored. The filter keeps, per family, only cells whose
//! timestamp is at or after the smallest visible one at "now", and only the
//! newest of those per column: an expired cell is never even sent.
//!
//! A family is selected with a `ColumnRangeFilter` spanning all its
//! qualifiers rather than a `FamilyNameRegexFilter`: the same cells, without
//! a regular expression evaluated per cell (on the emulator, a full-table
//! typed scan ran at a third of the speed with the regex; see BENCHMARKS.md).

use crate::model::proto::{
    column_range::{EndQualifier, StartQualifier},
    row_filter::{Chain, Filter, Interleave},
    ColumnRange, RowFilter, TimestampRange,
};
use chrono::{DateTime, Utc};

use crate::model::read_filter::ReadFilter;
use crate::model::schema::Schema;

/// The read filter for `schema` at `now`, on a table that may hold families
/// the schema does not declare: each declared family is selected.
#[must_use]
pub fn read_filter(schema: &Schema, now: DateTime<Utc>) -> ReadFilter {
    ReadFilter::new(row_filter(schema, now))
}

/// [`read_filter`]'s message.
pub(crate) fn row_filter(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    families_filter(schema, schema.families.iter().copied(), now)
}

/// [`read_filter`] over `families` only.
pub(crate) fn families_filter<'f>(
    schema: &Schema,
    families: impl Iterator<Item = &'f str>,
    now: DateTime<Utc>,
) -> RowFilter {
    let per_family: Vec<RowFilter> = families
        .map(|family| {
            let mut filters = vec![only_family(family)];
            filters.extend(visible_cells(schema, now));
            chain(filters)
        })
        .collect();
    match <[RowFilter; 1]>::try_from(per_family) {
        Ok([only]) => only,
        Err(many) => filter(Filter::Interleave(Interleave { filters: many })),
    }
}

/// The read filter for `schema` at `now`, on a table known to hold only the
/// families the schema declares: the same cells as [`read_filter`] without
/// selecting families. The visibility rule is the same for every family (it
/// is the row type's policy), and each filter in a chain is another pass
/// over the row's cells on the server (the emulator's scans spent a tenth
/// more CPU with the family selector; see BENCHMARKS.md). Should a family be
/// added later, its cells are sent too and the decoder skips them.
#[must_use]
pub fn read_filter_sole_families(schema: &Schema, now: DateTime<Utc>) -> ReadFilter {
    ReadFilter::new(row_filter_sole_families(schema, now))
}

/// [`read_filter_sole_families`]'s message.
pub(crate) fn row_filter_sole_families(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    chain(visible_cells(schema, now).into())
}

/// Cells visible at `now` under `schema`'s policy, the newest per column.
fn visible_cells(schema: &Schema, now: DateTime<Utc>) -> [RowFilter; 2] {
    [
        filter(Filter::TimestampRangeFilter(TimestampRange {
            start_timestamp_micros: schema.policy.visible_from(now),
            end_timestamp_micros: 0,
        })),
        filter(Filter::CellsPerColumnLimitFilter(1)),
    ]
}

/// Every cell of `family` and nothing else: a column range with unset
/// bounds (all qualifiers), no regular expression and so no escaping.
pub(crate) fn only_family(family: &str) -> RowFilter {
    filter(Filter::ColumnRangeFilter(ColumnRange {
        family_name: family.to_owned(),
        start_qualifier: None,
        end_qualifier: None,
    }))
}

/// The newest cell of one column, its value stripped, expired or not.
pub(crate) fn column_newest_stripped(family: &str, qualifier: &[u8]) -> RowFilter {
    chain(vec![
        one_column(family, qualifier),
        filter(Filter::CellsPerColumnLimitFilter(1)),
        filter(Filter::StripValueTransformer(true)),
    ])
}

/// The newest cell of each required column of `schema`, values stripped,
/// expired or not; `None` for a struct without required fields.
pub(crate) fn required_newest_stripped(schema: &Schema) -> Option<RowFilter> {
    let mut columns: Vec<RowFilter> = schema
        .columns
        .iter()
        .filter(|c| c.is_required())
        .map(|c| column_newest_stripped(c.family, c.qualifier.as_bytes()))
        .collect();
    match columns.len() {
        0 => None,
        1 => columns.pop(),
        _ => Some(filter(Filter::Interleave(Interleave { filters: columns }))),
    }
}

/// Exactly one column: its family, its qualifier from and to itself.
pub(crate) fn one_column(family: &str, qualifier: &[u8]) -> RowFilter {
    filter(Filter::ColumnRangeFilter(ColumnRange {
        family_name: family.to_owned(),
        start_qualifier: Some(StartQualifier::StartQualifierClosed(qualifier.to_vec())),
        end_qualifier: Some(EndQualifier::EndQualifierClosed(qualifier.to_vec())),
    }))
}

pub(crate) fn filter(f: Filter) -> RowFilter {
    RowFilter { filter: Some(f) }
}

/// `filters` in sequence; a single filter as itself (Bigtable rejects a
/// chain of fewer than two).
pub(crate) fn chain(mut filters: Vec<RowFilter>) -> RowFilter {
    if filters.len() == 1 {
        filters.remove(0)
    } else {
        filter(Filter::Chain(Chain { filters }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_is_selected_by_its_exact_name() {
        let Some(Filter::ColumnRangeFilter(r)) = only_family("a.b-c_1").filter else {
            panic!("a column range");
        };
        assert_eq!(r.family_name, "a.b-c_1");
        assert!(r.start_qualifier.is_none() && r.end_qualifier.is_none());
    }
    use crate::model::policy::Policy;
    use crate::model::schema::Schema;

    const TWO: Schema = Schema {
        table: "t",
        policy: Policy::CellExpiry,
        families: &["a.b", "c"],
        owns_family: false,
        columns: &[],
        maps: &[],
        written_at: None,
        marker: b"\0\0Row",
        key_fields: &["id"],
        key_separator: "",
    };

    #[test]
    fn each_family_is_selected_by_a_column_range_without_bounds() {
        let Some(Filter::Interleave(Interleave { filters })) =
            row_filter(&TWO, chrono::Utc::now()).filter
        else {
            panic!("two families: an interleave");
        };
        let families: Vec<String> = filters
            .iter()
            .map(|f| match &f.filter {
                Some(Filter::Chain(Chain { filters })) => match &filters[0].filter {
                    Some(Filter::ColumnRangeFilter(r)) => {
                        assert!(r.start_qualifier.is_none() && r.end_qualifier.is_none());
                        r.family_name.clone()
                    }
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(families, ["a.b", "c"]);
    }

    #[test]
    fn on_a_table_of_its_own_families_the_filter_selects_no_family() {
        let now = chrono::Utc::now();
        let Some(Filter::Chain(Chain { filters })) = row_filter_sole_families(&TWO, now).filter
        else {
            panic!("a chain");
        };
        let Some(Filter::TimestampRangeFilter(range)) = &filters[0].filter else {
            panic!("the timestamp range first: {filters:?}");
        };
        assert_eq!(range.start_timestamp_micros, TWO.policy.visible_from(now));
        assert_eq!(
            filters[1].filter,
            Some(Filter::CellsPerColumnLimitFilter(1))
        );
        assert_eq!(filters.len(), 2);
    }

    #[test]
    fn the_filters_a_typed_read_sends_read_as_words() {
        let now = chrono::DateTime::from_timestamp_micros(1_000_000).unwrap();
        let from = TWO.policy.visible_from(now);
        assert_eq!(
            read_filter(&TWO, now).to_string(),
            format!(
                "interleave(chain(family a.b, timestamp >= {from}, newest 1 per column), \
                 chain(family c, timestamp >= {from}, newest 1 per column))"
            )
        );
        assert_eq!(
            read_filter_sole_families(&TWO, now).to_string(),
            format!("chain(timestamp >= {from}, newest 1 per column)")
        );
    }
}
