//! Conditional writes against Google's Bigtable emulator: insert if absent
//! (an expired row not yet garbage-collected counts as absent, a live one
//! as present, one winner among racers), typed conditions on a field's live
//! value (exact bytes, compare-and-set), the write rules kept by every
//! conditional write, and typed errors before anything is sent.

use crate::support;

use std::time::Duration;

use bigtable_ttl::data::Cell;
use bigtable_ttl::{BigtableRow, Clock, Connection, Error, Insert, Table};
use chrono::TimeDelta;
use support::proxy::{Faults, Proxy};
use support::rows::{click, session, Click, Page, Session};

/// A claim on a job, one hour unless said otherwise.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "claims", family = "c")]
#[ttl(default = "1h")]
struct Claim {
    #[bigtable(key)]
    job: String,
    worker: String,
}

fn claim(job: &str, worker: &str) -> Claim {
    Claim {
        job: job.to_owned(),
        worker: worker.to_owned(),
    }
}

/// A counter updated by compare-and-set.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "counters", family = "n")]
#[ttl(default = "1d")]
struct Counter {
    #[bigtable(key)]
    name: String,
    count: i64,
}

/// Values a regular expression would misread.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "tags", family = "t")]
#[ttl(default = "1d")]
struct Tag {
    #[bigtable(key)]
    id: String,
    name: String,
    blob: Vec<u8>,
}

async fn raw<T: BigtableRow>(table: &Table<T>, key: &str) -> Vec<Cell> {
    support::stored_cells(table, key).await
}

#[tokio::test]
async fn an_expired_row_not_yet_collected_counts_as_absent() {
    let clock = Clock::manual_at_now();
    let claims = support::table::<Claim>(&clock).await;
    claims.put(&claim("job-1", "old")).await.unwrap();
    clock.advance(TimeDelta::hours(2));
    let stored = raw(&claims, "job-1").await;
    assert_eq!(
        stored.len(),
        2,
        "the expired cell and its row marker are still stored: {stored:?}"
    );
    assert_eq!(claims.get(&"job-1".to_owned()).await.unwrap(), None);

    let won = claims
        .insert_if_absent(&claim("job-1", "new"))
        .await
        .unwrap();
    let Insert::Inserted(written) = won else {
        panic!("the expired row should count as absent: {won:?}")
    };
    assert_eq!(written.row_key, b"job-1");
    let read = claims.get(&"job-1".to_owned()).await.unwrap().unwrap();
    assert_eq!(read.value, claim("job-1", "new"));
    assert_eq!(read.expires_at, written.expires_at);
    // Replace-on-write: the old version is gone, not shadowed.
    let stored = raw(&claims, "job-1").await;
    assert_eq!(
        stored.len(),
        2,
        "the row marker and the worker, one version each: {stored:?}"
    );
    assert_eq!(stored[0].qualifier, Claim::SCHEMA.marker);
    assert_eq!(stored[1].value, b"new");
}

#[tokio::test]
async fn an_expired_session_counts_as_absent_under_cell_expiry() {
    let clock = Clock::manual_at_now();
    let sessions = support::table::<Session>(&clock).await;
    sessions
        .put(&session("s1", clock.now() + TimeDelta::hours(1)))
        .await
        .unwrap();
    clock.advance(TimeDelta::hours(2));
    assert!(!raw(&sessions, "s1").await.is_empty(), "still stored");
    let fresh = session("s1", clock.now() + TimeDelta::hours(1));
    let won = sessions.insert_if_absent(&fresh).await.unwrap();
    assert!(matches!(won, Insert::Inserted(_)), "{won:?}");
    let live = sessions.insert_if_absent(&fresh).await.unwrap();
    assert!(matches!(live, Insert::Exists(_)), "{live:?}");
}

#[tokio::test]
async fn a_live_row_wins_and_is_returned_untouched() {
    let clock = Clock::manual_at_now();
    let claims = support::table::<Claim>(&clock).await;
    let first = claims.put(&claim("job-2", "first")).await.unwrap();
    let before = raw(&claims, "job-2").await;
    clock.advance(TimeDelta::minutes(59));

    let lost = claims
        .insert_if_absent(&claim("job-2", "second"))
        .await
        .unwrap();
    let Insert::Exists(holder) = lost else {
        panic!("a live row holds the key: {lost:?}")
    };
    assert_eq!(holder.value, claim("job-2", "first"));
    assert_eq!(holder.expires_at, first.expires_at);
    assert_eq!(raw(&claims, "job-2").await, before, "nothing written");
}

