//! `ttl-bench`: the benchmarks behind `BENCHMARKS.md`; `bench/run.sh` runs
//! them all. This file holds the command line.

// Counts and durations become ratios and rates for a report: precision past
// 2^52 does not matter there.
#![allow(clippy::cast_precision_loss)]

mod calls;
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

use clap::Parser;
use null::Kind;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

/// Every allocation is counted, for the allocations per row of `ttl-bench
/// null` (a few atomic additions each, paid alike by every Rust contender).
#[global_allocator]
pub(crate) static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

use ttl_bench::{Res, PROJECT};

/// The benchmarks behind `BENCHMARKS.md`; `bench/run.sh` runs them all.
#[derive(Parser)]
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
        against: Vec<calls::Target>,
        #[arg(long)]
        out: PathBuf,
    },
    /// Point calls with 1, 16 and 256 in flight: the library, hand-written
    /// calls, the library's connection pool.
    Concurrency(concurrency::Args),
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
        #[command(flatten)]
        common: null::Common,
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Rows of the library's phases profiled under callgrind (0: none).
        #[arg(long, default_value_t = 20_000)]
        profile_rows: usize,
    },
    /// The null-server comparisons like for like, TLS included.
    Fair {
        #[command(flatten)]
        common: null::Common,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// The `go_csv` program (`bench/go_csv`), if built.
        #[arg(long)]
        go_csv: Option<PathBuf>,
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
    NullClient(null::client::Args),
    /// `BENCHMARKS.md`'s tables rewritten from the other commands' JSON.
    Report {
        /// Where the commands wrote their JSON (`e2e.json`, `null.json`, …);
        /// several, one a run: each table gives every run's figures.
        #[arg(long, required = true)]
        results: Vec<PathBuf>,
        /// The file whose tables are rewritten (`BENCHMARKS.md`).
        #[arg(long)]
        update: PathBuf,
    },
}

/// `work` on a multi-threaded runtime. The null server and the drivers of
/// processes (`null`, `fair`, `report`) run without one: the server makes
/// its own on one thread.
fn block_on<T>(work: impl Future<Output = Res<T>>) -> Res<T> {
    tokio::runtime::Runtime::new()?.block_on(work)
}

fn main() -> Res<()> {
    match Cli::parse() {
        Cli::E2e { rows, python, out } => block_on(e2e::run(rows, python.as_deref(), &out)),
        Cli::Contender {
            name,
            host,
            rows,
            emulator_pid,
        } => block_on(async {
            println!(
                "{}",
                e2e::contender(&name, &host, rows, emulator_pid).await?
            );
            Ok(())
        }),
        Cli::Instructions { rows, out } => block_on(e2e::instructions(rows, &out)),
        Cli::Parallel { rows, rounds, out } => block_on(parallel::run(rows, rounds, &out)),
        Cli::Latency {
            ops,
            rounds,
            against,
            out,
        } => block_on(latency::run(ops, rounds, &against, &out)),
        Cli::Concurrency(a) => block_on(concurrency::main(&a)),
        Cli::Expiry(a) => block_on(expiry::main(&a)),
        Cli::Telemetry { rows, rounds } => block_on(telemetry_cost::run(rows, rounds)),
        Cli::Null {
            common,
            rounds,
            profile_rows,
        } => null::run(&common, rounds, &Kind::Null { profile_rows }),
        Cli::Fair {
            common,
            rounds,
            go_csv,
        } => null::run(&common, rounds, &Kind::Fair { go_csv }),
        Cli::NullServer { rows, tls, token } => {
            null::server::main(&rows, tls.as_deref(), token.as_deref())
        }
        Cli::NullClient(a) => block_on(null::client::main(a)),
        Cli::Report { results, update } => report::run(&results, &update),
    }
}
