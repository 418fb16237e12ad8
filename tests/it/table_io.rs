//! `Table<T>` against Google's Bigtable emulator: typed writes and filtered
//! reads under both strategies, expiry metadata, "a write replaces",
//! expired-but-not-collected cells, per-field TTLs, several families, real
//! garbage collection, and a cross-check with `cbt`. Each test runs on its
//! own instance of the shared emulator, most on a manual clock.

use crate::raw_rows::RawRows as _;
use crate::support;

use std::time::{Duration, Instant};

use bigtable_ttl::data::Cell;
use bigtable_ttl::{BigtableRow, Clock, Scan, Table};
use chrono::{DateTime, Local, TimeDelta, Utc};
use futures_util::TryStreamExt as _;
use support::rows::Click;
use support::{cbt, connection};

/// One-second strategy: every row carries its expiry.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "sessions", family = "s")]
struct Session {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    user: String,
    device: Option<String>,
}

/// Two families: `c` (the struct's) and `m`.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "metrics", family = "c")]
#[ttl(default = "2d")]
struct Metric {
    #[bigtable(key)]
    id: String,
    name: String,
    #[bigtable(family = "m")]
    count: i64,
    #[bigtable(family = "m")]
    #[ttl(for = "1h")]
    spike: Option<bool>,
}

/// `t` truncated to the millisecond, as Bigtable stores it.
fn ms(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

/// A manual clock at the wall clock's "now" (the emulator garbage-collects by
/// its own wall clock, so cells must not be in its past), with sub-millisecond
/// digits so truncation is exercised.
fn clock() -> Clock {
    let now = Utc::now();
    let now = if now.timestamp_subsec_micros().is_multiple_of(1000) {
        now + TimeDelta::microseconds(321)
    } else {
        now
    };
    Clock::manual(now)
}

fn session(id: &str, expires_at: DateTime<Utc>, device: Option<&str>) -> Session {
    Session {
        id: id.into(),
        expires_at,
        user: format!("user of {id}"),
        device: device.map(str::to_owned),
    }
}

fn click(id: &str, url: &str) -> Click {
    Click {
        id: id.into(),
        url: url.into(),
        referrer: None,
        hot: None,
        expires: None,
    }
}

fn key(id: &str) -> String {
    id.to_owned()
}

/// The cells of `row` in column `family:qualifier`.
fn cells_of<'a>(row: &'a [Cell], family: &str, qualifier: &str) -> Vec<&'a Cell> {
    row.iter()
        .filter(|c| c.family == family && c.qualifier == qualifier.as_bytes())
        .collect()
}

