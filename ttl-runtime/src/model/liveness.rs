//! When a row is alive: the one rule that the typed reader, every
//! server-side condition and every planner of a rewrite follow.
//!
//! # Visible cells
//!
//! A cell is *visible* at `now` when its policy says it has not expired
//! ([`crate::Policy`]); garbage collection may still hold expired cells, and
//! they never count. Of each column, only its newest visible cell counts.
//!
//! # Live rows
//!
//! A row is **live** at `now` when:
//!
//! * its struct has **required** fields (neither `Option`, nor
//!   `#[bigtable(default)]`, nor a counter): **every** required field's
//!   column has a visible cell;
//! * otherwise: its `written_at` shadow column or any of its columns has a
//!   visible cell, or, in a struct whose fields are all `Option`, its row
//!   marker or any entry of one of its maps.
//!
//! What else a row holds (`Option`, default and counter fields, fields with
//! their own TTL, map entries) is read **only while the row is live**: it
//! never makes a row live on its own, so a row whose required fields have
//! expired cannot come back through a field that outlived them, an entry
//! written with a longer TTL, or a counter. A row that is not live reads as
//! absent, whatever it still stores; [`Table::get`](crate::Table::get)
//! returns `None`, conditions see no row, and rewrites (`update`, `touch`,
//! `set_ttl`, …) leave it alone. Only a write of a whole row (`put`,
//! `insert_if_absent`, `put_if`, an `increment` that creates its row) makes
//! it live again, and such a write replaces every column and map of the row.
//!
//! # Expiry
//!
//! A live row **expires** when it stops being live: in a struct with
//! required fields, at the earliest expiry among them (every write of this
//! library gives them one timestamp, so that is the row's); otherwise at
//! the latest expiry of its shadow column and columns (and marker), or of
//! its entries when only entries are left.
//!
//! # The row marker
//!
//! Every write of a whole row also stores a **row marker**: an empty cell
//! with the one-byte qualifier `\0` ([`ROW_MARKER`](crate::model::schema::ROW_MARKER)) in the struct's first
//! family, at the row's timestamp (Cassandra's row liveness marker plays the
//! same part). It does two things:
//!
//! * a row of a struct whose fields are all `Option` exists even with every
//!   field `None` (so `insert_if_absent` of such a value has one winner).
//!   Only there does the marker make a row: a struct with a default or
//!   counter field writes that field's cell on every put, and a row of
//!   another struct sharing the family (whose marker is there too) is not
//!   turned into a row of defaults;
//! * it tells a row this library wrote whole from one assembled piece by
//!   piece. A row with a live marker but a required column that holds no
//!   cell at all was written by a struct without that field: the struct and
//!   the table disagree, and the read fails with [`crate::Error::Decode`]
//!   naming the column (add `#[bigtable(default)]` to the new field). Any
//!   other row missing a required column (written column by column, by
//!   another program or by `migrate`, whose older columns expired or were
//!   garbage-collected) is simply not live: left out of reads and counted,
//!   never an error.
//!
//! Rows written before the marker existed read exactly as before: the rule
//! above does not need it for structs with required fields.

use crate::model::schema::Schema;

/// The newest visible timestamp of the parts of a row that are not
/// columns, at one "now".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Newest {
    /// The row marker.
    pub(crate) marker: Option<i64>,
    /// The `written_at` shadow column.
    pub(crate) written_at: Option<i64>,
    /// Any entry of any map field.
    pub(crate) entry: Option<i64>,
}

/// What a row is at one "now", by the rule of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Live; `row_ts` is the timestamp its expiry comes from.
    Live {
        /// The timestamp carrying the row's expiry.
        row_ts: i64,
    },
    /// Not live, and nothing of its own columns is visible.
    Absent,
    /// Not live, though some of its columns (or its marker or shadow) are
    /// visible: required column `missing` has no visible cell. A row
    /// written piece by piece whose older columns expired, a row whose
    /// struct gained a required field (`marked`: its marker is visible), or
    /// on the emulator, whose reads are not row-atomic, a read torn by a
    /// concurrent write.
    Partial {
        /// The first required column (an index of `Schema::columns`)
        /// without a visible cell.
        missing: usize,
        /// Whether the row marker is visible.
        marked: bool,
    },
}

impl Verdict {
    /// The timestamp carrying a live row's expiry.
    pub(crate) fn row_ts(self) -> Option<i64> {
        match self {
            Verdict::Live { row_ts } => Some(row_ts),
            Verdict::Absent | Verdict::Partial { .. } => None,
        }
    }
}

