//! `ttl-bench fair` (issue 32): the null-server comparisons made like for
//! like, in one run, every figure a ratio taken within a round.
//!
//! * **CSV on its own.** Every write reads its rows from the same CSV file
//!   (`cbt import` can take rows no other way), but each contender parses it
//!   its own way. Each contender's parsing alone runs as a phase of its own
//!   (`lib csv`, `go_csv` on Go's `encoding/csv`, `node_client.js --phase
//!   csv`), so the write's CPU can be shown with and without it.
//! * **Each peer at its own best batching.** `cbt import` runs at several
//!   `batch-size`s (4 workers), Node at several rows per `mutate` call (4 in
//!   flight); the best (least CPU per row, the median of the rounds) is the
//!   one compared, the library's default (10,000 × 4) shown beside.
//! * **A reader that does not print.** `cbt count` (Google's Go client
//!   decoding every row and counting it) is the Go read contender; `cbt
//!   read`, which formats every row for a terminal, is shown beside.
//! * **TLS and a token.** A second null server serves TLS only (a CA made
//!   at startup, trusted by the clients) and refuses any call without its
//!   bearer token; the library and `cbt` run against both servers in the
//!   same rounds. `cbt` off the emulator setting is Google's Cloud client
//!   as it is, metrics exporter and metadata probe included: it only runs
//!   where the process is cut off from every network but loopback (see
//!   [`isolated`]), else that contender is skipped with a message.
//!
//! Every phase is a process of its own, measured from outside (`wait4`),
//! the same phase of one row in the same round taken off (start-up,
//! connecting, the TLS handshake): see [`super`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::Utc;
use serde_json::{json, Value};
use ttl_bench::csv_rows::write_csv;
use ttl_bench::load_average;

use super::client::INSTANCE;
use super::report::ratio_text;
use super::server::READ_TABLE_PREFIX;
use super::{measure, NullServer};
use crate::report::{run_on, Generated};
use crate::{Res, PROJECT};
use ttl_bench::stats::{median, paired};

/// The token the TLS server asks for.
const TOKEN: &str = "ttl-bench-null-token";
/// `cbt import`'s batch sizes tried (4 workers each).
const GO_BATCHES: [usize; 3] = [500, 2_000, 10_000];
/// Node's rows per `mutate` call tried (4 in flight each).
const NODE_BATCHES: [usize; 3] = [250, 1_000, 10_000];
/// The library's bulk-writer default, every contender's before issue 32.
const DEFAULT_BATCH: usize = 10_000;

/// What `ttl-bench fair` was asked to run.
pub(crate) struct Plan {
    pub(crate) rows: usize,
    pub(crate) rounds: usize,
    pub(crate) node_modules: Option<PathBuf>,
    /// The `go_csv` program (`bench/go_csv`), if built.
    pub(crate) go_csv: Option<PathBuf>,
    pub(crate) out: PathBuf,
}

/// One contender's one phase in one setting.
#[derive(Clone)]
struct Variant {
    /// Its key in the JSON (`lib_write`, `go_import_500`, …).
    key: String,
    who: &'static str,
    /// `write`, `csv`, `read`, `count` (Go's), `print` (`cbt read`).
    phase: &'static str,
    tls: bool,
    batch: Option<usize>,
}

impl Variant {
    fn new(who: &'static str, phase: &'static str, tls: bool, batch: Option<usize>) -> Self {
        let mut key = format!("{who}_{phase}");
        if let Some(b) = batch {
            let _ = write!(key, "_{b}");
        }
        if tls {
            key.push_str("_tls");
        }
        Self {
            key,
            who,
            phase,
            tls,
            batch,
        }
    }
}

/// The servers and programs of the run.
struct Setup {
    me: PathBuf,
    work: PathBuf,
    plain: NullServer,
    tls: NullServer,
    ca: PathBuf,
    node_modules: Option<PathBuf>,
    go_csv: Option<PathBuf>,
    /// `cbt`, as found on the PATH.
    cbt: PathBuf,
}

impl Setup {
    fn csv(&self, rows: usize) -> PathBuf {
        self.work.join(format!("events_{rows}.csv"))
    }

