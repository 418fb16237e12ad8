//! `ttl-bench`: the end-to-end, filtering and report parts of the benchmarks
//! (issue 5). Run everything with `bench/run.sh`.
//!
//! * `ttl-bench e2e --rows N --python PY --out FILE`: runs each contender as
//!   its own process (peak RSS is per process) on a fresh emulator, in
//!   rounds with a rotated order (medians reported), measures the bytes saved by the server-side filter, writes JSON.
//! * `ttl-bench conditional --ops N --out FILE`: conditional inserts, the
//!   library against hand-written `CheckAndMutateRow` (issue 11), JSON.
//! * `ttl-bench contender NAME --host H --rows N`: one contender (internal).
//! * `ttl-bench parallel --rows N --out FILE [--update BENCHMARKS.md]`: a
//!   parallel scan against a single stream of the same rows, with the
//!   emulator's CPU time (see [`parallel`]).
//! * `ttl-bench telemetry --rows N --rounds R [--features metrics|opentelemetry]`: the
//!   cost of the client-side metrics on a write+read workload (see
//!   [`telemetry_cost`]).
//! * `ttl-bench latency --ops N [--rounds R] [--against emulator,null] --out FILE [--update BENCHMARKS.md]`
//!   (or `--from FILE --update BENCHMARKS.md`):
//!   p50 and p99 of single-row `get`, `put` and `insert_if_absent` against
//!   the emulator and the null server, the library against hand-written
//!   `bigtable_rs` (see [`latency`]).
//! * `ttl-bench null --rows N [--rounds R] [--scale 10] [--node-modules DIR] [--profile-rows 20000] --out FILE [--update BENCHMARKS.md]`:
//!   the clients' own cost against a null server, the library, hand-written
//!   `bigtable_rs`, Google's Go and Node.js clients (see [`null`]);
//!   `ttl-bench null-server --rows N,M` and `ttl-bench null-client WHO PHASE
//!   --host H --table T --rows N` are its parts (internal).
//! * `ttl-bench fair --rows N [--rounds R] [--node-modules DIR] [--go-csv PROGRAM] --out FILE [--update BENCHMARKS.md]`:
//!   the null-server comparisons like for like, with TLS (issue 32; see
//!   [`null::fair`]).
//! * `ttl-bench report --results DIR --out FILE`: renders `BENCHMARKS.md`
//!   (the sections of the other commands from their JSON in `DIR`, any
//!   other section of the file kept as it is).

// Counts and durations become ratios and rates for a report: precision past
// 2^52 does not matter there.
#![allow(clippy::cast_precision_loss)]

mod conditional;
mod expiry;
mod latency;
mod null;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bigtable_rs::bigtable::BigTableConnection;
use bigtable_rs::google::bigtable::v2::{
    row_filter::Chain, row_filter::Filter, MutateRowsRequest, ReadRowsRequest, RowFilter,
    TimestampRange,
};
use bigtable_ttl::{BigtableRow, Clock, Connection, Scan, Table};
use chrono::{TimeDelta, Utc};
use futures_util::{StreamExt as _, TryStreamExt as _};
use prost::Message as _;
use serde_json::{json, Value};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use ttl_bench::sections::replace_section;
use ttl_bench::{
    cpu_seconds, event, hand_decode, hand_entry, peak_rss_kib, pid_listening_on,
    process_cpu_seconds, Event, EventByColumn,
};

/// Every allocation of the bench binary is counted, for the allocations
/// per row of `ttl-bench null` (a few atomic additions per allocation, paid
/// alike by every Rust contender).
#[global_allocator]
pub(crate) static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

mod parallel;
mod telemetry_cost;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const PROJECT: &str = "bench";
/// The library's bulk-writer batching, mirrored by the hand-written contender.
const ROWS_PER_REQUEST: usize = 10_000;
const IN_FLIGHT: usize = 4;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        // No runtime of the default shape for these two: the null server
        // makes its own on one thread, the driver only runs processes.
        Some("null-server") => {
            let counts = arg(&args, "--rows")
                .ok_or("--rows N,M")?
                .split(',')
                .map(str::parse)
                .collect::<Result<Vec<usize>, _>>()?;
            let tls = arg(&args, "--tls").map(PathBuf::from);
            let token = arg(&args, "--token");
            null::server::main(&counts, tls.as_deref(), token.as_deref())
        }
        Some("null") => {
            let plan = null::Plan {
                rows: arg(&args, "--rows").map_or(Ok(100_000), |s| s.parse())?,
                rounds: arg(&args, "--rounds").map_or(Ok(7), |s| s.parse())?,
                scale: arg(&args, "--scale").map_or(Ok(10), |s| s.parse())?,
                node_modules: arg(&args, "--node-modules").map(PathBuf::from),
                profile_rows: arg(&args, "--profile-rows").map_or(Ok(20_000), |s| s.parse())?,
                out: PathBuf::from(arg(&args, "--out").ok_or("--out FILE")?),
            };
            if let Some(from) = arg(&args, "--from") {
                let measured = read_json(Path::new(&from)).ok_or("--from: no JSON there")?;
                return update_section(
                    &args,
                    null::report::HEADING,
                    &null::report::section(&measured),
                );
            }
            null::run(&plan)?;
            let measured = read_json(&plan.out).ok_or("no JSON written")?;
            update_section(
                &args,
                null::report::HEADING,
                &null::report::section(&measured),
            )
        }
        Some("fair") => {
            if let Some(from) = arg(&args, "--from") {
                let measured = read_json(Path::new(&from)).ok_or("--from: no JSON there")?;
                return update_section(&args, null::fair::HEADING, &null::fair::section(&measured));
            }
            let plan = null::fair::Plan {
                rows: arg(&args, "--rows").map_or(Ok(100_000), |s| s.parse())?,
                rounds: arg(&args, "--rounds").map_or(Ok(5), |s| s.parse())?,
                node_modules: arg(&args, "--node-modules").map(PathBuf::from),
                go_csv: arg(&args, "--go-csv").map(PathBuf::from),
                out: PathBuf::from(arg(&args, "--out").ok_or("--out FILE")?),
            };
            null::fair::run(&plan)?;
            let measured = read_json(&plan.out).ok_or("no JSON written")?;
            update_section(&args, null::fair::HEADING, &null::fair::section(&measured))
        }
        _ => tokio::runtime::Runtime::new()?.block_on(async_main(args)),
    }
}

