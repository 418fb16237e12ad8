//! Rows a struct leaves out only because of their marker: every visible
//! cell of theirs in the struct's families is one the struct owns, and one
//! other struct's marker stands where its own would. Read as absent, as
//! the liveness rule says of another struct's row (`crate::liveness`); the
//! typed reader reports them when that other struct is not known to it,
//! because they are what a struct renamed without
//! `#[bigtable(marker = "OldName")]` finds of its old rows.

use chrono::{DateTime, Utc};

use crate::model::liveness::Verdict;
use crate::model::schema::{Schema, ROW_MARKER_PREFIX};
use crate::model::view::{CellRef, ColumnOf, RowView};

/// The name in the one other struct's marker row `key` carries (the
/// qualifier without [`ROW_MARKER_PREFIX`]), when the row, judged at `now`
/// with that marker taken for the struct's own, is a live row of the struct
/// of `schema` (its columns told apart by `column_of`, the derive's
/// `BigtableRow::column_of`) and holds no visible cell in the struct's
/// families that the struct does not own. `None` for any other row: one
/// with the struct's own marker, with two other markers, with a cell of
/// another struct or writer beside the struct's, or not live either way.
pub(crate) fn other_marker<'a>(
    schema: &'static Schema,
    column_of: impl Fn(&str, &[u8]) -> ColumnOf,
    key: &'a [u8],
    cells: impl Iterator<Item = CellRef<'a>> + Clone,
    now: DateTime<Utc>,
) -> Option<&'a [u8]> {
    let visibility = schema.policy.visibility(now);
    let marker_family = schema.marker_family();
    let mut found: Option<&'a [u8]> = None;
    for cell in cells.clone() {
        if !visibility.is_visible(cell.timestamp_micros) || !schema.families.contains(&cell.family)
        {
            continue;
        }
        if schema.is_marker(cell.family, cell.qualifier) {
            return None;
        }
        if schema.is_foreign_marker(cell.family, cell.qualifier) {
            if cell.family != marker_family || found.is_some_and(|m| m != cell.qualifier) {
                return None;
            }
            found = Some(cell.qualifier);
        } else if !schema.owns_cell(cell.family, cell.qualifier) {
            return None;
        }
    }
    let marker = found?;
    let as_own = |family: &str, qualifier: &[u8]| {
        if family == marker_family && qualifier == marker {
            ColumnOf::Marker
        } else {
            column_of(family, qualifier)
        }
    };
    let mut view = RowView::empty(schema, key);
    match view.reduce(schema, as_own, cells, now) {
        Ok(Verdict::Live { .. }) => marker.get(ROW_MARKER_PREFIX.len()..),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Policy;
    use crate::model::schema::{Column, WhenAbsent};

    /// `Article { id, title: String, note: Option<String> }` in family `a`,
    /// one-second policy (a cell's timestamp is its expiry).
    static ARTICLE: Schema = Schema {
        table: "t",
        policy: Policy::CellExpiry,
        families: &["a"],
        owns_family: false,
        columns: &[
            Column {
                field: "title",
                family: "a",
                qualifier: "title",
                ttl: None,
                when_absent: WhenAbsent::Required,
            },
            Column {
                field: "note",
                family: "a",
                qualifier: "note",
                ttl: None,
                when_absent: WhenAbsent::ReadsNone,
            },
        ],
        maps: &[],
        written_at: None,
        marker: b"\0\0Article",
        key_fields: &["id"],
        key_separator: "",
    };

    const LATER: i64 = 4_000_000_000_000_000;
    const EARLIER: i64 = 1_000_000;

    fn cell(family: &'static str, qualifier: &'static [u8], ts: i64) -> CellRef<'static> {
        CellRef {
            family,
            qualifier,
            value: b"",
            timestamp_micros: ts,
        }
    }

    fn judged(cells: &[CellRef<'static>]) -> Option<&'static [u8]> {
        let now = DateTime::from_timestamp_micros(2_000_000_000_000_000).unwrap();
        // Copied out: the answer borrows from the cells.
        let column_of = |f: &str, q: &[u8]| ColumnOf::in_schema(&ARTICLE, f, q);
        other_marker(&ARTICLE, column_of, b"k", cells.to_vec().into_iter(), now)
            .map(|m| &*Box::leak(m.to_vec().into_boxed_slice()))
    }

    #[test]
    fn a_row_of_its_own_columns_under_one_other_marker_names_it() {
        let row = [
            cell("a", b"\0\0Item", LATER),
            cell("a", b"note", LATER),
            cell("a", b"title", LATER),
        ];
        assert_eq!(judged(&row), Some(&b"Item"[..]));
    }

    #[test]
    fn any_other_row_is_not_named() {
        let cases: [(&str, Vec<CellRef<'static>>); 6] = [
            (
                "its own marker",
                vec![
                    cell("a", b"\0\0Article", LATER),
                    cell("a", b"\0\0Item", LATER),
                    cell("a", b"title", LATER),
                ],
            ),
            (
                "two other markers",
                vec![
                    cell("a", b"\0\0Item", LATER),
                    cell("a", b"\0\0Memo", LATER),
                    cell("a", b"title", LATER),
                ],
            ),
            (
                "a column it does not declare",
                vec![
                    cell("a", b"\0\0Item", LATER),
                    cell("a", b"email", LATER),
                    cell("a", b"title", LATER),
                ],
            ),
            (
                "a required column missing",
                vec![cell("a", b"\0\0Item", LATER), cell("a", b"note", LATER)],
            ),
            (
                "its columns expired",
                vec![cell("a", b"\0\0Item", LATER), cell("a", b"title", EARLIER)],
            ),
            ("no marker", vec![cell("a", b"title", LATER)]),
        ];
        for (what, row) in cases {
            assert_eq!(judged(&row), None, "{what}");
        }
    }

    #[test]
    fn cells_of_other_families_do_not_count() {
        let row = [
            cell("a", b"\0\0Item", LATER),
            cell("a", b"title", LATER),
            cell("z", b"anything", LATER),
        ];
        assert_eq!(judged(&row), Some(&b"Item"[..]));
    }
}
