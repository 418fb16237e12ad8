//! 16 concurrent writers and 4 readers on one table for a few seconds, with
//! short TTLs on the system clock: no write fails or is lost, no read fails,
//! and no reader ever sees a row past its expiry.

use crate::support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bigtable_ttl::{BigtableRow, Clock, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};
use support::connection;

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "leases", family = "l")]
struct Lease {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    owner: String,
    version: i64,
}

const WRITERS: usize = 16;
const READERS: usize = 4;
const KEYS_PER_WRITER: usize = 20;
const RUN: Duration = Duration::from_secs(3);

/// Even keys live 10 minutes, odd ones 0.6 to 1.8 s (rewritten each round).
/// Not shorter: on a loaded machine a row can wait hundreds of
/// milliseconds between being made and being sent, and a write whose
/// expiry has passed is refused (`ExpiryNotInFuture`).
fn ttl(key: usize, round: i64) -> TimeDelta {
    if key.is_multiple_of(2) {
        TimeDelta::minutes(10)
    } else {
        let spread = i64::try_from(key).unwrap() * 37 + round * 101;
        TimeDelta::milliseconds(600 + spread % 1_200)
    }
}

/// Writes rounds of its own keys until `until`; returns the last lease
/// written per key.
async fn writer(table: Table<Lease>, w: usize, until: Instant) -> (HashMap<String, Lease>, u64) {
    let mut last = HashMap::new();
    let mut round = 0i64;
    let mut writes = 0u64;
    while Instant::now() < until {
        // Whole milliseconds, as Bigtable stores them.
        let now = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
        let mut batch: Vec<Lease> = (0..KEYS_PER_WRITER)
            .map(|k| Lease {
                id: format!("w{w:02}-k{k:02}"),
                expires_at: now + ttl(k, round),
                owner: format!("writer {w}"),
                version: round,
            })
            .collect();
        // A key written once, dying 0.6 to 1.1 s later while readers read.
        batch.push(Lease {
            id: format!("w{w:02}-once-{round:05}"),
            expires_at: now + TimeDelta::milliseconds(600 + (round * 53) % 500),
            owner: format!("writer {w}"),
            version: round,
        });
        if round % 2 == 0 {
            table.put_all(&batch).await.expect("put_all");
        } else {
            let mut bulk = table.writer();
            for lease in &batch {
                bulk.send(lease).await.expect("send");
            }
            bulk.finish().await.expect("finish");
        }
        writes += batch.len() as u64;
        last.extend(batch.into_iter().map(|l| (l.id.clone(), l)));
        round += 1;
    }
    (last, writes)
}

/// Scans the whole table until `until`, each scan on a clock fixed at the
/// wall clock's now; returns the rows read.
async fn reader(table: Table<Lease>, until: Instant) -> u64 {
    let mut rows = 0u64;
    // Highest version seen per long-lived key: a later read never goes back.
    let mut seen: HashMap<String, i64> = HashMap::new();
    while Instant::now() < until {
        let now = Utc::now();
        let at_now = table.clone().with_clock(Clock::manual(now));
        for row in at_now.scan(Scan::all()).await.expect("scan") {
            assert!(
                row.expires_at > now && row.value.expires_at > now,
                "read at {now} a row expiring at {}: {:?}",
                row.expires_at,
                row.value
            );
            let key: Option<usize> = row.value.id[5..].parse().ok();
            if key.is_some_and(|k| k % 2 == 0) {
                let v = seen.entry(row.value.id.clone()).or_insert(i64::MIN);
                assert!(
                    row.value.version >= *v,
                    "{} went back in time",
                    row.value.id
                );
                *v = row.value.version;
            }
            rows += 1;
        }
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_writers_and_four_readers_lose_nothing_and_see_nothing_expired() {
    let table = Table::<Lease>::new(connection());
    table.ensure_schema().await.unwrap();
    let until = Instant::now() + RUN;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| tokio::spawn(writer(table.clone(), w, until)))
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|_| tokio::spawn(reader(table.clone(), until)))
        .collect();
    let mut last = HashMap::new();
    let mut writes = 0;
    for w in writers {
        let (l, n) = w.await.unwrap();
        last.extend(l);
        writes += n;
    }
    let mut reads = 0;
    for r in readers {
        reads += r.await.unwrap();
    }

    // No lost writes: every key holds its last write unless that expired.
    let now = Utc::now();
    let stored: HashMap<String, Lease> = table
        .clone()
        .with_clock(Clock::manual(now))
        .scan(Scan::all())
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.value.id.clone(), r.value))
        .collect();
    let mut live = 0;
    for (key, lease) in &last {
        if lease.expires_at > now {
            live += 1;
            assert_eq!(stored.get(key), Some(lease), "{key}: the last write");
        } else {
            assert!(
                !stored.contains_key(key),
                "{key} expired at {}",
                lease.expires_at
            );
        }
    }
    assert_eq!(stored.len(), live);
    println!(
        "{WRITERS} writers, {READERS} readers, {RUN:?}: {writes} row writes, {reads} rows read, \
         {live} of {} keys live at the end",
        last.len()
    );
    assert!(live >= WRITERS * KEYS_PER_WRITER / 2);

    // 1.8 s later (the longest short TTL) only the ten-minute keys are left.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let now = Utc::now();
    let mut left: Vec<String> = table
        .clone()
        .with_clock(Clock::manual(now))
        .scan(Scan::all())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.value.id)
        .collect();
    left.sort();
    let mut long: Vec<String> = (0..WRITERS)
        .flat_map(|w| {
            (0..KEYS_PER_WRITER)
                .step_by(2)
                .map(move |k| format!("w{w:02}-k{k:02}"))
        })
        .collect();
    long.sort();
    assert_eq!(left, long);
}
