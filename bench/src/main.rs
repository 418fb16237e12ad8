//! `ttl-bench`: the benchmarks behind `BENCHMARKS.md` (`ttl-bench --help`
//! lists the commands; `bench/run.sh` runs them all). This file holds the
//! command line, the end-to-end bench and the report.

// Counts and durations become ratios and rates for a report: precision past
// 2^52 does not matter there.
#![allow(clippy::cast_precision_loss)]

mod expiry;
mod latency;
mod null;
mod report;

use std::collections::BTreeMap;
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
use ttl_bench::stats::{median, paired};
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

/// The benchmarks behind `BENCHMARKS.md`; `bench/run.sh` runs them all.
#[derive(clap::Parser)]
#[command(name = "ttl-bench")]
enum Cli {
    /// Each contender, a process of its own on a fresh emulator, in rounds
    /// (`BENCH_ROUNDS`, 9): write and filtered scan; the filter's bytes.
    E2e {
        #[arg(long, default_value_t = 100_000)]
        rows: usize,
        /// The Python with `google-cloud-bigtable` (none: no Python contender).
        #[arg(long)]
        python: Option<String>,
        #[arg(long)]
        out: PathBuf,
    },
    /// One contender of `e2e` (internal).
    Contender {
        name: String,
        #[arg(long)]
        host: String,
        #[arg(long, default_value_t = 100_000)]
        rows: usize,
        #[arg(long)]
        emulator_pid: Option<u32>,
    },
    /// The `lib` and `raw` contenders' instructions under callgrind.
    Instructions {
        #[arg(long, default_value_t = 100_000)]
        rows: usize,
        #[arg(long)]
        out: PathBuf,
    },
    /// `Table::scan_parallel` against one `Table::stream`, with the emulator's CPU.
    Parallel {
        #[arg(long, default_value_t = 100_000)]
        rows: usize,
        #[arg(long, value_delimiter = ',', default_value = "2,4")]
        concurrency: Vec<usize>,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        #[arg(long)]
        out: PathBuf,
    },
    /// Single-row calls one at a time, the library against hand-written code.
    Latency {
        #[arg(long, default_value_t = 1_000)]
        ops: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "emulator,null"
        )]
        against: Vec<latency::Target>,
        #[arg(long)]
        out: PathBuf,
    },
    /// The expiry feed and the reaper (JSON; `BENCHMARKS.md`'s figures are written by hand).
    Expiry(expiry::Args),
    /// What the client-side metrics cost on a write+read workload.
    Telemetry {
        #[arg(long, default_value_t = 20_000)]
        rows: usize,
        #[arg(long, default_value_t = 7)]
        rounds: usize,
    },
    /// The clients' own cost against a null server.
    Null {
        #[arg(long, default_value_t = 100_000)]
        rows: usize,
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// The memory pass runs `scale × rows` rows.
        #[arg(long, default_value_t = 10)]
        scale: usize,
        /// Where `@google-cloud/bigtable` is installed (a `node_modules`).
        #[arg(long)]
        node_modules: Option<PathBuf>,
        /// Rows of the library's phases profiled under callgrind (0: none).
        #[arg(long, default_value_t = 20_000)]
        profile_rows: usize,
        #[arg(long)]
        out: PathBuf,
    },
    /// The null-server comparisons like for like, TLS included.
    Fair {
        #[arg(long, default_value_t = 100_000)]
        rows: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        #[arg(long)]
        node_modules: Option<PathBuf>,
        /// The `go_csv` program (`bench/go_csv`), if built.
        #[arg(long)]
        go_csv: Option<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
    /// The null server (internal): serves the workload's first N rows for each N.
    NullServer {
        #[arg(long, value_delimiter = ',', required = true)]
        rows: Vec<usize>,
        /// Serve TLS only, the CA's PEM written to this file.
        #[arg(long)]
        tls: Option<PathBuf>,
        /// Refuse calls without this bearer token.
        #[arg(long)]
        token: Option<String>,
    },
    /// One Rust contender's phase against the null server (internal).
    NullClient {
        who: String,
        phase: String,
        #[arg(long)]
        host: String,
        #[arg(long)]
        table: String,
        #[arg(long, default_value_t = 100_000)]
        rows: usize,
        #[arg(long)]
        csv: Option<PathBuf>,
        /// TLS, trusting this CA (with `--token`).
        #[arg(long, requires = "token")]
        tls: Option<PathBuf>,
        #[arg(long, requires = "tls")]
        token: Option<String>,
    },
    /// `BENCHMARKS.md`'s tables rewritten from the other commands' JSON.
    Report {
        /// Where the commands wrote their JSON (`e2e.json`, `null.json`, …).
        #[arg(long)]
        results: PathBuf,
        /// The file whose tables are rewritten (`BENCHMARKS.md`).
        #[arg(long)]
        update: PathBuf,
    },
}

fn main() -> Res<()> {
    use clap::Parser as _;
    match Cli::parse() {
        // No runtime of the default shape for these: the null server makes
        // its own on one thread, the drivers only run processes.
        Cli::NullServer { rows, tls, token } => {
            null::server::main(&rows, tls.as_deref(), token.as_deref())
        }
        Cli::Null {
            rows,
            rounds,
            scale,
            node_modules,
            profile_rows,
            out,
        } => null::run(&null::Plan {
            rows,
            rounds,
            node_modules,
            out,
            kind: null::Kind::Null {
                scale,
                profile_rows,
            },
        }),
        Cli::Fair {
            rows,
            rounds,
            node_modules,
            go_csv,
            out,
        } => null::run(&null::Plan {
            rows,
            rounds,
            node_modules,
            out,
            kind: null::Kind::Fair { go_csv },
        }),
        Cli::Report { results, update } => report::run(&results, &update),
        cli => tokio::runtime::Runtime::new()?.block_on(async_main(cli)),
    }
}

