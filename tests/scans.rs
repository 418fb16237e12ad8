//! Reads a serious user expects, against Google's Bigtable emulator:
//! reverse scans (the last rows of a range, greatest key first, resumed
//! through broken connections without losing or repeating a row).
//!
//! The fault points come from a seeded RNG; the seed is printed, and
//! `RELIABILITY_SEED=<seed>` replays a run.

mod support;

use std::time::{Duration, Instant};

use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{BigtableRow, Clock, Connection, Scan, Table};
use chrono::{TimeDelta, Utc};
use futures_util::TryStreamExt as _;
use support::proxy::{Faults, Proxy};

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "events", family = "e")]
#[ttl(default = "2d")]
struct Event {
    #[bigtable(key)]
    id: String,
    n: i64,
    body: String,
}

fn event(i: usize) -> Event {
    Event {
        id: format!("ev-{i:06}"),
        n: i64::try_from(i).unwrap(),
        body: format!("body of event {i}, {}", "x".repeat(i % 40)),
    }
}

fn seed() -> u64 {
    std::env::var("RELIABILITY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            u64::try_from(nanos % 1_000_000_007).unwrap()
        })
}

/// A manual clock at the wall clock's now (the emulator collects by its own
/// wall clock).
fn clock() -> Clock {
    Clock::manual(Utc::now() + TimeDelta::microseconds(321))
}

/// `rows` events written to a fresh table, through a direct connection.
async fn table_of(rows: usize, clock: &Clock) -> Table<Event> {
    let table = support::table::<Event>(clock).await;
    let events: Vec<Event> = (0..rows).map(event).collect();
    table.put_all(&events).await.unwrap();
    table
}

/// The ids of `rows`.
fn ids(rows: &[bigtable_ttl::Expiring<Event>]) -> Vec<String> {
    rows.iter().map(|r| r.id.clone()).collect()
}

#[tokio::test]
async fn a_reversed_scan_returns_the_last_rows_greatest_key_first() {
    let clock = clock();
    let table = table_of(100, &clock).await;
    let all_down: Vec<String> = (0..100).rev().map(|i| event(i).id).collect();

    // The last 5 rows of the table, in descending order.
    let last = table.scan(Scan::all().reversed().limit(5)).await.unwrap();
    assert_eq!(ids(&last), all_down[..5]);
    assert_eq!(last[0].value, event(99));

    // Every row, descending; a stream too.
    let every = table.scan(Scan::all().reversed()).await.unwrap();
    assert_eq!(ids(&every), all_down);
    let streamed: Vec<_> = table
        .stream(Scan::all().reversed())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ids(&streamed), all_down);

    // The last 3 rows of a range and of a prefix.
    let range = Scan::range(event(10).id..event(20).id).reversed().limit(3);
    let got = table.scan(range).await.unwrap();
    assert_eq!(ids(&got), [19, 18, 17].map(|i| event(i).id));
    let prefix = table
        .scan(Scan::prefix("ev-00004").reversed().limit(2))
        .await
        .unwrap();
    assert_eq!(ids(&prefix), [49, 48].map(|i| event(i).id));

    // A list of keys, descending.
    let keys = [3, 70, 41].map(|i| event(i).id);
    let got = table.scan(Scan::keys(&keys).reversed()).await.unwrap();
    assert_eq!(ids(&got), [70, 41, 3].map(|i| event(i).id));

    // Expired rows stay hidden in a reversed read: the last 10 rows expire
    // in an hour, and 90 minutes on the last 5 visible rows are 89..85.
    let short: Vec<Event> = (90..100).map(event).collect();
    table
        .put_all_with(short.iter().map(|e| e.mutation().ttl(TimeDelta::hours(1))))
        .await
        .unwrap();
    clock.advance(TimeDelta::minutes(90));
    let last = table.scan(Scan::all().reversed().limit(5)).await.unwrap();
    assert_eq!(ids(&last), [89, 88, 87, 86, 85].map(|i| event(i).id));
}

/// The same instance as `direct`, through `proxy`.
fn through(proxy: &Proxy, direct: &Connection) -> Connection {
    Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap()
}

/// A reversed scan through a proxy that resets its connections resumes
/// below the last row it delivered: every row once, in descending order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reversed_scan_through_resetting_connections_delivers_every_row_once_in_order() {
    const ROWS: usize = 20_000;
    let seed = seed();
    println!("fault seed: {seed} (replay with RELIABILITY_SEED={seed})");
    let clock = clock();
    let direct = table_of(ROWS, &clock).await;

    let proxy = Proxy::start(&support::emulator_host()).await;
    let patient = RetryPolicy::default()
        .with_max_attempts(10)
        .with_initial_delay(Duration::from_millis(20))
        .with_max_delay(Duration::from_millis(200))
        .with_deadline(Duration::from_secs(60));
    let table = Table::<Event>::new(through(&proxy, direct.connection()))
        .with_clock(clock.clone())
        .with_read_options(ReadOptions::default().with_retry(patient));
    // The scan carries about 1.4 MB: a break every 60-200 KB.
    proxy.arm(Faults::Reset {
        seed,
        max_resets: 8,
        until: Instant::now() + Duration::from_secs(60),
        min_bytes: 60 * 1024,
        max_bytes: 200 * 1024,
    });
    let started = Instant::now();
    let read: Vec<_> = table
        .stream(Scan::all().reversed())
        .try_collect()
        .await
        .unwrap();
    println!(
        "read {} rows in reverse in {:?} through {} breaks, {} resumes",
        read.len(),
        started.elapsed(),
        proxy.resets(),
        table.read_stats().resumes
    );
    assert!(proxy.resets() >= 2, "the proxy should have broken the read");
    assert!(
        table.read_stats().resumes >= 2,
        "the read should have resumed"
    );
    assert_eq!(read.len(), ROWS);
    for (row, i) in read.iter().zip((0..ROWS).rev()) {
        assert_eq!(row.value, event(i), "row {i}");
    }

    // A limited reversed scan resumed keeps the rest of its limit.
    proxy.arm(Faults::Reset {
        seed: seed + 1,
        max_resets: 3,
        until: Instant::now() + Duration::from_secs(60),
        min_bytes: 60 * 1024,
        max_bytes: 200 * 1024,
    });
    let before = table.read_stats().resumes;
    let read = table
        .scan(Scan::all().reversed().limit(12_345))
        .await
        .unwrap();
    println!(
        "limited: {} rows through {} breaks, {} resumes",
        read.len(),
        proxy.resets(),
        table.read_stats().resumes - before
    );
    assert!(
        table.read_stats().resumes > before,
        "it should have resumed"
    );
    assert_eq!(read.len(), 12_345);
    for (row, i) in read.iter().zip((0..ROWS).rev()) {
        assert_eq!(row.value, event(i), "row {i}");
    }
}
