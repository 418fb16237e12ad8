//! What a policy would do to a family's cells, counted before it is applied.
//!
//! A cell "would be deleted at once" when, under the policy, it has already
//! expired at "now" ([`Policy::is_visible`] is false): every typed read hides
//! it from that moment and garbage collection removes it at its next pass.
//! Under the one-second policy that is every cell whose timestamp is not in
//! the future, i.e. every cell written the ordinary way; under a default `D`
//! it is every cell older than `D`.
//!
//! A timestamp "looks real" when it is at or before now (a write time, as
//! the server or an ordinary client stamps it) and "artificial" when it is in
//! the future (only TTL strategies write those).

use chrono::{DateTime, TimeDelta, Utc};

use crate::client::admin::family_policy;
use crate::client::connection::Connection;
use crate::model::cell::Cell;
use crate::model::error::Result;
use crate::model::policy::{from_micros, Policy};

use super::expiry::ExpiryHistogram;
use super::scan::{FamilyPages, ScanProgress};
use super::shard::{add, CountOverflow, Part};

/// What to audit: a family of a table under a policy, judged at a "now".
///
/// ```
/// use bigtable_ttl::ops::{parse_policy, AuditRequest};
///
/// let request = AuditRequest::new("sessions", "s", parse_policy("one-second").unwrap());
/// # let _ = request;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditRequest {
    /// The table.
    pub table: String,
    /// The family.
    pub family: String,
    /// The policy to judge its cells by.
    pub policy: Policy,
    /// The "now" the cells are judged at (the system clock's when made).
    pub now: DateTime<Utc>,
    /// The part of the key space to audit (the whole table unless set).
    pub part: Part,
}

impl AuditRequest {
    /// An audit of `table`/`family` under `policy`, now.
    #[must_use]
    pub fn new(table: impl Into<String>, family: impl Into<String>, policy: Policy) -> Self {
        Self {
            table: table.into(),
            family: family.into(),
            policy,
            now: Utc::now(),
            part: Part::whole(),
        }
    }

    /// Only the rows of `part` (one shard of a sharded audit; see
    /// [`super::plan_parts`] and [`AuditReport::merge`]).
    #[must_use]
    pub fn with_part(mut self, part: Part) -> Self {
        self.part = part;
        self
    }

    /// The same audit judged at `now` (a manual clock's, in tests).
    #[must_use]
    pub fn with_now(mut self, now: DateTime<Utc>) -> Self {
        self.now = now;
        self
    }
}

/// The audit of one family under one policy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditReport {
    /// The table.
    pub table: String,
    /// The family.
    pub family: String,
    /// The policy audited.
    pub policy: Policy,
    /// The "now" the audit judged by.
    pub now: DateTime<Utc>,
    /// The part of the key space audited.
    pub part: Part,
    /// Rows holding at least one cell of the family.
    pub rows: u64,
    /// Cells of the family, every version.
    pub cells: u64,
    /// Cells the policy would delete at once (already expired under it).
    pub cells_deleted: u64,
    /// Rows that would lose at least one cell.
    pub rows_losing_cells: u64,
    /// Rows that would lose every cell of the family (gone from it).
    pub rows_deleted: u64,
    /// Cells whose timestamp is at or before now (looks like a write time).
    pub real_cells: u64,
    /// Cells whose timestamp is after now (an artificial, TTL-made one).
    pub artificial_cells: u64,
    /// The oldest cell timestamp (µs), if any cell.
    pub oldest_micros: Option<i64>,
    /// The newest cell timestamp (µs), if any cell.
    pub newest_micros: Option<i64>,
    /// Rows whose columns would expire at different times under the policy
    /// (their newest versions have different timestamps): rows built by
    /// several writes, which a struct's reader will leave out from their
    /// first required column's expiry on (`migrate` gives each row one
    /// expiry by default).
    pub rows_mixed_expiry: u64,
    /// The widest spread between a row's first and last column expiry (µs;
    /// 0 when no row is mixed).
    pub widest_expiry_spread_micros: i64,
    /// When the cells expire under the family's live rule (`None` when the
    /// tally was not told the rule).
    pub expiry_current: Option<ExpiryHistogram>,
    /// When the cells would expire under the audited policy.
    pub expiry_proposed: ExpiryHistogram,
}

