//! `bigtable-ttl apply`: set a family's GC rule to a policy's, after an audit.

use std::io::Write;

use super::audit::verdict;
use crate::exit;
use crate::output::{print_json, progress_bar, tick, Fallible};
use crate::target::Target;
use bigtable_ttl_runtime::admin::describe_rule;
use bigtable_ttl_runtime::admin::GcRule;
use bigtable_ttl_runtime::ops::{self, parse_policy, ApplyOutcome, ApplyRequest};
use clap::Args;

/// Set a family's GC rule to a policy's, after an audit; refused (exit
/// status 3) when data would be lost, unless --force.
#[derive(Debug, Args)]
pub(crate) struct ApplyArgs {
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
}

pub(crate) async fn exec(target: &Target, args: ApplyArgs, out: &mut dyn Write) -> Fallible<i32> {
    let policy = parse_policy(&args.policy)?;
    let conn = target.connect().await?;
    let bar = progress_bar(args.json, "auditing");
    let request = ApplyRequest::new(args.table, args.family, policy).with_force(args.force);
    let outcome = ops::apply(&conn, &request, |p| tick(&bar, &p)).await;
    bar.finish_and_clear();
    print_outcome(out, &outcome?, args.json)
}

fn print_outcome(out: &mut dyn Write, outcome: &ApplyOutcome, json: bool) -> Fallible<i32> {
    let rule = |r: Option<&GcRule>| r.map_or_else(|| "missing".to_owned(), describe_rule);
    let (before, after, code) = match outcome {
        ApplyOutcome::Applied { before, after, .. } => {
            (rule(before.as_ref()), rule(Some(after)), exit::OK)
        }
        ApplyOutcome::Unchanged { rule: r, .. } => (rule(Some(r)), rule(Some(r)), exit::OK),
        ApplyOutcome::Refused { rule: r, .. } => {
            (rule(r.as_ref()), rule(r.as_ref()), exit::WOULD_DELETE)
        }
    };
    let audit = outcome.audit();
    if json {
        print_json(out, outcome)?;
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
