//! `ttl-bench report --results DIR [--results DIR …] --update
//! BENCHMARKS.md`: the file's generated tables replaced from the JSON the
//! other commands wrote to each `DIR`, one a run, the runs' figures side by
//! side (see `ttl_bench::tables`); a table whose JSON is in no `DIR`, and
//! every line of prose, are left as they are.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde_json::Value;
use ttl_bench::tables;

use crate::{concurrency, latency, null, parallel, Res};

/// A generated table: its name in the file, and its text.
pub(crate) type Generated = (&'static str, String);
type Render = fn(&Value) -> Vec<Generated>;

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
            _ => tables::merge_runs(&texts).map_err(|e| format!("table {name}: {e}"))?,
        };
        doc = tables::replace(&doc, name, &text)?;
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
        let old = tables::get(doc, "summary").unwrap_or_default();
        generated.push(("summary", summary(results, &e2e, old)));
    }
    for (name, render) in [
        ("parallel", parallel::tables as Render),
        ("latency", latency::tables),
        ("concurrency", concurrency::tables),
        ("null", null::report::null_tables),
        ("fair", null::report::fair_tables),
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
pub(crate) fn run_on(report: &Value) -> String {
    let mut machine = format!("{} cores", report["cores"]);
    let load = &report["load_average"];
    if let (Some(start), Some(end)) = (load[0].as_f64(), load[1].as_f64()) {
        let _ = write!(
            machine,
            ", a load average of {start:.1} at the start and {end:.1} at the end"
        );
    }
    let date = report["date"].as_str().unwrap_or("?");
    format!("Run on {date} ({machine}).")
}

/// A table per target of `report` (`targets.NAME`, as `latency` and
/// `concurrency` write them) that was measured, `render`ed under the line
/// saying when and at what load.
pub(crate) fn per_target(
    report: &Value,
    names: [(&str, &'static str); 2],
    render: fn(&Value) -> String,
) -> Vec<Generated> {
    names
        .into_iter()
        .filter(|(target, _)| !report["targets"][target].is_null())
        .map(|(target, name)| {
            let measured = &report["targets"][target];
            let run = serde_json::json!({"date": report["date"], "cores": report["cores"],
                                         "load_average": measured["load_average"]});
            (name, format!("{}\n\n{}", run_on(&run), render(measured)))
        })
        .collect()
}

/// A target's verdict, as every table gives it.
pub(crate) fn verdict(met: bool) -> &'static str {
    if met {
        "**met**"
    } else {
        "**missed**"
    }
}

/// A target with its verdict: `≥ 5: **met**`.
fn judged(target: &str, met: bool) -> String {
    format!("{target}: {}", verdict(met))
}

/// Said of a figure kept from the file, not measured in this run.
const CARRIED: &str = " (not measured again: the previous run's)";

/// The first table: the machine, then a line per measure of the criterion
/// benches, `e2e`, `compile` (`bench/run.sh`'s) and `instructions`. A line
/// of `old` (the table as the file has it) whose measure has no JSON in
/// `dir` is kept, said so, so that running one command again does not drop
/// the others' figures.
fn summary(dir: &Path, e2e: &Value, old: &str) -> String {
    let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let rows = num(&e2e["rows"]);
    let mut t = String::from("| measure | figure | target |\n|---|---|---|\n");
    let mut line = |what: &str, value: String, target: &str| {
        let _ = writeln!(t, "| {what} | {value} | {target} |");
    };
    for group in ["build", "decode"] {
        let mean = |name: &str| {
            let estimates = dir.join(format!("criterion/{group}/{name}/new/estimates.json"));
            read_json(&estimates)?["mean"]["point_estimate"].as_f64()
        };
        if let (Some(derive), Some(hand)) = (mean("derive"), mean("hand")) {
            let (ratio, derive, hand) = (derive / hand, derive / 1e3, hand / 1e3);
            let what = format!("{group}, 1,000 rows: derive / hand-written time");
            let figure = format!("{ratio:.3} ({derive:.0} ns vs {hand:.0} ns per row)");
            line(&what, figure, &judged("≤ 1.05", ratio <= 1.05));
        }
    }
    let rate = |c: &str, key: &str| rows / num(&e2e[c][key]);
    let paired = |key: &str| num(&e2e["paired"][key]);
    let contenders = ["lib", "lib-by-column", "lib-put-all", "raw", "python"];
    for (key, what) in [("write_s", "write"), ("scan_s", "filtered scan")] {
        for c in contenders.into_iter().filter(|c| e2e.get(c).is_some()) {
            let rate = format!("{:.0}", rate(c, key));
            line(&format!("{what} {rows} rows, {c}: rows/s"), rate, "");
        }
        let lib = rate("lib", key);
        let (median, of_medians) = (paired(key), lib / rate("raw", key));
        let (q1, q3) = (paired(&format!("{key}_q1")), paired(&format!("{key}_q3")));
        line(
            &format!("{what}: a/b (library / hand-written bigtable_rs), throughput"),
            format!(
                "{median:.3} (median of the rounds' ratios, quartiles {q1:.3}–{q3:.3}; \
                 {of_medians:.3} from the medians above)"
            ),
            &judged("≥ 0.95", median >= 0.95),
        );
        let cpu_key = key.replace("_s", "_cpu_s");
        let (lib_cpu, raw_cpu) = (num(&e2e["lib"][&cpu_key]), num(&e2e["raw"][&cpu_key]));
        let (ratio, paired_ratio) = (lib_cpu / raw_cpu, 1.0 / paired(&cpu_key));
        line(
            &format!("{what}: client CPU time, library / hand-written bigtable_rs"),
            format!(
                "{lib_cpu:.2} s / {raw_cpu:.2} s = {ratio:.2} \
                 (median of the rounds' ratios: {paired_ratio:.2})"
            ),
            "",
        );
        if e2e.get("python").is_some() {
            let over_python = lib / rate("python", key);
            line(
                &format!("{what}: a/c (library / Python client)"),
                format!("{over_python:.1}"),
                &judged("≥ 5", over_python >= 5.0),
            );
        }
    }
    let family = &e2e["owns_family"];
    if family.is_object() {
        let ratio = |key: &str| {
            let f = |suffix: &str| num(&family[format!("{key}{suffix}")]);
            format!("{:.3} (quartiles {:.3}–{:.3})", f(""), f("_q1"), f("_q3"))
        };
        let per_row = |key: &str| {
            let us = |c: &str| 1e6 * num(&e2e[c][key]) / rows;
            let (lib, by_column) = (us("lib"), us("lib-by-column"));
            format!(
                "{lib:.2} µs / {by_column:.2} µs; median of the rounds' ratios {}",
                ratio(key)
            )
        };
        let emulator_write = "write_emulator_cpu_s";
        line(
            "write: emulator CPU per row, `owns_family` (one `DeleteFromFamily`, lib) / per-column deletes (lib-by-column)",
            per_row(emulator_write),
            &judged("≤ 0.5", num(&family[emulator_write]) <= 0.5),
        );
        let (lib, by_column) = (&e2e["lib"]["write_s"], &e2e["lib-by-column"]["write_s"]);
        let (lib, by_column, ratio) = (num(lib), num(by_column), ratio("write_s"));
        line(
            "write: wall time, `owns_family` / per-column deletes",
            format!("{lib:.3} s / {by_column:.3} s; median of the rounds' ratios {ratio}"),
            "",
        );
        line(
            "write: client CPU per row, `owns_family` / per-column deletes",
            per_row("write_cpu_s"),
            "",
        );
        line(
            "filtered scan: emulator CPU per row, `owns_family` / per-column deletes",
            per_row("scan_emulator_cpu_s"),
            "",
        );
    }
    for c in contenders {
        if let Some(kib) = e2e.get(c).and_then(|v| v["peak_rss_kib"].as_f64()) {
            let mib = format!("{:.1} MiB", kib / 1024.0);
            line(&format!("peak RSS after writing {rows} rows, {c}"), mib, "");
        }
    }
    let f = &e2e["filtering"];
    let (typed, raw) = (num(&f["typed_bytes"]), num(&f["unfiltered_bytes"]));
    let (ratio, saved) = (typed / raw, 100.0 * (1.0 - typed / raw));
    let (written, returned) = (&f["rows_written"], &f["typed_rows_received"]);
    let unfiltered = &f["unfiltered_rows_received"];
    line(
        &format!(
            "bytes received, {written} rows with half expired not collected: \
             typed read / unfiltered"
        ),
        format!(
            "{typed:.0} / {raw:.0} B = {ratio:.2} \
             ({saved:.0}% saved; {returned} of {unfiltered} rows returned)"
        ),
        "",
    );
    if let Some(compile) = read_json(&dir.join("compile.json")) {
        let (derive, serde) = (num(&compile["derive_s"]), num(&compile["serde_s"]));
        line(
            "cargo build of 50 structs: BigtableRow / serde Serialize+Deserialize",
            format!("{derive:.2} s / {serde:.2} s = {:.2}", derive / serde),
            "",
        );
    }
    if let Some(ins) = read_json(&dir.join("instructions.json")) {
        let (lib, raw, rows) = (num(&ins["lib"]), num(&ins["raw"]), &ins["rows"]);
        let (lib_m, raw_m, ratio) = (lib / 1e6, raw / 1e6, lib / raw);
        line(
            &format!(
                "client instructions (callgrind), write + filtered scan of {rows} rows: lib / raw"
            ),
            format!("{lib_m:.0} M / {raw_m:.0} M = {ratio:.3}"),
            "",
        );
    }
    // The old lines whose measure this run did not take, kept.
    for row in old.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let (label, Some(value)) = (cells[0], cells.get(1)) else {
            continue;
        };
        if !t.lines().any(|l| l.starts_with(&format!("| {label} |"))) {
            let value = value.strip_suffix(CARRIED).unwrap_or(value);
            let target = cells.get(2).copied().unwrap_or("");
            let _ = writeln!(t, "| {label} | {value}{CARRIED} | {target} |");
        }
    }
    let load = &e2e["load_average"];
    let load = match (load[0].as_f64(), load[1].as_f64()) {
        (Some(start), Some(end)) => format!(
            " (the end-to-end rounds with a load average of {start:.1} at their start and \
             {end:.1} at their end)"
        ),
        _ => String::new(),
    };
    format!(
        "Machine: {}.\n\nRun on {}{load}.\n\n{t}",
        e2e["machine"].as_str().unwrap_or("?"),
        e2e["date"].as_str().unwrap_or("?"),
    )
}