#[tokio::test]
async fn one_second_rows_get_scan_stream_and_delete() {
    let clock = clock();
    let table = support::table::<Session>(&clock).await;
    let now = clock.now();
    let expiry = now + TimeDelta::minutes(30) + TimeDelta::microseconds(777);

    let written = table
        .put(&session("u1#a", expiry, Some("phone")))
        .await
        .unwrap();
    assert_eq!(written.row_key, b"u1#a");
    assert_eq!(written.expires_at, ms(expiry));
    assert_eq!(written.timestamp_micros, ms(expiry).timestamp_micros());
    assert_eq!(written.written_at, ms(now));
    table
        .put_all(&[
            session("u1#b", expiry, None),
            session("u2#a", expiry + TimeDelta::minutes(1), None),
        ])
        .await
        .unwrap();

    let got = table.get(&key("u1#a")).await.unwrap().expect("row present");
    assert_eq!(got.value, session("u1#a", ms(expiry), Some("phone")));
    assert_eq!(got.expires_at, ms(expiry));
    assert_eq!(got.written_at, None, "Session declares no shadow column");
    assert_eq!(got.time_left(now), ms(expiry) - now);
    assert!(table.get(&key("nobody")).await.unwrap().is_none());

    let ids = |rows: Vec<bigtable_ttl::Expiring<Session>>| {
        rows.into_iter().map(|r| r.value.id).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(table.scan(Scan::all()).await.unwrap()),
        ["u1#a", "u1#b", "u2#a"]
    );
    assert_eq!(
        ids(table.scan(Scan::prefix("u1#")).await.unwrap()),
        ["u1#a", "u1#b"]
    );
    assert_eq!(
        ids(table.scan(Scan::all().limit(2)).await.unwrap()),
        ["u1#a", "u1#b"]
    );
    assert_eq!(
        ids(table.scan(Scan::range("u1#b".."u2#z")).await.unwrap()),
        ["u1#b", "u2#a"]
    );
    assert_eq!(
        ids(table.scan(Scan::range("u1#a"..="u1#b")).await.unwrap()),
        ["u1#a", "u1#b"]
    );
    assert_eq!(
        ids(table.scan(Scan::keys(["u2#a", "nobody"])).await.unwrap()),
        ["u2#a"]
    );
    assert!(table
        .scan(Scan::keys(Vec::<String>::new()))
        .await
        .unwrap()
        .is_empty());

    let streamed: Vec<_> = table
        .stream(Scan::prefix("u1#"))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ids(streamed), ["u1#a", "u1#b"]);
    let second = table.scan(Scan::keys(["u2#a"])).await.unwrap();
    assert_eq!(second[0].expires_at, ms(expiry + TimeDelta::minutes(1)));

    table.delete(&key("u1#a")).await.unwrap();
    assert!(table.get(&key("u1#a")).await.unwrap().is_none());
    assert!(table
        .raw_rows(Scan::keys(["u1#a"]))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        ids(table.scan(Scan::all()).await.unwrap()),
        ["u1#b", "u2#a"]
    );
    // Deleting a missing row is fine.
    table.delete(&key("u1#a")).await.unwrap();
}

#[tokio::test]
async fn default_rows_carry_expiry_write_time_and_drop_none_columns() {
    let clock = clock();
    let table = support::table::<Click>(&clock).await;
    let now = clock.now();

    let mut c = click("k1", "/home");
    c.referrer = Some("search".into());
    let written = table.put(&c).await.unwrap();
    assert_eq!(written.expires_at, ms(now) + TimeDelta::days(2));
    assert_eq!(written.timestamp_micros, ms(now).timestamp_micros());

    let got = table.get(&key("k1")).await.unwrap().unwrap();
    assert_eq!(got.url, "/home");
    assert_eq!(got.referrer.as_deref(), Some("search"));
    assert_eq!(got.expires_at, ms(now) + TimeDelta::days(2));
    assert_eq!(got.written_at, Some(ms(now)));
    // The expire_at field reads back as the row's expiry.
    assert_eq!(got.expires, Some(got.expires_at));

    // Written again later with referrer None: the column is deleted.
    clock.advance(TimeDelta::minutes(5));
    let later = clock.now();
    table.put(&click("k1", "/home")).await.unwrap();
    let got = table.get(&key("k1")).await.unwrap().unwrap();
    assert_eq!(got.referrer, None);
    assert_eq!(got.written_at, Some(ms(later)));
    assert_eq!(got.expires_at, ms(later) + TimeDelta::days(2));
    let raw = table.raw_rows(Scan::keys(["k1"])).await.unwrap();
    assert_eq!(raw.len(), 1);
    assert!(cells_of(&raw[0].1, "c", "referrer").is_empty(), "{raw:?}");
    assert_eq!(cells_of(&raw[0].1, "c", "url").len(), 1, "{raw:?}");

    // Per-row override through the expire_at field.
    let mut c = click("k2", "/cart");
    // Microseconds past a millisecond: stored truncated to it.
    let expires = now + TimeDelta::hours(3) + TimeDelta::microseconds(5);
    c.expires = Some(expires);
    table.put(&c).await.unwrap();
    let got = table.get(&key("k2")).await.unwrap().unwrap();
    assert_eq!(got.expires_at, ms(expires));

    // Per-write override through the builder, beating the field.
    table
        .put_with(c.mutation().ttl(TimeDelta::minutes(10)))
        .await
        .unwrap();
    let got = table.get(&key("k2")).await.unwrap().unwrap();
    assert_eq!(got.expires_at, ms(later) + TimeDelta::minutes(10));
    let raw = table.raw_rows(Scan::keys(["k2"])).await.unwrap();
    let url = cells_of(&raw[0].1, "c", "url");
    assert_eq!(url.len(), 1);
    // Default strategy: timestamp = write time + (ttl - default).
    assert_eq!(
        url[0].timestamp_micros,
        (ms(later) + TimeDelta::minutes(10) - TimeDelta::days(2)).timestamp_micros()
    );
}

