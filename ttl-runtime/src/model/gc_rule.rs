//! Garbage-collection rules as this library sets and reads them: our own
//! [`GcRule`] (what reports and errors show), the rule a policy needs
//! ([`gc_rule`]), how a rule reads ([`describe_rule`]), whether a live rule
//! is the expected one ([`rule_matches`]), and which policy a live rule
//! implements ([`policy_from_rule`]). The conversion to and from Bigtable's
//! admin v2 `GcRule` message stays inside the crate, so the admin API's
//! generated types are not part of this library's.

use std::fmt;

use chrono::TimeDelta;

use crate::model::duration::short_nanos;
use crate::model::policy::Policy;

/// Bigtable's admin v2 protobuf types (`GcRule`, `ColumnFamily`, `Table`, …).
pub(crate) use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as proto;

use proto::gc_rule::{Intersection, Rule, Union};

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// A column family's garbage-collection rule, as Bigtable's admin API has
/// it: which cells the server may delete.
///
/// Its `Display` is [`describe_rule`]'s text (`max_age = 2d`,
/// `union(max_age = 1s, max_versions = 3)`, `none`).
///
/// ```
/// use bigtable_ttl::admin::{gc_rule, GcRule};
/// use chrono::TimeDelta;
///
/// assert_eq!(gc_rule(TimeDelta::days(2)), GcRule::MaxAge(TimeDelta::days(2)));
/// let rule = GcRule::Union(vec![GcRule::MaxAge(TimeDelta::seconds(1)), GcRule::MaxVersions(3)]);
/// assert_eq!(rule.to_string(), "union(max_age = 1s, max_versions = 3)");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum GcRule {
    /// No rule: cells are kept until deleted.
    #[default]
    None,
    /// Cells older than this (by their timestamp) may be deleted.
    MaxAge(TimeDelta),
    /// Only this many newest versions of a column are kept.
    MaxVersions(i32),
    /// A cell may be deleted when any member rule says so.
    Union(Vec<GcRule>),
    /// A cell may be deleted when every member rule says so.
    Intersection(Vec<GcRule>),
}

impl GcRule {
    /// The rule a family's admin message holds (`None` for no message).
    pub(crate) fn from_proto(rule: Option<&proto::GcRule>) -> Self {
        match rule.and_then(|r| r.rule.as_ref()) {
            None => Self::None,
            Some(Rule::MaxNumVersions(n)) => Self::MaxVersions(*n),
            Some(Rule::MaxAge(d)) => Self::MaxAge(age_of(d)),
            Some(Rule::Union(u)) => Self::Union(all_from_proto(&u.rules)),
            Some(Rule::Intersection(i)) => Self::Intersection(all_from_proto(&i.rules)),
        }
    }

    /// The admin message that sets this rule.
    pub(crate) fn to_proto(&self) -> proto::GcRule {
        let rule = match self {
            Self::None => None,
            Self::MaxVersions(n) => Some(Rule::MaxNumVersions(*n)),
            Self::MaxAge(age) => Some(Rule::MaxAge(prost_types::Duration {
                seconds: age.num_seconds(),
                // `subsec_nanos` has the sign of the whole duration and is
                // below 1e9 in magnitude, as protobuf's `Duration` wants.
                nanos: age.subsec_nanos(),
            })),
            Self::Union(rules) => Some(Rule::Union(Union {
                rules: rules.iter().map(Self::to_proto).collect(),
            })),
            Self::Intersection(rules) => Some(Rule::Intersection(Intersection {
                rules: rules.iter().map(Self::to_proto).collect(),
            })),
        };
        proto::GcRule { rule }
    }
}

fn all_from_proto(rules: &[proto::GcRule]) -> Vec<GcRule> {
    rules.iter().map(|r| GcRule::from_proto(Some(r))).collect()
}

/// A protobuf `Duration` as a `TimeDelta`, by value (a non-normalised
/// `0s + 1e9 ns` is one second); beyond `TimeDelta`'s range (far beyond
/// protobuf's own ten thousand years), the nearest end of it.
fn age_of(d: &prost_types::Duration) -> TimeDelta {
    TimeDelta::try_seconds(d.seconds)
        .and_then(|s| s.checked_add(&TimeDelta::nanoseconds(i64::from(d.nanos))))
        .unwrap_or(if d.seconds < 0 {
            TimeDelta::MIN
        } else {
            TimeDelta::MAX
        })
}

impl fmt::Display for GcRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("none"),
            Self::MaxVersions(n) => write!(f, "max_versions = {n}"),
            Self::MaxAge(age) => {
                let nanos = i128::from(age.num_seconds()) * NANOS_PER_SECOND
                    + i128::from(age.subsec_nanos());
                write!(f, "max_age = {}", short_nanos(nanos))
            }
            Self::Union(rules) => write!(f, "union({})", describe_all(rules)),
            Self::Intersection(rules) => write!(f, "intersection({})", describe_all(rules)),
        }
    }
}

