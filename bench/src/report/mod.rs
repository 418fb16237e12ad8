//! `ttl-bench report --results DIR [--results DIR …] --update
//! BENCHMARKS.md`: the file's generated tables replaced from the JSON the
//! other commands wrote to each `DIR`, one a run, the runs' figures side by
//! side; a table whose JSON is in no `DIR`, and every line of prose, are
//! left as they are. The commands write their JSON by [`write_report`].

mod markdown;
mod null;
mod sections;
mod summary;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde_json::Value;

use crate::Res;

/// A generated table: its name in the file, and its text.
type Generated = (&'static str, String);

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The tables of every run in `results`, merged cell by cell where several
/// runs have a table, written into `update`.
pub(crate) fn run(results: &[PathBuf], update: &Path) -> Res<()> {
    let mut doc = std::fs::read_to_string(update)?;
    let runs: Vec<Vec<Generated>> = results.iter().map(|dir| generate(dir, &doc)).collect();
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in runs.iter().flatten() {
        if !names.contains(name) {
            names.push(name);
        }
    }
    for name in names {
        let texts: Vec<&str> = runs
            .iter()
            .filter_map(|run| run.iter().find(|(n, _)| *n == name))
            .map(|(_, text)| text.as_str())
            .collect();
        let text = match texts[..] {
            [one] => one.to_owned(),
            _ => markdown::merge_runs(&texts).map_err(|e| format!("table {name}: {e}"))?,
        };
        doc = markdown::replace(&doc, name, &text)?;
        eprintln!("table {name}:\n{text}\n");
    }
    std::fs::write(update, doc)?;
    Ok(())
}

/// The tables one run's JSON in `results` gives; `doc`, the file as it is,
/// for the figures the summary carries over.
fn generate(results: &Path, doc: &str) -> Vec<Generated> {
    let json = |name: &str| read_json(&results.join(format!("{name}.json")));
    let mut generated = Vec::new();
    if let Some(e2e) = json("e2e") {
        let old = markdown::get(doc, "summary").unwrap_or_default();
        generated.push(("summary", summary::summary(results, &e2e, old)));
    }
    for (name, render) in [
        (
            "parallel",
            sections::parallel as fn(&Value) -> Vec<Generated>,
        ),
        ("latency", sections::latency),
        ("concurrency", sections::concurrency),
        ("null", null::null_tables),
        ("fair", null::fair_tables),
    ] {
        generated.extend(json(name).as_ref().map(render).unwrap_or_default());
    }
    generated
}

/// Write a command's `report` to `out` with the machine's cores and the
/// date, which [`run_on`] shows above each of its tables.
pub(crate) fn write_report(out: &Path, mut report: Value) -> Res<()> {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    report["cores"] = cores.into();
    report["date"] = Utc::now().format("%Y-%m-%d").to_string().into();
    std::fs::write(out, serde_json::to_string_pretty(&report)?)?;
    Ok(())
}

/// "Run on DATE (N cores, a load average of A at the start and B at the
/// end)." from a command's JSON (`date`, `cores`, `load_average`).
fn run_on(report: &Value) -> String {
    let mut machine = format!("{} cores", report["cores"]);
    if let Some((start, end)) = load(&report["load_average"]) {
        let _ = write!(
            machine,
            ", a load average of {start:.1} at the start and {end:.1} at the end"
        );
    }
    let date = report["date"].as_str().unwrap_or("?");
    format!("Run on {date} ({machine}).")
}

/// A `[start, end]` load average, when both were read.
fn load(pair: &Value) -> Option<(f64, f64)> {
    Some((pair[0].as_f64()?, pair[1].as_f64()?))
}

/// A JSON number; NaN for anything else (shown as `NaN`, as a measure not
/// taken).
fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// A JSON number with `decimals` decimals.
fn fixed(v: &Value, decimals: usize) -> String {
    format!("{:.*}", decimals, num(v))
}

/// A target's verdict, as every table gives it.
fn verdict(met: bool) -> &'static str {
    if met {
        "**met**"
    } else {
        "**missed**"
    }
}
