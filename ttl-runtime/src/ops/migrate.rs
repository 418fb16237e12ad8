//! Copy a family whose cells carry real timestamps into a family managed by
//! a TTL policy (the rules are on [`migrate`]).
//!

use std::ops::ControlFlow;

use crate::model::proto::{mutate_rows_request::Entry, Mutation};
use chrono::{DateTime, TimeDelta, Utc};

use crate::client::admin::live_rules;
use crate::client::connection::Connection;
use crate::client::data::RawTable;
use crate::model::cell::Cell;
use crate::model::clock::Clock;
use crate::model::codec::CellCodec;
use crate::model::error::{self, Code, Error, FailedRow, MigrationProblem, Overflow, Result};
use crate::model::gc_rule::{describe_rule, gc_rule, rule_matches, GcRule};
use crate::model::mutation::set_cell;
use crate::model::policy::{from_micros, millis_floor, Expiry, Policy};
use crate::model::schema::Schema;

use super::scan::{FamilyPages, DEFAULT_PAGE_ROWS};
use super::shard::{CountOverflow, Part};

/// What to migrate and how.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigratePlan {
    /// The table.
    pub table: String,
    /// The source family (real timestamps). Only read.
    pub from: String,
    /// The target family, managed by `policy` (created with its rule when
    /// missing).
    pub to: String,
    /// The target's policy.
    pub policy: Policy,
    /// How long each cell lives after its real write time; `None`: the
    /// policy's default (required under one-second expiration).
    pub ttl: Option<TimeDelta>,
    /// The shadow column's qualifier in the target family.
    pub written_at: String,
    /// Rows per page (and per checkpoint).
    pub batch_rows: usize,
    /// One expiry per row (the default) or one per cell.
    pub expiry: RowExpiry,
    /// The struct that will read the target, when known
    /// ([`MigratePlan::with_schema`]): a target family that is one of its
    /// maps' is refused.
    pub schema: Option<&'static Schema>,
}

/// How a migrated row's cells get their expiries.
///
/// A row built by several writes has cells with different write times. Each
/// cell living `ttl` from its own write time (`PerCell`) keeps the most of
/// the source's meaning, but such a row then expires column by column: a
/// struct with a required column reads it as absent while the expired
/// column's cell is stored, and as incomplete (`Error::Decode` naming the
/// column) once it is collected, or when it had expired before the
/// migration and was not copied, since nothing then shows it existed
/// (`Table::add_markers` after the migration gives each row the marker
/// that proves its expiry). `PerRow` gives every column of a row the
/// expiry of its newest write, so the row reads back whole until it
/// expires as one, as a row this library writes does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RowExpiry {
    /// One expiry per row: the newest version of each column is copied, all
    /// living `ttl` from the row's newest write time (the default).
    #[default]
    PerRow,
    /// One expiry per cell: every version is copied, each living `ttl` from
    /// its own write time.
    PerCell,
}

impl MigratePlan {
    /// A plan with the policy's default TTL, the default shadow column and
    /// pages of 1,000 rows.
    #[must_use]
    pub fn new(table: &str, from: &str, to: &str, policy: Policy) -> Self {
        Self {
            table: table.to_owned(),
            from: from.to_owned(),
            to: to.to_owned(),
            policy,
            ttl: None,
            written_at: super::spec::DEFAULT_WRITTEN_AT.to_owned(),
            batch_rows: DEFAULT_PAGE_ROWS,
            expiry: RowExpiry::PerRow,
            schema: None,
        }
    }

    /// The target is read by the struct `schema` describes
    /// (`<T as BigtableRow>::SCHEMA`): [`migrate`] refuses a target family
    /// that holds one of its maps ([`Error::MigrateIntoMap`]), before
    /// anything is written.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use bigtable_ttl::ops::{parse_policy, MigratePlan};
    /// use bigtable_ttl::{BigtableRow, Error};
    ///
    /// #[derive(BigtableRow)]
    /// #[bigtable(table = "carts", family = "c")]
    /// #[ttl(default = "30d")]
    /// struct Cart {
    ///     #[bigtable(key)]
    ///     user: String,
    ///     #[bigtable(map, family = "items")]
    ///     items: BTreeMap<String, u64>,
    /// }
    ///
    /// let plan = MigratePlan::new("carts", "raw", "items", parse_policy("default=30d").unwrap())
    ///     .with_schema(Cart::SCHEMA);
    /// assert!(matches!(plan.check(), Err(Error::MigrateIntoMap { .. })));
    /// ```
    #[must_use]
    pub fn with_schema(mut self, schema: &'static Schema) -> Self {
        self.schema = Some(schema);
        self
    }

