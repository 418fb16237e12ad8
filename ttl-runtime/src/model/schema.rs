//! The schema a derived struct declares, as plain data.

use chrono::TimeDelta;

use crate::model::policy::Policy;

/// How every row marker's qualifier starts: two NUL bytes, then the name of
/// the struct that wrote it ([`Schema::marker`], see [`crate::liveness`]).
/// No column can start so (the derive refuses a qualifier starting with a
/// NUL byte), nor a counter's window mark (a NUL byte, then the counter's
/// qualifier, which is not NUL).
pub const ROW_MARKER_PREFIX: &[u8] = b"\0\0";

/// The qualifier of the row marker this library wrote before markers were
/// per struct: one NUL byte, shared by every struct of a family. Read as
/// the struct's own marker only by a struct that owns its family
/// ([`Schema::owns_family`]), where no other struct can have written it;
/// ignored by every other struct (see [`crate::liveness`]).
pub const LEGACY_ROW_MARKER: &[u8] = b"\0";

/// The qualifier of the row marker of the struct named `name`:
/// [`ROW_MARKER_PREFIX`] then the name. For a [`Schema`] built by hand
/// (`marker: row_marker("Profile").leak()`); the derive writes the bytes.
#[must_use]
pub fn row_marker(name: &str) -> Vec<u8> {
    let mut marker = Vec::with_capacity(ROW_MARKER_PREFIX.len() + name.len());
    marker.extend_from_slice(ROW_MARKER_PREFIX);
    marker.extend_from_slice(name.as_bytes());
    marker
}

/// The qualifier of the window mark of the counter stored as `qualifier`:
/// a NUL byte (reserved: no field's column starts with one), then the
/// counter's qualifier (see `crate::model::counter`). In the counter's
/// family, its timestamp one millisecond before the counter's, its value an
/// 8-byte zero.
#[must_use]
pub fn window_mark(qualifier: &str) -> Vec<u8> {
    let mut mark = Vec::with_capacity(qualifier.len() + 1);
    mark.push(0);
    mark.extend_from_slice(qualifier.as_bytes());
    mark
}

/// The first byte of a row marker's value carrying its writer's
/// fingerprint ([`Schema::marker_fingerprint`]) that lists every name's
/// hash: above the first byte of every row timestamp a marker carries
/// (non-negative, 8 bytes big-endian), so the two never mix up, and a
/// value range above the timestamps holds every fingerprint. (`0xff` then
/// 8 bytes was an earlier, unreleased form, a 64-bit Bloom filter of the
/// names: read as carrying nothing.)
pub(crate) const FINGERPRINT_TAG: u8 = 0xfe;

/// The first byte of a fingerprint cut to the [`FINGERPRINT_MAX_HASHES`]
/// smallest hashes of a struct that has more: a reader must not take a
/// name hashing above the last listed for one its writer lacks. The lower
/// of the two tags, where a value range of the row timestamps ends.
pub(crate) const CUT_FINGERPRINT_TAG: u8 = 0xfd;

/// How many name hashes a fingerprint lists at most. Part of what is
/// stored: a cut list is read as holding every hash of its writer up to its
/// last, so a later version may raise it but never lower it.
pub(crate) const FINGERPRINT_MAX_HASHES: usize = 64;

/// FNV-1a, 64 bits, written out: a `const fn` (a derived struct's
/// fingerprint is computed when it compiles), and part of what is stored,
/// so no dependency's release may change it (the `fnv` crate's hasher is
/// not `const`).
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The 16-bit hash of `name` a fingerprint lists: its 64-bit FNV-1a hash,
/// its four 16-bit quarters combined by exclusive or.
#[allow(clippy::cast_possible_truncation)] // the fold keeps 16 bits on purpose
pub(crate) const fn name_hash(name: &str) -> u16 {
    let hash = fnv1a(name.as_bytes());
    (hash ^ (hash >> 16) ^ (hash >> 32) ^ (hash >> 48)) as u16
}