/// The verdict on a row of `schema`, from the newest visible timestamp of
/// each of its columns (`column(i)` for column `i` of `Schema::columns`)
/// and of its other parts.
#[inline]
pub(crate) fn verdict(
    schema: &Schema,
    newest: Newest,
    column: impl Fn(usize) -> Option<i64>,
) -> Verdict {
    let mut any_required = false;
    let mut missing = None;
    let mut earliest_required: Option<i64> = None;
    let mut latest_column: Option<i64> = None;
    for (i, c) in schema.columns.iter().enumerate() {
        let ts = column(i);
        latest_column = latest_column.max(ts);
        if c.is_required() {
            any_required = true;
            match ts {
                Some(ts) => earliest_required = Some(earliest_required.map_or(ts, |e| e.min(ts))),
                None => {
                    missing.get_or_insert(i);
                }
            }
        }
    }
    if any_required {
        return match (missing, earliest_required) {
            (None, Some(row_ts)) => Verdict::Live { row_ts },
            (Some(missing), _)
                if latest_column.is_some()
                    || newest.marker.is_some()
                    || newest.written_at.is_some() =>
            {
                Verdict::Partial {
                    missing,
                    marked: newest.marker.is_some(),
                }
            }
            _ => Verdict::Absent,
        };
    }
    let all_options = schema.all_fields_optional();
    let marker = newest.marker.filter(|_| all_options);
    if let Some(row_ts) = marker.max(newest.written_at).max(latest_column) {
        return Verdict::Live { row_ts };
    }
    match newest.entry {
        Some(row_ts) if all_options => Verdict::Live { row_ts },
        _ => Verdict::Absent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Policy;
    use crate::model::schema::{Column, MapColumn, WhenAbsent};

    const fn column(qualifier: &'static str, when_absent: WhenAbsent) -> Column {
        Column {
            field: qualifier,
            family: "f",
            qualifier,
            ttl: None,
            when_absent,
        }
    }

    const fn schema(columns: &'static [Column], maps: &'static [MapColumn]) -> Schema {
        Schema {
            table: "t",
            policy: Policy::CellExpiry,
            families: &["f", "m"],
            owns_family: false,
            columns,
            maps,
            written_at: None,
            key_fields: &["id"],
            key_separator: "",
        }
    }

    static REQUIRED: Schema = schema(
        &[
            column("a", WhenAbsent::Required),
            column("b", WhenAbsent::Required),
            column("n", WhenAbsent::ReadsZero),
        ],
        &[MapColumn {
            field: "m",
            family: "m",
        }],
    );
    static OPTIONAL: Schema = schema(
        &[column("o", WhenAbsent::ReadsNone)],
        &[MapColumn {
            field: "m",
            family: "m",
        }],
    );
    static COUNTED: Schema = schema(
        &[column("n", WhenAbsent::ReadsZero)],
        &[MapColumn {
            field: "m",
            family: "m",
        }],
    );

    fn cols(ts: &'static [Option<i64>]) -> impl Fn(usize) -> Option<i64> {
        move |i| ts[i]
    }

    #[test]
    fn required_fields_all_live_make_the_row_live_until_the_earliest() {
        let v = verdict(
            &REQUIRED,
            Newest::default(),
            cols(&[Some(5), Some(3), None]),
        );
        assert_eq!(v, Verdict::Live { row_ts: 3 });
    }

    #[test]
    fn one_required_field_missing_leaves_the_row_out_whatever_else_is_live() {
        let entry_and_counter = Newest {
            entry: Some(9),
            ..Newest::default()
        };
        assert_eq!(
            verdict(
                &REQUIRED,
                entry_and_counter,
                cols(&[Some(5), None, Some(9)])
            ),
            Verdict::Partial {
                missing: 1,
                marked: false
            }
        );
        let marked = Newest {
            marker: Some(5),
            ..Newest::default()
        };
        assert_eq!(
            verdict(&REQUIRED, marked, cols(&[None, None, None])),
            Verdict::Partial {
                missing: 0,
                marked: true
            }
        );
        // Entries alone are nothing of the row's own.
        assert_eq!(
            verdict(&REQUIRED, entry_and_counter, cols(&[None, None, None])),
            Verdict::Absent
        );
    }

    #[test]
    fn without_required_fields_the_marker_or_any_column_makes_the_row() {
        let marker = Newest {
            marker: Some(4),
            ..Newest::default()
        };
        assert_eq!(
            verdict(&OPTIONAL, marker, cols(&[None])),
            Verdict::Live { row_ts: 4 }
        );
        assert_eq!(
            verdict(&OPTIONAL, marker, cols(&[Some(7)])),
            Verdict::Live { row_ts: 7 }
        );
        assert_eq!(
            verdict(&OPTIONAL, Newest::default(), cols(&[None])),
            Verdict::Absent
        );
    }

    #[test]
    fn the_marker_alone_makes_no_row_of_defaults_or_counters() {
        let marker = Newest {
            marker: Some(4),
            ..Newest::default()
        };
        assert_eq!(verdict(&COUNTED, marker, cols(&[None])), Verdict::Absent);
        assert_eq!(
            verdict(&COUNTED, marker, cols(&[Some(4)])),
            Verdict::Live { row_ts: 4 }
        );
    }

    #[test]
    fn entries_make_a_row_only_when_every_field_is_an_option() {
        let entry = Newest {
            entry: Some(8),
            ..Newest::default()
        };
        assert_eq!(
            verdict(&OPTIONAL, entry, cols(&[None])),
            Verdict::Live { row_ts: 8 }
        );
        // A counter bounds its entries: they do not keep its row.
        assert_eq!(verdict(&COUNTED, entry, cols(&[None])), Verdict::Absent);
    }
}
