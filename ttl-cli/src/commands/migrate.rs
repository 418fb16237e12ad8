//! `bigtable-ttl migrate`: copy a family with real timestamps into a family
//! managed by a policy, resumable from a checkpoint file, verified at the
//! end; whole or one shard at a time, with `--verify` (only the check) and
//! `--verify --merge` (the shards' checks as one).

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use bigtable_ttl_runtime::ops::{
    self, parse_duration, parse_policy, policy_spec, Checkpoint, CountOverflow, MigratePlan,
    MigrateReport, MigrateStatus, Part, RowExpiry, Verification,
};
use bigtable_ttl_runtime::Clock;
use clap::Args;
use serde::{Deserialize, Serialize};

use super::audit::part_text;
use crate::exit;
use crate::files::{self, FileError, REPORT_MAX_BYTES};
use crate::output::{print_json, rule_of, shows_progress, span, Fallible, PartProgress};
use crate::shard::{check_shards, read_reports, ShardArgs};
use crate::target::Target;

/// Copy a family with real timestamps into a family managed by a policy.
// Command-line flags are booleans.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// The table.
    table: String,
    /// The source family (real timestamps). Only read.
    #[arg(long)]
    from: String,
    /// The target family (created with the policy's rule when missing).
    #[arg(long)]
    to: String,
    /// The target's policy: `one-second` or `default=DURATION`.
    #[arg(long, short)]
    policy: String,
    /// How long each cell lives after its real write time (default: the
    /// policy's default; required with one-second).
    #[arg(long)]
    ttl: Option<String>,
    /// per-row (default): every column of a row lives TTL from the row's
    /// newest write (its newest version of each column is copied), so the
    /// row reads back whole through a struct until it expires as one.
    /// per-cell: every version is copied and lives TTL from its own write,
    /// so a row written over time expires column by column.
    #[arg(long, value_enum, default_value_t = Expiry::PerRow)]
    expiry: Expiry,
    /// The shadow column's qualifier in the target family.
    #[arg(long, default_value = ops::DEFAULT_WRITTEN_AT)]
    written_at: String,
    /// Rows per batch (and per checkpoint).
    #[arg(long, default_value_t = 1000)]
    batch_rows: usize,
    /// Write the progress here after each batch.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Resume after the row recorded in --checkpoint (and in its part of
    /// the table, for a shard).
    #[arg(long, requires = "checkpoint")]
    resume: bool,
    /// Resume when --checkpoint exists, else start: what a job restarted
    /// by its scheduler runs.
    #[arg(long, requires = "checkpoint", conflicts_with = "resume")]
    resume_if_present: bool,
    #[command(flatten)]
    shard: ShardArgs,
    /// Only verify: count the source rows and cells alive under the policy
    /// and the target's live rows and cells (of this shard's part with
    /// --shard), copy nothing. Exit status 1 when they differ.
    #[arg(long, conflicts_with_all = ["resume", "resume_if_present", "stop_after"])]
    verify: bool,
    /// With --verify: combine the --json reports of every shard (of
    /// `migrate --json` or `migrate --verify --json`) into the whole
    /// table's verification; nothing is read from Bigtable.
    #[arg(long, value_name = "FILES", num_args = 1.., requires = "verify", conflicts_with_all = ["shard", "parts", "part", "cut"])]
    merge: Vec<PathBuf>,
    /// Stop (exit status 4) once this many source rows were read: for tests
    /// and drills of an interruption.
    #[arg(long, hide = true)]
    stop_after: Option<u64>,
    /// Also write the --json report to FILE (what --verify --merge reads),
    /// whatever is printed.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// `--expiry`: one expiry per row or per cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Expiry {
    PerRow,
    PerCell,
}

impl Expiry {
    fn of(plan: &MigratePlan) -> &'static str {
        match plan.expiry {
            RowExpiry::PerCell => "per-cell",
            _ => "per-row",
        }
    }
}