    /// What can be told of the plan without a server: distinct families,
    /// a usable TTL, and a target that is not a map's family.
    ///
    /// # Errors
    /// [`Error::Migration`], [`Error::MigrateIntoMap`],
    /// [`Error::NonPositiveTtl`].
    pub fn check(&self) -> Result<()> {
        if self.from == self.to {
            return Err(self.error(MigrationProblem::SameFamily));
        }
        if let Some(map) = self
            .schema
            .and_then(|s| s.maps.iter().find(|m| m.family == self.to))
        {
            return Err(Error::from(error::MigrateIntoMap {
                table: self.table.clone(),
                family: self.to.clone(),
                field: map.field.to_owned(),
            }));
        }
        self.effective_ttl().map(drop)
    }

    /// One expiry per row or per cell (see [`RowExpiry`]).
    #[must_use]
    pub fn with_expiry(mut self, expiry: RowExpiry) -> Self {
        self.expiry = expiry;
        self
    }

    /// Copied cells live `ttl` after their real write time (instead of the
    /// policy's default).
    #[must_use]
    pub fn with_ttl(mut self, ttl: TimeDelta) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The target's shadow column is `qualifier`.
    #[must_use]
    pub fn with_written_at(mut self, qualifier: impl Into<String>) -> Self {
        self.written_at = qualifier.into();
        self
    }

    /// `rows` rows per page and per checkpoint.
    #[must_use]
    pub fn with_batch_rows(mut self, rows: usize) -> Self {
        self.batch_rows = rows;
        self
    }

    /// The TTL each copied cell gets from its real write time.
    ///
    /// # Errors
    /// [`Error::Migration`] under one-second expiration without a TTL;
    /// [`Error::NonPositiveTtl`].
    pub fn effective_ttl(&self) -> Result<TimeDelta> {
        let ttl = match (self.ttl, self.policy) {
            (Some(ttl), _) => ttl,
            (None, Policy::DefaultTtl { ttl: default }) => default,
            (None, Policy::CellExpiry) => return Err(self.error(MigrationProblem::NoTtl)),
        };
        if ttl <= TimeDelta::zero() {
            return Err(Error::NonPositiveTtl { ttl });
        }
        Ok(ttl)
    }

    fn error(&self, problem: MigrationProblem) -> Error {
        Error::from(error::Migration {
            table: self.table.clone(),
            problem,
        })
    }
}

/// How far a migration got: where to resume and what was done so far
/// (running totals across resumed runs), in which part of the key space.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Checkpoint {
    /// The project and instance the migration copies in, as
    /// [`Connection::project`] and [`Connection::instance`] name them: set
    /// by [`migrate`], which refuses to resume a checkpoint of another
    /// instance. `None`: not yet bound to one (a fresh checkpoint, or a
    /// file written before they were recorded).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub project: Option<String>,
    /// See [`Checkpoint::project`].
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub instance: Option<String>,
    /// The last source row fully copied; resume after it. `None`: from the
    /// start. It lies within `part`, or the checkpoint is refused.
    #[cfg_attr(feature = "serde", serde(flatten, with = "super::files::last_row_key"))]
    pub last_row_key: Option<Vec<u8>>,
    /// Source rows read.
    #[cfg_attr(feature = "serde", serde(default))]
    pub rows_read: u64,
    /// Rows written to the target (with at least one live cell).
    #[cfg_attr(feature = "serde", serde(default))]
    pub rows_copied: u64,
    /// Cells written to the target (shadow versions not counted).
    #[cfg_attr(feature = "serde", serde(default))]
    pub cells_copied: u64,
    /// Source cells skipped because they already expired under the policy.
    #[cfg_attr(feature = "serde", serde(default))]
    pub cells_skipped_expired: u64,
    /// Source rows skipped because every cell had expired.
    #[cfg_attr(feature = "serde", serde(default))]
    pub rows_skipped_expired: u64,
    /// The part of the key space this migration copies (the whole table
    /// unless made by [`Checkpoint::for_part`]). Kept across resumes, so a
    /// resumed shard keeps its range even if the table's samples changed.
    /// In a file, `shard`, absent for the whole table.
    #[cfg_attr(
        feature = "serde",
        serde(
            rename = "shard",
            default,
            skip_serializing_if = "Part::is_whole",
            deserialize_with = "super::files::shard::deserialize"
        )
    )]
    pub part: Part,
}

