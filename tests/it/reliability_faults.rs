//! Writes and reads through a proxy that resets connections at random
//! points: every row arrives exactly once, with the right value and
//! timestamp, and a batch whose response was lost is applied once.
//!
//! The fault points come from a seeded RNG; the seed is printed, and
//! `RELIABILITY_SEED=<seed>` replays a run.

use crate::raw_rows::RawRows as _;
use crate::support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bigtable_ttl::data::Cell;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{Clock, Connection, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::TryStreamExt as _;
use support::connection;
use support::proxy::{Faults, Proxy};
use support::rows::Event;

fn event(i: usize) -> Event {
    Event {
        id: format!("ev-{i:06}"),
        n: i64::try_from(i).unwrap() * 7,
        body: format!("body of event {i}, {}", "x".repeat(i % 50)),
    }
}

fn seed() -> u64 {
    std::env::var("RELIABILITY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            u64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
                    % 1_000_000_007,
            )
            .unwrap()
        })
}

/// A manual clock at the wall clock's now, with sub-millisecond digits.
fn clock() -> Clock {
    Clock::manual(Utc::now() + TimeDelta::microseconds(321))
}

fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis() * 1000
}

/// The same instance as `direct`, through `proxy`.
fn through(proxy: &Proxy, direct: &Connection) -> Connection {
    Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap()
}

fn patient() -> WriteOptions {
    WriteOptions::default()
        .with_max_rows_per_request(2_000)
        .with_retry(
            RetryPolicy::default()
                .with_max_attempts(30)
                .with_initial_delay(Duration::from_millis(20))
                .with_max_delay(Duration::from_millis(500))
                .with_attempt_timeout(Duration::from_secs(10))
                .with_deadline(Duration::from_secs(90)),
        )
}

