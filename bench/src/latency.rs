//! `ttl-bench latency --ops N [--rounds R] --out FILE [--update BENCHMARKS.md]`:
//! the latency of single-row calls against the emulator, one call at a
//! time, the library against hand-written `bigtable_rs` sending the same
//! request (issue 23, item 5):
//!
//! * `get`: `Table::get` of a stored row, against a `ReadRows` of that key
//!   with the typed reader's filter, decoded by hand;
//! * `put`: `Table::put`, against a `MutateRow` of [`ttl_bench::hand_row_mutations`];
//! * `insert_if_absent`: `Table::insert_if_absent` on a fresh key, against a
//!   `CheckAndMutateRow` of [`ttl_bench::hand_insert`].
//!
//! One emulator; in each round every operation runs `N` calls per
//! contender, in blocks of 50 calls, the contenders alternating block by
//! block. Every call's wall time is kept; p50 and p99 are over all rounds'
//! calls. The
//! emulator's CPU time (and the client's) over each batch of calls, per
//! call, stands beside: on this machine most of a call's time is the
//! emulator's.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use bigtable_rs::bigtable::{BigTable, BigTableConnection};
use bigtable_rs::google::bigtable::v2::{
    row_filter::{Chain, Filter},
    MutateRowRequest, ReadRowsRequest, RowFilter, RowSet, TimestampRange,
};
use bigtable_ttl::{BigtableRow, Connection, Insert, Table};
use chrono::Utc;
use serde_json::{json, Value};
use ttl_bench::{
    cpu_seconds, event, events, hand_decode, hand_entry, hand_insert, pid_listening_on,
    process_cpu_seconds, Event,
};

use crate::{Res, PROJECT};

/// The section's heading in `BENCHMARKS.md`.
pub(crate) const HEADING: &str = "## Single-row latency";

/// Rows stored before the rounds, read by the `get`s in turn.
const STORED: usize = 1_000;
const OPS: [&str; 3] = ["get", "put", "insert_if_absent"];
const WHO: [&str; 2] = ["lib", "raw"];
/// Calls in a block: the contenders alternate block by block.
const BLOCK: usize = 50;

/// One contender's calls of one operation in one round.
struct Batch {
    micros: Vec<f64>,
    emulator_cpu_s: f64,
    client_cpu_s: f64,
}

/// The two clients on one emulator.
struct Clients {
    lib: Table<Event>,
    raw: BigTable,
    table_name: String,
}

/// Measure, write the JSON to `out`, and with `update` rewrite that file's
/// section.
pub(crate) async fn run(ops: usize, rounds: usize, out: &Path, update: Option<&Path>) -> Res<()> {
    let emulator = bigtable_ttl_emulator::Emulator::start()?;
    let pid = pid_listening_on(emulator.port())
        .ok_or("no process found with the emulator's `-port` argument")?;
    let host = emulator.host().to_owned();
    let instance = "bench-latency";
    let lib = Table::<Event>::new(Connection::emulator(&host, PROJECT, instance)?);
    lib.ensure_schema().await?;
    let rs = BigTableConnection::new_with_emulator(&host, PROJECT, instance, false, 1, None)?;
    let raw = rs.client();
    let table_name = raw.get_full_table_name(Event::SCHEMA.table);
    let clients = Clients {
        lib,
        raw,
        table_name,
    };
    clients.lib.put_all(&events(STORED, Utc::now())).await?;

    let mut samples: Vec<Vec<Vec<Batch>>> = (0..OPS.len())
        .map(|_| (0..WHO.len()).map(|_| Vec::new()).collect())
        .collect();
    // Fresh keys for the inserts, never reused; the puts overwrite stored rows.
    let mut next_fresh = STORED;
    // Untimed warm-up: connections, the emulator's first calls.
    for (o, w) in (0..OPS.len()).flat_map(|o| (0..WHO.len()).map(move |w| (o, w))) {
        batch(&clients, o, w, 50, &mut next_fresh, pid).await?;
    }
    for round in 0..rounds.max(1) {
        for o in 0..OPS.len() {
            let mut merged: Vec<Batch> = (0..WHO.len())
                .map(|_| Batch {
                    micros: Vec::with_capacity(ops),
                    emulator_cpu_s: 0.0,
                    client_cpu_s: 0.0,
                })
                .collect();
            // Blocks of calls, the contenders alternating block by block:
            // both see the same machine, however its load moves.
            for block in 0..ops.div_ceil(BLOCK) {
                let calls = BLOCK.min(ops - block * BLOCK);
                for k in 0..WHO.len() {
                    let w = (k + block + round) % WHO.len();
                    let b = batch(&clients, o, w, calls, &mut next_fresh, pid).await?;
                    let m = &mut merged[w];
                    m.micros.extend(b.micros);
                    m.emulator_cpu_s += b.emulator_cpu_s;
                    m.client_cpu_s += b.client_cpu_s;
                }
            }
            for (w, b) in merged.into_iter().enumerate() {
                eprintln!(
                    "latency round {round}: {} {}: p50 {:.0} µs, p99 {:.0} µs, emulator {:.0} µs CPU a call",
                    OPS[o],
                    WHO[w],
                    percentile(&b.micros, 0.5),
                    percentile(&b.micros, 0.99),
                    b.emulator_cpu_s / ops as f64 * 1e6
                );
                samples[o][w].push(b);
            }
        }
    }
    drop(emulator);

    let mut results = serde_json::Map::new();
    for (o, op) in OPS.iter().enumerate() {
        let mut per_op = serde_json::Map::new();
        for (w, who) in WHO.iter().enumerate() {
            let batches = &samples[o][w];
            let all: Vec<f64> = batches.iter().flat_map(|b| b.micros.clone()).collect();
            let calls = all.len() as f64;
            per_op.insert(
                (*who).to_owned(),
                json!({
                    "p50_us": percentile(&all, 0.5),
                    "p99_us": percentile(&all, 0.99),
                    "mean_us": all.iter().sum::<f64>() / calls,
                    "emulator_cpu_us": batches.iter().map(|b| b.emulator_cpu_s).sum::<f64>() / calls * 1e6,
                    "client_cpu_us": batches.iter().map(|b| b.client_cpu_s).sum::<f64>() / calls * 1e6,
                    "round_p50_us": batches.iter().map(|b| percentile(&b.micros, 0.5)).collect::<Vec<_>>(),
                }),
            );
        }
        results.insert((*op).to_owned(), Value::Object(per_op));
    }
    let value = json!({
        "ops": ops,
        "rounds": rounds.max(1),
        "cores": std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        "date": Utc::now().format("%Y-%m-%d").to_string(),
        "results": Value::Object(results),
    });
    std::fs::write(out, serde_json::to_string_pretty(&value)?)?;
    let text = section(&value);
    eprintln!("{text}");
    if let Some(path) = update {
        ttl_bench::sections::update_file(path, HEADING, &text)?;
        eprintln!("{} updated", path.display());
    }
    Ok(())
}

