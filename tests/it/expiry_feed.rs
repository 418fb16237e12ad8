//! The expiry feed (issue 42): `Table::expired` yields each row that died
//! within a window, with its last values and the instant it died; windows
//! that tile time yield each death exactly once; a feed is sharded by
//! `Part` and resumed after the last row it handled. `ops::expired` is the
//! same by family name. Against the emulator, on a manual clock started
//! at the real now and moved forward (the emulator collects on real time,
//! so nothing expired for the reader is collected meanwhile).

use std::collections::{BTreeMap, BTreeSet};

use bigtable_ttl::ops::{self, cut, ExpiryWindow, FamilyRows, Part};
use bigtable_ttl::{BigtableRow, Clock, Connection, Error, Policy, Table};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::TryStreamExt as _;

use crate::support;
use crate::support::proxy::Proxy;

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "feed_leases", family = "l")]
#[ttl(default = "1h")]
struct Lease {
    #[bigtable(key)]
    id: String,
    owner: String,
    #[ttl(for = "2m")]
    note: Option<String>,
    #[bigtable(map, family = "t")]
    tags: BTreeMap<String, String>,
}

fn lease(i: usize) -> Lease {
    Lease {
        id: format!("k{i:02}"),
        owner: format!("owner-{i}"),
        note: Some(format!("note-{i}")),
        tags: BTreeMap::from([("team".to_owned(), format!("t{}", i % 3))]),
    }
}

/// 40 rows dying 7 minutes apart from `t0`, 5 living on (their note, with
/// a TTL of its own, expires: not a death); the clock then 5 hours on. The
/// deaths by key. (Minutes, not seconds: the emulator collects on real
/// time, and a row must not be collected before the test reads it.)
async fn setup() -> (Table<Lease>, DateTime<Utc>, BTreeMap<String, DateTime<Utc>>) {
    let t0 = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let clock = Clock::manual(t0);
    let table = support::table::<Lease>(&clock).await;
    let mut deaths = BTreeMap::new();
    for i in 0..45 {
        let ttl = if i < 40 {
            TimeDelta::minutes(7 * (i64::try_from(i).unwrap() + 1))
        } else {
            TimeDelta::hours(10)
        };
        let written = table.put_with(lease(i).mutation().ttl(ttl)).await.unwrap();
        if i < 40 {
            deaths.insert(lease(i).id, written.expires_at);
        }
    }
    clock.set(t0 + TimeDelta::hours(5));
    (table, t0, deaths)
}

