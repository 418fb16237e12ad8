//! `ttl-bench null` and `ttl-bench fair`: the clients' own cost against a
//! null server ([`server`]; `fair` adds one serving TLS only, with a bearer
//! token). Each variant (a contender's phase in one setting) runs as a
//! process of its own, in rounds, the order rotated each round, measured
//! from outside beside its run of one row in the same round, whose cost
//! the report takes off. `cbt` over TLS runs only where this process has
//! no network but loopback ([`isolated`]): off the emulator setting it is
//! Google's Cloud client as it is (metrics exporter, metadata probe).

pub(crate) mod client;
pub(crate) mod profile;
pub(crate) mod server;

use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Instant;

use chrono::Utc;
use prost::Message as _;
use serde_json::{json, Map, Value};
use ttl_bench::csv_rows::write_csv;
use ttl_bench::{event, hand_entry, load_average, process_cpu_seconds};
use wait4::Wait4 as _;

use crate::report::write_report;
use crate::{Res, PROJECT};
use client::INSTANCE;
use server::READ_TABLE_PREFIX;

/// The token the TLS server asks for.
const TOKEN: &str = "ttl-bench-null-token";
/// `cbt import`'s batch sizes `fair` tries (4 workers each).
pub(crate) const GO_BATCHES: [usize; 3] = [500, 2_000, 10_000];
/// Node's rows per `mutate` call `fair` tries (4 in flight each).
pub(crate) const NODE_BATCHES: [usize; 3] = [250, 1_000, 10_000];
/// `null`'s memory pass runs this many times the rows (the tables' "10 N").
const MEMORY_SCALE: usize = 10;
/// The library's bulk-writer batching, every peer's in `null`.
const DEFAULT_BATCH: usize = 10_000;

/// The arguments `ttl-bench null` and `fair` share.
#[derive(clap::Args)]
pub(crate) struct Common {
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    /// Where `@google-cloud/bigtable` is installed (a `node_modules`).
    #[arg(long)]
    node_modules: Option<PathBuf>,
    #[arg(long)]
    out: PathBuf,
}

pub(crate) enum Kind {
    /// `profile_rows` of the library's write run under callgrind (0: none).
    Null { profile_rows: usize },
    /// `go_csv`: the `bench/go_csv` program, if built.
    Fair { go_csv: Option<PathBuf> },
}

/// A contender's phase in one setting, keyed in the JSON as
/// `{who}_{phase}[_{batch}][_tls]`: `lib_write`, `go_write_500_tls`, …
struct Variant {
    key: String,
    /// `lib`, `raw`, `go`, `node`.
    who: &'static str,
    /// `write`, `read`, `csv`, `put` (the library's), `count` and `print`
    /// (`cbt count`, `cbt read`).
    phase: &'static str,
    tls: bool,
    batch: usize,
}

fn variant(who: &'static str, phase: &'static str, tls: bool, batch: Option<usize>) -> Variant {
    let batch_key = batch.map(|b| format!("_{b}")).unwrap_or_default();
    let tls_key = if tls { "_tls" } else { "" };
    Variant {
        key: format!("{who}_{phase}{batch_key}{tls_key}"),
        who,
        phase,
        tls,
        batch: batch.unwrap_or(DEFAULT_BATCH),
    }
}

/// The null server, a child process.
pub(crate) struct NullServer {
    pub(crate) child: Child,
    stdout: BufReader<ChildStdout>,
    pub(crate) host: String,
}

