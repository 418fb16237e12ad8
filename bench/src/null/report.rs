//! The tables of `BENCHMARKS.md`'s "Against a null server", from the JSON
//! of `ttl-bench null`: per contender and phase the figures, then the
//! targets of issue 23 as ratios paired within rounds.

use std::fmt::Write as _;

use serde_json::Value;
use ttl_bench::stats::{median, paired, Quartiles};

use crate::report::{run_on, Generated};

/// The phases, as the JSON keys them and as the report names them.
const PHASES: [(&str, &str); 2] = [("write", "write"), ("read", "filtered scan + decode")];

/// Memory is flat in N when the peak grows, per row added, by less than
/// this share of what a row takes on the wire: no row is held, and what
/// remains is the allocator's own growth (which levels off).
const FLAT: f64 = 0.10;

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

/// One contender's one phase, per round and summed up.
struct Phase {
    /// Client CPU per row, per round: the process's CPU less the median of
    /// its one-row runs, over the rows.
    cpu_per_row: Vec<f64>,
    /// Rows per second, per round: the rows over the process's wall time
    /// less the median of its one-row runs.
    rate: Vec<f64>,
    /// From inside the process (Rust and Node): CPU per row, and
    /// allocations per row (Rust).
    inner_cpu_per_row: f64,
    allocations_per_row: f64,
    bytes_per_row: f64,
    peak_kib: f64,
    peak_one_kib: f64,
    peak_big_kib: f64,
    /// The null server's CPU over the phase, as cores busy.
    server_cores: f64,
    client_cores: f64,
}

fn phase(report: &Value, who: &str, key: &str) -> Option<Phase> {
    let runs = &report["runs"][who];
    let rows = report["rows"].as_f64()?;
    let list = |k: &str| runs[k].as_array().cloned().unwrap_or_default();
    let (full, one, big) = (
        list(key),
        list(&format!("{key}_1")),
        list(&format!("{key}_big")),
    );
    if full.is_empty() {
        return None;
    }
    let fixed_cpu = median(one.iter().map(|r| num(r, "cpu_s")));
    let fixed_wall = median(one.iter().map(|r| num(r, "wall_s")));
    let inner = |k: &str| median(full.iter().map(|r| num(&r["inner"], k) / rows));
    Some(Phase {
        cpu_per_row: full
            .iter()
            .map(|r| (num(r, "cpu_s") - fixed_cpu) / rows)
            .collect(),
        rate: full
            .iter()
            .map(|r| rows / (num(r, "wall_s") - fixed_wall))
            .collect(),
        inner_cpu_per_row: inner("cpu_s"),
        allocations_per_row: inner("allocations"),
        bytes_per_row: inner("bytes_allocated"),
        peak_kib: median(full.iter().map(|r| num(r, "peak_rss_kib"))),
        peak_one_kib: median(one.iter().map(|r| num(r, "peak_rss_kib"))),
        peak_big_kib: median(big.iter().map(|r| num(r, "peak_rss_kib"))),
        server_cores: median(
            full.iter()
                .map(|r| num(r, "server_cpu_s") / num(r, "wall_s")),
        ),
        client_cores: median(full.iter().map(|r| num(r, "cpu_s") / num(r, "wall_s"))),
    })
}

fn contender_name(who: &str) -> &'static str {
    match who {
        "lib" => "library (`Table::writer` / `Table::stream`)",
        "raw" => "hand-written `bigtable_rs`",
        "go" => "Go (`cbt import` / `cbt read`)",
        "node" => "Node.js (`mutate` / `createReadStream`)",
        _ => "?",
    }
}

fn mib(kib: f64) -> String {
    if kib.is_finite() {
        format!("{:.1} MiB", kib / 1024.0)
    } else {
        "–".to_owned()
    }
}

/// A ratio's median and quartiles as `m (quartiles q1–q3)`.
pub(super) fn ratio_text(q: Quartiles) -> String {
    format!("{:.2} (quartiles {:.2}–{:.2})", q.median, q.q1, q.q3)
}

