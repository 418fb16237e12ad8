//! Cutting a scan into parts at sample row keys (what `SampleRowKeys`
//! returns), so that the parts can be read at once: request building, no
//! I/O.

use std::collections::BTreeSet;
use std::ops::Bound;

use crate::model::scan::Scan;

/// `scan` cut at the `samples` that fall strictly inside its key range into
/// at most `max_parts` parts (one when `max_parts` is 0 or 1), in the scan's
/// order: ascending keys, or descending for a reversed scan, so that reading
/// the parts one after another gives the scan's rows in its order.
///
/// The parts are disjoint and together cover exactly the scan's keys; each
/// is a range scan of the same direction. When there are more samples than
/// cuts, the cuts are taken evenly among them (samples mark parts of about
/// equal size, so the parts stay about equal). A scan with a row limit, or of
/// a list of keys, is one part, itself: a limit means "the first rows in the
/// scan's order", which parts read at once cannot honour without reading
/// more than asked. An empty sample key (Bigtable's "end of table") is no
/// cut.
pub(crate) fn split(scan: &Scan, samples: &[Vec<u8>], max_parts: usize) -> Vec<Scan> {
    let bounds = scan.key_bounds().filter(|_| scan.row_limit().is_none());
    let Some((start, end)) = bounds else {
        return vec![scan.clone()];
    };
    let inside: Vec<&[u8]> = samples
        .iter()
        .map(Vec::as_slice)
        .filter(|k| !k.is_empty() && above(k, &start) && below(k, &end))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let cuts = pick_evenly(&inside, max_parts.saturating_sub(1));
    if cuts.is_empty() {
        return vec![scan.clone()];
    }
    let mut parts = Vec::with_capacity(cuts.len() + 1);
    let mut from = start;
    for cut in cuts {
        parts.push((from, Bound::Excluded(cut.to_vec())));
        from = Bound::Included(cut.to_vec());
    }
    parts.push((from, end));
    let mut parts: Vec<Scan> = parts
        .into_iter()
        .map(|range| {
            let part = Scan::range(range);
            if scan.is_reversed() {
                part.reversed()
            } else {
                part
            }
        })
        .collect();
    if scan.is_reversed() {
        parts.reverse();
    }
    parts
}

/// Whether `key` lies after the range start `start` (a cut at the start
/// itself would leave an empty part).
fn above(key: &[u8], start: &Bound<Vec<u8>>) -> bool {
    match start {
        Bound::Included(s) | Bound::Excluded(s) => key > s.as_slice(),
        Bound::Unbounded => true,
    }
}

/// Whether `key` lies before the range end `end`.
fn below(key: &[u8], end: &Bound<Vec<u8>>) -> bool {
    match end {
        Bound::Included(e) | Bound::Excluded(e) => key < e.as_slice(),
        Bound::Unbounded => true,
    }
}

