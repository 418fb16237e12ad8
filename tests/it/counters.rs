//! Counters against Google's Bigtable emulator: the rate-limit story (16
//! tasks × 500 increments, exactly 8,000, hidden once expired), a counter in
//! a one-second family that survives real garbage-collection passes until
//! its expiry (where a plain `ReadModifyWriteRow` cell is collected at once),
//! a counter that expired but was not collected starting again from zero,
//! typed errors before anything is sent, and a lost answer reported as
//! "outcome unknown".

use crate::raw_rows::RawRows as _;
use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bigtable_ttl::data;
use bigtable_ttl::data::Cell;
use bigtable_ttl::data::RawTable;
use bigtable_ttl::{BigtableRow, Clock, Connection, Error, Expiry, Insert, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};
use support::proxy::{Faults, Proxy};
use support::rows::RateLimit;

/// A session with a counter beside ordinary columns.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "visits", family = "v")]
struct Visit {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    user: String,
    #[bigtable(counter)]
    pages: i64,
}

/// `Visit` before it had a counter: a version of it (its marker).
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "visits", family = "v", marker = "Visit")]
struct VisitWithoutCounter {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    user: String,
}

fn ms(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

async fn raw<T: BigtableRow>(table: &Table<T>) -> Vec<Cell> {
    table
        .raw_rows(Scan::all())
        .await
        .unwrap()
        .into_iter()
        .flat_map(|(_, cells)| cells)
        .collect()
}

const TWO_HOURS: Expiry = Expiry::Ttl(TimeDelta::hours(2));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_tasks_count_exactly_eight_thousand_then_the_window_expires() {
    let clock = Clock::manual_at_now();
    let limits = support::table::<RateLimit>(&clock).await;
    let created = clock.now();
    let key = ("ann".to_owned(), 493_912_u64);
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (limits, key) = (limits.clone(), key.clone());
            tokio::spawn(async move {
                let mut seen = Vec::with_capacity(500);
                for _ in 0..500 {
                    let counted = limits
                        .increment(&key, RateLimit::HITS, 1, TWO_HOURS)
                        .await
                        .unwrap();
                    seen.push((counted.value, counted.expires_at));
                }
                seen
            })
        })
        .collect();
    let mut values = BTreeSet::new();
    for task in tasks {
        for (value, expires_at) in task.await.unwrap() {
            assert!(values.insert(value), "value {value} returned twice");
            assert_eq!(
                expires_at,
                ms(created + TimeDelta::hours(2)),
                "fixed at creation"
            );
        }
    }
    assert_eq!(values, (1..=8_000).collect::<BTreeSet<i64>>());

    let read = limits.get(&key).await.unwrap().unwrap();
    assert_eq!(read.value.hits, 8_000);
    assert_eq!(read.expires_at, ms(created + TimeDelta::hours(2)));
    // The counter, its window mark and the row marker, one version each,
    // whatever the 8,000 increments: nothing piles up.
    let cells = raw(&limits).await;
    let qualifiers: Vec<&[u8]> = cells.iter().map(|c| c.qualifier.as_slice()).collect();
    assert_eq!(
        qualifiers,
        [&b"\0\0RateLimit"[..], b"\0hits", b"hits"],
        "one version each: {cells:?}"
    );

    clock.advance(TimeDelta::hours(2));
    assert_eq!(limits.get(&key).await.unwrap(), None, "hidden at +2 h");
    assert_eq!(
        raw(&limits).await.len(),
        3,
        "still stored: hidden, not collected"
    );

    // The next increment starts a new life from zero, not from 8,000.
    let fresh = limits
        .increment(&key, RateLimit::HITS, 1, TWO_HOURS)
        .await
        .unwrap();
    assert_eq!(fresh.value, 1);
    assert_eq!(fresh.expires_at, ms(clock.now() + TimeDelta::hours(2)));
}

