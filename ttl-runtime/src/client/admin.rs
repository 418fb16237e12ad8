//! Schema management: create the table and its families, set their GC rules,
//! and detect drift between a struct's [`Schema`] and the live table.
//!
//! The pure part ([`gc_rule`], [`describe_rule`], [`rule_matches`]) works on
//! the library's own [`GcRule`] and needs no server; the I/O
//! part ([`ensure_schema`], [`verify_schema`], [`live_rules`]) goes through the
//! [`Connection`]'s admin client.
//!
//! # Families are always created through `ModifyColumnFamilies`
//!
//! [`ensure_schema`] creates a missing table *without* families and then adds
//! every family with `ModifyColumnFamilies`. Cloud Bigtable does not care, but
//! Google's emulator only garbage-collects families created or modified that
//! way; families created inside `CreateTable` keep every cell forever there,
//! and tests that watch expiry for real would wait in vain.
//!
//! # What counts as the expected rule
//!
//! A family declared by a schema needs `max_age = policy.gc_max_age()` and
//! nothing else. A live rule matches (see [`rule_matches`]) when it is
//!
//! * exactly `max_age = D`, durations compared by value (so a non-normalised
//!   `0s + 1e9 ns` equals `1s`), or
//! * a `union` or an `intersection` with a single member that matches
//!   (recursively): one rule combined with nothing is that rule.
//!
//! Anything else is drift: another age, a `max_versions` limit, no rule at all
//! (`none`, cells kept forever), or a combination of several rules, even one
//! that happens to behave the same. Families the schema does not declare are
//! ignored: other structs may share the table.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Instant;

use crate::model::proto::row_filter::Filter;
use chrono::TimeDelta;
use futures_util::TryStreamExt as _;

use crate::client::connection::AdminClient;
use crate::client::connection::Connection;
use crate::client::data::{RawTable, ReadRows, Row, RowFilter};
use crate::client::failure::status_error;
use crate::client::read::ReadOptions;
use crate::client::retry::retryable_status;
use crate::model::error::{self, Code as ErrorCode, Error, Result};
use crate::model::filter::{chain, filter, only_family};
use crate::model::schema::Schema;

/// GC rules and the pure functions on them ([`gc_rule`], [`describe_rule`],
/// [`rule_matches`]).
pub use crate::model::gc_rule::{describe_rule, gc_rule, rule_matches, GcRule};

use crate::model::gc_rule::proto;
use proto::{
    modify_column_families_request::{modification::Mod, Modification},
    table::View,
    ColumnFamily, CreateTableRequest, GetTableRequest, ModifyColumnFamiliesRequest, Table,
};

/// Options of [`ensure_schema`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnsureOptions {
    /// Switch a family that holds cells to `max_age = 1s` anyway. Every cell
    /// whose timestamp is more than a second in the past (that is, every cell
    /// written with an ordinary timestamp) is then deleted at the next
    /// compaction.
    pub force_one_second: bool,
}

impl EnsureOptions {
    /// The default: refuse to switch a family holding cells to one-second
    /// expiration.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Switch such a family anyway (its cells with ordinary timestamps are
    /// then deleted at the next compaction).
    #[must_use]
    pub fn with_force_one_second(mut self, force: bool) -> Self {
        self.force_one_second = force;
        self
    }
}

/// One family [`ensure_schema`] created or changed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FamilyChange {
    /// The family.
    pub family: String,
    /// Its rule before; `None` when the family was created.
    pub before: Option<GcRule>,
    /// Its rule now.
    pub after: GcRule,
}

impl fmt::Display for FamilyChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.before {
            None => write!(
                f,
                "family `{}`: created with {}",
                self.family,
                describe_rule(&self.after)
            ),
            Some(before) => write!(
                f,
                "family `{}`: {} -> {}",
                self.family,
                describe_rule(before),
                describe_rule(&self.after)
            ),
        }
    }
}

/// What [`ensure_schema`] did. Its `Display` is one line per change, for
/// printing.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SchemaReport {
    /// The table.
    pub table: String,
    /// Whether the table was created.
    pub table_created: bool,
    /// The families created or updated, in schema order.
    pub families: Vec<FamilyChange>,
    /// Families of the live table the schema does not declare (left alone),
    /// in name order.
    pub other_families: Vec<String>,
}