/// With `--update FILE`, the section `heading` of that file replaced by
/// `text` (the rest of the file untouched).
fn update_section(args: &[String], heading: &str, text: &str) -> Res<()> {
    if let Some(path) = arg(args, "--update") {
        ttl_bench::sections::update_file(Path::new(&path), heading, text)?;
        eprintln!("{path} updated");
    }
    Ok(())
}

async fn async_main(args: Vec<String>) -> Res<()> {
    let rows: usize = arg(&args, "--rows").map_or(Ok(100_000), |s| s.parse())?;
    match args.first().map(String::as_str) {
        Some("null-client") => {
            let who = args.get(1).ok_or("null-client WHO PHASE")?;
            let phase = args.get(2).ok_or("null-client WHO PHASE")?;
            let host = arg(&args, "--host").ok_or("--host HOST")?;
            let table = arg(&args, "--table").ok_or("--table NAME")?;
            let csv = arg(&args, "--csv").map(PathBuf::from);
            let secure = match (arg(&args, "--tls"), arg(&args, "--token")) {
                (Some(ca), Some(token)) => Some(null::client::Secure {
                    ca_pem: std::fs::read(&ca)?,
                    token,
                }),
                (None, None) => None,
                _ => return Err("null-client: --tls CA_FILE and --token SECRET go together".into()),
            };
            let target = null::client::Target {
                host: &host,
                secure: secure.as_ref(),
            };
            println!(
                "{}",
                null::client::run(who, phase, &target, &table, rows, csv.as_deref()).await?
            );
            Ok(())
        }
        Some("e2e") => {
            let python = arg(&args, "--python");
            let out = PathBuf::from(arg(&args, "--out").ok_or("--out FILE")?);
            e2e(rows, python.as_deref(), &out).await
        }
        Some("contender") => {
            let name = args.get(1).ok_or("contender NAME")?.clone();
            let host = arg(&args, "--host").ok_or("--host HOST")?;
            let emulator = arg(&args, "--emulator-pid").map(|p| p.parse()).transpose()?;
            let result = contender(&name, &host, rows, emulator).await?;
            println!("{result}");
            Ok(())
        }
        Some("parallel") => {
            let update = arg(&args, "--update").map(PathBuf::from);
            if let Some(from) = arg(&args, "--from") {
                let measured = read_json(Path::new(&from)).ok_or("--from: no JSON there")?;
                return parallel::render(&measured, update.as_deref());
            }
            let out = PathBuf::from(arg(&args, "--out").ok_or("--out FILE")?);
            let concurrency = arg(&args, "--concurrency")
                .unwrap_or_else(|| "2,4".to_owned())
                .split(',')
                .map(str::parse)
                .collect::<Result<Vec<usize>, _>>()?;
            let rounds = arg(&args, "--rounds").map_or(Ok(5), |r| r.parse())?;
            parallel::run(rows, &concurrency, rounds, &out, update.as_deref()).await
        }
        Some("latency") => {
            if let Some(from) = arg(&args, "--from") {
                let measured = read_json(Path::new(&from)).ok_or("--from: no JSON there")?;
                return update_section(&args, latency::HEADING, &latency::section(&measured));
            }
            let ops: usize = arg(&args, "--ops").map_or(Ok(1_000), |s| s.parse())?;
            let rounds = arg(&args, "--rounds").map_or(Ok(5), |r| r.parse())?;
            let out = PathBuf::from(arg(&args, "--out").ok_or("--out FILE")?);
            let update = arg(&args, "--update").map(PathBuf::from);
            let targets = arg(&args, "--against")
                .unwrap_or_else(|| "emulator,null".to_owned())
                .split(',')
                .map(latency::Target::parse)
                .collect::<Res<Vec<_>>>()?;
            latency::run(ops, rounds, &targets, &out, update.as_deref()).await
        }
        Some("instructions") => {
            let out = PathBuf::from(arg(&args, "--out").ok_or("--out FILE")?);
            instructions(rows, &out).await
        }
        Some("conditional") => {
            let ops: usize = arg(&args, "--ops").map_or(Ok(2_000), |s| s.parse())?;
            let out = PathBuf::from(arg(&args, "--out").ok_or("--out FILE")?);
            conditional::conditional(ops, &out).await
        }
        Some("expiry") => expiry::main(&args).await,
        Some("telemetry") => {
            let rows: usize = arg(&args, "--rows").map_or(Ok(20_000), |s| s.parse())?;
            let rounds = arg(&args, "--rounds").map_or(Ok(7), |r| r.parse())?;
            telemetry_cost::run(rows, rounds).await
        }
        Some("report") => {
            let dir = PathBuf::from(arg(&args, "--results").ok_or("--results DIR")?);
            let out = PathBuf::from(arg(&args, "--out").ok_or("--out FILE")?);
            report(&dir, &out)
        }
        _ => Err(
            "usage: ttl-bench e2e|null|fair|latency|parallel|instructions|conditional|expiry|telemetry|contender|report (see bench/run.sh)"
                .into(),
        ),
    }
}

// ----- end to end -------------------------------------------------------------

/// Rounds of the end-to-end comparison (`BENCH_ROUNDS`, default 9): each round
/// runs every contender once, each on an emulator of its own (the previous
/// one gone first), the Rust contenders in an order rotated from round to
/// round so none always goes first, the Python client last (a rotation put
/// the library right after it in most rounds, and it ran slower there). The
/// report takes each contender's median.
fn rounds() -> usize {
    std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(9)
        .max(1)
}

/// The command running contender `name` of the end-to-end bench against
/// `emulator`: the Python client's script under `python`, else this binary
/// (under `profiler`, `BENCH_PROFILE="perf record -g -o {name}.data"`, when
/// given, `{name}` replaced by the contender's).
fn contender_command(
    name: &str,
    rows: usize,
    emulator: &bigtable_ttl_emulator::Emulator,
    python: Option<&str>,
    profiler: Option<&str>,
) -> Res<Command> {
    let host = emulator.host();
    if name == "python" {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python_client.py");
        let mut cmd = Command::new(python.unwrap_or("python3"));
        cmd.arg(script)
            .args(["--project", PROJECT, "--instance", "bench-python"])
            .args(["--table", Event::SCHEMA.table, "--rows", &rows.to_string()])
            .env("BIGTABLE_EMULATOR_HOST", host);
        return Ok(cmd);
    }
    let mut prefix: Vec<String> = profiler
        .iter()
        .flat_map(|wrap| wrap.split_whitespace())
        .map(|w| w.replace("{name}", name))
        .collect();
    prefix.push(std::env::current_exe()?.display().to_string());
    let mut cmd = Command::new(&prefix[0]);
    cmd.args(&prefix[1..]).args([
        "contender",
        name,
        "--host",
        host,
        "--rows",
        &rows.to_string(),
    ]);
    if let Some(pid) = pid_listening_on(emulator.port()) {
        cmd.args(["--emulator-pid", &pid.to_string()]);
    }
    Ok(cmd)
}