/// A struct's fingerprint as its row marker's value carries it: a tag,
/// then the distinct [`name_hash`]es of its names in increasing order, two
/// bytes each, big-endian. A struct of more than [`FINGERPRINT_MAX_HASHES`]
/// distinct hashes lists the smallest that many under
/// [`CUT_FINGERPRINT_TAG`] (so that a reader still knows every hash up to
/// the last listed), any other under [`FINGERPRINT_TAG`]. Built by a
/// `const fn`: a whole-row write takes the one computed when the struct
/// compiled.
#[derive(Clone, Copy)]
pub(crate) struct Fingerprint {
    bytes: [u8; 1 + 2 * FINGERPRINT_MAX_HASHES],
    len: usize,
}

/// The smallest distinct hashes of the names seen so far, increasing,
/// and whether a larger one was left out: a [`Fingerprint`] being built.
struct Smallest {
    hashes: [u16; FINGERPRINT_MAX_HASHES],
    count: usize,
    cut: bool,
}

impl Smallest {
    const NONE: Smallest = Smallest {
        hashes: [0; FINGERPRINT_MAX_HASHES],
        count: 0,
        cut: false,
    };

    /// The same with `hash` among them: kept in order (an insertion, in
    /// a `const fn`), the largest left out when they would be too many.
    const fn with(mut self, hash: u16) -> Smallest {
        let mut at = 0;
        while at < self.count && self.hashes[at] < hash {
            at += 1;
        }
        if at < self.count && self.hashes[at] == hash {
            return self;
        }
        if self.count == FINGERPRINT_MAX_HASHES {
            self.cut = true;
            if at == FINGERPRINT_MAX_HASHES {
                return self;
            }
        } else {
            self.count += 1;
        }
        let mut j = self.count - 1;
        while j > at {
            self.hashes[j] = self.hashes[j - 1];
            j -= 1;
        }
        self.hashes[at] = hash;
        self
    }

    /// The fingerprint listing them.
    const fn fingerprint(&self) -> Fingerprint {
        let tag = if self.cut {
            CUT_FINGERPRINT_TAG
        } else {
            FINGERPRINT_TAG
        };
        let mut bytes = [tag; 1 + 2 * FINGERPRINT_MAX_HASHES];
        let mut k = 0;
        while k < self.count {
            let [hi, lo] = self.hashes[k].to_be_bytes();
            bytes[1 + 2 * k] = hi;
            bytes[2 + 2 * k] = lo;
            k += 1;
        }
        Fingerprint {
            bytes,
            len: 1 + 2 * self.count,
        }
    }
}

impl Fingerprint {
    /// The marker value: the tag and the hashes.
    #[must_use]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// What `#[derive(BigtableRow)]` knows about a struct: its table, families,
/// columns and TTL policy. Available as `<T as BigtableRow>::SCHEMA`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    /// The table name.
    pub table: &'static str,
    /// The TTL policy every family of the struct follows.
    pub policy: Policy,
    /// The column families, the struct's own family first.
    pub families: &'static [&'static str],
    /// Whether the struct owns its first family (`#[bigtable(owns_family)]`):
    /// no other struct stores cells in it, so a whole-row write clears it
    /// with one `DeleteFromFamily` instead of one `DeleteFromColumn` per
    /// column, and cells of fields the struct no longer has go with it.
    pub owns_family: bool,
    /// The stored fields, in declaration order (key and `expire_at` fields
    /// are not stored as columns).
    pub columns: &'static [Column],
    /// The map fields (`#[bigtable(map)]`), in declaration order: each
    /// stored one cell per entry in a family of its own.
    pub maps: &'static [MapColumn],
    /// The shadow column holding the real write time, if declared.
    pub written_at: Option<ShadowColumn>,
    /// The qualifier of the struct's row marker, in its first family:
    /// [`ROW_MARKER_PREFIX`] then the struct's name, or the name given by
    /// `#[bigtable(marker = "...")]` (see [`row_marker`] and
    /// [`crate::liveness`]). Structs sharing a family and a row key each
    /// have their own, so none judges its rows by another's.
    pub marker: &'static [u8],
    /// The key fields, in key order.
    pub key_fields: &'static [&'static str],
    /// The separator joining several key fields (empty for one).
    pub key_separator: &'static str,
}