impl SchemaReport {
    /// Whether nothing had to be done: the table was already as declared.
    #[must_use]
    pub fn is_unchanged(&self) -> bool {
        !self.table_created && self.families.is_empty()
    }
}

impl fmt::Display for SchemaReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_unchanged() {
            return write!(f, "table `{}`: up to date", self.table);
        }
        if self.table_created {
            write!(f, "table `{}`: created", self.table)?;
        } else {
            write!(f, "table `{}`: updated", self.table)?;
        }
        for change in &self.families {
            write!(f, "\n  {change}")?;
        }
        Ok(())
    }
}

/// Make the live table match `schema`: create the table if it is missing,
/// create missing families and update families whose rule does not match
/// (see the [module documentation](self)) to `max_age = policy.gc_max_age()`.
/// Families the schema does not declare are left alone. Safe to call on every
/// start: a second call finds nothing to do.
///
/// Switching an existing family to a one-second rule (`max_age` of at most
/// 1s) would delete every cell it holds with an ordinary timestamp, so unless
/// [`EnsureOptions::force_one_second`] is set, a family that holds any cell is
/// refused with [`Error::WouldDeleteData`]. All checks run before anything is
/// changed: a refused call modifies nothing. The changes themselves are sent
/// in one `ModifyColumnFamilies` request.
///
/// `table` is the table's id (usually `schema.table`; tests may prefix it).
///
/// ```no_run
/// # async fn run(schema: &bigtable_ttl::Schema) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::admin::{ensure_schema, EnsureOptions};
/// use bigtable_ttl::Connection;
///
/// let conn = Connection::connect("my-project", "my-instance").await?;
/// let report = ensure_schema(&conn, schema.table, schema, EnsureOptions::default()).await?;
/// println!("{report}");
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::WouldDeleteData`] as above; [`Error::Server`] when Bigtable
/// rejects a request; [`Error::Connect`] when no access token can be had.
pub async fn ensure_schema(
    conn: &Connection,
    table: &str,
    schema: &Schema,
    options: EnsureOptions,
) -> Result<SchemaReport> {
    // Replicas starting at once may create the same family between our
    // read and our change: the loser's change fails as a whole with
    // ALREADY_EXISTS. Each round plans again from what is there now.
    const ROUNDS: usize = 5;
    // Every request of the call, rounds included, within one deadline.
    let deadline = conn.admin_retry().deadline_from_now();
    let mut table_created = false;
    let mut round = 0;
    loop {
        round += 1;
        let live = match get_table(conn, table, deadline).await? {
            Some(live) => live.column_families,
            None => match create_table(conn, table, deadline).await? {
                Created::Now => {
                    table_created = true;
                    HashMap::new()
                }
                // Someone else created it between our two calls.
                Created::AlreadyThere => {
                    get_table(conn, table, deadline)
                        .await?
                        .ok_or_else(|| {
                            Error::from(error::TableNotFound {
                                table: table.to_owned(),
                            })
                        })?
                        .column_families
                }
            },
        };
        let mut report = plan_families(table, schema, &live);
        report.table_created = table_created;
        if report.families.is_empty() {
            return Ok(report);
        }
        refuse_data_loss(conn, table, schema, &report, options, deadline).await?;
        let modifications = report
            .families
            .iter()
            .map(|change| set_rule(&change.family, change.before.is_none(), &change.after))
            .collect();
        match modify_families(conn, table, modifications, deadline).await {
            Ok(()) => {
                tracing::info!(table, changes = %report, "bigtable-ttl schema changed");
                return Ok(report);
            }
            Err(Error::Server(e)) if e.code == ErrorCode::AlreadyExists && round < ROUNDS => {
                tracing::debug!(
                    table,
                    round,
                    "families changed concurrently; planning again"
                );
            }
            Err(e) => return Err(e),
        }
    }
}

/// What `ensure_schema` would change: each family of `schema` missing from
/// `live` or with a rule that does not match.
fn plan_families(
    table: &str,
    schema: &Schema,
    live: &HashMap<String, ColumnFamily>,
) -> SchemaReport {
    let mut report = SchemaReport {
        table: table.to_owned(),
        other_families: undeclared(live, schema),
        ..SchemaReport::default()
    };
    let expected = gc_rule(schema.policy.gc_max_age());
    let mut seen: Vec<&str> = Vec::new();
    for &family in schema.families {
        if seen.contains(&family) {
            continue;
        }
        seen.push(family);
        match live.get(family) {
            None => report.families.push(FamilyChange {
                family: family.to_owned(),
                before: None,
                after: expected.clone(),
            }),
            Some(cf) => {
                let before = GcRule::from_proto(cf.gc_rule.as_ref());
                if !rule_matches(&before, &expected) {
                    report.families.push(FamilyChange {
                        family: family.to_owned(),
                        before: Some(before),
                        after: expected.clone(),
                    });
                }
            }
        }
    }
    report
}

/// [`Error::WouldDeleteData`] when `report` switches a family holding cells
/// to one-second expiration and `options` does not force it.
async fn refuse_data_loss(
    conn: &Connection,
    table: &str,
    schema: &Schema,
    report: &SchemaReport,
    options: EnsureOptions,
    deadline: Instant,
) -> Result<()> {
    if schema.policy.gc_max_age() > TimeDelta::seconds(1) {
        return Ok(());
    }
    if options.force_one_second {
        tracing::warn!(
            table,
            "forcing one-second expiration: cells with ordinary timestamps in the switched families will be deleted"
        );
        return Ok(());
    }
    for change in report.families.iter().filter(|c| c.before.is_some()) {
        if holds_cells(conn, table, &change.family, deadline).await? {
            return Err(Error::from(error::WouldDeleteData {
                table: table.to_owned(),
                family: change.family.clone(),
            }));
        }
    }
    Ok(())
}

/// The modification that creates (`create`) or updates `family` with `rule`
/// as its GC rule, and nothing else.
pub(crate) fn set_rule(family: &str, create: bool, rule: &GcRule) -> Modification {
    let family_spec = ColumnFamily {
        gc_rule: Some(rule.to_proto()),
        ..ColumnFamily::default()
    };
    Modification {
        id: family.to_owned(),
        r#mod: Some(if create {
            Mod::Create(family_spec)
        } else {
            Mod::Update(family_spec)
        }),
        // Empty mask: the GC rule only.
        update_mask: None,
    }
}

/// One `ModifyColumnFamilies` call on `table` (which also starts the
/// emulator's garbage collection, see the module documentation), by
/// `deadline`.
pub(crate) async fn modify_families(
    conn: &Connection,
    table: &str,
    modifications: Vec<Modification>,
    deadline: Instant,
) -> Result<()> {
    let request = ModifyColumnFamiliesRequest {
        name: conn.table_path(table),
        modifications,
        ignore_warnings: false,
    };
    admin_call(conn, table, request, deadline, |mut c, r| async move {
        c.modify_column_families(r).await
    })
    .await?;
    Ok(())
}

/// Check that the live table has every family of `schema` with a rule that
/// matches `max_age = policy.gc_max_age()` (see the [module
/// documentation](self) for what matches). Families the schema does not
/// declare are ignored.
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection, schema: &bigtable_ttl::Schema) {
/// match bigtable_ttl::admin::verify_schema(conn, schema.table, schema).await {
///     Ok(()) => {}
///     Err(e @ bigtable_ttl::Error::SchemaDrift { .. }) => eprintln!("{e}"),
///     Err(e) => panic!("{e}"),
/// }
/// # }
/// ```
///
/// # Errors
/// [`Error::TableNotFound`] when the table is missing; [`Error::SchemaDrift`]
/// naming the first family (in schema order) that is missing (live rule
/// `missing`) or has another rule, with the expected and the live rule in
/// words; [`Error::Server`] when Bigtable rejects the request.
pub async fn verify_schema(conn: &Connection, table: &str, schema: &Schema) -> Result<()> {
    verify_schema_families(conn, table, schema).await.map(drop)
}

