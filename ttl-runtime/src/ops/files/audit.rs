//! Audit reports and expiry histograms as files: what `audit --json` and
//! `apply --json` print, and what `audit --merge` reads back.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{instant, span, Part};
use crate::model::gc_rule::{describe_rule, gc_rule, GcRule};
use crate::model::policy::Policy;
use crate::ops::apply::ApplyOutcome;
use crate::ops::audit::{Audit, AuditReport};
use crate::ops::expiry::{ExpiryHistogram, FamilyExpiries, MAX_DAYS};
use crate::ops::spec::{parse_policy, policy_spec};

/// The GC rule a policy sets, as `describe_rule` writes it.
fn rule_of(policy: Policy) -> String {
    describe_rule(&gc_rule(policy.gc_max_age()))
}

/// An [`ExpiryHistogram`] in a report; its `now` is the report's.
#[derive(Serialize, Deserialize)]
struct HistogramFile {
    /// The rule: `one-second`, `default=2d`, or null (no age rule).
    policy: Option<String>,
    buckets: Buckets,
    /// Cells expiring on each UTC day over the chart's horizon (zeros
    /// included), and on later days up to a year ahead with cells.
    days: Vec<Day>,
}

#[derive(Serialize, Deserialize)]
struct Buckets {
    expired: u64,
    within_hour: u64,
    within_day: u64,
    within_week: u64,
    later: u64,
    never: u64,
}

#[derive(Serialize, Deserialize)]
struct Day {
    date: NaiveDate,
    cells: u64,
}

impl From<&ExpiryHistogram> for HistogramFile {
    fn from(h: &ExpiryHistogram) -> Self {
        let mut days: BTreeMap<NaiveDate, u64> = h.days.clone();
        if let Some(horizon) = h.horizon() {
            days.extend(h.daily(horizon));
        }
        Self {
            policy: h.policy.as_ref().map(policy_spec),
            buckets: Buckets {
                expired: h.expired,
                within_hour: h.within_hour,
                within_day: h.within_day,
                within_week: h.within_week,
                later: h.later,
                never: h.never,
            },
            days: days
                .into_iter()
                .map(|(date, cells)| Day { date, cells })
                .collect(),
        }
    }
}

impl HistogramFile {
    /// The histogram back, judged at `now`; a day listed twice is refused.
    fn into_histogram(self, now: DateTime<Utc>) -> Result<ExpiryHistogram, String> {
        let policy = self
            .policy
            .as_deref()
            .map(parse_policy)
            .transpose()
            .map_err(|e| e.to_string())?;
        let mut h = ExpiryHistogram::new(policy, now);
        let b = self.buckets;
        h.expired = b.expired;
        h.within_hour = b.within_hour;
        h.within_day = b.within_day;
        h.within_week = b.within_week;
        h.later = b.later;
        h.never = b.never;
        for d in &self.days {
            if h.days.insert(d.date, d.cells).is_some() {
                return Err(format!("day {} is listed twice", d.date));
            }
        }
        h.days.retain(|_, n| *n > 0);
        Ok(h)
    }
}

/// Alone (not in a report), a histogram is written without its `now`.
impl Serialize for ExpiryHistogram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        HistogramFile::from(self).serialize(s)
    }
}

/// An [`AuditReport`] in a file: the counts, and what they mean for people
/// (instants as text, the GC rule, the verdict), which are not read back.
#[derive(Serialize, Deserialize)]
struct AuditFile {
    table: String,
    family: String,
    policy: String,
    #[serde(default, skip_deserializing)]
    gc_rule: String,
    #[serde(default, skip_deserializing)]
    now: String,
    now_micros: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shard: Option<Part>,
    rows: u64,
    cells: u64,
    cells_deleted: u64,
    rows_losing_cells: u64,
    rows_deleted: u64,
    real_cells: u64,
    artificial_cells: u64,
    #[serde(default, skip_deserializing)]
    oldest: Option<String>,
    #[serde(default, skip_deserializing)]
    newest: Option<String>,
    oldest_micros: Option<i64>,
    newest_micros: Option<i64>,
    rows_mixed_expiry: u64,
    #[serde(default, skip_deserializing)]
    widest_expiry_spread_ms: i64,
    widest_expiry_spread_micros: i64,
    #[serde(default, skip_deserializing)]
    widest_expiry_spread: String,
    #[serde(default, skip_deserializing)]
    would_delete_data: bool,
    expiry: ExpiriesFile,
}