#[tokio::test]
async fn a_write_replaces_whatever_the_ttls() {
    let clock = clock();
    let table = support::table::<Click>(&clock).await;
    let now = clock.now();
    let mut c = click("k", "/old");
    c.hot = Some("yes".into());
    table
        .put_with(c.mutation().ttl(TimeDelta::days(3)))
        .await
        .unwrap();
    c.url = "/new".into();
    c.hot = Some("still".into());
    table
        .put_with(c.mutation().ttl(TimeDelta::hours(1)))
        .await
        .unwrap();

    let got = table.get(&key("k")).await.unwrap().unwrap();
    assert_eq!(got.url, "/new");
    assert_eq!(got.hot.as_deref(), Some("still"));
    assert_eq!(got.expires_at, ms(now) + TimeDelta::hours(1));

    // Every written column holds one version: the older 3-day cells are gone.
    let raw = table.raw_rows(Scan::all()).await.unwrap();
    assert_eq!(raw.len(), 1);
    for q in ["url", "hot", "written_at", "\0\0Click"] {
        assert_eq!(cells_of(&raw[0].1, "c", q).len(), 1, "{q}: {raw:?}");
    }
    assert_eq!(raw[0].1.len(), 4, "{raw:?}");

    // Two hours on, the row is absent, not the older 3-day value.
    clock.advance(TimeDelta::hours(2));
    assert!(table.get(&key("k")).await.unwrap().is_none());
    assert!(table.scan(Scan::all()).await.unwrap().is_empty());
}