impl AuditReport {
    /// Add `other`, the audit of other rows of the same family under the
    /// same policy (another part of a sharded audit), to this one: counts
    /// summed, oldest and newest widened, histograms added, the earlier
    /// "now" kept. Whether the parts together cover the table is the
    /// caller's to check ([`super::check_cover`]). A count that would pass
    /// `u64::MAX` stays at `u64::MAX`; [`AuditReport::try_merge`] refuses
    /// it instead (reports read from files).
    pub fn merge(&mut self, other: &AuditReport) {
        let _ = self.merge_by(other, |a, b, _| Ok(a.saturating_add(b)));
    }

    /// [`AuditReport::merge`], or which count would pass `u64::MAX` (a
    /// corrupt or crafted report: no table holds that many cells); `self`
    /// is unchanged then.
    ///
    /// # Errors
    /// [`CountOverflow`] naming the count.
    pub fn try_merge(&mut self, other: &AuditReport) -> std::result::Result<(), CountOverflow> {
        let mut sum = self.clone();
        sum.merge_by(other, add)?;
        *self = sum;
        Ok(())
    }

    fn merge_by(
        &mut self,
        other: &AuditReport,
        add: impl Fn(u64, u64, &'static str) -> std::result::Result<u64, CountOverflow> + Copy,
    ) -> std::result::Result<(), CountOverflow> {
        self.now = self.now.min(other.now);
        self.rows = add(self.rows, other.rows, "rows")?;
        self.cells = add(self.cells, other.cells, "cells")?;
        self.cells_deleted = add(self.cells_deleted, other.cells_deleted, "cells_deleted")?;
        self.rows_losing_cells = add(
            self.rows_losing_cells,
            other.rows_losing_cells,
            "rows_losing_cells",
        )?;
        self.rows_deleted = add(self.rows_deleted, other.rows_deleted, "rows_deleted")?;
        self.real_cells = add(self.real_cells, other.real_cells, "real_cells")?;
        self.artificial_cells = add(
            self.artificial_cells,
            other.artificial_cells,
            "artificial_cells",
        )?;
        self.oldest_micros = match (self.oldest_micros, other.oldest_micros) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.newest_micros = self.newest_micros.max(other.newest_micros);
        self.rows_mixed_expiry = add(
            self.rows_mixed_expiry,
            other.rows_mixed_expiry,
            "rows_mixed_expiry",
        )?;
        self.widest_expiry_spread_micros = self
            .widest_expiry_spread_micros
            .max(other.widest_expiry_spread_micros);
        self.expiry_current = match (self.expiry_current.take(), &other.expiry_current) {
            (Some(mut a), Some(b)) => {
                a.merge_by(b, add)?;
                Some(a)
            }
            (a, b) => a.or_else(|| b.clone()),
        };
        self.expiry_proposed.merge_by(&other.expiry_proposed, add)
    }

    /// Whether applying the policy would delete any cell.
    #[must_use]
    pub fn would_delete_data(&self) -> bool {
        self.cells_deleted > 0
    }

    /// The oldest timestamp as an instant (`None` without cells or when out
    /// of chrono's range).
    #[must_use]
    pub fn oldest(&self) -> Option<DateTime<Utc>> {
        self.oldest_micros.and_then(|t| from_micros(t).ok())
    }

    /// The newest timestamp as an instant.
    #[must_use]
    pub fn newest(&self) -> Option<DateTime<Utc>> {
        self.newest_micros.and_then(|t| from_micros(t).ok())
    }

    /// The widest spread between a row's first and last column expiry.
    #[must_use]
    pub fn widest_expiry_spread(&self) -> TimeDelta {
        TimeDelta::microseconds(self.widest_expiry_spread_micros)
    }
}

impl std::fmt::Display for AuditReport {
    /// A few lines for people: what is there, what the policy would delete.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ts = |t: Option<DateTime<Utc>>, micros: Option<i64>| match (t, micros) {
            (Some(t), _) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
            (None, Some(m)) => format!("{m} µs"),
            (None, None) => "-".to_owned(),
        };
        writeln!(
            f,
            "table `{}`, family `{}`, policy {} ({})",
            self.table,
            self.family,
            super::spec::policy_spec(&self.policy),
            crate::client::admin::describe_rule(&crate::client::admin::gc_rule(
                self.policy.gc_max_age()
            ))
        )?;
        writeln!(f, "  rows:              {}", self.rows)?;
        writeln!(
            f,
            "  cells:             {} ({} real timestamps, {} artificial/future)",
            self.cells, self.real_cells, self.artificial_cells
        )?;
        writeln!(
            f,
            "  oldest / newest:   {} / {}",
            ts(self.oldest(), self.oldest_micros),
            ts(self.newest(), self.newest_micros)
        )?;
        writeln!(
            f,
            "  mixed expiries:    {} rows whose columns expire at different times (widest spread {})",
            self.rows_mixed_expiry,
            crate::model::duration::short(self.widest_expiry_spread())
        )?;
        write!(
            f,
            "  would delete:      {} cells in {} rows ({} rows entirely)",
            self.cells_deleted, self.rows_losing_cells, self.rows_deleted
        )
    }
}