/// 16 tasks race for one fresh key, 20 times: one winner each round, the
/// losers see the winner's row, and the row read back is the winner's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_racers_one_winner_per_round() {
    let claims = support::table::<Claim>(&Clock::system()).await;
    for round in 0..20 {
        let job = format!("race-{round}");
        let racers: Vec<_> = (0..16)
            .map(|racer| {
                let claims = claims.clone();
                let job = job.clone();
                tokio::spawn(async move {
                    let row = claim(&job, &format!("racer-{racer}"));
                    (racer, claims.insert_if_absent(&row).await.unwrap())
                })
            })
            .collect();
        let mut winners = Vec::new();
        let mut seen_by_losers = Vec::new();
        for racer in racers {
            match racer.await.unwrap() {
                (racer, Insert::Inserted(_)) => winners.push(format!("racer-{racer}")),
                (_, Insert::Exists(row)) => seen_by_losers.push(row.value.worker),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let winner = &winners[0];
        assert!(
            seen_by_losers.iter().all(|w| w == winner),
            "round {round}: losers saw {seen_by_losers:?}, winner {winner}"
        );
        let read = claims.get(&job).await.unwrap().unwrap();
        assert_eq!(&read.value.worker, winner, "round {round}");
    }
}

/// A note whose every field is an `Option`: a value with every field
/// `None` stores no column at all, only its row marker.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "notes", family = "n")]
#[ttl(default = "1h")]
struct Note {
    #[bigtable(key)]
    id: String,
    text: Option<String>,
}

/// Eight racers insert a value that stores no column: exactly one wins,
/// and the row it made exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_winner_even_for_a_value_that_stores_no_column() {
    let notes = support::table::<Note>(&Clock::system()).await;
    for round in 0..5 {
        let id = format!("empty-{round}");
        let racers: Vec<_> = (0..8)
            .map(|_| {
                let (notes, id) = (notes.clone(), id.clone());
                tokio::spawn(async move {
                    let note = Note { id, text: None };
                    notes.insert_if_absent(&note).await.unwrap()
                })
            })
            .collect();
        let mut inserted = 0;
        for racer in racers {
            if let Insert::Inserted(_) = racer.await.unwrap() {
                inserted += 1;
            }
        }
        assert_eq!(inserted, 1, "round {round}");
        let read = notes.get(&id).await.unwrap().expect("the winner's row");
        assert_eq!(read.value.text, None);
    }
}

/// A row whose required `url` expired while its `user` lives is not live,
/// to writes as to reads: an insert writes a whole row (no `Conflict`), a
/// partial update, a touch and a re-time leave it alone (each `None`), and
/// it still reads as absent afterwards.
#[tokio::test]
async fn a_partially_expired_row_is_absent_to_writes_as_to_reads() {
    let clock = Clock::manual(chrono::Utc::now());
    let pages = support::table::<Page>(&clock).await;
    let conn = pages.connection().clone();
    for row in ["a", "b"] {
        support::cbt(&conn, &["set", "pages", row, "p:url=/old"]);
    }
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for row in ["a", "b"] {
        support::cbt(&conn, &["set", "pages", row, "p:user=ann"]);
    }
    // Between the two expiries, for both rows.
    let ts = |cells: &[Cell], q: &[u8]| {
        cells
            .iter()
            .find(|c| c.qualifier == q)
            .unwrap()
            .timestamp_micros
    };
    let (a, b) = (raw(&pages, "a").await, raw(&pages, "b").await);
    let last_url = ts(&a, b"url").max(ts(&b, b"url"));
    let first_user = ts(&a, b"user").min(ts(&b, b"user"));
    assert!(first_user - last_url > 500_000, "{a:?} {b:?}");
    let hour = TimeDelta::hours(1).num_microseconds().unwrap();
    let between = last_url.midpoint(first_user) + hour;
    clock.set(chrono::DateTime::from_timestamp_micros(between).unwrap());
    assert_eq!(pages.get(&"a".to_owned()).await.unwrap(), None);

    let key = "b".to_owned();
    let updated = pages
        .update(&key)
        .set(Page::USER, &"bob".to_owned())
        .apply()
        .await
        .unwrap();
    assert_eq!(updated, None, "an update never revives");
    let touched = pages
        .touch(&key, TimeDelta::hours(2), TimeDelta::hours(3))
        .await
        .unwrap();
    assert_eq!(touched, None, "a touch never revives");
    assert_eq!(
        pages.set_ttl(&key, TimeDelta::hours(2)).await.unwrap(),
        None
    );
    assert_eq!(pages.get(&key).await.unwrap(), None);
    let user = raw(&pages, "b").await;
    assert!(
        user.iter()
            .all(|c| c.qualifier != b"user" || c.value == b"ann"),
        "nothing rewritten: {user:?}"
    );

    let page = Page {
        id: "a".into(),
        url: "/new".into(),
        user: "cy".into(),
    };
    let inserted = pages.insert_if_absent(&page).await.unwrap();
    assert!(matches!(inserted, Insert::Inserted(_)), "{inserted:?}");
    assert_eq!(
        pages.get(&"a".to_owned()).await.unwrap().unwrap().value,
        page
    );
}