fn describe_all(rules: &[GcRule]) -> String {
    rules
        .iter()
        .map(describe_rule)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The GC rule `max_age = max_age`, as this library sets it on every family.
///
/// ```
/// use bigtable_ttl::admin::{describe_rule, gc_rule};
/// use chrono::TimeDelta;
///
/// let rule = gc_rule(TimeDelta::days(2));
/// assert_eq!(describe_rule(&rule), "max_age = 2d");
/// ```
#[must_use]
pub fn gc_rule(max_age: TimeDelta) -> GcRule {
    GcRule::MaxAge(max_age)
}

/// A rule in words, for errors and reports: `max_age = 2d`,
/// `max_versions = 1`, `union(max_age = 1s, max_versions = 3)`,
/// `intersection(…)`, or `none` when the family has no rule (cells are kept
/// forever). The same as the rule's `Display`.
///
/// Ages are written in the largest unit that divides them (`d`, `h`, `m`,
/// `s`, `ms`, `us`, `ns`): `90m`, `1500ms`.
///
/// ```
/// use bigtable_ttl::admin::{describe_rule, gc_rule, GcRule};
/// use chrono::TimeDelta;
///
/// assert_eq!(describe_rule(&gc_rule(TimeDelta::seconds(1))), "max_age = 1s");
/// assert_eq!(describe_rule(&GcRule::None), "none");
/// ```
#[must_use]
pub fn describe_rule(rule: &GcRule) -> String {
    rule.to_string()
}

/// Whether the live rule `live` counts as `expected` (see the [`crate::admin`]
/// module documentation for what counts): equal, or a single-member `union`
/// or `intersection` of a matching rule; `max_age` values compared by value.
///
/// ```
/// use bigtable_ttl::admin::{gc_rule, rule_matches, GcRule};
/// use chrono::TimeDelta;
///
/// let expected = gc_rule(TimeDelta::seconds(1));
/// let wrapped = GcRule::Union(vec![expected.clone()]);
/// assert!(rule_matches(&wrapped, &expected));
/// assert!(!rule_matches(&gc_rule(TimeDelta::days(2)), &expected));
/// ```
#[must_use]
pub fn rule_matches(live: &GcRule, expected: &GcRule) -> bool {
    unwrap_single(live) == unwrap_single(expected)
}

/// A `union` or `intersection` of one rule is that rule.
fn unwrap_single(rule: &GcRule) -> &GcRule {
    match rule {
        GcRule::Union(rules) | GcRule::Intersection(rules) if rules.len() == 1 => {
            unwrap_single(&rules[0])
        }
        _ => rule,
    }
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
/// use bigtable_ttl::admin::{gc_rule, GcRule};
/// use bigtable_ttl::ops::policy_from_rule;
/// use bigtable_ttl::Policy;
/// use chrono::TimeDelta;
///
/// assert_eq!(policy_from_rule(&gc_rule(TimeDelta::seconds(1))), Some(Policy::CellExpiry));
/// assert_eq!(
///     policy_from_rule(&gc_rule(TimeDelta::days(2))),
///     Some(Policy::default_ttl(TimeDelta::days(2)))
/// );
/// assert_eq!(policy_from_rule(&GcRule::None), None);
/// ```
#[must_use]
pub fn policy_from_rule(rule: &GcRule) -> Option<Policy> {
    match rule {
        GcRule::MaxAge(age) => {
            if *age == TimeDelta::seconds(1) {
                Some(Policy::CellExpiry)
            } else if *age > TimeDelta::zero() {
                Some(Policy::default_ttl(*age))
            } else {
                None
            }
        }
        GcRule::Union(rules) => {
            let ages: Vec<&GcRule> = rules
                .iter()
                .filter(|r| policy_from_rule(r).is_some())
                .collect();
            match ages.as_slice() {
                [only] => policy_from_rule(only),
                _ => None,
            }
        }
        GcRule::Intersection(rules) if rules.len() == 1 => policy_from_rule(&rules[0]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn union(rules: Vec<GcRule>) -> GcRule {
        GcRule::Union(rules)
    }

    fn intersection(rules: Vec<GcRule>) -> GcRule {
        GcRule::Intersection(rules)
    }

    fn versions(n: i32) -> GcRule {
        GcRule::MaxVersions(n)
    }

    /// A `max_age` rule as the admin API may send it, read back.
    fn raw_age(seconds: i64, nanos: i32) -> GcRule {
        GcRule::from_proto(Some(&raw_age_proto(seconds, nanos)))
    }

    fn raw_age_proto(seconds: i64, nanos: i32) -> proto::GcRule {
        proto::GcRule {
            rule: Some(Rule::MaxAge(prost_types::Duration { seconds, nanos })),
        }
    }

    #[test]
    fn gc_rule_splits_seconds_and_nanos() {
        let cases = [
            (TimeDelta::seconds(1), (1, 0)),
            (TimeDelta::days(2), (172_800, 0)),
            (TimeDelta::milliseconds(1_500), (1, 500_000_000)),
            (TimeDelta::milliseconds(1), (0, 1_000_000)),
        ];
        for (age, (seconds, nanos)) in cases {
            assert_eq!(gc_rule(age).to_proto(), raw_age_proto(seconds, nanos));
            assert_eq!(raw_age(seconds, nanos), gc_rule(age));
        }
    }

    #[test]
    fn every_rule_round_trips_through_the_admin_message() {
        let nested = union(vec![
            gc_rule(TimeDelta::seconds(1)),
            intersection(vec![versions(3), gc_rule(TimeDelta::hours(1))]),
            GcRule::None,
        ]);
        for rule in [
            GcRule::None,
            versions(2),
            gc_rule(TimeDelta::days(2)),
            nested,
        ] {
            assert_eq!(GcRule::from_proto(Some(&rule.to_proto())), rule);
        }
        assert_eq!(GcRule::from_proto(None), GcRule::None);
        assert_eq!(
            GcRule::from_proto(Some(&proto::GcRule::default())),
            GcRule::None
        );
    }

    #[test]
    fn durations_use_the_largest_exact_unit() {
        let cases = [
            (TimeDelta::days(2), "max_age = 2d"),
            (TimeDelta::hours(36), "max_age = 36h"),
            (TimeDelta::minutes(90), "max_age = 90m"),
            (TimeDelta::seconds(1), "max_age = 1s"),
            (TimeDelta::milliseconds(1_500), "max_age = 1500ms"),
            (TimeDelta::microseconds(7), "max_age = 7us"),
            (TimeDelta::nanoseconds(3), "max_age = 3ns"),
            (TimeDelta::zero(), "max_age = 0s"),
        ];
        for (age, text) in cases {
            assert_eq!(describe_rule(&gc_rule(age)), text, "{age}");
        }
    }

    #[test]
    fn combinations_are_described_recursively() {
        assert_eq!(describe_rule(&GcRule::None), "none");
        assert_eq!(describe_rule(&versions(1)), "max_versions = 1");
        let nested = union(vec![
            gc_rule(TimeDelta::seconds(1)),
            intersection(vec![versions(3), gc_rule(TimeDelta::hours(1))]),
        ]);
        assert_eq!(
            describe_rule(&nested),
            "union(max_age = 1s, intersection(max_versions = 3, max_age = 1h))"
        );
        assert_eq!(describe_rule(&union(vec![])), "union()");
    }

    #[test]
    fn equal_and_single_member_rules_match() {
        let expected = gc_rule(TimeDelta::seconds(1));
        assert!(rule_matches(&expected, &expected));
        assert!(rule_matches(&raw_age(0, 1_000_000_000), &expected));
        assert!(rule_matches(&union(vec![expected.clone()]), &expected));
        assert!(rule_matches(
            &intersection(vec![union(vec![expected.clone()])]),
            &expected
        ));
    }

    #[test]
    fn other_rules_are_drift() {
        let expected = gc_rule(TimeDelta::seconds(1));
        assert!(!rule_matches(&GcRule::None, &expected));
        assert!(!rule_matches(&gc_rule(TimeDelta::days(2)), &expected));
        assert!(!rule_matches(&versions(1), &expected));
        assert!(!rule_matches(&union(vec![]), &expected));
        assert!(!rule_matches(
            &union(vec![expected.clone(), versions(1)]),
            &expected
        ));
        assert!(!rule_matches(
            &union(vec![expected.clone(), expected.clone()]),
            &expected
        ));
    }

    #[test]
    fn live_rules_map_to_policies() {
        let two_days = gc_rule(TimeDelta::days(2));
        assert_eq!(
            policy_from_rule(&union(vec![two_days.clone(), versions(1)])),
            Some(Policy::default_ttl(TimeDelta::days(2)))
        );
        assert_eq!(policy_from_rule(&versions(1)), None);
        assert_eq!(
            policy_from_rule(&union(vec![two_days.clone(), gc_rule(TimeDelta::hours(1))])),
            None
        );
        let both = intersection(vec![two_days.clone(), versions(1)]);
        assert_eq!(policy_from_rule(&both), None);
        assert_eq!(
            policy_from_rule(&gc_rule(TimeDelta::milliseconds(1_000))),
            Some(Policy::CellExpiry)
        );
        assert_eq!(
            policy_from_rule(&raw_age(0, 1_000_000_000)),
            Some(Policy::CellExpiry)
        );
    }
}