impl Checkpoint {
    /// The start of a migration of `part` only: one shard of a sharded
    /// migration (see [`super::plan_parts`]); pass it to [`migrate`] as
    /// `resume`.
    #[must_use]
    pub fn for_part(part: Part) -> Self {
        Self {
            part,
            ..Self::default()
        }
    }

    /// Whether a migration connected to `project`/`instance` may resume
    /// from this checkpoint: taken in that instance (or in none recorded),
    /// its last row within its part.
    fn check_resume(
        &self,
        project: &str,
        instance: &str,
    ) -> std::result::Result<(), MigrationProblem> {
        let path = |p: &str, i: &str| format!("projects/{p}/instances/{i}");
        if let (Some(p), Some(i)) = (&self.project, &self.instance) {
            if (p.as_str(), i.as_str()) != (project, instance) {
                return Err(MigrationProblem::OtherInstance {
                    checkpoint: path(p, i),
                    connection: path(project, instance),
                });
            }
        }
        match &self.last_row_key {
            Some(key) if !self.part.contains(key) => Err(MigrationProblem::CheckpointOutsidePart {
                last_row_key: key.clone(),
                part: part_text(&self.part),
                past: key.as_slice() >= self.part.start.as_slice(),
            }),
            _ => Ok(()),
        }
    }
}

/// `I/N ["start", "end")`, keys escaped.
fn part_text(part: &Part) -> String {
    let end = part
        .end
        .as_deref()
        .map_or_else(|| "end".to_owned(), |k| format!("\"{}\"", k.escape_ascii()));
    format!(
        "{} [\"{}\", {end})",
        part.label(),
        part.start.escape_ascii()
    )
}

/// The end-of-migration check: counts read back, at one "now".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[non_exhaustive]
pub struct Verification {
    /// Rows of the source family.
    pub source_rows: u64,
    /// Cells of the source family.
    pub source_cells: u64,
    /// Source rows with a cell still alive under the policy: rows the target must hold.
    pub expected_rows: u64,
    /// Source cells still alive under the policy: cells the target must hold.
    pub expected_cells: u64,
    /// Rows of the target with a live cell other than the shadow column.
    pub target_rows: u64,
    /// Live cells of the target other than the shadow column.
    pub target_cells: u64,
}

impl Verification {
    /// Whether the target holds exactly what the source implies.
    #[must_use]
    pub fn matches(&self) -> bool {
        self.expected_rows == self.target_rows && self.expected_cells == self.target_cells
    }

    /// Add `other`, the verification of other rows (another part of a
    /// sharded migration): every count summed. A count that would pass
    /// `u64::MAX` stays there; [`Verification::try_merge`] refuses it.
    pub fn merge(&mut self, other: &Verification) {
        let _ = self.merge_by(other, |a, b, _| Ok(a.saturating_add(b)));
    }

    /// [`Verification::merge`], or which count would pass `u64::MAX` (a
    /// corrupt or crafted report); `self` is unchanged then.
    ///
    /// # Errors
    /// [`CountOverflow`] naming the count.
    pub fn try_merge(&mut self, other: &Verification) -> std::result::Result<(), CountOverflow> {
        let mut sum = *self;
        sum.merge_by(other, super::shard::add)?;
        *self = sum;
        Ok(())
    }

    fn merge_by(
        &mut self,
        other: &Verification,
        add: impl Fn(u64, u64, &'static str) -> std::result::Result<u64, CountOverflow>,
    ) -> std::result::Result<(), CountOverflow> {
        self.source_rows = add(self.source_rows, other.source_rows, "source_rows")?;
        self.source_cells = add(self.source_cells, other.source_cells, "source_cells")?;
        self.expected_rows = add(self.expected_rows, other.expected_rows, "expected_rows")?;
        self.expected_cells = add(self.expected_cells, other.expected_cells, "expected_cells")?;
        self.target_rows = add(self.target_rows, other.target_rows, "target_rows")?;
        self.target_cells = add(self.target_cells, other.target_cells, "target_cells")?;
        Ok(())
    }
}

/// A finished migration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrateReport {
    /// The totals.
    pub checkpoint: Checkpoint,
    /// The count check.
    pub verification: Verification,
}

/// How [`migrate`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrateStatus {
    /// Every row copied and verified.
    Done(MigrateReport),
    /// The caller stopped it after a page: resume from this checkpoint.
    Stopped(Checkpoint),
}