    /// The command of `v` for `rows` rows on `table`.
    fn command(&self, v: &Variant, rows: usize, table: &str) -> Command {
        let server = if v.tls { &self.tls } else { &self.plain };
        let rows_s = rows.to_string();
        match v.who {
            "lib" => {
                let mut cmd = Command::new(&self.me);
                cmd.args(["null-client", "lib", v.phase, "--host", &server.host])
                    .args(["--table", table, "--rows", &rows_s])
                    .arg("--csv")
                    .arg(self.csv(rows));
                if v.tls {
                    cmd.arg("--tls").arg(&self.ca).args(["--token", TOKEN]);
                }
                cmd
            }
            "go" if v.phase == "csv" => {
                let mut cmd = Command::new(self.go_csv.as_deref().unwrap_or(Path::new("go_csv")));
                cmd.arg(self.csv(rows));
                cmd
            }
            "go" => {
                let mut cmd = Command::new(&self.cbt);
                cmd.args(["-project", PROJECT, "-instance", INSTANCE]);
                if v.tls {
                    // Off the emulator setting `cbt` asks `gcloud` (a Python
                    // program, half a second of CPU) for its configuration
                    // when it finds it; an application on Google's Go client
                    // does not.
                    cmd.env("PATH", self.work.join("no-gcloud-here"));
                    let port = server.host.rsplit(':').next().unwrap_or_default();
                    cmd.args(["-data-endpoint", &format!("localhost:{port}")])
                        .arg("-cert-file")
                        .arg(&self.ca)
                        .args(["-access-token", TOKEN])
                        .env_remove("BIGTABLE_EMULATOR_HOST")
                        // The metadata server's probe, should the client
                        // make one, stays on loopback (a closed port).
                        .env("GCE_METADATA_HOST", "127.0.0.1:1")
                        .env("GCE_METADATA_IP", "127.0.0.1:1");
                } else {
                    // Under BIGTABLE_EMULATOR_HOST the file is never
                    // opened; naming one keeps `cbt` from asking `gcloud`.
                    cmd.arg("-creds")
                        .arg(self.work.join("no-credentials-under-an-emulator.json"))
                        .env("BIGTABLE_EMULATOR_HOST", &server.host);
                }
                match v.phase {
                    "write" => {
                        cmd.args(["import", table])
                            .arg(self.csv(rows))
                            .arg(format!("batch-size={}", v.batch.unwrap_or(DEFAULT_BATCH)))
                            .args(["workers=4", "timestamp=value-encoded"]);
                    }
                    "count" => {
                        cmd.args(["count", table]);
                    }
                    _ => {
                        cmd.args(["read", table, "cells-per-column=1"]);
                    }
                }
                cmd
            }
            _ => {
                let mut cmd = Command::new("node");
                cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("node_client.js"))
                    .args(["--phase", v.phase, "--table", table, "--rows", &rows_s])
                    .args(["--project", PROJECT, "--instance", INSTANCE])
                    .args(["--batch", &v.batch.unwrap_or(DEFAULT_BATCH).to_string()])
                    .arg("--csv")
                    .arg(self.csv(rows))
                    .env("BIGTABLE_EMULATOR_HOST", &server.host);
                if let Some(modules) = &self.node_modules {
                    cmd.env("NODE_PATH", modules);
                }
                cmd
            }
        }
    }

    /// One process of `v` on `rows` rows, measured; checked where the
    /// contender says what it did.
    fn one(&self, v: &Variant, rows: usize, label: &str) -> Res<Value> {
        let table = if matches!(v.phase, "write" | "put") {
            format!("w_{label}")
        } else {
            format!("{READ_TABLE_PREFIX}{rows}")
        };
        let server = if v.tls { &self.tls } else { &self.plain };
        let printed = v.phase == "print";
        let run = measure(
            self.command(v, rows, &table),
            label,
            &self.work,
            server.child.id(),
            printed,
        )?;
        if v.phase == "count" {
            check_count(&self.work.join(format!("{label}.out")), rows)?;
        }
        if v.who == "go" && v.phase == "csv" && run.inner["rows"].as_u64() != Some(rows as u64) {
            return Err(format!("go_csv read {} rows of {rows}", run.inner["rows"]).into());
        }
        eprintln!(
            "  {label}: {rows} rows, {:.3} s wall, {:.3} s CPU, server {:.3} s CPU",
            run.wall_s, run.cpu_s, run.server_cpu_s
        );
        Ok(json!({"wall_s": run.wall_s, "cpu_s": run.cpu_s, "server_cpu_s": run.server_cpu_s}))
    }
}

