//! A table's key space cut into contiguous parts, so that several machines
//! can each audit, migrate or verify one part (a shard) on its own.
//!
//! The cut is taken at the row keys `SampleRowKeys` returns (Bigtable's
//! tablet boundaries, so parts of about equal size), by the same rule as
//! [`crate::Table::split_scan`]; for the same samples it is the same on every
//! machine. Cloud Bigtable answers the same samples for the same table
//! state; Google's emulator picks about one key in a hundred at random on
//! each call, so shards that must agree there share one cut ([`Part`]s
//! serialise to a few keys) instead of each sampling on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use crate::client::connection::Connection;
use crate::client::data::{KeySample, RawTable};
use crate::client::read::ReadOptions;
use crate::model::error::{self, Result};
use crate::model::scan::Scan;
use crate::model::split::split;

pub use crate::model::shards::{Part, ShardProblem, MAX_PARTS};

/// Check that shard `index` of `count` exists and `count` is at most
/// [`MAX_PARTS`].
///
/// ```
/// use bigtable_ttl::ops::check_shard;
///
/// assert!(check_shard(3, 4).is_ok());
/// assert!(check_shard(1, 999_999_999).is_err());
/// ```
///
/// # Errors
/// The [`ShardProblem`].
pub fn check_shard(index: usize, count: usize) -> std::result::Result<(), ShardProblem> {
    if count == 0 {
        return Err(ShardProblem::NoParts);
    }
    if count > MAX_PARTS {
        return Err(ShardProblem::TooManyParts { count });
    }
    if index >= count {
        return Err(ShardProblem::NoSuchIndex { index, count });
    }
    Ok(())
}

/// Counts of shards' reports that add up past `u64::MAX`: no table holds
/// that much, so one of the reports is corrupt or crafted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CountOverflow {
    /// The count that overflowed (`rows`, `cells`, a bucket's name…).
    pub what: &'static str,
}

impl CountOverflow {
    /// The count `what` overflowed (for callers summing counts of their own).
    #[must_use]
    pub fn new(what: &'static str) -> Self {
        Self { what }
    }
}

impl std::fmt::Display for CountOverflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} add up to more than {} (a report is corrupt)",
            self.what,
            u64::MAX
        )
    }
}

impl std::error::Error for CountOverflow {}

/// `a + b`, or which count overflowed.
pub(crate) fn add(a: u64, b: u64, what: &'static str) -> std::result::Result<u64, CountOverflow> {
    a.checked_add(b).ok_or(CountOverflow { what })
}

/// The key space cut into `count` contiguous parts at `samples` (row keys
/// as `SampleRowKeys` returns them, in any order): at most `count - 1` of
/// them, taken evenly, as [`crate::Table::split_scan`] takes them. Pure and
/// deterministic: the same samples give the same parts. Always `count`
/// parts (at least one), in key order; when there are fewer distinct
/// samples than cuts, the last parts are empty.
///
/// ```
/// use bigtable_ttl::ops::{cut, Part};
///
/// let samples: Vec<Vec<u8>> = ["b", "d", "f"].iter().map(|k| k.as_bytes().to_vec()).collect();
/// let parts = cut(&samples, 2);
/// assert_eq!(parts[0], Part::new(0, 2, vec![], Some(b"d".to_vec())));
/// assert_eq!(parts[1], Part::new(1, 2, b"d".to_vec(), None));
/// ```
#[must_use]
pub fn cut(samples: &[Vec<u8>], count: usize) -> Vec<Part> {
    let count = count.max(1);
    let key = |b: Bound<Vec<u8>>| match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k),
        Bound::Unbounded => None,
    };
    let mut parts: Vec<Part> = split(&Scan::all(), samples, count)
        .into_iter()
        .enumerate()
        .filter_map(|(index, scan)| {
            let (start, end) = scan.key_bounds()?;
            Some(Part::new(
                index,
                count,
                key(start).unwrap_or_default(),
                key(end),
            ))
        })
        .collect();
    // The left-over parts: empty, at the last cut.
    let last_cut = parts.last().map(|p| p.start.clone()).unwrap_or_default();
    while parts.len() < count {
        let index = parts.len();
        parts.push(Part::new(
            index,
            count,
            last_cut.clone(),
            Some(last_cut.clone()),
        ));
    }
    parts
}

