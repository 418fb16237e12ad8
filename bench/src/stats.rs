//! The benchmarks' statistics, each written once: nearest-rank quantiles
//! (a figure is always one of the values measured), the median and
//! quartiles of per-round values, ratios paired within a round, and the
//! paired block bootstrap behind the latency figures' intervals.
//!
//! Values that are not finite (a measure not taken, a ratio over nothing)
//! are left out of a median or quantile.
//!
//! Written here rather than taken from `statrs`: it interpolates between
//! ranks (an even count's median is the mean of the middle two), which
//! would change what every figure of `BENCHMARKS.md` means, brings
//! `nalgebra` and `rand` along, and has no bootstrap of paired blocks.

use std::borrow::Borrow;

/// Draws of the blocks behind an interval of [`ratios`].
pub const DRAWS: usize = 400;

/// The `q` quantile of `xs` (nearest rank: the value at rank
/// `round((n - 1) q)`), NaN when there is none; `xs` is reordered.
fn select(xs: &mut [f64], q: f64) -> f64 {
    let Some(last) = xs.len().checked_sub(1) else {
        return f64::NAN;
    };
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((last as f64) * q).round() as usize;
    *xs.select_nth_unstable_by(rank, f64::total_cmp).1
}

/// The `q` quantile of the finite values of `xs` (nearest rank).
#[must_use]
pub fn quantile<T: Borrow<f64>>(xs: impl IntoIterator<Item = T>, q: f64) -> f64 {
    select(&mut finite(xs), q)
}

/// The median of the finite values of `xs`: for an even count, the upper
/// of the middle two.
#[must_use]
pub fn median<T: Borrow<f64>>(xs: impl IntoIterator<Item = T>) -> f64 {
    quantile(xs, 0.5)
}

/// A median with its quartiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quartiles {
    /// The first quartile.
    pub q1: f64,
    /// The median.
    pub median: f64,
    /// The third quartile.
    pub q3: f64,
}

/// The median and quartiles of the finite values of `xs`.
#[must_use]
pub fn quartiles<T: Borrow<f64>>(xs: impl IntoIterator<Item = T>) -> Quartiles {
    let mut xs = finite(xs);
    Quartiles {
        q1: select(&mut xs, 0.25),
        median: select(&mut xs, 0.5),
        q3: select(&mut xs, 0.75),
    }
}

/// `f(a[i], b[i])` for each round `i` (two contenders that ran in the same
/// round, seconds apart, so under the same load), their quartiles.
#[must_use]
pub fn paired(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) -> Quartiles {
    quartiles(a.iter().zip(b).map(|(&x, &y)| f(x, y)))
}

fn finite<T: Borrow<f64>>(xs: impl IntoIterator<Item = T>) -> Vec<f64> {
    xs.into_iter()
        .map(|x| *x.borrow())
        .filter(|x| x.is_finite())
        .collect()
}

/// A ratio and its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// The ratio of the quantiles of all calls.
    pub value: f64,
    /// The interval's bounds.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
}

