//! `bigtable-ttl reap`: delete what expired in a family more than a grace
//! period ago, so that every other reader stops seeing it (`ops::reap`):
//! rate-limited, `--dry-run`, the dying rows written as JSON lines before
//! they are deleted, resumable from a checkpoint, whole or one shard.

use std::fs::File;
use std::io::Write;
use std::num::NonZeroU32;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bigtable_ttl_runtime::ops::{
    self, parse_duration, parse_policy, policy_spec, FamilyRows, ReapOptions, ReapProgress,
    ReapStatus,
};
use bigtable_ttl_runtime::Clock;
use clap::Args;
use serde::{Deserialize, Serialize};

use super::audit::part_text;
use crate::events::write_lines;
use crate::exit;
use crate::files::{self, FileError, REPORT_MAX_BYTES};
use crate::output::{print_json, shows_progress, Fallible, PartProgress};
use crate::shard::ShardArgs;
use crate::target::Target;

/// Delete what expired in a family more than a grace period ago.
#[derive(Debug, Args)]
#[allow(clippy::struct_excessive_bools)] // clap flags, as `migrate`'s
pub(crate) struct ReapArgs {
    /// The table.
    table: String,
    /// The family.
    #[arg(long)]
    family: String,
    /// The family's TTL policy: `one-second` or `default=DURATION`.
    #[arg(long, short)]
    policy: String,
    /// Keep what expired less than this long ago (clock skew, readers
    /// still finishing with a row).
    #[arg(long, default_value = "1m")]
    grace: String,
    /// At most this many rows deleted a second (a token bucket).
    #[arg(long, value_name = "ROWS")]
    rate: Option<NonZeroU32>,
    /// Count what would go; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Append each dead row to FILE (`-`: standard output) as a JSON line
    /// before it is deleted: at least once across kills and restarts; drop
    /// duplicates by event_id.
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    /// Rows per batch (and per checkpoint).
    #[arg(long, default_value_t = 500)]
    batch_rows: usize,
    /// Write the progress here after each batch.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Resume after the row recorded in --checkpoint (in its shard).
    #[arg(long, requires = "checkpoint")]
    resume: bool,
    /// Resume when --checkpoint exists, else start: what a job restarted
    /// by its scheduler runs. A checkpoint of a pass that finished starts
    /// a new pass over the whole part (what a CronJob runs each time).
    #[arg(long, requires = "checkpoint", conflicts_with = "resume")]
    resume_if_present: bool,
    #[command(flatten)]
    shard: ShardArgs,
    /// Stop (exit status 4) once this many rows were read: for tests and
    /// drills of an interruption.
    #[arg(long, hide = true)]
    stop_after: Option<u64>,
    /// Machine-readable report.
    #[arg(long)]
    json: bool,
}

impl ReapArgs {
    /// The shard options, for the checks of the whole command line.
    pub(crate) fn shard(&self) -> &ShardArgs {
        &self.shard
    }
}

/// The checkpoint file: the run's settings (a resume with others is
/// refused) and its progress. Also what `reap --json` prints.
#[derive(Debug, Serialize, Deserialize)]
struct ReapFile {
    table: String,
    family: String,
    policy: String,
    grace_ms: u64,
    dry_run: bool,
    #[serde(flatten)]
    progress: ReapProgress,
    /// `running`, `done` or `stopped`.
    status: String,
}

/// What a run is: the fields a resume must agree with.
struct Run<'a> {
    args: &'a ReapArgs,
    rows: FamilyRows,
    options: ReapOptions,
}

