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

    /// Whether `(family, qualifier)` is the shadow column.
    #[must_use]
    pub(crate) fn is_written_at(&self, family: &str, qualifier: &[u8]) -> bool {
        self.written_at
            .is_some_and(|s| s.family == family && s.qualifier.as_bytes() == qualifier)
    }
}
