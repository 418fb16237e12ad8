//! [`Cell`]: one stored cell, owned, as every raw read returns it (the raw
//! data layer's rows, the operations' pages) and the pure core judges it.

use crate::model::view::CellRef;

/// One stored cell, owned: what a raw read returns (a
/// [`data::Row`](crate::data::Row)'s cells, the rows of the operations).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cell {
    /// Column family.
    pub family: String,
    /// Column qualifier.
    pub qualifier: Vec<u8>,
    /// Cell timestamp (µs since the epoch).
    pub timestamp_micros: i64,
    /// Value bytes.
    pub value: Vec<u8>,
}

impl Cell {
    /// The cell `family:qualifier` at `timestamp_micros` holding `value`
    /// (for tests and tools that judge cells of their own).
    #[must_use]
    pub fn new(
        family: impl Into<String>,
        qualifier: impl Into<Vec<u8>>,
        timestamp_micros: i64,
        value: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp_micros,
            value: value.into(),
        }
    }
}

/// The borrowed form of `cell` the decoder reads, for benchmarks that
/// decode rows of their own (through the hidden door). Not a method of
/// `Cell`: that would be public and name the private `CellRef`.
#[must_use]
pub fn cell_ref(cell: &Cell) -> CellRef<'_> {
    CellRef {
        family: &cell.family,
        qualifier: &cell.qualifier,
        value: &cell.value,
        timestamp_micros: cell.timestamp_micros,
    }
}
