//! `ttl-bench e2e`: write and filtered scan on the emulator, each contender
//! a process of its own (`ttl-bench contender`, so peak RSS is its own) on
//! an emulator of its own, in rounds; and the bytes a typed read's filter
//! saves. `ttl-bench instructions`: the `lib` and `raw` contenders under
//! callgrind, a count the machine's load does not move.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use bigtable_rs::bigtable::BigTable;
use bigtable_rs::google::bigtable::v2::read_rows_response::cell_chunk::RowStatus;
use bigtable_rs::google::bigtable::v2::ReadRowsRequest;
use bigtable_ttl::{BigtableRow, Connection, Scan, Table};
use bigtable_ttl_emulator::Emulator;
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::{StreamExt as _, TryStreamExt as _};
use prost::Message as _;
use serde_json::{json, Map, Value};
use ttl_bench::stats::{median, paired};
use ttl_bench::{cpu_seconds, event, hand_decode, hand_entry, peak_rss_kib};
use ttl_bench::{load_average, pid_listening_on, process_cpu_seconds, Event, EventByColumn};
use ttl_bench::{mutate_rows, read_filter, rs_client};

use crate::expiry::write_rows;
use crate::null::{peer, profile::callgrind};
use crate::{Res, PROJECT};

/// The Rust contenders. `lib-by-column` writes `Event`'s twin without
/// `owns_family`.
const CONTENDERS: [&str; 4] = ["lib", "lib-by-column", "lib-put-all", "raw"];
/// A contender's figures, each reported as its median over the rounds.
const FIGURES: [&str; 7] = [
    "write_s",
    "scan_s",
    "peak_rss_kib",
    "write_cpu_s",
    "scan_cpu_s",
    "write_emulator_cpu_s",
    "scan_emulator_cpu_s",
];
/// The library's bulk-writer batching, mirrored by the hand-written contender.
const ROWS_PER_REQUEST: usize = 10_000;
const IN_FLIGHT: usize = 4;

