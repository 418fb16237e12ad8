//! The tables of `BENCHMARKS.md`'s "Against a null server" (`null`'s JSON)
//! and "Like for like" (`fair`'s): each variant's figures, and the targets
//! of issues 23 and 32 as ratios paired within rounds.

use std::fmt::Write as _;

use serde_json::Value;
use ttl_bench::stats::{median, paired, quartiles, Quartiles};

use super::{GO_BATCHES, NODE_BATCHES};
use crate::report::{run_on, verdict, Generated};

/// Memory is flat in N when the peak grows, per row added, by less than
/// this share of what a row takes on the wire: no row is held, and what
/// remains is the allocator's own growth (which levels off).
const FLAT: f64 = 0.10;

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

/// One variant's figures: per round, client CPU µs a row and rows a second
/// with the median of its one-row runs taken off; the rest medians.
struct Figures {
    cpu_us: Vec<f64>,
    rate: Vec<f64>,
    /// The one-row runs' CPU: start-up, connecting, a handshake.
    fixed_cpu_ms: f64,
    /// CPU over wall time of the null server and of the client.
    server_cores: f64,
    client_cores: f64,
    /// As the process measured itself (Rust and Node), per row: CPU µs,
    /// and allocations and their bytes (Rust).
    inner_cpu_us: f64,
    allocations: f64,
    allocated_bytes: f64,
    /// Peak RSS, KiB, with one row, N rows and the memory pass's.
    peaks: [f64; 3],
}

