//! The latency figures' statistics: quantiles of a contender's calls, and
//! the ratio of two contenders' quantiles with a 95 % interval from a
//! paired block bootstrap.
//!
//! The contenders run in blocks of calls, alternating block by block, so a
//! block of one and the block of the other beside it met the same load.
//! The interval draws the blocks again with replacement, `DRAWS` times,
//! both contenders' blocks of a draw together, and takes the ratio of the
//! quantiles of each draw: the 2.5th and 97.5th percentiles of those ratios
//! bound it. Drawing the pairs together keeps what the alternation bought:
//! a load that moves both contenders alike moves their ratio little.

/// Draws of the blocks behind an interval.
pub(crate) const DRAWS: usize = 400;

/// The `q` quantile of `xs` (nearest rank); `xs` is reordered.
pub(crate) fn quantile(xs: &mut [f64], q: f64) -> f64 {
    let Some(last) = xs.len().checked_sub(1) else {
        return f64::NAN;
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = ((last as f64) * q).round() as usize;
    *xs.select_nth_unstable_by(rank, f64::total_cmp).1
}

/// The `q` quantile of `xs` (nearest rank).
pub(crate) fn percentile(xs: &[f64], q: f64) -> f64 {
    quantile(&mut xs.to_vec(), q)
}

/// A ratio and its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ratio {
    pub(crate) value: f64,
    pub(crate) low: f64,
    pub(crate) high: f64,
}

/// For each `q` of `qs`, `a / b` of the `q` quantiles of all their calls,
/// with its interval. `blocks[i]` holds block `i`'s calls of `a` and of
/// `b`, run side by side. `seed` makes a run's intervals repeatable.
pub(crate) fn ratios(blocks: &[(&[f64], &[f64])], qs: &[f64], seed: u64) -> Vec<Ratio> {
    // A contender that did not run (`LATENCY_ONLY`) has no ratio: no draws,
    // which would only cost a profiled run its time.
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
            .map(|&q| quantile(&mut a, q) / quantile(&mut b, q))
            .collect()
    };
    let values = ratios_of(&mut (0..n));
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(DRAWS); qs.len()];
    if n > 0 {
        for _ in 0..DRAWS {
            let drawn = ratios_of(&mut (0..n).map(|_| rng.usize(..n)));
            for (k, ratio) in drawn.into_iter().enumerate() {
                draws[k].push(ratio);
            }
        }
    }
    values
        .into_iter()
        .zip(&mut draws)
        .map(|(value, drawn)| Ratio {
            value,
            low: quantile(drawn, 0.025),
            high: quantile(drawn, 0.975),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The quantiles are elements of the input, compared exactly.
    #[allow(clippy::float_cmp)]
    #[test]
    fn percentiles_are_nearest_rank() {
        let xs: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.5), 51.0);
        assert_eq!(percentile(&xs, 0.99), 99.0);
        assert!(percentile(&[], 0.5).is_nan());
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
