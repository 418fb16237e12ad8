//! `bigtable-ttl audit`: count what a policy would do to a family, draw
//! when its cells expire, one shard at a time or whole, and merge the
//! shards' reports.

use std::io::Write;
use std::path::PathBuf;

use bigtable_ttl_runtime::ops::{self, parse_policy, policy_spec, AuditReport, AuditRequest};
use clap::Args;

use crate::chart::{self, Labeled};
use crate::exit;
use crate::files::FileError;
use crate::output::{instant, print_json, shows_progress, Fallible, PartProgress};
use crate::shard::{check_shards, read_reports, ShardArgs};
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
        print_json(out, &report)?;
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
    let reports: Vec<AuditReport> = read_reports(paths)?;
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
                policy_spec(&r.policy),
                first.table,
                first.family,
                policy_spec(&first.policy)
            )
            .into());
        }
    }
    check_shards(&reports.iter().map(|r| &r.part).collect::<Vec<_>>())?;
    let mut whole: Option<AuditReport> = None;
    for (report, path) in reports.into_iter().zip(paths) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_of_this_version_read_back_whole() {
        crate::files::reads_back_whole::<AuditReport>("audit-report.json");
    }
}