/// `cbt count` printed the rows it counted.
fn check_count(out: &Path, rows: usize) -> Res<()> {
    let text = std::fs::read_to_string(out)?;
    let counted = text
        .split_whitespace()
        .filter_map(|w| w.parse::<usize>().ok())
        .next_back();
    if counted == Some(rows) {
        Ok(())
    } else {
        Err(format!("cbt count printed {text:?}, expected {rows}").into())
    }
}

/// Whether this process is cut off from every network but loopback: its
/// network namespace has no interface but `lo` (as under `unshare --net`).
/// Only then does `cbt` run off the emulator setting, where Google's Go
/// client would otherwise reach for Cloud Monitoring and the metadata
/// server.
fn isolated() -> bool {
    std::fs::read_to_string("/proc/net/dev").is_ok_and(|dev| {
        dev.lines()
            .skip(2)
            .filter_map(|l| l.split(':').next())
            .all(|name| name.trim() == "lo")
    })
}

/// Where `name` is on the PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn found(name: &str, arg: &str) -> bool {
    Command::new(name)
        .arg(arg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The variants this machine can run.
fn variants(plan: &Plan) -> Vec<Variant> {
    let mut v = vec![
        Variant::new("lib", "write", false, None),
        Variant::new("lib", "csv", false, None),
        Variant::new("lib", "read", false, None),
        Variant::new("lib", "write", true, None),
        Variant::new("lib", "read", true, None),
        Variant::new("lib", "put", false, None),
        Variant::new("lib", "put", true, None),
    ];
    if found("cbt", "version") {
        v.extend(
            GO_BATCHES
                .iter()
                .map(|&b| Variant::new("go", "write", false, Some(b))),
        );
        v.push(Variant::new("go", "count", false, None));
        v.push(Variant::new("go", "print", false, None));
        if isolated() {
            v.extend(
                GO_BATCHES
                    .iter()
                    .map(|&b| Variant::new("go", "write", true, Some(b))),
            );
            v.push(Variant::new("go", "count", true, None));
        } else {
            eprintln!(
                "fair: skipping `cbt` over TLS: it runs only in a network namespace of its own \
                 (`unshare --net`), where Google's Go client cannot reach past loopback"
            );
        }
        if plan.go_csv.is_some() {
            v.push(Variant::new("go", "csv", false, None));
        } else {
            eprintln!(
                "fair: no Go CSV phase: no --go-csv PROGRAM (bench/run.sh builds bench/go_csv)"
            );
        }
    } else {
        eprintln!("fair: skipping Google's Go client: `cbt` is not on the PATH");
    }
    let node = plan
        .node_modules
        .as_ref()
        .is_some_and(|m| m.join("@google-cloud/bigtable").is_dir())
        && found("node", "--version");
    if node {
        v.extend(
            NODE_BATCHES
                .iter()
                .map(|&b| Variant::new("node", "write", false, Some(b))),
        );
        v.push(Variant::new("node", "csv", false, None));
        v.push(Variant::new("node", "read", false, None));
    } else {
        eprintln!("fair: skipping Google's Node.js client: no node, or no --node-modules DIR with @google-cloud/bigtable");
    }
    v
}

/// Run the plan; write the JSON to `plan.out`.
pub(crate) fn run(plan: &Plan) -> Res<()> {
    let me = std::env::current_exe()?;
    let work = plan
        .out
        .parent()
        .unwrap_or(Path::new("."))
        .join("fair-runs");
    std::fs::create_dir_all(&work)?;
    let load_start = load_average();
    let n = plan.rows;
    let now = Utc::now();
    for rows in [1, n] {
        write_csv(&work.join(format!("events_{rows}.csv")), rows, now)?;
    }
    let ca = work.join("null-ca.pem");
    let plain = NullServer::start(&me, &[1, n])?;
    let tls = NullServer::start_with(
        &me,
        &[1, n],
        &[
            "--tls".as_ref(),
            ca.as_os_str(),
            "--token".as_ref(),
            TOKEN.as_ref(),
        ],
    )?;
    let setup = Setup {
        me,
        work,
        plain,
        tls,
        ca,
        node_modules: plan.node_modules.clone(),
        go_csv: plan.go_csv.clone(),
        cbt: on_path("cbt").unwrap_or_else(|| PathBuf::from("cbt")),
    };
    let variants = variants(plan);
    let keys: Vec<&str> = variants.iter().map(|v| v.key.as_str()).collect();
    eprintln!(
        "fair: plain server {}, TLS server {}; {keys:?}",
        setup.plain.host, setup.tls.host
    );
    let mut runs = serde_json::Map::new();
    for v in &variants {
        // Untimed: caches warm, and a contender that cannot run fails here.
        setup.one(v, 1, &format!("{}_warmup", v.key))?;
    }
    for round in 0..plan.rounds.max(1) {
        eprintln!("fair: round {round}");
        for i in 0..variants.len() {
            let v = &variants[(i + round) % variants.len()];
            let full = setup.one(v, n, &format!("{}_{round}", v.key))?;
            let one = setup.one(v, 1, &format!("{}_1_{round}", v.key))?;
            let entry = runs
                .entry(v.key.clone())
                .or_insert_with(|| json!({"full": [], "one": []}));
            for (k, run) in [("full", full), ("one", one)] {
                if let Some(list) = entry[k].as_array_mut() {
                    list.push(run);
                }
            }
        }
    }
    let Setup { plain, tls, .. } = setup;
    let counts = [plain.stop()?, tls.stop()?];
    check_writes_whole(&counts, &variants, plan.rounds.max(1), n)?;
    let value = json!({
        "rows": n,
        "rounds": plan.rounds.max(1),
        "cores": std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        "date": Utc::now().format("%Y-%m-%d").to_string(),
        "load_average": [load_start, load_average()],
        "variants": keys,
        "runs": Value::Object(runs),
        "server_calls": [counts[0]["calls"].clone(), counts[1]["calls"].clone()],
    });
    std::fs::write(&plan.out, serde_json::to_string_pretty(&value)?)?;
    Ok(())
}

/// Every measured write reached its server whole.
fn check_writes_whole(
    counts: &[Value; 2],
    variants: &[Variant],
    rounds: usize,
    n: usize,
) -> Res<()> {
    let mut missing = String::new();
    for v in variants.iter().filter(|v| v.phase == "write") {
        let entries = &counts[usize::from(v.tls)]["entries"];
        for round in 0..rounds {
            for (rows, table) in [
                (n, format!("w_{}_{round}", v.key)),
                (1, format!("w_{}_1_{round}", v.key)),
            ] {
                let got = entries[&table].as_u64().unwrap_or(0);
                if got != rows as u64 {
                    let _ = write!(missing, " {table}: {got} of {rows};");
                }
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("writes a null server did not get whole:{missing}").into())
    }
}

// ----- the report -------------------------------------------------------------

/// One variant's figures per round: CPU µs per row and rows/s, the
/// one-row runs' median taken off; and that median (the fixed cost).
struct Figures {
    cpu_us: Vec<f64>,
    rate: Vec<f64>,
    fixed_cpu_ms: f64,
    server_cores: f64,
}

fn figures(report: &Value, key: &str) -> Option<Figures> {
    let rows = report["rows"].as_f64()?;
    let runs = &report["runs"][key];
    let list = |k: &str| runs[k].as_array().cloned().unwrap_or_default();
    let (full, one) = (list("full"), list("one"));
    if full.is_empty() {
        return None;
    }
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    let fixed_cpu = median(one.iter().map(|r| f(r, "cpu_s")));
    let fixed_wall = median(one.iter().map(|r| f(r, "wall_s")));
    Some(Figures {
        cpu_us: full
            .iter()
            .map(|r| (f(r, "cpu_s") - fixed_cpu) / rows * 1e6)
            .collect(),
        rate: full
            .iter()
            .map(|r| rows / (f(r, "wall_s") - fixed_wall))
            .collect(),
        fixed_cpu_ms: fixed_cpu * 1e3,
        server_cores: median(full.iter().map(|r| f(r, "server_cpu_s") / f(r, "wall_s"))),
    })
}

/// The key of the batch with the least median CPU per row among `keys`.
fn best<'a>(report: &Value, keys: &[&'a str]) -> Option<&'a str> {
    keys.iter()
        .filter_map(|k| figures(report, k).map(|f| (*k, median(f.cpu_us))))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