async fn async_main(cli: Cli) -> Res<()> {
    match cli {
        Cli::NullClient {
            who,
            phase,
            host,
            table,
            rows,
            csv,
            tls,
            token,
        } => {
            let secure = match (tls, token) {
                (Some(ca), Some(token)) => Some(null::client::Secure {
                    ca_pem: std::fs::read(ca)?,
                    token,
                }),
                _ => None,
            };
            let target = null::client::Target {
                host: &host,
                secure: secure.as_ref(),
            };
            let line =
                null::client::run(&who, &phase, &target, &table, rows, csv.as_deref()).await?;
            println!("{line}");
            Ok(())
        }
        Cli::E2e { rows, python, out } => e2e(rows, python.as_deref(), &out).await,
        Cli::Contender {
            name,
            host,
            rows,
            emulator_pid,
        } => {
            println!("{}", contender(&name, &host, rows, emulator_pid).await?);
            Ok(())
        }
        Cli::Parallel {
            rows,
            concurrency,
            rounds,
            out,
        } => parallel::run(rows, &concurrency, rounds, &out).await,
        Cli::Latency {
            ops,
            rounds,
            against,
            out,
        } => latency::run(ops, rounds, &against, &out).await,
        Cli::Instructions { rows, out } => instructions(rows, &out).await,
        Cli::Expiry(args) => expiry::main(&args).await,
        Cli::Telemetry { rows, rounds } => telemetry_cost::run(rows, rounds).await,
        Cli::NullServer { .. } | Cli::Null { .. } | Cli::Fair { .. } | Cli::Report { .. } => {
            unreachable!("run without a runtime in `main`")
        }
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
/// `emulator`: the Python client's script under `python`, else this binary.
fn contender_command(
    name: &str,
    rows: usize,
    emulator: &bigtable_ttl_emulator::Emulator,
    python: Option<&str>,
) -> Res<Command> {
    let (host, rows) = (emulator.host(), rows.to_string());
    if name == "python" {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python_client.py");
        let mut cmd = Command::new(python.unwrap_or("python3"));
        cmd.arg(script)
            .args(["--project", PROJECT, "--instance", "bench-python"])
            .args(["--table", Event::SCHEMA.table, "--rows", &rows])
            .env("BIGTABLE_EMULATOR_HOST", host);
        return Ok(cmd);
    }
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["contender", name, "--host", host, "--rows", &rows]);
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
    let load_start = ttl_bench::load_average();
    let mut runs: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
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
            let mut cmd = contender_command(name, rows, &emulator, python)?;
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
    // The hand-written contender's times over the library's, and the
    // library's over its twin's without `owns_family`.
    let paired = ["write_s", "scan_s", "write_cpu_s", "scan_cpu_s"];
    results.insert("paired".into(), ratios(&runs, "raw", "lib", &paired));
    let family = [
        "write_emulator_cpu_s",
        "write_s",
        "write_cpu_s",
        "scan_emulator_cpu_s",
    ];
    results.insert(
        "owns_family".into(),
        ratios(&runs, "lib", "lib-by-column", &family),
    );
    for (name, values) in &runs {
        let median = |key: &str| median(values.iter().filter_map(|v| v[key].as_f64()));
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
    let machine = format!(
        "{} cores ({}), {} memory, {}, {}",
        shell("nproc"),
        shell("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        shell("free -h | awk '/Mem:/ {print $2}'"),
        shell("rustc --version"),
        shell("uname -sr")
    );
    results.insert("machine".into(), json!(machine));
    results.insert("date".into(), json!(shell("date -u +%Y-%m-%d")));
    results.insert(
        "load_average".into(),
        json!([load_start, ttl_bench::load_average()]),
    );
    std::fs::write(out, serde_json::to_string_pretty(&Value::Object(results))?)?;
    drop(emulator);
    Ok(())
}

/// For each of `keys`, `over`'s figure over `under`'s, each ratio taken
/// within one round (the two ran back to back, so a round's ratio sees the
/// same machine), their median and quartiles over the rounds (the median
/// drops the rounds another process disturbed): `key`, `key_q1`, `key_q3`.
fn ratios(runs: &BTreeMap<&str, Vec<Value>>, over: &str, under: &str, keys: &[&str]) -> Value {
    let (Some(over), Some(under)) = (runs.get(over), runs.get(under)) else {
        return Value::Null;
    };
    let mut out = serde_json::Map::new();
    for key in keys {
        let figure = |runs: &[Value]| -> Vec<f64> {
            let figure = |v: &Value| v[key].as_f64().unwrap_or(f64::NAN);
            runs.iter().map(figure).collect()
        };
        let q = paired(&figure(over), &figure(under), |o, u| o / u);
        out.insert((*key).into(), json!(q.median));
        out.insert(format!("{key}_q1"), json!(q.q1));
        out.insert(format!("{key}_q3"), json!(q.q3));
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
/// per column, decoded by hand.
pub(crate) async fn raw_scan(
    client: &bigtable_rs::bigtable::BigTable,
    table_name: &str,
) -> Res<usize> {
    let now_us = Utc::now().timestamp_micros();
    let filter = |f| RowFilter { filter: Some(f) };
    let filters = vec![
        filter(Filter::TimestampRangeFilter(TimestampRange {
            start_timestamp_micros: now_us - now_us % 1000 + 1000,
            end_timestamp_micros: 0,
        })),
        filter(Filter::CellsPerColumnLimitFilter(1)),
    ];
    let row_filter = filter(Filter::Chain(Chain { filters }));
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

fn shell(cmd: &str) -> String {
    Command::new("sh")
        .args(["-c", cmd])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