/// The pure tally behind [`audit`]: feed it rows, read the report.
///
/// ```
/// use bigtable_ttl::ops::Audit;
/// use bigtable_ttl::{data::Cell, Policy};
/// use chrono::{TimeDelta, Utc};
///
/// let now = Utc::now();
/// let cell = |ts: i64| Cell::new("s", b"q".to_vec(), ts, vec![]);
/// let mut audit = Audit::new("t", "s", Policy::CellExpiry, now);
/// let past = (now - TimeDelta::hours(1)).timestamp_micros();
/// let future = (now + TimeDelta::hours(1)).timestamp_micros();
/// audit.observe_row(&[cell(past), cell(future)]);
/// let report = audit.finish();
/// assert_eq!((report.cells, report.cells_deleted, report.rows_deleted), (2, 1, 0));
/// assert!(report.would_delete_data());
/// ```
#[derive(Debug, Clone)]
pub struct Audit {
    report: AuditReport,
    last_row_key: Option<Vec<u8>>,
}

impl Audit {
    /// An empty tally of `table`/`family` under `policy` at `now`.
    #[must_use]
    pub fn new(table: &str, family: &str, policy: Policy, now: DateTime<Utc>) -> Self {
        Self {
            report: AuditReport {
                table: table.to_owned(),
                family: family.to_owned(),
                policy,
                now,
                part: Part::whole(),
                rows: 0,
                cells: 0,
                cells_deleted: 0,
                rows_losing_cells: 0,
                rows_deleted: 0,
                real_cells: 0,
                artificial_cells: 0,
                oldest_micros: None,
                newest_micros: None,
                rows_mixed_expiry: 0,
                widest_expiry_spread_micros: 0,
                expiry_current: None,
                expiry_proposed: ExpiryHistogram::new(Some(policy), now),
            },
            last_row_key: None,
        }
    }

    /// Also tally when the cells expire under the family's live rule
    /// (`None`: no age rule, nothing expires).
    #[must_use]
    pub fn with_live_policy(mut self, live: Option<Policy>) -> Self {
        self.report.expiry_current = Some(ExpiryHistogram::new(live, self.report.now));
        self
    }

    /// Count one row of the family, with its key (for progress).
    pub fn observe_keyed_row(&mut self, key: &[u8], cells: &[Cell]) {
        self.observe_row(cells);
        self.last_row_key = Some(key.to_vec());
    }