/// `BENCH_ROUNDS` rounds (9), each running every contender once on a fresh
/// emulator, the Rust contenders in an order rotated each round, the Python
/// client after them (a rotation put the library right after it in most
/// rounds, and it ran slower there).
pub(crate) async fn run(rows: usize, python: Option<&str>, out: &Path) -> Res<()> {
    let rounds = std::env::var("BENCH_ROUNDS").map(|r| r.parse());
    let rounds: usize = rounds.ok().and_then(Result::ok).unwrap_or(9).max(1);
    let load_start = load_average();
    let mut runs: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for round in 0..rounds {
        let rotated = (0..CONTENDERS.len()).map(|i| CONTENDERS[(i + round) % CONTENDERS.len()]);
        for name in rotated.chain(python.map(|_| "python")) {
            let emulator = emulator_for(name).await?;
            eprintln!("round {round}: contender {name} ({rows} rows)…");
            let output = command(name, rows, &emulator, python)?.output()?;
            if !output.status.success() {
                let err = String::from_utf8_lossy(&output.stderr);
                return Err(format!("contender {name} failed: {err}").into());
            }
            let stdout = String::from_utf8(output.stdout)?;
            let value: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())?;
            eprintln!("  {value}");
            runs.entry(name).or_default().push(value);
        }
    }
    let mut results = Map::new();
    for (name, values) in &runs {
        let mut medians = Map::new();
        for key in FIGURES {
            let figures = values.iter().filter_map(|v| v[key].as_f64());
            medians.insert(key.into(), json!(median(figures)));
        }
        medians.insert("runs".into(), json!(values));
        results.insert((*name).to_owned(), Value::Object(medians));
    }
    // The hand-written contender's figures over the library's, and the
    // library's over its twin's without `owns_family`.
    let keys = ["write_s", "scan_s", "write_cpu_s", "scan_cpu_s"];
    results.insert("paired".into(), ratios(&runs, "raw", "lib", &keys));
    let keys = [
        "write_emulator_cpu_s",
        "write_s",
        "write_cpu_s",
        "scan_emulator_cpu_s",
    ];
    let owns_family = ratios(&runs, "lib", "lib-by-column", &keys);
    results.insert("owns_family".into(), owns_family);
    let emulator = Emulator::start()?;
    let filtering = filter_bytes(emulator.host(), 10_000).await?;
    results.insert("filtering".into(), filtering);
    let shell = |cmd: &str| {
        let out = Command::new("sh").args(["-c", cmd]).output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    let machine = format!(
        "{} cores ({}), {} memory, {}, {}",
        shell("nproc"),
        shell("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        shell("free -h | awk '/Mem:/ {print $2}'"),
        shell("rustc --version"),
        shell("uname -sr")
    );
    results.extend([
        ("rows".into(), json!(rows)),
        ("rounds".into(), json!(rounds)),
        ("machine".into(), json!(machine)),
        ("date".into(), json!(shell("date -u +%Y-%m-%d"))),
        ("load_average".into(), json!([load_start, load_average()])),
    ]);
    std::fs::write(out, serde_json::to_string_pretty(&results)?)?;
    Ok(())
}

/// A fresh emulator for contender `name`, its instance's table made.
async fn emulator_for(name: &str) -> Res<Emulator> {
    let emulator = Emulator::start()?;
    let conn = Connection::emulator(emulator.host(), PROJECT, &format!("bench-{name}"))?;
    Table::<Event>::new(conn).ensure_schema().await?;
    Ok(emulator)
}

/// The command running contender `name` against `emulator`: the Python
/// client's script under `python`, else this binary.
fn command(name: &str, rows: usize, emulator: &Emulator, python: Option<&str>) -> Res<Command> {
    let host = emulator.host();
    if name == "python" {
        let (python, table) = (python.unwrap_or("python3"), Event::SCHEMA.table);
        let mut cmd = peer(python, "python_client.py", host, "bench-python", table);
        cmd.args(["--rows", &rows.to_string()]);
        return Ok(cmd);
    }
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["contender", name, "--host", host])
        .args(["--rows", &rows.to_string()]);
    if let Some(pid) = pid_listening_on(emulator.port()) {
        cmd.args(["--emulator-pid", &pid.to_string()]);
    }
    Ok(cmd)
}

/// For each of `keys`, `over`'s figure over `under`'s, each ratio taken
/// within one round (the two ran back to back, so a round's ratio sees the
/// same machine), their median and quartiles over the rounds (the median
/// drops the rounds another process disturbed): `key`, `key_q1`, `key_q3`.
fn ratios(runs: &BTreeMap<&str, Vec<Value>>, over: &str, under: &str, keys: &[&str]) -> Value {
    let (Some(over), Some(under)) = (runs.get(over), runs.get(under)) else {
        return Value::Null;
    };
    let mut out = Map::new();
    for key in keys {
        let figure = |runs: &[Value]| -> Vec<f64> {
            let figures = runs.iter().map(|v| v[key].as_f64().unwrap_or(f64::NAN));
            figures.collect()
        };
        let q = paired(&figure(over), &figure(under), |o, u| o / u);
        out.insert((*key).into(), json!(q.median));
        out.insert(format!("{key}_q1"), json!(q.q1));
        out.insert(format!("{key}_q3"), json!(q.q3));
    }
    Value::Object(out)
}

/// The `lib` and `raw` contenders' instructions (callgrind), each on an
/// emulator of its own; the emulator's work is not in them.
pub(crate) async fn instructions(rows: usize, out: &Path) -> Res<()> {
    let mut results = json!({ "rows": rows });
    for name in ["lib", "raw"] {
        let emulator = emulator_for(name).await?;
        eprintln!("callgrind: contender {name} ({rows} rows)…");
        let profile = std::env::temp_dir().join(format!("ttl-bench-callgrind-{name}.out"));
        let mut contender = Command::new(std::env::current_exe()?);
        contender.args(["contender", name, "--host", emulator.host()]);
        let output = callgrind(contender.args(["--rows", &rows.to_string()]), &profile)?;
        let _ = std::fs::remove_file(&profile);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let collected: Option<u64> = stderr
            .lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .and_then(|n| n.trim().parse().ok());
        let collected = collected.filter(|_| output.status.success());
        results[name] = json!(collected.ok_or(format!("callgrind of {name} failed: {stderr}"))?);
        eprintln!("  {} instructions", results[name]);
    }
    std::fs::write(out, serde_json::to_string_pretty(&results)?)?;
    Ok(())
}