/// 8 tasks × 50 compare-and-set increments, each retried until its
/// condition holds: exactly 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_increments_are_never_lost() {
    let counters = support::table::<Counter>(&Clock::system()).await;
    let name = "hits".to_owned();
    counters
        .put(&Counter {
            name: name.clone(),
            count: 0,
        })
        .await
        .unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let counters = counters.clone();
            let name = name.clone();
            tokio::spawn(async move {
                let mut conflicts = 0;
                for _ in 0..50 {
                    loop {
                        let read = counters.get(&name).await.unwrap().unwrap().value;
                        let next = Counter {
                            count: read.count + 1,
                            ..read.clone()
                        };
                        let unchanged = Counter::COUNT.equals(&read.count);
                        if counters.put_if(&next, unchanged).await.unwrap().is_some() {
                            break;
                        }
                        conflicts += 1;
                    }
                }
                conflicts
            })
        })
        .collect();
    let mut conflicts = 0;
    for task in tasks {
        conflicts += task.await.unwrap();
    }
    let total = counters.get(&name).await.unwrap().unwrap().value.count;
    println!("400 increments, {conflicts} conflicts retried");
    assert_eq!(total, 400);
}

/// Conditions compare bytes: a value full of regular-expression syntax, or
/// not UTF-8 at all, matches itself and nothing else.
#[tokio::test]
async fn conditions_match_exact_bytes_only() {
    let tags = support::table::<Tag>(&Clock::system()).await;
    let stored = Tag {
        id: "t1".into(),
        name: r".*[a-z]+\d(?:x|y)$".into(),
        blob: vec![0xff, 0x00, b'*', 0xc3],
    };
    tags.put(&stored).await.unwrap();
    let edit = Tag {
        name: "edited".into(),
        ..stored.clone()
    };

    for near_miss in [".*", r".*[a-z]+\d(?:x|y)", r".*[a-z]+\d(?:x|y)$ ", ""] {
        let condition = Tag::NAME.equals(&near_miss.to_owned());
        assert_eq!(condition.field(), "name");
        assert!(
            tags.put_if(&edit, condition).await.unwrap().is_none(),
            "{near_miss:?} matched"
        );
    }
    for near_miss in [
        vec![0xff],
        vec![0xff, 0x00, b'*'],
        vec![0xff, 0x00, b'.', 0xc3],
    ] {
        let condition = Tag::BLOB.equals(&near_miss);
        assert!(
            !tags.delete_if(&"t1".to_owned(), condition).await.unwrap(),
            "{near_miss:?} matched"
        );
    }
    assert_eq!(
        tags.get(&"t1".to_owned()).await.unwrap().unwrap().value,
        stored
    );

    let exact = Tag::NAME.equals(&stored.name);
    assert!(tags.put_if(&edit, exact).await.unwrap().is_some());
    assert_eq!(
        tags.get(&"t1".to_owned()).await.unwrap().unwrap().value,
        edit
    );
    let exact = Tag::BLOB.equals(&stored.blob);
    assert!(tags.delete_if(&"t1".to_owned(), exact).await.unwrap());
    assert_eq!(tags.get(&"t1".to_owned()).await.unwrap(), None);
}

