//! The `bigtable-ttl` command: know what a TTL policy does to a family's
//! data before and after switching it on.
//!
//! A thin layer over [`ttl_runtime::ops`]: argument parsing (clap), progress
//! bars (indicatif, on standard error, only on a terminal and never with
//! `--json`), and printing, readable or JSON. [`run`] is the whole program;
//! [`run_with`] runs it inside a Tokio runtime and writes to the given
//! streams, so tests run it in-process.
//!
//! Exit status: see [`exit`].

// Counts are printed and serialised; u64 -> f64 precision is irrelevant for progress.
#![allow(clippy::cast_precision_loss)]
// Doc comments of the command-line types are clap's --help text, read in a
// terminal: no Markdown backticks there.
#![allow(clippy::doc_markdown)]

use std::ffi::OsString;
use std::io::{IsTerminal as _, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use ttl_runtime::admin::describe_rule;
use ttl_runtime::admin::gc_rule;
use ttl_runtime::ops::{
    self, parse_duration, parse_policy, policy_spec, ApplyOutcome, AuditReport, Checkpoint,
    MigratePlan, MigrateStatus, RowInspection, ScanProgress,
};
use ttl_runtime::{Clock, Connection, Policy};

/// Exit statuses.
pub mod exit {
    /// Done; for `audit`, the policy would delete nothing.
    pub const OK: i32 = 0;
    /// An error: connection, server, bad input, failed verification.
    pub const ERROR: i32 = 1;
    /// Bad command line (clap's own status).
    pub const USAGE: i32 = 2;
    /// The policy would delete data: `audit` found cells it would delete,
    /// `apply` refused without `--force`.
    pub const WOULD_DELETE: i32 = 3;
    /// `migrate` stopped before the end (`--stop-after`); resume it with
    /// `--resume --checkpoint FILE`.
    pub const STOPPED: i32 = 4;
}

/// Know what a TTL policy does to your Bigtable data, before and after.
///
/// Policies: `one-second` (family rule max_age = 1s; each cell's timestamp is
/// its expiry) or `default=DURATION` (max_age = DURATION; e.g. default=2d).
///
/// Exit status: 0 done (audit: nothing would be deleted), 1 error, 2 bad
/// usage, 3 the policy would delete data (audit; apply refused), 4 migrate
/// stopped before the end (resume it).
#[derive(Debug, Parser)]
#[command(name = "bigtable-ttl", version, about, long_about)]
pub struct Cli {
    #[command(flatten)]
    target: Target,
    #[command(subcommand)]
    command: Command,
}

/// Where the table is.
#[derive(Debug, Args)]
struct Target {
    /// Google Cloud project (else $BIGTABLE_PROJECT, else $GOOGLE_CLOUD_PROJECT).
    #[arg(long, global = true, env = "BIGTABLE_PROJECT")]
    project: Option<String>,
    /// Bigtable instance (else $BIGTABLE_INSTANCE).
    #[arg(long, global = true, env = "BIGTABLE_INSTANCE")]
    instance: Option<String>,
    /// An emulator's HOST:PORT instead of Cloud Bigtable (else
    /// $BIGTABLE_EMULATOR_HOST, as in every Google client).
    #[arg(
        long,
        global = true,
        env = "BIGTABLE_EMULATOR_HOST",
        hide_env_values = true
    )]
    emulator_host: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Count what a policy would do to a family: cells and rows it would
    /// delete at once, real vs artificial timestamps, oldest and newest.
    /// Exit status 3 when it would delete data.
    Audit {
        /// The table.
        table: String,
        /// The column family.
        #[arg(long, short)]
        family: String,
        /// `one-second` or `default=DURATION`.
        #[arg(long, short)]
        policy: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Set a family's GC rule to a policy's, after an audit; refused (exit
    /// status 3) when data would be lost, unless --force.
    Apply {
        /// The table.
        table: String,
        /// The column family (created with the rule when missing).
        #[arg(long, short)]
        family: String,
        /// `one-second` or `default=DURATION`.
        #[arg(long, short)]
        policy: String,
        /// Apply even though cells would be deleted.
        #[arg(long)]
        force: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Every cell of one row with its timestamp, whether it is alive, when it
    /// expires under the family's live rule, the time left, and the real
    /// write time from the shadow column (Cassandra's TTL() and WRITETIME()).
    Inspect {
        /// The table.
        table: String,
        /// The row key.
        row: String,
        /// Only this family.
        #[arg(long, short)]
        family: Option<String>,
        /// The shadow column's qualifier.
        #[arg(long, default_value = ops::DEFAULT_WRITTEN_AT)]
        written_at: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Copy a family with real timestamps into a family managed by a policy:
    /// expiry = real timestamp + TTL, the real timestamp kept in the shadow
    /// column. Cells already expired are skipped and counted. Never changes
    /// the source. Resumable; verifies counts at the end.
    Migrate(MigrateArgs),
}

#[derive(Debug, Args)]
struct MigrateArgs {
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
    /// The shadow column's qualifier in the target family.
    #[arg(long, default_value = ops::DEFAULT_WRITTEN_AT)]
    written_at: String,
    /// Rows per batch (and per checkpoint).
    #[arg(long, default_value_t = 1000)]
    batch_rows: usize,
    /// Write the progress here after each batch.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Resume after the row recorded in --checkpoint.
    #[arg(long, requires = "checkpoint")]
    resume: bool,
    /// Stop (exit status 4) once this many source rows were read: for tests
    /// and drills of an interruption.
    #[arg(long, hide = true)]
    stop_after: Option<u64>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// Run the program with `args` (the first is the program name), in a new
/// Tokio runtime, printing to standard output and error. Returns the exit
/// status (see [`exit`]).
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bigtable-ttl: cannot start the async runtime: {e}");
            return exit::ERROR;
        }
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    runtime.block_on(run_with(args, &mut out, &mut err))
}

/// Run the program with `args` (the first is the program name), writing to
/// `out` and `err`. Returns the exit status (see [`exit`]).
pub async fn run_with<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            let _ = if e.use_stderr() {
                write!(err, "{text}")
            } else {
                write!(out, "{text}")
            };
            return e.exit_code();
        }
    };
    match execute(cli, out).await {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "bigtable-ttl: {e}");
            exit::ERROR
        }
    }
}

