//! `Scan::limit(n)` against Google's Bigtable emulator, over tables where
//! the server returns rows the typed reader leaves out: a row whose
//! required column has expired while a map entry of it is still live is
//! sent by the server (it has a visible cell) but is not live. A limited
//! read must still give the first `n` live rows (the last `n` reversed),
//! for every scan shape and every way of reading; the unlimited read must
//! agree with `get` key by key.

use crate::raw_rows::RawRows as _;
use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::{BigtableRow, Clock, Error, Expiry, Scan, Table};
use chrono::{TimeDelta, Utc};
use futures_util::TryStreamExt as _;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "limited", family = "l")]
#[ttl(default = "1d")]
struct Item {
    #[bigtable(key)]
    id: String,
    n: u64,
    #[bigtable(map, family = "tags")]
    tags: BTreeMap<String, u64>,
}

/// How a row is written, all at the clock's start; every read happens
/// [`LATER`] on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Lives a day.
    Live,
    /// Lives a day; its entry expired an hour in.
    LiveEntryGone,
    /// Expired an hour in, its entry lives three hours: the server still
    /// returns the row (the entry is a visible cell), the reader leaves it
    /// out.
    EntryOutlivesRow,
    /// Expired an hour in, entries and all: the server's filter drops it.
    Gone,
}

const LATER: TimeDelta = TimeDelta::hours(2);

impl Kind {
    fn live(self) -> bool {
        matches!(self, Kind::Live | Kind::LiveEntryGone)
    }
}

fn any_kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Live),
        Just(Kind::LiveEntryGone),
        Just(Kind::EntryOutlivesRow),
        Just(Kind::Gone),
    ]
}

/// A manual clock at the wall clock's now (the emulator collects by its own
/// wall clock, so nothing written here is collected during a test).
fn clock() -> Clock {
    Clock::manual(Utc::now() + TimeDelta::microseconds(321))
}

/// Write row `id` as `kind` says, through the library's own writes.
async fn write(table: &Table<Item>, id: &str, kind: Kind, i: u64) {
    let item = Item {
        id: id.to_owned(),
        n: i,
        tags: BTreeMap::new(),
    };
    let (row, entry) = match kind {
        Kind::Live => (TimeDelta::days(1), None),
        Kind::LiveEntryGone => (TimeDelta::days(1), Some(TimeDelta::hours(1))),
        Kind::EntryOutlivesRow => (TimeDelta::hours(1), Some(TimeDelta::hours(3))),
        Kind::Gone => (TimeDelta::hours(1), Some(TimeDelta::minutes(30))),
    };
    table
        .put_with(item.mutation().ttl(row))
        .await
        .unwrap_or_else(|e| panic!("put {id}: {e}"));
    if let Some(ttl) = entry {
        let written = table
            .put_entry(
                &id.to_owned(),
                Item::TAGS,
                &"t".to_owned(),
                &i,
                Expiry::Ttl(ttl),
            )
            .await
            .unwrap_or_else(|e| panic!("put_entry {id}: {e}"));
        assert!(
            written.is_some(),
            "{id} was live when its entry was written"
        );
    }
}

/// A fresh table holding `rows`, the clock then moved [`LATER`] on.
async fn table_with(rows: &[(String, Kind)]) -> Table<Item> {
    let clock = clock();
    let table = support::table::<Item>(&clock).await;
    for (i, (id, kind)) in rows.iter().enumerate() {
        write(&table, id, *kind, u64::try_from(i).unwrap()).await;
    }
    clock.advance(LATER);
    table
}

/// The scan shapes over a table whose rows of interest start with `k`
/// (others lie before and after), each forward then reversed.
fn shapes(keys: &[String]) -> Vec<Scan> {
    let pick = |i: usize| keys[i.min(keys.len() - 1)].clone();
    let mut listed: Vec<String> = keys.iter().step_by(2).cloned().collect();
    listed.push("k-missing".to_owned());
    listed.extend(keys.iter().skip(1).step_by(3).cloned());
    let forward = [
        Scan::all(),
        Scan::prefix("k"),
        Scan::range(pick(1)..pick(keys.len().saturating_sub(2).max(1))),
        Scan::range(pick(1)..=pick(keys.len().saturating_sub(2).max(1))),
        Scan::range(pick(2)..),
        Scan::keys(listed),
    ];
    forward
        .iter()
        .cloned()
        .chain(forward.iter().cloned().map(Scan::reversed))
        .collect()
}

