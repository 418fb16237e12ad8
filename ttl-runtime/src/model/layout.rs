//! Layouts that cannot be kept apart: two structs of one table that would
//! write the same cells (see the guide's "Several structs in one table").
//! Pure: [`clash`] compares two schemas; the connection keeps the structs
//! it has seen (`client::layouts`).

pub use crate::model::clash::{ClashKind, LayoutClash};
use crate::model::schema::Schema;

/// What `a` (named `a_name`) and `b` of one table would both write, if
/// anything; `this` is the struct whose declaration the clash is told from
/// (the one whose map or owned family the other stores cells in).
#[must_use]
pub(crate) fn clash(
    table: &str,
    (a_name, a): (&'static str, &Schema),
    (b_name, b): (&'static str, &Schema),
) -> Option<LayoutClash> {
    let (this, other, kind) = match one_side(a, b) {
        Some(kind) => (a_name, b_name, kind),
        None => (b_name, a_name, one_side(b, a)?),
    };
    Some(LayoutClash {
        table: table.to_owned(),
        this,
        other,
        kind,
    })
}

/// What `a` declares that `b` writes too.
fn one_side(a: &Schema, b: &Schema) -> Option<ClashKind> {
    let a_family = a.marker_family();
    if a.marker == b.marker && a_family == b.marker_family() {
        return Some(ClashKind::Marker {
            family: a_family,
            marker: a.marker,
        });
    }
    for map in a.maps {
        if stores_in(b, map.family) {
            return Some(ClashKind::MapFamily {
                family: map.family,
                field: map.field,
            });
        }
    }
    if a.owns_family && stores_in(b, a_family) {
        return Some(ClashKind::OwnedFamily { family: a_family });
    }
    if let Some(shadow) = a.written_at {
        let q = shadow.qualifier.as_bytes();
        if b.is_written_at(shadow.family, q) || b.column_index(shadow.family, q).is_some() {
            return Some(ClashKind::Shadow {
                family: shadow.family,
                qualifier: shadow.qualifier,
            });
        }
    }
    None
}

/// Whether `schema`'s struct stores any cell in `family`.
fn stores_in(schema: &Schema, family: &str) -> bool {
    schema.families.contains(&family)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Policy;
    use crate::model::schema::{Column, MapColumn, ShadowColumn, WhenAbsent};

    const fn column(family: &'static str, qualifier: &'static str) -> Column {
        Column::of(family, qualifier, WhenAbsent::Required)
    }

    const fn schema(
        families: &'static [&'static str],
        columns: &'static [Column],
        maps: &'static [MapColumn],
        written_at: Option<ShadowColumn>,
        marker: &'static [u8],
    ) -> Schema {
        Schema {
            table: "t",
            policy: Policy::CellExpiry,
            families,
            owns_family: false,
            columns,
            maps,
            written_at,
            marker,
            key_fields: &["id"],
            key_separator: "",
        }
    }

    const SHADOW: Option<ShadowColumn> = Some(ShadowColumn {
        family: "s",
        qualifier: "written_at",
    });
    static CUSTOMER: Schema = schema(
        &["s"],
        &[column("s", "name"), column("s", "email")],
        &[],
        None,
        b"\0\0Customer",
    );
    static LABEL: Schema = schema(&["s"], &[column("s", "name")], &[], None, b"\0\0Label");

    #[test]
    fn shared_column_names_are_a_layout_not_a_clash() {
        assert_eq!(clash("t", ("C", &CUSTOMER), ("L", &LABEL)), None);
    }

    static ITEM: Schema = schema(&["s"], &[column("s", "sku")], &[], None, b"\0\0Item");
    static OTHER_ITEM: Schema = schema(&["s"], &[column("s", "label")], &[], None, b"\0\0Item");
    static CART: Schema = schema(
        &["s", "tags"],
        &[column("s", "id2")],
        &[MapColumn {
            field: "items",
            family: "tags",
        }],
        None,
        b"\0\0Cart",
    );
    static WISH: Schema = schema(
        &["w", "tags"],
        &[column("w", "who")],
        &[MapColumn {
            field: "wishes",
            family: "tags",
        }],
        None,
        b"\0\0Wish",
    );
    static POST: Schema = schema(&["s"], &[column("s", "body")], &[], SHADOW, b"\0\0Post");
    static LIKE: Schema = schema(&["s"], &[column("s", "who")], &[], SHADOW, b"\0\0Like");
    static WRITTEN: Schema = schema(&["s"], &[column("s", "written_at")], &[], None, b"\0\0W");
    static LIKE_OWN: Schema = schema(
        &["s"],
        &[column("s", "who")],
        &[],
        Some(ShadowColumn {
            family: "s",
            qualifier: "like_written_at",
        }),
        b"\0\0Like",
    );
    static OWNER: Schema = Schema {
        owns_family: true,
        ..schema(&["s"], &[column("s", "x")], &[], None, b"\0\0Owner")
    };

    #[test]
    fn one_marker_one_map_family_one_shadow_or_an_owned_family_clash() {
        let c = clash("t", ("a::Item", &ITEM), ("b::Item", &OTHER_ITEM)).unwrap();
        assert_eq!(
            c.kind,
            ClashKind::Marker {
                family: "s",
                marker: b"\0\0Item"
            }
        );
        assert!(c.to_string().contains("`a::Item` and `b::Item`"), "{c}");
        assert!(c.to_string().contains("#[bigtable(marker"), "{c}");

        let c = clash("t", ("Cart", &CART), ("Wish", &WISH)).unwrap();
        assert_eq!(
            c.kind,
            ClashKind::MapFamily {
                family: "tags",
                field: "items"
            }
        );
        // Seen from the other side, the other map is named.
        let c = clash("t", ("Wish", &WISH), ("Cart", &CART)).unwrap();
        assert_eq!(
            c.kind,
            ClashKind::MapFamily {
                family: "tags",
                field: "wishes"
            }
        );

        let c = clash("t", ("Post", &POST), ("Like", &LIKE)).unwrap();
        assert!(matches!(c.kind, ClashKind::Shadow { family: "s", .. }));
        // A shadow named like another struct's column.
        assert!(matches!(
            clash("t", ("W", &WRITTEN), ("Post", &POST)).unwrap().kind,
            ClashKind::Shadow { .. }
        ));
        // Shadows of their own: no clash.
        assert_eq!(clash("t", ("Post", &POST), ("Like", &LIKE_OWN)), None);

        let c = clash("t", ("Label", &LABEL), ("Owner", &OWNER)).unwrap();
        assert_eq!(c.kind, ClashKind::OwnedFamily { family: "s" });
        assert!(c.to_string().starts_with("`Owner` owns family"), "{c}");
    }
}