/// The target mutations for one source row. Pure.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub(crate) struct RowPlan {
    /// `SetCell`s for the target family (data cells, then shadow versions).
    pub(crate) mutations: Vec<Mutation>,
    /// Data cells copied.
    pub(crate) copied: u64,
    /// Cells skipped as already expired.
    pub(crate) skipped: u64,
}

/// Plan the copy of one row's source cells at `now` (see the [module
/// documentation of [`migrate`] for the rules). Pure.
///
/// # Errors
/// [`Error::Migration`] when the source holds the shadow column's qualifier;
/// timestamp errors for absurd timestamps.
pub(crate) fn plan_row(
    plan: &MigratePlan,
    ttl: TimeDelta,
    cells: &[Cell],
    now: DateTime<Utc>,
) -> Result<RowPlan> {
    let source: Vec<&Cell> = cells.iter().filter(|c| c.family == plan.from).collect();
    if source
        .iter()
        .any(|c| c.qualifier == plan.written_at.as_bytes())
    {
        return Err(plan.error(MigrationProblem::ShadowColumnTaken {
            family: plan.from.clone(),
            qualifier: plan.written_at.clone(),
        }));
    }
    let mut out = RowPlan::default();
    // The newest target timestamp and the write time it stands for: the
    // one shadow version of this row write.
    let mut shadow: Option<(i64, DateTime<Utc>)> = None;
    match plan.expiry {
        RowExpiry::PerRow => {
            let Some(newest) = source.iter().map(|c| c.timestamp_micros).max() else {
                return Ok(out);
            };
            let written = real_time(newest)?;
            let Some(ts) = target_timestamp(plan.policy, written, ttl, now)? else {
                out.skipped = source.len() as u64;
                return Ok(out);
            };
            for cell in newest_per_column(&source) {
                out.mutations
                    .push(set_cell(&plan.to, &cell.qualifier, ts, cell.value.clone()));
                out.copied += 1;
            }
            shadow = Some((ts, written));
        }
        RowExpiry::PerCell => {
            for cell in &source {
                let written = real_time(cell.timestamp_micros)?;
                let Some(ts) = target_timestamp(plan.policy, written, ttl, now)? else {
                    out.skipped += 1;
                    continue;
                };
                out.mutations
                    .push(set_cell(&plan.to, &cell.qualifier, ts, cell.value.clone()));
                out.copied += 1;
                if shadow.is_none_or(|(newest, _)| ts > newest) {
                    shadow = Some((ts, written));
                }
            }
        }
    }
    if let Some((ts, written)) = shadow {
        let value = written.encode().map_err(|source| {
            Error::from(error::Encode {
                field: "written_at",
                source,
            })
        })?;
        out.mutations
            .push(set_cell(&plan.to, plan.written_at.as_bytes(), ts, value));
    }
    Ok(out)
}

/// The newest version of each column of `cells`, in column order.
fn newest_per_column<'c>(cells: &[&'c Cell]) -> Vec<&'c Cell> {
    let mut newest: std::collections::BTreeMap<&[u8], &Cell> = std::collections::BTreeMap::new();
    for cell in cells {
        newest
            .entry(cell.qualifier.as_slice())
            .and_modify(|kept| {
                if cell.timestamp_micros > kept.timestamp_micros {
                    *kept = cell;
                }
            })
            .or_insert(cell);
    }
    newest.into_values().collect()
}

/// A source cell's timestamp as the write time, to the millisecond.
fn real_time(timestamp_micros: i64) -> Result<DateTime<Utc>> {
    from_micros(millis_floor(from_micros(timestamp_micros)?)?)
}

/// The target timestamp of a cell written at `written` living `ttl`, or
/// `None` when it has already expired at `now` (`written + ttl <= now`).
fn target_timestamp(
    policy: Policy,
    written: DateTime<Utc>,
    ttl: TimeDelta,
    now: DateTime<Utc>,
) -> Result<Option<i64>> {
    let expiry = written.checked_add_signed(ttl).ok_or_else(|| {
        Error::from(error::ExpiryOutOfRange {
            overflow: Overflow::Sum {
                micros: written.timestamp_micros(),
                by: ttl,
            },
        })
    })?;
    if millis_floor(expiry)? <= millis_floor(now)? {
        return Ok(None);
    }
    policy.cell_timestamp(written, Expiry::Ttl(ttl)).map(Some)
}