/// Part `index` of the [`cut`] of the key space into `count` parts at
/// `samples`: the same part as `cut(samples, count)[index]`, computed
/// without the other `count - 1` parts.
///
/// ```
/// use bigtable_ttl::ops::{cut, part_of};
///
/// let samples: Vec<Vec<u8>> = ["b", "d", "f"].iter().map(|k| k.as_bytes().to_vec()).collect();
/// assert_eq!(part_of(&samples, 1, 2).unwrap(), cut(&samples, 2)[1]);
/// assert!(part_of(&samples, 1, 999_999_999).is_err());
/// ```
///
/// # Errors
/// [`ShardProblem`] when the shard does not exist ([`check_shard`]).
pub fn part_of(
    samples: &[Vec<u8>],
    index: usize,
    count: usize,
) -> std::result::Result<Part, ShardProblem> {
    check_shard(index, count)?;
    let keys: Vec<&[u8]> = samples
        .iter()
        .map(Vec::as_slice)
        .filter(|k| !k.is_empty())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // The cuts as `split` picks them: every key when there are no more of
    // them than cuts, else `count - 1` spread evenly.
    let m = keys.len();
    let cuts = if m < count { m } else { count - 1 };
    let cut_at = |k: usize| -> Vec<u8> {
        // Cut `k` (from 1); in u128 so that no product overflows.
        let at = if m < count {
            k - 1
        } else {
            let spread = (k as u128) * (m as u128 + 1) / count as u128 - 1;
            usize::try_from(spread).unwrap_or(m - 1)
        };
        keys[at].to_vec()
    };
    let start = if index == 0 || cuts == 0 {
        Vec::new()
    } else {
        cut_at(index.min(cuts))
    };
    let end = match index.cmp(&cuts) {
        std::cmp::Ordering::Less => Some(cut_at(index + 1)),
        std::cmp::Ordering::Equal => None,
        // Left over: empty, at the last cut.
        std::cmp::Ordering::Greater => Some(start.clone()),
    };
    Ok(Part::new(index, count, start, end))
}

/// Ask Bigtable for `table`'s sample row keys and [`cut`] the key space into
/// `count` parts: the plan of a sharded run. Each part can then be audited
/// ([`super::AuditRequest::with_part`]), migrated
/// ([`super::Checkpoint::for_part`]) or verified ([`super::verify_part`]) by
/// its own process.
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::ops::{audit, parse_policy, plan_parts, AuditReport, AuditRequest};
///
/// let policy = parse_policy("default=2d")?;
/// let parts = plan_parts(conn, "events", 4).await?;
/// let mut whole: Option<AuditReport> = None;
/// for part in parts {
///     let request = AuditRequest::new("events", "raw", policy).with_part(part);
///     let report = audit(conn, &request, |_| {}).await?;
///     whole = Some(match whole {
///         None => report,
///         Some(mut sum) => { sum.merge(&report); sum }
///     });
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`crate::model::error::Error::InvalidShard`] when `count` is 0 or over [`MAX_PARTS`]
/// (before anything is sent); [`crate::model::error::Error::Server`] when
/// `SampleRowKeys` fails (transient failures are retried under the
/// connection's policy), a missing table included.
pub async fn plan_parts(conn: &Connection, table: &str, count: usize) -> Result<Vec<Part>> {
    check_shard(0, count)
        .map_err(|problem| crate::model::error::Error::from(error::InvalidShard { problem }))?;
    let samples = key_samples(conn, table).await?;
    let keys: Vec<Vec<u8>> = samples.into_iter().map(|s| s.key).collect();
    Ok(cut(&keys, count))
}

/// `table`'s sample row keys, in key order, with their byte offsets.
///
/// # Errors
/// [`crate::model::error::Error::Server`].
pub async fn key_samples(conn: &Connection, table: &str) -> Result<Vec<KeySample>> {
    let read = ReadOptions::default().with_retry(conn.retry());
    RawTable::new(conn, table)
        .with_read_options(read)
        .sample_row_keys()
        .await
}

/// How far through a part a scan is that has read up to `last_key`, as a
/// share of the part's bytes (0 to 1), estimated from the samples' byte
/// offsets: for progress bars and times left. `None` when the samples say
/// nothing about the part (too few of them, or none inside it).
#[must_use]
pub fn fraction_done(samples: &[KeySample], part: &Part, last_key: &[u8]) -> Option<f64> {
    // The byte offset of a key: that of the last sample at or before it.
    let offset = |key: &[u8]| {
        samples
            .iter()
            .filter(|s| !s.key.is_empty() && s.key.as_slice() <= key)
            .map(|s| s.offset_bytes)
            .max()
            .unwrap_or(0)
    };
    let total_end = samples.iter().map(|s| s.offset_bytes).max()?;
    let start = offset(&part.start);
    let end = part.end.as_deref().map_or(total_end, offset);
    let span = end - start;
    if span <= 0 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)] // a share for a progress bar
    let done = (offset(last_key) - start) as f64 / span as f64;
    Some(done.clamp(0.0, 1.0))
}

