//! `ttl-bench null`: the clients' own cost, measured against a server that
//! is never the bottleneck (issue 23).
//!
//! One null server ([`server`]) for the whole run; every contender's every
//! phase runs as a process of its own against it, in rounds, the order of
//! the contenders rotated each round:
//!
//! * `lib` and `raw`: the library and hand-written `bigtable_rs`
//!   ([`client`]);
//! * `go`: Google's Go client as `cbt import` (the same rows as CSV) and
//!   `cbt read`, when `cbt` is on the PATH;
//! * `node`: Google's Node.js client (`bench/node_client.js`), when
//!   `--node-modules DIR` holds `@google-cloud/bigtable`.
//!
//! Each phase (write, read) of N rows is measured from outside (the wall
//! time of the process, and its CPU time and peak RSS from `wait4`), and the
//! same phase of one row in the same round gives the process's fixed cost
//! (start-up, connecting) to take off. Rust and Node contenders also report
//! the phase measured from inside; the Rust ones their allocations. The
//! null server's CPU time over each phase shows it was not the limit. A last
//! pass runs each phase at `--scale` times N rows, for memory flat in N.
//! [`report`] renders `BENCHMARKS.md`'s tables from the JSON.

pub(crate) mod client;
pub(crate) mod fair;
pub(crate) mod profile;
pub(crate) mod report;
pub(crate) mod server;
pub(crate) mod tls;
pub(crate) mod wire;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Instant;

use chrono::Utc;
use prost::Message as _;
use serde_json::{json, Value};
use ttl_bench::csv_rows::write_csv;
use ttl_bench::{event, hand_entry, load_average, process_cpu_seconds};
use wait4::Wait4 as _;

use crate::{Res, PROJECT};
use client::INSTANCE;
use server::READ_TABLE_PREFIX;

/// What `ttl-bench null` was asked to run.
pub(crate) struct Plan {
    pub(crate) rows: usize,
    pub(crate) rounds: usize,
    /// The memory pass runs `scale × rows` rows.
    pub(crate) scale: usize,
    /// Where `@google-cloud/bigtable` is installed (a `node_modules`).
    pub(crate) node_modules: Option<PathBuf>,
    /// Rows of the library's phases profiled under callgrind (0: none).
    pub(crate) profile_rows: usize,
    pub(crate) out: PathBuf,
}

/// A contender.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Who {
    Lib,
    Raw,
    Go,
    Node,
}

impl Who {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Who::Lib => "lib",
            Who::Raw => "raw",
            Who::Go => "go",
            Who::Node => "node",
        }
    }
}

/// The programs the contenders run.
struct Tools {
    me: PathBuf,
    cbt: Option<PathBuf>,
    node_modules: Option<PathBuf>,
    /// Where the CSV files of `cbt import` and each run's output go.
    work: PathBuf,
}

/// One process of one phase, measured from outside.
pub(crate) struct Run {
    pub(crate) wall_s: f64,
    pub(crate) cpu_s: f64,
    peak_rss_kib: u64,
    pub(crate) server_cpu_s: f64,
    /// What the contender printed about itself (Rust and Node), else null.
    pub(crate) inner: Value,
}

/// The null server, a child process.
pub(crate) struct NullServer {
    pub(crate) child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    pub(crate) host: String,
}

impl NullServer {
    pub(crate) fn start(me: &Path, row_counts: &[usize]) -> Res<Self> {
        Self::start_with(me, row_counts, &[])
    }

    /// Started with more arguments (`--tls CA_FILE --token SECRET`).
    pub(crate) fn start_with(
        me: &Path,
        row_counts: &[usize],
        more: &[&std::ffi::OsStr],
    ) -> Res<Self> {
        let counts: Vec<String> = row_counts.iter().map(ToString::to_string).collect();
        let mut child = Command::new(me)
            .args(["null-server", "--rows", &counts.join(",")])
            .args(more)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().ok_or("null server stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let host = line
            .trim()
            .strip_prefix("listening ")
            .ok_or_else(|| format!("null server said {line:?}"))?
            .to_owned();
        Ok(Self {
            child,
            stdin,
            stdout,
            host,
        })
    }

    /// Stop it; what it counted (calls per method, entries per table).
    pub(crate) fn stop(mut self) -> Res<Value> {
        drop(self.stdin.take());
        let mut line = String::new();
        self.stdout.read_line(&mut line)?;
        self.child.wait()?;
        Ok(serde_json::from_str(line.trim())?)
    }
}

/// The first program of `names` that runs with `args`, as found on the
/// PATH.
fn found(name: &str, args: &[&str]) -> Option<PathBuf> {
    let ok = Command::new(name)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| PathBuf::from(name))
}

