//! `migrate` throughput by number of shards: 1, 2 and 4 processes of the
//! `bigtable-ttl` binary at once, each migrating its part of one table, on
//! one dedicated emulator; a markdown table for BENCHMARKS.md.
//!
//! ```sh
//! cargo build --release -p bigtable-ttl-cli --bin bigtable-ttl --example shard_throughput
//! target/release/examples/shard_throughput --rows 100000 --rounds 5
//! ```
//!
//! Each round writes the rows afresh (a new table), then runs the shard
//! counts in an order rotated from round to round; the figures are medians.
//! Wall time is from the first shard's start to the last one's exit; client
//! CPU is the shard processes' own (user and system, from
//! `/proc/self/stat`'s waited-for children), the emulator's CPU is read
//! from `/proc/PID/stat`. Every run is checked: the shards' merged reports
//! must say every row was copied.

// Counts and ticks become seconds and rates for a table of figures.
#![allow(clippy::cast_precision_loss)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bigtable_ttl::admin::{ensure_schema, EnsureOptions};
use bigtable_ttl::data::RawTable;
use bigtable_ttl::data::{Entry, Mutation};
use bigtable_ttl::{Connection, Policy, Schema};
use chrono::TimeDelta;

struct Options {
    rows: usize,
    rounds: usize,
    binary: PathBuf,
}

fn options() -> Options {
    let mut o = Options {
        rows: 100_000,
        rounds: 5,
        binary: std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.parent()?.parent()?.join("bigtable-ttl")))
            .unwrap_or_else(|| PathBuf::from("target/release/bigtable-ttl")),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).map(String::as_str).unwrap_or_default();
        match pair[0].as_str() {
            "--rows" => o.rows = value.parse().expect("--rows N"),
            "--rounds" => o.rounds = value.parse().expect("--rounds N"),
            "--binary" => o.binary = PathBuf::from(value),
            other => panic!("unknown argument {other}; takes --rows N --rounds N --binary PATH"),
        }
    }
    o
}

/// CPU time (user + system) of `/proc/{pid}/stat`: the process's own, or
/// with `children`, that of its waited-for children.
fn cpu(pid: &str, children: bool) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc");
    let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..]
        .split(' ')
        .collect();
    // Fields 14-17 of proc(5) (utime, stime, cutime, cstime); index 0 is field 3.
    let at = if children { 13 } else { 11 };
    let ticks: u64 = fields[at].parse::<u64>().unwrap() + fields[at + 1].parse::<u64>().unwrap();
    Duration::from_secs_f64(ticks as f64 / clock_ticks())
}

fn clock_ticks() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output();
    out.ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The pid of the emulator listening on `port` (a child of the watchdog).
fn emulator_pid(port: u16) -> String {
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        // The emulator itself, not the `sh` watchdog whose command line
        // names it too.
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "cbtemulator" {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(&port.to_string()) {
                return pid;
            }
        }
    }
    panic!("no cbtemulator process on port {port}");
}

async fn load(conn: &Connection, rows: usize) {
    let schema: &'static Schema = Box::leak(Box::new(Schema {
        table: "events",
        policy: Policy::default_ttl(TimeDelta::days(3650)),
        families: &["raw"],
        owns_family: false,
        columns: &[],
        maps: &[],
        written_at: None,
        marker: b"\0\0Row",
        key_fields: &["id"],
        key_separator: "",
    }));
    ensure_schema(conn, "events", schema, EnsureOptions::default())
        .await
        .unwrap();
    let now = chrono::Utc::now().timestamp_millis() * 1_000;
    let events = RawTable::new(conn, "events");
    let keys: Vec<usize> = (0..rows).collect();
    for chunk in keys.chunks(5_000) {
        let entries = chunk
            .iter()
            .map(|i| {
                // Written over the last day: every row alive under 2 days.
                let ts = now - i64::try_from(i % 1_440).unwrap() * 60_000_000;
                let cell = |q: &str, v: String| {
                    Mutation::set_cell("raw", q.as_bytes().to_vec(), ts, v.into_bytes())
                };
                Entry::new(
                    format!("ev-{i:08}").into_bytes(),
                    vec![
                        cell("url", format!("/page/{}", i % 977)),
                        cell("user", format!("u{}", i % 101)),
                    ],
                )
            })
            .collect();
        let answers = events.mutate_rows(entries).await.unwrap();
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    }
}

