//! An unknown outcome is never reported as a failure. Every conditional
//! call is sent through a loopback proxy in front of the real emulator
//! that lets the request through (the emulator applies it), swallows its
//! answer, cuts the connection, and then refuses every new connection for
//! a while, so the read that would settle what happened fails as well.
//! Each call must say `Error::OutcomeUnknown`, never the settling read's
//! own error, and the emulator shows that the write was indeed applied:
//! "failed" would have been a lie.

use crate::support;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use bigtable_ttl::data;
use bigtable_ttl::data::RawTable;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{BigtableRow, Clock, Connection, Error, Expiring, Expiry, Table};
use chrono::{DateTime, TimeDelta, Utc};
use support::proxy::{Faults, Proxy};
use support::rows::{Cart, RateLimit};

fn cart(user: &str, currency: &str) -> Cart {
    Cart {
        user: user.to_owned(),
        currency: currency.to_owned(),
        items: BTreeMap::new(),
    }
}

/// Quick retries: the settling read gives up in well under a second.
fn quick() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_attempts(3)
        .with_initial_delay(Duration::from_millis(20))
        .with_max_delay(Duration::from_millis(50))
        .with_attempt_timeout(Duration::from_secs(5))
        .with_deadline(Duration::from_secs(20))
}

/// `table` through the proxy, on quick retries.
fn quick_table<T: BigtableRow>(table: Table<T>) -> Table<T> {
    table
        .with_read_options(ReadOptions::default().with_retry(quick()))
        .with_write_options(WriteOptions::default().with_retry(quick()))
}

/// Ann's cart, read straight from the emulator.
async fn ann_cart(carts: &Table<Cart>) -> Expiring<Cart> {
    carts
        .get(&"ann".to_owned())
        .await
        .unwrap()
        .expect("ann's cart")
}