/// The checkpoint file: the plan (so that a resume with other arguments is
/// refused) and the [`Checkpoint`]. Also what `migrate --json` prints.
#[derive(Debug, Serialize, Deserialize)]
struct CheckpointFile {
    table: String,
    from: String,
    to: String,
    policy: String,
    ttl_ms: Option<i64>,
    written_at: String,
    /// Files written before `--expiry` existed hold per-cell checkpoints.
    #[serde(default = "per_cell")]
    expiry: String,
    #[serde(flatten)]
    checkpoint: Checkpoint,
    #[serde(default)]
    done: bool,
}

impl CheckpointFile {
    fn new(plan: &MigratePlan, cp: &Checkpoint, done: bool) -> Self {
        Self {
            table: plan.table.clone(),
            from: plan.from.clone(),
            to: plan.to.clone(),
            policy: policy_spec(&plan.policy),
            ttl_ms: plan.ttl.map(|t| t.num_milliseconds()),
            written_at: plan.written_at.clone(),
            expiry: Expiry::of(plan).to_owned(),
            checkpoint: cp.clone(),
            done,
        }
    }

    /// The plan fields that must match for a resume, as JSON.
    fn plan_fields(&self) -> [(&'static str, serde_json::Value); 7] {
        [
            ("table", self.table.clone().into()),
            ("from", self.from.clone().into()),
            ("to", self.to.clone().into()),
            ("policy", self.policy.clone().into()),
            ("ttl_ms", self.ttl_ms.into()),
            ("written_at", self.written_at.clone().into()),
            ("expiry", self.expiry.clone().into()),
        ]
    }

    /// Written aside under a random name and renamed over `path`: a
    /// reader (or a resumed run) sees the last checkpoint whole, even if
    /// two processes of one shard write at once.
    fn write(&self, path: &Path) -> Fallible<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        files::replace("checkpoint", path, &text)?;
        Ok(())
    }

    /// The checkpoint saved at `path` for `plan`.
    fn read(path: &Path, plan: &MigratePlan) -> Fallible<Checkpoint> {
        let text = files::read_capped("checkpoint", path, REPORT_MAX_BYTES)?;
        let saved: CheckpointFile =
            serde_json::from_str(&text).map_err(|e| FileError::invalid("checkpoint", path, e))?;
        let expected = Self::new(plan, &Checkpoint::default(), false);
        for ((field, theirs), (_, ours)) in
            saved.plan_fields().into_iter().zip(expected.plan_fields())
        {
            if theirs != ours {
                return Err(format!(
                    "checkpoint {} is for another migration: its {field} is {theirs}, this run's is {ours}",
                    path.display(),
                )
                .into());
            }
        }
        Ok(saved.checkpoint)
    }
}

impl CheckpointFile {
    /// Add the counts of `other` (another shard's), checked.
    fn add(&mut self, other: &Self) -> Result<(), CountOverflow> {
        let sum = |a: u64, b: u64, what| a.checked_add(b).ok_or(CountOverflow::new(what));
        let (ours, theirs) = (&mut self.checkpoint, &other.checkpoint);
        ours.rows_read = sum(ours.rows_read, theirs.rows_read, "rows_read")?;
        ours.rows_copied = sum(ours.rows_copied, theirs.rows_copied, "rows_copied")?;
        ours.cells_copied = sum(ours.cells_copied, theirs.cells_copied, "cells_copied")?;
        ours.cells_skipped_expired = sum(
            ours.cells_skipped_expired,
            theirs.cells_skipped_expired,
            "cells_skipped_expired",
        )?;
        ours.rows_skipped_expired = sum(
            ours.rows_skipped_expired,
            theirs.rows_skipped_expired,
            "rows_skipped_expired",
        )?;
        Ok(())
    }
}

fn per_cell() -> String {
    "per-cell".to_owned()
}

/// `migrate --json`: the checkpoint, how the run ended and, when done, the
/// verification; read back by `--verify --merge`.
#[derive(Debug, Serialize, Deserialize)]
struct MigrateJson {
    #[serde(flatten)]
    checkpoint: CheckpointFile,
    /// `done`, `stopped`, `verified` (`--verify`) or `merged`.
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verification: Option<Verification>,
}