#[tokio::test]
async fn expired_but_not_collected_is_hidden() {
    let clock = clock();
    let table = support::table::<Session>(&clock).await;
    let now = clock.now();
    let expiry = now + TimeDelta::minutes(10);
    table
        .put(&session("s1", expiry, Some("tablet")))
        .await
        .unwrap();
    table
        .put(&session("s2", expiry + TimeDelta::minutes(5), None))
        .await
        .unwrap();

    // One millisecond before the expiry it is there; at the expiry it is not.
    clock.set(ms(expiry) - TimeDelta::milliseconds(1));
    assert!(table.get(&key("s1")).await.unwrap().is_some());
    clock.set(ms(expiry));
    assert!(table.get(&key("s1")).await.unwrap().is_none());
    let scanned = table.scan(Scan::all()).await.unwrap();
    assert_eq!(
        scanned.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["s2"]
    );

    // The cells are still stored: only the reader hides them.
    let raw = table.raw_rows(Scan::keys(["s1"])).await.unwrap();
    assert_eq!(raw.len(), 1);
    let cells = &raw[0].1;
    assert_eq!(cells.len(), 3, "user, device and the row marker: {cells:?}");
    assert!(cells
        .iter()
        .all(|c| c.timestamp_micros == ms(expiry).timestamp_micros()));

    // Default strategy: past two days the row is hidden, still stored.
    let clicks = Table::<Click>::new(table.connection().clone()).with_clock(clock.clone());
    clicks.ensure_schema().await.unwrap();
    clock.set(now);
    clicks.put(&click("k", "/x")).await.unwrap();
    clock.set(ms(now) + TimeDelta::days(2) - TimeDelta::milliseconds(1));
    assert!(clicks.get(&key("k")).await.unwrap().is_some());
    clock.set(ms(now) + TimeDelta::days(2));
    assert!(clicks.get(&key("k")).await.unwrap().is_none());
    assert_eq!(clicks.raw_rows(Scan::all()).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_per_field_ttl_ends_the_field_not_the_row() {
    let clock = clock();
    let table = support::table::<Click>(&clock).await;
    let now = clock.now();
    let mut c = click("k", "/sale");
    c.hot = Some("trending".into());
    table.put(&c).await.unwrap();
    assert_eq!(
        table.get(&key("k")).await.unwrap().unwrap().hot.as_deref(),
        Some("trending")
    );

    clock.advance(TimeDelta::hours(2));
    let got = table
        .get(&key("k"))
        .await
        .unwrap()
        .expect("row still present");
    assert_eq!(got.hot, None);
    assert_eq!(got.url, "/sale");
    assert_eq!(got.expires_at, ms(now) + TimeDelta::days(2));
    // Still stored: GC has not run (the cell is within the family's 2 days).
    let raw = table.raw_rows(Scan::all()).await.unwrap();
    assert_eq!(cells_of(&raw[0].1, "c", "hot").len(), 1);

    clock.advance(TimeDelta::days(2));
    assert!(table.get(&key("k")).await.unwrap().is_none());
}

#[tokio::test]
async fn several_families() {
    let clock = clock();
    let table = Table::<Metric>::new(connection())
        .with_name("metrics_test")
        .with_clock(clock.clone());
    assert_eq!(table.name(), "metrics_test");
    table.ensure_schema().await.unwrap();
    table.verify_schema().await.unwrap();
    let m = Metric {
        id: "cpu".into(),
        name: "load".into(),
        count: 42,
        spike: Some(true),
    };
    table.put(&m).await.unwrap();
    let got = table.get(&key("cpu")).await.unwrap().unwrap();
    assert_eq!(got.value, m);
    assert_eq!(got.expires_at, ms(clock.now()) + TimeDelta::days(2));

    let raw = table.raw_rows(Scan::all()).await.unwrap();
    let mut families: Vec<&str> = raw[0].1.iter().map(|c| c.family.as_str()).collect();
    families.dedup();
    assert_eq!(families, ["c", "m"]);

    clock.advance(TimeDelta::hours(2));
    let got = table.get(&key("cpu")).await.unwrap().unwrap();
    assert_eq!(got.spike, None);
    assert_eq!(got.count, 42);
}

/// Reads select the struct's families only when the table may hold others:
/// after `ensure_schema` found none, no selector; once another application's
/// family is there, a new handle's `ensure_schema` reports it and reads
/// select again; the handle that saw none still decodes the same rows (the
/// foreign cells reach it and are skipped).
#[tokio::test]
async fn reads_select_families_only_when_the_table_holds_others() {
    use bigtable_ttl::filter::{read_filter, read_filter_sole_families};
    let clock = clock();
    let conn = connection();
    let table = Table::<Metric>::new(conn.clone()).with_clock(clock.clone());
    let now = clock.now();
    // Before anything is known of the table, families are selected.
    assert_eq!(table.read_filter(now), read_filter(Metric::SCHEMA, now));
    let report = table.ensure_schema().await.unwrap();
    assert!(report.other_families.is_empty(), "{report:?}");
    assert_eq!(
        table.read_filter(now),
        read_filter_sole_families(Metric::SCHEMA, now)
    );
    let m = Metric {
        id: "cpu".into(),
        name: "load".into(),
        count: 7,
        spike: None,
    };
    table.put(&m).await.unwrap();

    cbt(&conn, &["createfamily", "metrics", "x"]);
    cbt(&conn, &["set", "metrics", "cpu", "x:name=someone else's"]);
    let raw = table.raw_rows(Scan::all()).await.unwrap();
    assert!(raw[0].1.iter().any(|c| c.family == "x"), "{raw:?}");

    // The handle that saw no other family: the foreign cell is skipped.
    let rows = table.scan(Scan::all()).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].value, m);

    let fresh = Table::<Metric>::new(conn).with_clock(clock.clone());
    let report = fresh.ensure_schema().await.unwrap();
    assert_eq!(report.other_families, ["x"]);
    assert_eq!(fresh.read_filter(now), read_filter(Metric::SCHEMA, now));
    assert_eq!(fresh.get(&key("cpu")).await.unwrap().unwrap().value, m);
    // verify_schema learns the same.
    table.verify_schema().await.unwrap();
    assert_eq!(table.read_filter(now), read_filter(Metric::SCHEMA, now));
}

