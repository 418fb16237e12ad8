//! `bigtable-ttl audit`: count what a policy would do to a family, draw
//! when its cells expire, one shard at a time or whole, and merge the
//! shards' reports.

use std::io::Write;
use std::path::PathBuf;

use bigtable_ttl_runtime::ops::{
    self, parse_policy, policy_spec, Audit, AuditReport, AuditRequest,
};
use chrono::{DateTime, TimeDelta, Utc};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::chart::{self, ExpiryJson, Labeled};
use crate::exit;
use crate::files::FileError;
use crate::output::{instant, print_json, rule_of, shows_progress, span, Fallible, PartProgress};
use crate::shard::{check_shards, read_reports, PartJson, ShardArgs};
use crate::target::Target;

/// Count what a policy would do to a family: cells and rows it would
/// delete at once, real vs artificial timestamps, oldest and newest, and
/// when the cells expire under the live rule and under the policy.
/// Exit status 3 when it would delete data.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// The table.
    #[arg(required_unless_present = "merge")]
    table: Option<String>,
    /// The column family.
    #[arg(long, short, required_unless_present = "merge")]
    family: Option<String>,
    /// `one-second` or `default=DURATION`.
    #[arg(long, short, required_unless_present = "merge")]
    policy: Option<String>,
    #[command(flatten)]
    shard: ShardArgs,
    /// Combine the --json reports of every shard of a sharded audit into
    /// one report of the whole table (nothing is read from Bigtable).
    #[arg(long, value_name = "FILES", num_args = 1.., conflicts_with_all = ["table", "shard", "parts", "part", "cut"])]
    merge: Vec<PathBuf>,
    /// Also draw when the cells expire as an SVG file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

impl AuditArgs {
    /// The shard options, for the checks of the whole command line.
    pub(crate) fn shard(&self) -> &ShardArgs {
        &self.shard
    }
}

pub(crate) async fn exec(target: &Target, args: AuditArgs, out: &mut dyn Write) -> Fallible<i32> {
    let (report, merged) = if args.merge.is_empty() {
        (audit_part(target, &args).await?, 0)
    } else {
        (merge(&args.merge)?, args.merge.len())
    };
    if let Some(path) = &args.svg {
        let title = format!(
            "When the cells of `{}`, family `{}`, expire (from {})",
            report.table,
            report.family,
            instant(report.now)
        );
        chart::write_svg(path, &title, &charts(&report))?;
    }
    if args.json {
        print_json(out, &AuditJson::new(&report))?;
    } else {
        writeln!(out, "{report}")?;
        if !report.part.is_whole() {
            writeln!(out, "  shard:             {}", part_text(&report.part))?;
        }
        if merged > 0 {
            writeln!(out, "  merged:            {merged} shard reports")?;
        }
        chart::print_text(out, &charts(&report))?;
        writeln!(out, "{}", verdict(&report))?;
    }
    Ok(if report.would_delete_data() {
        exit::WOULD_DELETE
    } else {
        exit::OK
    })
}

/// Audit the table, or this process's shard of it.
async fn audit_part(target: &Target, args: &AuditArgs) -> Fallible<AuditReport> {
    // Parse what needs no server first: a typo fails before connecting.
    let (Some(table), Some(family), Some(policy)) = (&args.table, &args.family, &args.policy)
    else {
        return Err("audit needs TABLE, --family and --policy (or --merge FILES)".into());
    };
    let policy = parse_policy(policy)?;
    args.shard.shard()?;
    let conn = target.connect().await?;
    let part = args.shard.resolve(&conn, table).await?;
    let samples = if shows_progress(args.json) {
        ops::key_samples(&conn, table).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let progress = PartProgress::new(args.json, "auditing", &part, samples);
    let request = AuditRequest::new(table.clone(), family.clone(), policy).with_part(part);
    let report = ops::audit(&conn, &request, |p| {
        progress.update(p.rows, p.cells, p.last_row_key.as_deref());
    })
    .await;
    progress.finish();
    Ok(report?)
}

/// `3/4 (keys "ev-0750" to "ev-1000")`.
pub(crate) fn part_text(part: &bigtable_ttl_runtime::ops::Part) -> String {
    let key = |k: &[u8]| format!("{:?}", String::from_utf8_lossy(k));
    let end = part.end.as_deref().map_or("the end".to_owned(), key);
    let start = if part.start.is_empty() {
        "the start".to_owned()
    } else {
        key(&part.start)
    };
    format!("{} (keys from {start} up to {end})", part.label())
}

/// The report's histograms, live rule first.
fn charts(report: &AuditReport) -> Vec<Labeled<'_>> {
    let mut charts = Vec::new();
    if let Some(current) = &report.expiry_current {
        charts.push(Labeled {
            what: "live rule",
            histogram: current,
        });
    }
    charts.push(Labeled {
        what: "proposed policy",
        histogram: &report.expiry_proposed,
    });
    charts
}

