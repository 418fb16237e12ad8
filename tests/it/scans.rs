//! Reads a serious user expects, against Google's Bigtable emulator:
//! reverse scans (the last rows of a range, greatest key first, resumed
//! through broken connections without losing or repeating a row), and
//! parallel scans (a range cut at the keys `SampleRowKeys` returns, the
//! parts read at once: exactly the rows of the plain scan, filtered and
//! decoded as every read, each once, through broken connections too).
//!
//! The fault points come from a seeded RNG; the seed is printed, and
//! `RELIABILITY_SEED=<seed>` replays a run.

use crate::raw_rows::RawRows as _;
use crate::support;

use std::time::{Duration, Instant};

use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{BigtableRow, Clock, Connection, Expiring, Scan, Table};
use chrono::{TimeDelta, Utc};
use futures_util::TryStreamExt as _;
use support::proxy::{Faults, Proxy};
use support::rows::Event;

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
fn ids(rows: &[Expiring<Event>]) -> Vec<String> {
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

#[tokio::test]
async fn a_range_starting_after_its_end_is_a_typed_error_before_anything_is_sent() {
    let clock = clock();
    let table = table_of(10, &clock).await;
    let (low, high) = (event(2).id, event(7).id);
    let is_invalid_range = |err: &bigtable_ttl::Error| {
        matches!(&err,
            bigtable_ttl::Error::InvalidRange(e) if e.start == high.as_bytes() && e.end == low.as_bytes()
        ) && err.to_string().contains(".reversed()")
    };
    for scan in [
        Scan::range(high.clone()..low.clone()),
        Scan::range(high.clone()..=low.clone()).reversed(),
    ] {
        let err = table.scan(scan.clone()).await.unwrap_err();
        assert!(is_invalid_range(&err), "{err:?}");
        let err = table.raw_rows(scan.clone()).await.unwrap_err();
        assert!(is_invalid_range(&err), "{err:?}");
        let err = table.split_scan(scan.clone(), 4).await.unwrap_err();
        assert!(is_invalid_range(&err), "{err:?}");
        let err = table
            .scan_parallel(scan, 4)
            .try_collect::<Vec<_>>()
            .await
            .unwrap_err();
        assert!(is_invalid_range(&err), "{err:?}");
    }
    // A reversed scan takes its range ascending, as Bigtable's API does.
    let rows = table
        .scan(Scan::range(low.clone()..=high.clone()).reversed())
        .await
        .unwrap();
    assert_eq!(ids(&rows), [7, 6, 5, 4, 3, 2].map(|i| event(i).id));
}

/// The same instance as `direct`, through `proxy`.
fn through(proxy: &Proxy, direct: &Connection) -> Connection {
    Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap()
}

/// A handle on `direct`'s table through a new proxy that resets its
/// connections every 60-200 KB (at most 8 times, drawn from `seed`), with
/// a read policy patient enough to resume after each.
async fn through_resets(direct: &Table<Event>, clock: &Clock, seed: u64) -> (Proxy, Table<Event>) {
    let proxy = Proxy::start(&support::emulator_host()).await;
    let patient = RetryPolicy::default()
        .with_max_attempts(10)
        .with_initial_delay(Duration::from_millis(20))
        .with_max_delay(Duration::from_millis(200))
        .with_deadline(Duration::from_secs(60));
    let table = Table::<Event>::new(through(&proxy, direct.connection()))
        .with_clock(clock.clone())
        .with_read_options(ReadOptions::default().with_retry(patient));
    proxy.arm(Faults::Reset {
        seed,
        max_resets: 8,
        until: Instant::now() + Duration::from_secs(60),
        min_bytes: 60 * 1024,
        max_bytes: 200 * 1024,
    });
    (proxy, table)
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

    // The scan carries about 1.4 MB: a break every 60-200 KB.
    let (proxy, table) = through_resets(&direct, &clock, seed).await;
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

/// What a typed read shows of a row: the value and its expiry metadata.
fn shown(rows: &[Expiring<Event>]) -> Vec<(Event, String)> {
    rows.iter()
        .map(|r| {
            (
                r.value.clone(),
                format!("{} {:?}", r.expires_at, r.written_at),
            )
        })
        .collect()
}

/// `rows` in key order, after checking that no key comes twice.
fn sorted_once(mut rows: Vec<Expiring<Event>>) -> Vec<Expiring<Event>> {
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    let before = rows.len();
    let mut keys = ids(&rows);
    keys.dedup();
    assert_eq!(keys.len(), before, "a row came twice");
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_scan_returns_exactly_the_rows_of_the_plain_scan() {
    const ROWS: usize = 20_000;
    let clock = clock();
    let table = table_of(ROWS, &clock).await;
    // Rows 5,000..5,500 expire in an hour: hidden 90 minutes on, from every
    // part as from the plain scan.
    let short: Vec<Event> = (5_000..5_500).map(event).collect();
    table
        .put_all_with(short.iter().map(|e| e.mutation().ttl(TimeDelta::hours(1))))
        .await
        .unwrap();
    clock.advance(TimeDelta::minutes(90));
    let plain = table.scan(Scan::all()).await.unwrap();
    assert_eq!(plain.len(), ROWS - 500);

    // The emulator samples about one key in a hundred: the table is cut
    // into as many parts as asked, which read in turn give the plain scan.
    let parts = table.split_scan(Scan::all(), 8).await.unwrap();
    assert_eq!(parts.len(), 8);
    let mut in_turn = Vec::new();
    for part in &parts {
        let rows = table.scan(part.clone()).await.unwrap();
        assert!(!rows.is_empty(), "an empty part: {part:?}");
        in_turn.extend(rows);
    }
    assert_eq!(shown(&in_turn), shown(&plain));

    // Read at once (on a task of its own: the stream is `Send`), the parts
    // give every row of the plain scan once.
    let started = Instant::now();
    let stream = table.scan_parallel(Scan::all(), 4);
    let parallel: Vec<_> = tokio::spawn(stream.try_collect::<Vec<_>>())
        .await
        .unwrap()
        .unwrap();
    println!(
        "parallel scan: {} rows in {:?}",
        parallel.len(),
        started.elapsed()
    );
    assert_eq!(shown(&sorted_once(parallel)), shown(&plain));

    // A range, a prefix and a reversed scan alike.
    for scan in [
        Scan::range(event(1_234).id..=event(17_000).id),
        Scan::prefix("ev-01"),
        Scan::range(event(3_000).id..).reversed(),
    ] {
        let plain = table.scan(scan.clone()).await.unwrap();
        let parts = table.split_scan(scan.clone(), 6).await.unwrap();
        assert!(parts.len() > 1, "{scan:?} in {} parts", parts.len());
        let parallel: Vec<_> = table
            .scan_parallel(scan.clone(), 3)
            .try_collect()
            .await
            .unwrap();
        let mut plain_sorted = plain.clone();
        plain_sorted.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(
            shown(&sorted_once(parallel)),
            shown(&plain_sorted),
            "{scan:?}"
        );
        // The parts of a reversed scan come greatest first, each reversed.
        let mut in_turn = Vec::new();
        for part in parts {
            in_turn.extend(table.scan(part).await.unwrap());
        }
        assert_eq!(shown(&in_turn), shown(&plain), "{scan:?} in turn");
    }

    // A limited scan and a key list are one part, read in order.
    let limited = Scan::all().reversed().limit(7);
    assert_eq!(
        table.split_scan(limited.clone(), 8).await.unwrap(),
        std::slice::from_ref(&limited)
    );
    let got: Vec<_> = table
        .scan_parallel(limited.clone(), 4)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(shown(&got), shown(&table.scan(limited).await.unwrap()));
    let keys = Scan::keys([event(9).id, event(5_001).id, event(19_999).id]);
    let got: Vec<_> = table.scan_parallel(keys, 2).try_collect().await.unwrap();
    assert_eq!(ids(&got), [9, 19_999].map(|i| event(i).id));
}

#[tokio::test]
async fn a_parallel_scan_of_an_empty_table_or_a_missing_one() {
    let clock = clock();
    let table = support::table::<Event>(&clock).await;
    // No sample: one part, no row.
    assert_eq!(
        table.split_scan(Scan::all(), 8).await.unwrap(),
        [Scan::all()]
    );
    let rows: Vec<_> = table
        .scan_parallel(Scan::all(), 4)
        .try_collect()
        .await
        .unwrap();
    assert!(rows.is_empty());
    // SampleRowKeys on a missing table: the error comes out of the stream.
    let missing = table.clone().with_name("no_such_table");
    let err = missing
        .scan_parallel(Scan::all(), 4)
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            bigtable_ttl::Error::Server(e) if e.code == bigtable_ttl::Code::NotFound),
        "{err:?}"
    );
}

/// Parts read at once over one connection all break when it resets; each
/// resumes on its own: every row once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_scan_through_resetting_connections_delivers_every_row_once() {
    const ROWS: usize = 20_000;
    let seed = seed();
    println!("fault seed: {seed} (replay with RELIABILITY_SEED={seed})");
    let clock = clock();
    let direct = table_of(ROWS, &clock).await;
    let plain = direct.scan(Scan::all()).await.unwrap();

    let (proxy, table) = through_resets(&direct, &clock, seed).await;
    let parallel: Vec<_> = table
        .scan_parallel(Scan::all(), 4)
        .try_collect()
        .await
        .unwrap();
    println!(
        "parallel: {} rows through {} breaks, {} resumes",
        parallel.len(),
        proxy.resets(),
        table.read_stats().resumes
    );
    assert!(proxy.resets() >= 2, "the proxy should have broken the read");
    assert!(
        table.read_stats().resumes >= 2,
        "the parts should have resumed"
    );
    assert_eq!(shown(&sorted_once(parallel)), shown(&plain));
}
