//! `ttl-bench latency`: single-row calls one at a time, the library against
//! hand-written `bigtable_rs` sending the same requests (`calls`), against
//! the emulator and the null server. In each round every operation runs `N`
//! calls per contender in blocks of [`BLOCK`], the contenders alternating
//! block by block, each block's first call timed apart; the library's p50
//! and p99 to a contender's with an interval from a paired block bootstrap
//! (`stats::ratios`).

use std::path::Path;
use std::time::Instant;

use chrono::Utc;
use serde_json::{json, Value};
use ttl_bench::stats::{quantile, ratios, Ratio};
use ttl_bench::{cpu_seconds, event, process_cpu_seconds};

use crate::calls::{
    call, each_target, emulator_clients, null_clients, Clients, Target, FAILED_AT_MOST, OPS,
    STORED, WHO,
};
use crate::report::write_report;
use crate::Res;

/// Calls in a block: after a switch a contender's first calls run slower
/// (the first about 1.5 times, the next four a few percent), so at 250 the
/// first is timed apart and the next few are 2 % of the calls, and a block
/// (40 to 100 ms) is still short beside the load's swings.
const BLOCK: usize = 250;
/// One contender's calls of one operation.
#[derive(Clone, Default)]
struct Batch {
    /// The steady calls.
    micros: Vec<f64>,
    /// The first call of each block, timed apart (see [`batch`]).
    first: Vec<f64>,
    /// Calls made, the first ones included (the CPU time is theirs).
    made: usize,
    /// Calls that failed (their time is in `micros`: a caller waited it).
    failed: usize,
    server_cpu_s: f64,
    client_cpu_s: f64,
}

impl Batch {
    fn add(&mut self, other: &Batch) {
        self.micros.extend_from_slice(&other.micros);
        self.first.extend_from_slice(&other.first);
        self.made += other.made;
        self.failed += other.failed;
        self.server_cpu_s += other.server_cpu_s;
        self.client_cpu_s += other.client_cpu_s;
    }
}

/// Measure against every target, write the JSON to `out`.
pub(crate) async fn run(ops: usize, rounds: usize, targets: &[Target], out: &Path) -> Res<()> {
    let measured = each_target(targets, async |target| match target {
        Target::Emulator => {
            let (_emulator, pid, clients) = emulator_clients("bench-latency").await?;
            measure(&clients, ops, rounds, STORED, pid).await
        }
        Target::Null => {
            let (server, clients) = null_clients()?;
            let results = measure(&clients, ops, rounds, 1, server.child.id()).await?;
            server.stop()?;
            Ok(results)
        }
    })
    .await?;
    let report = json!({"ops": ops, "rounds": rounds.max(1), "targets": measured});
    write_report(out, report)
}

/// The rounds against one server (process `pid`), `stored` rows there.
async fn measure(
    clients: &Clients,
    ops: usize,
    rounds: usize,
    stored: usize,
    pid: u32,
) -> Res<Value> {
    // Every round's calls, `[operation][contender]`.
    let mut total = vec![vec![Batch::default(); WHO.len()]; OPS.len()];
    // Every block's steady calls, `[operation][block][contender]`: the
    // contenders' blocks side by side, for the ratios' intervals.
    let mut blocks: Vec<Vec<Vec<Vec<f64>>>> = vec![Vec::new(); OPS.len()];
    // Each round's blocks in the order they ran, `[operation][round]`:
    // whose, and its first call (see `switch_ratio`).
    let mut firsts: Vec<Vec<Vec<(usize, f64)>>> = vec![Vec::new(); OPS.len()];
    // Fresh keys for the inserts, never reused; the puts overwrite stored rows.
    let mut next_fresh = STORED;
    // Untimed warm-up: connections, the server's first calls.
    for o in 0..OPS.len() {
        for w in 0..WHO.len() {
            batch(clients, o, w, 50, &mut next_fresh, stored, pid).await?;
        }
    }
    for round in 0..rounds.max(1) {
        for o in 0..OPS.len() {
            let mut this_round = vec![Batch::default(); WHO.len()];
            let mut order = Vec::new();
            for block in 0..ops.div_ceil(BLOCK) {
                let calls = BLOCK.min(ops - block * BLOCK);
                let mut side_by_side = vec![Vec::new(); WHO.len()];
                for k in 0..WHO.len() {
                    let w = (k + block + round) % WHO.len();
                    let b = batch(clients, o, w, calls, &mut next_fresh, stored, pid).await?;
                    order.push((w, b.first[0]));
                    this_round[w].add(&b);
                    side_by_side[w] = b.micros;
                }
                blocks[o].push(side_by_side);
            }
            firsts[o].push(order);
            for (w, b) in this_round.iter().enumerate() {
                eprintln!(
                    "latency round {round}: {} {}: p50 {:.0} µs, p99 {:.0} µs, server {:.0} µs CPU a call",
                    OPS[o],
                    WHO[w],
                    quantile(&b.micros, 0.5),
                    quantile(&b.micros, 0.99),
                    b.server_cpu_s / b.made as f64 * 1e6
                );
                total[o][w].add(b);
            }
        }
    }

    let mut results = serde_json::Map::new();
    for (o, op) in OPS.iter().enumerate() {
        let mut per_op = serde_json::Map::new();
        for (w, who) in WHO.iter().enumerate() {
            let b = &total[o][w];
            let made = b.made as f64;
            if b.failed as f64 > made * FAILED_AT_MOST {
                let failed = b.failed;
                return Err(
                    format!("latency: {failed} of {made} {op} calls of {who} failed").into(),
                );
            }
            let mut figures = json!({
                "failed": b.failed,
                "p50_us": quantile(&b.micros, 0.5),
                "p99_us": quantile(&b.micros, 0.99),
                "first_p50_us": quantile(&b.first, 0.5),
                "server_cpu_us": b.server_cpu_s / made * 1e6,
                "client_cpu_us": b.client_cpu_s / made * 1e6,
            });
            if w != 0 {
                let pairs: Vec<(&[f64], &[f64])> = blocks[o]
                    .iter()
                    .map(|side_by_side| (&side_by_side[0][..], &side_by_side[w][..]))
                    .collect();
                let seed = (o * WHO.len() + w) as u64;
                let [p50, p99] = ratios(&pairs, &[0.5, 0.99], seed)[..] else {
                    unreachable!("two quantiles, two ratios")
                };
                let (switch, library_after, after_library) = switch_ratio(&firsts[o], w, seed);
                figures["first_after_library_p50_us"] = json!(after_library);
                figures["library_first_after_p50_us"] = json!(library_after);
                let interval = |r: Ratio| json!([r.value, r.low, r.high]);
                figures["library_ratio"] = json!({
                    "p50": interval(p50), "p99": interval(p99), "switch_p50": interval(switch),
                });
            }
            per_op.insert((*who).to_owned(), figures);
        }
        results.insert((*op).to_owned(), Value::Object(per_op));
    }
    Ok(json!({ "results": Value::Object(results) }))
}