async fn e2e(rows: usize, python: Option<&str>, out: &Path) -> Res<()> {
    // `lib-by-column` writes `Event`'s twin without `owns_family`: the
    // emulator's CPU per row written, one `DeleteFromFamily` against a
    // `DeleteFromColumn` per column, in the same rounds.
    let mut names = vec!["lib", "lib-by-column", "lib-put-all", "raw"];
    if python.is_some() {
        names.push("python");
    }
    // `BENCH_CONTENDERS=lib,raw`: only these (when investigating a gap).
    if let Ok(only) = std::env::var("BENCH_CONTENDERS") {
        names.retain(|n| only.split(',').any(|o| o == *n));
    }
    let load_start = ttl_bench::load_average();
    let mut runs: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let profiler = std::env::var("BENCH_PROFILE").ok();
    // The Rust contenders in an order rotated each round; the Python client
    // (an order of magnitude slower, and heavy on the machine) after them.
    let rust: Vec<&str> = names.iter().copied().filter(|n| *n != "python").collect();
    for round in 0..rounds() {
        let mut order: Vec<&str> = (0..rust.len())
            .map(|i| rust[(i + round) % rust.len()])
            .collect();
        order.extend(names.iter().copied().filter(|n| *n == "python"));
        for name in order {
            let emulator = bigtable_ttl_emulator::Emulator::start()?;
            let host = emulator.host().to_owned();
            let mut cmd = contender_command(name, rows, &emulator, python, profiler.as_deref())?;
            let conn = Connection::emulator(&host, PROJECT, &format!("bench-{name}"))?;
            Table::<Event>::new(conn).ensure_schema().await?;
            eprintln!("round {round}: contender {name} ({rows} rows, emulator {host})…");
            let output = cmd.output()?;
            if !output.status.success() {
                return Err(format!(
                    "contender {name} failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                )
                .into());
            }
            let line = String::from_utf8(output.stdout)?;
            let value: Value = serde_json::from_str(line.trim().lines().last().unwrap_or(""))?;
            eprintln!("  {value}");
            runs.entry(name).or_default().push(value);
            drop(emulator);
        }
    }
    let mut results = serde_json::Map::new();
    results.insert("paired".into(), paired_ratios(&runs));
    results.insert("owns_family".into(), owns_family_ratios(&runs));
    for (name, values) in &runs {
        let median = |key: &str| {
            let mut xs: Vec<f64> = values.iter().filter_map(|v| v[key].as_f64()).collect();
            xs.sort_by(f64::total_cmp);
            xs.get(xs.len() / 2).copied()
        };
        results.insert(
            (*name).to_owned(),
            json!({
                "write_s": median("write_s"),
                "scan_s": median("scan_s"),
                "peak_rss_kib": median("peak_rss_kib"),
                "write_cpu_s": median("write_cpu_s"),
                "scan_cpu_s": median("scan_cpu_s"),
                "write_emulator_cpu_s": median("write_emulator_cpu_s"),
                "scan_emulator_cpu_s": median("scan_emulator_cpu_s"),
                "runs": values,
            }),
        );
    }
    let emulator = bigtable_ttl_emulator::Emulator::start()?;
    let filtering = filter_bytes(emulator.host(), 10_000).await?;
    eprintln!("filtering: {filtering}");
    results.insert("filtering".into(), filtering);
    results.insert("rows".into(), json!(rows));
    results.insert("rounds".into(), json!(rounds()));
    results.insert(
        "load_average".into(),
        json!([load_start, ttl_bench::load_average()]),
    );
    std::fs::write(out, serde_json::to_string_pretty(&Value::Object(results))?)?;
    drop(emulator);
    Ok(())
}

/// For each phase, the median over rounds of the hand-written contender's
/// time (or CPU time) over the library's, each ratio taken within one round:
/// the two ran back to back, so a round's ratio sees the same machine, and
/// the median drops the rounds another process disturbed.
fn paired_ratios(runs: &BTreeMap<&str, Vec<Value>>) -> Value {
    let (Some(lib), Some(raw)) = (runs.get("lib"), runs.get("raw")) else {
        return Value::Null;
    };
    let ratios = |key: &str| {
        let mut ratios: Vec<f64> = lib
            .iter()
            .zip(raw)
            .filter_map(|(l, r)| Some(r[key].as_f64()? / l[key].as_f64()?))
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios
    };
    let quantile = |sorted: &[f64], q: f64| -> Option<f64> {
        let last = sorted.len().checked_sub(1)?;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        sorted.get(((last as f64) * q).round() as usize).copied()
    };
    let mut out = serde_json::Map::new();
    for key in ["write_s", "scan_s", "write_cpu_s", "scan_cpu_s"] {
        let sorted = ratios(key);
        out.insert(key.into(), json!(quantile(&sorted, 0.5)));
        out.insert(format!("{key}_q1"), json!(quantile(&sorted, 0.25)));
        out.insert(format!("{key}_q3"), json!(quantile(&sorted, 0.75)));
    }
    Value::Object(out)
}

/// The emulator's CPU time writing `Event` (which owns its family: one
/// `DeleteFromFamily` a row) over its twin's (`lib-by-column`: a
/// `DeleteFromColumn` per column), and likewise for the write's wall and
/// client CPU time, each ratio taken within a round; the medians and
/// quartiles over the rounds.
fn owns_family_ratios(runs: &BTreeMap<&str, Vec<Value>>) -> Value {
    let (Some(family), Some(columns)) = (runs.get("lib"), runs.get("lib-by-column")) else {
        return Value::Null;
    };
    let mut out = serde_json::Map::new();
    for key in [
        "write_emulator_cpu_s",
        "write_s",
        "write_cpu_s",
        "scan_emulator_cpu_s",
    ] {
        let mut ratios: Vec<f64> = family
            .iter()
            .zip(columns)
            .filter_map(|(f, c)| Some(f[key].as_f64()? / c[key].as_f64()?))
            .filter(|r| r.is_finite())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let last = ratios.len().checked_sub(1)?;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            ratios.get(((last as f64) * q).round() as usize).copied()
        };
        out.insert(key.into(), json!(at(0.5)));
        out.insert(format!("{key}_q1"), json!(at(0.25)));
        out.insert(format!("{key}_q3"), json!(at(0.75)));
    }
    Value::Object(out)
}

