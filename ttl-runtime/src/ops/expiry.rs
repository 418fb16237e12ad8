//! When a family's cells expire, as a histogram: already expired, within
//! an hour, a day, a week, later (or never, without an age rule), and cells
//! per UTC day over the rule's horizon. What `audit` and `inspect` of a
//! family draw for the family's live rule and for a proposed policy. The
//! histogram is pure; [`expiries`] reads the family to fill it.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};

use crate::client::admin::family_policy;
use crate::client::connection::Connection;
use crate::model::error::Result;
use crate::model::policy::Policy;

use super::scan::{FamilyPages, ScanProgress};
use super::shard::{add, CountOverflow, Part};

/// Days ahead the per-day counts go; cells expiring later are in
/// [`ExpiryHistogram::later`] only.
pub const MAX_DAYS: i64 = 366;

/// When cells expire under one rule, judged at one "now".
///
/// The buckets do not overlap: `expired` (at or before now: hidden from
/// every read, removed by the next garbage collection), `within_hour`
/// (now to now + 1 h), `within_day` (1 h to 1 day), `within_week` (1 day to
/// 7 days), `later`, and `never` (the rule has no age: nothing expires).
///
/// ```
/// use bigtable_ttl::ops::ExpiryHistogram;
/// use bigtable_ttl::Policy;
/// use chrono::{TimeDelta, Utc};
///
/// let now = Utc::now();
/// let mut h = ExpiryHistogram::new(Some(Policy::default_ttl(TimeDelta::days(2))), now);
/// h.observe((now - TimeDelta::days(3)).timestamp_micros()); // expired a day ago
/// h.observe((now - TimeDelta::minutes(30)).timestamp_micros()); // in 47.5 hours
/// assert_eq!((h.expired, h.within_week), (1, 1));
/// assert_eq!(h.cells(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExpiryHistogram {
    /// The rule: `None` when cells do not expire by age.
    pub policy: Option<Policy>,
    /// The "now" the buckets are relative to.
    pub now: DateTime<Utc>,
    /// Already expired.
    pub expired: u64,
    /// Expiring within the next hour.
    pub within_hour: u64,
    /// Expiring after an hour, within a day.
    pub within_day: u64,
    /// Expiring after a day, within a week.
    pub within_week: u64,
    /// Expiring after a week.
    pub later: u64,
    /// Never expiring (no age rule).
    pub never: u64,
    /// Cells not yet expired, by the UTC day they expire on, up to
    /// [`MAX_DAYS`] ahead (days without cells are absent).
    pub days: BTreeMap<NaiveDate, u64>,
}

impl ExpiryHistogram {
    /// An empty histogram under `policy` (`None`: no age rule) at `now`.
    #[must_use]
    pub fn new(policy: Option<Policy>, now: DateTime<Utc>) -> Self {
        Self {
            policy,
            now,
            expired: 0,
            within_hour: 0,
            within_day: 0,
            within_week: 0,
            later: 0,
            never: 0,
            days: BTreeMap::new(),
        }
    }

    /// Count one cell with timestamp `timestamp_micros`. A timestamp whose
    /// expiry chrono cannot represent counts as `later`.
    pub fn observe(&mut self, timestamp_micros: i64) {
        let Some(policy) = self.policy else {
            self.never += 1;
            return;
        };
        if !policy.is_visible(timestamp_micros, self.now) {
            self.expired += 1;
            return;
        }
        let Ok(expiry) = policy.expiry_of(timestamp_micros) else {
            self.later += 1;
            return;
        };
        let left = expiry - self.now;
        if left <= TimeDelta::hours(1) {
            self.within_hour += 1;
        } else if left <= TimeDelta::days(1) {
            self.within_day += 1;
        } else if left <= TimeDelta::days(7) {
            self.within_week += 1;
        } else {
            self.later += 1;
        }
        if expiry.date_naive() <= self.last_day() {
            *self.days.entry(expiry.date_naive()).or_default() += 1;
        }
    }

