//! Conditional inserts (issue 11): `Table::insert_if_absent` against a
//! hand-written `bigtable_rs` `CheckAndMutateRow` with the same predicate and
//! mutations (`ttl_bench::hand_insert`, the same bytes on the wire as the
//! latency bench's test asserts), on
//! one emulator, in rounds that alternate which goes first. Each insert is
//! on a fresh key, so each one wins and writes. Two shapes: one call at a
//! time (latency-bound) and 16 in flight.

use std::time::Instant;

use bigtable_rs::bigtable::BigTableConnection;
use bigtable_ttl::{BigtableRow, Connection, Insert, Table};
use chrono::Utc;
use futures_util::{stream, StreamExt as _};
use serde_json::{json, Value};
use ttl_bench::stats::{median, quartiles};
use ttl_bench::{cpu_seconds, event, hand_insert, Event};

use crate::{rounds, Res, PROJECT};

/// Calls in flight in the concurrent shape.
const IN_FLIGHT: usize = 16;

/// Which contender.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Who {
    Library,
    Hand,
}

/// Both contenders in both shapes, `ops` inserts each per round; JSON to `out`.
pub async fn conditional(ops: usize, out: &std::path::Path) -> Res<()> {
    let emulator = bigtable_ttl_emulator::Emulator::start()?;
    let host = emulator.host().to_owned();
    let instance = "bench-conditional";
    let table = Table::<Event>::new(Connection::emulator(&host, PROJECT, instance)?);
    table.ensure_schema().await?;
    let rs = BigTableConnection::new_with_emulator(&host, PROJECT, instance, false, 1, None)?;
    let mut results = serde_json::Map::new();
    let mut next_row = 0usize;
    for (shape, in_flight) in [("one_at_a_time", 1), ("concurrent", IN_FLIGHT)] {
        let mut ratios = Vec::new();
        let (mut lib_s, mut hand_s) = (Vec::new(), Vec::new());
        let (mut lib_cpu, mut hand_cpu) = (Vec::new(), Vec::new());
        for round in 0..rounds() {
            let order = if round % 2 == 0 {
                [Who::Library, Who::Hand]
            } else {
                [Who::Hand, Who::Library]
            };
            let mut took = [0.0; 2];
            let mut cpu = [0.0; 2];
            for who in order {
                let first = next_row;
                next_row += ops;
                let cpu_start = cpu_seconds();
                let secs = match who {
                    Who::Library => library(&table, first, ops, in_flight).await?,
                    Who::Hand => hand(&rs, first, ops, in_flight).await?,
                };
                took[usize::from(who == Who::Hand)] = secs;
                cpu[usize::from(who == Who::Hand)] = cpu_seconds() - cpu_start;
            }
            eprintln!(
                "conditional {shape}, round {round}: library {:.3} s ({:.3} s CPU), hand-written {:.3} s ({:.3} s CPU) ({ops} inserts)",
                took[0], cpu[0], took[1], cpu[1]
            );
            lib_cpu.push(cpu[0]);
            hand_cpu.push(cpu[1]);
            lib_s.push(took[0]);
            hand_s.push(took[1]);
            ratios.push(took[1] / took[0]);
        }
        let ratio = quartiles(ratios);
        results.insert(
            shape.to_owned(),
            json!({
                "in_flight": in_flight,
                "library_s": median(lib_s),
                "hand_s": median(hand_s),
                "library_cpu_s": median(lib_cpu),
                "hand_cpu_s": median(hand_cpu),
                "throughput_ratio": ratio.median,
                "throughput_ratio_q1": ratio.q1,
                "throughput_ratio_q3": ratio.q3,
            }),
        );
    }
    results.insert("ops".into(), json!(ops));
    results.insert("rounds".into(), json!(rounds()));
    let results = Value::Object(results);
    eprintln!("{results}");
    std::fs::write(out, serde_json::to_string_pretty(&results)?)?;
    Ok(())
}

/// Inserts of the rows `first..first + ops`, `in_flight` at a time, through
/// the library: the seconds taken.
async fn library(table: &Table<Event>, first: usize, ops: usize, in_flight: usize) -> Res<f64> {
    let now = Utc::now();
    let start = Instant::now();
    let outcomes: Vec<_> = stream::iter(first..first + ops)
        .map(|i| async move { table.insert_if_absent(&event(i, now)).await })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let secs = start.elapsed().as_secs_f64();
    for outcome in outcomes {
        if !matches!(outcome?, Insert::Inserted(_)) {
            return Err("a fresh key was taken".into());
        }
    }
    Ok(secs)
}

/// The same through hand-written `bigtable_rs` calls.
async fn hand(rs: &BigTableConnection, first: usize, ops: usize, in_flight: usize) -> Res<f64> {
    let client = rs.client();
    let table_name = client.get_full_table_name(Event::SCHEMA.table);
    let now = Utc::now();
    let start = Instant::now();
    let outcomes: Vec<_> = stream::iter(first..first + ops)
        .map(|i| {
            let mut client = client.clone();
            let table_name = table_name.clone();
            async move {
                let request = hand_insert(&event(i, now), Utc::now(), &table_name)?;
                let response = client
                    .check_and_mutate_row(request)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<bool, String>(response.predicate_matched)
            }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let secs = start.elapsed().as_secs_f64();
    for matched in outcomes {
        if matched? {
            return Err("a fresh key was taken".into());
        }
    }
    Ok(secs)
}
