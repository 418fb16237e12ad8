//! [`ReadFilter`]: the filter a typed read sends, as a value of our own.
//!
//! It holds Bigtable's v2 `RowFilter`, which stays inside the crate: the
//! raw data layer's own filter type converts from it
//! (`data::RowFilter::from`).

use std::fmt;

use crate::model::proto::{row_filter::Filter, ColumnRange, RowFilter, TimestampRange};

/// The filter a typed read sends: per family, the cells visible at a given
/// "now", the newest per column ([`crate::filter::read_filter`],
/// [`crate::Table::read_filter`]).
///
/// Its `Display` says what it keeps; `data::RowFilter::from` makes it a
/// filter of the raw data layer.
///
/// ```
/// use bigtable_ttl::{filter::read_filter, BigtableRow};
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
/// let filter = read_filter(Click::SCHEMA, now);
/// assert_eq!(
///     filter.to_string(),
///     "chain(family c, timestamp >= 1767052800001000, newest 1 per column)"
/// );
/// let request = bigtable_ttl::data::ReadRows::all().filter(filter);
/// # let _ = request;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ReadFilter(RowFilter);

impl ReadFilter {
    pub(crate) fn new(filter: RowFilter) -> Self {
        Self(filter)
    }

    /// The `RowFilter` message, for the raw data layer's filter.
    pub(crate) fn into_wire(self) -> RowFilter {
        self.0
    }
}

impl fmt::Display for ReadFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        describe(&self.0, f)
    }
}

/// The filters this library builds in words; any other as its message.
pub(crate) fn describe(filter: &RowFilter, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let all = |name: &str, filters: &[RowFilter], f: &mut fmt::Formatter<'_>| {
        write!(f, "{name}(")?;
        for (i, one) in filters.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            describe(one, f)?;
        }
        f.write_str(")")
    };
    match &filter.filter {
        None => f.write_str("all"),
        Some(Filter::Chain(chain)) => all("chain", &chain.filters, f),
        Some(Filter::Interleave(interleave)) => all("interleave", &interleave.filters, f),
        Some(Filter::ColumnRangeFilter(ColumnRange {
            family_name,
            start_qualifier: None,
            end_qualifier: None,
        })) => write!(f, "family {family_name}"),
        Some(Filter::TimestampRangeFilter(TimestampRange {
            start_timestamp_micros,
            end_timestamp_micros,
        })) => {
            write!(f, "timestamp >= {start_timestamp_micros}")?;
            if *end_timestamp_micros != 0 {
                write!(f, " and < {end_timestamp_micros}")?;
            }
            Ok(())
        }
        Some(Filter::CellsPerColumnLimitFilter(n)) => write!(f, "newest {n} per column"),
        Some(other) => write!(f, "{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn other_filters_read_as_their_message() {
        let strip = ReadFilter::new(RowFilter {
            filter: Some(Filter::StripValueTransformer(true)),
        });
        assert_eq!(strip.to_string(), "StripValueTransformer(true)");
        assert_eq!(ReadFilter::new(RowFilter::default()).to_string(), "all");
        let range = ReadFilter::new(RowFilter {
            filter: Some(Filter::TimestampRangeFilter(TimestampRange {
                start_timestamp_micros: 5,
                end_timestamp_micros: 9,
            })),
        });
        assert_eq!(range.to_string(), "timestamp >= 5 and < 9");
    }
}
