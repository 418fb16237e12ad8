//! Garbage-collection rules as this library sets and reads them, on
//! Bigtable's admin v2 protobuf types ([`proto`]): the rule a policy needs
//! ([`gc_rule`]), how a rule reads ([`describe_rule`]), whether a live rule is
//! the expected one ([`rule_matches`]), and which policy a live rule
//! implements ([`policy_from_rule`]).

use chrono::TimeDelta;

use crate::model::duration::short_nanos;
use crate::model::policy::Policy;

/// Bigtable's admin v2 protobuf types (`GcRule`, `ColumnFamily`, `Table`, …).
pub use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as proto;

use proto::{gc_rule::Rule, GcRule};

const NANOS_PER_SECOND: i128 = 1_000_000_000;

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
    GcRule {
        rule: Some(Rule::MaxAge(prost_types::Duration {
            seconds: max_age.num_seconds(),
            // `subsec_nanos` has the sign of the whole duration and is below
            // 1e9 in magnitude, as protobuf's `Duration` wants.
            nanos: max_age.subsec_nanos(),
        })),
    }
}

/// A rule in words, for errors and reports: `max_age = 2d`,
/// `max_versions = 1`, `union(max_age = 1s, max_versions = 3)`,
/// `intersection(…)`, or `none` when the family has no rule (cells are kept
/// forever).
///
/// Ages are written in the largest unit that divides them (`d`, `h`, `m`,
/// `s`, `ms`, `us`, `ns`): `90m`, `1500ms`.
///
/// ```
/// use bigtable_ttl::admin::{describe_rule, gc_rule, proto::GcRule};
/// use chrono::TimeDelta;
///
/// assert_eq!(describe_rule(&gc_rule(TimeDelta::seconds(1))), "max_age = 1s");
/// assert_eq!(describe_rule(&GcRule::default()), "none");
/// ```
#[must_use]
pub fn describe_rule(rule: &GcRule) -> String {
    match &rule.rule {
        None => "none".to_owned(),
        Some(Rule::MaxNumVersions(n)) => format!("max_versions = {n}"),
        Some(Rule::MaxAge(d)) => format!("max_age = {}", describe_duration(d)),
        Some(Rule::Union(u)) => format!("union({})", describe_all(&u.rules)),
        Some(Rule::Intersection(i)) => format!("intersection({})", describe_all(&i.rules)),
    }
}

fn describe_all(rules: &[GcRule]) -> String {
    rules
        .iter()
        .map(describe_rule)
        .collect::<Vec<_>>()
        .join(", ")
}

fn total_nanos(d: &prost_types::Duration) -> i128 {
    i128::from(d.seconds) * NANOS_PER_SECOND + i128::from(d.nanos)
}

fn describe_duration(d: &prost_types::Duration) -> String {
    short_nanos(total_nanos(d))
}

/// Whether the live rule `live` counts as `expected` (see the [`crate::admin`]
/// module documentation for what counts): equal, or a single-member `union`
/// or `intersection` of a matching rule; `max_age` values compared by value.
///
/// ```
/// use bigtable_ttl::admin::{gc_rule, rule_matches, proto::{gc_rule::{Rule, Union}, GcRule}};
/// use chrono::TimeDelta;
///
/// let expected = gc_rule(TimeDelta::seconds(1));
/// let wrapped = GcRule { rule: Some(Rule::Union(Union { rules: vec![expected.clone()] })) };
/// assert!(rule_matches(&wrapped, &expected));
/// assert!(!rule_matches(&gc_rule(TimeDelta::days(2)), &expected));
/// ```
#[must_use]
pub fn rule_matches(live: &GcRule, expected: &GcRule) -> bool {
    let live = unwrap_single(live);
    let expected = unwrap_single(expected);
    match (&live.rule, &expected.rule) {
        (Some(Rule::MaxAge(a)), Some(Rule::MaxAge(b))) => total_nanos(a) == total_nanos(b),
        _ => live == expected,
    }
}

/// A `union` or `intersection` of one rule is that rule.
fn unwrap_single(rule: &GcRule) -> &GcRule {
    match &rule.rule {
        Some(
            Rule::Union(proto::gc_rule::Union { rules })
            | Rule::Intersection(proto::gc_rule::Intersection { rules }),
        ) if rules.len() == 1 => unwrap_single(&rules[0]),
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
/// use bigtable_ttl::admin::gc_rule;
/// use bigtable_ttl::ops::policy_from_rule;
/// use bigtable_ttl::Policy;
/// use chrono::TimeDelta;
///
/// assert_eq!(policy_from_rule(&gc_rule(TimeDelta::seconds(1))), Some(Policy::CellExpiry));
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
                Some(Policy::CellExpiry)
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
    use super::proto::gc_rule::{Intersection, Union};
    use super::*;

    fn union(rules: Vec<GcRule>) -> GcRule {
        GcRule {
            rule: Some(Rule::Union(Union { rules })),
        }
    }

    fn intersection(rules: Vec<GcRule>) -> GcRule {
        GcRule {
            rule: Some(Rule::Intersection(Intersection { rules })),
        }
    }

    fn versions(n: i32) -> GcRule {
        GcRule {
            rule: Some(Rule::MaxNumVersions(n)),
        }
    }

    fn raw_age(seconds: i64, nanos: i32) -> GcRule {
        GcRule {
            rule: Some(Rule::MaxAge(prost_types::Duration { seconds, nanos })),
        }
    }

    #[test]
    fn gc_rule_splits_seconds_and_nanos() {
        assert_eq!(gc_rule(TimeDelta::seconds(1)), raw_age(1, 0));
        assert_eq!(gc_rule(TimeDelta::days(2)), raw_age(172_800, 0));
        assert_eq!(
            gc_rule(TimeDelta::milliseconds(1_500)),
            raw_age(1, 500_000_000)
        );
        assert_eq!(gc_rule(TimeDelta::milliseconds(1)), raw_age(0, 1_000_000));
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
        assert_eq!(describe_rule(&GcRule::default()), "none");
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
        assert!(!rule_matches(&GcRule::default(), &expected));
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
            Some(Policy::CellExpiry)
        );
    }
}
