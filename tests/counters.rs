//! Counters against Google's Bigtable emulator: the rate-limit story (16
//! tasks × 500 increments, exactly 8,000, hidden once expired), a counter in
//! a one-second family that survives real garbage-collection passes until
//! its expiry (where a plain `ReadModifyWriteRow` cell is collected at once),
//! a counter that expired but was not collected starting again from zero,
//! typed errors before anything is sent, and a lost answer reported as
//! "outcome unknown".

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bigtable_ttl::proto::{read_modify_write_rule, ReadModifyWriteRowRequest, ReadModifyWriteRule};
use bigtable_ttl::{BigtableRow, Clock, Connection, Error, Expiry, RawCell, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};
use support::proxy::{Faults, Proxy};

/// Requests of one user in one hour-long window.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "rate_limits", family = "r", key_separator = "#")]
struct RateLimit {
    #[bigtable(key)]
    user: String,
    #[bigtable(key)]
    hour: u64,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    #[bigtable(counter)]
    hits: i64,
}

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

/// `Visit` before it had a counter.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "visits", family = "v")]
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

async fn raw<T: BigtableRow>(table: &Table<T>) -> Vec<RawCell> {
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
    let cells = raw(&limits).await;
    assert_eq!(cells.len(), 1, "one cell, one version: {cells:?}");

    clock.advance(TimeDelta::hours(2));
    assert_eq!(limits.get(&key).await.unwrap(), None, "hidden at +2 h");
    assert_eq!(
        raw(&limits).await.len(),
        1,
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
    let mut client = limits.connection().data_client(limits.name()).unwrap();
    let rule = ReadModifyWriteRule {
        family_name: "r".into(),
        column_qualifier: b"hits".to_vec(),
        rule: Some(read_modify_write_rule::Rule::IncrementAmount(3)),
    };
    client
        .read_modify_write_row(ReadModifyWriteRowRequest {
            table_name: limits.connection().table_path(limits.name()),
            row_key: b"plain#00000000000000000001".to_vec(),
            rules: vec![rule],
            ..ReadModifyWriteRowRequest::default()
        })
        .await
        .unwrap();
    let plain_key = ("plain".to_owned(), 1_u64);
    assert_eq!(limits.get(&plain_key).await.unwrap(), None, "dead at once");

    let stored = |rows: &[(Vec<u8>, Vec<RawCell>)], prefix: &[u8]| {
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
    Table::<VisitWithoutCounter>::new(visits.connection().clone())
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
    // measured (the first warms the connection's header table up).
    let limits = &limits;
    let probe = || {
        let row = RateLimit {
            user: key.0.clone(),
            hour: key.1,
            expires_at: clock.now() + TimeDelta::hours(1),
            hits: 0,
        };
        async move {
            limits
                .put_if(&row, RateLimit::HITS.equals(-1))
                .await
                .unwrap()
        }
    };
    probe().await;
    let before = proxy.client_bytes();
    let missed = probe().await;
    assert!(missed.is_none());
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
    let Error::OutcomeUnknown { table, .. } = &err else {
        panic!("expected OutcomeUnknown, got {err:?}")
    };
    assert_eq!(table, "rate_limits");
    let read = limits_direct.get(&key).await.unwrap().unwrap();
    println!("after a lost answer the counter reads {}", read.value.hits);
    assert_eq!(read.value.hits, 4, "applied once, by the emulator");
}