type Fallible<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

async fn connect(target: &Target) -> Fallible<Connection> {
    let project = target
        .project
        .clone()
        .or_else(|| std::env::var("GOOGLE_CLOUD_PROJECT").ok())
        .filter(|p| !p.is_empty())
        .ok_or("no project: pass --project or set BIGTABLE_PROJECT")?;
    let instance = target
        .instance
        .clone()
        .filter(|i| !i.is_empty())
        .ok_or("no instance: pass --instance or set BIGTABLE_INSTANCE")?;
    Ok(
        match target.emulator_host.as_deref().filter(|h| !h.is_empty()) {
            Some(host) => Connection::emulator(host, &project, &instance)?,
            None => Connection::cloud(&project, &instance).await?,
        },
    )
}

async fn execute(cli: Cli, out: &mut dyn Write) -> Fallible<i32> {
    // Parse what needs no server first: a typo fails before connecting.
    match cli.command {
        Command::Audit {
            table,
            family,
            policy,
            json,
        } => {
            let policy = parse_policy(&policy)?;
            let conn = connect(&cli.target).await?;
            let bar = progress_bar(json, "auditing");
            let report = ops::audit(&conn, &table, &family, policy, Utc::now(), |p| {
                tick(&bar, p);
            })
            .await;
            bar.finish_and_clear();
            let report = report?;
            if json {
                writeln!(out, "{:#}", audit_json(&report))?;
            } else {
                writeln!(out, "{report}")?;
                writeln!(out, "{}", verdict(&report))?;
            }
            Ok(if report.would_delete_data() {
                exit::WOULD_DELETE
            } else {
                exit::OK
            })
        }
        Command::Apply {
            table,
            family,
            policy,
            force,
            json,
        } => {
            let policy = parse_policy(&policy)?;
            let conn = connect(&cli.target).await?;
            let bar = progress_bar(json, "auditing");
            let outcome = ops::apply(&conn, &table, &family, policy, Utc::now(), force, |p| {
                tick(&bar, p);
            })
            .await;
            bar.finish_and_clear();
            print_apply(out, &outcome?, json)
        }
        Command::Inspect {
            table,
            row,
            family,
            written_at,
            json,
        } => {
            let conn = connect(&cli.target).await?;
            let inspection = ops::inspect(
                &conn,
                &table,
                row.as_bytes(),
                family.as_deref(),
                &written_at,
                Utc::now(),
            )
            .await?;
            if json {
                writeln!(out, "{:#}", inspect_json(&inspection))?;
            } else {
                print_inspection(out, &inspection)?;
            }
            Ok(if inspection.cells.is_empty() {
                exit::ERROR
            } else {
                exit::OK
            })
        }
        Command::Migrate(args) => migrate(&cli.target, args, out).await,
    }
}

// ----- progress --------------------------------------------------------------