    /// Add `other`'s counts (a histogram of other cells under the same
    /// rule, e.g. another shard's); the buckets of each stay relative to
    /// its own "now", the days are the same calendar days. A count that
    /// would pass `u64::MAX` stays there; [`ExpiryHistogram::try_merge`]
    /// refuses it instead.
    pub fn merge(&mut self, other: &Self) {
        let _ = self.merge_by(other, |a, b, _| Ok(a.saturating_add(b)));
    }

    /// [`ExpiryHistogram::merge`], or which count would pass `u64::MAX`;
    /// `self` is unchanged then.
    ///
    /// # Errors
    /// [`CountOverflow`] naming the bucket (or `cells per day`).
    pub fn try_merge(&mut self, other: &Self) -> std::result::Result<(), CountOverflow> {
        let mut sum = self.clone();
        sum.merge_by(other, add)?;
        *self = sum;
        Ok(())
    }

    pub(crate) fn merge_by(
        &mut self,
        other: &Self,
        add: impl Fn(u64, u64, &'static str) -> std::result::Result<u64, CountOverflow>,
    ) -> std::result::Result<(), CountOverflow> {
        self.expired = add(self.expired, other.expired, "expired")?;
        self.within_hour = add(self.within_hour, other.within_hour, "within_hour")?;
        self.within_day = add(self.within_day, other.within_day, "within_day")?;
        self.within_week = add(self.within_week, other.within_week, "within_week")?;
        self.later = add(self.later, other.later, "later")?;
        self.never = add(self.never, other.never, "never")?;
        for (day, n) in &other.days {
            let sum = self.days.entry(*day).or_default();
            *sum = add(*sum, *n, "cells per day")?;
        }
        Ok(())
    }

    /// Every cell counted (`u64::MAX` if the buckets add up past it; see
    /// [`ExpiryHistogram::checked_cells`]).
    #[must_use]
    pub fn cells(&self) -> u64 {
        self.checked_cells().unwrap_or(u64::MAX)
    }

    /// Every cell counted, or `None` when the buckets add up past
    /// `u64::MAX` (a corrupt report's).
    #[must_use]
    pub fn checked_cells(&self) -> Option<u64> {
        self.buckets()
            .iter()
            .try_fold(0u64, |sum, (_, n)| sum.checked_add(*n))
    }

    /// The buckets in order, with their names as reports print them.
    #[must_use]
    pub fn buckets(&self) -> [(&'static str, u64); 6] {
        [
            ("already expired", self.expired),
            ("within an hour", self.within_hour),
            ("within a day", self.within_day),
            ("within a week", self.within_week),
            ("later", self.later),
            ("never", self.never),
        ]
    }

    /// The last day the per-day counts go to (chrono's last day when
    /// `now` is within a year of it).
    fn last_day(&self) -> NaiveDate {
        self.now
            .checked_add_signed(TimeDelta::days(MAX_DAYS))
            .map_or(NaiveDate::MAX, |t| t.date_naive())
    }

    /// How far ahead the rule lets a cell written now live: the default
    /// TTL under a default policy; under one-second expiration, where the
    /// timestamp is the expiry, up to the latest expiry counted (zero
    /// when none is ahead). `None` without an age rule.
    #[must_use]
    pub fn horizon(&self) -> Option<TimeDelta> {
        match self.policy? {
            Policy::DefaultTtl { ttl } => Some(ttl),
            Policy::CellExpiry => {
                let Some(last) = self.days.keys().next_back() else {
                    return Some(TimeDelta::zero());
                };
                // Into the last day with cells: `daily` ends on it.
                let last_day = last.and_hms_opt(0, 0, 0)?.and_utc();
                Some((last_day - self.now).max(TimeDelta::zero()))
            }
        }
    }

    /// Cells per UTC day from today through the day `horizon` from now
    /// (at most [`MAX_DAYS`] ahead), days without cells included as 0: the
    /// bars of the per-day chart.
    #[must_use]
    pub fn daily(&self, horizon: TimeDelta) -> Vec<(NaiveDate, u64)> {
        let first = self.now.date_naive();
        let last = self
            .now
            .checked_add_signed(horizon.clamp(TimeDelta::zero(), TimeDelta::days(MAX_DAYS)))
            .map_or(NaiveDate::MAX, |t| t.date_naive());
        first
            .iter_days()
            .take_while(|d| *d <= last)
            .map(|d| (d, self.days.get(&d).copied().unwrap_or(0)))
            .collect()
    }
}

/// Which family's expiries to draw, under its live rule and, optionally, a
/// proposed policy.
///
/// ```
/// use bigtable_ttl::ops::{parse_policy, ExpiryRequest};
///
/// let request = ExpiryRequest::new("events", "raw").with_proposed(parse_policy("default=2d").unwrap());
/// # let _ = request;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExpiryRequest {
    /// The table.
    pub table: String,
    /// The family.
    pub family: String,
    /// A policy to draw the cells under besides the live rule.
    pub proposed: Option<Policy>,
    /// The part of the key space (the whole table unless set).
    pub part: Part,
    /// The "now" the buckets are relative to (the system clock's when made).
    pub now: DateTime<Utc>,
}

impl ExpiryRequest {
    /// The expiries of `table`/`family` under its live rule, now.
    #[must_use]
    pub fn new(table: impl Into<String>, family: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            family: family.into(),
            proposed: None,
            part: Part::whole(),
            now: Utc::now(),
        }
    }

