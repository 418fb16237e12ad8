//! TTL policies and the timestamp rules they imply.
//!
//! Everything here is pure arithmetic on microseconds since the epoch, every
//! timestamp a whole millisecond (Bigtable's table granularity). With `E` a
//! cell's expiry and `now` the clock's time, both truncated to the millisecond:
//!
//! * one-second: timestamp `= E`; visible iff `now < E`; family `max_age = 1s`;
//! * default `D`, requested TTL `T`: timestamp `= now + (T - D)`; expiry
//!   `= timestamp + D`; visible iff `now < timestamp + D`; family `max_age = D`.
//!
//! The read filter starts at the smallest visible timestamp, so a reader never
//! shows what garbage collection may remove (see [`Policy::gc_keeps`]).

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::duration::short;
use crate::model::error::{self, Error, Overflow, Result};

/// Microseconds in a millisecond: Bigtable timestamps must be multiples of it.
pub(crate) const MICROS_PER_MILLI: i64 = 1_000;

/// How a family's cells expire.
///
/// The CLI and operators write them `one-second` and `default=2d`
/// (`ops::parse_policy`); the derive picks one from `#[ttl(default = "…")]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Every cell carries its own expiry: its timestamp is the moment it
    /// expires, and the family's rule is `max_age = 1s` (one-second
    /// expiration). Every write must name an expiry.
    CellExpiry,
    /// A write that names no TTL lives `ttl`: the family's rule is
    /// `max_age = ttl`, and a cell written with another TTL `T` gets its
    /// write time shifted by `T - ttl` (default expiration).
    DefaultTtl {
        /// The TTL of a write that names none (a whole number of milliseconds).
        ttl: TimeDelta,
    },
}

/// What a write asks for, before the policy turns it into a timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// The policy's default TTL (an error under the one-second policy).
    PolicyDefault,
    /// Live this long from now.
    Ttl(TimeDelta),
    /// Live until this instant.
    At(DateTime<Utc>),
}

/// Which cells are visible at one "now" ([`Policy::visibility`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Visibility {
    /// The smallest visible timestamp: one comparison per cell.
    from: i64,
}

impl Visibility {
    /// Visible iff `now < ts + default`, i.e. `ts >= now - default + 1`
    /// (µs, exact in `i128`). A clock before the epoch sees everything; an
    /// expiry past `i64` has not come yet.
    #[inline]
    fn new(now_ms: Option<i64>, default_micros: i64) -> Self {
        let from = match now_ms {
            None => i64::MIN,
            Some(now_ms) => {
                let from = i128::from(now_ms) - i128::from(default_micros) + 1;
                i64::try_from(from).unwrap_or(if from < 0 { i64::MIN } else { i64::MAX })
            }
        };
        Self { from }
    }

    /// Whether a cell with timestamp `ts` is visible.
    #[must_use]
    #[inline]
    pub(crate) fn is_visible(self, ts: i64) -> bool {
        ts >= self.from
    }
}

/// Microseconds since the epoch, truncated down to the millisecond.
///
/// # Errors
/// [`Error::TimestampBeforeEpoch`] for instants before 1970.
#[inline]
pub(crate) fn millis_floor(t: DateTime<Utc>) -> Result<i64> {
    millis_floor_micros(t.timestamp_micros())
}

/// [`millis_floor`] of a time given in µs since the epoch.
///
/// # Errors
/// As [`millis_floor`].
#[inline]
pub(crate) fn millis_floor_micros(micros: i64) -> Result<i64> {
    if micros < 0 {
        return Err(Error::TimestampBeforeEpoch {
            timestamp_micros: micros,
        });
    }
    Ok(micros - micros % MICROS_PER_MILLI)
}

/// The instant a whole-millisecond timestamp stands for.
///
/// # Errors
/// [`Error::ExpiryOutOfRange`] when chrono cannot represent it.
#[inline]
pub(crate) fn from_micros(micros: i64) -> Result<DateTime<Utc>> {
    DateTime::<Utc>::from_timestamp_micros(micros).ok_or_else(|| {
        Error::from(error::ExpiryOutOfRange {
            overflow: Overflow::Timestamp { micros },
        })
    })
}