async fn ids_scanned(table: &Table<Item>, scan: Scan) -> Vec<String> {
    let rows = table
        .scan(scan.clone())
        .await
        .unwrap_or_else(|e| panic!("{scan:?}: {e}"));
    rows.into_iter().map(|r| r.value.id).collect()
}

async fn ids_streamed(table: &Table<Item>, scan: Scan) -> Vec<String> {
    table
        .stream(scan.clone())
        .map_ok(|r| r.value.id)
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("{scan:?}: {e}"))
}

async fn ids_in_parallel(table: &Table<Item>, scan: Scan) -> Vec<String> {
    table
        .scan_parallel(scan.clone(), 3)
        .map_ok(|r| r.value.id)
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("{scan:?}: {e}"))
}

/// The ids of `keys` that `get` shows, in the scan's order.
async fn live_by_get(table: &Table<Item>, keys: &[String], reversed: bool) -> Vec<String> {
    let mut keys = keys.to_vec();
    keys.sort();
    keys.dedup();
    if reversed {
        keys.reverse();
    }
    let mut live = Vec::new();
    for key in keys {
        let row = table
            .get(&key)
            .await
            .unwrap_or_else(|e| panic!("get {key}: {e}"));
        if row.is_some() {
            live.push(key);
        }
    }
    live
}

/// The stored keys `scan` covers, by an unfiltered read.
async fn stored_keys(table: &Table<Item>, scan: Scan) -> Vec<String> {
    table
        .raw_rows(scan)
        .await
        .unwrap()
        .into_iter()
        .map(|(k, _)| String::from_utf8(k).unwrap())
        .collect()
}

/// Every limit from 1 to one past the rows `scan` covers, read every way:
/// the first `n` of the unlimited read, which is what `get` shows.
async fn check_limits(table: &Table<Item>, scan: &Scan) -> Result<(), String> {
    let stored = stored_keys(table, scan.clone()).await;
    let unlimited = ids_scanned(table, scan.clone()).await;
    let by_get = live_by_get(table, &stored, scan.is_reversed()).await;
    if unlimited != by_get {
        return Err(format!("{scan:?}: the scan {unlimited:?}, get {by_get:?}"));
    }
    let streamed = ids_streamed(table, scan.clone()).await;
    if streamed != unlimited {
        return Err(format!(
            "{scan:?}: streamed {streamed:?}, scanned {unlimited:?}"
        ));
    }
    for n in 1..=stored.len() + 1 {
        let expected = &unlimited[..n.min(unlimited.len())];
        let limited = scan.clone().limit(u64::try_from(n).unwrap());
        for (how, got) in [
            ("scan", ids_scanned(table, limited.clone()).await),
            ("stream", ids_streamed(table, limited.clone()).await),
            (
                "scan_parallel",
                ids_in_parallel(table, limited.clone()).await,
            ),
        ] {
            if got != expected {
                return Err(format!(
                    "{how} of {limited:?}: {got:?}, expected {expected:?} (stored {stored:?})"
                ));
            }
        }
    }
    Ok(())
}

/// Twelve mixed rows (three of each kind, the row the server returns but
/// the reader leaves out first, in the middle and last), between live rows
/// outside the prefix.
fn mixed_rows() -> Vec<(String, Kind)> {
    use Kind::{EntryOutlivesRow as Out, Gone, Live, LiveEntryGone as Lg};
    let kinds = [
        Out, Live, Out, Lg, Gone, Live, Out, Out, Lg, Live, Gone, Out,
    ];
    let mut rows = vec![("a-before".to_owned(), Live)];
    rows.extend(
        kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| (format!("k{i:02}"), *kind)),
    );
    rows.push(("z-after".to_owned(), Live));
    rows
}