/// Every row holds exactly one cell per column (and one row marker), with
/// the value of `event(i)` and timestamp `ts`.
fn assert_exactly(raw: &[(Vec<u8>, Vec<Cell>)], rows: usize, ts: i64) {
    assert_eq!(raw.len(), rows, "row count");
    for (i, (key, cells)) in raw.iter().enumerate() {
        let want = event(i);
        assert_eq!(key, want.id.as_bytes());
        let mut by_column: BTreeMap<&[u8], Vec<&Cell>> = BTreeMap::new();
        for c in cells {
            assert_eq!(c.family, "e");
            by_column.entry(&c.qualifier).or_default().push(c);
        }
        assert_eq!(by_column.len(), 3, "row {i}: {cells:?}");
        for (q, versions) in by_column {
            assert_eq!(versions.len(), 1, "row {i}, column {q:?}: one version");
            let c = versions[0];
            assert_eq!(c.timestamp_micros, ts, "row {i}");
            let expected = match q {
                b"n" => want.n.to_be_bytes().to_vec(),
                b"body" => want.body.clone().into_bytes(),
                q if q == <Event as bigtable_ttl::BigtableRow>::SCHEMA.marker => {
                    <Event as bigtable_ttl::BigtableRow>::SCHEMA.marker_fingerprint()
                }
                other => panic!("unexpected column {other:?}"),
            };
            assert_eq!(c.value, expected, "row {i}, column {q:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_rows_through_resetting_connections_arrive_exactly_once() {
    const ROWS: usize = 50_000;
    let seed = seed();
    println!("fault seed: {seed} (replay with RELIABILITY_SEED={seed})");
    let direct = connection();
    let clock = clock();
    Table::<Event>::new(direct.clone())
        .ensure_schema()
        .await
        .unwrap();
    let proxy = Proxy::start(&support::emulator_host()).await;
    let table = Table::<Event>::new(through(&proxy, &direct))
        .with_clock(clock.clone())
        .with_write_options(patient())
        .with_read_options(ReadOptions::default().with_retry(patient().retry));

    proxy.arm(Faults::Reset {
        seed,
        max_resets: 25,
        until: Instant::now() + Duration::from_secs(60),
        min_bytes: 64 * 1024,
        max_bytes: 1024 * 1024,
    });
    let started = Instant::now();
    let mut writer = table.writer();
    for i in 0..ROWS {
        writer.send(&event(i)).await.unwrap();
    }
    let stats = writer.finish().await.unwrap();
    let write_resets = proxy.resets();
    println!(
        "wrote {ROWS} rows in {:?}: {} requests, {} retries re-sending {} entries, \
         {} requests failed as a whole, {write_resets} connections reset",
        started.elapsed(),
        stats.requests,
        stats.retries,
        stats.entries_retried,
        stats.request_failures,
    );
    assert_eq!(stats.rows_written, ROWS as u64);
    assert_eq!(stats.rows_failed, 0);

    // What is stored, read directly: every row once, one version per column.
    let ts = ms(clock.now());
    let raw = Table::<Event>::new(direct.clone())
        .raw_rows(Scan::all())
        .await
        .unwrap();
    assert_exactly(&raw, ROWS, ts);

    // Typed reads through the faulty proxy resume where they broke.
    proxy.arm(Faults::Reset {
        seed: seed ^ 0x5EED,
        max_resets: 10,
        until: Instant::now() + Duration::from_secs(60),
        min_bytes: 256 * 1024,
        max_bytes: 2 * 1024 * 1024,
    });
    let started = Instant::now();
    let read: Vec<_> = table.stream(Scan::all()).try_collect().await.unwrap();
    println!(
        "read {} rows back in {:?} through {} resets, {} resumes",
        read.len(),
        started.elapsed(),
        proxy.resets(),
        table.read_stats().resumes
    );
    assert_eq!(read.len(), ROWS);
    for (i, row) in read.iter().enumerate() {
        assert_eq!(row.value, event(i), "row {i}");
        assert_eq!(row.expires_at.timestamp_micros(), ts + 2 * 86_400_000_000);
    }
    // A limited scan that breaks keeps to its limit.
    let limited = table
        .scan(Scan::prefix("ev-0").limit(12_345))
        .await
        .unwrap();
    assert_eq!(limited.len(), 12_345);
    assert!(limited.iter().enumerate().all(|(i, r)| r.value == event(i)));
    assert!(
        write_resets > 0 || proxy.resets() > 0,
        "the proxy should have reset something"
    );
}

#[tokio::test]
async fn the_same_batch_twice_and_a_lost_response_leave_one_version_per_column() {
    const ROWS: usize = 2_000;
    let direct = connection();
    let clock = clock();
    Table::<Event>::new(direct.clone())
        .ensure_schema()
        .await
        .unwrap();
    let proxy = Proxy::start(&support::emulator_host()).await;
    let table = Table::<Event>::new(through(&proxy, &direct))
        .with_clock(clock.clone())
        .with_write_options(patient());
    let rows: Vec<Event> = (0..ROWS).map(event).collect();
    let ts = ms(clock.now());

    // The same batch twice, at the same clock time.
    table.put_all(&rows).await.unwrap();
    table.put_all(&rows).await.unwrap();
    let raw = table.raw_rows(Scan::all()).await.unwrap();
    assert_exactly(&raw, ROWS, ts);

    // A batch the emulator applies but whose answer never arrives: the
    // writer cannot know, re-sends it, and the table still holds one version.
    proxy.arm(Faults::LoseResponse {
        request_bytes: 32 * 1024,
        hold: Duration::from_millis(500),
        times: 1,
    });
    let mut writer = table.writer();
    for row in &rows {
        writer.send(row).await.unwrap();
    }
    let stats = writer.finish().await.unwrap();
    println!("lost response: {stats:?}, {} cut", proxy.resets());
    assert_eq!(proxy.resets(), 1, "one answer should have been swallowed");
    assert!(stats.retries >= 1 && stats.entries_retried >= ROWS as u64 / 2);
    assert_eq!(stats.rows_written, ROWS as u64);
    let raw = table.raw_rows(Scan::all()).await.unwrap();
    assert_exactly(&raw, ROWS, ts);

    // Later, with the clock moved: still one version, the new timestamp.
    clock.advance(TimeDelta::seconds(5));
    table.put_all(&rows).await.unwrap();
    let raw = table.raw_rows(Scan::all()).await.unwrap();
    assert_exactly(&raw, ROWS, ms(clock.now()));
}

/// Rows renew a read's retry budget: a 100,000-row scan that meets 30
/// breaks, spread along it, finishes with every row once and in order,
/// although its policy allows only 4 attempts without a row in between.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_scan_through_thirty_breaks_finishes_on_a_four_attempt_budget() {
    const ROWS: usize = 100_000;
    const BREAKS: usize = 30;
    let seed = seed();
    println!("fault seed: {seed} (replay with RELIABILITY_SEED={seed})");
    let direct = connection();
    let clock = clock();
    let writer_table = Table::<Event>::new(direct.clone()).with_clock(clock.clone());
    writer_table.ensure_schema().await.unwrap();
    let rows: Vec<Event> = (0..ROWS).map(event).collect();
    writer_table.put_all(&rows).await.unwrap();

    let proxy = Proxy::start(&support::emulator_host()).await;
    let four_attempts = RetryPolicy::default()
        .with_max_attempts(4)
        .with_initial_delay(Duration::from_millis(20))
        .with_max_delay(Duration::from_millis(100))
        .with_deadline(Duration::from_secs(30));
    let table = Table::<Event>::new(through(&proxy, &direct))
        .with_clock(clock.clone())
        .with_read_options(ReadOptions::default().with_retry(four_attempts));
    // The scan carries about 8 MB: a break every 150-400 KB spreads 30 of
    // them along it.
    proxy.arm(Faults::Reset {
        seed,
        max_resets: BREAKS,
        until: Instant::now() + Duration::from_secs(120),
        min_bytes: 150 * 1024,
        max_bytes: 400 * 1024,
    });
    let started = Instant::now();
    let read: Vec<_> = table.stream(Scan::all()).try_collect().await.unwrap();
    println!(
        "read {} rows in {:?} through {} breaks, {} resumes",
        read.len(),
        started.elapsed(),
        proxy.resets(),
        table.read_stats().resumes
    );
    assert!(
        proxy.resets() > 4,
        "more breaks than the budget's attempts: {}",
        proxy.resets()
    );
    let lacking = if read.len() == ROWS {
        String::new()
    } else {
        short_read_report(&writer_table, &read, ROWS).await
    };
    assert_eq!(read.len(), ROWS, "{lacking}");
    for (i, row) in read.iter().enumerate() {
        assert_eq!(row.value, event(i), "row {i}");
    }
}

/// What a scan of `rows` events that read fewer lacks, and whether each
/// missing row is stored (read once more, straight from the emulator):
/// rows stored but not read are the reader's fault; rows not stored are the
/// writes'.
async fn short_read_report(
    direct: &Table<Event>,
    read: &[bigtable_ttl::Expiring<Event>],
    rows: usize,
) -> String {
    let got: std::collections::HashSet<&str> = read.iter().map(|r| r.value.id.as_str()).collect();
    let mut report = format!("read {} rows of {rows}", read.len());
    for missing in (0..rows)
        .map(event)
        .filter(|e| !got.contains(e.id.as_str()))
        .take(10)
    {
        let stored = direct.get(&missing.id).await;
        write!(
            report,
            "; {} missing, read directly: {stored:?}",
            missing.id
        )
        .unwrap();
    }
    report
}