/// [`verify_schema`], returning the live table's families the schema does
/// not declare, in name order.
pub(crate) async fn verify_schema_families(
    conn: &Connection,
    table: &str,
    schema: &Schema,
) -> Result<Vec<String>> {
    let deadline = conn.admin_retry().deadline_from_now();
    let live = get_table(conn, table, deadline)
        .await?
        .ok_or_else(|| {
            Error::from(error::TableNotFound {
                table: table.to_owned(),
            })
        })?
        .column_families;
    let expected = gc_rule(schema.policy.gc_max_age());
    for &family in schema.families {
        let drift = |live: String| {
            Error::from(error::SchemaDrift {
                table: table.to_owned(),
                family: family.to_owned(),
                expected: describe_rule(&expected),
                live,
            })
        };
        match live.get(family) {
            None => return Err(drift("missing".to_owned())),
            Some(cf) => {
                let rule = GcRule::from_proto(cf.gc_rule.as_ref());
                if !rule_matches(&rule, &expected) {
                    return Err(drift(describe_rule(&rule)));
                }
            }
        }
    }
    Ok(undeclared(&live, schema))
}

/// The families of `live` that `schema` does not declare, in name order.
fn undeclared<V>(live: &HashMap<String, V>, schema: &Schema) -> Vec<String> {
    let mut others: Vec<String> = live
        .keys()
        .filter(|family| !schema.families.contains(&family.as_str()))
        .cloned()
        .collect();
    others.sort();
    others
}