/// When the cells expire, under the live rule and the policy.
#[derive(Serialize, Deserialize)]
struct ExpiriesFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<HistogramFile>,
    proposed: HistogramFile,
}

impl From<&AuditReport> for AuditFile {
    fn from(r: &AuditReport) -> Self {
        Self {
            table: r.table.clone(),
            family: r.family.clone(),
            policy: policy_spec(&r.policy),
            gc_rule: rule_of(r.policy),
            now: instant(r.now),
            now_micros: r.now.timestamp_micros(),
            shard: (!r.part.is_whole()).then(|| r.part.clone()),
            rows: r.rows,
            cells: r.cells,
            cells_deleted: r.cells_deleted,
            rows_losing_cells: r.rows_losing_cells,
            rows_deleted: r.rows_deleted,
            real_cells: r.real_cells,
            artificial_cells: r.artificial_cells,
            oldest: r.oldest().map(instant),
            newest: r.newest().map(instant),
            oldest_micros: r.oldest_micros,
            newest_micros: r.newest_micros,
            rows_mixed_expiry: r.rows_mixed_expiry,
            widest_expiry_spread_ms: r.widest_expiry_spread().num_milliseconds(),
            widest_expiry_spread_micros: r.widest_expiry_spread_micros,
            widest_expiry_spread: span(r.widest_expiry_spread()),
            would_delete_data: r.would_delete_data(),
            expiry: ExpiriesFile {
                current: r.expiry_current.as_ref().map(HistogramFile::from),
                proposed: HistogramFile::from(&r.expiry_proposed),
            },
        }
    }
}

impl AuditFile {
    /// The report back, once its counts are seen to agree with one another
    /// (as an audit writes them): a corrupt or crafted report is refused
    /// rather than merged into a wrong total.
    fn into_report(self) -> Result<AuditReport, String> {
        let now = DateTime::<Utc>::from_timestamp_micros(self.now_micros)
            .filter(|now| now.checked_add_signed(TimeDelta::days(MAX_DAYS)).is_some())
            .ok_or_else(|| format!("now_micros {} is out of range", self.now_micros))?;
        let policy = parse_policy(&self.policy).map_err(|e| e.to_string())?;
        let mut r = Audit::new(&self.table, &self.family, policy, now).finish();
        r.part = self.shard.unwrap_or_else(Part::whole);
        r.rows = self.rows;
        r.cells = self.cells;
        r.cells_deleted = self.cells_deleted;
        r.rows_losing_cells = self.rows_losing_cells;
        r.rows_deleted = self.rows_deleted;
        r.real_cells = self.real_cells;
        r.artificial_cells = self.artificial_cells;
        r.oldest_micros = self.oldest_micros;
        r.newest_micros = self.newest_micros;
        r.rows_mixed_expiry = self.rows_mixed_expiry;
        r.widest_expiry_spread_micros = self.widest_expiry_spread_micros;
        r.expiry_current = self
            .expiry
            .current
            .map(|c| c.into_histogram(now))
            .transpose()?;
        r.expiry_proposed = self.expiry.proposed.into_histogram(now)?;
        consistent(&r)?;
        Ok(r)
    }
}

