//! `ttl-bench parallel`: `Table::scan_parallel` against one
//! `Table::stream` of the same rows, in one run on one dedicated emulator,
//! with the CPU time of the client and of the emulator beside the wall time
//! (on a small machine the emulator may be what limits both).
//!
//! * `ttl-bench parallel --rows N [--concurrency 2,4] [--rounds 5] --out FILE [--update BENCHMARKS.md]`:
//!   measures, writes JSON, and with `--update` rewrites the
//!   "Parallel scan" section of the given file (the rest untouched).
//! * `ttl-bench parallel --from FILE --update BENCHMARKS.md`: the section
//!   rendered again from measurements already made.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::pin::pin;
use std::time::Instant;

use bigtable_ttl::{Connection, Expiring, Scan, Table};
use chrono::Utc;
use futures_util::{Stream, TryStreamExt as _};
use serde_json::{json, Value};
use ttl_bench::stats::median;
use ttl_bench::{
    cpu_seconds, event, machine_busy_seconds, pid_listening_on, process_cpu_seconds, Event,
};

use crate::{Res, PROJECT};

/// The heading the section starts with; `--update` replaces the section
/// (to the next heading).
pub(crate) const HEADING: &str = "## Parallel scan";

/// One read of every row: wall time, the CPU both sides spent in it, and
/// the CPU of the whole machine meanwhile, in seconds.
struct Sample {
    wall: f64,
    client_cpu: f64,
    emulator_cpu: f64,
    machine_cpu: f64,
}

/// Count the rows of `rows` and add up their `clicks` (`7 i` for row `i`):
/// both must match what was written, so no row was lost or read twice.
async fn tally(
    rows: impl Stream<Item = bigtable_ttl::Result<Expiring<Event>>>,
) -> Res<(usize, i64)> {
    let rows = pin!(rows);
    Ok(rows
        .try_fold((0usize, 0i64), |(n, sum), e| {
            futures_util::future::ready(Ok((n + 1, sum + e.clicks)))
        })
        .await?)
}

/// Read every row once, as a single stream (`None`) or `concurrency` parts
/// at once, and measure it.
async fn measure(
    table: &Table<Event>,
    concurrency: Option<usize>,
    emulator: u32,
    rows: usize,
) -> Res<Sample> {
    let (client0, emulator0) = (cpu_seconds(), process_cpu_seconds(emulator));
    let machine0 = machine_busy_seconds();
    let start = Instant::now();
    let (n, clicks) = match concurrency {
        None => tally(table.stream(Scan::all())).await?,
        Some(c) => tally(table.scan_parallel(Scan::all(), c)).await?,
    };
    let sample = Sample {
        wall: start.elapsed().as_secs_f64(),
        client_cpu: cpu_seconds() - client0,
        emulator_cpu: process_cpu_seconds(emulator) - emulator0,
        machine_cpu: machine_busy_seconds() - machine0,
    };
    let rows_i64 = i64::try_from(rows)?;
    let want = 7 * rows_i64 * (rows_i64 - 1) / 2;
    if n != rows || clicks != want {
        return Err(format!(
            "{concurrency:?}: read {n} rows (clicks {clicks}), wrote {rows} (clicks {want})"
        )
        .into());
    }
    Ok(sample)
}