struct Run {
    wall: Duration,
    client_cpu: Duration,
    emulator_cpu: Duration,
}

fn migrate(o: &Options, host: &str, instance: &str, shards: usize, emulator: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.json");
    let children_before = cpu("self", true);
    let emulator_before = cpu(emulator, false);
    let started = Instant::now();
    let children: Vec<_> = (0..shards)
        .map(|i| {
            let mut c = Command::new(&o.binary);
            c.args([
                "--project",
                "bench",
                "--instance",
                instance,
                "--emulator-host",
                host,
            ]);
            c.args([
                "migrate",
                "events",
                "--from",
                "raw",
                "--to",
                "ttl",
                "--policy",
                "default=2d",
            ]);
            if shards > 1 {
                c.arg("--shard").arg(format!("{i}/{shards}"));
                c.arg("--cut").arg(&cut);
            }
            c.arg("--report")
                .arg(dir.path().join(format!("report-{i}.json")));
            c.stdout(Stdio::null()).stderr(Stdio::inherit());
            c.spawn()
                .expect("the bigtable-ttl binary (cargo build --release -p bigtable-ttl-cli)")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let wall = started.elapsed();
    let run = Run {
        wall,
        client_cpu: cpu("self", true).saturating_sub(children_before),
        emulator_cpu: cpu(emulator, false).saturating_sub(emulator_before),
    };
    let copied: u64 = (0..shards)
        .map(|i| {
            let text =
                std::fs::read_to_string(dir.path().join(format!("report-{i}.json"))).unwrap();
            let report: serde_json::Value = serde_json::from_str(&text).unwrap();
            report["rows_copied"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(copied, o.rows as u64, "every row copied once");
    run
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let o = options();
    let emulator = bigtable_ttl_emulator::Emulator::start().expect("the Bigtable emulator");
    let host = emulator.host().to_owned();
    let emulator_pid = emulator_pid(emulator.port());
    let counts = [1usize, 2, 4];
    let mut runs: Vec<Vec<Run>> = counts.iter().map(|_| Vec::new()).collect();
    for round in 0..o.rounds {
        for k in 0..counts.len() {
            let which = (k + round) % counts.len();
            let instance = format!("bench-{round}-{}", counts[which]);
            let conn = Connection::emulator(&host, "bench", &instance).unwrap();
            load(&conn, o.rows).await;
            let run = migrate(&o, &host, &instance, counts[which], &emulator_pid);
            eprintln!(
                "round {round}: {} shards, {:.2} s, client CPU {:.2} s, emulator CPU {:.2} s",
                counts[which],
                run.wall.as_secs_f64(),
                run.client_cpu.as_secs_f64(),
                run.emulator_cpu.as_secs_f64()
            );
            runs[which].push(run);
            // Free the emulator's memory for the next run.
            let _ = Command::new("cbt")
                .env("BIGTABLE_EMULATOR_HOST", &host)
                .args([
                    "-project",
                    "bench",
                    "-instance",
                    &instance,
                    "deletetable",
                    "events",
                ])
                .output();
        }
    }
    println!("| shards | wall | rows/s | ×1 shard | client CPU per row | client CPU | emulator CPU | cores busy: emulator + clients |");
    println!("|---|---|---|---|---|---|---|---|");
    let base = median(runs[0].iter().map(|r| r.wall.as_secs_f64()).collect());
    for (count, runs) in counts.iter().zip(&runs) {
        let wall = median(runs.iter().map(|r| r.wall.as_secs_f64()).collect());
        let client = median(runs.iter().map(|r| r.client_cpu.as_secs_f64()).collect());
        let emu = median(runs.iter().map(|r| r.emulator_cpu.as_secs_f64()).collect());
        println!(
            "| {count} | {wall:.2} s | {:.0} | {:.2} | {:.1} µs | {client:.2} s | {emu:.2} s | {:.2} + {:.2} |",
            o.rows as f64 / wall,
            base / wall,
            client / o.rows as f64 * 1e6,
            emu / wall,
            client / wall
        );
    }
}