/// The shards' reports in `paths`, merged into the whole table's: each
/// report checked on its own, the counts summed with checked arithmetic
/// (an overflow names the report).
pub(crate) fn merge(paths: &[PathBuf]) -> Fallible<AuditReport> {
    let reports: Vec<AuditJson> = read_reports(paths)?;
    let Some(first) = reports.first() else {
        return Err("no reports to merge".into());
    };
    for (r, path) in reports.iter().zip(paths) {
        if (&r.table, &r.family, &r.policy) != (&first.table, &first.family, &first.policy) {
            return Err(format!(
                "report {} audits `{}` family `{}` under {}, the first one `{}` family `{}` under {}",
                path.display(),
                r.table,
                r.family,
                r.policy,
                first.table,
                first.family,
                first.policy
            )
            .into());
        }
    }
    check_shards(
        &paths
            .iter()
            .zip(&reports)
            .map(|(p, r)| (p.as_path(), r.shard.as_ref()))
            .collect::<Vec<_>>(),
    )?;
    let mut whole: Option<AuditReport> = None;
    for (r, path) in reports.iter().zip(paths) {
        let report = r
            .to_report()
            .map_err(|e| FileError::invalid("report", path, e))?;
        match &mut whole {
            None => whole = Some(report),
            Some(w) => w
                .try_merge(&report)
                .map_err(|e| FileError::invalid("report", path, e))?,
        }
    }
    let mut whole = whole.ok_or("no reports to merge")?;
    whole.part = bigtable_ttl_runtime::ops::Part::whole();
    Ok(whole)
}

/// One line saying what applying the audited policy would delete.
pub(crate) fn verdict(report: &AuditReport) -> String {
    let spec = policy_spec(&report.policy);
    if report.would_delete_data() {
        format!(
            "applying {spec} would delete {} of {} cells at once ({} rows lose cells, {} rows disappear)",
            report.cells_deleted, report.cells, report.rows_losing_cells, report.rows_deleted
        )
    } else {
        format!("applying {spec} would delete nothing")
    }
}

/// `audit --json`, and the `audit` of `apply --json`; read back by
/// `audit --merge`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct AuditJson {
    table: String,
    family: String,
    policy: String,
    gc_rule: String,
    now: String,
    now_micros: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shard: Option<PartJson>,
    rows: u64,
    cells: u64,
    cells_deleted: u64,
    rows_losing_cells: u64,
    rows_deleted: u64,
    real_cells: u64,
    artificial_cells: u64,
    oldest: Option<String>,
    newest: Option<String>,
    oldest_micros: Option<i64>,
    newest_micros: Option<i64>,
    rows_mixed_expiry: u64,
    widest_expiry_spread_ms: i64,
    widest_expiry_spread_micros: i64,
    widest_expiry_spread: String,
    would_delete_data: bool,
    expiry: ExpiriesJson,
}

/// When the cells expire, under the live rule and the policy.
#[derive(Debug, Serialize, Deserialize)]
struct ExpiriesJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<ExpiryJson>,
    proposed: ExpiryJson,
}

impl AuditJson {
    pub(crate) fn new(r: &AuditReport) -> Self {
        Self {
            table: r.table.clone(),
            family: r.family.clone(),
            policy: policy_spec(&r.policy),
            gc_rule: rule_of(r.policy),
            now: instant(r.now),
            now_micros: r.now.timestamp_micros(),
            shard: (!r.part.is_whole()).then(|| PartJson::from(&r.part)),
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
            expiry: ExpiriesJson {
                current: r.expiry_current.as_ref().map(ExpiryJson::new),
                proposed: ExpiryJson::new(&r.expiry_proposed),
            },
        }
    }

    /// The report back, to merge it with others, once its counts are
    /// seen to agree with one another (as an audit writes them): a corrupt
    /// or crafted report is refused rather than summed into a wrong total.
    fn to_report(&self) -> Result<AuditReport, String> {
        let now = DateTime::<Utc>::from_timestamp_micros(self.now_micros)
            .filter(|now| {
                now.checked_add_signed(TimeDelta::days(ops::MAX_DAYS))
                    .is_some()
            })
            .ok_or_else(|| format!("now_micros {} is out of range", self.now_micros))?;
        let policy = parse_policy(&self.policy).map_err(|e| e.to_string())?;
        let mut r = Audit::new(&self.table, &self.family, policy, now).finish();
        r.part = self.shard.as_ref().map_or_else(
            || Ok(bigtable_ttl_runtime::ops::Part::whole()),
            PartJson::to_part,
        )?;
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
            .as_ref()
            .map(|c| c.to_histogram(now))
            .transpose()?;
        r.expiry_proposed = self.expiry.proposed.to_histogram(now)?;
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
