//! The expiry feed and the reaper (issue 42), on one emulator:
//!
//! * **reaper throughput**: `Table::reap` against a hand-written
//!   scan-and-delete loop (`bigtable_rs`) doing the same deletes: the same
//!   dead rows (a copy of them in an instance of each contender's own), the
//!   same `MutateRows` batch size, one `DeleteFromColumn` with a time range
//!   ending at the cut-off per column. Rows a second, and rows a second per
//!   client CPU second (this process's CPU, both contenders run in it one
//!   after the other); rounds alternate which goes first.
//! * **feed bytes**: the bytes `Table::expired` receives for a window in
//!   which 1 % of the rows died, against a full scan of the same table
//!   filtered to the struct's family (newest cell of each column: the least
//!   a client must read to find the deaths itself), both counted as the
//!   bytes the server sends through a loopback TCP proxy.
//! * **rate limit**: `Table::reap` with a rate of R rows a second over about
//!   `--rate-seconds` worth of dead rows; the rows reaped over the run's
//!   wall time, against R.
//!
//! `ttl-bench expiry [--rows N] [--feed-rows M] [--rounds R] [--rates 200,1000]
//! [--rate-seconds S] --out FILE`: JSON to FILE (the figures in
//! `BENCHMARKS.md` are written from it by hand).
//!
//! The rows are `Event`s (one-second policy: a cell's timestamp is its
//! expiry) written through a manual clock at the real now, expiring an hour
//! or more later, and judged with the clock moved past their expiries: dead
//! for the library, not yet collected by the emulator's garbage collection,
//! which runs on real time.

use std::num::NonZeroU32;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bigtable_rs::bigtable::BigTableConnection;
use bigtable_rs::google::bigtable::v2::{
    mutate_rows_request::Entry, mutation, row_filter::Chain, row_filter::Filter, ColumnRange,
    MutateRowsRequest, Mutation, ReadRowsRequest, RowFilter, TimestampRange,
};
use bigtable_ttl::ops::{ExpiryWindow, ReapOptions, ReapStatus};
use bigtable_ttl::{BigtableRow, Clock, Connection, Table};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::{StreamExt as _, TryStreamExt as _};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use ttl_bench::{cpu_seconds, event, Event, FAMILY};

use crate::{arg, Res, PROJECT};

/// Rows per page of the reaper, and per `MutateRows` of the hand-written
/// loop: the reaper's default.
const BATCH: usize = 500;
/// The reaper's grace; the hand-written loop's cut-off is as far back.
const GRACE: TimeDelta = TimeDelta::minutes(1);

/// `ttl-bench expiry ...` (see the module doc).
pub async fn main(args: &[String]) -> Res<()> {
    let parse = |name: &str, default: usize| arg(args, name).map_or(Ok(default), |s| s.parse());
    let rows = parse("--rows", 20_000)?;
    let feed_rows = parse("--feed-rows", 100_000)?;
    let rounds = parse("--rounds", 5)?.max(1);
    let rate_seconds = parse("--rate-seconds", 30)?;
    let rates = arg(args, "--rates")
        .unwrap_or_else(|| "200,1000".to_owned())
        .split(',')
        .map(str::parse)
        .collect::<Result<Vec<u32>, _>>()?;
    let out = arg(args, "--out").ok_or("--out FILE")?;
    let emulator = bigtable_ttl_emulator::Emulator::start()?;
    let host = emulator.host().to_owned();
    let started = Utc::now();
    let reaper = throughput(&host, rows, rounds).await?;
    let feed = feed_bytes(&host, feed_rows).await?;
    let mut limits = Vec::new();
    for rate in rates {
        let rate = NonZeroU32::new(rate).ok_or("--rates: a rate of 0")?;
        limits.push(rate_limit(&host, rate, rate_seconds).await?);
    }
    let results = json!({
        "date": started.to_rfc3339(),
        "reaper": reaper,
        "feed": feed,
        "rate_limit": limits,
    });
    eprintln!("{results:#}");
    std::fs::write(out, serde_json::to_string_pretty(&results)?)?;
    Ok(())
}

