//! The "Against a null server" section of `BENCHMARKS.md`, from the JSON of
//! `ttl-bench null`: per contender and phase the figures, then the targets
//! of issue 23 as ratios paired within rounds.

use std::fmt::Write as _;

use serde_json::Value;
use ttl_bench::stats::{median, paired, Quartiles};

/// The section's heading.
pub(crate) const HEADING: &str = "## Against a null server: the client's own cost";

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

/// The section, from `ttl-bench null`'s JSON.
#[allow(clippy::too_many_lines)]
pub(crate) fn section(report: &Value) -> String {
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
            let cpu = median(p.cpu_per_row.clone());
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
                median(p.rate.clone()),
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
    let mut target = |what: &str, value: Quartiles, want: &str, met: bool| {
        let _ = writeln!(
            targets,
            "| {what} {want} | {} | {} |",
            ratio_text(value),
            if value.median.is_nan() {
                "not measured"
            } else if met {
                "**met**"
            } else {
                "**missed**"
            }
        );
    };
    let lib_write = phase(report, "lib", "write");
    let lib_read = phase(report, "lib", "read");
    // Which of the library's phases missed a target: their profiles are
    // what the section goes on to explain.
    let mut missed = [false; 2];
    for (other, want) in [("go", 3.0), ("node", 10.0), ("raw", f64::NAN)] {
        if let (Some(l), Some(o)) = (&lib_write, phase(report, other, "write")) {
            // Throughput per client core is rows per CPU second.
            let r = paired(&l.cpu_per_row, &o.cpu_per_row, |l, o| o / l);
            let name = match other {
                "go" => "Go's",
                "node" => "Node's",
                _ => "hand-written `bigtable_rs`'s",
            };
            if want.is_nan() {
                target(
                    &format!("write throughput per client core, library / {name}"),
                    r,
                    "",
                    true,
                );
            } else {
                target(
                    &format!("write throughput per client core, library / {name}"),
                    r,
                    &format!("≥ {want}"),
                    r.median >= want,
                );
            }
        }
    }
    if let (Some(l), Some(g)) = (&lib_write, phase(report, "go", "write")) {
        let r = paired(&l.cpu_per_row, &g.cpu_per_row, |l, g| l / g);
        missed[0] |= r.median > 0.25;
        target(
            "client CPU per row written, library / Go's",
            r,
            "≤ 0.25",
            r.median <= 0.25,
        );
    }
    for other in ["go", "node", "raw"] {
        if let (Some(l), Some(o)) = (&lib_read, phase(report, other, "read")) {
            let r = paired(&l.rate, &o.rate, |l, o| l / o);
            let core = paired(&l.cpu_per_row, &o.cpu_per_row, |l, o| o / l);
            let (what, want) = match other {
                "go" => (
                    "filtered scan + decode, rows/s, library / Go's `cbt read`",
                    Some(2.0),
                ),
                "node" => ("filtered scan + decode, rows/s, library / Node's", None),
                _ => (
                    "filtered scan + decode, rows/s, library / hand-written",
                    None,
                ),
            };
            match want {
                Some(want) => {
                    missed[1] |= r.median < want;
                    target(what, r, &format!("≥ {want}"), r.median >= want);
                }
                None => target(what, r, "", true),
            }
            target(&what.replace("rows/s", "per client core"), core, "", true);
        }
    }
    let row_bytes = report["row_bytes"].as_f64().unwrap_or(f64::NAN);
    for (key, p) in [("write", &lib_write), ("filtered scan + decode", &lib_read)] {
        if let Some(p) = p {
            #[allow(clippy::cast_precision_loss)]
            let per_row = (p.peak_big_kib - p.peak_kib) * 1024.0 / (big - rows) as f64;
            let flat = per_row < FLAT * row_bytes;
            missed[usize::from(key != "write")] |= !flat;
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
    // The column of verdicts is only for the rows with a target.
    let targets = targets
        .lines()
        .map(|l| {
            if l.contains('≥') || l.contains('≤') || !l.contains("**met**") {
                l.to_owned()
            } else {
                l.replace("| **met** |", "| |")
            }
        })
        .collect::<Vec<_>>()
        .join("\n");

    let methods = report["server_calls"].as_object();
    let mut calls = methods
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("`{}` ×{v}", k.rsplit('/').next().unwrap_or(k)))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    if methods.is_some_and(|m| {
        m.keys()
            .all(|k| k.ends_with("/MutateRows") || k.ends_with("/ReadRows"))
    }) {
        calls.push_str(
            " (no contender called anything else first: no ping, no metadata read; the \
             server logs the first call of every method and refuses any other)",
        );
    }
    format!(
        "{HEADING}\n\n\
         The emulator takes most of this machine, so against it the clients' figures say \
         little about the clients. Here every contender talks to a **null server** \
         (`ttl-bench null-server`, `bench/src/null/server.rs`): a one-thread gRPC server on \
         loopback that answers `MutateRows` with `OK` for every entry (counting the entries, \
         never decoding them) and `ReadRows` with answers encoded once at startup (the \
         workload's rows, about 64 KiB a message, chunked as Cloud Bigtable chunks them). \
         What limits a contender is then its own work, and that is what a user pays for on \
         Cloud Bigtable, where the server scales with nodes.\n\n\
         {rows} rows of the `Event` workload written, then read back with the timestamp \
         filter and decoded, by: the **library** (its bulk writer, its typed stream); \
         **hand-written `bigtable_rs`** (the end-to-end bench's `raw`: same batching, \
         hand-written filter and decoder); **Go**, Google's `cbt` (`cbt import` of the same \
         rows as CSV with `timestamp=value-encoded`, `batch-size=10000 workers=4`, then \
         `cbt read … cells-per-column=1`, its printing to `/dev/null`); **Node.js**, \
         `@google-cloud/bigtable` (`bench/node_client.js`: `table.mutate`, 10,000 rows a \
         call, 4 in flight, then `createReadStream` with a timestamp and a cells-per-column \
         filter, every row decoded). **Every contender reads the rows it writes from the \
         same CSV file, inside its measured write phase**: `cbt import` can take rows no \
         other way, so the others do as it does rather than make their rows in memory for \
         free: Go with its own CSV reader, Node line by line (`readline`), the Rust \
         contenders with `ttl_bench::csv_rows` (lines and separators found with `memchr`, \
         every row read into the same `Event`, so no allocation). Go and Node send three \
         `SetCell`s a row; the library and `raw` send five mutations (`Event` owns its \
         family: one `DeleteFromFamily`, the three `SetCell`s and the row marker's), so the \
         write comparison still leans against the library.\n\n\
         Every phase is a process of its own, in {rounds} rounds, the contenders in an order \
         rotated each round. **client CPU per row** is the process's CPU time (user + \
         system, all threads, from `wait4`) less the median of the same phase with one row \
         in the same run (start-up, connecting), over the rows; *inside* is the phase as the \
         process measured it itself. **rows/s** is likewise the rows over the wall time less \
         the one-row run's. **rows per client core-second** is 1 / client CPU per row: \
         throughput per client core. **allocations per row**: calls to the allocator in the \
         phase (the bench binary counts them), and bytes. **peak RSS**: the process's, \
         with 1 row, N = {rows} rows and 10 N = {big} rows: its `VmHWM` as it reads it \
         itself (Rust, Node); for Go's `cbt`, `wait4`'s `ru_maxrss`, which Linux starts \
         from the spawning process's peak (here the driver's, {driver:.1} MiB), so at \
         least that. \
         **cores busy**: CPU time over wall time of the client and of the null server \
         during the phase; the server well under one core shows it was never the limit. \
         Calls the null server received: {calls}. Run on {date} ({cores} cores{load}).\n\n\
         {table}\n\
         Targets (issue 23), each ratio taken within a round and the median over the rounds:\n\n\
         {targets}\n\n\
         {profile}\
         **Not like for like, and not measured here**: `cbt read` formats every \
         row for a terminal (Go's client decoding alone is `cbt count`); each contender \
         parses the CSV its own way inside its write; every peer runs at the library's \
         batching, not its own best; the null server is plaintext without a token, so TLS \
         and auth, which every Cloud call pays, are left out. The section \
         [Like for like](#like-for-like) measures each of these in one \
         run, and its figures are the ones to quote.\n\n\
         Command: `cargo build --release -p ttl-bench && target/release/ttl-bench null \
         --rows {rows} --node-modules bench/target/node/node_modules --out \
         bench/target/results/null.json --update BENCHMARKS.md` (also run by `bench/run.sh`, \
         which installs the Node client).\n",
        rounds = report["rounds"],
        date = report["date"].as_str().unwrap_or("?"),
        cores = report["cores"],
        profile = where_the_time_goes(report, missed),
        load = load_text(&report["load_average"]),
        driver = report["driver_peak_rss_kib"].as_f64().unwrap_or(f64::NAN) / 1024.0,
    )
}

/// The machine's load average over a minute at the start and at the end of
/// the run, when the JSON has them.
fn load_text(load: &Value) -> String {
    match (load[0].as_f64(), load[1].as_f64()) {
        (Some(start), Some(end)) => format!(
            ", shared: a load average of {start:.1} at the start of the run and {end:.1} at its end"
        ),
        _ => String::new(),
    }
}

/// The "where the time goes" part: the library's write profiled (always:
/// it is the phase with the most of the library's own work), its read when
/// a read target was missed, and what would close a missed write target.
fn where_the_time_goes(report: &Value, missed: [bool; 2]) -> String {
    let mut text = String::new();
    for (label, what, show) in [
        ("lib-write", "write", true),
        ("lib-read", "filtered scan + decode", missed[1]),
    ] {
        let p = &report["profile"][label];
        let (Some(total), Some(rows)) = (p["total"].as_f64(), p["rows"].as_f64()) else {
            continue;
        };
        if !show {
            continue;
        }
        let share = |n: f64| 100.0 * n / total;
        let _ = write!(
            text,
            "**Where the time goes: the library's {what}** ({rows} rows under \
             `valgrind --tool=callgrind` against the null server, the whole process: \
             {:.0} instructions a row).",
            total / rows
        );
        let parts: Vec<(String, f64)> = p["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| Some((v[0].as_str()?.to_owned(), v[1].as_f64()?)))
            .filter(|(_, n)| *n > 0.0)
            .collect();
        if parts.is_empty() {
            text.push(' ');
        } else {
            text.push_str(" Its parts, each with everything it calls:\n\n| part | instructions a row | share |\n|---|---|---|\n");
            for (part, n) in &parts {
                let _ = writeln!(text, "| {part} | {:.0} | {:.0}% |", n / rows, share(*n));
            }
            text.push('\n');
        }
        let top: Vec<String> = p["top"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let f = v[0].as_str()?;
                // The last path segments say enough.
                let short: Vec<&str> = f.rsplitn(3, "::").collect();
                let short: Vec<&str> = short.into_iter().rev().collect();
                Some(format!(
                    "`{}` {:.0}%",
                    short.join("::"),
                    share(v[1].as_f64()?)
                ))
            })
            .collect();
        let _ = writeln!(
            text,
            "The functions with the most instructions of their own: {}.\n",
            top.join(", ")
        );
    }
    if missed[0] {
        let p = &report["profile"]["lib-write"];
        let part = |needle: &str| {
            p["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|v| v[0].as_str().is_some_and(|w| w.contains(needle)))
                .and_then(|v| v[1].as_f64())
                .unwrap_or(f64::NAN)
        };
        let total = p["total"].as_f64().unwrap_or(f64::NAN);
        let share = |n: f64| 100.0 * n / total;
        let allocations = phase(report, "lib", "write").map_or(f64::NAN, |p| p.allocations_per_row);
        let _ = writeln!(
            text,
            "**What would close the write's gap.** The library encodes each row straight \
             into the request's bytes ({allocations:.0} allocations a row: the row key); of \
             the instructions above, reading the rows from the file is {:.0}%, the row \
             encoder {:.0}% and the request tasks {:.0}%. What is left of the library's own \
             is the encoder's byte-by-byte writing of each mutation's headers and the \
             values' copy, the row key's allocation (`BigtableRow::row_key` returns a \
             `Vec`; writing the key in place, as values are, would take it) and the row's \
             timestamp and expiry (chrono's calendar arithmetic, per row); none of them is \
             more than a few percent of the whole.\n",
            share(part("CSV")),
            share(part("row encoder")),
            share(part("request tasks")),
        );
    }
    text
}
