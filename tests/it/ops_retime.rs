//! Re-timing rows in place against Google's Bigtable emulator: extend and
//! shorten a row's TTL (one atomic row mutation that rewrites its cells at
//! the new timestamp and removes the old versions, the shadow column's value
//! kept), expire a row now, and the time left by the table's clock. Each
//! test runs on its own instance of the shared emulator.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Barrier;

use bigtable_ttl::data::Cell;
use bigtable_ttl::Retime;
use bigtable_ttl::{BigtableRow, Clock, Error, Table};
use chrono::{DateTime, TimeDelta, Utc};
use support::rows::Session;

/// The shared click without an `expire_at` field: what is read back after a
/// re-time is the value written, whatever its new expiry.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d", written_at)]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
    referrer: Option<String>,
    #[ttl(for = "1h")]
    hot: Option<String>,
}

fn ms(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

fn click(id: &str) -> Click {
    Click {
        id: id.into(),
        url: "/home".into(),
        referrer: Some("/ref".into()),
        hot: Some("yes".into()),
    }
}

fn key(id: &str) -> String {
    id.to_owned()
}

/// The stored cells of row `id` as (qualifier, timestamp), every version.
async fn stored<T: BigtableRow>(table: &Table<T>, id: &str) -> Vec<(String, i64)> {
    support::stored_cells(table, id)
        .await
        .into_iter()
        .map(|c: Cell| (String::from_utf8(c.qualifier).unwrap(), c.timestamp_micros))
        .collect()
}

#[tokio::test]
async fn extending_rewrites_every_cell_once_and_keeps_the_write_time() {
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Click>(&clock).await;
    let written = table
        .put_with(click("c1").mutation().ttl(TimeDelta::hours(3)))
        .await
        .unwrap();
    let before = table.get(&key("c1")).await.unwrap().unwrap();
    assert_eq!(before.expires_at, written.expires_at);

    clock.advance(TimeDelta::minutes(10));
    let m = table
        .shift_expiry(&key("c1"), TimeDelta::days(1))
        .await
        .unwrap()
        .expect("the row exists");
    assert_eq!(m.expires_at, written.expires_at + TimeDelta::days(1));

    let after = table.get(&key("c1")).await.unwrap().unwrap();
    assert_eq!(after.expires_at, written.expires_at + TimeDelta::days(1));
    // WRITETIME() is still the original write, not the re-timing.
    assert_eq!(after.written_at, Some(written.written_at));
    assert_eq!(after.value, click("c1"));
    assert_eq!(
        table.time_left(&after),
        written.expires_at + TimeDelta::days(1) - clock.now()
    );

    // One version per column; the per-field 1h column keeps its own expiry.
    let mut cells = stored(&table, "c1").await;
    cells.sort();
    let hot_ts =
        (ms(written.written_at) + TimeDelta::hours(1) - TimeDelta::days(2)).timestamp_micros();
    assert_eq!(
        cells,
        vec![
            ("\0\0Click".to_owned(), m.timestamp_micros),
            ("hot".to_owned(), hot_ts),
            ("referrer".to_owned(), m.timestamp_micros),
            ("url".to_owned(), m.timestamp_micros),
            ("written_at".to_owned(), m.timestamp_micros),
        ]
    );
}

#[tokio::test]
async fn shortening_makes_the_row_expire_sooner_and_cannot_pass_now() {
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Click>(&clock).await;
    table.put(&click("c1")).await.unwrap();

    let m = table
        .set_ttl(&key("c1"), TimeDelta::minutes(30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.expires_at, ms(clock.now()) + TimeDelta::minutes(30));
    let row = table.get(&key("c1")).await.unwrap().unwrap();
    assert_eq!(row.expires_at, m.expires_at);
    // The 1h field now dies with its row.
    assert!(stored(&table, "c1")
        .await
        .iter()
        .all(|(_, ts)| *ts == m.timestamp_micros));

    let err = table
        .shift_expiry(&key("c1"), -TimeDelta::hours(1))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err}");

    let m = table
        .retime(&key("c1"), Retime::By(-TimeDelta::minutes(20)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.expires_at, ms(clock.now()) + TimeDelta::minutes(10));
    clock.advance(TimeDelta::minutes(11));
    assert!(table.get(&key("c1")).await.unwrap().is_none());
    // Expired rows cannot be re-timed back to life.
    assert!(table
        .set_ttl(&key("c1"), TimeDelta::hours(1))
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn one_second_rows_are_retimed_by_their_expiry() {
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Session>(&clock).await;
    let expires = clock.now() + TimeDelta::minutes(5);
    table
        .put(&Session {
            id: "s1".into(),
            expires_at: expires,
            user: "ann".into(),
        })
        .await
        .unwrap();
    let later = clock.now() + TimeDelta::hours(2);
    let m = table
        .retime(&key("s1"), Retime::At(later))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.timestamp_micros, ms(later).timestamp_micros());
    assert_eq!(
        stored(&table, "s1").await,
        vec![
            ("\0\0Session".to_owned(), ms(later).timestamp_micros()),
            ("user".to_owned(), ms(later).timestamp_micros())
        ]
    );
    let row = table.get(&key("s1")).await.unwrap().unwrap();
    assert_eq!(row.expires_at, ms(later));
}

#[tokio::test]
async fn delete_removes_every_cell() {
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Click>(&clock).await;
    table.put(&click("c1")).await.unwrap();
    table.put(&click("c2")).await.unwrap();
    table.delete(&key("c1")).await.unwrap();
    assert!(stored(&table, "c1").await.is_empty());
    assert!(table.get(&key("c1")).await.unwrap().is_none());
    assert!(table.get(&key("c2")).await.unwrap().is_some());
    // Expiring a missing row is not an error.
    table.delete(&key("nobody")).await.unwrap();
}

/// A re-time never restores values older than the last acknowledged write:
/// in each of 40 rounds a put of a new value and a re-time of the same row
/// start together; after both, the row holds the put's value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retime_racing_a_put_never_restores_the_older_value() {
    let clicks = support::table::<Click>(&Clock::system()).await;
    let key = key("raced");
    clicks.put(&click("raced")).await.unwrap();
    let mut conflicts = 0;
    for round in 0..40 {
        let next = Click {
            url: format!("/v{round}"),
            ..click("raced")
        };
        let start = Arc::new(Barrier::new(2));
        let retimer = {
            let (clicks, key, start) = (clicks.clone(), key.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                // Alternate longer and shorter, so every re-time rewrites.
                let ttl = TimeDelta::hours(if round % 2 == 0 { 30 } else { 20 });
                clicks.set_ttl(&key, ttl).await
            })
        };
        start.wait().await;
        clicks.put(&next).await.unwrap();
        match retimer.await.unwrap() {
            Ok(retimed) => assert!(retimed.is_some(), "round {round}: the row exists"),
            Err(Error::Conflict(e)) => {
                let bigtable_ttl::error::Conflict { attempts, .. } = *e;
                assert_eq!(attempts, bigtable_ttl::retry::RETIME_ROUNDS);
                conflicts += 1;
            }
            Err(e) => panic!("round {round}: {e}"),
        }
        let read = clicks.get(&key).await.unwrap().unwrap();
        assert_eq!(
            read.value.url, next.url,
            "round {round}: an older value restored"
        );
    }
    println!("40 rounds, {conflicts} re-times gave up on conflicts");
}

/// A re-time whose row changes between its read and its write reads again:
/// with a writer putting as fast as it can, re-times still succeed (or give
/// up with a typed conflict), and the last acknowledged put's value stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extending_in_a_loop_while_a_writer_puts() {
    let clicks = support::table::<Click>(&Clock::system()).await;
    let key = key("busy");
    clicks.put(&click("busy")).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let extender = {
        let (clicks, key, done) = (clicks.clone(), key.clone(), done.clone());
        tokio::spawn(async move {
            let (mut applied, mut conflicts) = (0, 0);
            while !done.load(Ordering::SeqCst) {
                match clicks.shift_expiry(&key, TimeDelta::minutes(1)).await {
                    Ok(Some(_)) => applied += 1,
                    Ok(None) => panic!("the row exists"),
                    Err(Error::Conflict { .. }) => conflicts += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            (applied, conflicts)
        })
    };
    let mut last = String::new();
    for i in 0..150 {
        last = format!("/w{i}");
        clicks
            .put(&Click {
                url: last.clone(),
                ..click("busy")
            })
            .await
            .unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let (applied, conflicts) = extender.await.unwrap();
    println!("150 puts; {applied} re-times applied, {conflicts} gave up");
    assert!(applied > 0, "some re-times got through");
    let read = clicks.get(&key).await.unwrap().unwrap();
    assert_eq!(read.value.url, last);
}

/// A touch slides an expiry later, never earlier: a row with 50 minutes
/// left touched for 10 minutes "when under an hour" keeps its 50 minutes.
#[tokio::test]
async fn touch_never_brings_an_expiry_closer() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    let key = key("c1");
    let written = clicks
        .put_with(click("c1").mutation().ttl(TimeDelta::minutes(50)))
        .await
        .unwrap();
    let touched = clicks
        .touch(&key, TimeDelta::minutes(10), TimeDelta::hours(1))
        .await
        .unwrap()
        .unwrap();
    assert!(!touched.rewritten, "{touched:?}");
    assert_eq!(touched.expires_at, written.expires_at);
    let read = clicks.get(&key).await.unwrap().unwrap();
    assert_eq!(read.expires_at, written.expires_at);
    // A longer TTL does move it, later.
    let touched = clicks
        .touch(&key, TimeDelta::minutes(90), TimeDelta::hours(1))
        .await
        .unwrap()
        .unwrap();
    assert!(touched.rewritten, "{touched:?}");
    assert_eq!(touched.expires_at, ms(clock.now() + TimeDelta::minutes(90)));
}

/// Sliding expiry: `touch` rewrites a row only when it has less time left
/// than asked, and never revives an expired one.
#[tokio::test]
async fn touch_slides_the_expiry_only_when_little_is_left() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    let key = key("t1");
    let written = clicks
        .put_with(click("t1").mutation().ttl(TimeDelta::minutes(30)))
        .await
        .unwrap();
    let before = stored(&clicks, "t1").await;
    let (idle, renew_under) = (TimeDelta::minutes(30), TimeDelta::minutes(25));

    clock.advance(TimeDelta::minutes(4));
    let touched = clicks
        .touch(&key, idle, renew_under)
        .await
        .unwrap()
        .unwrap();
    assert!(!touched.rewritten, "26 minutes left: {touched:?}");
    assert_eq!(touched.expires_at, written.expires_at);
    assert_eq!(stored(&clicks, "t1").await, before, "nothing written");

    clock.advance(TimeDelta::minutes(2));
    let touched = clicks
        .touch(&key, idle, renew_under)
        .await
        .unwrap()
        .unwrap();
    assert!(touched.rewritten, "24 minutes left: {touched:?}");
    assert_eq!(touched.expires_at, ms(clock.now() + idle));
    let read = clicks.get(&key).await.unwrap().unwrap();
    assert_eq!(read.expires_at, touched.expires_at);
    assert_eq!(read.value, click("t1"), "values kept");
    assert_eq!(
        stored(&clicks, "t1").await.len(),
        before.len(),
        "old versions gone"
    );

    clock.advance(TimeDelta::minutes(31));
    assert_eq!(clicks.touch(&key, idle, renew_under).await.unwrap(), None);
    assert_eq!(clicks.get(&key).await.unwrap(), None, "not revived");
    assert_eq!(
        clicks
            .touch(&"never".to_owned(), idle, renew_under)
            .await
            .unwrap(),
        None
    );
}