/// The empty value is a value like any other: it matches only itself.
#[tokio::test]
async fn an_empty_value_matches_only_the_empty_value() {
    let tags = support::table::<Tag>(&Clock::system()).await;
    let empty = Tag {
        id: "e".into(),
        name: String::new(),
        blob: Vec::new(),
    };
    let full = Tag {
        id: "f".into(),
        name: "x".into(),
        blob: vec![0],
    };
    tags.put_all([&empty, &full]).await.unwrap();
    let full_at = |id: &str| Tag {
        id: id.into(),
        name: "y".into(),
        blob: vec![1],
    };
    let is_empty = || Tag::NAME.equals(&String::new());
    assert!(tags
        .put_if(&full_at("f"), is_empty())
        .await
        .unwrap()
        .is_none());
    assert!(tags
        .put_if(&full_at("e"), is_empty())
        .await
        .unwrap()
        .is_some());
    let no_bytes = Tag::BLOB.equals(&Vec::new());
    assert!(!tags.delete_if(&"f".to_owned(), no_bytes).await.unwrap());
}

/// A condition sees what a read sees: a value in an expired row (stored
/// until garbage collection) never matches.
#[tokio::test]
async fn conditions_never_match_expired_values() {
    let clock = Clock::manual_at_now();
    let claims = support::table::<Claim>(&clock).await;
    claims.put(&claim("job-3", "me")).await.unwrap();
    let mine = || Claim::WORKER.equals(&"me".to_owned());
    assert!(claims
        .put_if(&claim("job-3", "me"), mine())
        .await
        .unwrap()
        .is_some());

    clock.advance(TimeDelta::minutes(61));
    assert_eq!(
        raw(&claims, "job-3").await.len(),
        2,
        "the worker and the row marker, still stored"
    );
    assert!(claims
        .put_if(&claim("job-3", "me"), mine())
        .await
        .unwrap()
        .is_none());
    assert!(!claims.delete_if(&"job-3".to_owned(), mine()).await.unwrap());
    assert_eq!(raw(&claims, "job-3").await.len(), 2, "not deleted");
}

/// A conditional write stores what `put` stores: the same cells at the same
/// timestamps (whole milliseconds), the shadow column, a field's own TTL,
/// a per-write TTL, and the old columns replaced.
#[tokio::test]
async fn conditional_writes_store_what_put_stores() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    let mut row = click("plain", "/home");
    row.referrer = Some("/ref".into());
    row.hot = Some("yes".into());
    let stale = Click {
        referrer: Some("/stale".into()),
        ..click("cond", "/old")
    };
    clicks.put(&stale).await.unwrap();
    clock.advance(TimeDelta::milliseconds(1_234));
    let ttl = TimeDelta::hours(5);

    let plain = clicks.put_with(row.mutation().ttl(ttl)).await.unwrap();
    let conditional = Click {
        id: "cond".into(),
        ..row.clone()
    };
    let old_url = Click::URL.equals(&"/old".to_owned());
    let written = clicks
        .put_if_with(conditional.mutation().ttl(ttl), old_url)
        .await
        .unwrap()
        .expect("the condition holds");
    assert_eq!(written.expires_at, plain.expires_at);
    assert_eq!(written.timestamp_micros, plain.timestamp_micros);
    assert_eq!(written.timestamp_micros % 1_000, 0, "whole milliseconds");

    let strip = |cells: Vec<Cell>| {
        let mut cells: Vec<_> = cells
            .into_iter()
            .map(|c| (c.qualifier, c.timestamp_micros, c.value))
            .collect();
        cells.sort();
        cells
    };
    let plain_cells = strip(raw(&clicks, "plain").await);
    assert_eq!(strip(raw(&clicks, "cond").await), plain_cells);
    assert_eq!(
        plain_cells.len(),
        5,
        "url, referrer, hot, written_at and the row marker: {plain_cells:?}"
    );

    clock.advance(TimeDelta::milliseconds(10));
    let fresh = click("fresh", "/f");
    let Insert::Inserted(inserted) = clicks
        .insert_if_absent_with(fresh.mutation().ttl(ttl))
        .await
        .unwrap()
    else {
        panic!("a fresh key")
    };
    clicks
        .put_with(click("fresh-plain", "/f").mutation().ttl(ttl))
        .await
        .unwrap();
    assert_eq!(
        strip(raw(&clicks, "fresh").await),
        strip(raw(&clicks, "fresh-plain").await)
    );
    assert_eq!(inserted.timestamp_micros % 1_000, 0);
}

/// Bad input fails with the error `put` gives, before anything is sent.
#[tokio::test]
async fn bad_input_is_refused_before_anything_is_sent() {
    let clock = Clock::manual_at_now();
    let sessions = support::table::<Session>(&clock).await;
    let past = session("s-past", clock.now() - TimeDelta::seconds(1));
    let err = sessions.insert_if_absent(&past).await.unwrap_err();
    assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err:?}");
    let user = Session::USER.equals(&"u-s-past".to_owned());
    let err = sessions.put_if(&past, user).await.unwrap_err();
    assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err:?}");
    assert!(raw(&sessions, "s-past").await.is_empty());

    let claims = support::table::<Claim>(&clock).await;
    let err = claims
        .insert_if_absent_with(claim("j", "w").mutation().ttl(TimeDelta::zero()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NonPositiveTtl { .. }), "{err:?}");
    assert!(raw(&claims, "j").await.is_empty());
}