/// Write `rows` rows to a fresh emulator, then read them `rounds` times
/// each way (single stream, and `scan_parallel` at each of `concurrency`),
/// in an order rotated every round; write the medians to `out`.
pub(crate) async fn run(rows: usize, concurrency: &[usize], rounds: usize, out: &Path) -> Res<()> {
    let emulator = bigtable_ttl_emulator::Emulator::start()?;
    let pid = pid_listening_on(emulator.port())
        .ok_or("no process found with the emulator's `-port` argument")?;
    let conn = Connection::emulator(emulator.host(), PROJECT, "bench-parallel")?;
    let table = Table::<Event>::new(conn);
    table.ensure_schema().await?;
    let now = Utc::now();
    let mut writer = table.writer();
    for i in 0..rows {
        writer.send(&event(i, now)).await?;
    }
    writer.finish().await?;
    // Untimed: the first read after the write pays for the write's garbage.
    measure(&table, None, pid, rows).await?;

    let mut contenders: Vec<(String, Option<usize>)> = vec![("stream".into(), None)];
    for &c in concurrency {
        contenders.push((format!("parallel-{c}"), Some(c)));
    }
    let mut samples: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    for round in 0..rounds.max(1) {
        for i in 0..contenders.len() {
            let (name, c) = &contenders[(i + round) % contenders.len()];
            let s = measure(&table, *c, pid, rows).await?;
            eprintln!(
                "round {round}: {name}: {:.3} s, client CPU {:.3} s, emulator CPU {:.3} s, machine {:.2} s",
                s.wall, s.client_cpu, s.emulator_cpu, s.machine_cpu
            );
            samples.entry(name.clone()).or_default().push(s);
        }
    }

    let stream_walls: Vec<f64> = samples["stream"].iter().map(|s| s.wall).collect();
    let mut results = serde_json::Map::new();
    for (name, c) in &contenders {
        let runs = &samples[name];
        let parts = match c {
            Some(c) => table.split_scan(Scan::all(), c * 4).await?.len(),
            None => 1,
        };
        // Rounds ran the contenders back to back: the ratio within a round
        // sees the same machine.
        let speedup = median(
            stream_walls
                .iter()
                .zip(runs)
                .map(|(stream, s)| stream / s.wall),
        );
        results.insert(
            name.clone(),
            json!({
                "concurrency": c,
                "parts": parts,
                "wall_s": median(runs.iter().map(|s| s.wall)),
                "client_cpu_s": median(runs.iter().map(|s| s.client_cpu)),
                "emulator_cpu_s": median(runs.iter().map(|s| s.emulator_cpu)),
                // CPU of everything else: other processes sharing the machine.
                "others_cpu_s": median(runs.iter().map(|s| s.machine_cpu - s.client_cpu - s.emulator_cpu)),
                "speedup": speedup,
                "runs": runs.iter().map(|s| json!({
                    "wall_s": s.wall,
                    "client_cpu_s": s.client_cpu,
                    "emulator_cpu_s": s.emulator_cpu,
                    "machine_cpu_s": s.machine_cpu,
                })).collect::<Vec<_>>(),
            }),
        );
    }
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let value = json!({
        "rows": rows,
        "rounds": rounds.max(1),
        "cores": cores,
        "date": Utc::now().format("%Y-%m-%d").to_string(),
        "order": contenders.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        "contenders": Value::Object(results),
    });
    std::fs::write(out, serde_json::to_string_pretty(&value)?)?;
    drop(emulator);
    Ok(())
}

