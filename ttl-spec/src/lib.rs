//! What `bigtable-ttl` users write, parsed one way wherever it is written:
//! in `#[ttl(default = "2d")]` (by the derive, at compile time) and in
//! `--policy default=2d` (by the runtime's operations and the CLI).
//!
//! A small crate of its own because the derive, a proc-macro crate, cannot
//! use the runtime, and the runtime cannot use a proc-macro crate's
//! functions.
// No function of the library over about 100 lines without a reason
// stated next to it (the workspace allows long tests and `quote!` impls).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::fmt;
use std::time::Duration;

/// The qualifier of the shadow column holding the real write time, when
/// `#[ttl(written_at)]` names none.
pub const DEFAULT_WRITTEN_AT: &str = "written_at";

/// Largest accepted duration in milliseconds: its microseconds must fit in
/// an `i64`, as Bigtable timestamps are microseconds in an `i64`.
pub const MAX_DURATION_MILLIS: i64 = i64::MAX / 1_000;

/// The longest `max_age` a GC rule can hold: a `google.protobuf.Duration`
/// holds at most 315,576,000,000 seconds (10,000 years).
pub const MAX_GC_AGE_MILLIS: i64 = 315_576_000_000 * 1_000;

/// How much shorter than the default TTL a per-field TTL may be: 50 years
/// (18,250 days). A field TTL `T` under a default `D` stamps its cells
/// `D - T` before their write time; past this, they would fall before 1970
/// for every write of this century's first decades, and Bigtable rejects
/// timestamps before the epoch.
pub const MAX_SHORTER_THAN_DEFAULT_MILLIS: i64 = 18_250 * 86_400 * 1_000;

/// Why a duration was refused. `Display` says what is wrong and what to
/// write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurationError {
    /// Not a number and a unit.
    Syntax {
        /// The text given.
        text: String,
        /// The parser's reason.
        reason: String,
    },
    /// Zero: a TTL must be positive.
    Zero {
        /// The text given.
        text: String,
    },
    /// Not a whole number of milliseconds.
    SubMillisecond {
        /// The text given.
        text: String,
    },
    /// Over [`MAX_DURATION_MILLIS`].
    TooLong {
        /// The text given.
        text: String,
    },
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Syntax { text, reason } => write!(
                f,
                "invalid duration {text:?}: {reason}; write a number and a unit, as in \
                 \"90s\", \"15m\", \"1h30m\" or \"2d\" (units: ms, s, m, h, d, w)"
            ),
            DurationError::Zero { text } => write!(
                f,
                "duration {text:?} is zero: a TTL must be positive; \
                 to delete data, delete the row instead"
            ),
            DurationError::SubMillisecond { text } => write!(
                f,
                "duration {text:?} is not a whole number of milliseconds: \
                 Bigtable timestamps have millisecond granularity"
            ),
            DurationError::TooLong { text } => {
                write!(f, "duration {text:?} is too long for a Bigtable timestamp")
            }
        }
    }
}

impl std::error::Error for DurationError {}

/// Parse a TTL: a positive whole number of milliseconds in humantime's
/// syntax (`"90s"`, `"15m"`, `"1h30m"`, `"2d"`, `"250ms"`; surrounding
/// spaces ignored), as a number of milliseconds.
///
/// ```
/// assert_eq!(bigtable_ttl_spec::parse_millis("1h 30m"), Ok(5_400_000));
/// assert!(bigtable_ttl_spec::parse_millis("1500us").is_err());
/// ```
///
/// # Errors
/// [`DurationError`], saying what is wrong.
pub fn parse_millis(text: &str) -> Result<i64, DurationError> {
    let owned = || text.to_owned();
    let duration: Duration =
        humantime::parse_duration(text.trim()).map_err(|e| DurationError::Syntax {
            text: owned(),
            reason: e.to_string(),
        })?;
    if duration.is_zero() {
        return Err(DurationError::Zero { text: owned() });
    }
    if !duration.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(DurationError::SubMillisecond { text: owned() });
    }
    i64::try_from(duration.as_millis())
        .ok()
        .filter(|ms| *ms <= MAX_DURATION_MILLIS)
        .ok_or_else(|| DurationError::TooLong { text: owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_common_units() {
        assert_eq!(parse_millis("90s"), Ok(90_000));
        assert_eq!(parse_millis("15m"), Ok(900_000));
        assert_eq!(parse_millis("1h30m"), Ok(5_400_000));
        assert_eq!(parse_millis(" 2d "), Ok(172_800_000));
        assert_eq!(parse_millis("250ms"), Ok(250));
    }

    #[test]
    fn refuses_zero_sub_millisecond_long_and_garbage() {
        assert!(matches!(
            parse_millis("0s"),
            Err(DurationError::Zero { .. })
        ));
        assert!(matches!(
            parse_millis("1500us"),
            Err(DurationError::SubMillisecond { .. })
        ));
        assert!(matches!(
            parse_millis("1000000000000d"),
            Err(DurationError::TooLong { .. })
        ));
        for bad in ["10x", "", "3600", "-2d"] {
            assert!(
                matches!(parse_millis(bad), Err(DurationError::Syntax { .. })),
                "{bad}"
            );
        }
        let message = parse_millis("2 fortnights").unwrap_err().to_string();
        assert!(message.contains("\"90s\", \"15m\""), "{message}");
    }
}
