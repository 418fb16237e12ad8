//! Durations as this library writes them for people and operators: in the
//! largest unit that divides them exactly (`2d`, `90m`, `1500ms`), the form
//! the duration grammar reads back.

use chrono::TimeDelta;

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
    fn the_largest_exact_unit() {
        assert_eq!(short(TimeDelta::days(2)), "2d");
        assert_eq!(short(TimeDelta::minutes(90)), "90m");
        assert_eq!(short(TimeDelta::milliseconds(1_500)), "1500ms");
        assert_eq!(short(TimeDelta::zero()), "0s");
        assert_eq!(short_nanos(7), "7ns");
    }
}