/// The emulator collects a one-second family every 0.5 to 1.5 s by its own
/// clock. A counter created with a 6 s expiry is still stored after 4 s of
/// watching (several passes), is collected after its expiry; a counter
/// incremented by a plain `ReadModifyWriteRow` (stamped with the server's
/// now) is never visible and is collected within seconds.
#[tokio::test]
async fn a_counter_survives_real_garbage_collection_until_its_expiry() {
    let limits = support::table::<RateLimit>(&Clock::system()).await;
    let ours = ("gc".to_owned(), 1_u64);
    let counted = limits
        .increment(
            &ours,
            RateLimit::HITS,
            3,
            Expiry::Ttl(TimeDelta::seconds(6)),
        )
        .await
        .unwrap();
    let expiry = counted.expires_at;

    // The same increment by hand, without the creation step.
    let rule = data::ReadModifyWriteRule::increment("r", b"hits".to_vec(), 3);
    RawTable::new(limits.connection(), limits.name())
        .read_modify_write_row("plain#00000000000000000001", vec![rule])
        .await
        .unwrap();
    let plain_key = ("plain".to_owned(), 1_u64);
    assert_eq!(limits.get(&plain_key).await.unwrap(), None, "dead at once");

    let stored = |rows: &[(Vec<u8>, Vec<Cell>)], prefix: &[u8]| {
        rows.iter().any(|(key, _)| key.starts_with(prefix))
    };
    let started = Instant::now();
    let mut plain_gone_after = None;
    while started.elapsed() < Duration::from_secs(4) {
        let rows = limits.raw_rows(Scan::all()).await.unwrap();
        assert!(
            stored(&rows, b"gc#"),
            "our counter was collected {:?} after creation, before its expiry",
            started.elapsed()
        );
        if plain_gone_after.is_none() && !stored(&rows, b"plain#") {
            plain_gone_after = Some(started.elapsed());
        }
        assert_eq!(limits.get(&ours).await.unwrap().unwrap().value.hits, 3);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let plain_gone_after = plain_gone_after.expect("the plain counter was never collected in 4 s");
    println!("plain RMW counter collected after {plain_gone_after:?}; ours kept 4 s");

    loop {
        let rows = limits.raw_rows(Scan::all()).await.unwrap();
        if !stored(&rows, b"gc#") {
            break;
        }
        assert!(
            Utc::now() < expiry + TimeDelta::seconds(15),
            "not collected 15 s after its expiry"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(Utc::now() >= expiry, "collected before its expiry");
}

#[tokio::test]
async fn a_counter_beside_columns_reads_zero_until_incremented_and_keeps_the_row_expiry() {
    let clock = Clock::manual_at_now();
    let visits = support::table::<Visit>(&clock).await;
    let expires_at = ms(clock.now() + TimeDelta::minutes(30));
    let visit = Visit {
        id: "v1".into(),
        expires_at,
        user: "ann".into(),
        pages: 10,
    };
    visits.put(&visit).await.unwrap();
    let key = "v1".to_owned();
    // The counter is live (written with the row): the expiry given here is
    // only for a counter that has to be created.
    let counted = visits
        .increment(&key, Visit::PAGES, 2, TWO_HOURS)
        .await
        .unwrap();
    assert_eq!((counted.value, counted.expires_at), (12, expires_at));
    let read = visits.get(&key).await.unwrap().unwrap();
    assert_eq!(read.value.pages, 12);
    assert_eq!(read.expires_at, expires_at);
    assert!(visits
        .delete_if(&key, Visit::PAGES.equals(11))
        .await
        .is_ok_and(|d| !d));
    assert!(visits
        .delete_if(&key, Visit::PAGES.equals(12))
        .await
        .unwrap());

    // A row written by a struct without the counter reads 0.
    // An earlier version runs in a process of its own: its own connection.
    Table::<VisitWithoutCounter>::new(support::connection_to(visits.connection()))
        .with_clock(clock.clone())
        .put(&VisitWithoutCounter {
            id: "v2".into(),
            expires_at,
            user: "bob".into(),
        })
        .await
        .unwrap();
    let v2 = visits.get(&"v2".to_owned()).await.unwrap().unwrap();
    assert_eq!((v2.value.user.as_str(), v2.value.pages), ("bob", 0));
}

#[tokio::test]
async fn bad_expiries_are_refused_before_anything_is_sent() {
    let clock = Clock::manual_at_now();
    let limits = support::table::<RateLimit>(&clock).await;
    let key = ("bad".to_owned(), 1_u64);
    let err = limits
        .increment(&key, RateLimit::HITS, 1, Expiry::PolicyDefault)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::MissingExpiry { .. }), "{err:?}");
    let err = limits
        .increment(
            &key,
            RateLimit::HITS,
            1,
            Expiry::At(clock.now() - TimeDelta::seconds(1)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err:?}");
    let err = limits
        .increment(&key, RateLimit::HITS, 1, Expiry::Ttl(TimeDelta::zero()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NonPositiveTtl { .. }), "{err:?}");
    assert!(raw(&limits).await.is_empty(), "nothing written");
}

/// An increment whose answer is lost is not re-sent: the caller is told the
/// outcome is unknown, and the emulator shows it was applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_increment_is_outcome_unknown_never_resent() {
    let direct = support::connection();
    let clock = Clock::manual_at_now();
    let limits_direct = Table::<RateLimit>::new(direct.clone()).with_clock(clock.clone());
    limits_direct.ensure_schema().await.unwrap();
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap();
    let limits = Table::<RateLimit>::new(conn).with_clock(clock.clone());
    let key = ("lost".to_owned(), 7_u64);
    // A lost answer to the creation step is harmless: it is conditional, and
    // the increment after it counts once.
    proxy.arm(Faults::LoseResponse {
        request_bytes: 1,
        hold: Duration::from_millis(500),
        times: 1,
    });
    let counted = limits
        .increment(&key, RateLimit::HITS, 1, TWO_HOURS)
        .await
        .unwrap();
    assert_eq!((proxy.resets(), counted.value), (1, 1));

    // An increment is two requests, the conditional creation step then the
    // `ReadModifyWriteRow`: measure them, then lose the second one's answer.
    proxy.arm(Faults::None);
    limits
        .increment(&key, RateLimit::HITS, 1, TWO_HOURS)
        .await
        .unwrap();
    let before = proxy.client_bytes();
    limits
        .increment(&key, RateLimit::HITS, 1, TWO_HOURS)
        .await
        .unwrap();
    let one_increment = proxy.client_bytes() - before;
    // A conditional write that never matches, sent twice: the second is
    // measured (the first warms the connection's header table up). A
    // conditional delete: its predicate, a live row and a column's value,
    // is the creation step's size or less (a `put_if` also checks the row
    // is no other struct's, and outgrew it).
    let limits = &limits;
    let probe = || async {
        limits
            .delete_if(&key, RateLimit::HITS.equals(-1))
            .await
            .unwrap()
    };
    probe().await;
    let before = proxy.client_bytes();
    let missed = probe().await;
    assert!(!missed);
    let check_and_mutate = proxy.client_bytes() - before;
    println!(
        "an increment sends {one_increment} bytes; a CheckAndMutateRow about {check_and_mutate}"
    );
    assert!(check_and_mutate < one_increment);
    proxy.arm(Faults::LoseResponse {
        // Past the creation step (its request is about the size of the
        // probe's), inside the increment's own request.
        request_bytes: check_and_mutate.midpoint(one_increment),
        hold: Duration::from_millis(500),
        times: 1,
    });
    let err = limits
        .increment(&key, RateLimit::HITS, 1, TWO_HOURS)
        .await
        .unwrap_err();
    assert_eq!(proxy.resets(), 1);
    let Error::OutcomeUnknown(e) = &err else {
        panic!("expected OutcomeUnknown, got {err:?}")
    };
    assert_eq!(e.table, "rate_limits");
    let read = limits_direct.get(&key).await.unwrap().unwrap();
    println!("after a lost answer the counter reads {}", read.value.hits);
    assert_eq!(read.value.hits, 4, "applied once, by the emulator");
}

/// A counter lives in its row: in a struct with required fields, an
/// increment on a row that is not live (never written, or expired though
/// still stored) is refused and leaves nothing behind, and every read and
/// `insert_if_absent` go on as if it had not been tried.
#[tokio::test]
async fn an_increment_never_makes_a_row_a_reader_cannot_read() {
    let clock = Clock::manual_at_now();
    let visits = support::table::<Visit>(&clock).await;
    let ghost = "ghost".to_owned();
    let err = visits
        .increment(&ghost, Visit::PAGES, 1, TWO_HOURS)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoLiveRow { .. }), "{err:?}");
    assert!(support::stored_cells(&visits, "ghost").await.is_empty());
    assert_eq!(visits.get(&ghost).await.unwrap(), None);
    assert!(visits.scan(Scan::all()).await.unwrap().is_empty());

    // A row that expired a moment ago by the table's clock, still stored.
    let key = "v1".to_owned();
    visits
        .put(&Visit {
            id: key.clone(),
            expires_at: clock.now() + TimeDelta::seconds(1),
            user: "ann".into(),
            pages: 5,
        })
        .await
        .unwrap();
    clock.advance(TimeDelta::seconds(2));
    let err = visits
        .increment(&key, Visit::PAGES, 1, TWO_HOURS)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoLiveRow { .. }), "{err:?}");
    assert_eq!(visits.get(&key).await.unwrap(), None);
    assert!(visits.scan(Scan::all()).await.unwrap().is_empty());
    let bob = Visit {
        id: key.clone(),
        expires_at: ms(clock.now() + TimeDelta::hours(1)),
        user: "bob".into(),
        pages: 0,
    };
    assert!(matches!(
        visits.insert_if_absent(&bob).await.unwrap(),
        Insert::Inserted(_)
    ));
    let counted = visits
        .increment(&key, Visit::PAGES, 1, TWO_HOURS)
        .await
        .unwrap();
    assert_eq!((counted.value, counted.expires_at), (1, bob.expires_at));
    let read = visits.get(&key).await.unwrap().unwrap();
    assert_eq!((read.value.user.as_str(), read.value.pages), ("bob", 1));
}

