//! Durations as this library writes them for people and operators: in the
//! largest unit that divides them exactly (`2d`, `90m`, `1500ms`), the form
//! the duration grammar reads back; and for reading at a glance
//! ([`human`]: `29m 59s`).

use std::fmt;

use chrono::TimeDelta;

/// `d` printed for people, to the second: `29m 59s`, `1day 23h`, `500ms`
/// under a second, `500us` under a millisecond (humantime's format, the
/// one the duration grammar parses). What to print a [`crate::Expiring::time_left`] with, rather
/// than chrono's ISO 8601 `PT1799.996S`.
///
/// ```
/// use bigtable_ttl::{chrono::TimeDelta, human};
///
/// let left = TimeDelta::milliseconds(1_799_996);
/// assert_eq!(human(left).to_string(), "29m 59s");
/// assert_eq!(human(TimeDelta::days(2)).to_string(), "2days");
/// assert_eq!(human(TimeDelta::milliseconds(500)).to_string(), "500ms");
/// assert_eq!(human(-TimeDelta::seconds(90)).to_string(), "-1m 30s");
/// ```
#[must_use]
pub fn human(d: TimeDelta) -> HumanDuration {
    HumanDuration(d)
}

/// A duration that prints for people ([`human`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(TimeDelta);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d < TimeDelta::zero() {
            f.write_str("-")?;
        }
        // `abs` of the minimum `TimeDelta` overflows: clamp it first.
        let d = d.max(-TimeDelta::MAX).abs().to_std().unwrap_or_default();
        // Whole seconds: sub-second digits are noise at a glance, except
        // for what lasts under a second, and under a millisecond (a TTL
        // refused for it) rounding down to "0s" would hide the value.
        let shown = if d.as_millis() == 0 {
            std::time::Duration::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(0))
        } else if d.as_secs() == 0 {
            std::time::Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(0))
        } else {
            std::time::Duration::from_secs(d.as_secs())
        };
        write!(f, "{}", humantime::format_duration(shown))
    }
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// `nanos` nanoseconds in the largest unit that divides them.
pub(crate) fn short_nanos(nanos: i128) -> String {
    const UNITS: [(&str, i128); 7] = [
        ("d", 86_400 * NANOS_PER_SECOND),
        ("h", 3_600 * NANOS_PER_SECOND),
        ("m", 60 * NANOS_PER_SECOND),
        ("s", NANOS_PER_SECOND),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    if nanos == 0 {
        return "0s".to_owned();
    }
    let (unit, size) = UNITS
        .iter()
        .find(|(_, size)| nanos % size == 0)
        .copied()
        .unwrap_or(("ns", 1));
    format!("{}{unit}", nanos / size)
}

/// `d` in the largest unit that divides it.
pub(crate) fn short(d: TimeDelta) -> String {
    short_nanos(i128::from(d.num_seconds()) * NANOS_PER_SECOND + i128::from(d.subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_are_whole_seconds() {
        let h = |d: TimeDelta| human(d).to_string();
        assert_eq!(h(TimeDelta::milliseconds(1_799_996)), "29m 59s");
        assert_eq!(
            h(TimeDelta::hours(47) + TimeDelta::minutes(59)),
            "1day 23h 59m"
        );
        assert_eq!(h(TimeDelta::zero()), "0s");
        assert_eq!(h(TimeDelta::microseconds(1_500)), "1ms");
        assert_eq!(h(TimeDelta::microseconds(500)), "500us");
        assert_eq!(h(-TimeDelta::nanoseconds(7)), "-7ns");
        assert_eq!(h(TimeDelta::MIN), h(-TimeDelta::MAX));
    }

    #[test]
    fn the_largest_exact_unit() {
        assert_eq!(short(TimeDelta::days(2)), "2d");
        assert_eq!(short(TimeDelta::minutes(90)), "90m");
        assert_eq!(short(TimeDelta::milliseconds(1_500)), "1500ms");
        assert_eq!(short(TimeDelta::zero()), "0s");
        assert_eq!(short_nanos(7), "7ns");
    }
}