/// Client instructions (valgrind callgrind) of the `lib` and `raw`
/// contenders, write and filtered scan of `rows` rows each, on emulators of
/// their own: a count, not a time, so it is the same whatever else the shared
/// machine is doing, and the emulator's own work is not in it.
async fn instructions(rows: usize, out: &Path) -> Res<()> {
    let me = std::env::current_exe()?;
    let mut results = serde_json::Map::new();
    for name in ["lib", "raw"] {
        let emulator = bigtable_ttl_emulator::Emulator::start()?;
        let host = emulator.host().to_owned();
        let conn = Connection::emulator(&host, PROJECT, &format!("bench-{name}"))?;
        Table::<Event>::new(conn).ensure_schema().await?;
        let profile = std::env::temp_dir().join(format!("ttl-bench-callgrind-{name}.out"));
        eprintln!("callgrind: contender {name} ({rows} rows)…");
        let output = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", profile.display()))
            .arg(&me)
            .args([
                "contender",
                name,
                "--host",
                &host,
                "--rows",
                &rows.to_string(),
            ])
            .output()?;
        let _ = std::fs::remove_file(&profile);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(format!("callgrind of {name} failed: {stderr}").into());
        }
        let collected: u64 = stderr
            .lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .and_then(|n| n.trim().parse().ok())
            .ok_or("no `Collected :` line from callgrind")?;
        eprintln!("  {collected} instructions");
        results.insert(name.to_owned(), json!(collected));
        drop(emulator);
    }
    results.insert("rows".into(), json!(rows));
    std::fs::write(out, serde_json::to_string_pretty(&Value::Object(results))?)?;
    Ok(())
}

async fn contender(name: &str, host: &str, rows: usize, emulator: Option<u32>) -> Res<Value> {
    let instance = format!("bench-{name}");
    let conn = Connection::emulator(host, PROJECT, &instance)?;
    let now = Utc::now();
    // The emulator's CPU time over each phase, when its process is known.
    let emulator_cpu = || emulator.map_or(f64::NAN, process_cpu_seconds);
    let (cpu_start, emulator_start) = (cpu_seconds(), emulator_cpu());
    let mut marks = Marks::default();
    let read = match name {
        "lib" => {
            lib_phases(
                &conn,
                rows,
                |i| event(i, now),
                false,
                &mut marks,
                &emulator_cpu,
            )
            .await?
        }
        "lib-by-column" => {
            lib_phases(
                &conn,
                rows,
                |i| EventByColumn::from(event(i, now)),
                false,
                &mut marks,
                &emulator_cpu,
            )
            .await?
        }
        "lib-put-all" => {
            lib_phases(
                &conn,
                rows,
                |i| event(i, now),
                true,
                &mut marks,
                &emulator_cpu,
            )
            .await?
        }
        "raw" => {
            let conn =
                BigTableConnection::new_with_emulator(host, PROJECT, &instance, false, 1, None)?;
            let client = conn.client();
            let table_name = client.get_full_table_name(Event::SCHEMA.table);
            let start = Instant::now();
            raw_write(&client, &table_name, generated(rows, now), now).await?;
            marks.written(start, &emulator_cpu);
            raw_scan(&client, &table_name).await?
        }
        other => return Err(format!("unknown contender {other}").into()),
    };
    let (cpu_end, emulator_end) = (cpu_seconds(), emulator_cpu());
    if read != rows {
        return Err(format!("{name}: read {read} rows, wrote {rows}").into());
    }
    Ok(json!({
        "write_s": marks.write_s,
        "scan_s": marks.scan_start.map_or(f64::NAN, |s| s.elapsed().as_secs_f64()),
        "rows_read": read,
        "peak_rss_kib": marks.rss,
        "write_cpu_s": marks.cpu - cpu_start,
        "scan_cpu_s": cpu_end - marks.cpu,
        "write_emulator_cpu_s": marks.emulator_cpu - emulator_start,
        "scan_emulator_cpu_s": emulator_end - marks.emulator_cpu,
    }))
}

/// What a contender notes at the end of its write phase.
#[derive(Default)]
struct Marks {
    write_s: f64,
    /// This process's CPU time, the emulator's, and the peak RSS then.
    cpu: f64,
    emulator_cpu: f64,
    rss: u64,
    scan_start: Option<Instant>,
}

impl Marks {
    /// The write, begun at `start`, is over; the scan begins.
    fn written(&mut self, start: Instant, emulator_cpu: &dyn Fn() -> f64) {
        self.write_s = start.elapsed().as_secs_f64();
        self.cpu = cpu_seconds();
        self.emulator_cpu = emulator_cpu();
        self.rss = peak_rss_kib();
        self.scan_start = Some(Instant::now());
    }
}

/// A library contender: `rows` rows of `make` through the bulk writer (or
/// `put_all` over a `Vec` of them), then the typed stream of the table; the
/// rows read.
async fn lib_phases<R: BigtableRow + Send + 'static>(
    conn: &Connection,
    rows: usize,
    make: impl Fn(usize) -> R,
    put_all: bool,
    marks: &mut Marks,
    emulator_cpu: &dyn Fn() -> f64,
) -> Res<usize> {
    // The library's contenders start as an application does (README quick
    // start): the schema checked once, which also tells the reader that the
    // table holds no other family, so its filter need not select families.
    let table = Table::<R>::new(conn.clone());
    table.verify_schema().await?;
    let start = Instant::now();
    if put_all {
        let batch: Vec<R> = (0..rows).map(&make).collect();
        table.put_all(&batch).await?;
    } else {
        let mut writer = table.writer();
        for i in 0..rows {
            writer.send(&make(i)).await?;
        }
        writer.finish().await?;
    }
    marks.written(start, emulator_cpu);
    Ok(table
        .stream(Scan::all())
        .try_fold(0usize, |n, e| {
            std::hint::black_box(&e);
            futures_util::future::ready(Ok(n + 1))
        })
        .await?)
}