/// `n` calls of operation `op` by contender `who`, one at a time.
async fn batch(
    clients: &Clients,
    op: usize,
    who: usize,
    n: usize,
    next_fresh: &mut usize,
    emulator: u32,
) -> Res<Batch> {
    let mut micros = Vec::with_capacity(n);
    let (emulator0, client0) = (process_cpu_seconds(emulator), cpu_seconds());
    for i in 0..n {
        let now = Utc::now();
        let row = match OPS[op] {
            "get" | "put" => event(i % STORED, now),
            _ => {
                *next_fresh += 1;
                event(*next_fresh, now)
            }
        };
        let start = Instant::now();
        call(clients, OPS[op], WHO[who], &row).await?;
        micros.push(start.elapsed().as_secs_f64() * 1e6);
    }
    Ok(Batch {
        micros,
        emulator_cpu_s: process_cpu_seconds(emulator) - emulator0,
        client_cpu_s: cpu_seconds() - client0,
    })
}

/// One call, its outcome checked.
async fn call(clients: &Clients, op: &str, who: &str, row: &Event) -> Res<()> {
    let now = Utc::now();
    match (op, who) {
        ("get", "lib") => {
            let got = clients
                .lib
                .get(&row.id)
                .await?
                .ok_or("a stored row is missing")?;
            std::hint::black_box(got);
        }
        ("get", "raw") => {
            let now_us = now.timestamp_micros();
            let filter = |f| RowFilter { filter: Some(f) };
            let request = ReadRowsRequest {
                table_name: clients.table_name.clone(),
                rows: Some(RowSet {
                    row_keys: vec![row.id.as_bytes().to_vec()],
                    row_ranges: Vec::new(),
                }),
                filter: Some(filter(Filter::Chain(Chain {
                    filters: vec![
                        filter(Filter::TimestampRangeFilter(TimestampRange {
                            start_timestamp_micros: now_us - now_us.rem_euclid(1000) + 1000,
                            end_timestamp_micros: 0,
                        })),
                        filter(Filter::CellsPerColumnLimitFilter(1)),
                    ],
                }))),
                rows_limit: 1,
                ..ReadRowsRequest::default()
            };
            let rows = clients.raw.clone().read_rows(request).await?;
            let (key, cells) = rows.first().ok_or("a stored row is missing")?;
            std::hint::black_box(hand_decode(key, cells)?);
        }
        ("put", "lib") => {
            clients.lib.put(row).await?;
        }
        ("put", "raw") => {
            let entry = hand_entry(row, now)?;
            let request = MutateRowRequest {
                table_name: clients.table_name.clone(),
                row_key: entry.row_key,
                mutations: entry.mutations,
                ..MutateRowRequest::default()
            };
            clients.raw.clone().mutate_row(request).await?;
        }
        ("insert_if_absent", "lib") => {
            if !matches!(
                clients.lib.insert_if_absent(row).await?,
                Insert::Inserted(_)
            ) {
                return Err("a fresh key was taken".into());
            }
        }
        ("insert_if_absent", "raw") => {
            let request = hand_insert(row, now, &clients.table_name)?;
            if clients
                .raw
                .clone()
                .check_and_mutate_row(request)
                .await?
                .predicate_matched
            {
                return Err("a fresh key was taken".into());
            }
        }
        other => return Err(format!("latency: no call {other:?}").into()),
    }
    Ok(())
}