/// A basket: a counter and a map of entries with their own TTLs.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "baskets", family = "b")]
struct Basket {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    #[bigtable(counter)]
    views: i64,
    #[bigtable(map, family = "items")]
    items: BTreeMap<String, u64>,
}

/// An increment on an expired row makes a whole new row: an entry written
/// with a longer TTL than its old row is not read again.
#[tokio::test]
async fn an_increment_brings_no_expired_entry_back() {
    let clock = Clock::manual_at_now();
    let baskets = support::table::<Basket>(&clock).await;
    let key = "b1".to_owned();
    baskets
        .put(&Basket {
            id: key.clone(),
            expires_at: clock.now() + TimeDelta::minutes(1),
            views: 0,
            items: BTreeMap::new(),
        })
        .await
        .unwrap();
    let day = Expiry::Ttl(TimeDelta::days(1));
    let entry = baskets
        .put_entry(&key, Basket::ITEMS, &"old".to_owned(), &1, day)
        .await
        .unwrap();
    assert!(entry.is_some(), "written into the live row");

    clock.advance(TimeDelta::minutes(2));
    assert_eq!(baskets.get(&key).await.unwrap(), None);
    assert!(baskets
        .entries(&key, Basket::ITEMS)
        .await
        .unwrap()
        .is_empty());
    let counted = baskets
        .increment(&key, Basket::VIEWS, 1, TWO_HOURS)
        .await
        .unwrap();
    assert_eq!(counted.value, 1);
    assert!(baskets
        .entries(&key, Basket::ITEMS)
        .await
        .unwrap()
        .is_empty());
    let read = baskets.get(&key).await.unwrap().unwrap();
    assert_eq!((read.value.views, read.value.items.len()), (1, 0));
    let stored = support::stored_cells(&baskets, "b1").await;
    assert!(
        stored.iter().all(|c| c.family != "items"),
        "the old entry was deleted with the old row: {stored:?}"
    );
}