/// The policy of `family`'s live rule (`None`: no age rule), or
/// [`Error::FamilyNotFound`] listing the table's families: an audit of a
/// misspelt family would otherwise count no cells and find nothing to
/// delete.
pub(crate) async fn family_policy(
    conn: &Connection,
    table: &str,
    family: &str,
) -> Result<Option<crate::model::policy::Policy>> {
    let rules = live_rules(conn, table).await?;
    match rules.get(family) {
        Some(rule) => Ok(crate::model::gc_rule::policy_from_rule(rule)),
        None => Err(Error::from(error::FamilyNotFound {
            table: table.to_owned(),
            family: family.to_owned(),
            families: rules.into_keys().collect(),
        })),
    }
}

/// Every family of the live table with its GC rule (the empty rule, `none`,
/// for a family without one). For operators: print them with
/// [`describe_rule`].
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::admin::{describe_rule, live_rules};
///
/// for (family, rule) in live_rules(conn, "clicks").await? {
///     println!("{family}: {}", describe_rule(&rule));
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::TableNotFound`] when the table is missing; [`Error::Server`] when
/// Bigtable rejects the request.
pub async fn live_rules(conn: &Connection, table: &str) -> Result<BTreeMap<String, GcRule>> {
    live_rules_by(conn, table, conn.admin_retry().deadline_from_now()).await
}

/// [`live_rules`] by `deadline` (the admin policy's, or earlier: that of
/// the call it is a step of).
pub(crate) async fn live_rules_by(
    conn: &Connection,
    table: &str,
    deadline: Instant,
) -> Result<BTreeMap<String, GcRule>> {
    let live = get_table(conn, table, deadline).await?.ok_or_else(|| {
        Error::from(error::TableNotFound {
            table: table.to_owned(),
        })
    })?;
    Ok(live
        .column_families
        .into_iter()
        .map(|(family, cf)| (family, GcRule::from_proto(cf.gc_rule.as_ref())))
        .collect())
}

/// `GetTable` with the schema view; `None` when the table does not exist.
async fn get_table(conn: &Connection, table: &str, deadline: Instant) -> Result<Option<Table>> {
    let request = GetTableRequest {
        name: conn.table_path(table),
        view: View::SchemaView.into(),
    };
    match admin_call(conn, table, request, deadline, |mut c, r| async move {
        c.get_table(r).await
    })
    .await
    {
        Ok(live) => Ok(Some(live)),
        Err(Error::Server(e)) if e.code == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

enum Created {
    Now,
    AlreadyThere,
}

/// `CreateTable` without families (see the module documentation for why).
async fn create_table(conn: &Connection, table: &str, deadline: Instant) -> Result<Created> {
    let request = CreateTableRequest {
        parent: conn.instance_path(),
        table_id: table.to_owned(),
        table: Some(Table::default()),
        initial_splits: Vec::new(),
    };
    let created = admin_call(conn, table, request, deadline, |mut c, r| async move {
        c.create_table(r).await
    })
    .await;
    match created {
        Ok(_) => Ok(Created::Now),
        // Another caller created it, or our own retried attempt did.
        Err(Error::Server(e)) if e.code == ErrorCode::AlreadyExists => Ok(Created::AlreadyThere),
        Err(e) => Err(e),
    }
}

/// One admin call on `table`, each attempt bounded by the connection's
/// admin [`RetryPolicy`](crate::retry::RetryPolicy) (a `grpc-timeout` the
/// server sees, and a local timeout), retried while the status is worth it
/// and the policy allows, all of it by `deadline` (the call's, of which
/// this request is a step). Fetching the access token is part of the
/// attempt: a token provider that does not answer in time times the
/// attempt out like a server that does not.
///
/// Retrying is safe for what this module sends: a `GetTable` reads; a
/// `CreateTable` or `ModifyColumnFamilies` whose first attempt was applied
/// answers `ALREADY_EXISTS` the second time, which [`ensure_schema`] takes
/// as "someone did it" and plans again from the live table.
async fn admin_call<M, T, F, Fut>(
    conn: &Connection,
    table: &str,
    message: M,
    deadline: Instant,
    send: F,
) -> Result<T>
where
    M: Clone,
    F: Fn(AdminClient, tonic::Request<M>) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
{
    let mut budget = conn.admin_retry().start_within(Some(deadline));
    loop {
        if budget.expired() {
            let status = crate::wire::status::not_sent(
                "no time left for the admin call before the deadline",
            );
            return Err(status_error(table, None, status, Some(&budget)));
        }
        let timeout = budget.attempt_timeout();
        let until = tokio::time::Instant::now() + timeout;
        let status = match tokio::time::timeout_at(until, conn.admin_request(message.clone())).await
        {
            Err(_) => tonic::Status::deadline_exceeded(format!(
                "no access token for the admin API within {timeout:?}"
            )),
            Ok(request) => {
                let mut request = request?;
                request.set_timeout(until.saturating_duration_since(tokio::time::Instant::now()));
                match tokio::time::timeout_at(until, Box::pin(send(conn.admin_client(), request)))
                    .await
                {
                    Ok(Ok(response)) => {
                        conn.admin_answered();
                        return Ok(response.into_inner());
                    }
                    Ok(Err(status)) => conn.admin_failure(status),
                    Err(_) => crate::wire::status::no_answer_within(format!(
                        "no answer from the admin API within {timeout:?}"
                    )),
                }
            }
        };
        if !retryable_status(&status)
            || !budget
                .wait(&crate::client::retry::status_text(&status))
                .await
        {
            return Err(status_error(table, None, status, Some(&budget)));
        }
        tracing::debug!(table, %status, "retrying an admin call");
    }
}

/// Whether `family` holds any cell (expired or not): one row, one cell, no
/// value; read under the admin policy, by `deadline`.
async fn holds_cells(
    conn: &Connection,
    table: &str,
    family: &str,
    deadline: Instant,
) -> Result<bool> {
    let read = ReadRows::all()
        .limit(1)
        .filter(RowFilter::from_wire(chain(vec![
            only_family(family),
            filter(Filter::CellsPerRowLimitFilter(1)),
            filter(Filter::StripValueTransformer(true)),
        ])));
    let rows: Vec<Row> = RawTable::new(conn, table)
        .with_read_options(ReadOptions::default().with_retry(conn.admin_retry()))
        .within(Some(deadline))
        .read_rows(read)
        .try_collect()
        .await?;
    Ok(rows.iter().any(|row| !row.cells.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_print_one_line_per_change() {
        let mut report = SchemaReport {
            table: "clicks".to_owned(),
            ..SchemaReport::default()
        };
        assert!(report.is_unchanged());
        assert_eq!(report.to_string(), "table `clicks`: up to date");
        report.families.push(FamilyChange {
            family: "c".to_owned(),
            before: Some(gc_rule(TimeDelta::days(2))),
            after: gc_rule(TimeDelta::hours(1)),
        });
        report.families.push(FamilyChange {
            family: "d".to_owned(),
            before: None,
            after: gc_rule(TimeDelta::hours(1)),
        });
        assert_eq!(
            report.to_string(),
            "table `clicks`: updated\n  family `c`: max_age = 2d -> max_age = 1h\n  family `d`: created with max_age = 1h"
        );
    }
}
