//! The tables of `BENCHMARKS.md`'s "Against a null server" (`null`'s JSON)
//! and "Like for like" (`fair`'s): each variant's figures, and the targets
//! of issues 23 and 32 as ratios paired within rounds.

use std::fmt::Write as _;

use serde_json::Value;
use ttl_bench::stats::{median, paired, quartiles, Quartiles};

use super::markdown::{line, table, Column};
use super::{num, run_on, verdict, Generated};
use crate::null::{GO_BATCHES, NODE_BATCHES};

/// Memory is flat in N when the peak grows, per row added, by less than
/// this share of what a row takes on the wire: no row is held, and what
/// remains is the allocator's own growth (which levels off).
const FLAT: f64 = 0.10;

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
    let runs = |list: &str| report["runs"][key][list].as_array().cloned();
    let runs = |list: &str| runs(list).unwrap_or_default();
    let (full, one, big) = (runs("full"), runs("one"), runs("big"));
    if full.is_empty() {
        return None;
    }
    let of = |runs: &[Value], f: &dyn Fn(&Value) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let fixed_cpu = median(of(&one, &|r| num(&r["cpu_s"])));
    let fixed_wall = median(of(&one, &|r| num(&r["wall_s"])));
    let inner = |k: &str| median(of(&full, &|r| num(&r["inner"][k]) / rows));
    let peak = |runs: &[Value]| median(of(runs, &|r| num(&r["peak_rss_kib"])));
    let cores = |cpu: &str| median(of(&full, &|r| num(&r[cpu]) / num(&r["wall_s"])));
    Some(Figures {
        cpu_us: of(&full, &|r| (num(&r["cpu_s"]) - fixed_cpu) / rows * 1e6),
        rate: of(&full, &|r| rows / (num(&r["wall_s"]) - fixed_wall)),
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

/// `null`'s tables: each contender's figures, the targets, the library's
/// write profiled.
pub(super) fn null_tables(report: &Value) -> Vec<Generated> {
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
    let phases = [("write", false), ("filtered scan + decode", true)];
    let rows = phases.into_iter().flat_map(|(phase, read)| {
        contenders
            .into_iter()
            .filter_map(move |(write_key, read_key, name)| {
                Some((
                    phase,
                    name,
                    figures(report, if read { read_key } else { write_key })?,
                ))
            })
    });
    let cpu = |f: &Figures| median(&f.cpu_us);
    let columns: [Column<(&str, &str, Figures)>; 8] = [
        ("phase", &|r| r.0.to_owned()),
        ("contender", &|r| r.1.to_owned()),
        ("rows/s", &|(.., f)| format!("{:.0}", median(&f.rate))),
        ("client CPU per row", &|(.., f)| {
            let us = f.inner_cpu_us;
            let inside = if us.is_finite() {
                format!(" (inside: {us:.2} µs)")
            } else {
                String::new()
            };
            format!("{:.2} µs{inside}", cpu(f))
        }),
        ("rows per client core-second", &|(.., f)| {
            format!("{:.0}", 1e6 / cpu(f))
        }),
        ("allocations per row", &|(.., f)| {
            let bytes = f.allocated_bytes;
            or_dash(f.allocations, |a| format!("{a:.1} ({bytes:.0} B)"))
        }),
        ("peak RSS: 1 row / N / 10 N", &|(.., f)| {
            f.peaks
                .map(|kib| or_dash(kib, |k| format!("{:.1} MiB", k / 1024.0)))
                .join(" / ")
        }),
        ("client + null server, cores busy", &|(.., f)| {
            format!("{:.2} + {:.2}", f.client_cores, f.server_cores)
        }),
    ];
    let null = format!("{}\n\n{}", run_on(report), table(&columns, rows));
    let mut generated = vec![("null", null), ("null-targets", null_targets(report))];
    generated.extend(write_profile(&report["profile"]["lib-write"]));
    generated
}

fn null_targets(report: &Value) -> String {
    let mut targets =
        String::from("| target | measured (median of the rounds' ratios) | |\n|---|---|---|\n");
    // The verdict only on the lines with a target: `want`, and whether met.
    let mut target = |what: &str, value: Quartiles, want: Option<(String, bool)>| {
        let (want, verdict) = match want {
            None => (String::new(), " "),
            Some((want, _)) if value.median.is_nan() => (want, " not measured "),
            Some((want, met)) => (want, if met { " **met** " } else { " **missed** " }),
        };
        let value = ratio_text(value);
        let _ = writeln!(targets, "| {what} {want} | {value} |{verdict}|");
    };
    let at_least =
        |r: Quartiles, want: Option<f64>| want.map(|w| (format!("≥ {w}"), r.median >= w));
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
            target(&what, r, at_least(r, want));
        }
    }
    if let (Some(l), Some(g)) = (&lib_write, figures(report, "go_write_10000")) {
        let r = paired(&l.cpu_us, &g.cpu_us, |l, g| l / g);
        let what = "client CPU per row written, library / Go's";
        target(what, r, Some(("≤ 0.25".to_owned(), r.median <= 0.25)));
    }
    for (key, what, want) in [
        ("go_print", "library / Go's `cbt read`", Some(2.0)),
        ("node_read", "library / Node's", None),
        ("raw_read", "library / hand-written", None),
    ] {
        if let (Some(l), Some(o)) = (&lib_read, figures(report, key)) {
            let r = paired(&l.rate, &o.rate, |l, o| l / o);
            let rate = format!("filtered scan + decode, rows/s, {what}");
            target(&rate, r, at_least(r, want));
            let core = paired(&l.cpu_us, &o.cpu_us, |l, o| o / l);
            let what = format!("filtered scan + decode, per client core, {what}");
            target(&what, core, None);
        }
    }
    let (rows, big) = (num(&report["rows"]), num(&report["big_rows"]));
    let row_bytes = num(&report["row_bytes"]);
    for (what, f) in [("write", &lib_write), ("filtered scan + decode", &lib_read)] {
        let Some([_, n, big_peak]) = f.as_ref().map(|f| f.peaks) else {
            continue;
        };
        let per_row = (big_peak - n) * 1024.0 / (big - rows);
        targets += &line([
            format!(
                "library {what}: memory flat in N (peak RSS growth per row added, from {rows} \
                 to {big} rows, ≤ {:.0}% of a row's {row_bytes:.0} B on the wire)",
                FLAT * 100.0
            ),
            format!(
                "{:.1} → {:.1} MiB: {per_row:+.1} B a row",
                n / 1024.0,
                big_peak / 1024.0
            ),
            verdict(per_row < FLAT * row_bytes).to_owned(),
        ]);
    }
    targets
}