/// Check the plan against the live table: distinct families, a source that
/// exists, a target with the policy's rule (created when missing).
async fn prepare(conn: &Connection, plan: &MigratePlan) -> Result<()> {
    plan.check()?;
    let rules = live_rules(conn, &plan.table).await?;
    if !rules.contains_key(&plan.from) {
        return Err(plan.error(MigrationProblem::NoSourceFamily {
            family: plan.from.clone(),
        }));
    }
    let expected = gc_rule(plan.policy.gc_max_age());
    match rules.get(&plan.to) {
        None => {
            match super::apply::set_gc_rule(conn, &plan.table, &plan.to, true, &expected).await {
                // Another shard of the same migration created it first:
                // check its rule like any existing family's.
                Err(Error::Server(e)) if e.code == Code::AlreadyExists => {
                    check_target_rule(conn, plan, &expected).await
                }
                other => other,
            }
        }
        Some(rule) if rule_matches(rule, &expected) => Ok(()),
        Some(rule) => Err(plan.error(MigrationProblem::TargetRule {
            family: plan.to.clone(),
            live: describe_rule(rule),
            expected: describe_rule(&expected),
        })),
    }
}

/// The target family, created by someone else meanwhile, has the policy's rule.
async fn check_target_rule(conn: &Connection, plan: &MigratePlan, expected: &GcRule) -> Result<()> {
    match live_rules(conn, &plan.table).await?.get(&plan.to) {
        Some(rule) if rule_matches(rule, expected) => Ok(()),
        other => Err(plan.error(MigrationProblem::TargetRule {
            family: plan.to.clone(),
            live: other.map_or_else(|| "none".to_owned(), describe_rule),
            expected: describe_rule(expected),
        })),
    }
}

/// Copy `plan.from` into `plan.to` (see below),
/// from the start or after `resume`'s row. After each page `on_batch` gets
/// the checkpoint (write it somewhere) and returns whether to go on; on
/// [`ControlFlow::Break`] the migration stops there with
/// [`MigrateStatus::Stopped`]. Once every row is copied the counts are
/// [verified](verify) at the clock's "now".
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use std::ops::ControlFlow;
/// use bigtable_ttl::ops::{migrate, parse_policy, MigratePlan, MigrateStatus};
/// use bigtable_ttl::Clock;
///
/// let plan = MigratePlan::new("events", "raw", "ttl", parse_policy("default=30d")?);
/// match migrate(conn, &plan, None, &Clock::system(), |cp| {
///     println!("copied {} rows", cp.rows_copied);
///     ControlFlow::Continue(())
/// }).await? {
///     MigrateStatus::Done(report) => println!("{:?}", report.verification),
///     MigrateStatus::Stopped(cp) => println!("stopped after {:?}", cp.last_row_key),
/// }
/// # Ok(()) }
/// ```
///
/// # How cells are copied
///
/// Each source cell with real timestamp `W` becomes a cell of the target
/// family that expires at `W + TTL`, its timestamp computed by the policy's
/// rules ([`Policy::cell_timestamp`] with "now" = `W`): `W + TTL` itself
/// under one-second expiration, `W + (TTL - D)` under a default `D`. The real
/// time `W` (to the millisecond) goes into the shadow column (`written_at`
/// by default), one version per distinct new timestamp, so every copied cell
/// finds its write time in the shadow version with the same timestamp, and a
/// typed reader of the newest version sees the newest write.
///
/// **Cells already expired under the policy** (`W + TTL` at or before now)
/// are skipped and counted, not copied: written, they would be invisible to
/// every reader and deleted at the next compaction, and under one-second
/// expiration the write would look like the very mistake the library
/// prevents. A row all of whose cells expired is not created in the target.
///
/// The source family is only read, never changed. Rows are copied a page at
/// a time in key order; after each page the caller gets a [`Checkpoint`]
/// (the last row key copied and the running counts) and decides whether to
/// go on, so an interrupted migration resumes after that key. Copying a row
/// twice is harmless: the same cells with the same timestamps overwrite
/// themselves. At the end the row and cell counts of the target are checked
/// against the source's ([`verify`]).
///
/// # Errors
/// [`Error::Migration`] for an unusable plan or a failed verification;
/// [`Error::TableNotFound`]; [`Error::Server`] when a read or a write fails
/// (resume from the last checkpoint).
pub async fn migrate(
    conn: &Connection,
    plan: &MigratePlan,
    resume: Option<Checkpoint>,
    clock: &Clock,
    mut on_batch: impl FnMut(&Checkpoint) -> ControlFlow<()>,
) -> Result<MigrateStatus> {
    let ttl = plan.effective_ttl()?;
    let mut checkpoint = resume.unwrap_or_default();
    checkpoint
        .check_resume(conn.project(), conn.instance())
        .map_err(|problem| plan.error(problem))?;
    checkpoint.project = Some(conn.project().to_owned());
    checkpoint.instance = Some(conn.instance().to_owned());
    prepare(conn, plan).await?;
    let target = RawTable::new(conn, &plan.table);
    let mut pages = FamilyPages::new(conn, &plan.table, &plan.from)
        .part(&checkpoint.part)
        .after(checkpoint.last_row_key.clone())
        .page_rows(plan.batch_rows);
    while let Some(page) = pages.next_page().await? {
        let now = clock.now();
        let mut entries = Vec::with_capacity(page.len());
        let mut last = None;
        for (key, cells) in page {
            let row = plan_row(plan, ttl, &cells, now)?;
            checkpoint.rows_read += 1;
            checkpoint.cells_skipped_expired += row.skipped;
            if row.copied == 0 {
                checkpoint.rows_skipped_expired += 1;
            } else {
                checkpoint.rows_copied += 1;
                checkpoint.cells_copied += row.copied;
                entries.push(Entry {
                    row_key: key.clone(),
                    mutations: row.mutations,
                    ..Entry::default()
                });
            }
            last = Some(key);
        }
        write_all(&target, entries).await?;
        checkpoint.last_row_key = last;
        if on_batch(&checkpoint).is_break() {
            return Ok(MigrateStatus::Stopped(checkpoint));
        }
    }
    let verification = verify_part(conn, plan, &checkpoint.part, clock.now()).await?;
    if !verification.matches() {
        return Err(plan.error(MigrationProblem::Verification {
            expected_rows: verification.expected_rows,
            expected_cells: verification.expected_cells,
            target_rows: verification.target_rows,
            target_cells: verification.target_cells,
        }));
    }
    Ok(MigrateStatus::Done(MigrateReport {
        checkpoint,
        verification,
    }))
}