/// `BENCHMARKS.md`'s tables of `ttl-bench null`'s JSON: the figures of
/// each contender and phase, the targets, the library's write profiled.
pub(crate) fn tables(report: &Value) -> Vec<Generated> {
    let rows = report["rows"].as_u64().unwrap_or(0);
    let big = report["big_rows"].as_u64().unwrap_or(0);
    let contenders: Vec<&str> = report["contenders"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut table = String::from(
        "| phase | contender | rows/s | client CPU per row | rows per client core-second | \
         allocations per row | peak RSS: 1 row / N / 10 N | client + null server, cores busy |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for (key, phase_name) in PHASES {
        for &who in &contenders {
            let Some(p) = phase(report, who, key) else {
                continue;
            };
            let cpu = median(&p.cpu_per_row);
            let inner = if p.inner_cpu_per_row.is_finite() {
                format!(" (inside: {:.2} µs)", p.inner_cpu_per_row * 1e6)
            } else {
                String::new()
            };
            let allocations = if p.allocations_per_row.is_finite() {
                format!("{:.1} ({:.0} B)", p.allocations_per_row, p.bytes_per_row)
            } else {
                "–".to_owned()
            };
            let _ = writeln!(
                table,
                "| {phase_name} | {} | {:.0} | {:.2} µs{inner} | {:.0} | {allocations} | {} / {} / {} | {:.2} + {:.2} |",
                contender_name(who),
                median(&p.rate),
                cpu * 1e6,
                1.0 / cpu,
                mib(p.peak_one_kib),
                mib(p.peak_kib),
                mib(p.peak_big_kib),
                p.client_cores,
                p.server_cores,
            );
        }
    }

    let mut targets =
        String::from("| target | measured (median of the rounds' ratios) | |\n|---|---|---|\n");
    // The verdict only on the lines with a target.
    let mut target = |what: &str, value: Quartiles, want: &str, met: bool| {
        let verdict = match (want.is_empty(), value.median.is_nan(), met) {
            (true, ..) => " ",
            (false, true, _) => " not measured ",
            (false, false, true) => " **met** ",
            (false, false, false) => " **missed** ",
        };
        let _ = writeln!(
            targets,
            "| {what} {want} | {} |{verdict}|",
            ratio_text(value)
        );
    };
    let lib_write = phase(report, "lib", "write");
    let lib_read = phase(report, "lib", "read");
    for (other, name, want) in [
        ("go", "Go's", Some(3.0)),
        ("node", "Node's", Some(10.0)),
        ("raw", "hand-written `bigtable_rs`'s", None),
    ] {
        if let (Some(l), Some(o)) = (&lib_write, phase(report, other, "write")) {
            // Throughput per client core is rows per CPU second.
            let r = paired(&l.cpu_per_row, &o.cpu_per_row, |l, o| o / l);
            let what = format!("write throughput per client core, library / {name}");
            let want_text = want.map(|w| format!("≥ {w}")).unwrap_or_default();
            target(&what, r, &want_text, want.is_none_or(|w| r.median >= w));
        }
    }
    if let (Some(l), Some(g)) = (&lib_write, phase(report, "go", "write")) {
        let r = paired(&l.cpu_per_row, &g.cpu_per_row, |l, g| l / g);
        let what = "client CPU per row written, library / Go's";
        target(what, r, "≤ 0.25", r.median <= 0.25);
    }
    for (other, what, want) in [
        (
            "go",
            "filtered scan + decode, rows/s, library / Go's `cbt read`",
            Some(2.0),
        ),
        (
            "node",
            "filtered scan + decode, rows/s, library / Node's",
            None,
        ),
        (
            "raw",
            "filtered scan + decode, rows/s, library / hand-written",
            None,
        ),
    ] {
        if let (Some(l), Some(o)) = (&lib_read, phase(report, other, "read")) {
            let r = paired(&l.rate, &o.rate, |l, o| l / o);
            let core = paired(&l.cpu_per_row, &o.cpu_per_row, |l, o| o / l);
            let want_text = want.map(|w| format!("≥ {w}")).unwrap_or_default();
            target(what, r, &want_text, want.is_none_or(|w| r.median >= w));
            target(&what.replace("rows/s", "per client core"), core, "", true);
        }
    }
    let row_bytes = report["row_bytes"].as_f64().unwrap_or(f64::NAN);
    for (key, p) in [("write", &lib_write), ("filtered scan + decode", &lib_read)] {
        if let Some(p) = p {
            #[allow(clippy::cast_precision_loss)]
            let per_row = (p.peak_big_kib - p.peak_kib) * 1024.0 / (big - rows) as f64;
            let flat = per_row < FLAT * row_bytes;
            let _ = writeln!(
                targets,
                "| library {key}: memory flat in N (peak RSS growth per row added, from {rows} \
                 to {big} rows, ≤ {:.0}% of a row's {row_bytes:.0} B on the wire) | \
                 {:.1} → {:.1} MiB: {per_row:+.1} B a row | {} |",
                FLAT * 100.0,
                p.peak_kib / 1024.0,
                p.peak_big_kib / 1024.0,
                if flat { "**met**" } else { "**missed**" }
            );
        }
    }
    let mut generated = vec![
        ("null", format!("{}\n\n{table}", run_on(report))),
        ("null-targets", targets),
    ];
    generated.extend(write_profile(&report["profile"]["lib-write"]));
    generated
}

/// The library's write under callgrind: its instructions a row, and the
/// instructions of its parts (each with everything it calls).
fn write_profile(p: &Value) -> Option<Generated> {
    let (total, rows) = (p["total"].as_f64()?, p["rows"].as_f64()?);
    let share = |n: f64| 100.0 * n / total;
    let mut text = format!(
        "{rows} rows, the whole process: {:.0} instructions a row.\n\n\
         | part | instructions a row | share |\n|---|---|---|\n",
        total / rows
    );
    for part in p["parts"].as_array().into_iter().flatten() {
        if let (Some(what), Some(n)) = (part[0].as_str(), part[1].as_f64()) {
            if n > 0.0 {
                let _ = writeln!(text, "| {what} | {:.0} | {:.0}% |", n / rows, share(n));
            }
        }
    }
    Some(("null-profile", text))
}
