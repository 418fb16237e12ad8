//! Partial updates against Google's Bigtable emulator: the row keeps its
//! expiry (or is re-timed whole with `.ttl()`), the shadow write time moves,
//! an expired row is never revived, a field never expires before the rest of
//! its row, `Option` fields can be cleared and required ones cannot, and an
//! update racing a put never leaves cells of one row at different expiries.

use crate::support;

use std::sync::Arc;

use bigtable_ttl::data;
use bigtable_ttl::data::Cell;
use bigtable_ttl::{BigtableRow, CellCodec, Clock, Error, Table};
use chrono::{DateTime, TimeDelta, Utc};
use support::rows::{click, session, Click, Session};
use tokio::sync::Barrier;

fn ms(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

/// The stored cells of row `id`: (qualifier, timestamp, value).
async fn stored<T: BigtableRow>(table: &Table<T>, id: &str) -> Vec<(String, i64, Vec<u8>)> {
    let mut cells: Vec<_> = support::stored_cells(table, id)
        .await
        .into_iter()
        .map(|c: Cell| {
            (
                String::from_utf8(c.qualifier).unwrap(),
                c.timestamp_micros,
                c.value,
            )
        })
        .collect();
    cells.sort();
    cells
}

fn ts_of(cells: &[(String, i64, Vec<u8>)], qualifier: &str) -> Option<i64> {
    cells.iter().find(|c| c.0 == qualifier).map(|c| c.1)
}

#[tokio::test]
async fn an_update_keeps_the_expiry_and_moves_the_write_time() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    let key = "u1".to_owned();
    let mut row = click("u1", "/home");
    row.referrer = Some("/ref".into());
    let written = clicks
        .put_with(row.mutation().ttl(TimeDelta::hours(3)))
        .await
        .unwrap();
    let before = stored(&clicks, "u1").await;

    clock.advance(TimeDelta::minutes(10));
    let updated = clicks
        .update(&key)
        .set(Click::URL, &"/edited".to_owned())
        .apply()
        .await
        .unwrap()
        .expect("a live row");
    assert_eq!(updated.expires_at, written.expires_at, "expiry kept");
    assert_eq!(updated.written_at, ms(clock.now()));

    let read = clicks.get(&key).await.unwrap().unwrap();
    assert_eq!(read.value.url, "/edited");
    assert_eq!(read.value.referrer.as_deref(), Some("/ref"), "untouched");
    assert_eq!(read.expires_at, written.expires_at);
    let after = stored(&clicks, "u1").await;
    assert_eq!(
        ts_of(&after, "url"),
        ts_of(&before, "url"),
        "same timestamp"
    );
    assert_eq!(after.len(), before.len(), "one version per column");
    let shadow = after.iter().find(|c| c.0 == "written_at").unwrap();
    assert_eq!(
        DateTime::<Utc>::decode(&shadow.2).unwrap(),
        ms(clock.now()),
        "the shadow column holds the update's time"
    );
    assert_eq!(Some(shadow.1), ts_of(&before, "written_at"));
}

#[tokio::test]
async fn ttl_re_times_the_whole_row_in_the_same_step() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    let key = "u2".to_owned();
    let mut row = click("u2", "/home");
    row.referrer = Some("/ref".into());
    clicks.put(&row).await.unwrap();
    clock.advance(TimeDelta::minutes(5));
    let updated = clicks
        .update(&key)
        .set(Click::REFERRER, &"/new-ref".to_owned())
        .ttl(TimeDelta::hours(5))
        .apply()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(updated.expires_at, ms(clock.now() + TimeDelta::hours(5)));
    let read = clicks.get(&key).await.unwrap().unwrap();
    assert_eq!(read.expires_at, updated.expires_at);
    assert_eq!(read.value.url, "/home");
    assert_eq!(read.value.referrer.as_deref(), Some("/new-ref"));
    let cells = stored(&clicks, "u2").await;
    assert!(
        cells.iter().all(|c| c.1 == updated.timestamp_micros),
        "every cell at the new timestamp: {cells:?}"
    );
    clock.advance(TimeDelta::hours(5));
    assert_eq!(clicks.get(&key).await.unwrap(), None);
}