/// The variant's CPU per row less another's (the CSV), per round.
fn less(a: &Figures, b: &Figures) -> Vec<f64> {
    a.cpu_us.iter().zip(&b.cpu_us).map(|(x, y)| x - y).collect()
}

fn name(key: &str) -> String {
    let batch = key
        .split('_')
        .find_map(|p| p.parse::<usize>().ok())
        .map(|b| format!(", {b} rows a call × 4"))
        .unwrap_or_default();
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
    format!("{what}{batch}{tls}")
}

/// `BENCHMARKS.md`'s tables of `ttl-bench fair`'s JSON (the run's line
/// names each peer's best batching).
#[allow(clippy::too_many_lines)]
pub(crate) fn tables(report: &Value) -> Vec<Generated> {
    let keys: Vec<&str> = report["variants"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut table = String::from(
        "| contender, phase | client CPU per row | rows per client core-second | rows/s | fixed cost (1-row process) CPU | null server, cores busy |\n\
         |---|---|---|---|---|---|\n",
    );
    for key in &keys {
        let Some(f) = figures(report, key) else {
            continue;
        };
        let cpu = median(f.cpu_us.clone());
        // A phase shorter than the spread of the one-row runs' wall time
        // (the CSV alone) has no rate to speak of.
        let rate = median(f.rate.clone());
        let rate = if rate > 0.0 {
            format!("{rate:.0}")
        } else {
            "–".to_owned()
        };
        let _ = writeln!(
            table,
            "| {} | {cpu:.2} µs | {:.0} | {rate} | {:.1} ms | {:.2} |",
            name(key),
            1e6 / cpu,
            f.fixed_cpu_ms,
            f.server_cores,
        );
    }
    let fig = |k: &str| figures(report, k);
    let mut targets = String::from(
        "| comparison | as measured before (default batching, CSV in) | like for like (quote the first figure) | target |\n|---|---|---|---|\n",
    );
    let lib_w = fig("lib_write");
    let lib_csv = fig("lib_csv");
    let go_keys: Vec<String> = GO_BATCHES.iter().map(|b| format!("go_write_{b}")).collect();
    let go_keys: Vec<&str> = go_keys.iter().map(String::as_str).collect();
    let node_keys: Vec<String> = NODE_BATCHES
        .iter()
        .map(|b| format!("node_write_{b}"))
        .collect();
    let node_keys: Vec<&str> = node_keys.iter().map(String::as_str).collect();
    let mut notes = String::new();
    for (peer, peer_keys, csv_key, default_key, target) in [
        (
            "Go's `cbt import`",
            &go_keys,
            "go_csv",
            "go_write_10000",
            "≥ 3",
        ),
        (
            "Node.js's",
            &node_keys,
            "node_csv",
            "node_write_10000",
            "≥ 10",
        ),
    ] {
        let (Some(lib), Some(best_key)) = (&lib_w, best(report, peer_keys)) else {
            continue;
        };
        let Some(best_f) = fig(best_key) else {
            continue;
        };
        let before = fig(default_key).map_or_else(
            || "–".to_owned(),
            |d| ratio_text(paired(&d.cpu_us, &lib.cpu_us, |p, l| p / l)),
        );
        let with_csv = ratio_text(paired(&best_f.cpu_us, &lib.cpu_us, |p, l| p / l));
        let fair = match (fig(csv_key), &lib_csv) {
            (Some(pc), Some(lc)) => format!(
                "{} without the CSV on either side; {with_csv} with each side's own",
                ratio_text(paired(&less(&best_f, &pc), &less(lib, lc), |p, l| p / l))
            ),
            _ => format!("{with_csv} (each side's own CSV; the peer's alone not measured)"),
        };
        let _ = writeln!(
            targets,
            "| write throughput per client core, library / {peer} at its best batching ({}) | {before} | {fair} | {target} |",
            name(best_key)
        );
        let _ = write!(notes, "{peer}: best batching {}. ", name(best_key));
    }
    if let (Some(lib), Some(best_key)) = (&lib_w, best(report, &go_keys)) {
        if let Some(go) = fig(best_key) {
            let with_csv = paired(&lib.cpu_us, &go.cpu_us, |l, g| l / g);
            let fair = match (&lib_csv, fig("go_csv")) {
                (Some(lc), Some(gc)) => format!(
                    "{:.2} without the CSV; {:.2} with it",
                    paired(&less(lib, lc), &less(&go, &gc), |l, g| l / g).median,
                    with_csv.median
                ),
                _ => format!("{:.2}", with_csv.median),
            };
            let before = fig("go_write_10000").map_or_else(
                || "–".to_owned(),
                |d| format!("{:.2}", paired(&lib.cpu_us, &d.cpu_us, |l, g| l / g).median),
            );
            let _ = writeln!(
                targets,
                "| client CPU per row written, library / Go's (best batching) | {before} | {fair} | ≤ 0.25 |"
            );
        }
    }
    if let (Some(lib), Some(count)) = (fig("lib_read"), fig("go_count")) {
        let print = fig("go_print").map_or_else(
            || "–".to_owned(),
            |p| ratio_text(paired(&lib.rate, &p.rate, |l, g| l / g)),
        );
        let _ = writeln!(
            targets,
            "| filtered scan + decode, rows/s, library / Go's | {print} (against `cbt read`) | {} (against `cbt count`) | ≥ 2 |",
            ratio_text(paired(&lib.rate, &count.rate, |l, g| l / g))
        );
        let print_core = fig("go_print").map_or_else(
            || "–".to_owned(),
            |p| ratio_text(paired(&lib.cpu_us, &p.cpu_us, |l, g| g / l)),
        );
        let _ = writeln!(
            targets,
            "| filtered scan + decode, per client core, library / Go's | {print_core} (against `cbt read`) | {} (against `cbt count`) |  |",
            ratio_text(paired(&lib.cpu_us, &count.cpu_us, |l, g| g / l))
        );
    }
    let mut tls = String::from(
        "| contender, phase | client CPU per row: plaintext → TLS + token | TLS cost per row | per call (rows a call) | fixed cost: plaintext → TLS (handshake, first token) |\n|---|---|---|---|---|\n",
    );
    let mut tls_rows = 0;
    for (plain_key, label) in [
        ("lib_write", "library, write"),
        ("lib_read", "library, filtered scan + decode"),
        (
            "lib_put",
            "library, `Table::put` one at a time (a row is a call)",
        ),
        ("go_write_500", "Go `cbt import`, 500 rows a call"),
        ("go_write_2000", "Go `cbt import`, 2000 rows a call"),
        ("go_write_10000", "Go `cbt import`, 10000 rows a call"),
        ("go_count", "Go `cbt count`"),
    ] {
        let (Some(p), Some(t)) = (fig(plain_key), fig(&format!("{plain_key}_tls"))) else {
            continue;
        };
        tls_rows += 1;
        let extra = paired(&t.cpu_us, &p.cpu_us, |t, p| t - p).median;
        let per_call = if plain_key == "lib_put" {
            format!("{extra:+.2} µs (one row)")
        } else if plain_key.contains("write") {
            let batch = plain_key
                .rsplit('_')
                .next()
                .and_then(|b| b.parse::<f64>().ok())
                .unwrap_or(10_000.0);
            format!("{:+.2} ms ({batch:.0} rows)", extra * batch / 1e3)
        } else {
            "–".to_owned()
        };
        let _ = writeln!(
            tls,
            "| {label} | {:.2} → {:.2} µs | {extra:+.2} µs | {per_call} | {:.1} → {:.1} ms |",
            median(p.cpu_us.clone()),
            median(t.cpu_us.clone()),
            p.fixed_cpu_ms,
            t.fixed_cpu_ms
        );
    }
    let tls = if tls_rows == 0 {
        "Not measured in this run.\n".to_owned()
    } else {
        tls
    };
    vec![
        (
            "fair",
            format!("{} {}\n\n{table}", run_on(report), notes.trim_end()),
        ),
        ("fair-targets", targets),
        ("fair-tls", tls),
    ]
}
