//! Operations: know what a TTL policy does to a family's data, before and
//! after switching it on.
//!
//! Everything here works on any table and family **by name**, not only on
//! families a derived struct declares, so operators can point it at data
//! written by other programs:
//!
//! * [`audit`]: scan a family (raw, every version) and count what a policy
//!   would delete at once, which timestamps look real and which artificial;
//! * [`apply`]: set a family's GC rule to a policy's, refusing when the audit
//!   says data would be lost unless forced;
//! * [`inspect`]: every cell of one row with its expiry under the family's
//!   **live** rule, time left and real write time (Cassandra's `TTL()` and
//!   `WRITETIME()`);
//! * [`migrate`]: copy a family with real timestamps into a family managed by
//!   a policy, artificial timestamps and shadow column included, resumable
//!   from a checkpoint;
//! * [`retime`]: extend or shorten one row's TTL in place, expire it now
//!   (methods on [`crate::Table`]).
//!
//! The pure parts (policy parsing, [`policy_from_rule`], the audit tally, the
//! cell reports of `inspect`, the per-row plans of `migrate` and `retime`)
//! need no server and are unit-tested here; the I/O sits in the `async fn`s
//! at the edge. The `bigtable-ttl` command-line program (`ttl-cli`) is a thin
//! layer over this module.

pub mod apply;
pub mod audit;
pub mod inspect;
pub mod migrate;
pub mod retime;
mod scan;

use std::time::Duration;

use chrono::TimeDelta;

use crate::admin::proto::{gc_rule::Rule, GcRule};
use crate::error::{Error, Result};
use crate::policy::Policy;

pub use apply::{apply, ApplyOutcome};
pub use audit::{audit, Audit, AuditReport};
pub use inspect::{inspect, CellReport, FamilyPolicy, RowInspection};
pub use migrate::{migrate, Checkpoint, MigratePlan, MigrateReport, MigrateStatus};
pub use retime::{retime_mutation, Retime};
pub use scan::ScanProgress;

/// The qualifier of the shadow column with the real write time, as
/// `#[ttl(written_at)]` declares it by default.
pub const DEFAULT_WRITTEN_AT: &str = "written_at";

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
/// assert_eq!(parse_policy("one-second").unwrap(), Policy::OneSecond);
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
    let invalid = |reason: String| Error::InvalidPolicy {
        spec: spec.to_owned(),
        reason,
    };
    let trimmed = spec.trim();
    if matches!(
        trimmed,
        "one-second" | "one_second" | "onesecond" | "1s-expiry"
    ) {
        return Ok(Policy::OneSecond);
    }
    let Some(duration) = trimmed.strip_prefix("default=") else {
        return Err(invalid(
            "expected `one-second` or `default=DURATION` (e.g. `default=2d`)".to_owned(),
        ));
    };
    let default = parse_duration(duration).map_err(invalid)?;
    Ok(Policy::default_ttl(default))
}

/// Parse a positive [humantime](https://docs.rs/humantime) duration of whole
/// milliseconds (`2d`, `90m`, `1h 30m`, `1500ms`) into a [`TimeDelta`].
///
/// # Errors
/// A message saying what is wrong (for the caller's own error).
pub fn parse_duration(text: &str) -> std::result::Result<TimeDelta, String> {
    let d: Duration = humantime::parse_duration(text.trim())
        .map_err(|e| format!("`{text}` is not a duration ({e}); write e.g. 2d, 36h, 90m"))?;
    if d.is_zero() {
        return Err(format!("`{text}` is zero; a TTL must be positive"));
    }
    if d.subsec_nanos() % 1_000_000 != 0 {
        return Err(format!(
            "`{text}` is not a whole number of milliseconds (Bigtable's granularity)"
        ));
    }
    TimeDelta::from_std(d).map_err(|_| format!("`{text}` is too long"))
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
        Policy::OneSecond => "one-second".to_owned(),
        Policy::Default { default } => format!("default={}", short_duration(*default)),
    }
}