#[inline]
fn delta_micros(d: TimeDelta) -> Result<i64> {
    d.num_microseconds().ok_or_else(|| {
        Error::from(error::ExpiryOutOfRange {
            overflow: Overflow::Duration { duration: d },
        })
    })
}

/// `micros + by`, or [`Error::ExpiryOutOfRange`] when it overflows.
#[inline]
fn add_micros(micros: i64, by: i64) -> Result<i64> {
    micros.checked_add(by).ok_or_else(|| {
        Error::from(error::ExpiryOutOfRange {
            overflow: Overflow::Sum {
                micros,
                by: TimeDelta::microseconds(by),
            },
        })
    })
}

#[inline]
fn floor_to_milli(micros: i64) -> i64 {
    micros - micros.rem_euclid(MICROS_PER_MILLI)
}

#[inline]
fn non_negative(micros: i64) -> Result<i64> {
    if micros < 0 {
        Err(Error::TimestampBeforeEpoch {
            timestamp_micros: micros,
        })
    } else {
        Ok(micros)
    }
}

impl Policy {
    /// The default-expiration policy with TTL `default`.
    #[must_use]
    pub const fn default_ttl(default: TimeDelta) -> Self {
        Policy::DefaultTtl { ttl: default }
    }

    /// The `max_age` of the family's garbage-collection rule.
    #[must_use]
    pub fn gc_max_age(&self) -> TimeDelta {
        match self {
            Policy::CellExpiry => TimeDelta::seconds(1),
            Policy::DefaultTtl { ttl: default } => *default,
        }
    }

    #[inline]
    fn default_micros(&self) -> i64 {
        match self {
            Policy::CellExpiry => 0,
            // Policies come from compile-time durations; saturating keeps an
            // absurd one from panicking.
            Policy::DefaultTtl { ttl: default } => default.num_microseconds().unwrap_or(i64::MAX),
        }
    }

    /// The cell timestamp (µs, whole milliseconds) for a write at `now`.
    ///
    /// # Errors
    /// * [`Error::NonPositiveTtl`] for a TTL of zero or less;
    /// * [`Error::TtlUnderMillisecond`] for a TTL under a millisecond
    ///   (Bigtable's timestamp granularity);
    /// * [`Error::ExpiryNotInFuture`] for an expiry at or before `now`;
    /// * [`Error::MissingExpiry`] (with no table) for
    ///   [`Expiry::PolicyDefault`] under the one-second policy;
    /// * [`Error::ExpiryOutOfRange`] / [`Error::TimestampBeforeEpoch`] when the
    ///   timestamp cannot be represented.
    #[inline]
    pub fn cell_timestamp(&self, now: DateTime<Utc>, expiry: Expiry) -> Result<i64> {
        self.cell_timestamp_at(millis_floor(now)?, expiry)
    }

    /// [`Policy::cell_timestamp`] at `now_ms`, a whole millisecond since
    /// the epoch (µs, as [`millis_floor`] gives it): a write that stamps
    /// several cells turns its "now" into a number once, not once a cell.
    ///
    /// # Errors
    /// As [`Policy::cell_timestamp`].
    #[inline]
    pub(crate) fn cell_timestamp_at(&self, now_ms: i64, expiry: Expiry) -> Result<i64> {
        let expiry_micros = match expiry {
            Expiry::PolicyDefault => match self {
                Policy::CellExpiry => {
                    return Err(Error::from(error::MissingExpiry { table: None }))
                }
                Policy::DefaultTtl { .. } => return Ok(now_ms),
            },
            Expiry::Ttl(ttl) => {
                if ttl <= TimeDelta::zero() {
                    return Err(Error::NonPositiveTtl { ttl });
                }
                // Under a millisecond, the truncated expiry would be "now":
                // say what is wrong with the TTL, not with the expiry.
                if ttl < TimeDelta::milliseconds(1) {
                    return Err(Error::TtlUnderMillisecond { ttl });
                }
                add_micros(now_ms, delta_micros(ttl)?)?
            }
            Expiry::At(at) => at.timestamp_micros(),
        };
        let expiry_ms = floor_to_milli(expiry_micros);
        if expiry_ms <= now_ms {
            return Err(Error::from(error::ExpiryNotInFuture {
                expire_at: from_micros(expiry_ms)?,
                now: from_micros(now_ms)?,
            }));
        }
        let ts = add_micros(expiry_ms, self.default_micros().saturating_neg())?;
        non_negative(floor_to_milli(ts))
    }