/// For each `q` of `qs`, `a / b` of the `q` quantiles of all their calls,
/// with its 95 % interval from a paired block bootstrap. `blocks[i]` holds
/// block `i`'s calls of `a` and of `b`, run side by side under the same
/// load. The blocks are drawn again with replacement [`DRAWS`] times, both
/// contenders' blocks of a draw together (a load that moves both alike
/// then moves their ratio little), and the 2.5th and 97.5th percentiles of
/// the draws' ratios bound the interval. `seed` makes a run's intervals
/// repeatable. A contender without calls in some block (one run alone, for
/// a profiler) has no ratio: NaN.
#[must_use]
pub fn ratios(blocks: &[(&[f64], &[f64])], qs: &[f64], seed: u64) -> Vec<Ratio> {
    let n = if blocks.iter().any(|(a, b)| a.is_empty() || b.is_empty()) {
        0
    } else {
        blocks.len()
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut ratios_of = |picks: &mut dyn Iterator<Item = usize>| -> Vec<f64> {
        a.clear();
        b.clear();
        for i in picks {
            a.extend_from_slice(blocks[i].0);
            b.extend_from_slice(blocks[i].1);
        }
        qs.iter()
            .map(|&q| select(&mut a, q) / select(&mut b, q))
            .collect()
    };
    let values = ratios_of(&mut (0..n));
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(DRAWS); qs.len()];
    for _ in 0..if n > 0 { DRAWS } else { 0 } {
        let drawn = ratios_of(&mut (0..n).map(|_| rng.usize(..n)));
        for (k, ratio) in drawn.into_iter().enumerate() {
            draws[k].push(ratio);
        }
    }
    values
        .into_iter()
        .zip(&mut draws)
        .map(|(value, drawn)| Ratio {
            value,
            low: select(drawn, 0.025),
            high: select(drawn, 0.975),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The quantiles are elements of the input, compared exactly.
    #[allow(clippy::float_cmp)]
    #[test]
    fn quantiles_are_nearest_rank() {
        let xs: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(quantile(&xs, 0.5), 51.0);
        assert_eq!(quantile(&xs, 0.99), 99.0);
        assert!(quantile::<f64>([], 0.5).is_nan());
        // An even count's median is the upper middle value, not a mean.
        assert_eq!(median([4.0, 1.0, 3.0, 2.0]), 3.0);
        assert_eq!(median([2.0, 1.0, 3.0]), 2.0);
    }

    #[allow(clippy::float_cmp)]
    #[test]
    fn values_not_measured_are_left_out() {
        assert_eq!(median([f64::NAN, 5.0, f64::INFINITY, 1.0, 3.0]), 3.0);
        assert!(median([f64::NAN]).is_nan());
        let q = quartiles([5.0, 1.0, 4.0, 2.0, 3.0, f64::NAN]);
        assert_eq!((q.q1, q.median, q.q3), (2.0, 3.0, 4.0));
    }

    /// Ratios are taken round by round, then summed up: the median of the
    /// rounds' ratios, not the ratio of the medians.
    #[allow(clippy::float_cmp)]
    #[test]
    fn paired_takes_each_round_s_ratio() {
        let a = [1.0, 10.0, 100.0];
        let b = [2.0, 20.0, 50.0];
        let q = paired(&a, &b, |a, b| b / a);
        assert_eq!((q.q1, q.median, q.q3), (2.0, 2.0, 2.0));
        assert_eq!(paired(&a, &b[..2], |a, b| b / a).median, 2.0);
        assert_eq!(median(b) / median(a), 2.0);
        assert_eq!(paired(&a, &b, |a, b| a - b).q1, -1.0);
    }

    /// Blocks whose level moves tenfold (the load), `a` 1.1 times `b` in
    /// each: drawn in pairs, every draw's ratio is 1.1, so the interval is
    /// 1.1 too; drawn apart, it would span the load's swings.
    #[test]
    fn blocks_are_drawn_in_pairs() {
        let b: Vec<Vec<f64>> = (1..=40)
            .map(|level| (0..50).map(|k| f64::from(level * 10 + k % 7)).collect())
            .collect();
        let a: Vec<Vec<f64>> = b
            .iter()
            .map(|block| block.iter().map(|x| x * 1.1).collect())
            .collect();
        let blocks: Vec<(&[f64], &[f64])> =
            a.iter().zip(&b).map(|(a, b)| (&a[..], &b[..])).collect();
        for r in ratios(&blocks, &[0.5, 0.99], 7) {
            for x in [r.value, r.low, r.high] {
                assert!((x - 1.1).abs() < 1e-9, "{r:?}");
            }
        }
    }

    /// Two contenders drawn from one distribution: the ratio is near 1 and
    /// its interval holds 1 with some width; with `a` 20 % slower it lies
    /// above 1.
    #[test]
    fn the_interval_brackets_the_ratio() {
        let mut rng = fastrand::Rng::with_seed(3);
        let mut sample = |scale: f64| -> Vec<Vec<f64>> {
            (0..100)
                .map(|_| {
                    (0..50)
                        .map(|_| scale * (100.0 + 50.0 * rng.f64()))
                        .collect()
                })
                .collect()
        };
        let (a, b, slow) = (sample(1.0), sample(1.0), sample(1.2));
        let pair = |a: &[Vec<f64>], b: &[Vec<f64>]| -> Vec<Ratio> {
            let blocks: Vec<(&[f64], &[f64])> =
                a.iter().zip(b).map(|(a, b)| (&a[..], &b[..])).collect();
            ratios(&blocks, &[0.5, 0.99], 11)
        };
        for r in pair(&a, &b) {
            assert!(r.low < r.value && r.value < r.high, "{r:?}");
            assert!(
                r.low < 1.0 && 1.0 < r.high && r.high - r.low < 0.05,
                "{r:?}"
            );
        }
        let median = pair(&slow, &b)[0];
        assert!(median.low > 1.1 && median.high < 1.3, "{median:?}");
    }

    #[test]
    fn no_blocks_no_ratio() {
        let r = ratios(&[], &[0.5], 1)[0];
        assert!(r.value.is_nan() && r.low.is_nan() && r.high.is_nan());
        let calls = [1.0, 2.0];
        let r = ratios(&[(&calls, &[]), (&calls, &[])], &[0.5], 1)[0];
        assert!(
            r.value.is_nan() && r.low.is_nan() && r.high.is_nan(),
            "{r:?}"
        );
    }
}
