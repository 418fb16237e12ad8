//! Policies and durations as operators write them (`one-second`,
//! `default=2d`), parsed and printed back.

use chrono::TimeDelta;

use crate::model::error::{self, Error, PolicyProblem, Result};
use crate::model::policy::Policy;

/// The qualifier of the shadow column with the real write time, as
/// `#[ttl(written_at)]` declares it by default.
pub use bigtable_ttl_spec::DEFAULT_WRITTEN_AT;

/// Parse a policy as operators write it: `one-second`, or `default=DURATION`
/// with a [humantime](https://docs.rs/humantime) duration (`default=2d`,
/// `default=36h`, `default=90m`), the same syntax `#[ttl(default = "…")]`
/// accepts. The duration must be positive and a whole number of milliseconds.
///
/// ```
/// use bigtable_ttl::ops::parse_policy;
/// use bigtable_ttl::Policy;
/// use chrono::TimeDelta;
///
/// assert_eq!(parse_policy("one-second").unwrap(), Policy::CellExpiry);
/// assert_eq!(
///     parse_policy("default=2d").unwrap(),
///     Policy::default_ttl(TimeDelta::days(2))
/// );
/// assert!(parse_policy("default=soon").is_err());
/// ```
///
/// # Errors
/// [`Error::InvalidPolicy`] saying what is accepted.
pub fn parse_policy(spec: &str) -> Result<Policy> {
    let invalid = |problem: PolicyProblem| {
        Error::from(error::InvalidPolicy {
            spec: spec.to_owned(),
            problem,
        })
    };
    let trimmed = spec.trim();
    if matches!(
        trimmed,
        "one-second" | "one_second" | "onesecond" | "1s-expiry"
    ) {
        return Ok(Policy::CellExpiry);
    }
    let Some(duration) = trimmed.strip_prefix("default=") else {
        return Err(invalid(PolicyProblem::UnknownForm));
    };
    let default = parse_duration(duration)
        .map_err(|reason| invalid(PolicyProblem::BadDuration { reason }))?;
    Ok(Policy::default_ttl(default))
}

/// Parse a positive [humantime](https://docs.rs/humantime) duration of whole
/// milliseconds (`2d`, `90m`, `1h 30m`, `1500ms`) into a [`TimeDelta`].
///
/// # Errors
/// A message saying what is wrong (for the caller's own error).
pub fn parse_duration(text: &str) -> std::result::Result<TimeDelta, String> {
    let millis = bigtable_ttl_spec::parse_millis(text).map_err(|e| e.to_string())?;
    Ok(TimeDelta::milliseconds(millis))
}

/// A policy as operators write it (the inverse of [`parse_policy`]):
/// `one-second` or `default=2d`.
///
/// ```
/// use bigtable_ttl::ops::{parse_policy, policy_spec};
///
/// for spec in ["one-second", "default=2d", "default=90m", "default=1500ms"] {
///     assert_eq!(policy_spec(&parse_policy(spec).unwrap()), spec);
/// }
/// ```
#[must_use]
pub fn policy_spec(policy: &Policy) -> String {
    match policy {
        Policy::CellExpiry => "one-second".to_owned(),
        Policy::DefaultTtl { ttl: default } => format!("default={}", short_duration(*default)),
    }
}

/// A duration in the largest unit that divides it (`2d`, `90m`, `1500ms`),
/// as [`crate::model::gc_rule::describe_rule`] writes ages.
#[must_use]
pub fn short_duration(d: TimeDelta) -> String {
    crate::model::duration::short(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_with_humantime() {
        assert_eq!(parse_policy("one-second").unwrap(), Policy::CellExpiry);
        assert_eq!(
            parse_policy("default=1h 30m").unwrap(),
            Policy::default_ttl(TimeDelta::minutes(90))
        );
        for bad in [
            "",
            "default=",
            "default=0s",
            "default=1us",
            "ttl=2d",
            "default=-2d",
        ] {
            let err = parse_policy(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidPolicy { .. }), "{bad}: {err}");
        }
    }
}
