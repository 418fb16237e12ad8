//! Conditional writes over a link slower than a second (issue 41): the
//! emulator behind a proxy that holds every answer 1.2 s or 3 s. The
//! horizon is a setting of the write policy: one that allows the link's
//! round trip gets every conditional write's real answer; under the
//! default (1 s), the writes that need no horizon (`insert_if_absent`,
//! `delete_if`) still get theirs, and those cut at the horizon are settled
//! by reading the row, or end with an `OutcomeUnknown` that says the
//! library cut the attempt and which setting to change.

use std::time::Duration;

use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{BigtableRow, Clock, Connection, Error, Insert, Table};
use chrono::TimeDelta;

use crate::support;
use crate::support::proxy::{Faults, Proxy};

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "slow_link", family = "d")]
#[ttl(default = "1h")]
struct Doc {
    #[bigtable(key)]
    id: String,
    version: i64,
}

fn doc(id: &str, version: i64) -> Doc {
    Doc {
        id: id.to_owned(),
        version,
    }
}

/// A table on the emulator, the same table through a proxy holding every
/// answer `delay`, and the rows `{prefix}-k0` … `{prefix}-k7` at version 1.
async fn slow(delay: Duration, prefix: &str) -> (Table<Doc>, Table<Doc>, Proxy) {
    let direct = support::table::<Doc>(&Clock::system()).await;
    for k in 0..8 {
        direct
            .put(&doc(&format!("{prefix}-k{k}"), 1))
            .await
            .unwrap();
    }
    let proxy = Proxy::start(&support::emulator_host()).await;
    proxy.arm(Faults::Delays {
        up: (Duration::ZERO, Duration::ZERO),
        down: (delay, delay),
        seed: 41,
    });
    let conn = direct.connection();
    let slow = Table::<Doc>::new(
        Connection::emulator(&proxy.host(), conn.project(), conn.instance()).unwrap(),
    );
    (direct, slow, proxy)
}

/// Every conditional write's answer, side by side, keys `{p}-k0` … `k7`.
#[derive(Debug)]
struct Answers {
    inserted: bigtable_ttl::Result<Insert<Doc>>,
    exists: bigtable_ttl::Result<Insert<Doc>>,
    put_matched: bigtable_ttl::Result<Option<bigtable_ttl::Written>>,
    put_failed: bigtable_ttl::Result<Option<bigtable_ttl::Written>>,
    deleted: bigtable_ttl::Result<bool>,
    not_deleted: bigtable_ttl::Result<bool>,
    touched: bigtable_ttl::Result<Option<bigtable_ttl::Touched>>,
    set_ttl: bigtable_ttl::Result<Option<bigtable_ttl::RowMutation>>,
    updated: bigtable_ttl::Result<Option<bigtable_ttl::Written>>,
}

async fn answers(t: &Table<Doc>, p: &str) -> Answers {
    let k: Vec<String> = (0..8).map(|i| format!("{p}-k{i}")).collect();
    let (new, k0, k1, k2) = (
        doc(&format!("{p}-new"), 1),
        doc(&k[0], 7),
        doc(&k[1], 2),
        doc(&k[2], 2),
    );
    let (
        inserted,
        exists,
        put_matched,
        put_failed,
        deleted,
        not_deleted,
        touched,
        set_ttl,
        updated,
    ) = tokio::join!(
        t.insert_if_absent(&new),
        t.insert_if_absent(&k0),
        t.put_if(&k1, Doc::VERSION.equals(&1)),
        t.put_if(&k2, Doc::VERSION.equals(&99)),
        t.delete_if(&k[3], Doc::VERSION.equals(&1)),
        t.delete_if(&k[4], Doc::VERSION.equals(&99)),
        t.touch(&k[5], TimeDelta::hours(3), TimeDelta::hours(2)),
        t.set_ttl(&k[6], TimeDelta::hours(5)),
        t.update(&k[7]).set(Doc::VERSION, &3).apply(),
    );
    Answers {
        inserted,
        exists,
        put_matched,
        put_failed,
        deleted,
        not_deleted,
        touched,
        set_ttl,
        updated,
    }
}