    /// When a cell with timestamp `ts` expires (µs).
    ///
    /// # Errors
    /// [`Error::ExpiryOutOfRange`] on overflow.
    #[inline]
    pub fn expiry_micros(&self, ts: i64) -> Result<i64> {
        add_micros(ts, self.default_micros())
    }

    /// When a cell with timestamp `ts` expires.
    ///
    /// # Errors
    /// [`Error::ExpiryOutOfRange`] on overflow.
    #[inline]
    pub fn expiry_of(&self, ts: i64) -> Result<DateTime<Utc>> {
        from_micros(self.expiry_micros(ts)?)
    }

    /// Fails where [`Policy::expiry_of`] fails, without building the
    /// instant: the bulk writer checks every row it queues, and builds the
    /// instant only for the rows whose expiry is asked for.
    ///
    /// # Errors
    /// As [`Policy::expiry_of`].
    #[inline]
    pub(crate) fn check_expiry_of(&self, ts: i64) -> Result<()> {
        const LAST: i64 = DateTime::<Utc>::MAX_UTC.timestamp_micros();
        const FIRST: i64 = DateTime::<Utc>::MIN_UTC.timestamp_micros();
        let micros = self.expiry_micros(ts)?;
        if (FIRST..=LAST).contains(&micros) {
            Ok(())
        } else {
            from_micros(micros).map(|_| ())
        }
    }

    /// Whether a cell with timestamp `ts` is visible at `now`.
    #[must_use]
    pub fn is_visible(&self, ts: i64, now: DateTime<Utc>) -> bool {
        self.visibility(now).is_visible(ts)
    }

    /// [`Policy::is_visible`] at `now` for many cells: the clock's time is
    /// converted once, not per cell.
    #[must_use]
    #[inline]
    pub(crate) fn visibility(&self, now: DateTime<Utc>) -> Visibility {
        Visibility::new(millis_floor(now).ok(), self.default_micros())
    }

    /// The smallest visible timestamp at `now`: the inclusive start of the
    /// read filter's timestamp range (a whole millisecond, never negative).
    #[must_use]
    pub fn visible_from(&self, now: DateTime<Utc>) -> i64 {
        let now_ms = millis_floor(now).unwrap_or(0);
        // visible iff now < ts + D  <=>  ts > now - D  <=>  ts >= now - D + 1ms
        // (on whole milliseconds). D is rounded up to the millisecond so a
        // sub-millisecond default never shows an expired cell.
        let d = self.default_micros();
        let d_ms = d.saturating_add(MICROS_PER_MILLI - 1) / MICROS_PER_MILLI * MICROS_PER_MILLI;
        now_ms
            .saturating_sub(d_ms)
            .saturating_add(MICROS_PER_MILLI)
            .max(0)
    }