#[tokio::test]
async fn put_all_writes_every_row() {
    let clock = clock();
    let table = support::table::<Click>(&clock).await;
    let now = clock.now();
    let rows: Vec<Click> = (0..250)
        .map(|i| click(&format!("c{i:04}"), &format!("/page/{i}")))
        .collect();
    let written = table.put_all(&rows).await.unwrap();
    assert_eq!(written.len(), 250);
    assert!(written
        .iter()
        .all(|w| w.expires_at == ms(now) + TimeDelta::days(2)));
    assert_eq!(written[7].row_key, b"c0007");
    let read = table.scan(Scan::all()).await.unwrap();
    assert_eq!(read.len(), 250);
    assert_eq!(read[249].url, "/page/249");

    // Per-row overrides.
    let written = table
        .put_all_with(
            rows[..2]
                .iter()
                .map(|r| r.mutation().ttl(TimeDelta::hours(1))),
        )
        .await
        .unwrap();
    assert_eq!(written[1].expires_at, ms(now) + TimeDelta::hours(1));
    clock.advance(TimeDelta::hours(2));
    assert_eq!(table.scan(Scan::all()).await.unwrap().len(), 248);
}

#[tokio::test]
async fn garbage_collection_really_removes_expired_one_second_rows() {
    // The emulator collects by its own wall clock: use the system clock.
    let table = Table::<Session>::new(connection());
    table.ensure_schema().await.unwrap();
    let expiry = Utc::now() + TimeDelta::seconds(2);
    table.put(&session("s", expiry, None)).await.unwrap();
    assert_eq!(table.raw_rows(Scan::all()).await.unwrap().len(), 1);
    assert!(table.get(&key("s")).await.unwrap().is_some());

    let started = Instant::now();
    loop {
        if table.raw_rows(Scan::all()).await.unwrap().is_empty() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the emulator did not collect the expired row within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let gone_at = Utc::now();
    assert!(gone_at >= ms(expiry), "collected before its expiry");
    assert!(
        gone_at - expiry < TimeDelta::seconds(10),
        "collected {} after expiry",
        gone_at - expiry
    );
}

#[tokio::test]
async fn cbt_shows_the_computed_timestamps() {
    let clock = clock();
    let table = support::table::<Click>(&clock).await;
    let now = clock.now();
    let c = click("cbt-row", "/cbt");
    let written = table
        .put_with(c.mutation().ttl(TimeDelta::hours(1)))
        .await
        .unwrap();
    let expected_ts = ms(now) + TimeDelta::hours(1) - TimeDelta::days(2);
    assert_eq!(written.timestamp_micros, expected_ts.timestamp_micros());

    let out = cbt(table.connection(), &["read", table.name()]);
    assert!(out.contains("cbt-row"), "{out}");
    // cbt prints timestamps in local time, to the microsecond.
    let shown = expected_ts
        .with_timezone(&Local)
        .format("%Y/%m/%d-%H:%M:%S%.6f")
        .to_string();
    for column in ["c:url", "c:written_at"] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(column))
            .unwrap_or_else(|| panic!("no {column} in {out}"));
        assert!(line.contains(&shown), "{column}: expected @ {shown}\n{out}");
    }
    assert!(out.contains("\"/cbt\""), "{out}");
}

/// The emulator sends a whole row in one response message: a row over
/// tonic's default 4 MiB message cap must still read.
#[tokio::test]
async fn large_values_round_trip() {
    let clock = clock();
    let table = support::table::<Click>(&clock).await;
    let big = "x".repeat(6 * 1024 * 1024);
    table.put(&click("big", &big)).await.unwrap();
    table.put(&click("small", "/s")).await.unwrap();
    let got = table.get(&key("big")).await.unwrap().unwrap();
    assert_eq!(got.url.len(), big.len());
    assert_eq!(table.scan(Scan::all()).await.unwrap().len(), 2);
}