/// Check that `parts` are the parts of one cut, in any order: `count` of
/// them (at most [`MAX_PARTS`]), each index once, together covering every
/// key exactly once. What merging the reports of a sharded run, or reading
/// a shared cut, needs; the message names the missing, repeated,
/// overlapping or mismatched part. Nothing is allocated by `count`: a
/// count read from a file cannot exhaust memory.
///
/// ```
/// use bigtable_ttl::ops::{check_cover, cut};
///
/// let parts = cut(&[b"m".to_vec()], 2);
/// assert!(check_cover(&parts).is_ok());
/// assert!(check_cover(&[parts[1].clone(), parts[0].clone()]).is_ok());
/// assert!(check_cover(&parts[..1]).unwrap_err().contains("missing part 1/2"));
/// ```
///
/// # Errors
/// A sentence naming the missing, repeated or mismatched parts.
pub fn check_cover(parts: &[Part]) -> std::result::Result<(), String> {
    let Some(first) = parts.first() else {
        return Err("no parts".to_owned());
    };
    let count = first.count;
    if let Some(other) = parts.iter().find(|p| p.count != count) {
        return Err(format!(
            "parts of different cuts: {} and {}",
            first.label(),
            other.label()
        ));
    }
    let mut by_index: BTreeMap<usize, &Part> = BTreeMap::new();
    for part in parts {
        check_shard(part.index, part.count).map_err(|e| format!("part {}: {e}", part.label()))?;
        if by_index.insert(part.index, part).is_some() {
            return Err(format!("part {} appears twice", part.label()));
        }
    }
    // Indexes are distinct and below `count`: as many as `count` iff all.
    if by_index.len() != count {
        let missing = by_index
            .keys()
            .zip(0..)
            .find(|(have, want)| **have != *want)
            .map_or(by_index.len(), |(_, want)| want);
        return Err(format!("missing part {missing}/{count}"));
    }
    // In index order the non-empty parts must tile the key space.
    let mut next: Option<&[u8]> = Some(&[]);
    let mut before: Option<&Part> = None;
    for part in by_index.into_values().filter(|p| !p.is_empty()) {
        if next != Some(part.start.as_slice()) {
            let after = before.map_or_else(
                || "the start of the table".to_owned(),
                |b| {
                    format!(
                        "where part {} ends ({})",
                        b.label(),
                        key_text(b.end.as_deref())
                    )
                },
            );
            return Err(format!(
                "part {} starts at {}, not {after}: the parts overlap or leave a gap \
                 (the shards were cut differently: share one cut between them)",
                part.label(),
                key_text(Some(&part.start)),
            ));
        }
        next = part.end.as_deref();
        before = Some(part);
    }
    if next.is_some() {
        let last = before.map_or_else(|| first.label(), Part::label);
        return Err(format!(
            "the last part ({last}) does not reach the end of the table"
        ));
    }
    Ok(())
}

