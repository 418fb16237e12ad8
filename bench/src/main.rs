//! `ttl-bench`: the benchmarks behind `BENCHMARKS.md`; `bench/run.sh` runs
//! them all. This file holds the command line.

// Counts and durations become ratios and rates for a report: precision past
// 2^52 does not matter there.
#![allow(clippy::cast_precision_loss)]

mod concurrency;
mod e2e;
mod expiry;
mod latency;
mod null;
mod parallel;
mod report;
mod telemetry_cost;

use std::future::Future;
use std::path::PathBuf;

use clap::{Args, Parser};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

/// Every allocation is counted, for the allocations per row of `ttl-bench
/// null` (a few atomic additions each, paid alike by every Rust contender).
#[global_allocator]
pub(crate) static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const PROJECT: &str = "bench";

/// The benchmarks behind `BENCHMARKS.md`; `bench/run.sh` runs them all.
#[derive(Parser)]
#[command(name = "ttl-bench")]
enum Cli {
    /// Each contender, a process of its own on a fresh emulator, in rounds
    /// (`BENCH_ROUNDS`, 9): write and filtered scan; the filter's bytes.
    E2e(E2e),
    /// One contender of `e2e` (internal).
    Contender(Contender),
    /// The `lib` and `raw` contenders' instructions under callgrind.
    Instructions(Instructions),
    /// `Table::scan_parallel` against one `Table::stream`, with the emulator's CPU.
    Parallel(Parallel),
    /// Single-row calls one at a time, the library against hand-written code.
    Latency(Latency),
    /// Point calls with 1, 16 and 256 in flight: the library, hand-written
    /// calls, the library's connection pool.
    Concurrency(concurrency::Args),
    /// The expiry feed and the reaper (JSON; `BENCHMARKS.md`'s figures are written by hand).
    Expiry(expiry::Args),
    /// What the client-side metrics cost on a write+read workload.
    Telemetry(Telemetry),
    /// The clients' own cost against a null server.
    Null(Null),
    /// The null-server comparisons like for like, TLS included.
    Fair(Fair),
    /// The null server (internal): serves the workload's first N rows for each N.
    NullServer(NullServer),
    /// One Rust contender's phase against the null server (internal).
    NullClient(NullClient),
    /// `BENCHMARKS.md`'s tables rewritten from the other commands' JSON.
    Report(Report),
}

#[derive(Args)]
struct E2e {
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    /// The Python with `google-cloud-bigtable` (none: no Python contender).
    #[arg(long)]
    python: Option<String>,
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
struct Contender {
    name: String,
    #[arg(long)]
    host: String,
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    #[arg(long)]
    emulator_pid: Option<u32>,
}

#[derive(Args)]
struct Instructions {
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
struct Parallel {
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    concurrency: Vec<usize>,
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
struct Latency {
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
}

#[derive(Args)]
struct Telemetry {
    #[arg(long, default_value_t = 20_000)]
    rows: usize,
    #[arg(long, default_value_t = 7)]
    rounds: usize,
}

#[derive(Args)]
struct Null {
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
}

#[derive(Args)]
struct Fair {
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
}

#[derive(Args)]
struct NullServer {
    #[arg(long, value_delimiter = ',', required = true)]
    rows: Vec<usize>,
    /// Serve TLS only, the CA's PEM written to this file.
    #[arg(long)]
    tls: Option<PathBuf>,
    /// Refuse calls without this bearer token.
    #[arg(long)]
    token: Option<String>,
}

#[derive(Args)]
struct NullClient {
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
}

#[derive(Args)]
struct Report {
    /// Where the commands wrote their JSON (`e2e.json`, `null.json`, …);
    /// several, one a run: each table gives every run's figures.
    #[arg(long, required = true)]
    results: Vec<PathBuf>,
    /// The file whose tables are rewritten (`BENCHMARKS.md`).
    #[arg(long)]
    update: PathBuf,
}

/// `work` on a multi-threaded runtime. The null server and the drivers of
/// processes (`null`, `fair`, `report`) run without one: the server makes
/// its own on one thread.
fn block_on<T>(work: impl Future<Output = Res<T>>) -> Res<T> {
    tokio::runtime::Runtime::new()?.block_on(work)
}

fn main() -> Res<()> {
    match Cli::parse() {
        Cli::E2e(a) => block_on(e2e::run(a.rows, a.python.as_deref(), &a.out)),
        Cli::Contender(a) => block_on(async {
            let line = e2e::contender(&a.name, &a.host, a.rows, a.emulator_pid).await?;
            println!("{line}");
            Ok(())
        }),
        Cli::Instructions(a) => block_on(e2e::instructions(a.rows, &a.out)),
        Cli::Parallel(a) => block_on(parallel::run(a.rows, &a.concurrency, a.rounds, &a.out)),
        Cli::Latency(a) => block_on(latency::run(a.ops, a.rounds, &a.against, &a.out)),
        Cli::Concurrency(a) => block_on(concurrency::main(&a)),
        Cli::Expiry(a) => block_on(expiry::main(&a)),
        Cli::Telemetry(a) => block_on(telemetry_cost::run(a.rows, a.rounds)),
        Cli::Null(a) => null::run(&null::Plan {
            rows: a.rows,
            rounds: a.rounds,
            node_modules: a.node_modules,
            out: a.out,
            kind: null::Kind::Null {
                scale: a.scale,
                profile_rows: a.profile_rows,
            },
        }),
        Cli::Fair(a) => null::run(&null::Plan {
            rows: a.rows,
            rounds: a.rounds,
            node_modules: a.node_modules,
            out: a.out,
            kind: null::Kind::Fair { go_csv: a.go_csv },
        }),
        Cli::NullServer(a) => null::server::main(&a.rows, a.tls.as_deref(), a.token.as_deref()),
        Cli::NullClient(a) => block_on(null_client(a)),
        Cli::Report(a) => report::run(&a.results, &a.update),
    }
}

/// `null-client`: one phase, its figures printed as one line.
async fn null_client(a: NullClient) -> Res<()> {
    let secure = match (a.tls, a.token) {
        (Some(ca), Some(token)) => Some(null::client::Secure {
            ca_pem: std::fs::read(ca)?,
            token,
        }),
        _ => None,
    };
    let target = null::client::Target {
        host: &a.host,
        secure: secure.as_ref(),
    };
    let csv = a.csv.as_deref();
    println!(
        "{}",
        null::client::run(&a.who, &a.phase, &target, &a.table, a.rows, csv).await?
    );
    Ok(())
}
