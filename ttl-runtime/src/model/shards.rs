//! How many parts a key space may be cut into, and why a shard does not
//! exist: what the runtime's errors name and the sharded operations
//! (`crate::ops`) check.

/// The most parts a key space is cut into. A part is a process of its
/// own, each streaming its range from the cluster: a thousand of them is
/// more than one table's fleet runs, and past the table's sample keys
/// (about one per tablet) extra parts are empty anyway. The cap also
/// bounds what a shared cut holds: 1,024 parts whose keys are at most
/// Bigtable's 4 KiB fit in a few tens of MiB, so a reader can refuse a
/// larger file before parsing it, and a count read from a file (or typed
/// as `--shard 1/999999999`) never sizes an allocation.
pub const MAX_PARTS: usize = 1024;

/// Why a shard `index/count` does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShardProblem {
    /// `count` is 0.
    NoParts,
    /// `count` is over [`MAX_PARTS`].
    TooManyParts {
        /// The count asked for.
        count: usize,
    },
    /// `index` is not below `count`.
    NoSuchIndex {
        /// The index asked for.
        index: usize,
        /// Of how many.
        count: usize,
    },
}

impl std::fmt::Display for ShardProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::NoParts => f.write_str("the number of shards must be at least 1"),
            Self::TooManyParts { count } => write!(
                f,
                "{count} shards is over the limit of {MAX_PARTS}: a table is cut at its sample keys, about one per tablet, and a fleet runs far fewer processes"
            ),
            Self::NoSuchIndex { index, count } => write!(
                f,
                "shard {index} of {count} does not exist: shards are numbered 0 to {}",
                count.saturating_sub(1)
            ),
        }
    }
}

impl std::error::Error for ShardProblem {}
