//! Set a family's GC rule to a policy's, after an audit.

use chrono::{DateTime, Utc};

use crate::client::admin::{live_rules, modify_families, set_rule};
use crate::client::connection::Connection;
use crate::model::error::Result;
use crate::model::gc_rule::{gc_rule, rule_matches, GcRule};
use crate::model::policy::Policy;

use super::audit::{audit, AuditReport, AuditRequest};
use super::scan::ScanProgress;

/// What to apply: a policy's GC rule on a family of a table, after an audit
/// at a "now"; refused when data would be lost unless forced.
///
/// ```
/// use bigtable_ttl::ops::{parse_policy, ApplyRequest};
///
/// let request = ApplyRequest::new("sessions", "s", parse_policy("default=2d").unwrap())
///     .with_force(true);
/// assert!(request.force);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplyRequest {
    /// The table.
    pub table: String,
    /// The family (created with the rule when missing).
    pub family: String,
    /// The policy whose rule to set.
    pub policy: Policy,
    /// The "now" the audit judges at (the system clock's when made).
    pub now: DateTime<Utc>,
    /// Set the rule even when the audit finds cells it would delete.
    pub force: bool,
}

impl ApplyRequest {
    /// Apply `policy` to `table`/`family`, now, refusing to delete data.
    #[must_use]
    pub fn new(table: impl Into<String>, family: impl Into<String>, policy: Policy) -> Self {
        Self {
            table: table.into(),
            family: family.into(),
            policy,
            now: Utc::now(),
            force: false,
        }
    }

    /// The same, judged at `now`.
    #[must_use]
    pub fn with_now(mut self, now: DateTime<Utc>) -> Self {
        self.now = now;
        self
    }

    /// The same, setting the rule even when data would be deleted.
    #[must_use]
    pub fn with_force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyOutcome {
    /// The rule was set (or the family created with it).
    Applied {
        /// The rule before; `None` when the family did not exist.
        before: Option<GcRule>,
        /// The rule now.
        after: GcRule,
        /// The audit run first.
        audit: AuditReport,
    },
    /// The family already had the policy's rule: nothing was sent.
    Unchanged {
        /// The live rule.
        rule: GcRule,
        /// The audit run first.
        audit: AuditReport,
    },
    /// The audit found cells the policy would delete, and `force` was not
    /// given: nothing was changed.
    Refused {
        /// The live rule, unchanged.
        rule: Option<GcRule>,
        /// The audit, with the numbers.
        audit: AuditReport,
    },
}

impl ApplyOutcome {
    /// The audit run before deciding.
    #[must_use]
    pub fn audit(&self) -> &AuditReport {
        match self {
            ApplyOutcome::Applied { audit, .. }
            | ApplyOutcome::Unchanged { audit, .. }
            | ApplyOutcome::Refused { audit, .. } => audit,
        }
    }
}

/// Set the GC rule of `family` in `table` to `max_age = policy.gc_max_age()`
/// (creating the family when it is missing), with `ModifyColumnFamilies`.
///
/// The family is [audited](super::audit()) first, at `now`. When the policy
/// would delete any cell and `force` is false, nothing is changed and
/// [`ApplyOutcome::Refused`] carries the numbers. With `force`, the rule is
/// set and the emulator or Cloud Bigtable garbage-collects the expired cells
/// on its next pass.
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::ops::{apply, parse_policy, ApplyOutcome, ApplyRequest};
///
/// let request = ApplyRequest::new("sessions", "s", parse_policy("one-second")?);
/// let outcome = apply(conn, &request, |_| {}).await?;
/// if let ApplyOutcome::Refused { audit, .. } = &outcome {
///     eprintln!("refused:\n{audit}");
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`crate::Error::TableNotFound`]; [`crate::Error::Server`].
pub async fn apply(
    conn: &Connection,
    request: &ApplyRequest,
    progress: impl FnMut(ScanProgress),
) -> Result<ApplyOutcome> {
    let ApplyRequest {
        table,
        family,
        policy,
        now,
        force,
    } = request;
    let (policy, force) = (*policy, *force);
    let audit_request = AuditRequest::new(table.clone(), family.clone(), policy).with_now(*now);
    let before = live_rules(conn, table).await?.remove(family);
    let report = audit(conn, &audit_request, progress).await?;
    let after = gc_rule(policy.gc_max_age());
    if let Some(rule) = &before {
        if rule_matches(rule, &after) {
            return Ok(ApplyOutcome::Unchanged {
                rule: rule.clone(),
                audit: report,
            });
        }
    }
    if report.would_delete_data() && !force {
        return Ok(ApplyOutcome::Refused {
            rule: before,
            audit: report,
        });
    }
    set_gc_rule(conn, table, family, before.is_none(), &after).await?;
    Ok(ApplyOutcome::Applied {
        before,
        after,
        audit: report,
    })
}

/// `ModifyColumnFamilies` creating or updating one family with `rule`,
/// within the admin policy.
pub(crate) async fn set_gc_rule(
    conn: &Connection,
    table: &str,
    family: &str,
    create: bool,
    rule: &GcRule,
) -> Result<()> {
    let deadline = conn.admin_retry().deadline_from_now();
    modify_families(conn, table, vec![set_rule(family, create, rule)], deadline).await
}