/// A table of `Event`s in `instance`, `n` rows written at `t0` (the real
/// now) expiring at `t0 + 1 h + (i % 1000) ms`, its clock then moved to
/// `t0 + 2 h`: every row dead for the library, none collected.
async fn dead_rows(host: &str, instance: &str, n: usize) -> Res<Table<Event>> {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let table = Table::<Event>::new(Connection::emulator(host, PROJECT, instance)?)
        .with_clock(clock.clone());
    table.ensure_schema().await?;
    let spread = |i: usize| TimeDelta::milliseconds(i64::try_from(i % 1000).unwrap_or(0));
    let rows: Vec<Event> = (0..n)
        .map(|i| {
            let mut e = event(i, t0);
            e.expires_at = t0 + TimeDelta::hours(1) + spread(i);
            e
        })
        .collect();
    for chunk in rows.chunks(20_000) {
        table.put_all(chunk).await?;
    }
    clock.set(t0 + TimeDelta::hours(2));
    Ok(table)
}

// ----- reaper throughput --------------------------------------------------------

/// Rounds of the reaper against the hand-written loop, `rows` dead rows each.
async fn throughput(host: &str, rows: usize, rounds: usize) -> Res<Value> {
    let mut runs = Vec::new();
    for round in 0..rounds {
        let lib_table = dead_rows(host, &format!("reap-lib-{round}"), rows).await?;
        let hand_table = dead_rows(host, &format!("reap-hand-{round}"), rows).await?;
        let mut lib = None;
        let mut hand = None;
        for library_first in [round % 2 == 0, round % 2 == 1] {
            if library_first {
                lib = Some(measure(|| reap_with_library(&lib_table)).await?);
            } else {
                hand = Some(measure(|| reap_by_hand(host, &hand_table)).await?);
            }
        }
        let (lib, hand) = (lib.ok_or("no library run")?, hand.ok_or("no hand run")?);
        for (who, run, table) in [("library", &lib, &lib_table), ("hand", &hand, &hand_table)] {
            if run.rows != rows as u64 {
                return Err(format!("{who} deleted {} rows of {rows}", run.rows).into());
            }
            let left = rows_left(host, table).await?;
            if left != 0 {
                return Err(format!("{who} left {left} rows").into());
            }
        }
        eprintln!(
            "reaper round {round}: library {:.2} s ({:.2} s CPU), hand-written {:.2} s ({:.2} s CPU), {rows} rows",
            lib.wall_s, lib.cpu_s, hand.wall_s, hand.cpu_s
        );
        runs.push((lib, hand));
    }
    let n = rows as f64;
    let median_of = |f: &dyn Fn(&(Run, Run)) -> f64| {
        let mut xs: Vec<f64> = runs.iter().map(f).collect();
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    Ok(json!({
        "rows": rows,
        "batch": BATCH,
        "rounds": rounds,
        "library_rows_per_s": median_of(&|(l, _)| n / l.wall_s),
        "hand_rows_per_s": median_of(&|(_, h)| n / h.wall_s),
        "library_rows_per_cpu_s": median_of(&|(l, _)| n / l.cpu_s),
        "hand_rows_per_cpu_s": median_of(&|(_, h)| n / h.cpu_s),
        // Per round, then the median: each round's pair ran side by side.
        "ratio_per_cpu": median_of(&|(l, h)| h.cpu_s / l.cpu_s),
        "ratio_wall": median_of(&|(l, h)| h.wall_s / l.wall_s),
        "ratio_per_cpu_min": runs.iter().map(|(l, h)| h.cpu_s / l.cpu_s).fold(f64::INFINITY, f64::min),
        "ratio_per_cpu_max": runs.iter().map(|(l, h)| h.cpu_s / l.cpu_s).fold(0.0, f64::max),
    }))
}

/// One contender's run: rows deleted, wall and CPU seconds.
struct Run {
    rows: u64,
    wall_s: f64,
    cpu_s: f64,
}

async fn measure<F: std::future::Future<Output = Res<u64>>>(f: impl FnOnce() -> F) -> Res<Run> {
    let cpu = cpu_seconds();
    let start = Instant::now();
    let rows = f().await?;
    Ok(Run {
        rows,
        wall_s: start.elapsed().as_secs_f64(),
        cpu_s: cpu_seconds() - cpu,
    })
}

async fn reap_with_library(table: &Table<Event>) -> Res<u64> {
    let options = ReapOptions::new()
        .with_grace(GRACE.to_std()?)
        .with_page_rows(BATCH);
    match table
        .reap(&options, None, |_| ControlFlow::Continue(()))
        .await?
    {
        ReapStatus::Done(p) => Ok(p.rows_reaped),
        other => Err(format!("the reaper stopped: {other:?}").into()),
    }
}

fn filter(f: Filter) -> RowFilter {
    RowFilter { filter: Some(f) }
}

fn family_filter() -> RowFilter {
    filter(Filter::ColumnRangeFilter(ColumnRange {
        family_name: FAMILY.to_owned(),
        start_qualifier: None,
        end_qualifier: None,
    }))
}

/// What a careful programmer writes by hand: read the family's cells whose
/// timestamp is below the cut-off (expired more than the grace ago: under
/// the one-second policy a cell's timestamp is its expiry), and delete each
/// column read with a `DeleteFromColumn` whose time range ends at the
/// cut-off (so a cell written since, or still live, is never deleted),
/// `BATCH` rows per `MutateRows`. The rows deleted.
async fn reap_by_hand(host: &str, table: &Table<Event>) -> Res<u64> {
    let conn = table.connection();
    let rs = BigTableConnection::new_with_emulator(host, PROJECT, conn.instance(), false, 1, None)?;
    let mut client = rs.client();
    let table_name = client.get_full_table_name(Event::SCHEMA.table);
    let now = table.clock().now() - GRACE;
    let cutoff = now.timestamp_micros() - now.timestamp_micros().rem_euclid(1000);
    let request = ReadRowsRequest {
        table_name: table_name.clone(),
        filter: Some(filter(Filter::Chain(Chain {
            filters: vec![
                family_filter(),
                filter(Filter::TimestampRangeFilter(TimestampRange {
                    start_timestamp_micros: 0,
                    end_timestamp_micros: cutoff,
                })),
            ],
        }))),
        ..ReadRowsRequest::default()
    };
    let mut rows = std::pin::pin!(client.clone().stream_rows(request).await?);
    let mut batch = Vec::with_capacity(BATCH);
    let mut deleted = 0;
    loop {
        let next = rows.next().await.transpose()?;
        let last = next.is_none();
        if let Some((key, cells)) = next {
            let mut qualifiers: Vec<Vec<u8>> = cells.into_iter().map(|c| c.qualifier).collect();
            qualifiers.dedup();
            let mutations = qualifiers
                .into_iter()
                .map(|q| Mutation {
                    mutation: Some(mutation::Mutation::DeleteFromColumn(
                        mutation::DeleteFromColumn {
                            family_name: FAMILY.to_owned(),
                            column_qualifier: q,
                            time_range: Some(TimestampRange {
                                start_timestamp_micros: 0,
                                end_timestamp_micros: cutoff,
                            }),
                        },
                    )),
                })
                .collect();
            batch.push(Entry {
                row_key: key,
                mutations,
                ..Entry::default()
            });
        }
        if batch.len() >= BATCH || (last && !batch.is_empty()) {
            let entries = std::mem::take(&mut batch);
            let n = entries.len() as u64;
            let mut answers = client
                .mutate_rows(MutateRowsRequest {
                    table_name: table_name.clone(),
                    entries,
                    ..MutateRowsRequest::default()
                })
                .await?;
            while let Some(answer) = answers.message().await? {
                if let Some(bad) = answer
                    .entries
                    .iter()
                    .find(|e| e.status.as_ref().is_some_and(|s| s.code != 0))
                {
                    return Err(format!("a delete failed: {bad:?}").into());
                }
            }
            deleted += n;
        }
        if last {
            return Ok(deleted);
        }
    }
}

/// Rows of `table`'s instance any reader still sees (no filter).
async fn rows_left(host: &str, table: &Table<Event>) -> Res<usize> {
    let rs = BigTableConnection::new_with_emulator(
        host,
        PROJECT,
        table.connection().instance(),
        true,
        1,
        None,
    )?;
    let mut client = rs.client();
    let request = ReadRowsRequest {
        table_name: client.get_full_table_name(Event::SCHEMA.table),
        ..ReadRowsRequest::default()
    };
    Ok(client.stream_rows(request).await?.count().await)
}

// ----- feed bytes ---------------------------------------------------------------

/// The window's share of the rows: row `i` expires in minute `i % SLOTS`.
const SLOTS: usize = 100;

/// `rows` rows expiring evenly over `SLOTS` minutes; the feed over one of
/// those minutes (1 % of the rows died in it) against a full scan of the
/// family, bytes from the server counted at a loopback proxy.
async fn feed_bytes(host: &str, rows: usize) -> Res<Value> {
    let instance = "feed-bytes";
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let writer = Table::<Event>::new(Connection::emulator(host, PROJECT, instance)?)
        .with_clock(clock.clone());
    writer.ensure_schema().await?;
    let start = t0 + TimeDelta::hours(1);
    let minute = |i: usize| TimeDelta::minutes(i64::try_from(i % SLOTS).unwrap_or(0));
    let batch: Vec<Event> = (0..rows)
        .map(|i| {
            let mut e = event(i, t0);
            // Spread within the minute too, whole milliseconds.
            let ms = i64::try_from((i / SLOTS) % 60_000).unwrap_or(0);
            e.expires_at = start + minute(i) + TimeDelta::milliseconds(ms);
            e
        })
        .collect();
    let load = Instant::now();
    for chunk in batch.chunks(20_000) {
        writer.put_all(chunk).await?;
    }
    let load_s = load.elapsed().as_secs_f64();
    clock.set(start + TimeDelta::minutes(i64::try_from(SLOTS).unwrap_or(0) + 10));
    let from = start + TimeDelta::minutes(i64::try_from(SLOTS / 2).unwrap_or(0));
    let to = from + TimeDelta::minutes(1);
    let expected = (0..rows).filter(|i| i % SLOTS == SLOTS / 2).count();

    let proxy = CountingProxy::start(host).await?;
    let reader = Table::<Event>::new(Connection::emulator(&proxy.host, PROJECT, instance)?)
        .with_clock(clock.clone());
    let before = proxy.sent();
    let timer = Instant::now();
    let fed: Vec<_> = reader
        .expired(&ExpiryWindow::new(from, to))
        .try_collect()
        .await?;
    let feed_s = timer.elapsed().as_secs_f64();
    let feed = proxy.sent() - before;
    if fed.len() != expected {
        return Err(format!("the feed yielded {} rows, {expected} died", fed.len()).into());
    }

    let before = proxy.sent();
    let timer = Instant::now();
    let (scanned, found) = full_scan(&proxy.host, instance, from, to).await?;
    let scan_s = timer.elapsed().as_secs_f64();
    let scan = proxy.sent() - before;
    if found != expected || scanned != rows {
        return Err(format!("the full scan read {scanned} rows, found {found} deaths").into());
    }
    Ok(json!({
        "rows": rows,
        "died_in_window": expected,
        "load_s": load_s,
        "feed_bytes": feed,
        "feed_s": feed_s,
        "scan_bytes": scan,
        "scan_s": scan_s,
        "ratio": feed as f64 / scan as f64,
    }))
}

/// Every row of `instance`'s table, the newest cell of each column of the
/// family (no timestamp filter: a client finding deaths itself needs them
/// all): rows read, and how many died in `[from, to)` (under the one-second
/// policy, a row dies at its cells' timestamp).
async fn full_scan(
    host: &str,
    instance: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Res<(usize, usize)> {
    let rs = BigTableConnection::new_with_emulator(host, PROJECT, instance, true, 1, None)?;
    let mut client = rs.client();
    let request = ReadRowsRequest {
        table_name: client.get_full_table_name(Event::SCHEMA.table),
        filter: Some(filter(Filter::Chain(Chain {
            filters: vec![
                family_filter(),
                filter(Filter::CellsPerColumnLimitFilter(1)),
            ],
        }))),
        ..ReadRowsRequest::default()
    };
    let (from, to) = (from.timestamp_micros(), to.timestamp_micros());
    let mut rows = std::pin::pin!(client.stream_rows(request).await?);
    let (mut scanned, mut found) = (0, 0);
    while let Some((_, cells)) = rows.try_next().await? {
        scanned += 1;
        let died = cells.iter().map(|c| c.timestamp_micros).max().unwrap_or(0);
        if from <= died && died < to {
            found += 1;
        }
    }
    Ok((scanned, found))
}

/// A loopback TCP proxy to the emulator counting the bytes the server
/// sends (HTTP/2 frames: every `ReadRows` response, headers included).
struct CountingProxy {
    host: String,
    sent: Arc<AtomicU64>,
}

impl CountingProxy {
    async fn start(target: &str) -> Res<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let host = listener.local_addr()?.to_string();
        let sent = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&sent);
        let target = target.to_owned();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (target, counter) = (target.clone(), Arc::clone(&counter));
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    let _ = (client.set_nodelay(true), server.set_nodelay(true));
                    let (mut from_client, mut to_client) = client.into_split();
                    let (mut from_server, mut to_server) = server.into_split();
                    let up = tokio::io::copy(&mut from_client, &mut to_server);
                    let down = async {
                        let mut buf = vec![0; 64 << 10];
                        loop {
                            let n = from_server.read(&mut buf).await?;
                            if n == 0 {
                                return Ok::<_, std::io::Error>(());
                            }
                            counter.fetch_add(n as u64, Ordering::Relaxed);
                            to_client.write_all(&buf[..n]).await?;
                        }
                    };
                    let _ = tokio::join!(up, down);
                });
            }
        });
        Ok(Self { host, sent })
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