impl MigrateArgs {
    /// The shard options, for the checks of the whole command line.
    pub(crate) fn shard(&self) -> &ShardArgs {
        &self.shard
    }
}

pub(crate) async fn exec(target: &Target, args: MigrateArgs, out: &mut dyn Write) -> Fallible<i32> {
    let plan = plan_of(&args)?;
    args.shard.shard()?;
    if args.verify {
        return if args.merge.is_empty() {
            verify_part(target, &args, &plan, out).await
        } else {
            merge_verifications(&args, &plan, out)
        };
    }
    let resume = match (&args.checkpoint, args.resume, args.resume_if_present) {
        (Some(path), true, _) => Some(CheckpointFile::read(path, &plan)?),
        (Some(path), _, true) if path.exists() => Some(CheckpointFile::read(path, &plan)?),
        (Some(path), false, false) if path.exists() => {
            return Err(format!(
                "checkpoint {} exists: pass --resume to continue that migration, or remove it",
                path.display()
            )
            .into())
        }
        _ => None,
    };
    let conn = target.connect().await?;
    let start = match resume {
        Some(cp) => {
            same_shard(&args.shard, &cp.part)?;
            cp
        }
        None => Checkpoint::for_part(args.shard.resolve(&conn, &plan.table).await?),
    };
    let samples = if shows_progress(args.json) {
        ops::key_samples(&conn, &plan.table)
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let progress = PartProgress::new(args.json, "migrating", &start.part, samples);
    let mut write_error = None;
    let status = ops::migrate(&conn, &plan, Some(start), &Clock::system(), |cp| {
        progress.update(cp.rows_read, cp.cells_copied, cp.last_row_key.as_deref());
        if let Some(path) = &args.checkpoint {
            if let Err(e) = CheckpointFile::new(&plan, cp, false).write(path) {
                write_error = Some(e);
                return ControlFlow::Break(());
            }
        }
        match args.stop_after {
            Some(n) if cp.rows_read >= n => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    })
    .await;
    progress.finish();
    if let Some(e) = write_error {
        return Err(e);
    }
    match status? {
        MigrateStatus::Stopped(cp) => {
            let report = MigrateJson {
                checkpoint: CheckpointFile::new(&plan, &cp, false),
                status: "stopped".to_owned(),
                verification: None,
            };
            write_report(args.report.as_deref(), &report)?;
            if args.json {
                print_json(out, &report)?;
            } else {
                writeln!(
                    out,
                    "stopped after {} rows (last row {:?}); {} rows / {} cells copied so far; \
                     resume with --resume --checkpoint FILE",
                    cp.rows_read,
                    cp.last_row_key
                        .as_deref()
                        .map(String::from_utf8_lossy)
                        .unwrap_or_default(),
                    cp.rows_copied,
                    cp.cells_copied
                )?;
            }
            Ok(exit::STOPPED)
        }
        MigrateStatus::Done(report) => {
            if let Some(path) = &args.checkpoint {
                CheckpointFile::new(&plan, &report.checkpoint, true).write(path)?;
            }
            write_report(
                args.report.as_deref(),
                &MigrateJson {
                    checkpoint: CheckpointFile::new(&plan, &report.checkpoint, true),
                    status: "done".to_owned(),
                    verification: Some(report.verification),
                },
            )?;
            print_migrated(out, &plan, &report, args.json)?;
            Ok(exit::OK)
        }
    }
}

/// The migration the arguments describe, checked as far as it can be
/// without a server.
fn plan_of(args: &MigrateArgs) -> Fallible<MigratePlan> {
    let policy = parse_policy(&args.policy)?;
    let mut plan = MigratePlan::new(&args.table, &args.from, &args.to, policy)
        .with_written_at(args.written_at.clone())
        .with_batch_rows(args.batch_rows.max(1))
        .with_expiry(match args.expiry {
            Expiry::PerRow => RowExpiry::PerRow,
            Expiry::PerCell => RowExpiry::PerCell,
        });
    if let Some(ttl) = args.ttl.as_deref() {
        plan = plan.with_ttl(parse_duration(ttl).map_err(|e| format!("--ttl: {e}"))?);
    }
    plan.effective_ttl()?;
    Ok(plan)
}

/// A resumed checkpoint must be of the shard asked for (its part is kept,
/// whatever the table's samples say now).
fn same_shard(args: &ShardArgs, part: &Part) -> Fallible<()> {
    let asked = args.shard()?.unwrap_or((0, 1));
    if asked != (part.index, part.count) {
        return Err(format!(
            "the checkpoint is of shard {}, this run asks for {}/{}",
            part.label(),
            asked.0,
            asked.1
        )
        .into());
    }
    Ok(())
}

/// Write `report` as JSON to `path`, when one was given (`--report`),
/// at once: a merge reading it meanwhile sees the old report or the new.
fn write_report(path: Option<&Path>, report: &MigrateJson) -> Fallible<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(report)? + "\n";
    files::replace("report", path, &text)?;
    Ok(())
}

/// `migrate --verify`: the counts of this process's part, nothing copied.
async fn verify_part(
    target: &Target,
    args: &MigrateArgs,
    plan: &MigratePlan,
    out: &mut dyn Write,
) -> Fallible<i32> {
    let conn = target.connect().await?;
    let part = args.shard.resolve(&conn, &plan.table).await?;
    let v = ops::verify_part(&conn, plan, &part, Clock::system().now()).await?;
    let mut checkpoint = Checkpoint::for_part(part);
    checkpoint.project = Some(conn.project().to_owned());
    checkpoint.instance = Some(conn.instance().to_owned());
    let report = MigrateJson {
        checkpoint: CheckpointFile::new(plan, &checkpoint, false),
        status: "verified".to_owned(),
        verification: Some(v),
    };
    write_report(args.report.as_deref(), &report)?;
    print_verification(out, plan, &report, &v, args.json, 0)
}

/// `migrate --verify --merge FILES`: the shards' verifications summed,
/// once they are known to cover the table exactly once.
fn merge_verifications(
    args: &MigrateArgs,
    plan: &MigratePlan,
    out: &mut dyn Write,
) -> Fallible<i32> {
    let reports: Vec<MigrateJson> = read_reports(&args.merge)?;
    let ours = CheckpointFile::new(plan, &Checkpoint::default(), false);
    let mut total = Verification::default();
    let mut sums = CheckpointFile::new(plan, &Checkpoint::default(), true);
    for (r, path) in reports.iter().zip(&args.merge) {
        for ((field, theirs), (_, expected)) in r
            .checkpoint
            .plan_fields()
            .into_iter()
            .zip(ours.plan_fields())
        {
            if theirs != expected {
                return Err(format!(
                    "report {} is of another migration: its {field} is {theirs}, this run's is {expected}",
                    path.display()
                )
                .into());
            }
        }
        let Some(v) = &r.verification else {
            return Err(format!(
                "report {} has no verification (status {}): resume that shard to the end, or run it with --verify",
                path.display(),
                r.status
            )
            .into());
        };
        let overflow = |e: CountOverflow| FileError::invalid("report", path, e);
        total.try_merge(v).map_err(overflow)?;
        sums.add(&r.checkpoint).map_err(overflow)?;
        sums.done &= r.status == "done";
    }
    check_shards(
        &reports
            .iter()
            .map(|r| &r.checkpoint.checkpoint.part)
            .collect::<Vec<_>>(),
    )?;
    let report = MigrateJson {
        checkpoint: sums,
        status: "merged".to_owned(),
        verification: Some(total),
    };
    print_verification(out, plan, &report, &total, args.json, reports.len())
}

fn print_verification(
    out: &mut dyn Write,
    plan: &MigratePlan,
    report: &MigrateJson,
    v: &Verification,
    json: bool,
    merged: usize,
) -> Fallible<i32> {
    if json {
        print_json(out, report)?;
    } else {
        writeln!(
            out,
            "verification of table `{}`: family `{}` -> `{}` under {}",
            plan.table,
            plan.from,
            plan.to,
            policy_spec(&plan.policy)
        )?;
        let part = &report.checkpoint.checkpoint.part;
        if !part.is_whole() {
            writeln!(out, "  shard:    {}", part_text(part))?;
        }
        if merged > 0 {
            writeln!(
                out,
                "  merged:   {merged} shard reports; copied {} rows, {} cells; skipped {} cells already expired",
                report.checkpoint.checkpoint.rows_copied,
                report.checkpoint.checkpoint.cells_copied,
                report.checkpoint.checkpoint.cells_skipped_expired
            )?;
        }
        writeln!(
            out,
            "  verified: source {} rows / {} cells, {} rows / {} cells alive under the policy; target {} rows / {} cells: {}",
            v.source_rows,
            v.source_cells,
            v.expected_rows,
            v.expected_cells,
            v.target_rows,
            v.target_cells,
            if v.matches() { "ok" } else { "MISMATCH" }
        )?;
    }
    Ok(if v.matches() { exit::OK } else { exit::ERROR })
}

fn print_migrated(
    out: &mut dyn Write,
    plan: &MigratePlan,
    report: &MigrateReport,
    json: bool,
) -> Fallible<()> {
    let cp = &report.checkpoint;
    let v = &report.verification;
    if json {
        let report = MigrateJson {
            checkpoint: CheckpointFile::new(plan, cp, true),
            status: "done".to_owned(),
            verification: Some(*v),
        };
        return print_json(out, &report);
    }
    let ttl = plan.effective_ttl()?;
    writeln!(
        out,
        "migrated table `{}`: family `{}` -> `{}` under {} ({}), TTL {} from {}",
        plan.table,
        plan.from,
        plan.to,
        policy_spec(&plan.policy),
        rule_of(plan.policy),
        span(ttl),
        match plan.expiry {
            RowExpiry::PerCell => "each cell's write time",
            _ => "each row's newest write",
        }
    )?;
    writeln!(
        out,
        "  copied:   {} rows, {} cells (real write time in `{}:{}`)",
        cp.rows_copied, cp.cells_copied, plan.to, plan.written_at
    )?;
    writeln!(
        out,
        "  skipped:  {} cells already expired ({} rows entirely)",
        cp.cells_skipped_expired, cp.rows_skipped_expired
    )?;
    writeln!(
        out,
        "  verified: source {} rows / {} cells, {} rows / {} cells alive under the policy; target {} rows / {} cells: ok",
        v.source_rows,
        v.source_cells,
        v.expected_rows,
        v.expected_cells,
        v.target_rows,
        v.target_cells
    )?;
    if !cp.part.is_whole() {
        writeln!(out, "  shard:    {}", part_text(&cp.part))?;
    }
    writeln!(out, "  source family `{}` untouched", plan.from)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_and_reports_of_this_version_read_back_whole() {
        crate::files::reads_back_whole::<CheckpointFile>("migrate-checkpoint.json");
        crate::files::reads_back_whole::<MigrateJson>("migrate-report.json");
    }
    use bigtable_ttl_runtime::Policy;

    #[test]
    fn a_checkpoint_file_round_trips_and_refuses_another_plan() {
        let dir = std::env::temp_dir().join(format!("ttl-cli-cp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cp.json");
        let plan = MigratePlan::new("events", "raw", "ttl", Policy::CellExpiry)
            .with_ttl(chrono::TimeDelta::days(1));
        let mut cp = Checkpoint::default();
        cp.last_row_key = Some(b"row\xff\x00".to_vec());
        cp.rows_read = 7;
        CheckpointFile::new(&plan, &cp, false).write(&path).unwrap();
        let back = CheckpointFile::read(&path, &plan).unwrap();
        assert_eq!(back.last_row_key, cp.last_row_key);
        assert_eq!(back.rows_read, 7);
        let other = plan.clone().with_ttl(chrono::TimeDelta::days(2));
        let err = CheckpointFile::read(&path, &other).unwrap_err().to_string();
        assert!(
            err.contains("its ttl_ms is 86400000, this run's is 172800000"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
