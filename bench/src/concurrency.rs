//! `ttl-bench concurrency`: point calls with many in flight (issue 45,
//! item 2): `get`, `put`, `insert_if_absent` and a mix of 90 % `get` and
//! 10 % `put`, each at every number in flight (that many tasks, each making
//! its calls one after the other), by the library, the hand-written calls
//! of `latency` with the library's headers (`raw_headers`), Google's
//! Node.js and Python clients (a process a run, its CPU measured by
//! itself), and at the largest number in flight the library on pools of
//! [`POOLS`] connections. The library's calls per client core to the
//! others' are paired within a round (`stats::paired`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bigtable_ttl::{BigtableRow, Connection, Table};
use serde_json::{json, Value};
use ttl_bench::stats::{median, paired, quantile};
use ttl_bench::{cpu_seconds, event, Event};

use crate::calls::{
    call, each_target, emulator_clients, null_clients, Clients, Target, FAILED_AT_MOST, NULL_TABLE,
    STORED,
};
use crate::null::peer;
use crate::report::write_report;
use crate::{Res, PROJECT};

const OPS: [&str; 4] = ["get", "put", "insert_if_absent", "mixed"];
const POOLS: [usize; 4] = [1, 2, 4, 8];

/// `ttl-bench concurrency`'s arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Calls per contender, operation and concurrency in each round.
    #[arg(long, default_value_t = 20_000)]
    calls: usize,
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Calls in flight; the pool sweep runs at the largest.
    #[arg(long, value_delimiter = ',', default_value = "1,16,256")]
    in_flight: Vec<usize>,
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "emulator,null"
    )]
    against: Vec<Target>,
    /// Where `@google-cloud/bigtable` is installed (a `node_modules`).
    #[arg(long)]
    node_modules: Option<PathBuf>,
    /// The Python with `google-cloud-bigtable` (none: no Python contender).
    #[arg(long)]
    python: Option<String>,
    #[arg(long)]
    out: PathBuf,
}

/// A contender: its name in the JSON, how it calls.
struct Contender {
    name: String,
    calls: Calls,
    /// Only at the largest number in flight (the pool sweep).
    sweep: bool,
}