// ----- rate limit ---------------------------------------------------------------

/// `Table::reap` at `rate` rows a second over `rate * seconds` dead rows:
/// the rate achieved over the run's wall time.
async fn rate_limit(host: &str, rate: NonZeroU32, seconds: usize) -> Res<Value> {
    let rows = rate.get() as usize * seconds;
    let table = dead_rows(host, &format!("reap-rate-{rate}"), rows).await?;
    let options = ReapOptions::new()
        .with_grace(GRACE.to_std()?)
        .with_rows_per_second(rate);
    let start = Instant::now();
    let status = table
        .reap(&options, None, |_| ControlFlow::Continue(()))
        .await?;
    let wall = start.elapsed();
    let ReapStatus::Done(progress) = status else {
        return Err(format!("the reaper stopped: {status:?}").into());
    };
    if progress.rows_reaped != rows as u64 {
        return Err(format!("reaped {} rows of {rows}", progress.rows_reaped).into());
    }
    let achieved = rows as f64 / wall.as_secs_f64();
    eprintln!(
        "rate {rate}/s: {rows} rows in {:.2} s, {achieved:.1} rows/s",
        wall.as_secs_f64()
    );
    Ok(json!({
        "setting": rate.get(),
        "rows": rows,
        "page_rows": ReapOptions::new().page_rows,
        "wall_s": wall.as_secs_f64(),
        "achieved": achieved,
        "ratio": achieved / f64::from(rate.get()),
    }))
}
