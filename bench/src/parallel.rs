//! `ttl-bench parallel`: `Table::scan_parallel` against one
//! `Table::stream` of the same rows, in one run on one dedicated emulator,
//! with the CPU time of the client and of the emulator beside the wall time
//! (on a small machine the emulator may be what limits both).

use std::path::Path;
use std::pin::pin;
use std::time::Instant;

use bigtable_ttl::{Connection, Expiring, Scan, Table};
use chrono::Utc;
use futures_util::{Stream, TryStreamExt as _};
use serde_json::{json, Value};
use ttl_bench::stats::median;
use ttl_bench::{cpu_seconds, event, machine_busy_seconds, process_cpu_seconds, Event};

use crate::report::write_report;
use crate::{Res, PROJECT};

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

/// The parts `scan_parallel` reads at once, each against one stream.
const CONCURRENCY: [usize; 2] = [2, 4];

/// Write `rows` rows to a fresh emulator, then read them `rounds` times
/// each way (single stream, and `scan_parallel` at each of
/// [`CONCURRENCY`]), in an order rotated every round; write the medians to
/// `out`.
pub(crate) async fn run(rows: usize, rounds: usize, out: &Path) -> Res<()> {
    let (emulator, pid) = ttl_bench::emulator()?;
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

    let parallel = CONCURRENCY
        .iter()
        .map(|&c| (format!("parallel-{c}"), Some(c)));
    let contenders: Vec<_> = [("stream".to_owned(), None)]
        .into_iter()
        .chain(parallel)
        .collect();
    let load_start = ttl_bench::load_average();
    let mut samples: Vec<Vec<Sample>> = contenders.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds.max(1) {
        for i in 0..contenders.len() {
            let k = (i + round) % contenders.len();
            let (name, c) = &contenders[k];
            let s = measure(&table, *c, pid, rows).await?;
            eprintln!(
                "round {round}: {name}: {:.3} s, client CPU {:.3} s, emulator CPU {:.3} s, machine {:.2} s",
                s.wall, s.client_cpu, s.emulator_cpu, s.machine_cpu
            );
            samples[k].push(s);
        }
    }

    let mut results = serde_json::Map::new();
    for ((name, c), runs) in contenders.iter().zip(&samples) {
        let parts = match c {
            Some(c) => table.split_scan(Scan::all(), c * 4).await?.len(),
            None => 1,
        };
        // Rounds ran the contenders back to back: the ratio within a round
        // sees the same machine.
        let speedup = median(
            samples[0]
                .iter()
                .zip(runs)
                .map(|(one, s)| one.wall / s.wall),
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
    let report = json!({
        "rows": rows,
        "rounds": rounds.max(1),
        "load_average": [load_start, ttl_bench::load_average()],
        "order": contenders.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "contenders": Value::Object(results),
    });
    write_report(out, report)
}