fn progress_bar(json: bool, what: &'static str) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(what);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

fn tick(bar: &ProgressBar, p: ScanProgress) {
    bar.set_message(format!("{} rows, {} cells", p.rows, p.cells));
}

// ----- formatting ------------------------------------------------------------

/// An instant as people read it: UTC to the millisecond.
fn instant(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn instant_micros(micros: i64) -> Option<String> {
    DateTime::<Utc>::from_timestamp_micros(micros).map(instant)
}

/// A duration as people read it, to the second (`1day 23h 59m 58s`).
fn span(d: TimeDelta) -> String {
    match d.to_std() {
        Ok(d) => humantime::format_duration(Duration::from_secs(d.as_secs())).to_string(),
        Err(_) => "0s".to_owned(),
    }
}

fn rule_of(policy: Policy) -> String {
    describe_rule(&gc_rule(policy.gc_max_age()))
}

fn verdict(report: &AuditReport) -> String {
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

fn audit_json(r: &AuditReport) -> Value {
    json!({
        "table": r.table,
        "family": r.family,
        "policy": policy_spec(&r.policy),
        "gc_rule": rule_of(r.policy),
        "now": instant(r.now),
        "rows": r.rows,
        "cells": r.cells,
        "cells_deleted": r.cells_deleted,
        "rows_losing_cells": r.rows_losing_cells,
        "rows_deleted": r.rows_deleted,
        "real_cells": r.real_cells,
        "artificial_cells": r.artificial_cells,
        "oldest": r.oldest().map(instant),
        "newest": r.newest().map(instant),
        "oldest_micros": r.oldest_micros,
        "newest_micros": r.newest_micros,
        "would_delete_data": r.would_delete_data(),
    })
}

fn print_apply(out: &mut dyn Write, outcome: &ApplyOutcome, json: bool) -> Fallible<i32> {
    let rule = |r: Option<&ttl_runtime::admin::proto::GcRule>| {
        r.map_or_else(|| "missing".to_owned(), describe_rule)
    };
    let (name, before, after, code) = match outcome {
        ApplyOutcome::Applied { before, after, .. } => (
            "applied",
            rule(before.as_ref()),
            rule(Some(after)),
            exit::OK,
        ),
        ApplyOutcome::Unchanged { rule: r, .. } => {
            ("unchanged", rule(Some(r)), rule(Some(r)), exit::OK)
        }
        ApplyOutcome::Refused { rule: r, .. } => (
            "refused",
            rule(r.as_ref()),
            rule(r.as_ref()),
            exit::WOULD_DELETE,
        ),
    };
    let audit = outcome.audit();
    if json {
        let value = json!({
            "outcome": name,
            "rule_before": before,
            "rule_after": after,
            "audit": audit_json(audit),
        });
        writeln!(out, "{value:#}")?;
        return Ok(code);
    }
    writeln!(out, "{audit}")?;
    writeln!(out, "rule before: {before}")?;
    match outcome {
        ApplyOutcome::Refused { .. } => {
            writeln!(
                out,
                "refused: {}; nothing changed. Migrate the data first (bigtable-ttl migrate), \
                 or pass --force to accept the loss",
                verdict(audit)
            )?;
        }
        ApplyOutcome::Unchanged { .. } => {
            writeln!(out, "rule after:  {after} (already set; nothing sent)")?;
        }
        ApplyOutcome::Applied { .. } => {
            writeln!(out, "rule after:  {after}")?;
            if audit.would_delete_data() {
                writeln!(
                    out,
                    "forced: {} cells will be removed by the next garbage collection",
                    audit.cells_deleted
                )?;
            }
        }
    }
    Ok(code)
}

fn printable(value: &[u8]) -> String {
    match std::str::from_utf8(value) {
        Ok(s) if !s.chars().any(char::is_control) => format!("{s:?}"),
        _ => format!("0x{}", hex(value)),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn inspect_json(i: &RowInspection) -> Value {
    let families: serde_json::Map<String, Value> = i
        .families
        .iter()
        .map(|(name, f)| {
            (
                name.clone(),
                json!({
                    "gc_rule": describe_rule(&f.rule),
                    "policy": f.policy.as_ref().map(policy_spec),
                }),
            )
        })
        .collect();
    let cells: Vec<Value> = i
        .cells
        .iter()
        .map(|c| {
            json!({
                "family": c.family,
                "qualifier": String::from_utf8_lossy(&c.qualifier),
                "value": String::from_utf8_lossy(&c.value),
                "value_hex": hex(&c.value),
                "timestamp_micros": c.timestamp_micros,
                "timestamp": instant_micros(c.timestamp_micros),
                "shadow": c.is_shadow,
                "alive": c.alive,
                "expires_at": c.expires_at.map(instant),
                "time_left_ms": c.time_left.map(|d| d.num_milliseconds()),
                "time_left": c.time_left.map(span),
                "written_at": c.written_at.map(instant),
            })
        })
        .collect();
    json!({
        "table": i.table,
        "row_key": String::from_utf8_lossy(&i.row_key),
        "now": instant(i.now),
        "families": families,
        "cells": cells,
    })
}

fn print_inspection(out: &mut dyn Write, i: &RowInspection) -> Fallible<()> {
    let key = String::from_utf8_lossy(&i.row_key);
    if i.cells.is_empty() {
        writeln!(out, "table `{}`, row {key:?}: no cells", i.table)?;
        return Ok(());
    }
    writeln!(
        out,
        "table `{}`, row {key:?}, now {}",
        i.table,
        instant(i.now)
    )?;
    let used: std::collections::BTreeSet<&str> =
        i.cells.iter().map(|c| c.family.as_str()).collect();
    for family in used {
        if let Some(f) = i.families.get(family) {
            writeln!(
                out,
                "  family `{family}`: {} ({})",
                describe_rule(&f.rule),
                f.policy
                    .as_ref()
                    .map_or_else(|| "no expiry by age".to_owned(), policy_spec)
            )?;
        }
    }
    let header = [
        "COLUMN",
        "TIMESTAMP",
        "ALIVE",
        "EXPIRES",
        "TIME LEFT",
        "WRITTEN",
        "VALUE",
    ];
    let rows: Vec<[String; 7]> = i
        .cells
        .iter()
        .map(|c| {
            let column = format!(
                "{}:{}{}",
                c.family,
                String::from_utf8_lossy(&c.qualifier),
                if c.is_shadow { " (shadow)" } else { "" }
            );
            [
                column,
                instant_micros(c.timestamp_micros)
                    .unwrap_or_else(|| format!("{} µs", c.timestamp_micros)),
                if c.alive { "yes" } else { "no" }.to_owned(),
                c.expires_at.map_or_else(|| "never".to_owned(), instant),
                c.time_left.map_or_else(|| "-".to_owned(), span),
                c.written_at.map_or_else(|| "-".to_owned(), instant),
                printable(&c.value),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 7]| {
        use std::fmt::Write as _;
        let mut s = String::new();
        for (k, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if k + 1 == cells.len() {
                s.push_str(cell);
            } else {
                let _ = write!(s, "{cell:<w$}  ");
            }
        }
        s
    };
    writeln!(out, "{}", line(header))?;
    for row in &rows {
        writeln!(out, "{}", line(row.each_ref().map(String::as_str)))?;
    }
    Ok(())
}

// ----- migrate ---------------------------------------------------------------

/// What the checkpoint file records besides the [`Checkpoint`]: the plan, so
/// a resume with other arguments is refused.
fn checkpoint_json(plan: &MigratePlan, cp: &Checkpoint, done: bool) -> Value {
    json!({
        "table": plan.table,
        "from": plan.from,
        "to": plan.to,
        "policy": policy_spec(&plan.policy),
        "ttl_ms": plan.ttl.map(|t| t.num_milliseconds()),
        "written_at": plan.written_at,
        "last_row_key_hex": cp.last_row_key.as_deref().map(hex),
        "last_row_key": cp.last_row_key.as_deref().map(String::from_utf8_lossy),
        "rows_read": cp.rows_read,
        "rows_copied": cp.rows_copied,
        "cells_copied": cp.cells_copied,
        "cells_skipped_expired": cp.cells_skipped_expired,
        "rows_skipped_expired": cp.rows_skipped_expired,
        "done": done,
    })
}

fn write_checkpoint(path: &Path, value: &Value) -> Fallible<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, format!("{value:#}\n"))
        .map_err(|e| format!("writing checkpoint {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| format!("writing checkpoint {}: {e}", path.display()))?;
    Ok(())
}

fn read_checkpoint(path: &Path, plan: &MigratePlan) -> Fallible<Checkpoint> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading checkpoint {}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| format!("checkpoint {} is not valid JSON: {e}", path.display()))?;
    let expected = checkpoint_json(plan, &Checkpoint::default(), false);
    for field in ["table", "from", "to", "policy", "ttl_ms", "written_at"] {
        if v[field] != expected[field] {
            return Err(format!(
                "checkpoint {} is for another migration: its {field} is {}, this run's is {}",
                path.display(),
                v[field],
                expected[field]
            )
            .into());
        }
    }
    let count = |field: &str| v[field].as_u64().unwrap_or(0);
    let last_row_key = match v["last_row_key_hex"].as_str() {
        None => None,
        Some(h) => Some(unhex(h).ok_or_else(|| {
            format!("checkpoint {}: last_row_key_hex is not hex", path.display())
        })?),
    };
    Ok(Checkpoint {
        last_row_key,
        rows_read: count("rows_read"),
        rows_copied: count("rows_copied"),
        cells_copied: count("cells_copied"),
        cells_skipped_expired: count("cells_skipped_expired"),
        rows_skipped_expired: count("rows_skipped_expired"),
    })
}

fn unhex(h: &str) -> Option<Vec<u8>> {
    if h.len() % 2 != 0 {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

async fn migrate(target: &Target, args: MigrateArgs, out: &mut dyn Write) -> Fallible<i32> {
    let policy = parse_policy(&args.policy)?;
    let mut plan = MigratePlan::new(&args.table, &args.from, &args.to, policy);
    plan.ttl = args
        .ttl
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(|e| format!("--ttl: {e}"))?;
    plan.written_at = args.written_at.clone();
    plan.batch_rows = args.batch_rows.max(1);
    plan.effective_ttl()?;
    let resume = match (&args.checkpoint, args.resume) {
        (Some(path), true) => Some(read_checkpoint(path, &plan)?),
        (Some(path), false) if path.exists() => {
            return Err(format!(
                "checkpoint {} exists: pass --resume to continue that migration, or remove it",
                path.display()
            )
            .into())
        }
        _ => None,
    };
    let conn = connect(target).await?;
    let bar = progress_bar(args.json, "migrating");
    let mut write_error = None;
    let status = ops::migrate(&conn, &plan, resume, &Clock::system(), |cp| {
        bar.set_message(format!(
            "{} rows read, {} rows / {} cells copied, {} expired cells skipped",
            cp.rows_read, cp.rows_copied, cp.cells_copied, cp.cells_skipped_expired
        ));
        if let Some(path) = &args.checkpoint {
            if let Err(e) = write_checkpoint(path, &checkpoint_json(&plan, cp, false)) {
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
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e);
    }
    match status? {
        MigrateStatus::Stopped(cp) => {
            if args.json {
                let mut v = checkpoint_json(&plan, &cp, false);
                v["status"] = json!("stopped");
                writeln!(out, "{v:#}")?;
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
                write_checkpoint(path, &checkpoint_json(&plan, &report.checkpoint, true))?;
            }
            print_migrated(out, &plan, &report, args.json)?;
            Ok(exit::OK)
        }
    }
}

fn print_migrated(
    out: &mut dyn Write,
    plan: &MigratePlan,
    report: &ops::MigrateReport,
    json: bool,
) -> Fallible<()> {
    let cp = &report.checkpoint;
    let v = &report.verification;
    if json {
        let mut value = checkpoint_json(plan, cp, true);
        value["status"] = json!("done");
        value["verification"] = json!({
            "source_rows": v.source_rows,
            "source_cells": v.source_cells,
            "expected_rows": v.expected_rows,
            "expected_cells": v.expected_cells,
            "target_rows": v.target_rows,
            "target_cells": v.target_cells,
            "matches": v.matches(),
        });
        writeln!(out, "{value:#}")?;
        return Ok(());
    }
    let ttl = plan.effective_ttl()?;
    writeln!(
            out,
            "migrated table `{}`: family `{}` -> `{}` under {} ({}), TTL {} from each cell's write time",
            plan.table,
            plan.from,
            plan.to,
            policy_spec(&plan.policy),
            rule_of(plan.policy),
            span(ttl)
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
    writeln!(out, "  source family `{}` untouched", plan.from)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(unhex(&hex(b"row\xff\x00")).unwrap(), b"row\xff\x00");
        assert!(unhex("abc").is_none());
        assert!(unhex("zz").is_none());
    }

    #[test]
    fn values_print_as_text_or_hex() {
        assert_eq!(printable(b"/home"), "\"/home\"");
        assert_eq!(printable(&[0, 1, 0xff]), "0x0001ff");
    }

    #[tokio::test]
    async fn a_bad_policy_fails_before_connecting() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(
            [
                "bigtable-ttl",
                "audit",
                "t",
                "--family",
                "f",
                "--policy",
                "default=soon",
            ],
            &mut out,
            &mut err,
        )
        .await;
        assert_eq!(code, exit::ERROR);
        let err = String::from_utf8(err).unwrap();
        assert!(err.contains("invalid policy `default=soon`"), "{err}");
    }

    #[tokio::test]
    async fn usage_errors_exit_2() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(["bigtable-ttl", "audit"], &mut out, &mut err).await;
        assert_eq!(code, exit::USAGE);
    }
}