    /// Also under `policy`.
    #[must_use]
    pub fn with_proposed(mut self, policy: Policy) -> Self {
        self.proposed = Some(policy);
        self
    }

    /// Only the rows of `part`.
    #[must_use]
    pub fn with_part(mut self, part: Part) -> Self {
        self.part = part;
        self
    }

    /// Judged at `now`.
    #[must_use]
    pub fn with_now(mut self, now: DateTime<Utc>) -> Self {
        self.now = now;
        self
    }
}

/// When a family's cells expire, under its live rule and a proposed policy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyExpiries {
    /// The table.
    pub table: String,
    /// The family.
    pub family: String,
    /// The part read.
    pub part: Part,
    /// Rows holding a cell of the family.
    pub rows: u64,
    /// Under the family's live rule.
    pub current: ExpiryHistogram,
    /// Under the proposed policy, when one was given.
    pub proposed: Option<ExpiryHistogram>,
}

/// Scan `family` of `table` (raw, every version, values stripped by the
/// server) and draw when its cells expire under its live rule and the
/// request's proposed policy. `progress` is called after each page.
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::ops::{expiries, ExpiryRequest};
///
/// let family = expiries(conn, &ExpiryRequest::new("events", "raw"), |_| {}).await?;
/// println!("{} cells already expired", family.current.expired);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`crate::Error::TableNotFound`]; [`crate::Error::FamilyNotFound`]
/// (listing the table's families); [`crate::Error::Server`].
pub async fn expiries(
    conn: &Connection,
    request: &ExpiryRequest,
    mut progress: impl FnMut(ScanProgress),
) -> Result<FamilyExpiries> {
    let live = family_policy(conn, &request.table, &request.family).await?;
    let mut out = FamilyExpiries {
        table: request.table.clone(),
        family: request.family.clone(),
        part: request.part.clone(),
        rows: 0,
        current: ExpiryHistogram::new(live, request.now),
        proposed: request
            .proposed
            .map(|p| ExpiryHistogram::new(Some(p), request.now)),
    };
    let mut pages = FamilyPages::new(conn, &request.table, &request.family)
        .part(&request.part)
        .strip_values();
    let mut seen = ScanProgress::default();
    while let Some(page) = pages.next_page().await? {
        for (key, cells) in &page {
            out.rows += 1;
            seen.rows += 1;
            seen.cells += cells.len() as u64;
            for cell in cells {
                out.current.observe(cell.timestamp_micros);
                if let Some(p) = &mut out.proposed {
                    p.observe(cell.timestamp_micros);
                }
            }
            seen.last_row_key = Some(key.clone());
        }
        progress(seen.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        // 2023-11-14T22:13:20Z
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
    }

    #[test]
    fn a_default_policy_buckets_cells_by_the_time_they_have_left() {
        let policy = Policy::default_ttl(TimeDelta::days(30));
        let mut h = ExpiryHistogram::new(Some(policy), now());
        let written = |ago: TimeDelta| (now() - ago).timestamp_micros();
        h.observe(written(TimeDelta::days(31))); // expired
        h.observe(written(TimeDelta::days(30))); // expires exactly now: expired
        h.observe(written(TimeDelta::days(30) - TimeDelta::minutes(10))); // 10 min left
        h.observe(written(TimeDelta::days(29) + TimeDelta::hours(2))); // 22 h left
        h.observe(written(TimeDelta::days(25))); // 5 days left
        h.observe(written(TimeDelta::zero())); // 30 days left
        assert_eq!(
            h.buckets().map(|(_, n)| n),
            [2, 1, 1, 1, 1, 0],
            "{:?}",
            h.buckets()
        );
        assert_eq!(h.horizon(), Some(TimeDelta::days(30)));
        let daily = h.daily(TimeDelta::days(30));
        assert_eq!(daily.len(), 31);
        assert_eq!(daily.iter().map(|(_, n)| n).sum::<u64>(), 4);
        assert_eq!(daily[0], (now().date_naive(), 1)); // 10 min left: today
        assert_eq!(daily[1].1, 1); // 22 h left: tomorrow (UTC)
        assert_eq!(daily[5].1, 1);
        assert_eq!(daily[30].1, 1);
    }

    #[test]
    fn without_an_age_rule_nothing_expires() {
        let mut h = ExpiryHistogram::new(None, now());
        h.observe(0);
        h.observe(now().timestamp_micros());
        assert_eq!((h.never, h.cells()), (2, 2));
        assert_eq!(h.horizon(), None);
        assert!(h.days.is_empty());
    }

    #[test]
    fn one_second_expiry_is_the_timestamp_and_its_horizon_the_latest() {
        let mut h = ExpiryHistogram::new(Some(Policy::CellExpiry), now());
        h.observe((now() - TimeDelta::hours(1)).timestamp_micros());
        h.observe((now() + TimeDelta::days(3)).timestamp_micros());
        h.observe((now() + TimeDelta::days(MAX_DAYS + 10)).timestamp_micros());
        assert_eq!((h.expired, h.within_week, h.later), (1, 1, 1));
        assert_eq!(
            h.days.values().sum::<u64>(),
            1,
            "beyond MAX_DAYS: in `later` only"
        );
        let horizon = h.horizon().unwrap();
        assert_eq!(h.daily(horizon).len(), 4);
    }

    #[test]
    fn a_now_at_the_end_of_time_draws_no_panic() {
        let end = DateTime::<Utc>::MAX_UTC - TimeDelta::days(1);
        let mut h = ExpiryHistogram::new(Some(Policy::default_ttl(TimeDelta::days(2))), end);
        h.observe(end.timestamp_micros());
        let daily = h.daily(TimeDelta::days(MAX_DAYS));
        assert!(daily.first().is_some_and(|d| d.0 == end.date_naive()));
        assert!(h.horizon().is_some());
    }

    #[test]
    fn merging_past_u64_max_is_refused_and_changes_nothing() {
        let mut a = ExpiryHistogram::new(None, now());
        a.observe(0);
        let mut b = a.clone();
        b.never = u64::MAX;
        assert_eq!(a.try_merge(&b).unwrap_err().what, "never");
        assert_eq!(a.never, 1);
        assert_eq!(b.checked_cells(), Some(u64::MAX));
        b.expired = 1;
        assert_eq!((b.checked_cells(), b.cells()), (None, u64::MAX));
    }

    #[test]
    fn merging_adds_bucket_by_bucket_and_day_by_day() {
        let policy = Some(Policy::default_ttl(TimeDelta::days(2)));
        let mut a = ExpiryHistogram::new(policy, now());
        let mut b = ExpiryHistogram::new(policy, now() + TimeDelta::minutes(1));
        a.observe(now().timestamp_micros());
        b.observe(now().timestamp_micros());
        b.observe(0);
        a.merge(&b);
        assert_eq!((a.expired, a.within_week, a.cells()), (1, 2, 3));
        assert_eq!(a.days.values().sum::<u64>(), 2);
    }
}