enum Calls {
    /// Clients in this process, and which of `calls::call`'s contenders.
    Rust(Arc<Clients>, &'static str),
    /// A process of a Google client's `--phase point` per run, from this
    /// command.
    Process(Box<dyn Fn() -> std::process::Command>),
}

/// One contender's calls of one operation at one concurrency in one round.
struct Run {
    wall_s: f64,
    cpu_s: f64,
    micros: Vec<f64>,
    failed: usize,
}

pub(crate) async fn main(args: &Args) -> Res<()> {
    let measured = each_target(&args.against, async |target| match target {
        Target::Emulator => {
            let instance = "bench-concurrency";
            let (emulator, _, clients) = emulator_clients(instance).await?;
            let table = Event::SCHEMA.table;
            let contenders = contenders(args, emulator.host(), instance, table, clients).await?;
            measure(args, &contenders, STORED).await
        }
        Target::Null => {
            let (server, clients) = null_clients()?;
            let contenders = contenders(args, &server.host, "null", NULL_TABLE, clients).await?;
            let results = measure(args, &contenders, 1).await?;
            drop(contenders);
            server.stop()?;
            Ok(results)
        }
    })
    .await?;
    let report = json!({"calls": args.calls, "rounds": args.rounds.max(1), "targets": measured});
    write_report(&args.out, report)
}

/// The library, the hand-written client, Google's clients given, and the
/// library on pools of [`POOLS`] connections to `host`.
async fn contenders(
    args: &Args,
    host: &str,
    instance: &str,
    table: &str,
    clients: Clients,
) -> Res<Vec<Contender>> {
    let base = Arc::new(clients);
    let rust = |name: &str, clients, who, sweep| Contender {
        name: name.to_owned(),
        calls: Calls::Rust(clients, who),
        sweep,
    };
    let mut all = vec![
        rust("lib", base.clone(), "lib", false),
        rust("hand", base.clone(), "raw_headers", false),
    ];
    // Google's clients: the program, its script, its `NODE_PATH`.
    let node = args.node_modules.clone();
    let node = node.filter(|m| m.join("@google-cloud/bigtable").is_dir());
    if node.is_none() {
        eprintln!(
            "concurrency: no Node.js client (no --node-modules DIR with @google-cloud/bigtable)"
        );
    }
    let peers = [
        node.map(|m| ("node", "node".to_owned(), "node_client.js", Some(m))),
        (args.python.clone()).map(|p| ("python", p, "python_client.py", None)),
    ];
    for (name, program, script, node_path) in peers.into_iter().flatten() {
        let (host, instance, table) = (host.to_owned(), instance.to_owned(), table.to_owned());
        let command = move || {
            let mut cmd = peer(&program, script, &host, &instance, &table);
            cmd.envs(node_path.iter().map(|path| ("NODE_PATH", path)));
            cmd
        };
        all.push(Contender {
            name: name.to_owned(),
            calls: Calls::Process(Box::new(command)),
            sweep: false,
        });
    }
    for pool in POOLS {
        let connection = Connection::builder(PROJECT, instance)
            .emulator(host)
            .pool_size(pool)
            .connect()
            .await?;
        let mut clients = (*base).clone();
        clients.lib = Table::<Event>::new(connection).with_name(table);
        if !clients.family_selector {
            // As the default pool's table: its reads select no family.
            clients.lib.ensure_schema().await?;
        }
        let name = format!("lib_pool{pool}");
        all.push(rust(&name, Arc::new(clients), "lib", true));
    }
    Ok(all)
}

/// `n` calls of `op` by `c`, `in_flight` at a time; fresh keys for the
/// inserts from `fresh`.
async fn run(
    c: &Contender,
    op: &'static str,
    n: usize,
    in_flight: usize,
    stored: usize,
    fresh: &Arc<AtomicUsize>,
) -> Res<Run> {
    let (clients, who) = match &c.calls {
        Calls::Rust(clients, who) => (clients, *who),
        Calls::Process(command) => {
            let first = fresh.fetch_add(n, Ordering::Relaxed);
            let numbers = [
                ("--calls", n),
                ("--in-flight", in_flight),
                ("--stored", stored),
                ("--fresh", first),
            ];
            let flags = numbers.map(|(flag, x)| [flag.to_owned(), x.to_string()]);
            let mut command = command();
            command.args(["--phase", "point", "--op", op]);
            let out = command.args(flags.concat()).output()?;
            if !out.status.success() {
                let why = String::from_utf8_lossy(&out.stderr);
                return Err(format!("concurrency: {} failed: {why}", c.name).into());
            }
            let v: Value = serde_json::from_slice(&out.stdout)?;
            let micros = v["micros"].as_array().ok_or("no calls timed")?;
            return Ok(Run {
                wall_s: v["wall_s"].as_f64().unwrap_or(f64::NAN),
                cpu_s: v["cpu_s"].as_f64().unwrap_or(f64::NAN),
                micros: micros.iter().filter_map(Value::as_f64).collect(),
                failed: usize::try_from(v["failed"].as_u64().unwrap_or(0))?,
            });
        }
    };
    let next = Arc::new(AtomicUsize::new(0));
    let (cpu0, start) = (cpu_seconds(), Instant::now());
    let tasks: Vec<_> = (0..in_flight.clamp(1, n.max(1)))
        .map(|_| {
            let (clients, next, fresh) = (clients.clone(), next.clone(), fresh.clone());
            tokio::spawn(async move {
                let (mut micros, mut failed) = (Vec::new(), 0);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let now = chrono::Utc::now();
                    let (op, row) = match op {
                        "insert_if_absent" => {
                            (op, event(fresh.fetch_add(1, Ordering::Relaxed), now))
                        }
                        "mixed" if i % 10 == 0 => ("put", event(i % stored, now)),
                        "mixed" => ("get", event(i % stored, now)),
                        _ => (op, event(i % stored, now)),
                    };
                    let t = Instant::now();
                    let outcome = call(&clients, op, who, &row, now).await;
                    micros.push(t.elapsed().as_secs_f64() * 1e6);
                    if let Err(e) = outcome {
                        eprintln!("concurrency: {op} {who}: a call failed: {e}");
                        failed += 1;
                    }
                }
                (micros, failed)
            })
        })
        .collect();
    let (mut micros, mut failed) = (Vec::with_capacity(n), 0);
    for task in tasks {
        let (task_micros, task_failed) = task.await?;
        micros.extend(task_micros);
        failed += task_failed;
    }
    Ok(Run {
        wall_s: start.elapsed().as_secs_f64(),
        cpu_s: cpu_seconds() - cpu0,
        micros,
        failed,
    })
}