impl NullServer {
    /// Serving the read tables of `row_counts` rows; over TLS only, with
    /// [`TOKEN`], when given the file for its CA.
    pub(crate) fn start(me: &Path, row_counts: &[usize], tls_ca: Option<&Path>) -> Res<Self> {
        let counts: Vec<String> = row_counts.iter().map(ToString::to_string).collect();
        let mut cmd = Command::new(me);
        cmd.args(["null-server", "--rows", &counts.join(",")]);
        if let Some(ca) = tls_ca {
            cmd.arg("--tls").arg(ca).args(["--token", TOKEN]);
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
        let mut stdout = BufReader::new(child.stdout.take().ok_or("null server stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let host = line.trim().strip_prefix("listening ");
        let host = host.ok_or_else(|| format!("null server said {line:?}"))?;
        let host = host.to_owned();
        Ok(Self {
            child,
            stdout,
            host,
        })
    }

    /// Stop it; what it counted (calls per method, entries per table).
    pub(crate) fn stop(mut self) -> Res<Value> {
        drop(self.child.stdin.take());
        let mut line = String::new();
        self.stdout.read_line(&mut line)?;
        self.child.wait()?;
        Ok(serde_json::from_str(line.trim())?)
    }
}

/// The run's servers and programs; `work` holds the CSV files, the CA and
/// each process's output.
struct Setup {
    me: PathBuf,
    work: PathBuf,
    cbt: PathBuf,
    node_modules: Option<PathBuf>,
    go_csv: Option<PathBuf>,
    plain: NullServer,
    tls: Option<NullServer>,
}

impl Setup {
    fn csv(&self, rows: usize) -> PathBuf {
        self.work.join(format!("events_{rows}.csv"))
    }

    fn server(&self, v: &Variant) -> &NullServer {
        self.tls.as_ref().filter(|_| v.tls).unwrap_or(&self.plain)
    }

    /// The command of `v` for `rows` rows on `table`.
    fn command(&self, v: &Variant, rows: usize, table: &str) -> Command {
        let (host, rows_arg) = (&self.server(v).host, rows.to_string());
        let ca = self.work.join("null-ca.pem");
        let mut cmd;
        match (v.who, v.phase) {
            ("lib" | "raw", phase) => {
                cmd = Command::new(&self.me);
                cmd.args(["null-client", v.who, phase, "--host", host])
                    .args(["--table", table, "--rows", &rows_arg, "--csv"])
                    .arg(self.csv(rows));
                if v.tls {
                    cmd.arg("--tls").arg(ca).args(["--token", TOKEN]);
                }
            }
            ("go", "csv") => {
                cmd = Command::new(self.go_csv.as_deref().unwrap_or(Path::new("go_csv")));
                cmd.arg(self.csv(rows));
            }
            ("go", phase) => {
                cmd = Command::new(&self.cbt);
                cmd.args(["-project", PROJECT, "-instance", INSTANCE]);
                if v.tls {
                    // Off the emulator setting `cbt` asks `gcloud` (half a
                    // second of CPU) for its configuration when it finds it;
                    // an application on Google's Go client does not. The
                    // metadata server's probe stays on loopback.
                    let port = host.rsplit(':').next().unwrap_or_default();
                    cmd.env("PATH", self.work.join("no-gcloud-here"))
                        .args(["-data-endpoint", &format!("localhost:{port}")])
                        .arg("-cert-file")
                        .arg(ca)
                        .args(["-access-token", TOKEN])
                        .env("GCE_METADATA_HOST", "127.0.0.1:1")
                        .env("GCE_METADATA_IP", "127.0.0.1:1");
                } else {
                    // Never opened under the emulator setting; naming one
                    // keeps `cbt` from asking `gcloud` for credentials.
                    cmd.arg("-creds")
                        .arg(self.work.join("no-credentials-under-an-emulator.json"))
                        .env("BIGTABLE_EMULATOR_HOST", host);
                }
                match phase {
                    "write" => cmd
                        .args(["import", table])
                        .arg(self.csv(rows))
                        .arg(format!("batch-size={}", v.batch))
                        .args(["workers=4", "timestamp=value-encoded"]),
                    "count" => cmd.args(["count", table]),
                    _ => cmd.args(["read", table, "cells-per-column=1"]),
                };
            }
            _ => {
                cmd = peer("node", "node_client.js", host, INSTANCE, table);
                cmd.args(["--phase", v.phase, "--rows", &rows_arg])
                    .args(["--batch", &v.batch.to_string(), "--csv"])
                    .arg(self.csv(rows));
                if let Some(modules) = &self.node_modules {
                    cmd.env("NODE_PATH", modules);
                }
            }
        }
        cmd
    }

    /// One process of `v` on `rows` rows, its output in files named after
    /// `label` (`cbt read`'s rows to `/dev/null`), measured: wall and CPU
    /// time, peak RSS (the process's own `VmHWM` where it says it, else
    /// `wait4`'s), the server's CPU meanwhile, and what the process said of
    /// itself (`inner`); checked where the contender says what it did.
    fn one(&self, v: &Variant, rows: usize, label: &str) -> Res<Value> {
        let table = match v.phase {
            "write" | "put" => format!("w_{label}"),
            _ => format!("{READ_TABLE_PREFIX}{rows}"),
        };
        let mut cmd = self.command(v, rows, &table);
        let out_path = self.work.join(format!("{label}.out"));
        let err_path = self.work.join(format!("{label}.err"));
        if v.phase == "print" {
            cmd.stdout(Stdio::null());
        } else {
            cmd.stdout(File::create(&out_path)?);
        }
        cmd.stderr(File::create(&err_path)?).stdin(Stdio::null());
        let server_pid = self.server(v).child.id();
        let server_cpu = process_cpu_seconds(server_pid);
        let start = Instant::now();
        let usage = cmd.spawn()?.wait4()?;
        let wall_s = start.elapsed().as_secs_f64();
        let server_cpu_s = process_cpu_seconds(server_pid) - server_cpu;
        if !usage.status.success() {
            let err = std::fs::read_to_string(&err_path).unwrap_or_default();
            return Err(format!("{label} failed ({}): {err}", usage.status).into());
        }
        let out = std::fs::read_to_string(&out_path).unwrap_or_default();
        let inner = out
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok());
        let inner: Value = inner.unwrap_or_default();
        let mut numbers = out.split_whitespace().filter_map(|w| w.parse().ok());
        if v.phase == "count" && numbers.next_back() != Some(rows) {
            return Err(format!("{label}: `cbt count` did not count {rows} rows").into());
        }
        if (v.who, v.phase) == ("go", "csv") && inner["rows"].as_u64() != Some(rows as u64) {
            return Err(format!("{label}: go_csv did not read {rows} rows").into());
        }
        let wait4_peak = usage.rusage.maxrss / 1024;
        let run = json!({
            "wall_s": wall_s,
            "cpu_s": (usage.rusage.utime + usage.rusage.stime).as_secs_f64(),
            "peak_rss_kib": inner["peak_rss_kib"].as_u64().unwrap_or(wait4_peak),
            "server_cpu_s": server_cpu_s,
            "inner": inner,
        });
        eprintln!("  {label}: {rows} rows, {run}");
        Ok(run)
    }

    /// `cbt read` prints a line of dashes before each row: counted once,
    /// untimed, as the lines stream by (so the driver's own peak RSS, where
    /// a child's `wait4` peak starts, stays small).
    fn check_cbt_read(&self, v: &Variant, rows: usize) -> Res<()> {
        let mut cmd = self.command(v, rows, &format!("{READ_TABLE_PREFIX}{rows}"));
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
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
}

/// A process of a Google client's `script` (`bench/`) run by `program`, on
/// `table` of `instance` at the emulator or null server `host`.
pub(crate) fn peer(
    program: &str,
    script: &str,
    host: &str,
    instance: &str,
    table: &str,
) -> Command {
    let mut cmd = Command::new(program);
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(script))
        .args([
            "--project",
            PROJECT,
            "--instance",
            instance,
            "--table",
            table,
        ])
        .env("BIGTABLE_EMULATOR_HOST", host);
    cmd
}

/// Whether `name` runs with `arg`.
fn found(name: &str, arg: &str) -> bool {
    let run = Command::new(name).arg(arg).output();
    run.is_ok_and(|out| out.status.success())
}

/// Whether this process is cut off from every network but loopback: its
/// network namespace has no interface but `lo` (as under `unshare --net`).
fn isolated() -> bool {
    std::fs::read_to_string("/proc/net/dev").is_ok_and(|dev| {
        let mut names = dev.lines().skip(2).filter_map(|l| l.split(':').next());
        names.all(|name| name.trim() == "lo")
    })
}

/// The variants of `kind` this machine can run, a message for each left out.
fn variants(node_modules: Option<&PathBuf>, kind: &Kind) -> Vec<Variant> {
    let go = found("cbt", "version");
    let node = node_modules
        .is_some_and(|m| m.join("@google-cloud/bigtable").is_dir() && found("node", "--version"));
    if !go {
        eprintln!("null: no Go client: `cbt` is not on the PATH (google-cloud-cli-cbt)");
    }
    if !node {
        eprintln!("null: no Node.js client: no node, or no --node-modules DIR with @google-cloud/bigtable (bench/run.sh installs it)");
    }
    let mut v = Vec::new();
    let Kind::Fair { go_csv } = kind else {
        for who in ["lib", "raw"] {
            v.extend(["write", "read"].map(|phase| variant(who, phase, false, None)));
        }
        if go {
            let write = variant("go", "write", false, Some(DEFAULT_BATCH));
            v.extend([write, variant("go", "print", false, None)]);
        }
        if node {
            let write = variant("node", "write", false, Some(DEFAULT_BATCH));
            v.extend([write, variant("node", "read", false, None)]);
        }
        return v;
    };
    let lib = [
        ("write", false),
        ("csv", false),
        ("read", false),
        ("write", true),
        ("read", true),
        ("put", false),
        ("put", true),
    ];
    v.extend(lib.map(|(phase, tls)| variant("lib", phase, tls, None)));
    let cbt_tls = go && isolated();
    if go && !cbt_tls {
        eprintln!("fair: no `cbt` over TLS: it runs only in a network namespace of its own (`unshare --net`)");
    }
    for tls in [false, true].into_iter().filter(|&t| go && (!t || cbt_tls)) {
        v.extend(GO_BATCHES.map(|b| variant("go", "write", tls, Some(b))));
        v.push(variant("go", "count", tls, None));
        if !tls {
            v.push(variant("go", "print", false, None));
        }
    }
    if go && go_csv.is_some() {
        v.push(variant("go", "csv", false, None));
    } else if go {
        eprintln!("fair: no Go CSV phase: no --go-csv PROGRAM (bench/run.sh builds bench/go_csv)");
    }
    if node {
        v.extend(NODE_BATCHES.map(|b| variant("node", "write", false, Some(b))));
        v.extend(["csv", "read"].map(|phase| variant("node", phase, false, None)));
    }
    v
}

/// Run `kind`'s variants; write the JSON to `args.out`.
pub(crate) fn run(args: &Common, rounds: usize, kind: &Kind) -> Res<()> {
    let work = args.out.with_file_name("null-runs");
    std::fs::create_dir_all(&work)?;
    let me = std::env::current_exe()?;
    let load_start = load_average();
    let (n, rounds) = (args.rows, rounds.max(1));
    let (big, profile_rows, go_csv) = match kind {
        Kind::Null { profile_rows } => (n * MEMORY_SCALE, *profile_rows, None),
        Kind::Fair { go_csv } => (0, 0, go_csv.clone()),
    };
    // Every contender's write reads its rows from these files, as `cbt
    // import` must (see `ttl_bench::csv_rows`).
    let now = Utc::now();
    for rows in [1, n, big, profile_rows].into_iter().filter(|&r| r > 0) {
        write_csv(&work.join(format!("events_{rows}.csv")), rows, now)?;
    }
    let counts: Vec<usize> = [1, n, big].into_iter().filter(|&r| r > 0).collect();
    eprintln!("null: encoding the read answers for {counts:?} rows…");
    let plain = NullServer::start(&me, &counts, None)?;
    let ca = work.join("null-ca.pem");
    let tls = matches!(kind, Kind::Fair { .. }).then(|| NullServer::start(&me, &counts, Some(&ca)));
    let tls = tls.transpose()?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let cbt = std::env::split_paths(&path)
        .map(|dir| dir.join("cbt"))
        .find(|p| p.is_file());
    let setup = Setup {
        cbt: cbt.unwrap_or_else(|| PathBuf::from("cbt")),
        node_modules: args.node_modules.clone(),
        me,
        work,
        go_csv,
        plain,
        tls,
    };
    let variants = variants(args.node_modules.as_ref(), kind);
    let keys: Vec<&str> = variants.iter().map(|v| v.key.as_str()).collect();
    eprintln!("null: server {}; {keys:?}", setup.plain.host);
    let mut runs = Map::new();
    for v in &variants {
        if v.phase == "print" {
            setup.check_cbt_read(v, n)?;
        }
        // Untimed: caches warm, and a contender that cannot run fails here.
        setup.one(v, 1, &format!("{}_warmup", v.key))?;
        runs.insert(v.key.clone(), json!({"full": [], "one": [], "big": []}));
    }
    // Each measured write's server (TLS or not), table and rows.
    let mut writes = Vec::new();
    let mut record = |v: &Variant, list: &str, rows: usize, label: String| -> Res<()> {
        let run = setup.one(v, rows, &label)?;
        if v.phase == "write" {
            writes.push((v.tls, format!("w_{label}"), rows));
        }
        if let Some(list) = runs[&v.key][list].as_array_mut() {
            list.push(run);
        }
        Ok(())
    };
    for round in 0..rounds {
        eprintln!("null: round {round}");
        for i in 0..variants.len() {
            let v = &variants[(i + round) % variants.len()];
            record(v, "full", n, format!("{}_{round}", v.key))?;
            record(v, "one", 1, format!("{}_1_{round}", v.key))?;
        }
    }
    if big > 0 {
        eprintln!("null: memory pass, {big} rows");
        for v in &variants {
            record(v, "big", big, format!("{}_big", v.key))?;
        }
    }
    let mut profiles = Map::new();
    if profile_rows > 0 && profile::available() {
        eprintln!("null: callgrind, {profile_rows} rows");
        let lib_write = variant("lib", "write", false, None);
        let write = setup.command(&lib_write, profile_rows, "w_prof");
        let profile = profile::profile_write(&write, &setup.work, profile_rows)?;
        profiles.insert("lib-write".to_owned(), profile);
    } else if profile_rows > 0 {
        eprintln!("null: no profile: valgrind or callgrind_annotate is not on the PATH");
    }
    let Setup { plain, tls, .. } = setup;
    let counts = [Some(plain.stop()?), tls.map(NullServer::stop).transpose()?];
    let counts: Vec<Value> = counts.into_iter().flatten().collect();
    // Every measured write reached its server whole. (`put`'s single-row
    // writes are not counted: the server counts `MutateRows`' entries.)
    let missing: Vec<String> = (writes.iter())
        .filter_map(|(tls, table, rows)| {
            let got = counts[usize::from(*tls)]["entries"][table].as_u64();
            let got = got.unwrap_or(0);
            (got != *rows as u64).then(|| format!("{table}: {got} of {rows}"))
        })
        .collect();
    if !missing.is_empty() {
        let missing = missing.join("; ");
        return Err(format!("writes a null server did not get whole: {missing}").into());
    }
    // What a row takes on the wire (the library's bytes, asserted equal
    // to the hand-written ones): the measure of "memory flat in N".
    let sample = 1_000;
    let row_bytes: usize = (0..sample)
        .map(|i| hand_entry(&event(i, now), now).map(|e| e.encoded_len()))
        .sum::<Result<_, _>>()?;
    let value = json!({
        "rows": n,
        "big_rows": big,
        "rounds": rounds,
        "load_average": [load_start, load_average()],
        "variants": keys,
        "runs": runs,
        "server_calls": counts.iter().map(|c| c["calls"].clone()).collect::<Vec<_>>(),
        "profile": profiles,
        "row_bytes": row_bytes as f64 / sample as f64,
        // The floor of the `wait4` peaks (Go's): the driver's own peak.
        "driver_peak_rss_kib": ttl_bench::peak_rss_kib(),
    });
    write_report(&args.out, value)
}
