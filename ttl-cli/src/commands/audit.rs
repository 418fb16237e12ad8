//! `bigtable-ttl audit`: count what a policy would do to a family.

use std::io::Write;

use clap::Args;
use serde::Serialize;
use ttl_runtime::ops::{self, parse_policy, policy_spec, AuditReport, AuditRequest};

use crate::exit;
use crate::output::{instant, print_json, progress_bar, rule_of, span, tick, Fallible};
use crate::target::Target;

/// Count what a policy would do to a family: cells and rows it would
/// delete at once, real vs artificial timestamps, oldest and newest.
/// Exit status 3 when it would delete data.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
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
}

pub(crate) async fn exec(target: &Target, args: AuditArgs, out: &mut dyn Write) -> Fallible<i32> {
    // Parse what needs no server first: a typo fails before connecting.
    let policy = parse_policy(&args.policy)?;
    let conn = target.connect().await?;
    let bar = progress_bar(args.json, "auditing");
    let request = AuditRequest::new(args.table, args.family, policy);
    let report = ops::audit(&conn, &request, |p| tick(&bar, p)).await;
    bar.finish_and_clear();
    let report = report?;
    if args.json {
        print_json(out, &AuditJson::new(&report))?;
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

/// `audit --json`, and the `audit` of `apply --json`.
#[derive(Debug, Serialize)]
pub(crate) struct AuditJson {
    table: String,
    family: String,
    policy: String,
    gc_rule: String,
    now: String,
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
    widest_expiry_spread: String,
    would_delete_data: bool,
}

impl AuditJson {
    pub(crate) fn new(r: &AuditReport) -> Self {
        Self {
            table: r.table.clone(),
            family: r.family.clone(),
            policy: policy_spec(&r.policy),
            gc_rule: rule_of(r.policy),
            now: instant(r.now),
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
            widest_expiry_spread: span(r.widest_expiry_spread()),
            would_delete_data: r.would_delete_data(),
        }
    }
}