/// Hand-written `bigtable_rs` bulk write: the library's batching (requests
/// of 10,000 rows, each sent by a task of its own, 4 in flight), every
/// entry's status checked. `next` puts the next row into the `Event` it is
/// given (`false` at the end); the rows written come back.
pub(crate) async fn raw_write<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    client: &bigtable_rs::bigtable::BigTable,
    table_name: &str,
    mut next: impl FnMut(&mut Event) -> Result<bool, E>,
    now: chrono::DateTime<Utc>,
) -> Res<usize> {
    let mut tasks = tokio::task::JoinSet::new();
    let (mut row, mut rows) = (Event::default(), 0);
    loop {
        let mut entries = Vec::with_capacity(ROWS_PER_REQUEST);
        while entries.len() < ROWS_PER_REQUEST && next(&mut row).map_err(Into::into)? {
            entries.push(hand_entry(&row, now)?);
        }
        if entries.is_empty() {
            break;
        }
        rows += entries.len();
        while tasks.len() >= IN_FLIGHT {
            tasks.join_next().await.ok_or("no task")???;
        }
        let mut client = client.clone();
        let request = MutateRowsRequest {
            table_name: table_name.to_owned(),
            entries,
            ..MutateRowsRequest::default()
        };
        tasks.spawn(async move {
            let mut stream = client.mutate_rows(request).await?;
            while let Some(response) = stream.message().await? {
                if let Some(bad) = response
                    .entries
                    .iter()
                    .find(|e| e.status.as_ref().is_some_and(|s| s.code != 0))
                {
                    return Err(format!("entry {} failed: {:?}", bad.index, bad.status).into());
                }
            }
            Res::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(rows)
}

/// [`raw_write`]'s rows `0..rows` of the workload, made as they are sent.
pub(crate) fn generated(
    rows: usize,
    now: chrono::DateTime<Utc>,
) -> impl FnMut(&mut Event) -> Result<bool, std::convert::Infallible> {
    let mut i = 0;
    move |row| {
        if i == rows {
            return Ok(false);
        }
        *row = event(i, now);
        i += 1;
        Ok(true)
    }
}

/// Hand-written filtered scan: the timestamp range visible now, newest cell
/// per column, decoded by hand. `RAW_FILTER` swaps the filter, to measure
/// what a filter costs the server: `lib` (the library's, selecting the
/// family), or a chain of `ts` (timestamp range), `limit` (newest per
/// column), `range` (family by column range) and `regex` (family by regular
/// expression), e.g. `RAW_FILTER=range,ts,limit`.
pub(crate) async fn raw_scan(
    client: &bigtable_rs::bigtable::BigTable,
    table_name: &str,
) -> Res<usize> {
    let now_us = Utc::now().timestamp_micros();
    let filter = |f| RowFilter { filter: Some(f) };
    let part = |name: &str| -> Res<RowFilter> {
        Ok(filter(match name {
            "ts" => Filter::TimestampRangeFilter(TimestampRange {
                start_timestamp_micros: now_us - now_us % 1000 + 1000,
                end_timestamp_micros: 0,
            }),
            "limit" => Filter::CellsPerColumnLimitFilter(1),
            "range" => Filter::ColumnRangeFilter(bigtable_rs::google::bigtable::v2::ColumnRange {
                family_name: "e".into(),
                start_qualifier: None,
                end_qualifier: None,
            }),
            "regex" => Filter::FamilyNameRegexFilter("^e$".into()),
            other => return Err(format!("RAW_FILTER: unknown part {other}").into()),
        }))
    };
    let spec = std::env::var("RAW_FILTER").unwrap_or_else(|_| "ts,limit".to_owned());
    let row_filter = if spec == "lib" {
        // The library's filter, spelled out in bigtable_rs's messages.
        ttl_bench::lib_read_filter(Utc::now())
    } else {
        let filters = spec.split(',').map(part).collect::<Res<Vec<_>>>()?;
        filter(Filter::Chain(Chain { filters }))
    };
    let request = ReadRowsRequest {
        table_name: table_name.to_owned(),
        filter: Some(row_filter),
        ..ReadRowsRequest::default()
    };
    let mut client = client.clone();
    let stream = client.stream_rows(request).await?;
    let mut stream = std::pin::pin!(stream);
    let mut n = 0;
    while let Some(row) = stream.next().await {
        let (key, cells) = row?;
        std::hint::black_box(hand_decode(&key, &cells)?);
        n += 1;
    }
    Ok(n)
}

// ----- bytes saved by the server-side filter -----------------------------------

/// Write `rows` rows, half expiring in 1 h and half in 3 h; move a manual
/// clock 2 h on (half expired for the reader, none collected: the emulator's
/// GC runs on real time); count the bytes of the `ReadRowsResponse`s a typed
/// read receives versus an unfiltered read.
async fn filter_bytes(host: &str, rows: usize) -> Res<Value> {
    let conn = Connection::emulator(host, PROJECT, "bench-filter")?;
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let table = Table::<Event>::new(conn.clone()).with_clock(clock.clone());
    table.ensure_schema().await?;
    let batch: Vec<Event> = (0..rows)
        .map(|i| {
            let mut e = event(i, t0);
            let hours = if i % 2 == 0 { 1 } else { 3 };
            e.expires_at = t0 + TimeDelta::hours(hours);
            e
        })
        .collect();
    table.put_all(&batch).await?;
    clock.set(t0 + TimeDelta::hours(2));
    let typed_rows = table.scan(Scan::all()).await?.len();
    let filter = ttl_bench::lib_read_filter(clock.now());
    let typed = response_bytes(host, &conn, Some(filter)).await?;
    let raw = response_bytes(host, &conn, None).await?;
    Ok(json!({
        "rows_written": rows,
        "rows_typed": typed_rows,
        "typed_bytes": typed.0,
        "typed_rows_received": typed.1,
        "unfiltered_bytes": raw.0,
        "unfiltered_rows_received": raw.1,
    }))
}

/// Encoded size of every `ReadRowsResponse` of a full-table read of
/// `conn`'s instance on the emulator at `host`, and the number of rows
/// committed in them. The responses are counted as they come off the wire,
/// which the library's raw data layer does not show: through `bigtable_rs`'s
/// generated client.
async fn response_bytes(
    host: &str,
    conn: &Connection,
    filter: Option<RowFilter>,
) -> Res<(usize, usize)> {
    use bigtable_rs::google::bigtable::v2::read_rows_response::cell_chunk::RowStatus;
    let rs = BigTableConnection::new_with_emulator(
        host,
        conn.project(),
        conn.instance(),
        true,
        1,
        None,
    )?;
    let mut bigtable = rs.client();
    bigtable.configure_inner_client(|client| client.max_decoding_message_size(256 << 20));
    let request = ReadRowsRequest {
        table_name: bigtable.get_full_table_name(Event::SCHEMA.table),
        filter,
        ..ReadRowsRequest::default()
    };
    let mut stream = bigtable.get_client().read_rows(request).await?.into_inner();
    let (mut bytes, mut rows) = (0, 0);
    while let Some(response) = stream.message().await? {
        bytes += response.encoded_len();
        rows += response
            .chunks
            .iter()
            .filter(|c| matches!(c.row_status, Some(RowStatus::CommitRow(true))))
            .count();
    }
    Ok((bytes, rows))
}

// ----- the report -------------------------------------------------------------

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Criterion's mean estimate (ns) of `group/name`.
fn criterion_mean(dir: &Path, group: &str, name: &str) -> Option<f64> {
    read_json(&dir.join(group).join(name).join("new/estimates.json"))?["mean"]["point_estimate"]
        .as_f64()
}

fn shell(cmd: &str) -> String {
    Command::new("sh")
        .args(["-c", cmd])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// What the emulator's CPU per row written says of `owns_family`:
/// `family_us` and `columns_us` are the medians (µs a row) of `lib` (5
/// mutations a row: one `DeleteFromFamily`, four `SetCell`s) and of
/// `lib-by-column` (8: four `DeleteFromColumn`s, four `SetCell`s), `ratio`
/// the median of the rounds' ratios.
fn owns_family_note(family_us: f64, columns_us: f64, ratio: f64) -> String {
    // A straight line through the two: a cost a mutation and one a row.
    let per_mutation = (columns_us - family_us) / 3.0;
    let per_row = columns_us - 8.0 * per_mutation;
    format!(
        "**`owns_family` and the emulator's work.** One `DeleteFromFamily` in place of four \
         `DeleteFromColumn`s takes 3 of a row's 8 mutations away; the emulator's CPU per row \
         written falls by {:.0}% (the median of the rounds' ratios, {ratio:.2}){}. A straight \
         line through the two medians puts {per_mutation:.2} µs on each mutation and \
         {per_row:.1} µs on each row whatever its mutations, so fewer deletes alone cannot \
         halve the emulator's work a row here. The rows go to an empty table, where a delete \
         finds no cell to remove; rewriting rows that hold cells was not measured.\n\n",
        100.0 * (1.0 - ratio),
        if ratio <= 0.5 {
            ": the half issue 23 aims at is reached"
        } else {
            ", not the half issue 23 aims at"
        },
    )
}

/// Said of a figure `report` keeps from the file, not measured in its run.
const CARRIED: &str = " (not measured again: the previous run's)";

#[allow(clippy::too_many_lines)]
fn report(dir: &Path, out: &Path) -> Res<()> {
    let e2e = read_json(&dir.join("e2e.json")).ok_or("e2e.json missing")?;
    let compile = read_json(&dir.join("compile.json"));
    let old = std::fs::read_to_string(out).unwrap_or_default();
    // A line whose measure was not run this time keeps the file's figure,
    // said so.
    let carried = |label: &str| {
        let row = old
            .lines()
            .find(|l| l.starts_with(&format!("| {label} |")))?;
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let (value, target) = (cells.get(1)?, cells.get(2).copied().unwrap_or(""));
        let value = value.strip_suffix(CARRIED).unwrap_or(value).to_owned();
        Some((format!("{value}{CARRIED}"), target.to_owned()))
    };
    let criterion = dir.join("criterion");
    let rows = e2e["rows"].as_f64().unwrap_or(0.0);
    let mut t = String::new();
    let mut line = |what: &str, value: String, target: &str| {
        let _ = writeln!(t, "| {what} | {value} | {target} |");
    };
    let n = 1000.0_f64;
    for group in ["build", "decode"] {
        let d = criterion_mean(&criterion, group, "derive");
        let h = criterion_mean(&criterion, group, "hand");
        if let (Some(d), Some(h)) = (d, h) {
            line(
                &format!("{group}, 1,000 rows: derive / hand-written time"),
                format!("{:.3} ({:.0} ns vs {:.0} ns per row)", d / h, d / n, h / n),
                "≤ 1.05",
            );
        }
    }
    let rate = |c: &str, key: &str| rows / e2e[c][key].as_f64().unwrap_or(f64::NAN);
    for (key, what) in [("write_s", "write"), ("scan_s", "filtered scan")] {
        for c in ["lib", "lib-by-column", "lib-put-all", "raw", "python"] {
            if e2e.get(c).is_some() {
                line(
                    &format!("{what} {rows} rows, {c}: rows/s"),
                    format!("{:.0}", rate(c, key)),
                    "",
                );
            }
        }
        let a = rate("lib", key);
        let paired = |k: &str| e2e["paired"][k].as_f64().unwrap_or(f64::NAN);
        line(
            &format!("{what}: a/b (library / hand-written bigtable_rs), throughput"),
            format!(
                "{:.3} (median of the rounds' ratios, quartiles {:.3}–{:.3}; {:.3} from the medians above)",
                paired(key),
                paired(&format!("{key}_q1")),
                paired(&format!("{key}_q3")),
                a / rate("raw", key)
            ),
            "≥ 0.95",
        );
        let cpu_key = key.replace("_s", "_cpu_s");
        let cpu = |c: &str| e2e[c][&cpu_key].as_f64().unwrap_or(f64::NAN);
        line(
            &format!("{what}: client CPU time, library / hand-written bigtable_rs"),
            format!(
                "{:.2} s / {:.2} s = {:.2} (median of the rounds' ratios: {:.2})",
                cpu("lib"),
                cpu("raw"),
                cpu("lib") / cpu("raw"),
                1.0 / e2e["paired"][cpu_key.as_str()].as_f64().unwrap_or(f64::NAN)
            ),
            "",
        );
        if e2e.get("python").is_some() {
            line(
                &format!("{what}: a/c (library / Python client)"),
                format!("{:.1}", a / rate("python", key)),
                "≥ 5",
            );
        }
    }
    let family = &e2e["owns_family"];
    let mut owns_note = String::new();
    if family.is_object() {
        let per_row = |c: &str, key: &str| 1e6 * e2e[c][key].as_f64().unwrap_or(f64::NAN) / rows;
        let ratio = |key: &str| {
            let f = |k: String| family[k].as_f64().unwrap_or(f64::NAN);
            format!(
                "{:.3} (quartiles {:.3}–{:.3})",
                f(key.to_owned()),
                f(format!("{key}_q1")),
                f(format!("{key}_q3"))
            )
        };
        line(
            "write: emulator CPU per row, `owns_family` (one `DeleteFromFamily`, lib) / per-column deletes (lib-by-column)",
            format!(
                "{:.2} µs / {:.2} µs; median of the rounds' ratios {}",
                per_row("lib", "write_emulator_cpu_s"),
                per_row("lib-by-column", "write_emulator_cpu_s"),
                ratio("write_emulator_cpu_s")
            ),
            // Issue 23, item 4: halve the server's work per row.
            "≤ 0.5",
        );
        owns_note = owns_family_note(
            per_row("lib", "write_emulator_cpu_s"),
            per_row("lib-by-column", "write_emulator_cpu_s"),
            family["write_emulator_cpu_s"].as_f64().unwrap_or(f64::NAN),
        );
        line(
            "write: wall time, `owns_family` / per-column deletes",
            format!(
                "{:.3} s / {:.3} s; median of the rounds' ratios {}",
                e2e["lib"]["write_s"].as_f64().unwrap_or(f64::NAN),
                e2e["lib-by-column"]["write_s"].as_f64().unwrap_or(f64::NAN),
                ratio("write_s")
            ),
            "",
        );
        line(
            "write: client CPU per row, `owns_family` / per-column deletes",
            format!(
                "{:.2} µs / {:.2} µs; median of the rounds' ratios {}",
                per_row("lib", "write_cpu_s"),
                per_row("lib-by-column", "write_cpu_s"),
                ratio("write_cpu_s")
            ),
            "",
        );
        line(
            "filtered scan: emulator CPU per row, `owns_family` / per-column deletes",
            format!(
                "{:.2} µs / {:.2} µs; median of the rounds' ratios {}",
                per_row("lib", "scan_emulator_cpu_s"),
                per_row("lib-by-column", "scan_emulator_cpu_s"),
                ratio("scan_emulator_cpu_s")
            ),
            "",
        );
    }
    for c in ["lib", "lib-by-column", "lib-put-all", "raw", "python"] {
        if let Some(kib) = e2e.get(c).and_then(|v| v["peak_rss_kib"].as_f64()) {
            line(
                &format!("peak RSS after writing {rows} rows, {c}"),
                format!("{:.1} MiB", kib / 1024.0),
                "",
            );
        }
    }
    let f = &e2e["filtering"];
    let (typed, raw) = (
        f["typed_bytes"].as_f64().unwrap_or(0.0),
        f["unfiltered_bytes"].as_f64().unwrap_or(1.0),
    );
    line(
        &format!(
            "bytes received, {} rows with half expired not collected: typed read / unfiltered",
            f["rows_written"]
        ),
        format!(
            "{typed:.0} / {raw:.0} B = {:.2} ({:.0}% saved; {} of {} rows returned)",
            typed / raw,
            100.0 * (1.0 - typed / raw),
            f["typed_rows_received"],
            f["unfiltered_rows_received"]
        ),
        "",
    );
    let compile_label = "cargo build of 50 structs: BigtableRow / serde Serialize+Deserialize";
    if let Some(compile) = &compile {
        let (c_derive, c_serde) = (
            compile["derive_s"].as_f64().unwrap_or(f64::NAN),
            compile["serde_s"].as_f64().unwrap_or(f64::NAN),
        );
        line(
            compile_label,
            format!(
                "{c_derive:.2} s / {c_serde:.2} s = {:.2}",
                c_derive / c_serde
            ),
            "",
        );
    } else if let Some((value, target)) = carried(compile_label) {
        line(compile_label, value, &target);
    }
    if let Some(cond) = read_json(&dir.join("conditional.json")) {
        for (shape, what) in [
            ("one_at_a_time", "one call at a time"),
            ("concurrent", "16 in flight"),
        ] {
            let c = &cond[shape];
            let f = |k: &str| c[k].as_f64().unwrap_or(f64::NAN);
            let ops = cond["ops"].as_f64().unwrap_or(f64::NAN);
            line(
                &format!(
                    "conditional insert, {what}: library / hand-written CheckAndMutateRow, throughput"
                ),
                format!(
                    "{:.3} (median of the rounds' ratios, quartiles {:.3}–{:.3}; {:.0} vs {:.0} inserts/s)",
                    f("throughput_ratio"),
                    f("throughput_ratio_q1"),
                    f("throughput_ratio_q3"),
                    ops / f("library_s"),
                    ops / f("hand_s"),
                ),
                "≥ 0.90",
            );
            line(
                &format!("conditional insert, {what}: client CPU time, library / hand-written"),
                format!(
                    "{:.3} s / {:.3} s = {:.2}",
                    f("library_cpu_s"),
                    f("hand_cpu_s"),
                    f("library_cpu_s") / f("hand_cpu_s")
                ),
                "",
            );
        }
    }
    if let Some(ins) = read_json(&dir.join("instructions.json")) {
        let (lib, raw) = (
            ins["lib"].as_f64().unwrap_or(f64::NAN),
            ins["raw"].as_f64().unwrap_or(f64::NAN),
        );
        line(
            &format!(
                "client instructions (callgrind), write + filtered scan of {} rows: lib / raw",
                ins["rows"]
            ),
            format!("{:.0} M / {:.0} M = {:.3}", lib / 1e6, raw / 1e6, lib / raw),
            "",
        );
    }
    // Every other line of the file's table (a measure whose JSON is not in
    // `dir`: the criterion benches, conditional inserts, client
    // instructions, a contender left out) is kept, said so, so that
    // running one command again does not drop the others' figures.
    let old_table = old.split("\n## ").next().unwrap_or("");
    for row in old_table.lines().filter(|l| l.starts_with("| ")) {
        let label = row
            .trim_start_matches("| ")
            .split(" | ")
            .next()
            .unwrap_or("");
        if label == "measure" || t.lines().any(|l| l.starts_with(&format!("| {label} |"))) {
            continue;
        }
        if let Some((value, target)) = carried(label) {
            let _ = writeln!(t, "| {label} | {value} | {target} |");
        }
    }
    let machine = format!(
        "{} cores ({}), {} memory, {}, {}",
        shell("nproc"),
        shell("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        shell("free -h | awk '/Mem:/ {print $2}'"),
        shell("rustc --version"),
        shell("uname -sr")
    );
    let doc = format!(
        "# Benchmarks\n\n\
         Measured performance of `bigtable-ttl` against hand-written `bigtable_rs` code \
         and Google's Python, Go and Node.js clients. Each section ends with the command \
         that produced it. `bench/run.sh` runs the benchmarks of this first section and of \
         *Parallel scan*, *Against a null server*, *Like for like* and *Single-row \
         latency*, and rewrites those sections; the others come from the commands they \
         name, and `bench/run.sh` keeps them as they are.\n\n\
         Figures are from one run on one machine, compared as ratios within that run. The \
         machine is shared and noisy: absolute numbers move between runs, ratios much \
         less.\n\n\
         Machine: {machine}. Run on {date}{load}.\n\n\
         | measure | figure | target |\n|---|---|---|\n{t}\n{owns_note}\
         ## What each line measures\n\n\
         * **build / decode** (criterion, `bench/benches/codec.rs`): the mutations for \
         1,000 rows of `ttl_bench::Event` (one-second expiration, per-row expiry, three \
         columns) through `#[derive(BigtableRow)]` versus hand-written `bigtable_rs` \
         protobuf code producing the same bytes (asserted before measuring); decoding \
         1,000 rows read back into structs (with expiry metadata) versus a hand-written \
         qualifier match.\n\
         * **write / filtered scan**: {rows} rows with per-row expiries written to a \
         dedicated emulator, then scanned with the timestamp filter and decoded. Each \
         contender runs as its own process on a fresh emulator, once per round \
         (`BENCH_ROUNDS`, 9 by default), the Rust contenders in an order rotated each \
         round and the Python client after them, each emulator stopped (and its exit \
         waited for) before the next starts; the figures are \
         each contender's median. *lib*: `Table::writer()` (the bulk writer, \
         rows streamed in; the library contenders call `verify_schema` once at startup, \
         untimed, as an application does, which lets typed reads skip the family \
         selector on this one-family table); *lib-by-column*: the same through a twin of \
         `Event` without `#[bigtable(owns_family)]`, so each row clears its three columns \
         and its row marker with four `DeleteFromColumn`s where `lib` sends one \
         `DeleteFromFamily` (8 mutations a row against 5); *lib-put-all*: `Table::put_all` over a `Vec` of the rows; \
         *raw* (b): hand-written `bigtable_rs` with the same batching (10,000 rows per \
         `MutateRows`, 4 in flight) and a hand-written filter and decoder; *python* (c): \
         Google's `google-cloud-bigtable` (its `MutationsBatcher`, 10,000 rows per flush, \
         and `read_rows` with a `TimestampRangeFilter`), installed in a venv by \
         `bench/run.sh`.\n\
         * **a/b**: each round runs the library and the hand-written contender a few \
         seconds apart, so the ratio of their times within a round sees the same \
         machine; the figure is the median of those ratios over the rounds, with \
         their quartiles (the ratio of the per-contender medians is given beside it). **client CPU time**: \
         the contender process's own CPU time (user and kernel, all threads, from \
         `/proc/self/task/*/schedstat`) in the phase, the emulator's not included: \
         what the client costs, much less disturbed by other load than wall time. \
         **emulator CPU**: the emulator process's CPU time (`/proc/PID/task/*/schedstat`, \
         read by the contender at the start and end of each phase) over the rows; \
         `owns_family` / per-column deletes is the ratio of `lib`'s to `lib-by-column`'s \
         within each round, the median over the rounds.\n\
         * **peak RSS**: `VmHWM` of the contender's process right after its write.\n\
         * **conditional insert** (`ttl-bench conditional`, issue 11): 4,000 \
         `Table::insert_if_absent` calls on fresh keys (each wins and writes) against \
         4,000 hand-written `bigtable_rs` `CheckAndMutateRow` calls with the same \
         predicate (the library's: the row exists at the horizon) and mutations, the same \
         bytes on the wire as asserted in \
         `the_hand_written_calls_send_the_library_s_requests`; one call at a time, then 16 in \
         flight; one emulator, rounds alternating which goes first, the median of the \
         rounds' ratios. Wall time here is mostly the emulator's; the client CPU time \
         beside it is the library's own cost.\n\
         * **client instructions**: the `lib` and `raw` contenders run under `valgrind \
         --tool=callgrind` (write and filtered scan of 20,000 rows, each on its own \
         emulator): instructions the client process executed, the same whatever else the \
         machine is doing; the emulator's work is not counted.\n\
         * **bytes received**: encoded size of the `ReadRowsResponse` messages of a \
         full-table read with the typed reader's filter (`Table::read_filter` at a \
         manual clock 2 h ahead) versus no filter, half the rows expired for the reader \
         but not collected (GC runs on real time).\n\
         * **cargo build**: a generated crate of 50 structs (`bench/gen_compile.sh`), \
         dependencies built first, then only the crate timed (`cargo build`, dev \
         profile, separate target dir).\n\n\
         Not measured: Cloud Bigtable (the emulator, on the client's own two cores, \
         does the server's work and takes most of the time), TLS and tokens, a real \
         network; the clients' own cost is the null-server sections' subject.\n\n\
         Command: `bench/run.sh` (`BENCH_ROWS=N` to change the row count).\n",
        date = shell("date -u +%Y-%m-%d"),
        load = match (e2e["load_average"][0].as_f64(), e2e["load_average"][1].as_f64()) {
            (Some(start), Some(end)) => format!(
                " (the end-to-end rounds with a load average of {start:.1} at their start and \
                 {end:.1} at their end)"
            ),
            _ => String::new(),
        },
    );
    // The sections after the first table: those measured in this run are
    // rendered again, every other one (another command's, or one whose
    // JSON is not in `dir`) is kept as the file has it.
    let tail = old
        .match_indices("\n## ")
        .map(|(at, _)| at + 1)
        .find(|&at| !old[at..].starts_with("## What each line measures"))
        .map_or("", |at| &old[at..]);
    let mut doc = format!("{}\n\n{tail}", doc.trim_end());
    if let Some(p) = read_json(&dir.join("parallel.json")) {
        doc = replace_section(&doc, parallel::HEADING, &parallel::section(&p));
    }
    if let Some(n) = read_json(&dir.join("null.json")) {
        doc = replace_section(&doc, null::report::HEADING, &null::report::section(&n));
    }
    if let Some(f) = read_json(&dir.join("fair.json")) {
        doc = replace_section(&doc, null::fair::HEADING, &null::fair::section(&f));
    }
    if let Some(l) = read_json(&dir.join("latency.json")) {
        doc = replace_section(&doc, latency::HEADING, &latency::section(&l));
    }
    std::fs::write(out, format!("{}\n", doc.trim_end()))?;
    Ok(())
}
