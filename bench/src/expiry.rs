//! `ttl-bench expiry`: the expiry feed and the reaper (issue 42), on one
//! emulator; `BENCHMARKS.md`'s figures are written by hand from its JSON.
//! Reaper throughput (`Table::reap` against a hand-written scan-and-delete
//! loop on a copy of the same dead rows), the feed's bytes against a full
//! scan's, and the reaper's rate limit. The rows are written through a
//! manual clock at the real now, expiring an hour or more later, and judged
//! with the clock moved past their expiries: dead for the library, not yet
//! collected by the emulator, whose garbage collection runs on real time.

use std::num::NonZeroU32;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bigtable_rs::google::bigtable::v2::{
    mutate_rows_request::Entry, mutation, row_filter::Chain, row_filter::Filter, Mutation,
    ReadRowsRequest, TimestampRange,
};
use bigtable_ttl::ops::{ExpiryWindow, ReapOptions, ReapStatus};
use bigtable_ttl::{BigtableRow, Clock, Connection, Table};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::{StreamExt as _, TryStreamExt as _};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use ttl_bench::row_filter as filter;
use ttl_bench::stats::median;
use ttl_bench::{cpu_seconds, event, family_filter, mutate_rows, rs_client, Event, FAMILY};

use crate::{Res, PROJECT};

/// Rows per page of the reaper, and per `MutateRows` of the hand-written
/// loop: the reaper's default.
const BATCH: usize = 500;
/// The reaper's grace; the hand-written loop's cut-off is as far back.
const GRACE: TimeDelta = TimeDelta::minutes(1);

/// `ttl-bench expiry`'s arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Dead rows each contender reaps per round.
    #[arg(long, default_value_t = 20_000)]
    rows: usize,
    /// Rows of the feed's table.
    #[arg(long, default_value_t = 100_000)]
    feed_rows: usize,
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Rate limits measured, rows a second.
    #[arg(long, value_delimiter = ',', default_value = "200,1000")]
    rates: Vec<u32>,
    /// Each rate's run lasts about this long.
    #[arg(long, default_value_t = 30)]
    rate_seconds: usize,
    #[arg(long)]
    out: std::path::PathBuf,
}

pub async fn main(args: &Args) -> Res<()> {
    let emulator = bigtable_ttl_emulator::Emulator::start()?;
    let host = emulator.host();
    let started = Utc::now();
    let reaper = throughput(host, args.rows, args.rounds.max(1)).await?;
    let feed = feed_bytes(host, args.feed_rows).await?;
    let mut limits = Vec::new();
    for &rate in &args.rates {
        let rate = NonZeroU32::new(rate).ok_or("--rates: a rate of 0")?;
        limits.push(rate_limit(host, rate, args.rate_seconds).await?);
    }
    let results = json!({
        "date": started.to_rfc3339(),
        "reaper": reaper,
        "feed": feed,
        "rate_limit": limits,
    });
    eprintln!("{results:#}");
    std::fs::write(&args.out, serde_json::to_string_pretty(&results)?)?;
    Ok(())
}

/// A table of `Event`s in `instance` with a manual clock at `t0`, the real
/// now: `n` rows of the workload written, row `i` expiring at
/// `t0 + expiry(i)`. The table, `t0`, and the seconds the write took.
pub(crate) async fn write_rows(
    host: &str,
    instance: &str,
    n: usize,
    expiry: impl Fn(usize) -> TimeDelta,
) -> Res<(Table<Event>, DateTime<Utc>, f64)> {
    let t0 = Utc::now();
    let table = Table::<Event>::new(Connection::emulator(host, PROJECT, instance)?)
        .with_clock(Clock::manual(t0));
    table.ensure_schema().await?;
    let rows: Vec<Event> = (0..n)
        .map(|i| Event {
            expires_at: t0 + expiry(i),
            ..event(i, t0)
        })
        .collect();
    let start = Instant::now();
    for chunk in rows.chunks(20_000) {
        table.put_all(chunk).await?;
    }
    Ok((table, t0, start.elapsed().as_secs_f64()))
}