fn csv_path(tools: &Tools, n: usize) -> PathBuf {
    tools.work.join(format!("events_{n}.csv"))
}

/// The command for `who`'s `phase` of `rows` rows on `table`.
fn command(tools: &Tools, who: Who, phase: &str, table: &str, rows: usize, host: &str) -> Command {
    let rows_s = rows.to_string();
    let mut cmd = match who {
        Who::Lib | Who::Raw => {
            let mut cmd = Command::new(&tools.me);
            cmd.args(["null-client", who.name(), phase, "--host", host])
                .args(["--table", table, "--rows", &rows_s])
                .arg("--csv")
                .arg(csv_path(tools, rows));
            cmd
        }
        Who::Go => {
            let mut cmd = Command::new(tools.cbt.as_deref().unwrap_or(Path::new("cbt")));
            // A `-creds` path keeps `cbt` from asking `gcloud` for
            // credentials at start-up (a Python program, seconds of CPU);
            // under BIGTABLE_EMULATOR_HOST it is never opened.
            cmd.args(["-project", PROJECT, "-instance", INSTANCE])
                .arg("-creds")
                .arg(tools.work.join("no-credentials-under-an-emulator.json"));
            if phase == "write" {
                let csv = csv_path(tools, rows);
                cmd.args(["import", table]).arg(csv).args([
                    "batch-size=10000",
                    "workers=4",
                    "timestamp=value-encoded",
                ]);
            } else {
                cmd.args(["read", table, "cells-per-column=1"]);
            }
            cmd
        }
        Who::Node => {
            let mut cmd = Command::new("node");
            cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("node_client.js"))
                .args(["--phase", phase, "--table", table, "--rows", &rows_s])
                .args(["--project", PROJECT, "--instance", INSTANCE])
                .arg("--csv")
                .arg(csv_path(tools, rows));
            if let Some(modules) = &tools.node_modules {
                cmd.env("NODE_PATH", modules);
            }
            cmd
        }
    };
    cmd.env("BIGTABLE_EMULATOR_HOST", host);
    cmd
}

/// Run `cmd` to its end, its output into files under `work` (with
/// `printed_rows`, its standard output, the rows `cbt read` prints, to
/// `/dev/null`); measure it.
pub(crate) fn measure(
    mut cmd: Command,
    label: &str,
    work: &Path,
    server_pid: u32,
    printed_rows: bool,
) -> Res<Run> {
    let out_path = work.join(format!("{label}.out"));
    let err_path = work.join(format!("{label}.err"));
    if printed_rows {
        cmd.stdout(Stdio::null());
    } else {
        cmd.stdout(std::fs::File::create(&out_path)?);
    }
    cmd.stderr(std::fs::File::create(&err_path)?)
        .stdin(Stdio::null());
    let server0 = process_cpu_seconds(server_pid);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let usage = child.wait4()?;
    let wall_s = start.elapsed().as_secs_f64();
    let server_cpu_s = process_cpu_seconds(server_pid) - server0;
    if !usage.status.success() {
        let err = std::fs::read_to_string(&err_path).unwrap_or_default();
        return Err(format!("{label} failed ({}): {err}", usage.status).into());
    }
    let stdout = if printed_rows {
        String::new()
    } else {
        std::fs::read_to_string(&out_path).unwrap_or_default()
    };
    let inner = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    Ok(Run {
        wall_s,
        cpu_s: (usage.rusage.utime + usage.rusage.stime).as_secs_f64(),
        peak_rss_kib: usage.rusage.maxrss / 1024,
        server_cpu_s,
        inner,
    })
}

fn to_json(run: &Run) -> Value {
    // The peak the process measured itself where it can (Rust, Node);
    // `wait4`'s for Go's `cbt`, which starts from the driver's own.
    let peak = run.inner["peak_rss_kib"]
        .as_u64()
        .unwrap_or(run.peak_rss_kib);
    json!({
        "wall_s": run.wall_s,
        "cpu_s": run.cpu_s,
        "peak_rss_kib": peak,
        "wait4_peak_rss_kib": run.peak_rss_kib,
        "server_cpu_s": run.server_cpu_s,
        "inner": run.inner,
    })
}

/// `cbt read` prints a line of dashes before each row: count them, once,
/// untimed, to check it read every row. Counted as the lines stream by:
/// the driver's own memory stays small, since a child's `wait4` peak RSS
/// starts from the driver's (Linux carries it across `exec`).
fn check_cbt_read(tools: &Tools, host: &str, rows: usize) -> Res<()> {
    let table = format!("{READ_TABLE_PREFIX}{rows}");
    let mut child = command(tools, Who::Go, "read", &table, rows, host)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let out = BufReader::new(child.stdout.take().ok_or("cbt read: no stdout")?);
    let mut seen = 0;
    for line in out.split(b'\n') {
        seen += usize::from(line?.starts_with(b"-----"));
    }
    let status = child.wait()?;
    if !status.success() || seen != rows {
        return Err(format!("cbt read ({status}) printed {seen} rows of {rows}").into());
    }
    Ok(())
}