/// Whether the counts of `r` agree with one another as an audit makes
/// them: every cell real or artificial, in each histogram once, no more
/// deleted than there are.
fn consistent(r: &AuditReport) -> Result<(), String> {
    let split = r.real_cells.checked_add(r.artificial_cells);
    if split != Some(r.cells) {
        return Err(format!(
            "real_cells {} and artificial_cells {} do not add up to cells {}",
            r.real_cells, r.artificial_cells, r.cells
        ));
    }
    for (what, h) in std::iter::once(("proposed", &r.expiry_proposed))
        .chain(r.expiry_current.as_ref().map(|h| ("current", h)))
    {
        if h.checked_cells() != Some(r.cells) {
            return Err(format!(
                "the {what} expiry buckets do not add up to cells {}",
                r.cells
            ));
        }
    }
    let ordered = [
        ("cells_deleted", r.cells_deleted, "cells", r.cells),
        ("rows", r.rows, "cells", r.cells),
        ("rows_losing_cells", r.rows_losing_cells, "rows", r.rows),
        (
            "rows_deleted",
            r.rows_deleted,
            "rows_losing_cells",
            r.rows_losing_cells,
        ),
        ("rows_mixed_expiry", r.rows_mixed_expiry, "rows", r.rows),
    ];
    for (small, a, large, b) in ordered {
        if a > b {
            return Err(format!("{small} {a} is more than {large} {b}"));
        }
    }
    if r.widest_expiry_spread_micros < 0 {
        return Err("widest_expiry_spread_micros is negative".to_owned());
    }
    Ok(())
}

impl Serialize for AuditReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        AuditFile::from(self).serialize(s)
    }
}

/// Read back from what [`Serialize`] wrote, its counts checked.
impl<'de> Deserialize<'de> for AuditReport {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        AuditFile::deserialize(d)?
            .into_report()
            .map_err(D::Error::custom)
    }
}

/// `apply --json`: what was done, the rule before and after, the audit.
impl Serialize for ApplyOutcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct ApplyFile<'a> {
            outcome: &'static str,
            rule_before: String,
            rule_after: String,
            audit: &'a AuditReport,
        }
        let rule = |r: Option<&GcRule>| r.map_or_else(|| "missing".to_owned(), describe_rule);
        let (outcome, rule_before, rule_after) = match self {
            Self::Applied { before, after, .. } => {
                ("applied", rule(before.as_ref()), rule(Some(after)))
            }
            Self::Unchanged { rule: r, .. } => ("unchanged", rule(Some(r)), rule(Some(r))),
            Self::Refused { rule: r, .. } => ("refused", rule(r.as_ref()), rule(r.as_ref())),
        };
        ApplyFile {
            outcome,
            rule_before,
            rule_after,
            audit: self.audit(),
        }
        .serialize(s)
    }
}

/// `inspect TABLE --family F --json`.
impl Serialize for FamilyExpiries {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct FamilyFile<'a> {
            table: &'a str,
            family: &'a str,
            now: String,
            rows: u64,
            cells: u64,
            expiry: Expiry<'a>,
        }
        #[derive(Serialize)]
        struct Expiry<'a> {
            current: &'a ExpiryHistogram,
            #[serde(skip_serializing_if = "Option::is_none")]
            proposed: Option<&'a ExpiryHistogram>,
        }
        FamilyFile {
            table: &self.table,
            family: &self.family,
            now: instant(self.current.now),
            rows: self.rows,
            cells: self.current.cells(),
            expiry: Expiry {
                current: &self.current,
                proposed: self.proposed.as_ref(),
            },
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_round_trips_through_json() {
        let now = DateTime::<Utc>::from_timestamp_millis(1_700_000_000_000).unwrap();
        let mut h = ExpiryHistogram::new(Some(Policy::default_ttl(TimeDelta::days(2))), now);
        h.observe(now.timestamp_micros());
        h.observe(0);
        let text = serde_json::to_string(&h).unwrap();
        let file: HistogramFile = serde_json::from_str(&text).unwrap();
        assert_eq!(file.days.len(), 3, "today through two days ahead");
        assert_eq!(file.into_histogram(now).unwrap(), h);
    }
}
