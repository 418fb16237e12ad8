//! Which struct wrote a row marker, as far as its value tells: the names
//! of the writer's columns, folded into 64 bits.
//!
//! Two structs of one name in two programs write one marker, so a row
//! marker's qualifier cannot tell them apart, and nothing else in a row of
//! a struct whose fields are all `Option` does (the marker alone makes it).
//! A marker whose value would otherwise be empty therefore carries its
//! writer's **fingerprint**: a tag byte, then a 64-bit Bloom filter of the
//! names of the writer's columns and map families, two bits a name. A
//! reader finding none of its own names in it knows the row is another
//! struct's (see [`crate::liveness`]). A later version of a struct keeps
//! most of its columns, and so is never taken for another struct while
//! it keeps one; a struct sharing a column name with the other one is
//! taken for a version of it.
//!
//! A reader of a version before fingerprints reads any value but an 8-byte
//! one as empty ([`crate::model::liveness::marker_row_ts`]), and so reads a
//! fingerprint as the empty value it replaces; the server-side filters
//! take a value starting with the tag (above every 8-byte row timestamp,
//! whose first byte is below `0x80`) for one whose row has not expired, as
//! they take the empty one.

use crate::model::error::{self, CodecError, Error};
use crate::model::schema::{name_bits, Schema, FINGERPRINT_TAG};

/// The fingerprint a marker's `value` carries, if it carries one (not
/// zero: a writer with no names says nothing of itself).
#[must_use]
pub(crate) fn fingerprint_in(value: &[u8]) -> Option<u64> {
    let (&tag, bits) = value.split_first()?;
    let bits = <[u8; 8]>::try_from(bits).ok()?;
    let bits = u64::from_be_bytes(bits);
    (tag == FINGERPRINT_TAG && bits != 0).then_some(bits)
}

/// Whether a marker carrying `value` was written by a struct that declares
/// none of `schema`'s names: another struct that happens to write the same
/// marker, never a version of `schema`'s struct that kept one of its
/// columns. False when `value` carries no fingerprint, or `schema` has no
/// names to look for.
#[must_use]
pub(crate) fn written_by_another_struct(schema: &Schema, value: &[u8]) -> bool {
    fingerprint_in(value).is_some_and(|writer| shares_no_name(schema, writer))
}

/// Whether the `writer` fingerprint holds none of `schema`'s names (false
/// for a schema with no names to look for).
#[must_use]
pub(crate) fn shares_no_name(schema: &Schema, writer: u64) -> bool {
    let mut names = schema.fingerprint_names().peekable();
    names.peek().is_some()
        && !names.any(|name| {
            let bits = name_bits(name);
            writer & bits == bits
        })
}

/// What a read of `schema`'s struct reports of row `key`, whose marker
/// another struct of the same marker wrote ([`written_by_another_struct`]): not
/// its row, and not one to take for absent either, since a write of the
/// struct would meet that struct's marker.
pub(crate) fn another_structs_row_error(schema: &Schema, key: &[u8]) -> Error {
    Error::from(error::Decode {
        table: schema.table.to_owned(),
        row_key: key.to_vec(),
        column: format!(
            "{}:{}",
            schema.marker_family(),
            schema.marker.escape_ascii()
        ),
        source: CodecError::WrittenByAnotherStruct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Policy;
    use crate::model::schema::{Column, MapColumn, WhenAbsent};

    fn schema(columns: &'static [Column], maps: &'static [MapColumn]) -> Schema {
        Schema {
            table: "t",
            policy: Policy::CellExpiry,
            families: &["f"],
            owns_family: false,
            columns,
            maps,
            written_at: None,
            marker: b"\0\0Item",
            key_fields: &["id"],
            key_separator: "",
        }
    }

    const LABEL: Column = Column::of("f", "label", WhenAbsent::ReadsNone);
    const QTY: Column = Column::of("f", "qty", WhenAbsent::ReadsNone);
    const SEEN: Column = Column::of("f", "seen", WhenAbsent::ReadsNone);
    const TAGS: MapColumn = MapColumn {
        field: "tags",
        family: "tags",
    };

    #[test]
    fn a_fingerprinted_value_is_the_tag_then_the_bits() {
        let s = schema(&[LABEL, QTY], &[]);
        let value = s.marker_fingerprint();
        assert_eq!(value[0], FINGERPRINT_TAG);
        assert_eq!(fingerprint_in(&value), Some(s.fingerprint()));
        assert_eq!(s.fingerprint().count_ones(), {
            let distinct = name_bits("label") | name_bits("qty");
            distinct.count_ones()
        });
        // What earlier versions wrote carries none.
        assert_eq!(fingerprint_in(b""), None);
        assert_eq!(fingerprint_in(&7_i64.to_be_bytes()), None);
        assert_eq!(fingerprint_in(&[FINGERPRINT_TAG; 8]), None);
        let mut other_tag = value;
        other_tag[0] = 0;
        assert_eq!(fingerprint_in(&other_tag), None);
    }

    #[test]
    fn a_struct_sharing_no_name_with_the_writer_is_a_stranger_to_its_rows() {
        let writer = schema(&[SEEN], &[]);
        let value = writer.marker_fingerprint();
        assert!(written_by_another_struct(&schema(&[LABEL], &[]), &value));
        assert!(written_by_another_struct(
            &schema(&[LABEL, QTY], &[]),
            &value
        ));
        // Its own rows, and those of any version sharing a name.
        assert!(!written_by_another_struct(&writer, &value));
        assert!(!written_by_another_struct(
            &schema(&[LABEL, SEEN], &[]),
            &value
        ));
        let grown = schema(&[SEEN, QTY], &[]).marker_fingerprint();
        assert!(!written_by_another_struct(&writer, &grown));
    }

    #[test]
    fn map_families_are_names_too() {
        let writer = schema(&[], &[TAGS]).marker_fingerprint();
        assert!(!written_by_another_struct(
            &schema(&[LABEL], &[TAGS]),
            &writer
        ));
        assert!(written_by_another_struct(&schema(&[LABEL], &[]), &writer));
    }

    #[test]
    fn without_a_fingerprint_or_names_nothing_is_told() {
        let reader = schema(&[LABEL], &[]);
        assert!(!written_by_another_struct(&reader, b""));
        assert!(!written_by_another_struct(&reader, &9_i64.to_be_bytes()));
        // A writer of no names, or a reader of none.
        let nameless = schema(&[], &[]);
        assert_eq!(nameless.fingerprint(), 0);
        assert!(!written_by_another_struct(
            &reader,
            &nameless.marker_fingerprint()
        ));
        assert!(!written_by_another_struct(
            &nameless,
            &schema(&[SEEN], &[]).marker_fingerprint()
        ));
    }

    #[test]
    fn a_fingerprint_orders_above_every_row_timestamp() {
        let value = schema(&[LABEL], &[]).marker_fingerprint();
        assert!(value.as_slice() > i64::MAX.to_be_bytes().as_slice());
    }
}