/// Every phase measured so far: the runs of each contender, by phase key
/// (`write`, `read`, `write_1`, `write_big`, …), in round order.
type Runs = BTreeMap<(Who, String), Vec<Value>>;

/// Run the plan; write the JSON to `plan.out`.
pub(crate) fn run(plan: &Plan) -> Res<()> {
    let (who, tools) = contenders(plan)?;
    let load_start = load_average();
    let (n, big) = (plan.rows, plan.rows * plan.scale);
    // Every contender's write reads its rows from these files (see
    // `ttl_bench::csv_rows`).
    let now = Utc::now();
    for rows in [1, n, big, plan.profile_rows] {
        if rows > 0 {
            write_csv(&csv_path(&tools, rows), rows, now)?;
        }
    }
    eprintln!("null: encoding the read answers for 1, {n} and {big} rows…");
    let server = NullServer::start(&tools.me, &[1, n, big])?;
    let bench = Bench {
        tools: &tools,
        host: server.host.clone(),
        server_pid: server.child.id(),
    };
    eprintln!("null: server on {}; contenders {who:?}", bench.host);
    if who.contains(&Who::Go) {
        check_cbt_read(&tools, &bench.host, n)?;
    }
    let runs = bench.rounds(&who, plan.rounds.max(1), n, big)?;
    let profiles = bench.profile_library(plan.profile_rows)?;
    let counts = server.stop()?;
    check_writes_whole(&runs, &counts, n, big)?;
    let mut value = results(plan, &who, runs, profiles, &counts)?;
    value["load_average"] = json!([load_start, load_average()]);
    std::fs::write(&plan.out, serde_json::to_string_pretty(&value)?)?;
    Ok(())
}

/// The contenders this machine can run (the library and `raw` always; Go
/// and Node when their tools are there, a message for each skipped) and
/// the programs they run.
fn contenders(plan: &Plan) -> Res<(Vec<Who>, Tools)> {
    let me = std::env::current_exe()?;
    let work = plan
        .out
        .parent()
        .unwrap_or(Path::new("."))
        .join("null-runs");
    std::fs::create_dir_all(&work)?;
    let mut who = vec![Who::Lib, Who::Raw];
    let cbt = found("cbt", &["version"]);
    if cbt.is_some() {
        who.push(Who::Go);
    } else {
        eprintln!("null: skipping Google's Go client: `cbt` is not on the PATH (Debian package google-cloud-cli-cbt)");
    }
    let node_modules = plan.node_modules.clone().filter(|dir| {
        let installed = dir.join("@google-cloud/bigtable").is_dir();
        let node = found("node", &["--version"]).is_some();
        if !node {
            eprintln!("null: skipping Google's Node.js client: `node` is not on the PATH");
        } else if !installed {
            eprintln!(
                "null: skipping Google's Node.js client: no @google-cloud/bigtable under {}",
                dir.display()
            );
        }
        node && installed
    });
    if node_modules.is_some() {
        who.push(Who::Node);
    } else if plan.node_modules.is_none() {
        eprintln!("null: skipping Google's Node.js client: no --node-modules DIR given (bench/run.sh installs it)");
    }
    let tools = Tools {
        me,
        cbt,
        node_modules,
        work,
    };
    Ok((who, tools))
}

/// The contenders' phases against one running null server.
struct Bench<'a> {
    tools: &'a Tools,
    host: String,
    server_pid: u32,
}

