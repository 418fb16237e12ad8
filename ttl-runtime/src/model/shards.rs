//! A part of a key space, how many parts it may be cut into, and why a
//! shard does not exist: what the runtime's errors name, the sharded
//! operations (`crate::ops`) check and `Table::add_markers` runs over.

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

/// One contiguous part of a table's key space: the keys from `start`
/// (inclusive; empty: from the first key) to `end` (exclusive; `None`: to
/// the last key), part `index` of `count`.
///
/// ```
/// use bigtable_ttl::ops::Part;
///
/// let whole = Part::whole();
/// assert!(whole.contains(b"any key"));
/// assert_eq!((whole.index, whole.count), (0, 1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Part {
    /// Which part (from 0).
    pub index: usize,
    /// Of how many.
    pub count: usize,
    /// The first key of the part (inclusive); empty: the table's start.
    pub start: Vec<u8>,
    /// The key after the part (exclusive); `None`: the table's end.
    pub end: Option<Vec<u8>>,
}

impl Default for Part {
    fn default() -> Self {
        Self::whole()
    }
}

impl Part {
    /// The whole table, as one part.
    #[must_use]
    pub fn whole() -> Self {
        Self {
            index: 0,
            count: 1,
            start: Vec::new(),
            end: None,
        }
    }

    /// Part `index` of `count`, the keys from `start` to `end` (exclusive).
    #[must_use]
    pub fn new(index: usize, count: usize, start: Vec<u8>, end: Option<Vec<u8>>) -> Self {
        Self {
            index,
            count,
            start,
            end,
        }
    }

    /// Whether `key` is in the part.
    #[must_use]
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end)
    }

    /// Whether the part holds no key at all (a part left over when the
    /// table has fewer samples than parts).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.end
            .as_deref()
            .is_some_and(|end| end <= self.start.as_slice())
    }

    /// Whether this is the whole table.
    #[must_use]
    pub fn is_whole(&self) -> bool {
        self.start.is_empty() && self.end.is_none()
    }

    /// `index/count`, as `--shard` takes it.
    #[must_use]
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}
