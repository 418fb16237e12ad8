//! The schema a derived struct declares, as plain data.

use chrono::TimeDelta;

use crate::model::policy::Policy;

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
    /// The stored fields, in declaration order (key and `expire_at` fields
    /// are not stored as columns).
    pub columns: &'static [Column],
    /// The map fields (`#[bigtable(map)]`), in declaration order: each
    /// stored one cell per entry in a family of its own.
    pub maps: &'static [MapColumn],
    /// The shadow column holding the real write time, if declared.
    pub written_at: Option<ShadowColumn>,
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
    /// Whether the field is an `Option` (absent column reads as `None`).
    pub optional: bool,
    /// Whether the field is `#[bigtable(default)]` (absent column reads as
    /// its default), so that its column may be deleted like an `Option`'s.
    pub has_default: bool,
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

    /// Whether a row holding only map entries is a row. Not when the struct
    /// has a required column: such a row could not be read back, so its
    /// entries are left to expire (or to the next whole-row put, which
    /// replaces them).
    #[must_use]
    pub(crate) fn entries_alone_make_a_row(&self) -> bool {
        self.columns.iter().all(|c| c.optional)
    }

    /// The families whose cells make a row live: all of them, or, when
    /// entries alone do not make a row, those that are not a map's.
    pub(crate) fn liveness_families(&self) -> impl Iterator<Item = &'static str> + '_ {
        let all = self.entries_alone_make_a_row();
        self.families
            .iter()
            .copied()
            .filter(move |f| all || self.map_index(f).is_none())
    }

    /// Whether `(family, qualifier)` is the shadow column.
    #[must_use]
    pub(crate) fn is_written_at(&self, family: &str, qualifier: &[u8]) -> bool {
        self.written_at
            .is_some_and(|s| s.family == family && s.qualifier.as_bytes() == qualifier)
    }
}