async fn feed(table: &Table<Lease>, window: ExpiryWindow) -> Vec<ops::ExpiredRow<Lease>> {
    table.expired(&window).try_collect().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_that_tile_time_yield_each_death_once_with_its_last_values() {
    let (table, t0, deaths) = setup().await;
    let now = table.clock().now();
    let e5 = deaths["k05"];
    // Uneven pieces, one ending and one starting exactly at a death, one a
    // single millisecond wide, one off the millisecond grid.
    let bounds = [
        t0 - TimeDelta::seconds(1),
        t0 + TimeDelta::seconds(210),
        e5,
        e5 + TimeDelta::milliseconds(1),
        t0 + TimeDelta::minutes(100) + TimeDelta::microseconds(500),
        t0 + TimeDelta::minutes(200),
        now,
    ];
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for pair in bounds.windows(2) {
        for row in feed(&table, ExpiryWindow::new(pair[0], pair[1])).await {
            assert!(pair[0] <= row.died_at && row.died_at < pair[1], "{row:?}");
            *seen.entry(row.value.id.clone()).or_default() += 1;
            let id = &row.value.id;
            assert_eq!(row.died_at, deaths[id], "{id} died when it expired");
            assert_eq!(String::from_utf8_lossy(&row.row_key), *id);
            let i: usize = id[1..].parse().unwrap();
            let mut expected = lease(i);
            // The note's own two minutes ended before a row dying later.
            if row.died_at > t0 + TimeDelta::minutes(2) {
                expected.note = None;
            }
            assert_eq!(row.value, expected, "the last values of {id}");
            assert_eq!(row.event_id.len(), 32);
        }
    }
    let once: BTreeMap<String, usize> = deaths.keys().map(|k| (k.clone(), 1)).collect();
    assert_eq!(seen, once, "each death once, no live row");

    // Another tiling, 13 equal windows: the same deaths, the same ids.
    let whole: Vec<_> = feed(&table, ExpiryWindow::new(t0, now)).await;
    let step = (now - t0) / 13;
    let mut tiled = Vec::new();
    for k in 0..13 {
        let from = t0 + step * k;
        let to = if k == 12 { now } else { t0 + step * (k + 1) };
        tiled.extend(feed(&table, ExpiryWindow::new(from, to)).await);
    }
    tiled.sort_by(|a, b| a.row_key.cmp(&b.row_key));
    assert_eq!(tiled, whole);
}

/// The feed reads with a server-side filter: only the rows holding a cell
/// that expired in the window come over the wire, so a window in which one
/// row died receives a small part of what the window of all 40 deaths
/// does, counted at a loopback proxy (the emulator ignores a filter it
/// does not understand: only its answer shows the filter works).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_receives_only_the_rows_that_died_in_it() {
    let (table, t0, deaths) = setup().await;
    let proxy = Proxy::start(&support::emulator_host()).await;
    let direct = table.connection();
    let conn = Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap();
    let through = Table::<Lease>::new(conn).with_clock(table.clock().clone());
    let e5 = deaths["k05"];
    let one = ExpiryWindow::new(e5, e5 + TimeDelta::milliseconds(1));
    let all = ExpiryWindow::new(t0, table.clock().now());
    // The connection's setup and header tables first, then measured.
    assert_eq!(feed(&through, one.clone()).await.len(), 1);
    let before = proxy.server_bytes();
    assert_eq!(feed(&through, one).await.len(), 1);
    let one_bytes = proxy.server_bytes() - before;
    let before = proxy.server_bytes();
    assert_eq!(feed(&through, all).await.len(), 40);
    let all_bytes = proxy.server_bytes() - before;
    assert!(
        one_bytes * 4 < all_bytes,
        "one death in {one_bytes} bytes, 40 in {all_bytes}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_is_sharded_by_part_and_resumed_after_the_last_row() {
    let (table, t0, deaths) = setup().await;
    let now = table.clock().now();
    let keys = |rows: Vec<ops::ExpiredRow<Lease>>| -> Vec<String> {
        rows.into_iter().map(|r| r.value.id).collect()
    };
    let whole = keys(feed(&table, ExpiryWindow::new(t0, now)).await);
    assert_eq!(whole, deaths.keys().cloned().collect::<Vec<_>>());
    let parts = cut(&[b"k10".to_vec(), b"k25".to_vec(), b"k33".to_vec()], 3);
    let mut sharded = Vec::new();
    for part in parts {
        let got = keys(feed(&table, ExpiryWindow::new(t0, now).with_part(part.clone())).await);
        assert!(got.iter().all(|k| part.contains(k.as_bytes())), "{got:?}");
        sharded.extend(got);
    }
    assert_eq!(sharded, whole, "the parts together, each death once");
    // Killed after row k19: resumed after it, the rest and nothing else.
    let resumed = keys(
        feed(
            &table,
            ExpiryWindow::new(t0, now).resume_after(b"k19".to_vec()),
        )
        .await,
    );
    let rest: Vec<String> = whole
        .iter()
        .filter(|k| k.as_str() > "k19")
        .cloned()
        .collect();
    assert_eq!(resumed, rest);
    // A resumed shard stays in its part.
    let part = Part::new(0, 2, Vec::new(), Some(b"k30".to_vec()));
    let resumed = keys(
        feed(
            &table,
            ExpiryWindow::new(t0, now)
                .with_part(part)
                .resume_after(b"k27".to_vec()),
        )
        .await,
    );
    assert_eq!(resumed, ["k28", "k29"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_reaching_past_now_is_refused_before_anything_is_read() {
    let (table, t0, _) = setup().await;
    let now = table.clock().now();
    for (from, to) in [(t0, now + TimeDelta::seconds(1)), (now, t0)] {
        let err = table
            .expired(&ExpiryWindow::new(from, to))
            .try_collect::<Vec<_>>()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidWindow { .. }), "{err}");
        assert!(err.to_string().contains("from <= to <= now"), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_family_judged_without_a_struct_dies_by_its_marker() {
    let (table, t0, deaths) = setup().await;
    let now = table.clock().now();
    let rows = FamilyRows::new(table.name(), "l", Policy::default_ttl(TimeDelta::hours(1)));
    let got: Vec<ops::ExpiredCells> =
        ops::expired(table.connection(), &rows, &ExpiryWindow::new(t0, now), now)
            .try_collect()
            .await
            .unwrap();
    let by_key: BTreeMap<String, DateTime<Utc>> = got
        .iter()
        .map(|r| (String::from_utf8_lossy(&r.row_key).into_owned(), r.died_at))
        .collect();
    assert_eq!(by_key, deaths, "the same deaths as the struct's rule");
    let k00 = &got[0];
    let columns: BTreeSet<Vec<u8>> = k00.cells.iter().map(|c| c.qualifier.clone()).collect();
    assert!(columns.iter().any(|c| c == b"owner"), "{columns:?}");
    assert!(columns.iter().any(|c| c == b"\0\0Lease"), "{columns:?}");
    // The same death, the same id, whoever reads it.
    let typed = feed(&table, ExpiryWindow::new(t0, now)).await;
    assert_eq!(typed[0].event_id, k00.event_id);
}