/// A write policy whose horizon allows the link's round trip gets every
/// conditional write's real answer, at 1.2 s and at 3 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_horizon_longer_than_the_link_gets_every_real_answer() {
    for (delay, p) in [(1_200, "a"), (3_000, "b")] {
        let (direct, slow, _proxy) = slow(Duration::from_millis(delay), p).await;
        let patient =
            slow.with_write_options(WriteOptions::default().with_horizon(Duration::from_secs(10)));
        let a = answers(&patient, p).await;
        let context = format!("answers held {delay} ms: {a:#?}");
        assert!(matches!(a.inserted, Ok(Insert::Inserted(_))), "{context}");
        assert!(
            matches!(a.exists, Ok(Insert::Exists(ref e)) if e.value == doc(&format!("{p}-k0"), 1)),
            "{context}"
        );
        assert!(matches!(a.put_matched, Ok(Some(_))), "{context}");
        assert!(matches!(a.put_failed, Ok(None)), "{context}");
        assert!(matches!(a.deleted, Ok(true)), "{context}");
        assert!(matches!(a.not_deleted, Ok(false)), "{context}");
        assert!(matches!(a.touched, Ok(Some(t)) if t.rewritten), "{context}");
        assert!(matches!(a.set_ttl, Ok(Some(_))), "{context}");
        assert!(matches!(a.updated, Ok(Some(_))), "{context}");
        // What they did is there.
        let version = |i: usize| {
            let key = format!("{p}-k{i}");
            let direct = direct.clone();
            async move { direct.get(&key).await.unwrap().map(|r| r.value.version) }
        };
        assert_eq!(version(1).await, Some(2));
        assert_eq!(version(2).await, Some(1));
        assert_eq!(version(3).await, None);
        assert_eq!(version(7).await, Some(3));
    }
}

/// Under the default write policy (a 1 s horizon), answers held 1.2 s and
/// 3 s: `insert_if_absent` and `delete_if`, which need no horizon, get
/// their real answers; the writes cut at the horizon are settled by
/// reading the row: applied ones answer as applied, and a `put_if` whose
/// condition failed (nothing in the row tells it) ends with an
/// `OutcomeUnknown` that says the library cut its attempt at the horizon
/// and which setting to change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_horizon_settles_a_cut_write_and_says_so() {
    for (delay, p) in [(1_200, "c"), (3_000, "d")] {
        let (_direct, slow, _proxy) = slow(Duration::from_millis(delay), p).await;
        let a = answers(&slow, p).await;
        let context = format!("answers held {delay} ms: {a:#?}");
        assert!(matches!(a.inserted, Ok(Insert::Inserted(_))), "{context}");
        assert!(matches!(a.exists, Ok(Insert::Exists(_))), "{context}");
        assert!(matches!(a.deleted, Ok(true)), "{context}");
        assert!(matches!(a.not_deleted, Ok(false)), "{context}");
        // Cut at the horizon, applied, and settled by the read.
        assert!(matches!(a.put_matched, Ok(Some(_))), "{context}");
        assert!(matches!(a.touched, Ok(Some(t)) if t.rewritten), "{context}");
        assert!(matches!(a.set_ttl, Ok(Some(_))), "{context}");
        assert!(matches!(a.updated, Ok(Some(_))), "{context}");
        // Cut, not applied, and nothing tells: the library says it cut.
        let Err(err) = &a.put_failed else {
            panic!("a put_if cut at the horizon and not applied: {context}")
        };
        let Error::OutcomeUnknown(e) = err else {
            panic!("expected OutcomeUnknown: {err}")
        };
        let bigtable_ttl::error::OutcomeUnknown {
            attempts,
            answered,
            horizon,
            ..
        } = &**e;
        assert_eq!(
            (*attempts, *answered, *horizon),
            (1, 0, Some(Duration::from_secs(1))),
            "{err}"
        );
        let message = err.to_string();
        assert!(
            message.contains("the library cut its attempt at the write's horizon")
                && message.contains("WriteOptions::with_horizon")
                && message.contains("1 attempt, none answered"),
            "{message}"
        );
    }
}

/// An insert whose every answer is lost, each proved not applied by the
/// read that follows (a scripted server that never answers
/// `CheckAndMutateRow` and holds no row): sent again, five sends in all
/// as documented, then an error that counts them all and says Bigtable
/// answered none (no longer "Bigtable answered `DEADLINE_EXCEEDED` … (1
/// attempt)").
#[tokio::test]
async fn an_insert_never_answered_counts_every_attempt_and_says_none_was_answered() {
    use crate::fake_bigtable::{Answer, FakeBigtable};
    use bigtable_ttl::retry::RetryPolicy;

    let fake = FakeBigtable::start().await;
    fake.script("CheckAndMutateRow", (0..5).map(|_| Answer::hang()));
    let conn = Connection::emulator(&fake.host(), "p", "i").unwrap();
    let policy = RetryPolicy::default()
        .with_attempt_timeout(Duration::from_millis(300))
        .with_deadline(Duration::from_secs(20));
    let t = Table::<Doc>::new(conn).with_write_options(WriteOptions::default().with_retry(policy));
    let err = t.insert_if_absent(&doc("k", 1)).await.unwrap_err();
    assert_eq!(fake.received_of("CheckAndMutateRow").len(), 5);
    let Error::Server(e) = &err else {
        panic!("expected Server, got {err:?}")
    };
    let bigtable_ttl::error::Server { attempts, .. } = &**e;
    assert_eq!(*attempts, 5, "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with("no answer from Bigtable") && message.contains("5 attempts"),
        "{message}"
    );
    assert!(!err.is_outcome_unknown() && err.is_retryable(), "{err:?}");
}
