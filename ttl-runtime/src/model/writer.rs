//! Which struct wrote a row marker, as far as its value tells: 16-bit
//! hashes of the names of the writer's columns.
//!
//! Two structs of one name in two programs write one marker, so a row
//! marker's qualifier cannot tell them apart, and nothing else in a row of
//! a struct whose fields are all `Option` does (the marker alone makes it).
//! A marker whose value would otherwise be empty therefore carries its
//! writer's **fingerprint**: a tag byte, then the distinct 16-bit hashes of
//! the names of the writer's columns and map families, increasing, two
//! bytes each; of a struct with more than 64, the 64 smallest, under a tag
//! of its own saying so. A reader finding none of its own names' hashes in
//! it (and, in a cut list, each of them at most the last listed) knows the
//! row is another struct's (see [`crate::liveness`]). A later version of a
//! struct keeps most of its columns, and so is never taken for another
//! struct while it keeps one; a struct sharing a column name with the
//! other one is taken for a version of it, and so, by chance, is one of
//! whose names' hashes the list holds one (for `w` names listed in full and
//! `r` read, `1 - (1 - w / 65536)^r`; a cut list tells far less).
//!
//! The value is `1 + 2 n` bytes, never 8: a reader of a version before
//! fingerprints reads any value but an 8-byte one as empty
//! ([`crate::model::liveness::marker_row_ts`]), and so reads a fingerprint
//! as the empty value it replaces; the server-side filters take a value
//! starting with either tag (above every 8-byte row timestamp, whose first
//! byte is below `0x80`) for one whose row has not expired, as they take
//! the empty one.

use crate::model::error::{self, CodecError, Error};
use crate::model::schema::{
    name_hash, Schema, CUT_FINGERPRINT_TAG, FINGERPRINT_MAX_HASHES, FINGERPRINT_TAG,
};

/// The name hashes a marker's fingerprint lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Listed<'a> {
    /// Two bytes a hash, big-endian, increasing as written.
    hashes: &'a [u8],
    /// Only the smallest of its writer's hashes are listed.
    cut: bool,
}

impl<'a> Listed<'a> {
    fn hashes(self) -> impl Iterator<Item = u16> + 'a {
        self.hashes
            .chunks_exact(2)
            .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
    }
}

/// The name hashes a marker's `value` lists, if it carries a fingerprint
/// (none listed: a writer with no names says nothing of itself; a cut list
/// is a full one).
#[must_use]
pub(crate) fn fingerprint_in(value: &[u8]) -> Option<Listed<'_>> {
    let (&tag, hashes) = value.split_first()?;
    let listed = hashes.len() / 2;
    let full = listed == FINGERPRINT_MAX_HASHES;
    let well_formed = hashes.len() % 2 == 0
        && match tag {
            FINGERPRINT_TAG => (1..=FINGERPRINT_MAX_HASHES).contains(&listed),
            CUT_FINGERPRINT_TAG => full,
            _ => false,
        };
    well_formed.then_some(Listed {
        hashes,
        cut: tag == CUT_FINGERPRINT_TAG,
    })
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

