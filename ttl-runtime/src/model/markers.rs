//! Which rows lack their struct's row marker, and what to write: the pure
//! judgement behind `Table::add_markers` (`crate::client::table::markers`),
//! by the rule of [`crate::liveness`].

use chrono::{DateTime, Utc};

use crate::model::cell::Cell;
use crate::model::liveness::{marker_value, Settled, Verdict};
use crate::model::row_cells::RowCells;
use crate::model::schema::{Schema, LEGACY_ROW_MARKER};

/// What one row needs, judged on its stored cells at `now`; after a
/// write, what became of it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Write the struct's marker, `(timestamp, value)`.
    Marker(i64, Vec<u8>),
    /// Write the struct's marker at the timestamp of the legacy one, the
    /// only cell of a row of a struct whose fields are all `Option`.
    LegacyMarker(i64),
    /// Nothing: the marker was written.
    Written,
    /// Nothing: live and marked already.
    Marked,
    /// Nothing: incomplete.
    Incomplete,
    /// Nothing: not live.
    NotLive,
    /// Nothing: another struct's row.
    Other,
}

/// What a row of `schema` stored as `cells` needs at `now`.
pub(crate) fn need(schema: &Schema, cells: &[Cell], now: DateTime<Utc>) -> Need {
    match need_of(&RowCells::of(schema, cells, now)) {
        Need::NotLive => legacy_only(schema, cells, now).unwrap_or(Need::NotLive),
        need => need,
    }
}

/// What a row as judged needs: its marker only when it is the struct's
/// beyond doubt: live, carrying no other struct's marker, and holding no
/// cell of the struct's families that the struct does not own.
pub(crate) fn need_of(row: &RowCells<'_>) -> Need {
    let schema = row.schema();
    let marked = row.marked();
    if !marked && row.foreign_marker() {
        return Need::Other;
    }
    match row.verdict() {
        Verdict::Live { .. } if marked => Need::Marked,
        Verdict::Live { .. } if row.stranger_cells() => Need::Other,
        Verdict::Live { row_ts } => {
            // The newest required timestamp: the marker must outlive every
            // required column it vouches for.
            let ts = schema
                .columns
                .iter()
                .filter(|c| c.is_required())
                .filter_map(|c| row.get(c.family, c.qualifier.as_bytes()))
                .map(|c| c.timestamp_micros)
                .max()
                .unwrap_or(row_ts);
            let value =
                marker_value(ts, row_ts).map_or_else(|| schema.marker_fingerprint(), Vec::from);
            Need::Marker(ts, value)
        }
        // Read unfiltered: a required column whose cells all expired
        // proves the row expired, as it does to a read.
        Verdict::Partial { .. } => match row.settled() {
            Settled::PartlyExpired => Need::NotLive,
            Settled::Incomplete { .. } | Settled::Torn => Need::Incomplete,
        },
        Verdict::Absent => Need::NotLive,
        Verdict::WrittenByAnotherStruct => Need::Other,
    }
}

/// A row of a struct whose fields are all `Option` that only the legacy
/// one-byte marker holds (every field `None` when it was written), with no
/// cell of another struct beside it: its marker at the legacy one's
/// timestamp. Such a row holding anything else is another struct's.
fn legacy_only(schema: &Schema, cells: &[Cell], now: DateTime<Utc>) -> Option<Need> {
    if !schema.all_fields_optional() || schema.marker == LEGACY_ROW_MARKER {
        return None;
    }
    let legacy = Schema {
        marker: LEGACY_ROW_MARKER,
        ..*schema
    };
    let row = RowCells::of(&legacy, cells, now);
    match row.verdict() {
        Verdict::Live { .. } if row.foreign_marker() || row.stranger_cells() => Some(Need::Other),
        Verdict::Live { row_ts } => Some(Need::LegacyMarker(row_ts)),
        Verdict::WrittenByAnotherStruct => Some(Need::Other),
        Verdict::Absent | Verdict::Partial { .. } => None,
    }
}