/// `n` rows expiring at `t0 + 1 h + (i % 1000) ms`, the clock then moved to
/// `t0 + 2 h`: every row dead for the library, none collected.
async fn dead_rows(host: &str, instance: &str, n: usize) -> Res<Table<Event>> {
    let spread = |i: usize| TimeDelta::milliseconds(i64::try_from(i % 1000).unwrap_or(0));
    let expiry = |i| TimeDelta::hours(1) + spread(i);
    let (table, t0, _) = write_rows(host, instance, n, expiry).await?;
    table.clock().set(t0 + TimeDelta::hours(2));
    Ok(table)
}

// ----- reaper throughput --------------------------------------------------------

/// Rounds of the reaper against the hand-written loop, `rows` dead rows each.
async fn throughput(host: &str, rows: usize, rounds: usize) -> Res<Value> {
    let mut runs = Vec::new();
    for round in 0..rounds {
        let lib_table = dead_rows(host, &format!("reap-lib-{round}"), rows).await?;
        let hand_table = dead_rows(host, &format!("reap-hand-{round}"), rows).await?;
        let library = || measure(reap_with_library(&lib_table));
        let by_hand = || measure(reap_by_hand(host, &hand_table));
        let (lib, hand) = if round % 2 == 0 {
            let lib = library().await?;
            (lib, by_hand().await?)
        } else {
            let hand = by_hand().await?;
            (library().await?, hand)
        };
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
    let median_of = |f: &dyn Fn(&(Run, Run)) -> f64| median(runs.iter().map(f));
    let cpu_ratios = runs.iter().map(|(l, h)| h.cpu_s / l.cpu_s);
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
        "ratio_per_cpu_min": cpu_ratios.clone().fold(f64::INFINITY, f64::min),
        "ratio_per_cpu_max": cpu_ratios.fold(0.0, f64::max),
    }))
}

/// One contender's run: rows deleted, wall and CPU seconds.
struct Run {
    rows: u64,
    wall_s: f64,
    cpu_s: f64,
}

async fn measure(reap: impl std::future::Future<Output = Res<u64>>) -> Res<Run> {
    let cpu = cpu_seconds();
    let start = Instant::now();
    let rows = reap.await?;
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
    let status = table.reap(&options, None, |_| ControlFlow::Continue(()));
    match status.await? {
        ReapStatus::Done(p) => Ok(p.rows_reaped),
        other => Err(format!("the reaper stopped: {other:?}").into()),
    }
}

/// What a careful programmer writes by hand: read the family's cells whose
/// timestamp is below the cut-off (expired more than the grace ago: under
/// the one-second policy a cell's timestamp is its expiry), and delete each
/// column read with a `DeleteFromColumn` whose time range ends at the
/// cut-off (so a cell written since, or still live, is never deleted),
/// `BATCH` rows per `MutateRows`. The rows deleted.
async fn reap_by_hand(host: &str, table: &Table<Event>) -> Res<u64> {
    let mut client = rs_client(host, table.connection().instance(), false)?;
    let table_name = client.get_full_table_name(Event::SCHEMA.table);
    let now = table.clock().now() - GRACE;
    let cutoff = now.timestamp_micros() - now.timestamp_micros().rem_euclid(1000);
    let before_cutoff = TimestampRange {
        start_timestamp_micros: 0,
        end_timestamp_micros: cutoff,
    };
    let request = ReadRowsRequest {
        table_name: table_name.clone(),
        filter: Some(filter(Filter::Chain(Chain {
            filters: vec![
                family_filter(),
                filter(Filter::TimestampRangeFilter(before_cutoff)),
            ],
        }))),
        ..ReadRowsRequest::default()
    };
    let mut rows = std::pin::pin!(client.clone().stream_rows(request).await?);
    let mut batch = Vec::with_capacity(BATCH);
    let mut deleted = 0;
    while let Some((key, cells)) = rows.try_next().await? {
        let mut qualifiers: Vec<Vec<u8>> = cells.into_iter().map(|c| c.qualifier).collect();
        qualifiers.dedup();
        let delete = |q| {
            mutation::Mutation::DeleteFromColumn(mutation::DeleteFromColumn {
                family_name: FAMILY.to_owned(),
                column_qualifier: q,
                time_range: Some(before_cutoff),
            })
        };
        let mutations = qualifiers.into_iter().map(|q| Mutation {
            mutation: Some(delete(q)),
        });
        batch.push(Entry {
            row_key: key,
            mutations: mutations.collect(),
            ..Entry::default()
        });
        if batch.len() == BATCH {
            deleted += BATCH as u64;
            mutate_rows(&mut client, &table_name, std::mem::take(&mut batch)).await?;
        }
    }
    if !batch.is_empty() {
        deleted += batch.len() as u64;
        mutate_rows(&mut client, &table_name, batch).await?;
    }
    Ok(deleted)
}