impl Bench<'_> {
    /// One process: `w`'s `phase` of `rows` rows, measured, kept in `runs`
    /// under `key`.
    fn one(
        &self,
        runs: &mut Runs,
        w: Who,
        phase: &str,
        rows: usize,
        key: &str,
        round: usize,
    ) -> Res<()> {
        let table = if phase == "write" {
            format!("w_{}_{key}_{round}", w.name())
        } else {
            format!("{READ_TABLE_PREFIX}{rows}")
        };
        let label = format!("{}-{key}-{round}", w.name());
        let printed_rows = w == Who::Go && phase == "read";
        let run = measure(
            command(self.tools, w, phase, &table, rows, &self.host),
            &label,
            &self.tools.work,
            self.server_pid,
            printed_rows,
        )?;
        eprintln!(
            "  {label}: {rows} rows, {:.3} s wall, {:.3} s CPU, {} KiB peak, server {:.3} s CPU",
            run.wall_s, run.cpu_s, run.peak_rss_kib, run.server_cpu_s
        );
        runs.entry((w, key.to_owned()))
            .or_default()
            .push(to_json(&run));
        Ok(())
    }

    /// A warm-up, then `rounds` rounds of every contender's phases of `n`
    /// rows and of one row (its fixed cost), the order of the contenders
    /// rotated each round; last, the memory pass of `big` rows.
    fn rounds(&self, who: &[Who], rounds: usize, n: usize, big: usize) -> Res<Runs> {
        let mut runs = Runs::new();
        // Untimed: every contender once, one row each way (caches warm, and a
        // contender that cannot run fails here, before the rounds).
        for &w in who {
            self.one(&mut runs, w, "write", 1, "warmup_write", 0)?;
            self.one(&mut runs, w, "read", 1, "warmup_read", 0)?;
        }
        for round in 0..rounds {
            eprintln!("null: round {round}");
            for i in 0..who.len() {
                let w = who[(i + round) % who.len()];
                self.one(&mut runs, w, "write", n, "write", round)?;
                self.one(&mut runs, w, "read", n, "read", round)?;
                self.one(&mut runs, w, "write", 1, "write_1", round)?;
                self.one(&mut runs, w, "read", 1, "read_1", round)?;
            }
        }
        eprintln!("null: memory pass, {big} rows");
        for &w in who {
            self.one(&mut runs, w, "write", big, "write_big", 0)?;
            self.one(&mut runs, w, "read", big, "read_big", 0)?;
        }
        Ok(runs)
    }

    /// The library's write of `rows` rows under callgrind, when `rows` is
    /// not 0 and valgrind is here.
    fn profile_library(&self, rows: usize) -> Res<serde_json::Map<String, Value>> {
        let mut profiles = serde_json::Map::new();
        if rows == 0 {
            return Ok(profiles);
        }
        if !profile::available() {
            eprintln!("null: no profile: valgrind or callgrind_annotate is not on the PATH");
            return Ok(profiles);
        }
        eprintln!("null: callgrind, {rows} rows");
        let cmd = command(
            self.tools,
            Who::Lib,
            "write",
            "w_lib_profile",
            rows,
            &self.host,
        );
        let parts = &profile::WRITE_PARTS;
        let profile = profile::profile(&cmd, "lib-write", &self.tools.work, rows, parts)?;
        profiles.insert("lib-write".to_owned(), profile);
        Ok(profiles)
    }
}

/// Every measured write reached the null server whole: its entry count for
/// each write's table (`counts`, what the server said when stopped) is the
/// rows written. (The profiled write is checked by the client itself.)
fn check_writes_whole(runs: &Runs, counts: &Value, n: usize, big: usize) -> Res<()> {
    let mut missing = String::new();
    for ((w, key), values) in runs {
        if !key.starts_with("write") {
            continue;
        }
        let rows = match key.as_str() {
            "write" => n,
            "write_big" => big,
            _ => 1,
        };
        for round in 0..values.len() {
            let table = format!("w_{}_{key}_{round}", w.name());
            let got = counts["entries"][&table].as_u64().unwrap_or(0);
            if got != rows as u64 {
                let _ = write!(missing, " {table}: {got} of {rows};");
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("writes the null server did not get whole:{missing}").into())
    }
}

/// The run's JSON, as [`report::tables`] reads it.
fn results(
    plan: &Plan,
    who: &[Who],
    runs: Runs,
    profiles: serde_json::Map<String, Value>,
    counts: &Value,
) -> Res<Value> {
    let mut contenders = serde_json::Map::new();
    for ((w, key), values) in runs {
        contenders
            .entry(w.name())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|o| o.insert(key, Value::Array(values)));
    }
    // What a row takes on the wire (the library's bytes, asserted equal
    // to the hand-written ones): the measure of "memory flat in N".
    let now = Utc::now();
    let sample: u32 = 1_000;
    let mut row_bytes = 0;
    for i in 0..sample as usize {
        row_bytes += hand_entry(&event(i, now), now)?.encoded_len();
    }
    Ok(json!({
        "rows": plan.rows,
        "row_bytes": row_bytes as f64 / f64::from(sample),
        "big_rows": plan.rows * plan.scale,
        "rounds": plan.rounds.max(1),
        "cores": std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        "date": Utc::now().format("%Y-%m-%d").to_string(),
        "contenders": who.iter().map(|w| w.name()).collect::<Vec<_>>(),
        "server_calls": counts["calls"],
        "runs": Value::Object(contenders),
        "profile": Value::Object(profiles),
        // The floor of the `wait4` peaks (Go's): the driver's own peak.
        "driver_peak_rss_kib": ttl_bench::peak_rss_kib(),
    }))
}