    /// Whether the family's GC rule keeps a cell with timestamp `ts` at `now`
    /// (GC deletes cells older than `max_age`).
    #[must_use]
    pub fn gc_keeps(&self, ts: i64, now: DateTime<Utc>) -> bool {
        let max_age = self.gc_max_age().num_microseconds().unwrap_or(i64::MAX);
        let now_us = now.timestamp_micros();
        now_us.saturating_sub(ts) <= max_age
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Policy::CellExpiry => f.write_str("one-second expiration (max_age = 1s)"),
            Policy::DefaultTtl { ttl } => {
                write!(f, "default expiration (max_age = {})", short(*ttl))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    #[test]
    fn checking_an_expiry_fails_where_building_it_fails() {
        let last = DateTime::<Utc>::MAX_UTC.timestamp_micros();
        for policy in [Policy::CellExpiry, Policy::default_ttl(TimeDelta::days(2))] {
            let at_last = last - policy.default_micros();
            for ts in [0, at_last - 1, at_last, at_last + 1, i64::MAX - 1, i64::MAX] {
                assert_eq!(
                    policy.check_expiry_of(ts).is_ok(),
                    policy.expiry_of(ts).is_ok(),
                    "{policy:?} at {ts}"
                );
            }
            assert!(policy.check_expiry_of(at_last).is_ok());
            assert!(policy.check_expiry_of(at_last + 1).is_err());
        }
    }

    #[test]
    fn one_second_timestamp_is_the_expiry_truncated() {
        let p = Policy::CellExpiry;
        let now = t(1_700_000_000_000);
        let at = now + TimeDelta::microseconds(5_000_999);
        assert_eq!(
            p.cell_timestamp(now, Expiry::At(at)).unwrap(),
            1_700_000_005_000_000
        );
    }

    #[test]
    fn one_second_rejects_expiry_at_now() {
        let now = t(1_700_000_000_000);
        let err = Policy::CellExpiry
            .cell_timestamp(now, Expiry::At(now + TimeDelta::microseconds(999)))
            .unwrap_err();
        assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err}");
    }

    #[test]
    fn default_shifts_by_ttl_minus_default() {
        let p = Policy::default_ttl(TimeDelta::days(2));
        let now = t(1_700_000_000_123);
        assert_eq!(
            p.cell_timestamp(now, Expiry::PolicyDefault).unwrap(),
            1_700_000_000_123_000
        );
        let ts = p
            .cell_timestamp(now, Expiry::Ttl(TimeDelta::hours(1)))
            .unwrap();
        assert_eq!(ts, 1_700_000_000_123_000 - 47 * 3_600_000_000);
        assert_eq!(p.expiry_of(ts).unwrap(), now + TimeDelta::hours(1));
    }

    #[test]
    fn non_positive_ttl_is_rejected() {
        let p = Policy::default_ttl(TimeDelta::days(2));
        for ttl in [TimeDelta::zero(), TimeDelta::seconds(-1)] {
            let err = p
                .cell_timestamp(t(1_000_000), Expiry::Ttl(ttl))
                .unwrap_err();
            assert!(matches!(err, Error::NonPositiveTtl { .. }));
        }
    }

    #[test]
    fn before_epoch_is_rejected() {
        let p = Policy::default_ttl(TimeDelta::days(2));
        let err = p
            .cell_timestamp(t(1_000), Expiry::Ttl(TimeDelta::seconds(1)))
            .unwrap_err();
        assert!(matches!(err, Error::TimestampBeforeEpoch { .. }), "{err}");
    }

    #[test]
    fn one_second_without_expiry_is_an_error() {
        let err = Policy::CellExpiry
            .cell_timestamp(t(1_000), Expiry::PolicyDefault)
            .unwrap_err();
        assert!(matches!(err, Error::MissingExpiry { .. }));
    }

    #[test]
    fn visibility_is_now_before_timestamp_plus_default() {
        let old = |now_ms: Option<i64>, d: i64, ts: i64| match (now_ms, ts.checked_add(d)) {
            (Some(now_ms), Some(expiry)) => now_ms < expiry,
            _ => true,
        };
        let nows = [None, Some(0), Some(1_000), Some(1_700_000_000_123_000)];
        let defaults = [0, 1_000, 3_600_000_000, i64::MAX];
        let stamps = [
            i64::MIN,
            -1,
            0,
            999,
            1_000,
            1_001,
            1_700_000_000_123_000,
            1_699_996_400_123_000,
            1_699_996_400_124_000,
            i64::MAX - 1,
            i64::MAX,
        ];
        for now_ms in nows {
            for d in defaults {
                let v = Visibility::new(now_ms, d);
                for ts in stamps {
                    assert_eq!(v.is_visible(ts), old(now_ms, d, ts), "{now_ms:?} {d} {ts}");
                }
            }
        }
    }

    #[test]
    fn a_policy_displays_the_max_age_it_sets() {
        let p = Policy::default_ttl(TimeDelta::milliseconds(1_500));
        assert_eq!(p.to_string(), "default expiration (max_age = 1500ms)");
        let p = Policy::default_ttl(TimeDelta::days(2));
        assert_eq!(p.to_string(), "default expiration (max_age = 2d)");
    }

    #[test]
    fn filter_start_is_the_smallest_visible_timestamp() {
        let p = Policy::default_ttl(TimeDelta::seconds(10));
        let now = t(100_000);
        let start = p.visible_from(now);
        assert!(p.is_visible(start, now));
        assert!(!p.is_visible(start - MICROS_PER_MILLI, now));
        let one = Policy::CellExpiry;
        let start = one.visible_from(now);
        assert!(one.is_visible(start, now));
        assert!(!one.is_visible(start - MICROS_PER_MILLI, now));
    }
}
