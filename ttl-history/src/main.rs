//! A long run of the history checker (see the conditional-writes guide):
//!
//! ```sh
//! cargo run --release -p bigtable-ttl-history -- --runs 10 --seconds 120
//! ```
//!
//! Each run is a history of its own (a seed of its own); the figures of
//! every run, and of them all, are printed; a failing history's timeline
//! is written under `--out` (default `target/history`). Exits non-zero
//! when any history fails.

use std::path::PathBuf;
use std::time::Duration;

use bigtable_ttl_history::workload::{self, Config};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let number = |name: &str, default: u64| {
        arg(&args, name).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number, not {v:?}"))
        })
    };
    let runs = number("--runs", 1);
    let seconds = number("--seconds", 120);
    let clients = usize::try_from(number("--clients", 8)).unwrap_or(8);
    let seed = number("--seed", 41);
    let out = PathBuf::from(arg(&args, "--out").unwrap_or_else(|| "target/history".into()));
    let (mut calls, mut cuts, mut restarts, mut anomalies) = (0, 0, 0, 0);
    for run in 0..runs {
        let config = Config {
            clients,
            duration: Duration::from_secs(seconds),
            seed: seed + run,
            restart_at: Some(Duration::from_secs(seconds / 2)),
            ..Config::default()
        };
        let recorded = workload::run(&config)
            .await
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        let (verdict, timeline) =
            bigtable_ttl_history::judge(&recorded, &out, &format!("run{run}-seed{}", config.seed))
                .unwrap_or_else(|e| panic!("writing the timeline: {e}"));
        println!(
            "history {run} (seed {}): {}",
            config.seed,
            bigtable_ttl_history::figures(&recorded, &verdict)
        );
        for v in &verdict.violations {
            println!("  {}", v.what);
        }
        if let Some(path) = timeline {
            println!("  timeline: {}", path.display());
        }
        calls += recorded.history.calls.len();
        cuts += recorded.cuts;
        restarts += recorded.restarts;
        anomalies += verdict.violations.len();
    }
    println!(
        "{runs} histories, {calls} calls, {cuts} connections cut, {restarts} emulator restarts, anomalies: {anomalies}"
    );
    if anomalies > 0 {
        std::process::exit(1);
    }
}