/// One stored field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The Rust field name.
    pub field: &'static str,
    /// The column family.
    pub family: &'static str,
    /// The column qualifier.
    pub qualifier: &'static str,
    /// A per-column TTL (`#[ttl(for = "1h")]`), default strategy only.
    pub ttl: Option<TimeDelta>,
    /// What the field reads as when its column holds no live cell, and so
    /// whether the column must be live for the row to be (see
    /// [`crate::liveness`]).
    pub when_absent: WhenAbsent,
}

/// What a field reads as when its column holds no live cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenAbsent {
    /// Nothing: the field is required. A row whose required column has no
    /// live cell is not live.
    Required,
    /// `None`: an `Option` field.
    ReadsNone,
    /// The field's default: a `#[bigtable(default)]` field.
    ReadsDefault,
    /// Zero: a `#[bigtable(counter)]` field.
    ReadsZero,
}

impl Column {
    /// A column named `qualifier` in `family`, its field named alike, with
    /// no TTL of its own: how the model's tests declare schemas.
    #[cfg(test)]
    pub(crate) const fn of(
        family: &'static str,
        qualifier: &'static str,
        when_absent: WhenAbsent,
    ) -> Column {
        Column {
            field: qualifier,
            family,
            qualifier,
            ttl: None,
            when_absent,
        }
    }

    /// Whether the row needs this column live to be live.
    #[must_use]
    pub fn is_required(&self) -> bool {
        self.when_absent == WhenAbsent::Required
    }

    /// Whether the field is an `Option` (an absent column reads as `None`).
    #[must_use]
    pub fn is_option(&self) -> bool {
        self.when_absent == WhenAbsent::ReadsNone
    }

    /// Whether `update().clear()` may delete the column: an `Option` field
    /// (it reads `None` afterwards) or a `#[bigtable(default)]` one (it
    /// reads its default).
    #[must_use]
    pub fn can_be_cleared(&self) -> bool {
        matches!(
            self.when_absent,
            WhenAbsent::ReadsNone | WhenAbsent::ReadsDefault
        )
    }
}

/// One map field: one cell per entry in `family` (a family no other field
/// uses), the entry's key encoded as the qualifier, its value as the cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapColumn {
    /// The Rust field name.
    pub field: &'static str,
    /// The column family holding the entries, and nothing else.
    pub family: &'static str,
}

/// The shadow column with the real write time (microseconds, 8 bytes big-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShadowColumn {
    /// The column family (the struct's own family).
    pub family: &'static str,
    /// The column qualifier.
    pub qualifier: &'static str,
}