#[tokio::test]
async fn an_expired_row_is_never_revived() {
    let clock = Clock::manual_at_now();
    let sessions = support::table::<Session>(&clock).await;
    sessions
        .put(&session("s1", clock.now() + TimeDelta::minutes(30)))
        .await
        .unwrap();
    clock.advance(TimeDelta::minutes(31));
    let before = stored(&sessions, "s1").await;
    assert!(!before.is_empty(), "expired but stored");
    let key = "s1".to_owned();
    let none = sessions
        .update(&key)
        .set(Session::USER, &"mallory".to_owned())
        .apply()
        .await
        .unwrap();
    assert_eq!(none, None);
    let none = sessions
        .update(&key)
        .set(Session::USER, &"mallory".to_owned())
        .ttl(TimeDelta::hours(1))
        .apply()
        .await
        .unwrap();
    assert_eq!(none, None);
    assert_eq!(stored(&sessions, "s1").await, before, "nothing written");
    assert_eq!(sessions.get(&key).await.unwrap(), None);
    let missing = sessions
        .update(&"never".to_owned())
        .set(Session::USER, &"x".to_owned())
        .apply()
        .await
        .unwrap();
    assert_eq!(missing, None);
    assert!(stored(&sessions, "never").await.is_empty());
}

/// A set field expires with its row, never before it (which would leave a
/// row that no longer decodes) and never after it; a field with its own TTL
/// gets that TTL from now, capped at the row's expiry.
#[tokio::test]
async fn set_fields_expire_with_their_row() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    let key = "u3".to_owned();
    let written = clicks
        .put_with(click("u3", "/home").mutation().ttl(TimeDelta::minutes(40)))
        .await
        .unwrap();
    clock.advance(TimeDelta::minutes(20));
    clicks
        .update(&key)
        .set(Click::URL, &"/late".to_owned())
        .set(Click::HOT, &"yes".to_owned())
        .apply()
        .await
        .unwrap()
        .unwrap();
    let cells = stored(&clicks, "u3").await;
    assert_eq!(ts_of(&cells, "url"), Some(written.timestamp_micros));
    assert_eq!(
        ts_of(&cells, "hot"),
        Some(written.timestamp_micros),
        "its own 1 h TTL capped at the row's 20 min left"
    );

    clock.advance(TimeDelta::minutes(19));
    let read = clicks
        .get(&key)
        .await
        .unwrap()
        .expect("decodes until its expiry");
    assert_eq!(read.value.url, "/late");
    assert_eq!(read.value.hot.as_deref(), Some("yes"));
    clock.advance(TimeDelta::minutes(2));
    assert_eq!(clicks.get(&key).await.unwrap(), None);
    assert_eq!(
        clicks.read_stats().partially_expired,
        0,
        "nothing outlived the row"
    );
}

#[tokio::test]
async fn optional_fields_clear_and_required_ones_refuse() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    let key = "u4".to_owned();
    let mut row = click("u4", "/home");
    row.referrer = Some("/ref".into());
    clicks.put(&row).await.unwrap();
    clicks
        .update(&key)
        .clear(Click::REFERRER)
        .apply()
        .await
        .unwrap()
        .unwrap();
    let read = clicks.get(&key).await.unwrap().unwrap();
    assert_eq!(read.value.referrer, None);
    assert_eq!(ts_of(&stored(&clicks, "u4").await, "referrer"), None);

    let before = stored(&clicks, "u4").await;
    let err = clicks
        .update(&key)
        .set(Click::REFERRER, &"/x".to_owned())
        .clear(Click::URL)
        .apply()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::RequiredField(e) if e.field == "url" && e.table == "clicks"),
        "{err:?}"
    );
    assert_eq!(stored(&clicks, "u4").await, before, "nothing written");
    // Refused before anything is read: on a key with no row too, where a
    // read would have found nothing to update.
    let err = clicks
        .update(&"nobody".to_owned())
        .clear(Click::URL)
        .apply()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::RequiredField(e) if e.field == "url"),
        "{err:?}"
    );

    // The last change to a field wins: set, then cleared.
    clicks
        .update(&key)
        .set(Click::REFERRER, &"/y".to_owned())
        .clear(Click::REFERRER)
        .apply()
        .await
        .unwrap();
    assert_eq!(
        clicks.get(&key).await.unwrap().unwrap().value.referrer,
        None
    );
}

