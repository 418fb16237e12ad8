//! `ttl-bench`: the benchmarks behind `BENCHMARKS.md` (`ttl-bench --help`
//! lists the commands; `bench/run.sh` runs them all). This file holds the
//! command line.

// Counts and durations become ratios and rates for a report: precision past
// 2^52 does not matter there.
#![allow(clippy::cast_precision_loss)]

mod concurrency;
mod e2e;
mod expiry;
mod latency;
mod null;
mod report;

use std::path::PathBuf;

use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

/// Every allocation of the bench binary is counted, for the allocations
/// per row of `ttl-bench null` (a few atomic additions per allocation, paid
/// alike by every Rust contender).
#[global_allocator]
pub(crate) static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

mod parallel;
mod telemetry_cost;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const PROJECT: &str = "bench";

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
        /// Where the commands wrote their JSON (`e2e.json`, `null.json`, …);
        /// several, one a run: each table gives every run's figures.
        #[arg(long, required = true)]
        results: Vec<PathBuf>,
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
        Cli::E2e { rows, python, out } => e2e::run(rows, python.as_deref(), &out).await,
        Cli::Contender {
            name,
            host,
            rows,
            emulator_pid,
        } => {
            println!(
                "{}",
                e2e::contender(&name, &host, rows, emulator_pid).await?
            );
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
        Cli::Instructions { rows, out } => e2e::instructions(rows, &out).await,
        Cli::Expiry(args) => expiry::main(&args).await,
        Cli::Concurrency(args) => concurrency::main(&args).await,
        Cli::Telemetry { rows, rounds } => telemetry_cost::run(rows, rounds).await,
        Cli::NullServer { .. } | Cli::Null { .. } | Cli::Fair { .. } | Cli::Report { .. } => {
            unreachable!("run without a runtime in `main`")
        }
    }
}