/// Write `entries` through the raw layer's `MutateRows` (each entry retried
/// only when idempotent), every row not surely written named.
///
/// # Errors
/// [`Error::PartialWrite`]; [`Error::Server`] when the request failed as a
/// whole and no entry was answered.
async fn write_all(table: &RawTable, entries: Vec<Entry>) -> Result<()> {
    let results = table.mutate_rows_wire(entries).await?;
    let written = results.iter().filter(|r| r.is_ok()).count();
    let failed: Vec<FailedRow> = results
        .into_iter()
        .filter_map(std::result::Result::err)
        .map(|e| FailedRow::new(e.row_key, e.answered.then_some(e.code), e.message))
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(Error::from(error::PartialWrite {
        table: table.name().to_owned(),
        written,
        failed,
    }))
}

/// Count, at `now`, the source cells (and rows) alive under the plan's
/// policy once migrated, and the live cells (and rows) of the target other
/// than the shadow column. Both sides judged at the same "now", so cells
/// expiring during the migration do not make a difference.
///
/// # Errors
/// [`Error::Migration`] without a usable TTL; [`Error::Server`].
pub async fn verify(
    conn: &Connection,
    plan: &MigratePlan,
    now: DateTime<Utc>,
) -> Result<Verification> {
    verify_part(conn, plan, &Part::whole(), now).await
}

/// [`verify`] for the rows of `part` only: one shard's verification; the
/// shards' [merged](Verification::merge) are the whole table's.
///
/// # Errors
/// As [`verify`].
pub async fn verify_part(
    conn: &Connection,
    plan: &MigratePlan,
    part: &Part,
    now: DateTime<Utc>,
) -> Result<Verification> {
    let ttl = plan.effective_ttl()?;
    let mut v = Verification::default();
    let mut source = FamilyPages::new(conn, &plan.table, &plan.from)
        .part(part)
        .page_rows(plan.batch_rows)
        .strip_values();
    while let Some(page) = source.next_page().await? {
        for (_, cells) in page {
            v.source_rows += 1;
            v.source_cells += cells.len() as u64;
            let alive = expected_cells(plan, ttl, &cells, now)?;
            v.expected_cells += alive;
            v.expected_rows += u64::from(alive > 0);
        }
    }
    let mut target = FamilyPages::new(conn, &plan.table, &plan.to)
        .part(part)
        .page_rows(plan.batch_rows)
        .strip_values();
    while let Some(page) = target.next_page().await? {
        for (_, cells) in page {
            let alive = cells
                .iter()
                .filter(|c| c.qualifier != plan.written_at.as_bytes())
                .filter(|c| plan.policy.is_visible(c.timestamp_micros, now))
                .count() as u64;
            v.target_cells += alive;
            v.target_rows += u64::from(alive > 0);
        }
    }
    Ok(v)
}