/// In each of 40 rounds a put (alternating 2 h and 3 h TTLs, with no
/// referrer) and an update of the referrer start together. Whatever the
/// order, every row-level cell of the row ends at one timestamp and the row
/// decodes: an update never writes a field at the expiry of a row that a put
/// has since replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_racing_a_put_never_splits_the_row() {
    let clicks = support::table::<Click>(&Clock::system()).await;
    let key = "raced".to_owned();
    clicks.put(&click("raced", "/v-start")).await.unwrap();
    let mut conflicts = 0;
    for round in 0..40 {
        let start = Arc::new(Barrier::new(2));
        let updater = {
            let (clicks, key, start) = (clicks.clone(), key.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                clicks
                    .update(&key)
                    .set(Click::REFERRER, &format!("/r{round}"))
                    .apply()
                    .await
            })
        };
        start.wait().await;
        let ttl = TimeDelta::hours(if round % 2 == 0 { 2 } else { 3 });
        let url = format!("/v{round}");
        let put = clicks
            .put_with(click("raced", &url).mutation().ttl(ttl))
            .await
            .unwrap();
        match updater.await.unwrap() {
            Ok(_) => {}
            Err(Error::Conflict { .. }) => conflicts += 1,
            Err(e) => panic!("round {round}: {e}"),
        }
        let cells = stored(&clicks, "raced").await;
        let row_level: Vec<_> = cells.iter().filter(|c| c.0 != "hot").collect();
        assert!(
            row_level.iter().all(|c| c.1 == put.timestamp_micros),
            "round {round}: cells at different expiries: {cells:?}"
        );
        let read = clicks.get(&key).await.unwrap().unwrap();
        assert_eq!(read.value.url, url, "round {round}");
        assert_eq!(read.expires_at, put.expires_at, "round {round}");
    }
    println!("40 rounds, {conflicts} updates gave up on conflicts");
}

#[tokio::test]
async fn a_field_with_its_own_ttl_set_while_re_timing_gets_that_ttl_from_now() {
    let clock = Clock::manual_at_now();
    let clicks = support::table::<Click>(&clock).await;
    let key = "short".to_owned();
    clicks
        .put_with(click("short", "/a").mutation().ttl(TimeDelta::minutes(10)))
        .await
        .unwrap();
    clicks
        .update(&key)
        .set(Click::HOT, &"yes".to_owned())
        .ttl(TimeDelta::days(7))
        .apply()
        .await
        .unwrap()
        .expect("a live row");
    let hot_ts = ts_of(&stored(&clicks, "short").await, "hot").unwrap();
    // One hour from now (its own TTL), not the ten minutes the row had left.
    assert_eq!(
        Click::SCHEMA.policy.expiry_of(hot_ts).unwrap(),
        ms(clock.now() + TimeDelta::hours(1))
    );
    clock.advance(TimeDelta::minutes(30));
    let read = clicks.get(&key).await.unwrap().unwrap();
    assert_eq!(read.hot.as_deref(), Some("yes"));
}

/// A note without a shadow column: an update that only clears a field
/// sets no cell that could show it was applied.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "notes", family = "n")]
#[ttl(default = "1h")]
struct Note {
    #[bigtable(key)]
    id: String,
    body: String,
    tag: Option<String>,
}

