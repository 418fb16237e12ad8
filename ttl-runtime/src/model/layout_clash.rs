//! What two structs of one table would both write, as [`crate::Error::Layout`]
//! reports it. Apart from `model::layout`, which compares schemas, so
//! that the error names no schema.

use std::fmt;

/// Why two structs of one table cannot share it as declared: what they
/// would both write, and what to change. In [`crate::Error::Layout`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayoutClash {
    /// The table.
    pub table: String,
    /// The struct whose declaration the clash is told from (its type's
    /// path).
    pub this: &'static str,
    /// The other struct (its type's path).
    pub other: &'static str,
    /// What both would write.
    pub kind: ClashKind,
}

/// What two structs of one table would both write.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClashKind {
    /// One row marker in one family: each would read the other's rows as
    /// its own.
    Marker {
        /// The family.
        family: &'static str,
        /// The marker's qualifier.
        marker: &'static [u8],
    },
    /// A map's family (first struct) in which the other stores cells: a
    /// whole-row write deletes the map's family.
    MapFamily {
        /// The family.
        family: &'static str,
        /// The map field, of the struct named first in the message.
        field: &'static str,
    },
    /// One shadow column: each write of one would change the other's write
    /// time (or its column).
    Shadow {
        /// The family.
        family: &'static str,
        /// The qualifier.
        qualifier: &'static str,
    },
    /// A family owned (`#[bigtable(owns_family)]`) by the first struct in
    /// which the other stores cells: a whole-row write deletes the family.
    OwnedFamily {
        /// The family.
        family: &'static str,
    },
}

impl fmt::Display for LayoutClash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (this, other, table) = (self.this, self.other, &self.table);
        match &self.kind {
            ClashKind::Marker { family, marker } => write!(
                f,
                "structs `{this}` and `{other}` both write the row marker \"{}\" in family `{family}` of table `{table}`: each would read the other's rows as its own; give one of them a marker of its own with #[bigtable(marker = \"...\")]",
                marker.escape_ascii()
            ),
            ClashKind::MapFamily { family, field } => write!(
                f,
                "map field `{field}` of `{this}` lives in family `{family}` of table `{table}`, where `{other}` also stores cells: a write of the map deletes its whole family; give the map a family no other struct uses (#[bigtable(map, family = \"...\")])"
            ),
            ClashKind::Shadow { family, qualifier } => write!(
                f,
                "structs `{this}` and `{other}` both write column `{family}:{qualifier}` of table `{table}` as their written_at shadow (or one as a field): a write of one would change the other's; name one with #[ttl(written_at = \"...\")]"
            ),
            ClashKind::OwnedFamily { family } => write!(
                f,
                "`{this}` owns family `{family}` of table `{table}` (#[bigtable(owns_family)]), where `{other}` also stores cells: a whole-row write of `{this}` deletes the family; remove owns_family, or move `{other}` to another family"
            ),
        }
    }
}
