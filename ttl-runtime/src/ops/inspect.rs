//! One row's cells with their expiry under the families' live rules and
//! their real write time: Cassandra's `TTL()` and `WRITETIME()` for Bigtable.

use std::collections::BTreeMap;

use crate::model::filter::only_family;
use chrono::{DateTime, TimeDelta, Utc};

use crate::client::admin::live_rules_by;
use crate::client::connection::Connection;
use crate::client::data::{RawTable, RowFilter};
use crate::model::cell::Cell;
use crate::model::codec::CellCodec;
use crate::model::error::Result;
use crate::model::gc_rule::{policy_from_rule, GcRule};
use crate::model::policy::Policy;

use super::spec::DEFAULT_WRITTEN_AT;

/// What to inspect: one row of a table, every family or one, judged at a
/// "now".
///
/// ```
/// use bigtable_ttl::ops::InspectRequest;
///
/// let request = InspectRequest::new("clicks", "c3#0001").with_family("c");
/// assert_eq!(request.written_at, bigtable_ttl::ops::DEFAULT_WRITTEN_AT);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InspectRequest {
    /// The table.
    pub table: String,
    /// The row key.
    pub row_key: Vec<u8>,
    /// Only this family's cells; `None`: every family.
    pub family: Option<String>,
    /// The shadow column's qualifier ([`DEFAULT_WRITTEN_AT`] unless set).
    pub written_at: String,
    /// The "now" cells are judged at (the system clock's when made).
    pub now: DateTime<Utc>,
}

impl InspectRequest {
    /// Inspect row `row_key` of `table`, every family, now.
    #[must_use]
    pub fn new(table: impl Into<String>, row_key: impl AsRef<[u8]>) -> Self {
        Self {
            table: table.into(),
            row_key: row_key.as_ref().to_vec(),
            family: None,
            written_at: DEFAULT_WRITTEN_AT.to_owned(),
            now: Utc::now(),
        }
    }

    /// Only the cells of `family`.
    #[must_use]
    pub fn with_family(mut self, family: impl Into<String>) -> Self {
        self.family = Some(family.into());
        self
    }

    /// The shadow column is `qualifier`.
    #[must_use]
    pub fn with_written_at(mut self, qualifier: impl Into<String>) -> Self {
        self.written_at = qualifier.into();
        self
    }

    /// Judged at `now`.
    #[must_use]
    pub fn with_now(mut self, now: DateTime<Utc>) -> Self {
        self.now = now;
        self
    }
}

/// A family's live GC rule and the policy it implements.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FamilyPolicy {
    /// The live rule (`none` when the family has none).
    pub rule: GcRule,
    /// The policy it implements ([`policy_from_rule`]); `None`: cells do not
    /// expire by age.
    pub policy: Option<Policy>,
}

/// One stored cell, explained.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CellReport {
    /// Column family.
    pub family: String,
    /// Column qualifier.
    pub qualifier: Vec<u8>,
    /// Value bytes.
    pub value: Vec<u8>,
    /// The stored timestamp (µs since the epoch).
    pub timestamp_micros: i64,
    /// Whether this is a version of the shadow column (the real write time).
    pub is_shadow: bool,
    /// Whether a reader filtering by the family's policy still shows it at
    /// "now" (always true in a family without an age rule).
    pub alive: bool,
    /// When it expires under the family's live policy; `None` without one.
    pub expires_at: Option<DateTime<Utc>>,
    /// Time left until then (zero once expired); `None` without a policy.
    pub time_left: Option<TimeDelta>,
    /// When it was really written, from the shadow column: the shadow
    /// version with the same timestamp, else the newest shadow version of
    /// the family; `None` without a shadow column.
    pub written_at: Option<DateTime<Utc>>,
}

/// Every cell of one row, explained.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RowInspection {
    /// The table.
    pub table: String,
    /// The row key.
    pub row_key: Vec<u8>,
    /// The "now" it was judged at.
    pub now: DateTime<Utc>,
    /// The live rule of every family of the table.
    pub families: BTreeMap<String, FamilyPolicy>,
    /// The cells, in the server's order (family, qualifier, newest first).
    /// Empty when the row does not exist (or has no cell in the family asked for).
    pub cells: Vec<CellReport>,
}

/// The real write time a shadow cell holds: 8 bytes big-endian µs (the
/// `DateTime<Utc>` codec). `None` for anything else.
fn shadow_time(value: &[u8]) -> Option<DateTime<Utc>> {
    DateTime::<Utc>::decode(value).ok()
}

/// Explain `cells` (one row's, as stored) with the families' policies at
/// `now`; `written_at` is the shadow column's qualifier. Pure.
#[must_use]
pub(crate) fn explain_cells(
    families: &BTreeMap<String, FamilyPolicy>,
    cells: &[Cell],
    written_at: &str,
    now: DateTime<Utc>,
) -> Vec<CellReport> {
    let is_shadow = |c: &Cell| c.qualifier == written_at.as_bytes();
    // Shadow versions per family: timestamp -> real time, and the newest.
    let mut shadows: BTreeMap<&str, BTreeMap<i64, DateTime<Utc>>> = BTreeMap::new();
    for cell in cells.iter().filter(|c| is_shadow(c)) {
        if let Some(t) = shadow_time(&cell.value) {
            shadows
                .entry(cell.family.as_str())
                .or_default()
                .insert(cell.timestamp_micros, t);
        }
    }
    cells
        .iter()
        .map(|cell| {
            let policy = families.get(&cell.family).and_then(|f| f.policy);
            let ts = cell.timestamp_micros;
            let expires_at = policy.and_then(|p| p.expiry_of(ts).ok());
            let written_at = shadows.get(cell.family.as_str()).and_then(|versions| {
                versions
                    .get(&ts)
                    .or_else(|| versions.values().next_back())
                    .copied()
            });
            CellReport {
                family: cell.family.clone(),
                qualifier: cell.qualifier.clone(),
                value: cell.value.clone(),
                timestamp_micros: ts,
                is_shadow: is_shadow(cell),
                alive: policy.is_none_or(|p| p.is_visible(ts, now)),
                expires_at,
                time_left: expires_at.map(|e| (e - now).max(TimeDelta::zero())),
                written_at,
            }
        })
        .collect()
}