/// What is noted at the end of a contender's write: its time, this
/// process's CPU and the emulator's, the peak RSS; then the scan starts.
struct Mark {
    write_s: f64,
    cpu: f64,
    emulator_cpu: f64,
    rss: u64,
    scan_start: Instant,
}

/// One contender of `e2e`: its write and its filtered scan, timed, with
/// this process's CPU time and the emulator's (process `emulator`).
pub(crate) async fn contender(
    name: &str,
    host: &str,
    rows: usize,
    emulator: Option<u32>,
) -> Res<Value> {
    let instance = format!("bench-{name}");
    let conn = Connection::emulator(host, PROJECT, &instance)?;
    let now = Utc::now();
    let emulator_cpu = || emulator.map_or(f64::NAN, process_cpu_seconds);
    let mark = |start: Instant| Mark {
        write_s: start.elapsed().as_secs_f64(),
        cpu: cpu_seconds(),
        emulator_cpu: emulator_cpu(),
        rss: peak_rss_kib(),
        scan_start: Instant::now(),
    };
    let (cpu_start, emulator_start) = (cpu_seconds(), emulator_cpu());
    let (mark, read) = match name {
        "lib" => lib_phases(&conn, |i| event(i, now), rows, false, mark).await?,
        "lib-by-column" => {
            let make = |i| EventByColumn::from(event(i, now));
            lib_phases(&conn, make, rows, false, mark).await?
        }
        "lib-put-all" => lib_phases(&conn, |i| event(i, now), rows, true, mark).await?,
        "raw" => {
            let client = rs_client(host, &instance, false)?;
            let table_name = client.get_full_table_name(Event::SCHEMA.table);
            let start = Instant::now();
            // The rows made as they are sent.
            let mut i = 0;
            let next = |row: &mut Event| {
                *row = event(i, now);
                i += 1;
                Ok::<_, std::convert::Infallible>(i <= rows)
            };
            raw_write(&client, &table_name, next, now).await?;
            let mark = mark(start);
            (mark, raw_scan(&client, &table_name).await?)
        }
        other => return Err(format!("unknown contender {other}").into()),
    };
    let scan_s = mark.scan_start.elapsed().as_secs_f64();
    if read != rows {
        return Err(format!("{name}: read {read} rows, wrote {rows}").into());
    }
    Ok(json!({
        "write_s": mark.write_s,
        "scan_s": scan_s,
        "rows_read": read,
        "peak_rss_kib": mark.rss,
        "write_cpu_s": mark.cpu - cpu_start,
        "scan_cpu_s": cpu_seconds() - mark.cpu,
        "write_emulator_cpu_s": mark.emulator_cpu - emulator_start,
        "scan_emulator_cpu_s": emulator_cpu() - mark.emulator_cpu,
    }))
}

/// A library contender: `rows` rows of `make` through the bulk writer (or
/// `put_all` over a `Vec` of them), `mark` taken, then the typed stream of
/// the table; the rows read.
async fn lib_phases<R: BigtableRow + Send + 'static>(
    conn: &Connection,
    make: impl Fn(usize) -> R,
    rows: usize,
    put_all: bool,
    mark: impl FnOnce(Instant) -> Mark,
) -> Res<(Mark, usize)> {
    // Started as an application starts (README quick start), untimed: the
    // schema checked once, which also tells the reader that the table holds
    // no other family, so its filter need not select one.
    let table = Table::<R>::new(conn.clone());
    table.verify_schema().await?;
    let start = Instant::now();
    if put_all {
        table
            .put_all(&(0..rows).map(&make).collect::<Vec<_>>())
            .await?;
    } else {
        let mut writer = table.writer();
        for i in 0..rows {
            writer.send(&make(i)).await?;
        }
        writer.finish().await?;
    }
    let mark = mark(start);
    let read = table.stream(Scan::all()).try_fold(0, |n, e| {
        std::hint::black_box(&e);
        futures_util::future::ready(Ok(n + 1))
    });
    Ok((mark, read.await?))
}