/// At most `cuts` of the sorted `candidates`, evenly spaced: the `m`
/// candidates mark `m + 1` segments, and each of the `cuts + 1` parts gets
/// about as many of them.
fn pick_evenly<'a>(candidates: &[&'a [u8]], cuts: usize) -> Vec<&'a [u8]> {
    let m = candidates.len();
    if m <= cuts {
        return candidates.to_vec();
    }
    let parts = cuts + 1;
    // i * (m + 1) / parts - 1 grows strictly with i, since m + 1 > parts.
    (1..parts)
        .map(|i| candidates[i * (m + 1) / parts - 1])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Whether `scan` (a range or prefix scan, or a split part) covers `key`.
    fn covers(scan: &Scan, key: &[u8]) -> bool {
        let (start, end) = scan.key_bounds().expect("a range");
        let after_start = match &start {
            Bound::Included(s) => key >= s.as_slice(),
            Bound::Excluded(s) => key > s.as_slice(),
            Bound::Unbounded => true,
        };
        let before_end = match &end {
            Bound::Included(e) => key <= e.as_slice(),
            Bound::Excluded(e) => key < e.as_slice(),
            Bound::Unbounded => true,
        };
        after_start && before_end
    }

    fn keys(ks: &[&str]) -> Vec<Vec<u8>> {
        ks.iter().map(|k| k.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_range_is_cut_at_the_samples_inside_it() {
        let samples = keys(&["a", "c", "e", "g", "k", ""]);
        let parts = split(&Scan::range("b".."h"), &samples, 10);
        assert_eq!(
            parts,
            vec![
                Scan::range("b".."c"),
                Scan::range("c".."e"),
                Scan::range("e".."g"),
                Scan::range("g".."h"),
            ]
        );
        // Every row: unbounded ends.
        let parts = split(&Scan::all(), &keys(&["m"]), 4);
        assert_eq!(
            parts,
            vec![
                Scan::range::<&str>((Bound::Unbounded, Bound::Excluded("m"))),
                Scan::range::<&str>((Bound::Included("m"), Bound::Unbounded)),
            ]
        );
        // A prefix: from the prefix to the key after it.
        let parts = split(&Scan::prefix("ab"), &keys(&["aa", "abc", "ac"]), 4);
        assert_eq!(
            parts,
            vec![Scan::range("ab".."abc"), Scan::range("abc".."ac")]
        );
    }

    #[test]
    fn what_cannot_be_cut_is_one_part_itself() {
        let samples = keys(&["b", "d"]);
        for scan in [
            Scan::all().limit(10),
            Scan::keys(["a", "c", "e"]),
            Scan::range("x"..),
            Scan::range("b".."c"),
            Scan::all(),
        ] {
            let max = if scan == Scan::all() { 1 } else { 8 };
            assert_eq!(split(&scan, &samples, max), vec![scan.clone()], "{scan:?}");
        }
        assert_eq!(split(&Scan::all(), &[], 8), vec![Scan::all()]);
        assert_eq!(split(&Scan::all(), &samples, 0), vec![Scan::all()]);
        // A sample at the start itself would leave an empty part.
        assert_eq!(split(&Scan::range("b"..="d"), &samples, 8).len(), 1);
    }

    #[test]
    fn more_samples_than_cuts_are_taken_evenly() {
        let samples: Vec<Vec<u8>> = (1..100).map(|i| format!("k{i:03}").into_bytes()).collect();
        let parts = split(&Scan::all(), &samples, 4);
        let starts: Vec<_> = parts.iter().map(|p| p.key_bounds().unwrap().0).collect();
        assert_eq!(
            starts,
            vec![
                Bound::Unbounded,
                Bound::Included(b"k025".to_vec()),
                Bound::Included(b"k050".to_vec()),
                Bound::Included(b"k075".to_vec()),
            ]
        );
    }

    #[test]
    fn a_reversed_scan_is_cut_into_reversed_parts_greatest_first() {
        let parts = split(&Scan::range("b".."h").reversed(), &keys(&["d", "f"]), 8);
        assert_eq!(
            parts,
            vec![
                Scan::range("f".."h").reversed(),
                Scan::range("d".."f").reversed(),
                Scan::range("b".."d").reversed(),
            ]
        );
    }

    fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
        prop_oneof![
            Just(Bound::Unbounded),
            "[a-d]{0,3}".prop_map(|k| Bound::Included(k.into_bytes())),
            "[a-d]{0,3}".prop_map(|k| Bound::Excluded(k.into_bytes())),
        ]
    }

    fn scan() -> impl Strategy<Value = Scan> {
        prop_oneof![
            Just(Scan::all()),
            "[a-d]{0,2}".prop_map(Scan::prefix),
            (bound(), bound()).prop_map(Scan::range),
        ]
    }

    proptest! {
        /// Every key the scan covers is in exactly one part, no other key
        /// is in any; parts come in the scan's order, at most `max_parts`.
        #[test]
        fn parts_cover_the_scan_once(
            scan in scan(),
            reversed in any::<bool>(),
            samples in prop::collection::vec("[a-d]{0,3}", 0..12),
            max_parts in 0usize..6,
        ) {
            let scan = if reversed { scan.reversed() } else { scan };
            let samples: Vec<Vec<u8>> = samples.into_iter().map(String::into_bytes).collect();
            let parts = split(&scan, &samples, max_parts);
            prop_assert!(!parts.is_empty());
            prop_assert!(parts.len() <= max_parts.max(1));
            prop_assert!(parts.iter().all(|p| p.is_reversed() == reversed));
            let universe: Vec<String> = (0..4)
                .flat_map(|n| {
                    let letters = ["a", "b", "c", "d", "e"];
                    let mut words = vec![String::new()];
                    for _ in 0..n {
                        words = words
                            .iter()
                            .flat_map(|w| letters.iter().map(move |l| format!("{w}{l}")))
                            .collect();
                    }
                    words
                })
                .collect();
            let mut order = Vec::new();
            for key in &universe {
                let key = key.as_bytes();
                let holders: Vec<usize> = (0..parts.len()).filter(|&i| covers(&parts[i], key)).collect();
                prop_assert_eq!(holders.len(), usize::from(covers(&scan, key)), "key {:?}", key);
                if let Some(&part) = holders.first() {
                    order.push((key.to_vec(), part));
                }
            }
            // Sorted by key, the part indices ascend (descend when reversed).
            order.sort();
            let indices: Vec<usize> = order.iter().map(|(_, i)| *i).collect();
            let mut sorted = indices.clone();
            sorted.sort_unstable();
            if reversed {
                sorted.reverse();
            }
            prop_assert_eq!(indices, sorted);
        }
    }
}