/// A three-part key: tenant, user, sequence number.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "visits", family = "v", key_separator = "#")]
#[ttl(default = "1h")]
struct Visit {
    #[bigtable(key)]
    tenant: String,
    #[bigtable(key)]
    user: String,
    #[bigtable(key)]
    seq: u64,
    page: String,
}

/// Scans by the first key fields and by a range of keys, typed: no key
/// bytes encoded by hand, and a prefix never takes in a longer tenant name.
#[tokio::test]
async fn typed_prefix_and_range_scans_select_by_key_fields() {
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Visit>(&clock).await;
    let mut visits = Vec::new();
    for tenant in ["acme", "acme2", "acm"] {
        for user in ["ann", "bob"] {
            for seq in 0..4 {
                visits.push(Visit {
                    tenant: tenant.into(),
                    user: user.into(),
                    seq,
                    page: format!("/{tenant}/{user}/{seq}"),
                });
            }
        }
    }
    table.put_all(&visits).await.unwrap();
    let keys = |scan| async {
        let rows = table.scan(scan).await.unwrap();
        rows.into_iter()
            .map(|r| (r.value.tenant, r.value.user, r.value.seq))
            .collect::<Vec<_>>()
    };
    let acme = keys(Scan::key_prefix::<Visit>(&("acme".to_owned(),)).unwrap()).await;
    assert_eq!(acme.len(), 8, "{acme:?}");
    assert!(acme.iter().all(|(t, _, _)| t == "acme"), "{acme:?}");
    let ann =
        keys(Scan::key_prefix::<Visit>(&("acme".to_owned(), "ann".to_owned())).unwrap()).await;
    assert_eq!(
        ann,
        (0..4)
            .map(|s| ("acme".to_owned(), "ann".to_owned(), s))
            .collect::<Vec<_>>()
    );
    let start = ("acme".to_owned(), "ann".to_owned(), 1);
    let end = ("acme".to_owned(), "bob".to_owned(), 2);
    let range = keys(Scan::key_range::<Visit>(&start..&end).unwrap()).await;
    assert_eq!(
        range,
        [("ann", 1), ("ann", 2), ("ann", 3), ("bob", 0), ("bob", 1)].map(|(u, s)| (
            "acme".to_owned(),
            u.to_owned(),
            s
        ))
    );
    // A prefix part holding the separator is refused, not encoded by hand.
    assert!(Scan::key_prefix::<Visit>(&("ac#me".to_owned(),)).is_err());
}

/// A row keyed by raw bytes.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "blobs", family = "b")]
#[ttl(default = "1d")]
struct Blob {
    #[bigtable(key)]
    id: Vec<u8>,
    body: String,
}

#[tokio::test]
async fn keys_can_be_passed_borrowed() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    clicks.put(&click("c1", "/home")).await.unwrap();

    // `&str` for a `String` key, and the owned key as before.
    let by_str = clicks.get("c1").await.unwrap().expect("c1 is live");
    assert_eq!(by_str.url, "/home");
    let owned = "c1".to_owned();
    assert_eq!(clicks.get(&owned).await.unwrap(), Some(by_str));
    let updated = clicks
        .update("c1")
        .set(Click::URL, &"/away".to_owned())
        .apply()
        .await
        .unwrap();
    assert!(updated.is_some());
    assert!(clicks
        .set_ttl("c1", TimeDelta::hours(1))
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        clicks.get(owned.as_str()).await.unwrap().unwrap().url,
        "/away"
    );
    clicks.delete("c1").await.unwrap();
    assert_eq!(clicks.get("c1").await.unwrap(), None);

    // `&[u8]` for a `Vec<u8>` key.
    let blobs = Table::<Blob>::new(clicks.connection().clone()).with_clock(clock.clone());
    blobs.ensure_schema().await.unwrap();
    let id = vec![0x00, 0xff, b'k'];
    blobs
        .put(&Blob {
            id: id.clone(),
            body: "bytes".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        blobs.get(&b"\x00\xffk"[..]).await.unwrap().unwrap().body,
        "bytes"
    );
    assert_eq!(blobs.get(&id).await.unwrap().unwrap().body, "bytes");
    blobs.delete(id.as_slice()).await.unwrap();
    assert_eq!(blobs.get(id.as_slice()).await.unwrap(), None);
}