fn figures(report: &Value, key: &str) -> Option<Figures> {
    let rows = report["rows"].as_f64()?;
    let runs = |list: &str| {
        report["runs"][key][list]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let (full, one, big) = (runs("full"), runs("one"), runs("big"));
    if full.is_empty() {
        return None;
    }
    let of = |runs: &[Value], f: &dyn Fn(&Value) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let fixed_cpu = median(of(&one, &|r| num(r, "cpu_s")));
    let fixed_wall = median(of(&one, &|r| num(r, "wall_s")));
    let inner = |k: &str| median(of(&full, &|r| num(&r["inner"], k) / rows));
    let peak = |runs: &[Value]| median(of(runs, &|r| num(r, "peak_rss_kib")));
    let cores = |cpu: &str| median(of(&full, &|r| num(r, cpu) / num(r, "wall_s")));
    Some(Figures {
        cpu_us: of(&full, &|r| (num(r, "cpu_s") - fixed_cpu) / rows * 1e6),
        rate: of(&full, &|r| rows / (num(r, "wall_s") - fixed_wall)),
        fixed_cpu_ms: fixed_cpu * 1e3,
        server_cores: cores("server_cpu_s"),
        client_cores: cores("cpu_s"),
        inner_cpu_us: inner("cpu_s") * 1e6,
        allocations: inner("allocations"),
        allocated_bytes: inner("bytes_allocated"),
        peaks: [peak(&one), peak(&full), peak(&big)],
    })
}

/// A ratio's median and quartiles as `m (quartiles q1–q3)`.
fn ratio_text(q: Quartiles) -> String {
    format!("{:.2} (quartiles {:.2}–{:.2})", q.median, q.q1, q.q3)
}

/// `–` for a figure not measured.
fn or_dash(x: f64, text: impl Fn(f64) -> String) -> String {
    Some(x)
        .filter(|x| x.is_finite())
        .map_or("–".to_owned(), text)
}

/// `BENCHMARKS.md`'s tables of `ttl-bench null`'s JSON: each contender's
/// figures, the targets, the library's write profiled.
pub(crate) fn null_tables(report: &Value) -> Vec<Generated> {
    let mut table = String::from(
        "| phase | contender | rows/s | client CPU per row | rows per client core-second | \
         allocations per row | peak RSS: 1 row / N / 10 N | client + null server, cores busy |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    // Each contender's keys, write and read, and its name.
    let contenders = [
        (
            "lib_write",
            "lib_read",
            "library (`Table::writer` / `Table::stream`)",
        ),
        ("raw_write", "raw_read", "hand-written `bigtable_rs`"),
        (
            "go_write_10000",
            "go_print",
            "Go (`cbt import` / `cbt read`)",
        ),
        (
            "node_write_10000",
            "node_read",
            "Node.js (`mutate` / `createReadStream`)",
        ),
    ];
    for (phase, read) in [("write", false), ("filtered scan + decode", true)] {
        for (write_key, read_key, name) in contenders {
            let Some(f) = figures(report, if read { read_key } else { write_key }) else {
                continue;
            };
            let cpu = median(&f.cpu_us);
            let mut cpu_text = format!("{cpu:.2} µs");
            if f.inner_cpu_us.is_finite() {
                let _ = write!(cpu_text, " (inside: {:.2} µs)", f.inner_cpu_us);
            }
            let bytes = f.allocated_bytes;
            let allocations = or_dash(f.allocations, |a| format!("{a:.1} ({bytes:.0} B)"));
            let peaks = f
                .peaks
                .map(|kib| or_dash(kib, |k| format!("{:.1} MiB", k / 1024.0)));
            let (rate, peaks) = (median(&f.rate), peaks.join(" / "));
            let (client, server) = (f.client_cores, f.server_cores);
            let _ = writeln!(
                table,
                "| {phase} | {name} | {rate:.0} | {cpu_text} | {:.0} | {allocations} | {peaks} | \
                 {client:.2} + {server:.2} |",
                1e6 / cpu,
            );
        }
    }
    let mut generated = vec![
        ("null", format!("{}\n\n{table}", run_on(report))),
        ("null-targets", null_targets(report)),
    ];
    generated.extend(write_profile(&report["profile"]["lib-write"]));
    generated
}

fn null_targets(report: &Value) -> String {
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
        let value = ratio_text(value);
        let _ = writeln!(targets, "| {what} {want} | {value} |{verdict}|");
    };
    let at_least = |want: Option<f64>| want.map(|w| format!("≥ {w}")).unwrap_or_default();
    let (lib_write, lib_read) = (figures(report, "lib_write"), figures(report, "lib_read"));
    for (key, name, want) in [
        ("go_write_10000", "Go's", Some(3.0)),
        ("node_write_10000", "Node's", Some(10.0)),
        ("raw_write", "hand-written `bigtable_rs`'s", None),
    ] {
        if let (Some(l), Some(o)) = (&lib_write, figures(report, key)) {
            // Throughput per client core is rows per CPU second.
            let r = paired(&l.cpu_us, &o.cpu_us, |l, o| o / l);
            let what = format!("write throughput per client core, library / {name}");
            let met = want.is_none_or(|w| r.median >= w);
            target(&what, r, &at_least(want), met);
        }
    }
    if let (Some(l), Some(g)) = (&lib_write, figures(report, "go_write_10000")) {
        let r = paired(&l.cpu_us, &g.cpu_us, |l, g| l / g);
        let what = "client CPU per row written, library / Go's";
        target(what, r, "≤ 0.25", r.median <= 0.25);
    }
    for (key, what, want) in [
        ("go_print", "library / Go's `cbt read`", Some(2.0)),
        ("node_read", "library / Node's", None),
        ("raw_read", "library / hand-written", None),
    ] {
        if let (Some(l), Some(o)) = (&lib_read, figures(report, key)) {
            let r = paired(&l.rate, &o.rate, |l, o| l / o);
            let met = want.is_none_or(|w| r.median >= w);
            let rate = format!("filtered scan + decode, rows/s, {what}");
            target(&rate, r, &at_least(want), met);
            let core = paired(&l.cpu_us, &o.cpu_us, |l, o| o / l);
            let what = format!("filtered scan + decode, per client core, {what}");
            target(&what, core, "", true);
        }
    }
    let (rows, big) = (num(report, "rows"), num(report, "big_rows"));
    let row_bytes = num(report, "row_bytes");
    for (what, f) in [("write", &lib_write), ("filtered scan + decode", &lib_read)] {
        let Some(Figures {
            peaks: [_, n, big_peak],
            ..
        }) = f
        else {
            continue;
        };
        let per_row = (big_peak - n) * 1024.0 / (big - rows);
        let _ = writeln!(
            targets,
            "| library {what}: memory flat in N (peak RSS growth per row added, from {rows} \
             to {big} rows, ≤ {:.0}% of a row's {row_bytes:.0} B on the wire) | \
             {:.1} → {:.1} MiB: {per_row:+.1} B a row | {} |",
            FLAT * 100.0,
            n / 1024.0,
            big_peak / 1024.0,
            verdict(per_row < FLAT * row_bytes),
        );
    }
    targets
}

/// The library's write under callgrind: its instructions a row, and the
/// instructions of its parts (each with everything it calls).
fn write_profile(p: &Value) -> Option<Generated> {
    let (total, rows) = (p["total"].as_f64()?, p["rows"].as_f64()?);
    let mut text = format!(
        "{rows} rows, the whole process: {:.0} instructions a row.\n\n\
         | part | instructions a row | share |\n|---|---|---|\n",
        total / rows
    );
    for part in p["parts"].as_array().into_iter().flatten() {
        if let (Some(what), Some(n)) = (part[0].as_str(), part[1].as_f64()) {
            if n > 0.0 {
                let share = 100.0 * n / total;
                let _ = writeln!(text, "| {what} | {:.0} | {share:.0}% |", n / rows);
            }
        }
    }
    Some(("null-profile", text))
}

/// A `fair` variant's name in its tables.
fn name(key: &str) -> String {
    let batch = key.split('_').find_map(|p| p.parse::<usize>().ok());
    let batch = batch.map(|b| format!(", {b} rows a call × 4"));
    let tls = if key.ends_with("_tls") {
        ", TLS + token"
    } else {
        ""
    };
    let what = match key.split('_').take(2).collect::<Vec<_>>()[..] {
        ["lib", "write"] => "library, `Table::writer` (10000 rows a call × 4)",
        ["lib", "read"] => "library, `Table::stream`",
        ["lib", "put"] => "library, `Table::put`, one call a row, one at a time",
        ["lib", "csv"] => "library's CSV reading alone (`ttl_bench::csv_rows`)",
        ["go", "write"] => "Go, `cbt import`",
        ["go", "count"] => "Go, `cbt count` (decodes, counts)",
        ["go", "print"] => "Go, `cbt read` (prints every row, to /dev/null)",
        ["go", "csv"] => "Go's CSV reading alone (`encoding/csv`, `bench/go_csv`)",
        ["node", "write"] => "Node.js, `table.mutate`",
        ["node", "read"] => "Node.js, `createReadStream`",
        ["node", "csv"] => "Node.js's CSV reading alone (`readline`)",
        _ => key,
    };
    format!("{what}{}{tls}", batch.unwrap_or_default())
}

/// `BENCHMARKS.md`'s tables of `ttl-bench fair`'s JSON: every variant's
/// figures (the run's line names each peer's best batching), the targets
/// like for like, and what TLS and a token cost.
pub(crate) fn fair_tables(report: &Value) -> Vec<Generated> {
    let fig = |k: &str| figures(report, k);
    let mut table = String::from(
        "| contender, phase | client CPU per row | rows per client core-second | rows/s | \
         fixed cost (1-row process) CPU | null server, cores busy |\n|---|---|---|---|---|---|\n",
    );
    for key in report["variants"].as_array().into_iter().flatten() {
        let key = key.as_str().unwrap_or_default();
        let Some(f) = fig(key) else { continue };
        let cpu = median(&f.cpu_us);
        // A phase shorter than the spread of the one-row runs' wall time
        // (the CSV alone) has no rate to speak of.
        let rate = Some(median(&f.rate)).filter(|&r| r > 0.0);
        let rate = rate.map_or("–".to_owned(), |r| format!("{r:.0}"));
        let (fixed, server) = (f.fixed_cpu_ms, f.server_cores);
        let _ = writeln!(
            table,
            "| {} | {cpu:.2} µs | {:.0} | {rate} | {fixed:.1} ms | {server:.2} |",
            name(key),
            1e6 / cpu,
        );
    }
    // Each peer's best batching: the least median CPU per row.
    let best = |batches: &[usize], who: &str| {
        let keys = batches.iter().map(|b| format!("{who}_write_{b}"));
        let best = keys.filter_map(|k| Some((median(&fig(&k)?.cpu_us), k)));
        best.min_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, k)| k)
    };
    let (go_best, node_best) = (best(&GO_BATCHES, "go"), best(&NODE_BATCHES, "node"));
    // CPU per row less the CSV's, per round.
    let less = |a: &Figures, b: &Figures| -> Vec<f64> {
        a.cpu_us.iter().zip(&b.cpu_us).map(|(x, y)| x - y).collect()
    };
    let ratio = |a: &[f64], b: &[f64]| ratio_text(paired(a, b, |a, b| a / b));
    let mut targets = String::from(
        "| comparison | as measured before (default batching, CSV in) | like for like (quote \
         the first figure) | target | |\n|---|---|---|---|---|\n",
    );
    // Each verdict is on the like-for-like figure's median.
    let mut notes = Vec::new();
    let (lib_w, lib_csv) = (fig("lib_write"), fig("lib_csv"));
    for (peer, best_key, who, target) in [
        ("Go's `cbt import`", &go_best, "go", 3.0),
        ("Node.js's", &node_best, "node", 10.0),
    ] {
        let (Some(lib), Some(best_key)) = (&lib_w, best_key) else {
            continue;
        };
        let Some(best_f) = fig(best_key) else {
            continue;
        };
        let default = fig(&format!("{who}_write_10000"));
        let before = default.map_or("–".to_owned(), |d| ratio(&d.cpu_us, &lib.cpu_us));
        let with_csv = paired(&best_f.cpu_us, &lib.cpu_us, |a, b| a / b);
        let with_text = ratio_text(with_csv);
        let (fair, quoted) = if let (Some(pc), Some(lc)) = (fig(&format!("{who}_csv")), &lib_csv) {
            let without = paired(&less(&best_f, &pc), &less(lib, lc), |a, b| a / b);
            let without_text = ratio_text(without);
            let text = "without the CSV on either side;";
            (
                format!("{without_text} {text} {with_text} with each side's own"),
                without.median,
            )
        } else {
            let text = "(each side's own CSV; the peer's alone not measured)";
            (format!("{with_text} {text}"), with_csv.median)
        };
        let best = name(best_key);
        let _ = writeln!(
            targets,
            "| write throughput per client core, library / {peer} at its best batching | {before} \
             | {fair} (at its best: {best}) | ≥ {target} | {} |",
            verdict(quoted >= target),
        );
        notes.push(format!("{peer}: best batching {best}."));
    }
    if let (Some(lib), Some(go)) = (&lib_w, go_best.as_deref().and_then(fig)) {
        let with_csv = paired(&lib.cpu_us, &go.cpu_us, |l, g| l / g).median;
        let (fair, quoted) = match (&lib_csv, fig("go_csv")) {
            (Some(lc), Some(gc)) => {
                let without = paired(&less(lib, lc), &less(&go, &gc), |l, g| l / g).median;
                let fair = format!("{without:.2} without the CSV; {with_csv:.2} with it");
                (fair, without)
            }
            _ => (format!("{with_csv:.2}"), with_csv),
        };
        let before = fig("go_write_10000").map_or("–".to_owned(), |d| {
            format!("{:.2}", paired(&lib.cpu_us, &d.cpu_us, |l, g| l / g).median)
        });
        let _ = writeln!(
            targets,
            "| client CPU per row written, library / Go's (best batching) | {before} | {fair} | \
             ≤ 0.25 | {} |",
            verdict(quoted <= 0.25),
        );
    }
    // Issue 45's targets for the library's own CPU a row: the write with
    // its CSV reading taken off, round by round, and the scan.
    let own_cpu = [
        ("write, client CPU per row, its CSV reading taken off", 0.5),
        ("filtered scan + decode, client CPU per row", 0.8),
    ];
    let write_less_csv = match (&lib_w, &lib_csv) {
        (Some(lib), Some(csv)) => Some(paired(&lib.cpu_us, &csv.cpu_us, |w, c| w - c)),
        _ => None,
    };
    let scan = fig("lib_read").map(|lib| quartiles(lib.cpu_us.iter().copied()));
    for ((what, target), q) in own_cpu.into_iter().zip([write_less_csv, scan]) {
        if let Some(q) = q {
            let _ = writeln!(
                targets,
                "| library {what} | – | {:.2} µs (quartiles {:.2}–{:.2}) | ≤ {target} µs | {} |",
                q.median,
                q.q1,
                q.q3,
                verdict(q.median <= target),
            );
        }
    }
    if let (Some(lib), Some(count)) = (fig("lib_read"), fig("go_count")) {
        let (rate, core) = match fig("go_print") {
            Some(p) => (ratio(&lib.rate, &p.rate), ratio(&p.cpu_us, &lib.cpu_us)),
            None => ("–".to_owned(), "–".to_owned()),
        };
        let quoted = paired(&lib.rate, &count.rate, |l, c| l / c);
        let what = "filtered scan + decode, rows/s, library / Go's";
        let _ = writeln!(
            targets,
            "| {what} | {rate} (against `cbt read`) | {} (against `cbt count`) | ≥ 2 | {} |\n\
             | filtered scan + decode, per client core, library / Go's | {core} (against `cbt \
             read`) | {} (against `cbt count`) |  |  |",
            ratio_text(quoted),
            verdict(quoted.median >= 2.0),
            ratio(&count.cpu_us, &lib.cpu_us),
        );
    }
    let tls = tls_table(&fig);
    let run = format!("{} {}\n\n{table}", run_on(report), notes.join(" "));
    vec![("fair", run), ("fair-targets", targets), ("fair-tls", tls)]
}

