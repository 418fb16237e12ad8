//! What went wrong, in detail, inside some of [`Error`](super::Error)'s variants.

use std::fmt;

use chrono::TimeDelta;

use super::{Code, CodecError};
use crate::model::duration::human;

/// What overflowed in [`Error::ExpiryOutOfRange`](super::Error::ExpiryOutOfRange).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Overflow {
    /// A timestamp (µs since the epoch) no date can stand for.
    Timestamp {
        /// The timestamp.
        micros: i64,
    },
    /// A duration too long to count in microseconds.
    Duration {
        /// The duration.
        duration: TimeDelta,
    },
    /// A timestamp moved by a duration, past what a timestamp can hold.
    Sum {
        /// The timestamp (µs since the epoch).
        micros: i64,
        /// The duration added (negative: subtracted).
        by: TimeDelta,
    },
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Overflow::Timestamp { micros } => write!(f, "{micros} µs since the epoch"),
            Overflow::Duration { duration } => {
                write!(f, "duration {} overflows microseconds", human(*duration))
            }
            Overflow::Sum { micros, by } => {
                write!(f, "{micros} µs + {} overflows", human(*by))
            }
        }
    }
}

/// What did not match in [`Error::BadRowKey`](super::Error::BadRowKey).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyProblem {
    /// The key does not split into the declared number of key fields.
    Parts {
        /// Key fields declared.
        expected: usize,
        /// The separator joining them.
        separator: String,
        /// Parts found.
        found: usize,
    },
    /// One key field's bytes do not decode into its type.
    Field {
        /// The key field.
        field: &'static str,
        /// Why.
        source: CodecError,
    },
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyProblem::Parts {
                expected,
                separator,
                found,
            } => write!(
                f,
                "expected {expected} parts joined by {separator:?}, found {found}"
            ),
            KeyProblem::Field { field, source } => write!(f, "key field `{field}`: {source}"),
        }
    }
}

/// Which of Bigtable's per-row limits [`Error::RowTooLarge`](super::Error::RowTooLarge) exceeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RowLimit {
    /// Mutations in one row's write.
    Mutations {
        /// Mutations the write would send.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Bytes in one row.
    Bytes {
        /// Bytes the write would store.
        bytes: usize,
        /// The limit.
        max: usize,
    },
}

impl fmt::Display for RowLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowLimit::Mutations { count, max } => write!(
                f,
                "{count} mutations, over Bigtable's limit of {max} per row"
            ),
            RowLimit::Bytes { bytes, max } => {
                write!(f, "{bytes} bytes, over Bigtable's limit of {max} per row")
            }
        }
    }
}

/// What is wrong with a policy in [`Error::InvalidPolicy`](super::Error::InvalidPolicy).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyProblem {
    /// Neither `one-second` nor `default=DURATION`.
    UnknownForm,
    /// `default=` with a duration that does not parse.
    BadDuration {
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyProblem::UnknownForm => {
                f.write_str("expected `one-second` or `default=DURATION` (e.g. `default=2d`)")
            }
            PolicyProblem::BadDuration { reason } => f.write_str(reason),
        }
    }
}

/// Why [`Error::Migration`](super::Error::Migration) stopped a migration (the source family is
/// never changed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MigrationProblem {
    /// The source and the target are the same family.
    SameFamily,
    /// One-second expiration has no default TTL, and none was given.
    NoTtl,
    /// The source family has a column named as the shadow column.
    ShadowColumnTaken {
        /// The source family.
        family: String,
        /// The shadow column's qualifier.
        qualifier: String,
    },
    /// The source family does not exist.
    NoSourceFamily {
        /// The family.
        family: String,
    },
    /// The target family exists with another garbage-collection rule.
    TargetRule {
        /// The target family.
        family: String,
        /// Its rule, described (`none` when it vanished).
        live: String,
        /// The policy's rule, described.
        expected: String,
    },
    /// The checkpoint to resume from was taken in another project or
    /// instance than the connection's: resuming it here would copy only
    /// the rows after its last key and fail the final check.
    OtherInstance {
        /// Where the checkpoint was taken (`projects/P/instances/I`).
        checkpoint: String,
        /// Where this run's connection goes.
        connection: String,
    },
    /// The checkpoint's last row key lies outside its own part of the
    /// key space: it is not a checkpoint of that part (another shard's, or
    /// edited), and resuming it would copy the part twice or not at all.
    CheckpointOutsidePart {
        /// The checkpoint's last row key.
        last_row_key: Vec<u8>,
        /// Its part, as `I/N ["start", "end")`.
        part: String,
        /// Past the part's end (else before its start).
        past: bool,
    },
    /// The final count check did not match.
    Verification {
        /// Source rows still alive under the policy.
        expected_rows: u64,
        /// Source cells still alive under the policy.
        expected_cells: u64,
        /// Live rows of the target.
        target_rows: u64,
        /// Live cells of the target.
        target_cells: u64,
    },
}

impl fmt::Display for MigrationProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MigrationProblem::SameFamily => {
                f.write_str("the plan's source and target (MigratePlan::new's from and to) are the same family")
            }
            MigrationProblem::NoTtl => f.write_str(
                "one-second expiration has no default TTL: say how long copied cells live (MigratePlan::with_ttl)",
            ),
            MigrationProblem::ShadowColumnTaken { family, qualifier } => write!(
                f,
                "source family `{family}` has a column `{qualifier}`, the shadow column's name: name another (MigratePlan::with_written_at)"
            ),
            MigrationProblem::NoSourceFamily { family } => {
                write!(f, "source family `{family}` does not exist")
            }
            MigrationProblem::TargetRule {
                family,
                live,
                expected,
            } => write!(
                f,
                "target family `{family}` has the rule {live}, not the policy's {expected}; apply the policy to it first"
            ),
            MigrationProblem::OtherInstance {
                checkpoint,
                connection,
            } => write!(
                f,
                "the checkpoint was taken in `{checkpoint}`, this run is connected to `{connection}`: \
                 resume it with a Connection to `{checkpoint}`, or migrate `{connection}` \
                 with a checkpoint of its own"
            ),
            MigrationProblem::CheckpointOutsidePart {
                last_row_key,
                part,
                past,
            } => write!(
                f,
                "the checkpoint's last row \"{}\" lies {} its part {part}, so it is not that part's checkpoint: \
                 resume with the part's own checkpoint, or start the part again without a checkpoint",
                last_row_key.escape_ascii(),
                if *past { "past" } else { "before" }
            ),
            MigrationProblem::Verification {
                expected_rows,
                expected_cells,
                target_rows,
                target_cells,
            } => write!(
                f,
                "verification failed: the source implies {expected_rows} rows and {expected_cells} cells alive under the policy, \
                 the target holds {target_rows} rows and {target_cells} cells; the source is untouched, run the migration again"
            ),
        }
    }
}

/// One row a multi-row write did not (surely) write.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FailedRow {
    /// The row key, as sent: write it again with these bytes.
    pub row_key: Vec<u8>,
    /// The status Bigtable gave the row; `None` when no answer came for it
    /// (the request failed, timed out or was not sent), so the row may or
    /// may not be stored.
    pub code: Option<Code>,
    /// Why, in words.
    pub reason: String,
}

impl FailedRow {
    /// A row that failed with `code` (or no answer) for `reason`.
    #[must_use]
    pub fn new(row_key: Vec<u8>, code: Option<Code>, reason: impl Into<String>) -> Self {
        Self {
            row_key,
            code,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for FailedRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\": {}", self.row_key.escape_ascii(), self.reason)
    }
}