/// A conditional write whose answer is lost (the emulator applied it, the
/// proxy swallowed the response and cut the connection) is never re-sent
/// blindly: an insert or a put whose cells are found was applied; a delete
/// cannot be told apart from someone else's, so it is "outcome unknown".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_resolved_by_reading_or_reported_unknown() {
    let direct = support::connection();
    let clock = Clock::manual_at_now();
    Table::<Claim>::new(direct.clone())
        .ensure_schema()
        .await
        .unwrap();
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap();
    let claims = Table::<Claim>::new(conn).with_clock(clock.clone());
    let direct = Table::<Claim>::new(direct).with_clock(clock.clone());
    // Open the proxied connection, then lose the answer to the next request.
    claims.get(&"warm-up".to_owned()).await.unwrap();
    let lose_next = || Faults::LoseResponse {
        request_bytes: 1,
        hold: Duration::from_millis(500),
        times: 1,
    };

    proxy.arm(lose_next());
    let won = claims
        .insert_if_absent(&claim("job-4", "me"))
        .await
        .unwrap();
    assert_eq!(proxy.resets(), 1, "the answer should have been lost");
    assert!(matches!(won, Insert::Inserted(_)), "{won:?}");
    assert_eq!(
        direct
            .get(&"job-4".to_owned())
            .await
            .unwrap()
            .unwrap()
            .value,
        claim("job-4", "me")
    );

    clock.advance(TimeDelta::milliseconds(5));
    proxy.arm(lose_next());
    let mine = Claim::WORKER.equals(&"me".to_owned());
    let put = claims
        .put_if(&claim("job-4", "me-again"), mine)
        .await
        .unwrap();
    assert_eq!(proxy.resets(), 1);
    assert!(put.is_some(), "its cells are there: it was applied");

    proxy.arm(lose_next());
    let mine = Claim::WORKER.equals(&"me-again".to_owned());
    let err = claims
        .delete_if(&"job-4".to_owned(), mine)
        .await
        .unwrap_err();
    assert_eq!(proxy.resets(), 1);
    let Error::OutcomeUnknown(e) = &err else {
        panic!("expected OutcomeUnknown, got {err:?}")
    };
    assert_eq!(
        (e.table.as_str(), e.row_key.as_slice()),
        ("claims", &b"job-4"[..])
    );
    assert!(err.to_string().contains("job-4"), "{err}");
    // It was applied, as the emulator shows: the caller had to be told.
    assert_eq!(direct.get(&"job-4".to_owned()).await.unwrap(), None);
}

/// Found by the history checker (issue 41): an insert whose answer is
/// lost, its row replaced by another writer before the read that settles
/// it, may have landed first: its outcome is unknown, never `Exists` (the
/// caller would take an insert that happened for one that did not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_insert_whose_row_was_replaced_is_outcome_unknown() {
    let direct = support::connection();
    let clock = Clock::manual_at_now();
    Table::<Claim>::new(direct.clone())
        .ensure_schema()
        .await
        .unwrap();
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap();
    let claims = Table::<Claim>::new(conn).with_clock(clock.clone());
    let direct = Table::<Claim>::new(direct).with_clock(clock.clone());
    claims.get(&"warm-up".to_owned()).await.unwrap();
    proxy.arm(Faults::LoseResponse {
        request_bytes: 1,
        hold: Duration::from_millis(800),
        times: 1,
    });
    let insert = tokio::spawn({
        let claims = claims.clone();
        async move { claims.insert_if_absent(&claim("job-9", "me")).await }
    });
    // While its answer is held back, another writer replaces the row.
    tokio::time::sleep(Duration::from_millis(300)).await;
    clock.advance(TimeDelta::milliseconds(5));
    direct.put(&claim("job-9", "other")).await.unwrap();
    let result = insert.await.unwrap();
    assert_eq!(proxy.resets(), 1, "the answer should have been lost");
    let err = result.expect_err("the insert's outcome cannot be told");
    assert!(err.is_outcome_unknown(), "{err:?}");
}
