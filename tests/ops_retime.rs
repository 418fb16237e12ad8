//! Re-timing rows in place against Google's Bigtable emulator: extend and
//! shorten a row's TTL (one atomic row mutation that rewrites its cells at
//! the new timestamp and removes the old versions, the shadow column's value
//! kept), expire a row now, and the time left by the table's clock. Each
//! test runs on its own instance of the shared emulator.

mod support;

use bigtable_ttl::ops::Retime;
use bigtable_ttl::{BigtableRow, Clock, Error, RawCell, Scan, Table};
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
    let rows = table.raw_rows(Scan::keys([id])).await.unwrap();
    rows.into_iter()
        .flat_map(|(_, cells)| cells)
        .map(|c: RawCell| (String::from_utf8(c.qualifier).unwrap(), c.timestamp_micros))
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
        vec![("user".to_owned(), ms(later).timestamp_micros())]
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