/// The `q` quantile of `xs` (nearest rank).
fn percentile(xs: &[f64], q: f64) -> f64 {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    sorted[((last as f64) * q).round() as usize]
}

/// The section, from `ttl-bench latency`'s JSON.
pub(crate) fn section(report: &Value) -> String {
    let num = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let mut table = String::from(
        "| call | contender | p50 | p99 | library / hand-written, p50 (median of rounds) | client CPU a call | emulator CPU a call |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for op in OPS {
        let r = &report["results"][op];
        let rounds = |who: &str| -> Vec<f64> {
            r[who]["round_p50_us"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .collect()
        };
        let mut ratios: Vec<f64> = rounds("lib")
            .iter()
            .zip(rounds("raw"))
            .map(|(l, h)| l / h)
            .collect();
        ratios.sort_by(f64::total_cmp);
        let ratio = ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN);
        for who in WHO {
            let c = &r[who];
            let name = if who == "lib" {
                format!("library (`Table::{op}`)")
            } else {
                "hand-written `bigtable_rs`".to_owned()
            };
            let _ = writeln!(
                table,
                "| `{op}` | {name} | {:.0} µs | {:.0} µs | {} | {:.0} µs | {:.0} µs |",
                num(c, "p50_us"),
                num(c, "p99_us"),
                if who == "lib" {
                    format!("{ratio:.2}")
                } else {
                    String::new()
                },
                num(c, "client_cpu_us"),
                num(c, "emulator_cpu_us"),
            );
        }
    }
    format!(
        "{HEADING}\n\n\
         Single-row calls one at a time against the emulator (`ttl-bench latency`, \
         `bench/src/latency.rs`): `get` of a stored row (the typed reader's filter, decoded), \
         `put` of a whole row, `insert_if_absent` on a fresh key (a `CheckAndMutateRow` \
         whose predicate is the typed reader's filter); the library against hand-written \
         `bigtable_rs` sending the same requests (asserted identical in the bench's tests \
         for the writes). {ops} calls per contender and call per round, {rounds} rounds, in \
         blocks of {BLOCK} calls, the contenders alternating block by block; p50 and p99 \
         over every call of every round, the ratio of p50s taken within each round. \
         **client CPU** and **emulator CPU** are each process's CPU time over a batch of \
         calls (`/proc/<pid>/task/*/schedstat`), per call: on this machine a call's time is \
         mostly the emulator's. Run on {date} ({cores} cores).\n\n\
         {table}\n\
         Command: `cargo build --release -p ttl-bench && target/release/ttl-bench latency \
         --ops {ops} --out bench/target/results/latency.json --update BENCHMARKS.md` (also \
         run by `bench/run.sh`).\n",
        ops = report["ops"],
        rounds = report["rounds"],
        date = report["date"].as_str().unwrap_or("?"),
        cores = report["cores"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The quantiles are elements of the input, compared exactly.
    #[allow(clippy::float_cmp)]
    #[test]
    fn percentiles_are_nearest_rank() {
        let xs: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.5), 51.0);
        assert_eq!(percentile(&xs, 0.99), 99.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    /// The ratio is the median of the rounds' ratios, not the ratio of the
    /// pooled p50s.
    #[test]
    fn the_ratio_pairs_rounds() {
        let who = |p50s: &[f64]| {
            json!({"p50_us": 1.0, "p99_us": 2.0, "client_cpu_us": 3.0,
            "emulator_cpu_us": 4.0, "round_p50_us": p50s})
        };
        let report = json!({
            "ops": 10, "rounds": 3, "cores": 2, "date": "d",
            "results": {
                "get": {"lib": who(&[100.0, 300.0, 110.0]), "raw": who(&[100.0, 100.0, 100.0])},
                "put": {"lib": who(&[1.0]), "raw": who(&[2.0])},
                "insert_if_absent": {"lib": who(&[1.0]), "raw": who(&[1.0])},
            }
        });
        let text = section(&report);
        assert!(
            text.contains("| `get` | library (`Table::get`) | 1 µs | 2 µs | 1.10 |"),
            "{text}"
        );
        assert!(text.contains("| 0.50 |") && text.starts_with(HEADING));
    }
}
