//! The benchmarks' statistics: nearest-rank quantiles (a figure is always
//! one of the values measured), ratios paired within a round, and the
//! paired block bootstrap behind the latency figures' intervals. Values
//! that are not finite (a measure not taken) are left out. Not `statrs`: it
//! interpolates between ranks and has no paired bootstrap.

use std::borrow::Borrow;

/// Draws of the blocks behind an interval of [`ratios`].
pub const DRAWS: usize = 400;

/// The `q` quantile of `xs` (the value at rank `round((n - 1) q)`), NaN
/// when there is none; `xs` is reordered.
fn select(xs: &mut [f64], q: f64) -> f64 {
    let Some(last) = xs.len().checked_sub(1) else {
        return f64::NAN;
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = ((last as f64) * q).round() as usize;
    *xs.select_nth_unstable_by(rank, f64::total_cmp).1
}

fn finite<T: Borrow<f64>>(xs: impl IntoIterator<Item = T>) -> Vec<f64> {
    let xs = xs.into_iter().map(|x| *x.borrow());
    xs.filter(|x| x.is_finite()).collect()
}

/// The `q` quantile of the finite values of `xs` (nearest rank).
pub fn quantile<T: Borrow<f64>>(xs: impl IntoIterator<Item = T>, q: f64) -> f64 {
    select(&mut finite(xs), q)
}

/// The median of the finite values of `xs`: for an even count, the upper
/// of the middle two.
pub fn median<T: Borrow<f64>>(xs: impl IntoIterator<Item = T>) -> f64 {
    quantile(xs, 0.5)
}

/// A median with its quartiles.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(missing_docs)]
pub struct Quartiles {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
}

/// The median and quartiles of the finite values of `xs`.
pub fn quartiles<T: Borrow<f64>>(xs: impl IntoIterator<Item = T>) -> Quartiles {
    let mut xs = finite(xs);
    let mut at = |q| select(&mut xs, q);
    Quartiles {
        q1: at(0.25),
        median: at(0.5),
        q3: at(0.75),
    }
}

/// The quartiles of `f(a[i], b[i])` over the rounds `i`: two contenders
/// that ran in the same round, seconds apart, so under the same load.
pub fn paired(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) -> Quartiles {
    quartiles(a.iter().zip(b).map(|(&x, &y)| f(x, y)))
}

/// A ratio and its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(missing_docs)]
pub struct Ratio {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// For each `q` of `qs`, `a / b` of the `q` quantiles of all their calls,
/// with its 95 % interval: `blocks[i]` holds block `i`'s calls of `a` and
/// of `b`, run side by side, and the blocks are drawn again [`DRAWS`]
/// times, both contenders' blocks of a draw together (a load that moves
/// both alike moves their ratio little). `seed` makes the intervals repeat;
/// a contender without calls in some block has no ratio: NaN.
pub fn ratios(blocks: &[(&[f64], &[f64])], qs: &[f64], seed: u64) -> Vec<Ratio> {
    let empty = blocks.iter().any(|(a, b)| a.is_empty() || b.is_empty());
    let n = if empty { 0 } else { blocks.len() };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut ratios_of = |picks: &mut dyn Iterator<Item = usize>| -> Vec<f64> {
        a.clear();
        b.clear();
        for i in picks {
            a.extend_from_slice(blocks[i].0);
            b.extend_from_slice(blocks[i].1);
        }
        let ratio = |&q: &f64| select(&mut a, q) / select(&mut b, q);
        qs.iter().map(ratio).collect()
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
    let interval = |(value, drawn): (f64, &mut Vec<f64>)| Ratio {
        value,
        low: select(drawn, 0.025),
        high: select(drawn, 0.975),
    };
    values.into_iter().zip(&mut draws).map(interval).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The quantiles are elements of the input, compared exactly.
    #[allow(clippy::float_cmp)]
    #[test]
    fn quantiles_are_nearest_rank_of_finite_values() {
        let xs: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!((quantile(&xs, 0.5), quantile(&xs, 0.99)), (51.0, 99.0));
        // An even count's median is the upper middle value, not a mean.
        assert_eq!(median([4.0, 1.0, 3.0, 2.0]), 3.0);
        assert_eq!(median([f64::NAN, 5.0, f64::INFINITY, 1.0, 3.0]), 3.0);
        assert!(median([f64::NAN]).is_nan());
        let q = quartiles([5.0, 1.0, 4.0, 2.0, 3.0, f64::NAN]);
        assert_eq!((q.q1, q.median, q.q3), (2.0, 3.0, 4.0));
    }

    /// The median of the rounds' ratios, not the ratio of the medians.
    #[allow(clippy::float_cmp)]
    #[test]
    fn paired_takes_each_round_s_ratio() {
        let (a, b) = ([1.0, 10.0, 100.0], [2.0, 20.0, 50.0]);
        let q = paired(&a, &b, |a, b| b / a);
        assert_eq!((q.q1, q.median, q.q3), (2.0, 2.0, 2.0));
        assert_eq!(median(b) / median(a), 2.0);
    }

    fn blocks(a: &[Vec<f64>], b: &[Vec<f64>], qs: &[f64]) -> Vec<Ratio> {
        let blocks: Vec<(&[f64], &[f64])> =
            a.iter().zip(b).map(|(a, b)| (&a[..], &b[..])).collect();
        ratios(&blocks, qs, 7)
    }

    /// Blocks whose level moves tenfold (the load), `a` 1.1 times `b` in
    /// each: drawn in pairs, every draw's ratio is 1.1; drawn apart, the
    /// interval would span the load's swings.
    #[test]
    fn blocks_are_drawn_in_pairs() {
        let b: Vec<Vec<f64>> = (1..=40)
            .map(|level| (0..50).map(|k| f64::from(level * 10 + k % 7)).collect())
            .collect();
        let a: Vec<Vec<f64>> = b
            .iter()
            .map(|x| x.iter().map(|x| x * 1.1).collect())
            .collect();
        for r in blocks(&a, &b, &[0.5, 0.99]) {
            for x in [r.value, r.low, r.high] {
                assert!((x - 1.1).abs() < 1e-9, "{r:?}");
            }
        }
    }

    /// Two contenders drawn from one distribution: the interval holds 1
    /// with some width; with `a` 20 % slower it lies above 1.
    #[test]
    fn the_interval_brackets_the_ratio() {
        let mut rng = fastrand::Rng::with_seed(3);
        let mut sample = |scale: f64| -> Vec<Vec<f64>> {
            let block = |_| {
                (0..50)
                    .map(|_| scale * (100.0 + 50.0 * rng.f64()))
                    .collect()
            };
            (0..100).map(block).collect()
        };
        let (a, b, slow) = (sample(1.0), sample(1.0), sample(1.2));
        for r in blocks(&a, &b, &[0.5, 0.99]) {
            assert!(r.low < r.value && r.value < r.high, "{r:?}");
            assert!(
                r.low < 1.0 && 1.0 < r.high && r.high - r.low < 0.05,
                "{r:?}"
            );
        }
        let median = blocks(&slow, &b, &[0.5])[0];
        assert!(median.low > 1.1 && median.high < 1.3, "{median:?}");
    }

    #[test]
    fn no_calls_no_ratio() {
        let calls = [vec![1.0, 2.0]];
        for r in [blocks(&[], &[], &[0.5]), blocks(&calls, &[vec![]], &[0.5])] {
            assert!(r[0].value.is_nan() && r[0].low.is_nan() && r[0].high.is_nan());
        }
    }
}