/// A reading before its `unit` field was dropped: another version of the
/// struct below (its marker), on the same table and family.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "readings", family = "r", marker = "Reading")]
#[ttl(default = "1d")]
struct OldReading {
    #[bigtable(key)]
    id: String,
    value: i64,
    unit: String,
}

/// A reading that owns its family: a whole-row write clears `r` with one
/// `DeleteFromFamily`.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "readings", family = "r", owns_family)]
#[ttl(default = "1d")]
struct Reading {
    #[bigtable(key)]
    id: String,
    value: i64,
    note: Option<String>,
}

/// A struct that owns its family keeps replace-on-write with one delete for
/// the family: a later write with a shorter TTL is what reads back, each
/// column holds one version, and cells of a field the struct no longer has
/// are gone too.
#[tokio::test]
async fn a_struct_owning_its_family_replaces_the_whole_family() {
    let clock = clock();
    let readings = support::table::<Reading>(&clock).await;
    let old = Table::<OldReading>::new(support::connection_to(readings.connection()))
        .with_clock(clock.clone());
    old.put(&OldReading {
        id: "r1".into(),
        value: 1,
        unit: "kg".into(),
    })
    .await
    .unwrap();
    let long = Reading {
        id: "r1".into(),
        value: 2,
        note: Some("long".into()),
    };
    readings
        .put_with(long.mutation().ttl(TimeDelta::days(3)))
        .await
        .unwrap();
    let short = Reading {
        id: "r1".into(),
        value: 3,
        note: None,
    };
    let written = readings
        .put_with(short.mutation().ttl(TimeDelta::hours(1)))
        .await
        .unwrap();

    let read = readings.get(&"r1".to_owned()).await.unwrap().unwrap();
    assert_eq!(read.value, short);
    assert_eq!(read.expires_at, written.expires_at);
    let cells = support::stored_cells(&readings, "r1").await;
    let mut stored: Vec<(&[u8], i64)> = cells
        .iter()
        .map(|c| (c.qualifier.as_slice(), c.timestamp_micros))
        .collect();
    stored.sort_unstable();
    let ts = written.timestamp_micros;
    assert_eq!(
        stored,
        [(&b"\0\0Reading"[..], ts), (&b"value"[..], ts)],
        "{cells:?}"
    );
}

/// The bulk writer, which encodes each row straight into its request's
/// bytes, keeps replace-on-write for a struct owning its family: after a
/// whole-row write, an old version of a field, a field now `None` and a
/// field the struct no longer has are all gone.
#[tokio::test]
async fn the_bulk_writer_replaces_an_owned_family_whole() {
    let clock = clock();
    let readings = support::table::<Reading>(&clock).await;
    let old = Table::<OldReading>::new(support::connection_to(readings.connection()))
        .with_clock(clock.clone());
    old.put(&OldReading {
        id: "r1".into(),
        value: 1,
        unit: "kg".into(),
    })
    .await
    .unwrap();
    let rows = [
        Reading {
            id: "r1".into(),
            value: 2,
            note: Some("first".into()),
        },
        Reading {
            id: "r1".into(),
            value: 3,
            note: None,
        },
    ];
    for row in &rows {
        // A later timestamp for each write: older cells would be versions
        // of their own, not overwritten in place.
        clock.advance(TimeDelta::seconds(1));
        let mut writer = readings.writer();
        writer.send(row).await.unwrap();
        assert_eq!(writer.finish().await.unwrap().rows_written, 1);
    }

    let read = readings.get(&"r1".to_owned()).await.unwrap().unwrap();
    assert_eq!(read.value, rows[1]);
    let cells = support::stored_cells(&readings, "r1").await;
    let mut stored: Vec<&[u8]> = cells.iter().map(|c| c.qualifier.as_slice()).collect();
    stored.sort_unstable();
    assert_eq!(stored, [&b"\0\0Reading"[..], &b"value"[..]], "{cells:?}");
}