    /// Count one row's cells of the family (cells of other families must
    /// not be passed; a row without cells is ignored).
    pub fn observe_row(&mut self, cells: &[Cell]) {
        if cells.is_empty() {
            return;
        }
        let r = &mut self.report;
        let now_micros = r.now.timestamp_micros();
        let mut deleted = 0u64;
        for cell in cells {
            let ts = cell.timestamp_micros;
            r.cells += 1;
            if ts <= now_micros {
                r.real_cells += 1;
            } else {
                r.artificial_cells += 1;
            }
            if !r.policy.is_visible(ts, r.now) {
                deleted += 1;
            }
            r.expiry_proposed.observe(ts);
            if let Some(current) = &mut r.expiry_current {
                current.observe(ts);
            }
            r.oldest_micros = Some(r.oldest_micros.map_or(ts, |o| o.min(ts)));
            r.newest_micros = Some(r.newest_micros.map_or(ts, |n| n.max(ts)));
        }
        // Every column's newest version: when the row's columns expire.
        let mut newest: std::collections::BTreeMap<&[u8], i64> = std::collections::BTreeMap::new();
        for cell in cells {
            let ts = newest.entry(cell.qualifier.as_slice()).or_insert(i64::MIN);
            *ts = (*ts).max(cell.timestamp_micros);
        }
        let (first, last) = newest.values().fold((i64::MAX, i64::MIN), |(lo, hi), &ts| {
            (lo.min(ts), hi.max(ts))
        });
        let spread = last.saturating_sub(first);
        if spread > 0 {
            r.rows_mixed_expiry += 1;
            r.widest_expiry_spread_micros = r.widest_expiry_spread_micros.max(spread);
        }
        r.rows += 1;
        r.cells_deleted += deleted;
        if deleted > 0 {
            r.rows_losing_cells += 1;
        }
        if deleted == cells.len() as u64 {
            r.rows_deleted += 1;
        }
    }

    /// How far the tally got.
    #[must_use]
    pub fn progress(&self) -> ScanProgress {
        ScanProgress {
            rows: self.report.rows,
            cells: self.report.cells,
            last_row_key: self.last_row_key.clone(),
        }
    }

    /// The report.
    #[must_use]
    pub fn finish(self) -> AuditReport {
        self.report
    }
}