/// The "Parallel scan" section of `BENCHMARKS.md`, from `ttl-bench
/// parallel`'s JSON.
pub(crate) fn section(report: &Value) -> String {
    let rows = report["rows"].as_u64().unwrap_or(0);
    let cores = report["cores"].as_u64().unwrap_or(0);
    let num = |read: &Value, key: &str| read[key].as_f64().unwrap_or(f64::NAN);
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| read | wall | rows/s | single stream / this, wall | client CPU | emulator CPU | cores busy: emulator + client + other processes |"
    );
    let _ = writeln!(table, "|---|---|---|---|---|---|---|");
    // The busiest parallel read (the machine's cores busiest over its wall
    // time), for the verdict below: what, cores of the emulator, the client
    // and the rest, and the speedup.
    let mut busiest: Option<(String, [f64; 3], f64)> = None;
    for name in report["order"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        let read = &report["contenders"][name];
        let what = match read["concurrency"].as_u64() {
            None => "`stream`, one stream".to_owned(),
            Some(n) => format!("`scan_parallel`, {n} at once ({} parts)", read["parts"]),
        };
        let wall = num(read, "wall_s");
        #[allow(clippy::cast_precision_loss)]
        let rate = rows as f64 / wall;
        // Other processes' share is a difference of tick counts (10 ms):
        // shown no lower than nothing.
        let busy = ["emulator_cpu_s", "client_cpu_s", "others_cpu_s"]
            .map(|k| num(read, k) / wall)
            .map(|cores| cores.max(0.0));
        let _ = writeln!(
            table,
            "| {what} | {wall:.3} s | {rate:.0} | {:.2} | {:.3} s | {:.3} s | {:.2} + {:.2} + {:.2} = {:.2} |",
            num(read, "speedup"),
            num(read, "client_cpu_s"),
            num(read, "emulator_cpu_s"),
            busy[0],
            busy[1],
            busy[2],
            busy.iter().sum::<f64>(),
        );
        if read["concurrency"].is_u64()
            && busiest
                .as_ref()
                .is_none_or(|b| busy.iter().sum::<f64>() > b.1.iter().sum::<f64>())
        {
            busiest = Some((what, busy, num(read, "speedup")));
        }
    }
    let stream = &report["contenders"]["stream"];
    let stream_wall = num(stream, "wall_s");
    let mut verdict = format!(
        "The single stream keeps the emulator at {:.2} cores and the client at {:.2}.",
        num(stream, "emulator_cpu_s") / stream_wall,
        num(stream, "client_cpu_s") / stream_wall,
    );
    if let Some((what, [emulator, client, others], speedup)) = busiest {
        let total = emulator + client + others;
        #[allow(clippy::cast_precision_loss)]
        let saturated = total >= 0.85 * cores as f64;
        let _ = write!(
            verdict,
            " The busiest parallel read, {what}, keeps the emulator at {emulator:.2} cores and \
             the client at {client:.2}, other processes {others:.2}: {total:.2} of the \
             machine's {cores}, for {speedup:.2}× the single stream's throughput. "
        );
        verdict.push_str(if saturated && emulator > client + others {
            "**The machine is saturated and the emulator, which takes most of it, is the \
             limit**: more parts at once cannot go faster here. (Against Cloud Bigtable the \
             parts are served by the cluster, not by the client's cores.)"
        } else if saturated && others >= emulator {
            "**The machine is saturated, largely by other processes**: these figures are \
             disturbed; run again on a quiet machine."
        } else if saturated {
            "**The machine is saturated**, the client taking a large share (it decodes on \
             the polling task)."
        } else {
            "The machine is not saturated: neither side's CPU is the limit here."
        });
        if others > 0.25 && !(saturated && others >= emulator) {
            verdict.push_str(
                " Other processes took a noticeable share meanwhile: the machine was shared.",
            );
        }
    }
    format!(
        "{HEADING}\n\n\
         `Table::scan_parallel(Scan::all(), n)` against `Table::stream(Scan::all())` over \
         the same {rows} rows (the `Event` workload above, filtered and decoded), in one \
         run (`ttl-bench parallel`) on one dedicated emulator: the rows written once, one \
         untimed read, then {} rounds of every read in an order rotated each round; \
         medians. Every read is checked to return each row once (row count and the sum of \
         a column). **client CPU** is the bench process's, **emulator CPU** the emulator \
         process's, both from `/proc/<pid>/task/*/schedstat` over the read; **cores busy** \
         is CPU / wall for each, and for every other process together (the machine's busy \
         time in `/proc/stat` less the two), medians. The parts are cut at the keys the emulator's \
         `SampleRowKeys` returns (about one row in a hundred, at random), at most 4 per \
         stream at once. Rows come in no overall order. Run on {} ({cores} cores).\n\n\
         {table}\n{verdict}\n\n\
         Machine load: the *other processes* share of **cores busy** above. Not measured: \
         Cloud Bigtable, where each part is served by its own node (here one emulator on \
         the client's two cores serves them all), TLS and tokens, a real network.\n\n\
         Command: `cargo build --release -p ttl-bench && target/release/ttl-bench parallel \
         --rows {rows} --out bench/target/parallel.json --update BENCHMARKS.md` (also run by \
         `bench/run.sh`).\n",
        report["rounds"],
        report["date"].as_str().unwrap_or("?"),
    )
}