/// A key in a message: quoted text, or the table's end.
fn key_text(key: Option<&[u8]>) -> String {
    key.map_or_else(
        || "the end of the table".to_owned(),
        |k| format!("{:?}", String::from_utf8_lossy(k)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys(ks: &[&str]) -> Vec<Vec<u8>> {
        ks.iter().map(|k| k.as_bytes().to_vec()).collect()
    }

    #[test]
    fn the_cut_is_the_same_for_the_same_samples_in_any_order() {
        let a = cut(&keys(&["k10", "k20", "k30", "k40", "k50", ""]), 3);
        let b = cut(&keys(&["", "k50", "k30", "k10", "k40", "k20", "k30"]), 3);
        assert_eq!(a, b);
        assert_eq!(a.len(), 3);
        check_cover(&a).unwrap();
    }

    #[test]
    fn fewer_samples_than_parts_leave_empty_parts_at_the_end() {
        let parts = cut(&keys(&["m"]), 4);
        assert_eq!(parts.len(), 4);
        assert!(!parts[0].is_empty() && !parts[1].is_empty());
        assert!(parts[2].is_empty() && parts[3].is_empty());
        assert!(!parts[2].contains(b"m") && !parts[3].contains(b"z"));
        check_cover(&parts).unwrap();
        let whole = cut(&[], 3);
        assert!(whole[0].is_whole() && whole[1].is_empty());
        check_cover(&whole).unwrap();
    }

    #[test]
    fn parts_of_different_cuts_do_not_cover() {
        let a = cut(&keys(&["c", "m"]), 3);
        let b = cut(&keys(&["e", "m"]), 3);
        let mixed = [a[0].clone(), b[1].clone(), a[2].clone()];
        let err = check_cover(&mixed).unwrap_err();
        assert!(err.contains("cut differently"), "{err}");
        let twice = [a[0].clone(), a[0].clone(), a[2].clone()];
        assert!(check_cover(&twice).unwrap_err().contains("appears twice"));
        let other_count = [a[0].clone(), cut(&keys(&["c"]), 2)[1].clone()];
        assert!(check_cover(&other_count)
            .unwrap_err()
            .contains("different cuts"));
    }

    #[test]
    fn progress_is_read_from_the_sample_offsets() {
        let samples: Vec<KeySample> = [("b", 100), ("d", 200), ("f", 300), ("", 400)]
            .iter()
            .map(|(k, o)| KeySample {
                key: k.as_bytes().to_vec(),
                offset_bytes: *o,
            })
            .collect();
        let whole = Part::whole();
        assert_eq!(fraction_done(&samples, &whole, b"a"), Some(0.0));
        assert_eq!(fraction_done(&samples, &whole, b"d"), Some(0.5));
        let part = Part::new(1, 2, b"b".to_vec(), Some(b"f".to_vec()));
        assert_eq!(fraction_done(&samples, &part, b"dz"), Some(0.5));
        assert_eq!(fraction_done(&[], &whole, b"x"), None);
    }

    #[test]
    fn a_cover_is_checked_by_each_parts_own_index_in_any_order() {
        let parts = cut(&keys(&["c", "m", "t"]), 4);
        let mut reversed = parts.clone();
        reversed.reverse();
        check_cover(&reversed).unwrap();
        let gap = [parts[0].clone(), parts[2].clone(), parts[3].clone()];
        assert!(check_cover(&gap).unwrap_err().contains("missing part 1/4"));
        let mut overlap = parts.clone();
        overlap[2].start = b"d".to_vec();
        let err = check_cover(&overlap).unwrap_err();
        assert!(err.contains("part 2/4 starts at \"d\""), "{err}");
        assert!(err.contains("where part 1/4 ends (\"m\")"), "{err}");
    }

    #[test]
    fn a_count_read_from_anywhere_sizes_nothing() {
        let huge = Part::new(0, usize::MAX, Vec::new(), None);
        let err = check_cover(&[huge]).unwrap_err();
        assert!(err.contains("over the limit of 1024"), "{err}");
        let one_of_many = Part::new(5, 4_000_000_000, Vec::new(), None);
        assert!(check_cover(&[one_of_many]).is_err());
        assert_eq!(
            part_of(&keys(&["m"]), 1, 999_999_999),
            Err(ShardProblem::TooManyParts { count: 999_999_999 })
        );
        assert!(part_of(&keys(&["m"]), 4, 4).is_err());
        assert!(part_of(&keys(&["m"]), 0, 0).is_err());
    }

    proptest! {
        /// One part computed alone is that part of the whole cut.
        #[test]
        fn a_part_alone_is_that_part_of_the_cut(
            samples in prop::collection::vec("[a-d]{0,3}", 0..40),
            count in 1usize..40,
        ) {
            let samples: Vec<Vec<u8>> = samples.into_iter().map(String::into_bytes).collect();
            let parts = cut(&samples, count);
            for (index, part) in parts.iter().enumerate() {
                prop_assert_eq!(&part_of(&samples, index, count).unwrap(), part);
            }
        }

        /// Every key is in exactly one part, whatever the samples and count.
        #[test]
        fn every_key_is_in_exactly_one_part(
            samples in prop::collection::vec("[a-d]{0,3}", 0..12),
            count in 1usize..7,
            probes in prop::collection::vec("[a-e]{0,4}", 1..40),
        ) {
            let samples: Vec<Vec<u8>> = samples.into_iter().map(String::into_bytes).collect();
            let parts = cut(&samples, count);
            prop_assert_eq!(parts.len(), count);
            prop_assert!(check_cover(&parts).is_ok());
            for key in probes {
                let holders = parts.iter().filter(|p| p.contains(key.as_bytes())).count();
                prop_assert_eq!(holders, 1, "key {:?} in {:?}", key, parts);
            }
        }
    }
}
