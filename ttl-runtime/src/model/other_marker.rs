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
            Column::of("a", "title", WhenAbsent::Required),
            Column::of("a", "note", WhenAbsent::ReadsNone),
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
        judged_as(&ARTICLE, cells)
    }

    fn judged_as(schema: &'static Schema, cells: &[CellRef<'static>]) -> Option<&'static [u8]> {
        let now = DateTime::from_timestamp_micros(2_000_000_000_000_000).unwrap();
        let column_of = |f: &str, q: &[u8]| ColumnOf::in_schema(schema, f, q);
        other_marker(schema, column_of, b"k", cells.iter().copied(), now)
    }

    /// `Note { id, title: String, hits: counter, tags: map in `t`,
    /// written_at }` in families `a` and `t`.
    static NOTE: Schema = Schema {
        table: "t",
        policy: Policy::CellExpiry,
        families: &["a", "t"],
        owns_family: false,
        columns: &[
            Column::of("a", "title", WhenAbsent::Required),
            Column::of("a", "hits", WhenAbsent::ReadsZero),
        ],
        maps: &[crate::model::schema::MapColumn {
            field: "tags",
            family: "t",
        }],
        written_at: Some(crate::model::schema::ShadowColumn {
            family: "a",
            qualifier: "written_at",
        }),
        marker: b"\0\0Note",
        key_fields: &["id"],
        key_separator: "",
    };

    /// `Memo { id, text: Option<String> }` in family `a`.
    static MEMO: Schema = Schema {
        table: "t",
        policy: Policy::CellExpiry,
        families: &["a"],
        owns_family: false,
        columns: &[Column::of("a", "text", WhenAbsent::ReadsNone)],
        maps: &[],
        written_at: None,
        marker: b"\0\0Memo",
        key_fields: &["id"],
        key_separator: "",
    };

    /// `Log { id, line: String }` owning family `a`.
    static LOG: Schema = Schema {
        table: "t",
        policy: Policy::CellExpiry,
        families: &["a"],
        owns_family: true,
        columns: &[Column::of("a", "line", WhenAbsent::Required)],
        maps: &[],
        written_at: None,
        marker: b"\0\0Log",
        key_fields: &["id"],
        key_separator: "",
    };

    fn valued(
        family: &'static str,
        qualifier: &'static [u8],
        ts: i64,
        value: Vec<u8>,
    ) -> CellRef<'static> {
        CellRef {
            value: Box::leak(value.into_boxed_slice()),
            ..cell(family, qualifier, ts)
        }
    }

    #[test]
    fn every_cell_a_struct_owns_is_its_own_under_another_marker() {
        let written_at = LATER.to_be_bytes().to_vec();
        let row = [
            cell("a", b"\0", LATER),
            cell("a", b"\0\0Item", LATER),
            valued("a", b"\0hits", LATER, 0i64.to_be_bytes().to_vec()),
            valued("a", b"hits", LATER, 3i64.to_be_bytes().to_vec()),
            cell("a", b"title", LATER),
            valued("a", b"written_at", LATER, written_at),
            cell("t", b"red", LATER),
        ];
        assert_eq!(
            judged_as(&NOTE, &row),
            Some(&b"Item"[..]),
            "the legacy marker, a counter and its window mark, the shadow, an entry"
        );
        let in_second_family = [cell("a", b"title", LATER), cell("t", b"\0\0Item", LATER)];
        assert_eq!(
            judged_as(&NOTE, &in_second_family),
            None,
            "a map's family holds entries only: not a marker there"
        );
    }

    #[test]
    fn the_clue_is_no_proof() {
        // A struct whose fields are all `Option` takes another struct's
        // row holding only its marker for one of its own rows of `None`s,
        // when the marker says nothing of its writer (written before
        // fingerprints) or its writer shares a name with the struct...
        assert_eq!(
            judged_as(&MEMO, &[cell("a", b"\0\0Item", LATER)]),
            Some(&b"Item"[..])
        );
        let sharing = Schema {
            marker: b"\0\0Item",
            ..MEMO
        };
        let marker = valued("a", b"\0\0Item", LATER, sharing.marker_fingerprint());
        assert_eq!(judged_as(&MEMO, &[marker]), Some(&b"Item"[..]));
        // ... not when its fingerprint shows a writer of other names.
        let other = valued("a", b"\0\0Item", LATER, ARTICLE.marker_fingerprint());
        assert_eq!(judged_as(&MEMO, &[other]), None);
        // With `owns_family`, every cell of the family is the struct's.
        let row = [
            cell("a", b"\0\0Item", LATER),
            cell("a", b"email", LATER),
            cell("a", b"line", LATER),
        ];
        assert_eq!(judged_as(&LOG, &row), Some(&b"Item"[..]));
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