/// The rounds against one server, `stored` rows there.
async fn measure(args: &Args, contenders: &[Contender], stored: usize) -> Res<Value> {
    let n = args.calls;
    let widest = args.in_flight.iter().copied().max().unwrap_or(1);
    // Fresh keys for the inserts, never reused, past the stored rows.
    let fresh = Arc::new(AtomicUsize::new(STORED.max(stored)));
    // Untimed: connections opened (every pool's), the server's first calls.
    let in_process = contenders
        .iter()
        .filter(|c| matches!(c.calls, Calls::Rust(..)));
    for c in in_process {
        for op in OPS {
            run(c, op, n.min(200), 16, stored, &fresh).await?;
        }
    }
    let mut runs: BTreeMap<(usize, usize, usize), Vec<Run>> = BTreeMap::new();
    for round in 0..args.rounds.max(1) {
        for (o, op) in OPS.into_iter().enumerate() {
            for &in_flight in &args.in_flight {
                let k = contenders.len();
                for w in (0..k).map(|i| (i + round) % k) {
                    let c = &contenders[w];
                    if c.sweep && in_flight != widest {
                        continue;
                    }
                    let r = run(c, op, n, in_flight, stored, &fresh).await?;
                    eprintln!(
                        "concurrency round {round}: {op} ×{in_flight} {}: {:.0} calls/s, {:.0} per core, p50 {:.0} µs, p99 {:.0} µs",
                        c.name,
                        n as f64 / r.wall_s,
                        n as f64 / r.cpu_s,
                        quantile(&r.micros, 0.5),
                        quantile(&r.micros, 0.99),
                    );
                    runs.entry((o, in_flight, w)).or_default().push(r);
                }
            }
        }
    }
    let hand = contenders.iter().position(|c| c.name == "hand");
    let node = contenders.iter().position(|c| c.name == "node");
    let per_core = |rs: &[Run]| -> Vec<f64> { rs.iter().map(|r| n as f64 / r.cpu_s).collect() };
    let quartiles = |a: &[f64], b: &[f64]| {
        let q = paired(a, b, |a, b| a / b);
        json!([q.q1, q.median, q.q3])
    };
    let mut rows = Vec::new();
    for (&(o, in_flight, w), rs) in &runs {
        let failed: usize = rs.iter().map(|r| r.failed).sum();
        if failed as f64 > (n * rs.len()) as f64 * FAILED_AT_MOST {
            let who = &contenders[w].name;
            return Err(format!("concurrency: {failed} {} calls of {who} failed", OPS[o]).into());
        }
        let all: Vec<f64> = rs.iter().flat_map(|r| r.micros.iter().copied()).collect();
        let mut row = json!({
            "op": OPS[o], "in_flight": in_flight, "who": contenders[w].name, "failed": failed,
            "calls_per_s": median(rs.iter().map(|r| n as f64 / r.wall_s)),
            "per_core": median(per_core(rs)),
            "p50_us": quantile(&all, 0.5), "p99_us": quantile(&all, 0.99),
        });
        if matches!(contenders[w].calls, Calls::Rust(_, "lib")) {
            if let Some(hand) = hand.and_then(|h| runs.get(&(o, in_flight, h))) {
                row["vs_hand"] = quartiles(&per_core(rs), &per_core(hand));
            }
            if let Some(node) = node {
                // Node at its best concurrency in each round.
                let best: Vec<f64> = (0..rs.len())
                    .map(|r| {
                        let at = |c: &usize| runs.get(&(o, *c, node))?.get(r);
                        let runs = args.in_flight.iter().filter_map(at);
                        runs.map(|r| n as f64 / r.cpu_s).fold(f64::NAN, f64::max)
                    })
                    .collect();
                row["vs_node"] = quartiles(&per_core(rs), &best);
            }
        }
        rows.push(row);
    }
    Ok(json!({ "rows": rows }))
}
