//! `bigtable-ttl inspect`: every cell of one row, with its expiry under the
//! family's live rule and its real write time; or, without a row, when a
//! family's cells expire (under its live rule and a proposed policy).

use std::io::Write;

use std::path::PathBuf;

use bigtable_ttl_runtime::admin::describe_rule;
use bigtable_ttl_runtime::ops::{
    self, parse_policy, policy_spec, ExpiryRequest, FamilyExpiries, InspectRequest, Part,
    RowInspection,
};
use bigtable_ttl_runtime::{LEGACY_ROW_MARKER, ROW_MARKER_PREFIX};
use clap::Args;

use crate::chart::{self, Labeled};
use crate::exit;
use crate::output::{
    instant, instant_micros, print_json, print_table, printable, shows_progress, span, Fallible,
    PartProgress,
};
use crate::target::Target;

/// Every cell of one row with its timestamp, whether it is alive, when it
/// expires under the family's live rule, the time left, and the real write
/// time from the shadow column (Cassandra's TTL() and WRITETIME()).
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The table.
    table: String,
    /// The row key. Without it: when the cells of --family expire, under
    /// its live rule (and --policy), drawn per bucket and per day.
    #[arg(required_unless_present = "family")]
    row: Option<String>,
    /// Only this family.
    #[arg(long, short)]
    family: Option<String>,
    /// Without a row: also draw the family's cells under this policy
    /// (`one-second` or `default=DURATION`).
    #[arg(long, short, conflicts_with = "row")]
    policy: Option<String>,
    /// Without a row: also draw when the cells expire as an SVG file.
    #[arg(long, value_name = "FILE", conflicts_with = "row")]
    svg: Option<PathBuf>,
    /// The shadow column's qualifier.
    #[arg(long, default_value = ops::DEFAULT_WRITTEN_AT)]
    written_at: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn exec(target: &Target, args: InspectArgs, out: &mut dyn Write) -> Fallible<i32> {
    let Some(row) = args.row.clone() else {
        return inspect_family(target, args, out).await;
    };
    let conn = target.connect().await?;
    let mut request = InspectRequest::new(args.table, row).with_written_at(args.written_at);
    if let Some(family) = args.family {
        request = request.with_family(family);
    }
    let inspection = ops::inspect(&conn, &request).await?;
    if args.json {
        print_json(out, &inspection)?;
    } else {
        print_inspection(out, &inspection)?;
    }
    Ok(if inspection.cells.is_empty() {
        exit::ERROR
    } else {
        exit::OK
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
            let column = column_label(&c.family, &c.qualifier, c.is_shadow);
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
    print_table(out, header, &rows)
}

/// How the readable table names a column: the shadow column and the row
/// markers labelled, a marker's NUL bytes escaped (a terminal shows none).
fn column_label(family: &str, qualifier: &[u8], is_shadow: bool) -> String {
    if qualifier == LEGACY_ROW_MARKER {
        return format!("{family}:{} (row marker, legacy)", qualifier.escape_ascii());
    }
    if let Some(name) = qualifier.strip_prefix(ROW_MARKER_PREFIX) {
        return format!(
            "{family}:{} (row marker of `{}`)",
            qualifier.escape_ascii(),
            String::from_utf8_lossy(name)
        );
    }
    let shadow = if is_shadow { " (shadow)" } else { "" };
    format!("{family}:{}{shadow}", String::from_utf8_lossy(qualifier))
}

/// `inspect TABLE --family F [--policy P]`: when the family's cells expire.
async fn inspect_family(target: &Target, args: InspectArgs, out: &mut dyn Write) -> Fallible<i32> {
    let family = args
        .family
        .clone()
        .ok_or("inspect needs a ROW or --family")?;
    let mut request = ExpiryRequest::new(args.table.clone(), family);
    if let Some(policy) = &args.policy {
        request = request.with_proposed(parse_policy(policy)?);
    }
    let conn = target.connect().await?;
    let samples = if shows_progress(args.json) {
        ops::key_samples(&conn, &args.table)
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let progress = PartProgress::new(args.json, "reading", &Part::whole(), samples);
    let found = ops::expiries(&conn, &request, |p| {
        progress.update(p.rows, p.cells, p.last_row_key.as_deref());
    })
    .await;
    progress.finish();
    let found = found?;
    let charts = family_charts(&found);
    if let Some(path) = &args.svg {
        let title = format!(
            "When the cells of `{}`, family `{}`, expire (from {})",
            found.table,
            found.family,
            instant(found.current.now)
        );
        chart::write_svg(path, &title, &charts)?;
    }
    if args.json {
        print_json(out, &found)?;
    } else {
        writeln!(
            out,
            "table `{}`, family `{}`: {} rows, {} cells",
            found.table,
            found.family,
            found.rows,
            found.current.cells()
        )?;
        chart::print_text(out, &charts)?;
    }
    Ok(exit::OK)
}

fn family_charts(found: &FamilyExpiries) -> Vec<Labeled<'_>> {
    let mut charts = vec![Labeled {
        what: "live rule",
        histogram: &found.current,
    }];
    if let Some(proposed) = &found.proposed {
        charts.push(Labeled {
            what: "proposed policy",
            histogram: proposed,
        });
    }
    charts
}