/// One client's increments of one counter with 2.5 s windows for about
/// 6 s, its clock `skew` away from the server's (the emulator's, which is
/// the machine's): what each call returned, with the real time before it.
async fn windows_with_skew(skew: TimeDelta) -> Vec<(i64, DateTime<Utc>, DateTime<Utc>)> {
    let clock = Clock::manual(Utc::now() + skew);
    let limits = support::table::<RateLimit>(&clock).await;
    let key = ("skew".to_owned(), 1_u64);
    let window = Expiry::Ttl(TimeDelta::milliseconds(2_500));
    let until = Instant::now() + Duration::from_secs(6);
    let mut seen = Vec::new();
    while Instant::now() < until {
        clock.set(Utc::now() + skew);
        let before = Utc::now();
        let counted = limits
            .increment(&key, RateLimit::HITS, 1, window)
            .await
            .unwrap();
        seen.push((counted.value, counted.expires_at, before));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seen
}

/// A window's expiry never moves and no count continues a window the
/// server had ended, with the client's clock behind or ahead of the
/// server's: every new expiry starts again from one, and a count past one
/// belongs to a window still open when its call began.
#[tokio::test]
async fn windows_hold_whatever_the_skew_between_client_and_server() {
    for skew in [
        TimeDelta::milliseconds(-1_500),
        TimeDelta::milliseconds(1_500),
    ] {
        let seen = windows_with_skew(skew).await;
        let mut windows = 0;
        for pair in seen.windows(2) {
            let ((_, before_expiry, _), (value, expires_at, began)) = (pair[0], pair[1]);
            if expires_at == before_expiry {
                assert_eq!(value, pair[0].0 + 1, "skew {skew}: {seen:?}");
                assert!(
                    expires_at > began,
                    "skew {skew}: counted {value} into a window that ended at {expires_at}, \
                     before the call began at {began}"
                );
            } else {
                windows += 1;
                assert_eq!(value, 1, "skew {skew}: a new expiry, a new count: {seen:?}");
            }
        }
        assert!(windows >= 2, "skew {skew}: windows rolled over: {seen:?}");
    }
}

/// Updates of other fields go through while eight tasks increment a counter
/// of the same row: they do not touch it, so they do not conflict on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_of_other_fields_do_not_conflict_with_increments() {
    let clock = Clock::manual_at_now();
    let visits = support::table::<Visit>(&clock).await;
    let key = "busy".to_owned();
    visits
        .put(&Visit {
            id: key.clone(),
            expires_at: clock.now() + TimeDelta::hours(1),
            user: "ann".into(),
            pages: 0,
        })
        .await
        .unwrap();
    let incrementers: Vec<_> = (0..8)
        .map(|_| {
            let (visits, key) = (visits.clone(), key.clone());
            tokio::spawn(async move {
                for _ in 0..100 {
                    visits
                        .increment(&key, Visit::PAGES, 1, TWO_HOURS)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for i in 0..30 {
        let updated = visits
            .update(&key)
            .set(Visit::USER, &format!("user {i}"))
            .apply()
            .await
            .unwrap_or_else(|e| panic!("update {i}: {e}"));
        assert!(updated.is_some(), "update {i}");
    }
    for task in incrementers {
        task.await.unwrap();
    }
    let read = visits.get(&key).await.unwrap().unwrap();
    assert_eq!(
        (read.value.user.as_str(), read.value.pages),
        ("user 29", 800)
    );
}
