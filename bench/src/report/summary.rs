//! The first table of `BENCHMARKS.md`: the machine, then a line per measure
//! of the criterion benches, `e2e`, `compile` (`bench/run.sh`'s) and
//! `instructions`.

use std::path::Path;

use serde_json::Value;

use super::markdown::line;
use super::{load, num, read_json, verdict};

/// Said of a figure kept from the file, not measured in this run.
const CARRIED: &str = " (not measured again: the previous run's)";

/// A target with its verdict: `≥ 5: **met**`.
fn judged(target: &str, met: bool) -> String {
    format!("{target}: {}", verdict(met))
}

/// The summary of `dir`'s JSON. A line of `old` (the table as the file has
/// it) whose measure has no JSON in `dir` is kept, said so, so that running
/// one command again does not drop the others' figures.
pub(super) fn summary(dir: &Path, e2e: &Value, old: &str) -> String {
    let rows = num(&e2e["rows"]);
    let mut t = String::from("| measure | figure | target |\n|---|---|---|\n");
    let mut add = |what: &str, value: String, target: &str| t += &line([what, &value, target]);
    for group in ["build", "decode"] {
        let mean = |name: &str| {
            let estimates = dir.join(format!("criterion/{group}/{name}/new/estimates.json"));
            read_json(&estimates)?["mean"]["point_estimate"].as_f64()
        };
        if let (Some(derive), Some(hand)) = (mean("derive"), mean("hand")) {
            let (ratio, derive, hand) = (derive / hand, derive / 1e3, hand / 1e3);
            add(
                &format!("{group}, 1,000 rows: derive / hand-written time"),
                format!("{ratio:.3} ({derive:.0} ns vs {hand:.0} ns per row)"),
                &judged("≤ 1.05", ratio <= 1.05),
            );
        }
    }
    let rate = |c: &str, key: &str| rows / num(&e2e[c][key]);
    let paired = |key: &str| num(&e2e["paired"][key]);
    let contenders = ["lib", "lib-by-column", "lib-put-all", "raw", "python"];
    for (key, what) in [("write_s", "write"), ("scan_s", "filtered scan")] {
        for c in contenders.into_iter().filter(|c| e2e.get(c).is_some()) {
            let rate = format!("{:.0}", rate(c, key));
            add(&format!("{what} {rows} rows, {c}: rows/s"), rate, "");
        }
        let lib = rate("lib", key);
        let (median, of_medians) = (paired(key), lib / rate("raw", key));
        let (q1, q3) = (paired(&format!("{key}_q1")), paired(&format!("{key}_q3")));
        add(
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
        add(
            &format!("{what}: client CPU time, library / hand-written bigtable_rs"),
            format!(
                "{lib_cpu:.2} s / {raw_cpu:.2} s = {ratio:.2} \
                 (median of the rounds' ratios: {paired_ratio:.2})"
            ),
            "",
        );
        if e2e.get("python").is_some() {
            let over_python = lib / rate("python", key);
            add(
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
        add(
            "write: emulator CPU per row, `owns_family` (one `DeleteFromFamily`, lib) / per-column deletes (lib-by-column)",
            per_row(emulator_write),
            &judged("≤ 0.5", num(&family[emulator_write]) <= 0.5),
        );
        let (lib, by_column) = (&e2e["lib"]["write_s"], &e2e["lib-by-column"]["write_s"]);
        let (lib, by_column, ratio) = (num(lib), num(by_column), ratio("write_s"));
        add(
            "write: wall time, `owns_family` / per-column deletes",
            format!("{lib:.3} s / {by_column:.3} s; median of the rounds' ratios {ratio}"),
            "",
        );
        let cpu = "write: client CPU per row, `owns_family` / per-column deletes";
        add(cpu, per_row("write_cpu_s"), "");
        let scan = "filtered scan: emulator CPU per row, `owns_family` / per-column deletes";
        add(scan, per_row("scan_emulator_cpu_s"), "");
    }
    for c in contenders {
        if let Some(kib) = e2e.get(c).and_then(|v| v["peak_rss_kib"].as_f64()) {
            let mib = format!("{:.1} MiB", kib / 1024.0);
            add(&format!("peak RSS after writing {rows} rows, {c}"), mib, "");
        }
    }
    let f = &e2e["filtering"];
    let (typed, raw) = (num(&f["typed_bytes"]), num(&f["unfiltered_bytes"]));
    let (ratio, saved) = (typed / raw, 100.0 * (1.0 - typed / raw));
    let (written, returned) = (&f["rows_written"], &f["typed_rows_received"]);
    let unfiltered = &f["unfiltered_rows_received"];
    add(
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
        add(
            "cargo build of 50 structs: BigtableRow / serde Serialize+Deserialize",
            format!("{derive:.2} s / {serde:.2} s = {:.2}", derive / serde),
            "",
        );
    }
    if let Some(ins) = read_json(&dir.join("instructions.json")) {
        let (lib, raw, rows) = (num(&ins["lib"]), num(&ins["raw"]), &ins["rows"]);
        add(
            &format!(
                "client instructions (callgrind), write + filtered scan of {rows} rows: lib / raw"
            ),
            format!("{:.0} M / {:.0} M = {:.3}", lib / 1e6, raw / 1e6, lib / raw),
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
            t += &line([label, &format!("{value}{CARRIED}"), target]);
        }
    }
    let load = load(&e2e["load_average"]).map_or(String::new(), |(start, end)| {
        format!(
            " (the end-to-end rounds with a load average of {start:.1} at their start and \
             {end:.1} at their end)"
        )
    });
    format!(
        "Machine: {}.\n\nRun on {}{load}.\n\n{t}",
        e2e["machine"].as_str().unwrap_or("?"),
        e2e["date"].as_str().unwrap_or("?"),
    )
}
