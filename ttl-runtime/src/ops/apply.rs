//! Set a family's GC rule to a policy's, after an audit.

use chrono::{DateTime, Utc};

use crate::client::admin::live_rules;
use crate::client::connection::Connection;
use crate::model::error::{Error, Result};
use crate::model::gc_rule::proto::{
    modify_column_families_request::{modification::Mod, Modification},
    ColumnFamily, GcRule, ModifyColumnFamiliesRequest,
};
use crate::model::gc_rule::{gc_rule, rule_matches};
use crate::model::policy::Policy;

use super::audit::{audit, AuditReport};
use super::scan::ScanProgress;

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
/// use bigtable_ttl::ops::{apply, parse_policy, ApplyOutcome};
///
/// let outcome = apply(conn, "sessions", "s", parse_policy("one-second")?, chrono::Utc::now(), false, |_| {}).await?;
/// if let ApplyOutcome::Refused { audit, .. } = &outcome {
///     eprintln!("refused:\n{audit}");
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::TableNotFound`]; [`Error::Server`].
pub async fn apply(
    conn: &Connection,
    table: &str,
    family: &str,
    policy: Policy,
    now: DateTime<Utc>,
    force: bool,
    progress: impl FnMut(ScanProgress),
) -> Result<ApplyOutcome> {
    let before = live_rules(conn, table).await?.remove(family);
    let report = audit(conn, table, family, policy, now, progress).await?;
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
    set_gc_rule(conn, table, family, before.is_none(), after.clone()).await?;
    Ok(ApplyOutcome::Applied {
        before,
        after,
        audit: report,
    })
}

/// `ModifyColumnFamilies` creating or updating one family with `rule`.
pub(crate) async fn set_gc_rule(
    conn: &Connection,
    table: &str,
    family: &str,
    create: bool,
    rule: GcRule,
) -> Result<()> {
    let cf = ColumnFamily {
        gc_rule: Some(rule),
        ..ColumnFamily::default()
    };
    let request = conn
        .admin_request(ModifyColumnFamiliesRequest {
            name: conn.table_path(table),
            modifications: vec![Modification {
                id: family.to_owned(),
                r#mod: Some(if create {
                    Mod::Create(cf)
                } else {
                    Mod::Update(cf)
                }),
                // Empty mask: the GC rule only.
                update_mask: None,
            }],
            ignore_warnings: false,
        })
        .await?;
    conn.admin_client()
        .modify_column_families(request)
        .await
        .map_err(|status| Error::Server {
            table: table.to_owned(),
            row_key: None,
            source: Box::new(status),
        })?;
    Ok(())
}
