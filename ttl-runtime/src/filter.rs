//! The timestamp filter every typed read carries.
//!
//! Garbage collection runs late (up to a week on Cloud Bigtable), so an expired
//! cell can still be stored. The filter keeps, per family, only cells whose
//! timestamp is at or after the smallest visible one at "now", and only the
//! newest of those per column: an expired cell is never even sent.

use bigtable_rs::google::bigtable::v2::{
    row_filter::{Chain, Filter, Interleave},
    RowFilter, TimestampRange,
};
use chrono::{DateTime, Utc};

use crate::schema::Schema;

/// The read filter for `schema` at `now`.
#[must_use]
pub fn read_filter(schema: &Schema, now: DateTime<Utc>) -> RowFilter {
    let start = schema.policy.visible_from(now);
    let per_family: Vec<RowFilter> = schema
        .families
        .iter()
        .map(|family| {
            chain(vec![
                filter(Filter::FamilyNameRegexFilter(format!(
                    "^{}$",
                    escape_family(family)
                ))),
                filter(Filter::TimestampRangeFilter(TimestampRange {
                    start_timestamp_micros: start,
                    end_timestamp_micros: 0,
                })),
                filter(Filter::CellsPerColumnLimitFilter(1)),
            ])
        })
        .collect();
    match <[RowFilter; 1]>::try_from(per_family) {
        Ok([only]) => only,
        Err(many) => filter(Filter::Interleave(Interleave { filters: many })),
    }
}

fn filter(f: Filter) -> RowFilter {
    RowFilter { filter: Some(f) }
}

fn chain(filters: Vec<RowFilter>) -> RowFilter {
    filter(Filter::Chain(Chain { filters }))
}

/// Family names allow `[-_.a-zA-Z0-9]`; only `.` and `-` mean something to RE2.
fn escape_family(family: &str) -> String {
    let mut out = String::with_capacity(family.len());
    for c in family.chars() {
        if !c.is_ascii_alphanumeric() && c != '_' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_in_family_names_are_escaped() {
        assert_eq!(escape_family("a.b-c_d"), "a\\.b\\-c_d");
    }
}