/// The library's write under callgrind: its instructions a row, and the
/// instructions of its parts (each with everything it calls).
fn write_profile(p: &Value) -> Option<Generated> {
    let (total, rows) = (p["total"].as_f64()?, p["rows"].as_f64()?);
    let parts = p["parts"].as_array().into_iter().flatten();
    let parts = parts.filter_map(|part| Some((part[0].as_str()?, part[1].as_f64()?)));
    let columns: [Column<(&str, f64)>; 3] = [
        ("part", &|(what, _)| (*what).to_owned()),
        ("instructions a row", &|(_, n)| format!("{:.0}", n / rows)),
        ("share", &|(_, n)| format!("{:.0}%", 100.0 * n / total)),
    ];
    let parts = table(&columns, parts.filter(|(_, n)| *n > 0.0));
    let whole = total / rows;
    let text = format!("{rows} rows, the whole process: {whole:.0} instructions a row.\n\n{parts}");
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

/// `fair`'s tables: every variant's figures (the run's line names each
/// peer's best batching), the targets like for like, and what TLS and a
/// token cost.
pub(super) fn fair_tables(report: &Value) -> Vec<Generated> {
    let fig = |k: &str| figures(report, k);
    let keys = report["variants"].as_array().into_iter().flatten();
    let variants = keys.filter_map(|k| Some((k.as_str()?, fig(k.as_str()?)?)));
    let cpu = |f: &Figures| median(&f.cpu_us);
    let columns: [Column<(&str, Figures)>; 6] = [
        ("contender, phase", &|(key, _)| name(key)),
        ("client CPU per row", &|(_, f)| format!("{:.2} µs", cpu(f))),
        ("rows per client core-second", &|(_, f)| {
            format!("{:.0}", 1e6 / cpu(f))
        }),
        // A phase shorter than the spread of the one-row runs' wall time
        // (the CSV alone) has no rate to speak of.
        ("rows/s", &|(_, f)| {
            let rate = Some(median(&f.rate)).filter(|&r| r > 0.0);
            rate.map_or("–".to_owned(), |r| format!("{r:.0}"))
        }),
        ("fixed cost (1-row process) CPU", &|(_, f)| {
            format!("{:.1} ms", f.fixed_cpu_ms)
        }),
        ("null server, cores busy", &|(_, f)| {
            format!("{:.2}", f.server_cores)
        }),
    ];
    let table = table(&columns, variants);
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
            let text = "without the CSV on either side;";
            let without_text = ratio_text(without);
            let fair = format!("{without_text} {text} {with_text} with each side's own");
            (fair, without.median)
        } else {
            let text = "(each side's own CSV; the peer's alone not measured)";
            (format!("{with_text} {text}"), with_csv.median)
        };
        let best = name(best_key);
        targets += &line([
            &format!("write throughput per client core, library / {peer} at its best batching"),
            &before,
            &format!("{fair} (at its best: {best})"),
            &format!("≥ {target}"),
            verdict(quoted >= target),
        ]);
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
        let what = "client CPU per row written, library / Go's (best batching)";
        targets += &line([what, &before, &fair, "≤ 0.25", verdict(quoted <= 0.25)]);
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
            targets += &line([
                &format!("library {what}"),
                "–",
                &format!("{:.2} µs (quartiles {:.2}–{:.2})", q.median, q.q1, q.q3),
                &format!("≤ {target} µs"),
                verdict(q.median <= target),
            ]);
        }
    }
    if let (Some(lib), Some(count)) = (fig("lib_read"), fig("go_count")) {
        let (rate, core) = match fig("go_print") {
            Some(p) => (ratio(&lib.rate, &p.rate), ratio(&p.cpu_us, &lib.cpu_us)),
            None => ("–".to_owned(), "–".to_owned()),
        };
        let quoted = paired(&lib.rate, &count.rate, |l, c| l / c);
        targets += &line([
            "filtered scan + decode, rows/s, library / Go's",
            &format!("{rate} (against `cbt read`)"),
            &format!("{} (against `cbt count`)", ratio_text(quoted)),
            "≥ 2",
            verdict(quoted.median >= 2.0),
        ]);
        targets += &line([
            "filtered scan + decode, per client core, library / Go's",
            &format!("{core} (against `cbt read`)"),
            &format!(
                "{} (against `cbt count`)",
                ratio(&count.cpu_us, &lib.cpu_us)
            ),
            "",
            "",
        ]);
    }
    let tls = tls_table(&fig);
    let run = format!("{} {}\n\n{table}", run_on(report), notes.join(" "));
    vec![("fair", run), ("fair-targets", targets), ("fair-tls", tls)]
}