/// The library's first calls after contender `w`'s block against `w`'s
/// first calls after the library's, each back after one block away, from
/// each round's blocks in order, `(contender, first call)`: the ratio of
/// their p50s with its interval (the `i`-th switch each way paired), and the
/// two p50s. First calls after the other hand-written contender, whose code
/// is `w`'s own (tonic), are left out.
fn switch_ratio(rounds: &[Vec<(usize, f64)>], w: usize, seed: u64) -> (Ratio, f64, f64) {
    let after = |who: usize, before: usize| -> Vec<f64> {
        let switches = rounds.iter().flat_map(|blocks| blocks.windows(3));
        let back = switches.filter(|b| (b[0].0, b[1].0, b[2].0) == (who, before, who));
        back.map(|b| b[2].1).collect()
    };
    let (library_after, after_library) = (after(0, w), after(w, 0));
    let pairs: Vec<(&[f64], &[f64])> = library_after
        .chunks(1)
        .zip(after_library.chunks(1))
        .collect();
    let [ratio] = ratios(&pairs, &[0.5], seed)[..] else {
        unreachable!("one quantile, one ratio")
    };
    (
        ratio,
        quantile(&library_after, 0.5),
        quantile(&after_library, 0.5),
    )
}

/// `n` calls of operation `op` by contender `who`, one at a time, after
/// one more timed apart (`first`): the first after the other contenders'
/// blocks finds their code and data in the caches and its own connection
/// idle, a figure of its own, left out of the steady calls.
async fn batch(
    clients: &Clients,
    op: usize,
    who: usize,
    n: usize,
    next_fresh: &mut usize,
    stored: usize,
    server: u32,
) -> Res<Batch> {
    let mut b = Batch {
        micros: Vec::with_capacity(n),
        made: n + 1,
        ..Batch::default()
    };
    let (server0, client0) = (process_cpu_seconds(server), cpu_seconds());
    for i in 0..=n {
        let now = Utc::now();
        let row = if OPS[op] == "insert_if_absent" {
            *next_fresh += 1;
            event(*next_fresh, now)
        } else {
            event(i % stored, now)
        };
        let start = Instant::now();
        let outcome = call(clients, OPS[op], WHO[who], &row, Utc::now()).await;
        let took = start.elapsed().as_secs_f64() * 1e6;
        if i == 0 {
            b.first.push(took);
        } else {
            b.micros.push(took);
        }
        if let Err(e) = outcome {
            eprintln!("latency: {} {}: a call failed: {e}", OPS[op], WHO[who]);
            b.failed += 1;
        }
    }
    b.server_cpu_s = process_cpu_seconds(server) - server0;
    b.client_cpu_s = cpu_seconds() - client0;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library's first calls after `raw`'s block are compared with
    /// `raw`'s after the library's, each after one block away; first calls
    /// after the other tonic contender, or after a longer absence, are left
    /// out.
    // The figures are the inputs' elements and their exact ratio.
    #[allow(clippy::float_cmp)]
    #[test]
    fn first_calls_compare_the_same_switch_each_way() {
        let rounds = [
            vec![
                (0, 99.0),
                (1, 99.0),
                (0, 10.0),
                (1, 5.0),
                (2, 99.0),
                (1, 1.0),
            ],
            vec![
                (1, 99.0),
                (0, 99.0),
                (2, 99.0),
                (0, 99.0),
                (1, 99.0),
                (0, 10.0),
            ],
            vec![(0, 99.0), (1, 99.0), (0, 10.0), (1, 5.0)],
        ];
        let (ratio, library_after, after_library) = switch_ratio(&rounds, 1, 1);
        assert_eq!((library_after, after_library), (10.0, 5.0));
        assert_eq!((ratio.value, ratio.low, ratio.high), (2.0, 2.0, 2.0));
    }
}