/// Whether the `writer`'s listed hashes hold none of `schema`'s names. A
/// cut list holds only its writer's smallest hashes: a name hashing above
/// its last could be one of those left out, so it counts as shared. False
/// for a schema with no names to look for.
#[must_use]
pub(crate) fn shares_no_name(schema: &Schema, writer: Listed<'_>) -> bool {
    let largest = writer.hashes().max().unwrap_or(0);
    let mut names = schema.fingerprint_names().peekable();
    names.peek().is_some()
        && !names.any(|name| {
            let hash = name_hash(name);
            (writer.cut && hash > largest) || writer.hashes().any(|h| h == hash)
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
    fn a_fingerprinted_value_is_the_tag_then_the_hashes_in_order() {
        let s = schema(&[QTY, LABEL, QTY], &[]);
        let value = s.marker_fingerprint();
        let (label, qty) = (name_hash("label"), name_hash("qty"));
        let mut hashes = [label, qty];
        hashes.sort_unstable();
        let mut expected = vec![FINGERPRINT_TAG];
        expected.extend(hashes.iter().flat_map(|h| h.to_be_bytes()));
        assert_eq!(value, expected, "each name once, increasing");
        let listed = fingerprint_in(&value).unwrap();
        assert_eq!((listed.hashes, listed.cut), (&expected[1..], false));
        // What earlier versions wrote carries none: nothing, a row
        // timestamp, the unreleased 64-bit form, an odd or empty list.
        assert_eq!(fingerprint_in(b""), None);
        assert_eq!(fingerprint_in(&7_i64.to_be_bytes()), None);
        assert_eq!(fingerprint_in(&[0xff; 9]), None);
        assert_eq!(fingerprint_in(&[FINGERPRINT_TAG]), None);
        assert_eq!(fingerprint_in(&[FINGERPRINT_TAG, 1, 2, 3]), None);
        // A cut list is a full one.
        assert_eq!(fingerprint_in(&[CUT_FINGERPRINT_TAG, 1, 2]), None);
        let mut other_tag = value;
        other_tag[0] = 0;
        assert_eq!(fingerprint_in(&other_tag), None);
    }

    #[test]
    fn a_fingerprint_is_never_the_eight_bytes_of_a_row_timestamp() {
        for names in 0..=FINGERPRINT_MAX_HASHES + 3 {
            let columns: Vec<Column> = (0..names)
                .map(|i| Column::of("f", leak(format!("c{i}")), WhenAbsent::ReadsNone))
                .collect();
            let value = schema(columns.leak(), &[]).marker_fingerprint();
            assert_eq!(value.len(), 1 + 2 * names.min(FINGERPRINT_MAX_HASHES));
            assert_ne!(value.len(), 8);
            let tag = if names > FINGERPRINT_MAX_HASHES {
                CUT_FINGERPRINT_TAG
            } else {
                FINGERPRINT_TAG
            };
            assert_eq!(value[0], tag, "{names} names");
        }
    }

    fn leak(name: String) -> &'static str {
        Box::leak(name.into_boxed_str())
    }

    /// `n` names no other call of this test makes, from `seed` on.
    fn names(seed: &mut u64, n: usize) -> &'static [Column] {
        let columns: Vec<Column> = (0..n)
            .map(|_| {
                *seed += 1;
                Column::of("f", leak(format!("name{seed}")), WhenAbsent::ReadsNone)
            })
            .collect();
        columns.leak()
    }

    #[test]
    fn structs_of_disjoint_names_are_told_apart_but_by_rare_chance() {
        // 2,000 pairs of five names each: by the hashes' 16 bits about
        // 25 / 65,536 of them (0.04 %, one pair in 2,600) go unnoticed;
        // a 64-bit Bloom filter of two bits a name missed 67 of these.
        let (mut seed, mut unnoticed) = (0, 0);
        for _ in 0..2_000 {
            let writer = schema(names(&mut seed, 5), &[]).marker_fingerprint();
            let reader = schema(names(&mut seed, 5), &[]);
            if !written_by_another_struct(&reader, &writer) {
                unnoticed += 1;
            }
        }
        assert!(
            unnoticed <= 6,
            "{unnoticed} of 2,000 disjoint pairs unnoticed"
        );
    }

    #[test]
    fn a_cut_list_tells_only_of_names_up_to_its_last_hash() {
        let mut seed = 0;
        let many = names(&mut seed, 3 * FINGERPRINT_MAX_HASHES);
        let value = schema(many, &[]).marker_fingerprint();
        let listed = fingerprint_in(&value).unwrap();
        assert!(listed.cut);
        assert_eq!(listed.hashes().count(), FINGERPRINT_MAX_HASHES);
        let largest = listed.hashes().last().unwrap();
        // Every one of its names, listed or not, reads its rows as a
        // version's: a name left out hashes above the last listed.
        for column in many {
            let one = std::slice::from_ref(column);
            assert!(!written_by_another_struct(&schema(one, &[]), &value));
        }
        // A stranger is told only by names the list would hold.
        for column in names(&mut seed, 200) {
            let one = std::slice::from_ref(column);
            let told = written_by_another_struct(&schema(one, &[]), &value);
            let hash = name_hash(column.qualifier);
            let shares = many.iter().any(|c| name_hash(c.qualifier) == hash);
            assert_eq!(told, hash <= largest && !shares, "{}", column.qualifier);
        }
    }

    #[test]
    fn a_list_of_exactly_the_most_hashes_is_whole() {
        let mut seed = 0;
        let all = names(&mut seed, FINGERPRINT_MAX_HASHES);
        let value = schema(all, &[]).marker_fingerprint();
        let listed = fingerprint_in(&value).unwrap();
        assert!(!listed.cut, "nothing left out");
        assert_eq!(
            listed.hashes().count(),
            FINGERPRINT_MAX_HASHES,
            "no two hash alike"
        );
        let largest = listed.hashes().last().unwrap();
        // A stranger is told by any name, above the last listed too.
        let mut above = 0;
        for column in names(&mut seed, 200) {
            let one = std::slice::from_ref(column);
            let hash = name_hash(column.qualifier);
            let shares = all.iter().any(|c| name_hash(c.qualifier) == hash);
            above += usize::from(hash > largest);
            assert_eq!(
                written_by_another_struct(&schema(one, &[]), &value),
                !shares,
                "{}",
                column.qualifier
            );
        }
        assert!(above > 0, "some names hash above the list");
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
        assert_eq!(nameless.marker_fingerprint(), [FINGERPRINT_TAG]);
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