/// Scan `family` of `table` (raw: every version, expired or not, values
/// stripped by the server), or of the request's part of it, and count what
/// `policy` would do at `now`, with when the cells expire under the
/// family's live rule and under `policy`. `progress` is called after each
/// page of rows.
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::ops::{audit, parse_policy, AuditRequest};
///
/// let request = AuditRequest::new("sessions", "s", parse_policy("one-second")?);
/// let report = audit(conn, &request, |_| {}).await?;
/// if report.would_delete_data() {
///     eprintln!("{report}");
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`crate::Error::FamilyNotFound`] (listing the table's families);
/// [`crate::Error::Server`] when a read fails (a missing table included).
pub async fn audit(
    conn: &Connection,
    request: &AuditRequest,
    mut progress: impl FnMut(ScanProgress),
) -> Result<AuditReport> {
    let AuditRequest {
        table,
        family,
        policy,
        now,
        part,
    } = request;
    let live = family_policy(conn, table, family).await?;
    let mut tally = Audit::new(table, family, *policy, *now).with_live_policy(live);
    tally.report.part = part.clone();
    let mut pages = FamilyPages::new(conn, table, family)
        .part(part)
        .strip_values();
    while let Some(page) = pages.next_page().await? {
        for (key, cells) in &page {
            tally.observe_keyed_row(key, cells);
        }
        progress(tally.progress());
    }
    Ok(tally.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(ts: i64) -> Cell {
        Cell {
            family: "c".into(),
            qualifier: b"q".to_vec(),
            value: vec![],
            timestamp_micros: ts,
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
    }

    fn at(d: TimeDelta) -> i64 {
        (now() + d).timestamp_micros()
    }

    #[test]
    fn rows_whose_columns_expire_at_different_times_are_counted_with_the_widest_spread() {
        let column = |q: &str, d: TimeDelta| Cell {
            qualifier: q.as_bytes().to_vec(),
            ..cell(at(d))
        };
        let mut audit = Audit::new("t", "c", Policy::default_ttl(TimeDelta::days(2)), now());
        // One write: every column at once, older versions aside.
        audit.observe_row(&[
            column("a", TimeDelta::zero()),
            column("a", -TimeDelta::days(9)),
            column("b", TimeDelta::zero()),
        ]);
        // Written over time: the columns' newest versions a day apart.
        audit.observe_row(&[
            column("a", -TimeDelta::days(1)),
            column("b", TimeDelta::zero()),
        ]);
        audit.observe_row(&[
            column("a", -TimeDelta::hours(2)),
            column("b", TimeDelta::zero()),
        ]);
        let r = audit.finish();
        assert_eq!(r.rows_mixed_expiry, 2);
        assert_eq!(r.widest_expiry_spread(), TimeDelta::days(1));
        assert!(r.to_string().contains("mixed expiries:    2 rows"), "{r}");
        assert!(r.to_string().contains("widest spread 1d"), "{r}");
    }

    #[test]
    fn one_second_deletes_every_real_timestamp() {
        let mut audit = Audit::new("t", "c", Policy::CellExpiry, now());
        audit.observe_row(&[cell(at(-TimeDelta::days(3))), cell(at(TimeDelta::zero()))]);
        audit.observe_row(&[
            cell(at(TimeDelta::hours(1))),
            cell(at(-TimeDelta::hours(1))),
        ]);
        audit.observe_row(&[cell(at(TimeDelta::minutes(5)))]);
        audit.observe_row(&[]);
        let r = audit.finish();
        assert_eq!((r.rows, r.cells), (3, 5));
        assert_eq!((r.real_cells, r.artificial_cells), (3, 2));
        assert_eq!(r.cells_deleted, 3);
        assert_eq!((r.rows_losing_cells, r.rows_deleted), (2, 1));
        assert_eq!(r.oldest_micros, Some(at(-TimeDelta::days(3))));
        assert_eq!(r.newest_micros, Some(at(TimeDelta::hours(1))));
        assert!(r.would_delete_data());
    }

    #[test]
    fn a_default_deletes_only_what_is_older_than_it() {
        let mut audit = Audit::new("t", "c", Policy::default_ttl(TimeDelta::days(2)), now());
        audit.observe_row(&[cell(at(-TimeDelta::days(1))), cell(at(-TimeDelta::days(3)))]);
        audit.observe_row(&[cell(at(-TimeDelta::hours(1)))]);
        let r = audit.finish();
        assert_eq!(r.cells_deleted, 1);
        assert_eq!((r.rows_losing_cells, r.rows_deleted), (1, 0));
        assert_eq!((r.real_cells, r.artificial_cells), (3, 0));
    }

    #[test]
    fn merging_counts_that_pass_u64_max_is_refused_and_changes_nothing() {
        let mut a = Audit::new("t", "c", Policy::CellExpiry, now());
        a.observe_row(&[cell(at(-TimeDelta::hours(1)))]);
        let mut a = a.finish();
        let mut b = a.clone();
        b.rows = u64::MAX;
        let before = a.clone();
        let err = a.try_merge(&b).unwrap_err();
        assert_eq!(err.what, "rows");
        assert_eq!(a, before);
        let mut c = before.clone();
        c.expiry_proposed.expired = u64::MAX;
        assert_eq!(a.try_merge(&c).unwrap_err().what, "expired");
        a.merge(&b);
        assert_eq!(a.rows, u64::MAX, "merge saturates");
    }

    #[test]
    fn an_empty_family_deletes_nothing() {
        let r = Audit::new("t", "c", Policy::CellExpiry, now()).finish();
        assert!(!r.would_delete_data());
        assert_eq!((r.oldest(), r.newest()), (None, None));
        assert!(r.to_string().contains("would delete:      0 cells"), "{r}");
    }
}