impl Run<'_> {
    fn file(&self, p: &ReapProgress, status: &str) -> ReapFile {
        ReapFile {
            table: self.rows.table.clone(),
            family: self.rows.family.clone(),
            policy: policy_spec(&self.rows.policy),
            grace_ms: u64::try_from(self.options.grace.as_millis()).unwrap_or(u64::MAX),
            dry_run: self.options.dry_run,
            progress: p.clone(),
            status: status.to_owned(),
        }
    }

    /// Whether the checkpoint at `path` is of a pass that finished.
    fn finished(path: &Path) -> Fallible<bool> {
        Ok(Self::saved(path)?.status == "done")
    }

    fn saved(path: &Path) -> Fallible<ReapFile> {
        let text = files::read_capped("checkpoint", path, REPORT_MAX_BYTES)?;
        Ok(serde_json::from_str(&text).map_err(|e| FileError::invalid("checkpoint", path, e))?)
    }

    /// The progress saved at `path` by a run like this one.
    fn read(&self, path: &Path) -> Fallible<ReapProgress> {
        let saved = Self::saved(path)?;
        let ours = self.file(&ReapProgress::default(), "running");
        let fields = [
            ("table", saved.table == ours.table),
            ("family", saved.family == ours.family),
            ("policy", saved.policy == ours.policy),
            ("grace", saved.grace_ms == ours.grace_ms),
            ("dry_run", saved.dry_run == ours.dry_run),
        ];
        if let Some((field, _)) = fields.iter().find(|(_, same)| !same) {
            return Err(format!(
                "checkpoint {} is of another reaper run: its {field} differs from this run's; \
                 pass the same options or remove it",
                path.display()
            )
            .into());
        }
        let part = &saved.progress.part;
        let asked = self.args.shard.shard()?.unwrap_or((0, 1));
        if asked != (part.index, part.count) {
            return Err(format!(
                "the checkpoint is of shard {}, this run asks for {}/{}",
                part.label(),
                asked.0,
                asked.1
            )
            .into());
        }
        Ok(saved.progress)
    }
}

/// Where `--events` go.
enum Events {
    None,
    Stdout,
    File(File),
}

impl Events {
    fn open(path: Option<&Path>) -> Fallible<Self> {
        Ok(match path {
            None => Self::None,
            Some(p) if p.as_os_str() == "-" => Self::Stdout,
            Some(p) => Self::File(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| format!("opening --events {}: {e}", p.display()))?,
            ),
        })
    }

    /// Write `rows`, and make them durable before anything is deleted.
    fn write(&mut self, out: &mut dyn Write, rows: &[ops::ExpiredCells]) -> Fallible<()> {
        match self {
            Self::None => Ok(()),
            Self::Stdout => write_lines(out, rows),
            Self::File(f) => {
                write_lines(f, rows)?;
                f.sync_data()?;
                Ok(())
            }
        }
    }
}