/// What TLS and a token cost each variant measured both ways.
fn tls_table(fig: &dyn Fn(&str) -> Option<Figures>) -> String {
    let mut tls = String::from(
        "| contender, phase | client CPU per row: plaintext → TLS + token | TLS cost per row | \
         per call (rows a call) | fixed cost: plaintext → TLS (handshake, first token) |\n\
         |---|---|---|---|---|\n",
    );
    let go_writes = GO_BATCHES.map(|b| format!("go_write_{b}"));
    let keys = ["lib_write", "lib_read", "lib_put"].into_iter();
    let keys = keys
        .chain(go_writes.iter().map(String::as_str))
        .chain(["go_count"]);
    let mut measured = false;
    for key in keys {
        let (Some(p), Some(t)) = (fig(key), fig(&format!("{key}_tls"))) else {
            continue;
        };
        let (label, rows_a_call) = match key.split('_').collect::<Vec<_>>()[..] {
            ["lib", "write"] => ("library, write".to_owned(), Some(10_000)),
            ["lib", "read"] => ("library, filtered scan + decode".to_owned(), None),
            ["lib", "put"] => {
                let put = "library, `Table::put` one at a time (a row is a call)";
                (put.to_owned(), Some(1))
            }
            ["go", "write", b] => (format!("Go `cbt import`, {b} rows a call"), b.parse().ok()),
            _ => ("Go `cbt count`".to_owned(), None),
        };
        measured = true;
        let extra = paired(&t.cpu_us, &p.cpu_us, |t, p| t - p).median;
        let per_call = match rows_a_call {
            Some(1) => format!("{extra:+.2} µs (one row)"),
            Some(n) => format!("{:+.2} ms ({n} rows)", extra * f64::from(n) / 1e3),
            None => "–".to_owned(),
        };
        let _ = writeln!(
            tls,
            "| {label} | {:.2} → {:.2} µs | {extra:+.2} µs | {per_call} | {:.1} → {:.1} ms |",
            median(&p.cpu_us),
            median(&t.cpu_us),
            p.fixed_cpu_ms,
            t.fixed_cpu_ms
        );
    }
    if measured {
        tls
    } else {
        "Not measured in this run.".to_owned()
    }
}