#[tokio::test]
async fn a_limited_scan_returns_the_first_live_rows_of_every_shape_and_reader() {
    let started = Instant::now();
    let rows = mixed_rows();
    let table = table_with(&rows).await;
    let keys: Vec<String> = rows
        .iter()
        .filter(|(id, _)| id.starts_with('k'))
        .map(|(id, _)| id.clone())
        .collect();

    // The premise: rows the reader leaves out are ones the server returns.
    let now = table.clock().now().timestamp_micros();
    let day = TimeDelta::days(1).num_microseconds().unwrap();
    for (id, kind) in &rows {
        let cells = support::stored_cells(&table, id).await;
        let visible = cells.iter().any(|c| c.timestamp_micros + day > now);
        assert_eq!(
            visible,
            *kind != Kind::Gone,
            "{id} ({kind:?}) has a cell the server's filter lets through: {cells:?}"
        );
        let shown = table.get(id).await.unwrap().is_some();
        assert_eq!(shown, kind.live(), "get {id} ({kind:?})");
    }

    for scan in shapes(&keys) {
        check_limits(&table, &scan).await.unwrap();
    }
    println!("every shape and limit in {:?}", started.elapsed());
}

/// The cells of `n`, as another writer might store them: three bytes
/// where the struct reads eight.
fn corrupt(table: &Table<Item>, id: &str) {
    support::cbt(table.connection(), &["set", "limited", id, "l:n=bad"]);
}

#[tokio::test]
async fn rows_skipped_as_undecodable_do_not_count_toward_a_limit() {
    let rows: Vec<(String, Kind)> = (0..8).map(|i| (format!("k{i:02}"), Kind::Live)).collect();
    let table = table_with(&rows).await;
    for id in ["k00", "k01", "k03", "k06", "k07"] {
        corrupt(&table, id);
    }
    let skipping = table
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    for (scan, all) in [
        (Scan::all(), ["k02", "k04", "k05"]),
        (Scan::all().reversed(), ["k05", "k04", "k02"]),
    ] {
        for n in 1..=4 {
            let got = ids_scanned(&skipping, scan.clone().limit(n)).await;
            let n = usize::try_from(n).unwrap();
            assert_eq!(got, all[..n.min(all.len())], "{scan:?} limit {n}");
            let streamed = ids_streamed(&skipping, scan.clone().limit(n as u64)).await;
            assert_eq!(streamed, got);
        }
    }
    // Without skipping, a row that does not decode is an error, as ever.
    let err = table.scan(Scan::all().limit(1)).await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode(e) if e.row_key == b"k00"),
        "{err:?}"
    );
    let err = table.scan(Scan::range("k02"..).limit(3)).await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode(e) if e.row_key == b"k03"),
        "{err:?}"
    );
}

/// Without `PROPTEST_CASES`, no case starts after this long: the test
/// stays bounded on a loaded machine.
const BUDGET: Duration = Duration::from_secs(40);

#[test]
fn a_limited_scan_of_any_mix_of_rows_is_the_start_of_the_unlimited_one() {
    let asked: Option<u32> = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(Config {
        cases: asked.unwrap_or(16),
        failure_persistence: None,
        ..Config::default()
    });
    let started = Instant::now();
    let case = (
        prop::collection::vec(any_kind(), 1..=12),
        0..6usize,
        any::<bool>(),
    );
    let result = runner.run(&case, |(kinds, shape, reversed)| {
        if asked.is_none() && started.elapsed() > BUDGET {
            return Ok(());
        }
        let rows: Vec<(String, Kind)> = kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| (format!("k{i:02}"), *kind))
            .collect();
        let keys: Vec<String> = rows.iter().map(|(id, _)| id.clone()).collect();
        rt.block_on(async {
            let table = table_with(&rows).await;
            let scan = shapes(&keys)[shape + if reversed { 6 } else { 0 }].clone();
            check_limits(&table, &scan).await
        })
        .map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    println!("cases in {:?}", started.elapsed());
}