impl Schema {
    /// Whether `(family, qualifier)` is a declared column, and which.
    #[must_use]
    pub(crate) fn column_index(&self, family: &str, qualifier: &[u8]) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.family == family && c.qualifier.as_bytes() == qualifier)
    }

    /// Which map field's family `family` is, if any.
    #[must_use]
    pub(crate) fn map_index(&self, family: &str) -> Option<usize> {
        self.maps.iter().position(|m| m.family == family)
    }

    /// Whether every field is an `Option`. Only then do map entries alone,
    /// or the row marker alone, make a row: with a required field such a
    /// row could not be read back, and a default or counter field writes
    /// its cell on every put (see [`crate::liveness`]).
    pub(crate) fn all_fields_optional(&self) -> bool {
        self.columns.iter().all(Column::is_option)
    }

    /// Whether the row marker alone makes a row: every field is an `Option`
    /// or `#[bigtable(default)]`, so a row of `None`s and defaults exists
    /// as long as its marker says (a row whose fields are cleared one by
    /// one stays). Not with a required field (its columns decide), nor with
    /// a counter (its windows do; see `model::counter`).
    pub(crate) fn marker_makes_row(&self) -> bool {
        self.columns.iter().all(|c| {
            matches!(
                c.when_absent,
                WhenAbsent::ReadsNone | WhenAbsent::ReadsDefault
            )
        })
    }

    /// The family holding the row marker ([`Schema::marker`]):
    /// the struct's own, first family.
    #[must_use]
    pub(crate) fn marker_family(&self) -> &'static str {
        self.families.first().copied().unwrap_or_default()
    }

    /// Whether `(family, qualifier)` is the struct's row marker: its own,
    /// or, in a family it owns, the [`LEGACY_ROW_MARKER`].
    #[must_use]
    pub(crate) fn is_marker(&self, family: &str, qualifier: &[u8]) -> bool {
        (qualifier == self.marker || (self.owns_family && qualifier == LEGACY_ROW_MARKER))
            && family == self.marker_family()
    }

    /// Whether `(family, qualifier)`, a cell of this struct's row that is
    /// not its own marker, is another struct's row marker: a qualifier
    /// starting with [`ROW_MARKER_PREFIX`] in one of the struct's families
    /// that is not a map's (a map's family holds entries only, whatever
    /// their keys).
    #[must_use]
    pub(crate) fn is_foreign_marker(&self, family: &str, qualifier: &[u8]) -> bool {
        qualifier.starts_with(ROW_MARKER_PREFIX)
            && self.map_index(family).is_none()
            && self.families.contains(&family)
            && !self.is_marker(family, qualifier)
    }

    /// Whether `(family, qualifier)` is a cell the struct owns (see the
    /// guide's "Several structs in one table"): its marker (and, in any
    /// family of its, the one-byte marker of earlier versions, which no
    /// struct can tell its own from another's), a column, a counter's
    /// window mark, the shadow column, or an entry of a map family.
    #[must_use]
    pub(crate) fn owns_cell(&self, family: &str, qualifier: &[u8]) -> bool {
        self.is_marker(family, qualifier)
            || (qualifier == LEGACY_ROW_MARKER && family == self.marker_family())
            || self.column_index(family, qualifier).is_some()
            || self.is_written_at(family, qualifier)
            || self.map_index(family).is_some()
            || (self.owns_family && family == self.marker_family())
            || qualifier.split_first().is_some_and(|(&nul, counter)| {
                nul == 0
                    && self.columns.iter().any(|c| {
                        c.when_absent == WhenAbsent::ReadsZero
                            && c.family == family
                            && c.qualifier.as_bytes() == counter
                    })
            })
    }

    /// The value of the struct's row marker when the row's expiry is the
    /// marker's own timestamp (the usual case): the struct's fingerprint,
    /// the byte `0xfe` then the 16-bit hashes of the names of its columns
    /// and map families (see [`crate::liveness`] and the guide on rows and
    /// liveness for the exact form). What a program writing rows for this
    /// struct by hand gives the marker, so that a struct of the same name
    /// in another program does not take the rows for its own (an empty
    /// value says nothing of its writer).
    #[must_use]
    pub fn marker_fingerprint(&self) -> Vec<u8> {
        self.fingerprint().as_bytes().to_vec()
    }

    /// The struct's fingerprint ([`Fingerprint`]) of every column's
    /// qualifier (counters included) and every map's family. Loops, not
    /// iterators: a `const fn`.
    #[must_use]
    pub(crate) const fn fingerprint(&self) -> Fingerprint {
        let mut smallest = Smallest::NONE;
        let mut i = 0;
        while i < self.columns.len() {
            smallest = smallest.with(name_hash(self.columns[i].qualifier));
            i += 1;
        }
        let mut i = 0;
        while i < self.maps.len() {
            smallest = smallest.with(name_hash(self.maps[i].family));
            i += 1;
        }
        smallest.fingerprint()
    }

    /// The names a fingerprint lists the hashes of ([`Schema::fingerprint`]).
    pub(crate) fn fingerprint_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        let columns = self.columns.iter().map(|c| c.qualifier);
        columns.chain(self.maps.iter().map(|m| m.family))
    }

    /// Whether `(family, qualifier)` is the shadow column.
    #[must_use]
    pub(crate) fn is_written_at(&self, family: &str, qualifier: &[u8]) -> bool {
        self.written_at
            .is_some_and(|s| s.family == family && s.qualifier.as_bytes() == qualifier)
    }
}

/// A column of family `f` whose field and qualifier are both `qualifier`,
/// without a TTL of its own: the column the unit tests of the liveness rule
/// and of the update planner build their schemas from.
#[cfg(test)]
pub(crate) const fn test_column(qualifier: &'static str, when_absent: WhenAbsent) -> Column {
    Column {
        field: qualifier,
        family: "f",
        qualifier,
        ttl: None,
        when_absent,
    }
}