/// Rows of `table`'s instance any reader still sees (no filter).
async fn rows_left(host: &str, table: &Table<Event>) -> Res<usize> {
    let mut client = rs_client(host, table.connection().instance(), true)?;
    let request = ReadRowsRequest {
        table_name: client.get_full_table_name(Event::SCHEMA.table),
        ..ReadRowsRequest::default()
    };
    Ok(client.stream_rows(request).await?.count().await)
}

// ----- feed bytes ---------------------------------------------------------------

/// The window's share of the rows: row `i` expires in minute `i % SLOTS`.
const SLOTS: usize = 100;

/// `rows` rows expiring evenly over `SLOTS` minutes from an hour on; the
/// feed over one of those minutes (1 % of the rows died in it) against a
/// full scan of the family, bytes from the server counted at a loopback
/// proxy.
async fn feed_bytes(host: &str, rows: usize) -> Res<Value> {
    let instance = "feed-bytes";
    let minutes = |n: usize| TimeDelta::minutes(i64::try_from(n).unwrap_or(0));
    // Spread within the minute too, whole milliseconds.
    let ms = |i: usize| TimeDelta::milliseconds(i64::try_from((i / SLOTS) % 60_000).unwrap_or(0));
    let expiry = |i| TimeDelta::hours(1) + minutes(i % SLOTS) + ms(i);
    let (writer, t0, load_s) = write_rows(host, instance, rows, expiry).await?;
    let start = t0 + TimeDelta::hours(1);
    writer.clock().set(start + minutes(SLOTS + 10));
    let from = start + minutes(SLOTS / 2);
    let to = from + TimeDelta::minutes(1);
    let expected = (0..rows).filter(|i| i % SLOTS == SLOTS / 2).count();

    let (proxy, sent) = counting_proxy(host).await?;
    let reader = Table::<Event>::new(Connection::emulator(&proxy, PROJECT, instance)?)
        .with_clock(writer.clock().clone());
    let before = sent.load(Ordering::Relaxed);
    let timer = Instant::now();
    let window = ExpiryWindow::new(from, to);
    let fed: Vec<_> = reader.expired(&window).try_collect().await?;
    let feed_s = timer.elapsed().as_secs_f64();
    let feed = sent.load(Ordering::Relaxed) - before;
    if fed.len() != expected {
        return Err(format!("the feed yielded {} rows, {expected} died", fed.len()).into());
    }

    let before = sent.load(Ordering::Relaxed);
    let timer = Instant::now();
    let (scanned, found) = full_scan(&proxy, instance, from, to).await?;
    let scan_s = timer.elapsed().as_secs_f64();
    let scan = sent.load(Ordering::Relaxed) - before;
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
    let mut client = rs_client(host, instance, true)?;
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

/// A loopback TCP proxy to the emulator at `target`: its address, and the
/// count of the bytes the server sent through it (HTTP/2 frames: every
/// `ReadRows` response, headers included).
async fn counting_proxy(target: &str) -> Res<(String, Arc<AtomicU64>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?.to_string();
    let sent = Arc::new(AtomicU64::new(0));
    let (counter, target) = (Arc::clone(&sent), target.to_owned());
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
    Ok((address, sent))
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
    let status = table.reap(&options, None, |_| ControlFlow::Continue(()));
    let status = status.await?;
    let wall_s = start.elapsed().as_secs_f64();
    let ReapStatus::Done(progress) = status else {
        return Err(format!("the reaper stopped: {status:?}").into());
    };
    if progress.rows_reaped != rows as u64 {
        return Err(format!("reaped {} rows of {rows}", progress.rows_reaped).into());
    }
    let achieved = rows as f64 / wall_s;
    eprintln!("rate {rate}/s: {rows} rows in {wall_s:.2} s, {achieved:.1} rows/s");
    Ok(json!({
        "setting": rate.get(),
        "rows": rows,
        "page_rows": ReapOptions::new().page_rows,
        "wall_s": wall_s,
        "achieved": achieved,
        "ratio": achieved / f64::from(rate.get()),
    }))
}