/// Hand-written `bigtable_rs` bulk write: the library's batching (requests
/// of 10,000 rows, each sent by a task of its own, 4 in flight), every
/// entry's status checked. `next` puts the next row into the `Event` it is
/// given (`false` at the end); the rows written come back.
pub(crate) async fn raw_write<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    client: &BigTable,
    table_name: &str,
    mut next: impl FnMut(&mut Event) -> Result<bool, E>,
    now: DateTime<Utc>,
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
        let (mut client, table_name) = (client.clone(), table_name.to_owned());
        tasks.spawn(async move { mutate_rows(&mut client, &table_name, entries).await });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(rows)
}

/// Hand-written filtered scan: the timestamp range visible now, newest cell
/// per column, decoded by hand; the rows read.
pub(crate) async fn raw_scan(client: &BigTable, table_name: &str) -> Res<usize> {
    let request = ReadRowsRequest {
        table_name: table_name.to_owned(),
        filter: Some(read_filter(Utc::now(), false)),
        ..ReadRowsRequest::default()
    };
    let stream = client.clone().stream_rows(request).await?;
    let mut stream = std::pin::pin!(stream);
    let mut n = 0;
    while let Some((key, cells)) = stream.next().await.transpose()? {
        std::hint::black_box(hand_decode(&key, &cells)?);
        n += 1;
    }
    Ok(n)
}

/// `rows` rows, half expiring in 1 h and half in 3 h, read with a manual
/// clock 2 h on (half expired for the reader, none collected: the
/// emulator's garbage collection runs on real time): the bytes of the
/// `ReadRowsResponse`s a typed read receives against an unfiltered read's.
async fn filter_bytes(host: &str, rows: usize) -> Res<Value> {
    let hours = |i: usize| TimeDelta::hours(if i.is_multiple_of(2) { 1 } else { 3 });
    let (table, t0, _) = write_rows(host, "bench-filter", rows, hours).await?;
    table.clock().set(t0 + TimeDelta::hours(2));
    let typed_rows = table.scan(Scan::all()).await?.len();
    // Counted as the responses come off the wire, which the library's raw
    // data layer does not show: through `bigtable_rs`'s generated client.
    let instance = table.connection().instance();
    let mut client = rs_client(host, instance, true)?;
    client.configure_inner_client(|client| client.max_decoding_message_size(256 << 20));
    let mut received = [(0, 0); 2];
    for (filter, sums) in [Some(read_filter(table.clock().now(), true)), None]
        .into_iter()
        .zip(&mut received)
    {
        let request = ReadRowsRequest {
            table_name: client.get_full_table_name(Event::SCHEMA.table),
            filter,
            ..ReadRowsRequest::default()
        };
        let mut stream = client.get_client().read_rows(request).await?.into_inner();
        while let Some(response) = stream.message().await? {
            let chunks = response.chunks.iter();
            sums.0 += response.encoded_len();
            sums.1 += chunks
                .filter(|c| matches!(c.row_status, Some(RowStatus::CommitRow(true))))
                .count();
        }
    }
    let [typed, raw] = received;
    eprintln!("filtering: {typed:?} bytes and rows typed, {raw:?} unfiltered");
    Ok(json!({
        "rows_written": rows,
        "rows_typed": typed_rows,
        "typed_bytes": typed.0,
        "typed_rows_received": typed.1,
        "unfiltered_bytes": raw.0,
        "unfiltered_rows_received": raw.1,
    }))
}