/// Read row `row_key` of `table` raw (every version, expired or not, of
/// `family` or of every family) and explain each cell under its family's
/// **live** GC rule at `now`, with the real write time from the shadow
/// column `written_at` (usually [`super::spec::DEFAULT_WRITTEN_AT`]).
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::ops::{inspect, InspectRequest};
///
/// let row = inspect(conn, &InspectRequest::new("clicks", "c3#0001")).await?;
/// for cell in &row.cells {
///     println!("{}:{} alive={} expires={:?} written={:?}", cell.family,
///         String::from_utf8_lossy(&cell.qualifier), cell.alive, cell.expires_at, cell.written_at);
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`crate::Error::TableNotFound`]; [`crate::Error::Server`].
pub async fn inspect(conn: &Connection, request: &InspectRequest) -> Result<RowInspection> {
    let InspectRequest {
        table,
        row_key,
        family,
        written_at,
        now,
    } = request;
    let (family, now) = (family.as_deref(), *now);
    // One deadline for the call: the connection's policy's.
    // (Its admin request also within the admin policy's.)
    let deadline = conn.retry().deadline_from_now();
    let families: BTreeMap<String, FamilyPolicy> = live_rules_by(conn, table, deadline)
        .await?
        .into_iter()
        .map(|(name, rule)| {
            let policy = policy_from_rule(&rule);
            (name, FamilyPolicy { rule, policy })
        })
        .collect();
    let row = RawTable::new(conn, table)
        .within(Some(deadline))
        .read_row(
            row_key,
            family.map(|f| RowFilter::from_wire(only_family(f))),
        )
        .await?;
    let cells = row.map(|row| row.cells).unwrap_or_default();
    Ok(RowInspection {
        table: table.to_owned(),
        row_key: row_key.clone(),
        now,
        cells: explain_cells(&families, &cells, written_at, now),
        families,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::admin::gc_rule;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
    }

    fn cell(family: &str, q: &str, ts: DateTime<Utc>, value: Vec<u8>) -> Cell {
        Cell {
            family: family.into(),
            qualifier: q.as_bytes().to_vec(),
            value,
            timestamp_micros: ts.timestamp_micros(),
        }
    }

    fn families() -> BTreeMap<String, FamilyPolicy> {
        let mut m = BTreeMap::new();
        for (name, rule) in [
            ("c", gc_rule(TimeDelta::days(2))),
            ("s", gc_rule(TimeDelta::seconds(1))),
            ("k", GcRule::default()),
        ] {
            m.insert(
                name.to_owned(),
                FamilyPolicy {
                    policy: policy_from_rule(&rule),
                    rule,
                },
            );
        }
        m
    }

    #[test]
    fn default_cells_expire_a_default_after_their_timestamp() {
        let now = now();
        let written = now - TimeDelta::hours(1);
        // Written an hour ago with a 1h TTL under 2d: ts = written + 1h - 2d.
        let ts = written + TimeDelta::hours(1) - TimeDelta::days(2) + TimeDelta::minutes(30);
        let cells = [
            cell("c", "url", ts, b"/a".to_vec()),
            cell("c", "written_at", ts, written.encode().unwrap()),
            cell("c", "url", now - TimeDelta::days(3), b"/old".to_vec()),
        ];
        let out = explain_cells(&families(), &cells, "written_at", now);
        assert_eq!(out[0].expires_at, Some(now + TimeDelta::minutes(30)));
        assert_eq!(out[0].time_left, Some(TimeDelta::minutes(30)));
        assert!(out[0].alive && !out[0].is_shadow);
        assert_eq!(out[0].written_at, Some(written));
        assert!(out[1].is_shadow);
        assert_eq!(out[1].written_at, Some(written));
        assert!(!out[2].alive);
        assert_eq!(out[2].time_left, Some(TimeDelta::zero()));
        // No shadow version at its timestamp: the newest one.
        assert_eq!(out[2].written_at, Some(written));
    }

    #[test]
    fn one_second_cells_expire_at_their_timestamp_and_ruleless_ones_never() {
        let now = now();
        let cells = [
            cell("s", "user", now + TimeDelta::minutes(5), b"ann".to_vec()),
            cell("s", "user", now - TimeDelta::seconds(5), b"bob".to_vec()),
            cell("k", "x", now - TimeDelta::days(500), b"1".to_vec()),
        ];
        let out = explain_cells(&families(), &cells, "written_at", now);
        assert_eq!(out[0].expires_at, Some(now + TimeDelta::minutes(5)));
        assert!(out[0].alive);
        assert!(!out[1].alive);
        assert!(out[2].alive);
        assert_eq!((out[2].expires_at, out[2].time_left), (None, None));
        assert!(out.iter().all(|c| c.written_at.is_none()));
    }
}