/// A duration in the largest unit that divides it (`2d`, `90m`, `1500ms`),
/// as [`crate::admin::describe_rule`] writes ages.
#[must_use]
pub fn short_duration(d: TimeDelta) -> String {
    let rule = crate::admin::gc_rule(d);
    crate::admin::describe_rule(&rule)
        .trim_start_matches("max_age = ")
        .to_owned()
}

/// The policy a live GC rule implements, as far as expiry goes:
///
/// * `max_age = 1s` is the one-second policy (each cell's timestamp is its
///   expiry);
/// * any other `max_age = D` is the default policy with `D` (a cell expires
///   `D` after its timestamp);
/// * a `union` with exactly one `max_age` member is that member (the other
///   members, `max_versions` limits, can only delete *more*: expiry by age
///   still holds);
/// * a single-member `intersection` is its member;
/// * anything else (`none`, `max_versions` alone, a real intersection, two
///   ages) has no expiry by age: `None`.
///
/// ```
/// use bigtable_ttl::admin::gc_rule;
/// use bigtable_ttl::ops::policy_from_rule;
/// use bigtable_ttl::Policy;
/// use chrono::TimeDelta;
///
/// assert_eq!(policy_from_rule(&gc_rule(TimeDelta::seconds(1))), Some(Policy::OneSecond));
/// assert_eq!(
///     policy_from_rule(&gc_rule(TimeDelta::days(2))),
///     Some(Policy::default_ttl(TimeDelta::days(2)))
/// );
/// assert_eq!(policy_from_rule(&Default::default()), None);
/// ```
#[must_use]
pub fn policy_from_rule(rule: &GcRule) -> Option<Policy> {
    match &rule.rule {
        Some(Rule::MaxAge(d)) => {
            let age = TimeDelta::new(d.seconds, u32::try_from(d.nanos).ok()?)?;
            if age == TimeDelta::seconds(1) {
                Some(Policy::OneSecond)
            } else if age > TimeDelta::zero() {
                Some(Policy::default_ttl(age))
            } else {
                None
            }
        }
        Some(Rule::Union(u)) => {
            let ages: Vec<&GcRule> = u
                .rules
                .iter()
                .filter(|r| policy_from_rule(r).is_some())
                .collect();
            match ages.as_slice() {
                [only] => policy_from_rule(only),
                _ => None,
            }
        }
        Some(Rule::Intersection(i)) if i.rules.len() == 1 => policy_from_rule(&i.rules[0]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::gc_rule;
    use crate::admin::proto::gc_rule::{Intersection, Union};

    #[test]
    fn policies_parse_with_humantime() {
        assert_eq!(parse_policy("one-second").unwrap(), Policy::OneSecond);
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

    #[test]
    fn live_rules_map_to_policies() {
        let versions = GcRule {
            rule: Some(Rule::MaxNumVersions(1)),
        };
        let two_days = gc_rule(TimeDelta::days(2));
        let union = |rules| GcRule {
            rule: Some(Rule::Union(Union { rules })),
        };
        assert_eq!(
            policy_from_rule(&union(vec![two_days.clone(), versions.clone()])),
            Some(Policy::default_ttl(TimeDelta::days(2)))
        );
        assert_eq!(policy_from_rule(&versions), None);
        assert_eq!(
            policy_from_rule(&union(vec![two_days.clone(), gc_rule(TimeDelta::hours(1))])),
            None
        );
        let both = GcRule {
            rule: Some(Rule::Intersection(Intersection {
                rules: vec![two_days.clone(), versions],
            })),
        };
        assert_eq!(policy_from_rule(&both), None);
        assert_eq!(
            policy_from_rule(&gc_rule(TimeDelta::milliseconds(1_000))),
            Some(Policy::OneSecond)
        );
    }
}