/// What TLS and a token cost each variant measured both ways.
fn tls_table(fig: &dyn Fn(&str) -> Option<Figures>) -> String {
    let go_writes = GO_BATCHES.map(|b| format!("go_write_{b}"));
    let keys = ["lib_write", "lib_read", "lib_put"].into_iter();
    let keys = keys
        .chain(go_writes.iter().map(String::as_str))
        .chain(["go_count"]);
    let both = keys.filter_map(|key| Some((key, fig(key)?, fig(&format!("{key}_tls"))?)));
    let rows: Vec<_> = both.collect();
    if rows.is_empty() {
        return "Not measured in this run.".to_owned();
    }
    let extra =
        |(_, p, t): &(&str, Figures, Figures)| paired(&t.cpu_us, &p.cpu_us, |t, p| t - p).median;
    let columns: [Column<(&str, Figures, Figures)>; 5] = [
        ("contender, phase", &|(key, ..)| {
            let label = match key.split('_').collect::<Vec<_>>()[..] {
                ["lib", "write"] => "library, write",
                ["lib", "read"] => "library, filtered scan + decode",
                ["lib", "put"] => "library, `Table::put` one at a time (a row is a call)",
                ["go", "write", b] => return format!("Go `cbt import`, {b} rows a call"),
                _ => "Go `cbt count`",
            };
            label.to_owned()
        }),
        (
            "client CPU per row: plaintext → TLS + token",
            &|(_, p, t)| format!("{:.2} → {:.2} µs", median(&p.cpu_us), median(&t.cpu_us)),
        ),
        ("TLS cost per row", &|r| format!("{:+.2} µs", extra(r))),
        ("per call (rows a call)", &|r| {
            let rows_a_call = match r.0.split('_').collect::<Vec<_>>()[..] {
                ["lib", "write"] => Some(10_000),
                ["lib", "put"] => Some(1),
                ["go", "write", b] => b.parse().ok(),
                _ => None,
            };
            match rows_a_call {
                Some(1) => format!("{:+.2} µs (one row)", extra(r)),
                Some(n) => format!("{:+.2} ms ({n} rows)", extra(r) * f64::from(n) / 1e3),
                None => "–".to_owned(),
            }
        }),
        (
            "fixed cost: plaintext → TLS (handshake, first token)",
            &|(_, p, t)| format!("{:.1} → {:.1} ms", p.fixed_cpu_ms, t.fixed_cpu_ms),
        ),
    ];
    table(&columns, rows)
}