/// `t` to the millisecond, as expiries are stored.
fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// Run `call` with the answer to its `nth` request lost and every request
/// after it refused; it must fail with `OutcomeUnknown`. What went wrong
/// goes to `wrong`, so that one run shows every call that misbehaves.
async fn lose<T: std::fmt::Debug>(
    proxy: &Proxy,
    wrong: &mut Vec<String>,
    what: &str,
    nth: u64,
    call: impl Future<Output = Result<T, Error>>,
) {
    proxy.arm(Faults::LoseNthThenRefuse {
        nth,
        hold: Duration::from_millis(400),
        refuse_for: Duration::from_secs(10),
    });
    let result = call.await;
    let lost = proxy.resets();
    proxy.arm(Faults::None);
    assert_eq!(
        lost, 1,
        "{what}: request {nth}'s answer should have been lost"
    );
    println!("{what}: {result:?}");
    if !matches!(result, Err(Error::OutcomeUnknown { .. })) {
        wrong.push(format!("{what}: expected OutcomeUnknown, got {result:?}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_whose_settling_read_fails_is_outcome_unknown() {
    let direct = support::connection();
    let clock = Clock::manual_at_now();
    let carts_direct = Table::<Cart>::new(direct.clone()).with_clock(clock.clone());
    carts_direct.ensure_schema().await.unwrap();
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap();
    let carts = quick_table(Table::<Cart>::new(conn.clone()).with_clock(clock.clone()));
    let ann = "ann".to_owned();
    let usd = || Cart::CURRENCY.equals(&"USD".to_owned());
    carts_direct.put(&cart("ann", "USD")).await.unwrap();
    // Each case starts on an open connection (the last one was cut).
    let warm = || carts.get("warm-up");
    let mut wrong = Vec::new();

    // One request: the conditional write.
    warm().await.unwrap();
    clock.advance(TimeDelta::milliseconds(5));
    lose(
        &proxy,
        &mut wrong,
        "put_if",
        1,
        carts.put_if(&cart("ann", "EUR"), usd()),
    )
    .await;
    assert_eq!(
        ann_cart(&carts_direct).await.value.currency,
        "EUR",
        "put_if was applied"
    );

    warm().await.unwrap();
    lose(
        &proxy,
        &mut wrong,
        "insert_if_absent",
        1,
        carts.insert_if_absent(&cart("bob", "CHF")),
    )
    .await;
    let bob = carts_direct.get(&"bob".to_owned()).await.unwrap();
    assert_eq!(bob.map(|b| b.value.currency).as_deref(), Some("CHF"));

    warm().await.unwrap();
    lose(
        &proxy,
        &mut wrong,
        "put_entry",
        1,
        carts.put_entry(
            &ann,
            Cart::ITEMS,
            &"sku-1".to_owned(),
            &2,
            Expiry::Ttl(TimeDelta::hours(1)),
        ),
    )
    .await;
    let entries = carts_direct.entries(&ann, Cart::ITEMS).await.unwrap();
    assert_eq!(entries.len(), 1, "put_entry was applied: {entries:?}");

    // Two requests: the read of the row, then the conditional write.
    warm().await.unwrap();
    clock.advance(TimeDelta::milliseconds(5));
    lose(
        &proxy,
        &mut wrong,
        "update",
        2,
        carts
            .update(&ann)
            .set(Cart::CURRENCY, &"GBP".to_owned())
            .apply(),
    )
    .await;
    assert_eq!(
        ann_cart(&carts_direct).await.value.currency,
        "GBP",
        "update was applied"
    );

    let before = ann_cart(&carts_direct).await.expires_at;
    warm().await.unwrap();
    lose(
        &proxy,
        &mut wrong,
        "shift_expiry",
        2,
        carts.shift_expiry(&ann, TimeDelta::hours(1)),
    )
    .await;
    assert_eq!(
        ms(ann_cart(&carts_direct).await.expires_at),
        ms(before + TimeDelta::hours(1))
    );

    warm().await.unwrap();
    lose(
        &proxy,
        &mut wrong,
        "set_ttl",
        2,
        carts.set_ttl(&ann, TimeDelta::days(3)),
    )
    .await;
    assert_eq!(
        ms(ann_cart(&carts_direct).await.expires_at),
        ms(clock.now() + TimeDelta::days(3))
    );

    warm().await.unwrap();
    clock.advance(TimeDelta::milliseconds(5));
    lose(
        &proxy,
        &mut wrong,
        "touch",
        2,
        carts.touch(&ann, TimeDelta::days(5), TimeDelta::days(4)),
    )
    .await;
    assert_eq!(
        ms(ann_cart(&carts_direct).await.expires_at),
        ms(clock.now() + TimeDelta::days(5))
    );

    warm().await.unwrap();
    let gbp = Cart::CURRENCY.equals(&"GBP".to_owned());
    lose(
        &proxy,
        &mut wrong,
        "delete_if",
        1,
        carts.delete_if(&ann, gbp),
    )
    .await;
    assert_eq!(carts_direct.get(&ann).await.unwrap(), None, "deleted");

    // The raw layer's calls never re-sent have no read to settle them.
    let raw = RawTable::new(&conn, "carts").with_write_retry(quick());
    let set = data::Mutation::set_cell(
        "c",
        b"note".to_vec(),
        clock.now().timestamp_millis() * 1000,
        b"raw".to_vec(),
    );
    warm().await.unwrap();
    lose(
        &proxy,
        &mut wrong,
        "RawTable::check_and_mutate_row",
        1,
        raw.check_and_mutate_row("raw-1", None, vec![], vec![set]),
    )
    .await;
    let raw_direct = RawTable::new(&direct, "carts");
    assert!(raw_direct.read_row("raw-1", None).await.unwrap().is_some());
    let add = data::ReadModifyWriteRule::increment("c", b"n".to_vec(), 1);
    warm().await.unwrap();
    lose(
        &proxy,
        &mut wrong,
        "RawTable::read_modify_write_row",
        1,
        raw.read_modify_write_row("raw-2", vec![add]),
    )
    .await;
    assert!(raw_direct.read_row("raw-2", None).await.unwrap().is_some());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// An increment that lands on a window the server had closed is counted
/// again by a conditional write; when that write's answer is lost and the
/// read settling it fails, the increment's outcome is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_recount_of_an_increment_is_outcome_unknown() {
    let direct = support::connection();
    let started = Utc::now();
    let limits_direct = Table::<RateLimit>::new(direct.clone()).with_clock(Clock::manual(started));
    limits_direct.ensure_schema().await.unwrap();
    let key = ("ann".to_owned(), 1_u64);
    limits_direct
        .increment(&key, RateLimit::HITS, 5, Expiry::Ttl(TimeDelta::seconds(2)))
        .await
        .unwrap();
    // The window ends for the server (the machine's clock); the client's
    // clock stays where it was, behind, and still sees it open.
    tokio::time::sleep(Duration::from_millis(2_300)).await;
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::emulator(&proxy.host(), direct.project(), direct.instance()).unwrap();
    let limits = quick_table(Table::<RateLimit>::new(conn).with_clock(Clock::manual(started)));
    assert!(
        limits.get(&key).await.unwrap().is_some(),
        "open, to the client"
    );
    let mut wrong = Vec::new();
    let sent = Utc::now();
    // The new window's step, the increment (landing on a closed window),
    // the read of the row, the recount: its answer is lost.
    lose(
        &proxy,
        &mut wrong,
        "increment",
        4,
        limits.increment(&key, RateLimit::HITS, 1, Expiry::Ttl(TimeDelta::hours(1))),
    )
    .await;
    let now = Table::<RateLimit>::new(direct).with_clock(Clock::system());
    let counted = now.get(&key).await.unwrap().expect("the new window");
    assert_eq!(counted.value.hits, 1, "recounted into a new window");
    // Its hour runs from the server's now, which closed the old window,
    // not from the client's clock, 2.3 s behind.
    let hour = TimeDelta::hours(1);
    assert!(
        ms(sent + hour) <= ms(counted.expires_at) && counted.expires_at <= Utc::now() + hour,
        "{} after {} + 1 h, from the server's clock",
        counted.expires_at,
        sent
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