/// How many of a source row's `cells` the migration leaves alive in the
/// target at `now`: what [`verify`] expects to find there.
fn expected_cells(
    plan: &MigratePlan,
    ttl: TimeDelta,
    cells: &[Cell],
    now: DateTime<Utc>,
) -> Result<u64> {
    let source: Vec<&Cell> = cells.iter().filter(|c| c.family == plan.from).collect();
    let alive = |timestamp_micros: i64| -> Result<bool> {
        let written = real_time(timestamp_micros)?;
        Ok(target_timestamp(plan.policy, written, ttl, now)?.is_some())
    };
    match plan.expiry {
        RowExpiry::PerRow => match source.iter().map(|c| c.timestamp_micros).max() {
            Some(newest) if alive(newest)? => Ok(newest_per_column(&source).len() as u64),
            _ => Ok(0),
        },
        RowExpiry::PerCell => {
            let mut count = 0;
            for cell in &source {
                count += u64::from(alive(cell.timestamp_micros)?);
            }
            Ok(count)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::mutation;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
    }

    fn cell(q: &str, t: DateTime<Utc>) -> Cell {
        Cell {
            family: "raw".into(),
            qualifier: q.as_bytes().to_vec(),
            value: q.as_bytes().to_vec(),
            timestamp_micros: t.timestamp_micros(),
        }
    }

    fn sets(plan: &RowPlan) -> Vec<(String, i64, Vec<u8>)> {
        plan.mutations
            .iter()
            .map(|m| match &m.mutation {
                Some(mutation::Mutation::SetCell(c)) => (
                    format!(
                        "{}:{}",
                        c.family_name,
                        String::from_utf8_lossy(&c.column_qualifier)
                    ),
                    c.timestamp_micros,
                    c.value.clone(),
                ),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn one_second_cells_get_their_expiry_as_timestamp() {
        let plan =
            MigratePlan::new("t", "raw", "ttl", Policy::CellExpiry).with_expiry(RowExpiry::PerCell);
        assert!(plan.effective_ttl().is_err());
        let w1 = now() - TimeDelta::hours(1) + TimeDelta::microseconds(1_234);
        let w2 = now() - TimeDelta::days(10);
        let row = plan_row(
            &plan,
            TimeDelta::days(2),
            &[cell("a", w1), cell("b", w2)],
            now(),
        )
        .unwrap();
        assert_eq!((row.copied, row.skipped), (1, 1));
        let w1_ms = DateTime::from_timestamp_millis(w1.timestamp_millis()).unwrap();
        let expiry = (w1_ms + TimeDelta::days(2)).timestamp_micros();
        assert_eq!(
            sets(&row),
            vec![
                ("ttl:a".to_owned(), expiry, b"a".to_vec()),
                ("ttl:written_at".to_owned(), expiry, w1_ms.encode().unwrap()),
            ]
        );
    }

    #[test]
    fn default_cells_keep_their_real_timestamp_under_the_default_ttl() {
        let plan = MigratePlan::new("t", "raw", "ttl", Policy::default_ttl(TimeDelta::days(2)));
        let ttl = plan.effective_ttl().unwrap();
        let w = now() - TimeDelta::hours(5);
        let row = plan_row(&plan, ttl, &[cell("a", w), cell("b", w)], now()).unwrap();
        let got = sets(&row);
        assert_eq!(got.len(), 3, "two cells, one shadow version: {got:?}");
        assert!(got.iter().all(|(_, ts, _)| *ts == w.timestamp_micros()));
        // A shorter TTL moves the timestamp back by (default - ttl).
        let row = plan_row(&plan, TimeDelta::hours(6), &[cell("a", w)], now()).unwrap();
        assert_eq!(
            sets(&row)[0].1,
            (w - TimeDelta::hours(42)).timestamp_micros()
        );
        let row = plan_row(&plan, TimeDelta::hours(4), &[cell("a", w)], now()).unwrap();
        assert_eq!((row.copied, row.skipped, row.mutations.len()), (0, 1, 0));
    }

    #[test]
    fn per_row_every_column_lives_from_the_newest_write_with_one_shadow_version() {
        // `url` written five days ago (twice), `user` today: under a 2 d
        // default with a 1 d TTL, per cell `url` would be skipped.
        let plan = MigratePlan::new("t", "raw", "ttl", Policy::default_ttl(TimeDelta::days(2)));
        assert_eq!(plan.expiry, RowExpiry::PerRow);
        let old = now() - TimeDelta::days(5);
        let today = now() - TimeDelta::minutes(3);
        let mut older_url = cell("url", old - TimeDelta::hours(1));
        older_url.value = b"older".to_vec();
        let cells = [cell("url", old), older_url, cell("user", today)];
        let ttl = TimeDelta::days(1);
        let row = plan_row(&plan, ttl, &cells, now()).unwrap();
        assert_eq!((row.copied, row.skipped), (2, 0));
        let ts = (today - TimeDelta::days(1)).timestamp_micros();
        let today_ms = DateTime::from_timestamp_millis(today.timestamp_millis()).unwrap();
        assert_eq!(
            sets(&row),
            vec![
                ("ttl:url".to_owned(), ts, b"url".to_vec()),
                ("ttl:user".to_owned(), ts, b"user".to_vec()),
                ("ttl:written_at".to_owned(), ts, today_ms.encode().unwrap()),
            ]
        );
        assert_eq!(expected_cells(&plan, ttl, &cells, now()).unwrap(), 2);
        // The whole row expired: nothing copied, every cell skipped.
        let stale = [cell("url", old), cell("user", old)];
        let row = plan_row(&plan, ttl, &stale, now()).unwrap();
        assert_eq!((row.copied, row.skipped, row.mutations.len()), (0, 2, 0));
        assert_eq!(expected_cells(&plan, ttl, &stale, now()).unwrap(), 0);
    }

    #[test]
    fn per_cell_a_row_write_has_one_shadow_version() {
        let plan = MigratePlan::new("t", "raw", "ttl", Policy::default_ttl(TimeDelta::days(2)))
            .with_expiry(RowExpiry::PerCell);
        let w = now() - TimeDelta::hours(5);
        let cells = [cell("a", w), cell("b", w - TimeDelta::milliseconds(1))];
        let row = plan_row(&plan, TimeDelta::days(1), &cells, now()).unwrap();
        let shadows: Vec<_> = sets(&row)
            .into_iter()
            .filter(|(column, _, _)| column == "ttl:written_at")
            .collect();
        assert_eq!(shadows.len(), 1, "{shadows:?}");
        assert_eq!(shadows[0].1, (w - TimeDelta::days(1)).timestamp_micros());
    }

    #[test]
    fn a_checkpoint_resumes_only_in_its_instance_and_within_its_part() {
        let part = Part::new(1, 3, b"d".to_vec(), Some(b"m".to_vec()));
        let mut cp = Checkpoint::for_part(part);
        cp.check_resume("p", "i").unwrap();
        cp.last_row_key = Some(b"g".to_vec());
        cp.check_resume("p", "i").unwrap();
        // Files written before instances were recorded resume anywhere.
        cp.project = Some("p".to_owned());
        cp.instance = Some("i".to_owned());
        cp.check_resume("p", "i").unwrap();
        let other = cp.check_resume("p", "other").unwrap_err();
        assert!(matches!(other, MigrationProblem::OtherInstance { .. }));
        let text = other.to_string();
        assert!(
            text.contains("taken in `projects/p/instances/i`")
                && text.contains("connected to `projects/p/instances/other`")
                && text.contains("with a Connection to `projects/p/instances/i`"),
            "{text}"
        );
        for (key, said) in [(&b"a"[..], "before"), (b"m", "past"), (b"z\xff", "past")] {
            cp.last_row_key = Some(key.to_vec());
            let text = cp.check_resume("p", "i").unwrap_err().to_string();
            assert!(
                text.contains(&format!("lies {said} its part 1/3 [\"d\", \"m\")"))
                    && text.contains("without a checkpoint"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_source_column_named_like_the_shadow_is_refused() {
        let plan = MigratePlan::new("t", "raw", "ttl", Policy::default_ttl(TimeDelta::days(2)));
        let err = plan_row(
            &plan,
            TimeDelta::days(1),
            &[cell("written_at", now())],
            now(),
        )
        .unwrap_err();
        assert!(matches!(err, Error::Migration { .. }), "{err}");
    }
}