/// The answer to a clear-only update is lost, and another writer sets the
/// field again before the update looks: the update must not count itself
/// applied on no evidence, nor send itself again (one attempt, as
/// documented: a second could apply twice): its outcome is unknown, after
/// one attempt that Bigtable did not answer, and the other writer's value
/// stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_to_a_clear_only_update_is_not_taken_for_success_nor_sent_again() {
    use bigtable_ttl::Connection;
    use std::time::Duration;
    use support::proxy::{Faults, Proxy};

    let clock = Clock::manual_at_now();
    let direct = support::table::<Note>(&clock).await;
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::emulator(
        &proxy.host(),
        direct.connection().project(),
        direct.connection().instance(),
    )
    .unwrap();
    let notes = Table::<Note>::new(conn).with_clock(clock.clone());
    let note = |tag: &str| Note {
        id: "n1".into(),
        body: "hello".into(),
        tag: Some(tag.into()),
    };
    direct.put(&note("first")).await.unwrap();
    direct
        .put(&Note {
            id: "n0".into(),
            ..note("x")
        })
        .await
        .unwrap();
    notes.get("warm-up").await.unwrap();
    // Lose the answer to the update's write, not to its read: the bytes a
    // read of the row takes, and those of a whole update of another row.
    let before = proxy.client_bytes();
    notes.get("n1").await.unwrap();
    let read = proxy.client_bytes() - before;
    let before = proxy.client_bytes();
    let other = "n0".to_owned();
    notes.update(&other).clear(Note::TAG).apply().await.unwrap();
    let whole = proxy.client_bytes() - before;
    assert!(whole > read, "{whole} {read}");

    proxy.arm(Faults::LoseResponse {
        request_bytes: read + (whole - read) / 2,
        hold: Duration::from_millis(800),
        times: 1,
    });
    let key = "n1".to_owned();
    let update = tokio::spawn({
        let notes = notes.clone();
        async move { notes.update(&key).clear(Note::TAG).apply().await }
    });
    // While the update's answer is held back, the tag is set again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    clock.advance(TimeDelta::milliseconds(5));
    direct.put(&note("again")).await.unwrap();

    let err = update.await.unwrap().unwrap_err();
    assert_eq!(proxy.resets(), 1, "the answer should have been lost");
    let bigtable_ttl::Error::OutcomeUnknown(e) = &err else {
        panic!("expected OutcomeUnknown, got {err:?}")
    };
    let bigtable_ttl::error::OutcomeUnknown {
        attempts, answered, ..
    } = &**e;
    assert_eq!((*attempts, *answered), (1, 0), "{err}");
    assert!(
        err.to_string().contains("its answer was lost")
            && err.to_string().contains("1 attempt, none answered"),
        "{err}"
    );
    let read = direct.get("n1").await.unwrap().unwrap();
    assert_eq!(
        read.tag.as_deref(),
        Some("again"),
        "the update was not sent again over the put it raced"
    );
}

/// Every field an `Option`: a row of it lives by any of its columns, or by
/// its marker when every field is `None`.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "memos", family = "n")]
#[ttl(default = "1d")]
struct Memo {
    #[bigtable(key)]
    id: String,
    text: Option<String>,
    tag: Option<String>,
}

/// Clearing the only live column of a row written without a marker (by
/// another program) answers what a read right after it sees: the row,
/// every field `None`, with the expiry the update reported.
#[tokio::test]
async fn clearing_the_last_column_of_an_unmarked_row_answers_what_a_read_sees() {
    use bigtable_ttl::data::RawTable;

    let clock = Clock::system();
    let memos = support::table::<Memo>(&clock).await;
    let ts = Utc::now().timestamp_millis() * 1_000;
    RawTable::new(memos.connection(), "memos")
        .mutate_row(
            "n1",
            vec![data::Mutation::set_cell(
                "n",
                b"text".to_vec(),
                ts,
                b"hello".to_vec(),
            )],
        )
        .await
        .unwrap();
    let written = memos
        .update(&"n1".to_owned())
        .clear(Memo::TEXT)
        .apply()
        .await
        .unwrap()
        .expect("the row was live");
    let read = memos
        .get(&"n1".to_owned())
        .await
        .unwrap()
        .expect("the update said the row is there");
    assert_eq!((read.value.text, read.value.tag), (None, None));
    assert_eq!(read.expires_at, written.expires_at);
}