#[allow(clippy::too_many_lines)] // one command's steps in order: open, resume, reap, report
pub(crate) async fn exec(target: &Target, args: ReapArgs, out: &mut dyn Write) -> Fallible<i32> {
    let policy = parse_policy(&args.policy)?;
    let grace = parse_duration(&args.grace)
        .ok()
        .and_then(|d| d.to_std().ok())
        .ok_or_else(|| {
            format!(
                "--grace `{}`: give a duration of zero or more (30s, 1m, 2h)",
                args.grace
            )
        })?;
    let mut options = ReapOptions::new()
        .with_grace(grace)
        .with_dry_run(args.dry_run)
        .with_page_rows(args.batch_rows);
    if let Some(rate) = args.rate {
        options = options.with_rows_per_second(rate);
    }
    args.shard.shard()?;
    let run = Run {
        args: &args,
        rows: FamilyRows::new(&args.table, &args.family, policy),
        options,
    };
    let resume = match (&args.checkpoint, args.resume, args.resume_if_present) {
        (Some(path), true, _) => Some(run.read(path)?),
        // A scheduled reaper's next pass: every run judges at its own now,
        // so rows before the last pass's last key die again.
        (Some(path), _, true) if path.exists() && Run::finished(path)? => None,
        (Some(path), _, true) if path.exists() => Some(run.read(path)?),
        (Some(path), false, false) if path.exists() => {
            return Err(format!(
                "checkpoint {} exists: pass --resume to continue that run, or remove it",
                path.display()
            )
            .into())
        }
        _ => None,
    };
    let conn = target.connect().await?;
    let start = match resume {
        Some(p) => p,
        None => ReapProgress::for_part(args.shard.resolve(&conn, &args.table).await?),
    };
    let samples = if shows_progress(args.json) {
        ops::key_samples(&conn, &args.table)
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let what = if args.dry_run {
        "reaping (dry run)"
    } else {
        "reaping"
    };
    let progress = PartProgress::new(args.json, what, &start.part, samples);
    let mut events = Events::open(args.events.as_deref())?;
    let mut failed = None;
    let mut write_error = None;
    let status = ops::reap(
        &conn,
        &run.rows,
        &run.options,
        Some(start),
        &Clock::system(),
        |rows| {
            let flow = match events.write(&mut *out, &rows) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            };
            std::future::ready(flow)
        },
        |p| {
            progress.update(p.rows_scanned, p.cells_reaped, p.last_row_key.as_deref());
            if let Some(path) = &args.checkpoint {
                let text = serde_json::to_string_pretty(&run.file(p, "running"))
                    .map_err(Into::into)
                    .and_then(|t| {
                        files::replace("checkpoint", path, &(t + "\n")).map_err(Into::into)
                    });
                if let Err(e) = text {
                    write_error = Some::<Box<dyn std::error::Error + Send + Sync>>(e);
                    return ControlFlow::Break(());
                }
            }
            match args.stop_after {
                Some(n) if p.rows_scanned >= n => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        },
    )
    .await;
    progress.finish();
    if let Some(e) = failed.or(write_error) {
        return Err(e);
    }
    let (p, status, code) = match status? {
        ReapStatus::Done(p) => (p, "done", exit::OK),
        ReapStatus::Stopped(p) => (p, "stopped", exit::STOPPED),
        _ => return Err("the reaper ended in a way this version does not know".into()),
    };
    let file = run.file(&p, status);
    if let Some(path) = &args.checkpoint {
        files::replace(
            "checkpoint",
            path,
            &(serde_json::to_string_pretty(&file)? + "\n"),
        )?;
    }
    if args.json {
        print_json(out, &file)?;
    } else {
        print_reaped(out, &run, &p, status)?;
    }
    Ok(code)
}

fn print_reaped(
    out: &mut dyn Write,
    run: &Run<'_>,
    p: &ReapProgress,
    status: &str,
) -> Fallible<()> {
    let verb = if run.options.dry_run {
        "would reap"
    } else {
        "reaped"
    };
    writeln!(
        out,
        "{verb} table `{}` family `{}` under {} (grace {}): {status}",
        run.rows.table,
        run.rows.family,
        policy_spec(&run.rows.policy),
        humantime::format_duration(Duration::from_secs(run.options.grace.as_secs()))
    )?;
    writeln!(
        out,
        "  scanned:  {} rows holding expired cells",
        p.rows_scanned
    )?;
    writeln!(
        out,
        "  deleted:  {} dead rows, {} live rows trimmed, {} cells",
        p.rows_reaped, p.rows_trimmed, p.cells_reaped
    )?;
    writeln!(
        out,
        "  skipped:  {} live, {} died within the grace, {} changed since read, {} unsure, {} another struct's",
        p.rows_skipped_live,
        p.rows_skipped_recent,
        p.rows_skipped_changed,
        p.rows_skipped_unsure,
        p.rows_skipped_other
    )?;
    if !p.part.is_whole() {
        writeln!(out, "  shard:    {}", part_text(&p.part))?;
    }
    if status == "stopped" {
        writeln!(out, "  resume with --resume --checkpoint FILE")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_of_this_version_read_back_whole() {
        crate::files::reads_back_whole::<ReapFile>("reap-checkpoint.json");
    }
}
