//! Map fields (`#[bigtable(map)]`) against Google's Bigtable emulator: one
//! cell per entry, each with its own expiry; reads return only live
//! entries; a whole-row put replaces the map; a map too large for one
//! request is refused before anything is sent.

use crate::support;

use std::collections::{BTreeMap, HashMap};

use bigtable_ttl::data::Cell;
use bigtable_ttl::{BigtableRow, Clock, Error, Expiry, Table};
use chrono::{DateTime, TimeDelta, Utc};
use support::rows::Cart;

/// A row of nothing but a map, with byte-string keys.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "seen", family = "s")]
#[ttl(default = "2d")]
struct Seen {
    #[bigtable(key)]
    id: String,
    #[bigtable(map, family = "ids")]
    ids: HashMap<Vec<u8>, String>,
}

fn cart(user: &str, items: &[(&str, u64)]) -> Cart {
    Cart {
        user: user.into(),
        currency: "EUR".into(),
        items: items.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
    }
}

fn ms(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

/// The stored cells of row `key` in `family`, expired or not.
async fn stored<T: BigtableRow>(table: &Table<T>, key: &str, family: &str) -> Vec<Cell> {
    let mut cells = support::stored_cells(table, key).await;
    cells.retain(|c| c.family == family);
    cells
}

fn keys<V>(items: &BTreeMap<String, V>) -> Vec<&str> {
    items.keys().map(String::as_str).collect()
}

#[tokio::test]
async fn entries_with_an_hour_a_day_and_the_default_at_two_hours_only_the_latter_two_remain() {
    let clock = Clock::manual_at_now();
    let carts = support::table::<Cart>(&clock).await;
    let key = "ann".to_owned();
    let t0 = clock.now();
    carts.put(&cart("ann", &[("default", 1)])).await.unwrap();
    let hour = carts
        .put_entry(
            &key,
            Cart::ITEMS,
            &"hour".to_owned(),
            &2,
            Expiry::Ttl(TimeDelta::hours(1)),
        )
        .await
        .unwrap()
        .expect("a live row");
    assert_eq!(hour.expires_at, ms(t0 + TimeDelta::hours(1)));
    carts
        .put_entry(
            &key,
            Cart::ITEMS,
            &"day".to_owned(),
            &3,
            Expiry::Ttl(TimeDelta::days(1)),
        )
        .await
        .unwrap()
        .expect("a live row");

    let now = carts.get(&key).await.unwrap().unwrap();
    assert_eq!(keys(&now.items), ["day", "default", "hour"]);
    let entries = carts.entries(&key, Cart::ITEMS).await.unwrap();
    let expiries: Vec<(&str, DateTime<Utc>)> = entries
        .iter()
        .map(|e| (e.key.as_str(), e.expires_at))
        .collect();
    assert_eq!(
        expiries,
        [
            ("day", ms(t0 + TimeDelta::days(1))),
            ("default", ms(t0 + TimeDelta::days(2))),
            ("hour", ms(t0 + TimeDelta::hours(1))),
        ]
    );

    clock.advance(TimeDelta::hours(2));
    let later = carts
        .get(&key)
        .await
        .unwrap()
        .expect("the row lives 2 days");
    assert_eq!(keys(&later.items), ["day", "default"]);
    assert_eq!(later.items["day"], 3);
    assert_eq!(later.currency, "EUR");
    let entries = carts.entries(&key, Cart::ITEMS).await.unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[0].time_left(clock.now()),
        ms(t0 + TimeDelta::days(1)) - clock.now()
    );
    // The hour's entry is hidden, not gone: garbage collection has not run
    // on it (its timestamp is 47 h back under a 2-day rule).
    let cells = stored(&carts, "ann", "items").await;
    assert!(cells.iter().any(|c| c.qualifier == b"hour"), "{cells:?}");
}

#[tokio::test]
async fn a_whole_row_put_replaces_the_map_and_remove_entry_drops_one() {
    let clock = Clock::manual_at_now();
    let carts = support::table::<Cart>(&clock).await;
    let key = "bob".to_owned();
    carts
        .put(&cart("bob", &[("a", 1), ("b", 2)]))
        .await
        .unwrap();
    carts
        .put_entry(
            &key,
            Cart::ITEMS,
            &"c".to_owned(),
            &3,
            Expiry::PolicyDefault,
        )
        .await
        .unwrap()
        .unwrap();
    carts
        .remove_entry(&key, Cart::ITEMS, &"a".to_owned())
        .await
        .unwrap();
    assert_eq!(
        keys(&carts.get(&key).await.unwrap().unwrap().items),
        ["b", "c"]
    );

    carts.put(&cart("bob", &[("x", 9)])).await.unwrap();
    let read = carts.get(&key).await.unwrap().unwrap();
    assert_eq!(read.value, cart("bob", &[("x", 9)]));
    let cells = stored(&carts, "bob", "items").await;
    assert_eq!(
        cells.len(),
        1,
        "the old entries are deleted, not hidden: {cells:?}"
    );

    carts.put(&cart("bob", &[])).await.unwrap();
    assert!(carts.get(&key).await.unwrap().unwrap().items.is_empty());
}

#[tokio::test]
async fn an_entry_is_written_only_into_a_live_row_and_never_outlives_it() {
    let clock = Clock::manual_at_now();
    let carts = support::table::<Cart>(&clock).await;
    let key = "cy".to_owned();
    let sku = "sku".to_owned();
    let put = |ttl| carts.put_entry(&key, Cart::ITEMS, &sku, &1, Expiry::Ttl(ttl));
    assert_eq!(put(TimeDelta::hours(1)).await.unwrap(), None, "no row");
    assert!(
        stored(&carts, "cy", "items").await.is_empty(),
        "nothing written"
    );

    carts
        .put_with(cart("cy", &[]).mutation().ttl(TimeDelta::hours(1)))
        .await
        .unwrap();
    assert!(put(TimeDelta::days(1)).await.unwrap().is_some());
    let entries = carts.entries(&key, Cart::ITEMS).await.unwrap();
    let row = carts.get(&key).await.unwrap().unwrap();
    assert_eq!(entries[0].expires_at, row.expires_at, "bounded by the row");
    clock.advance(TimeDelta::hours(2));
    assert!(
        carts.get(&key).await.unwrap().is_none(),
        "the row has expired"
    );
    assert!(carts.entries(&key, Cart::ITEMS).await.unwrap().is_empty());
    assert_eq!(put(TimeDelta::hours(5)).await.unwrap(), None, "not revived");

    // The next whole-row put replaces the entry that outlived its row.
    carts.put(&cart("cy", &[])).await.unwrap();
    assert!(carts.get(&key).await.unwrap().unwrap().items.is_empty());
}

#[tokio::test]
async fn retimes_and_updates_leave_entries_their_own_expiry() {
    let clock = Clock::manual_at_now();
    let carts = support::table::<Cart>(&clock).await;
    let key = "dee".to_owned();
    let t0 = clock.now();
    carts.put(&cart("dee", &[("kept", 1)])).await.unwrap();
    carts
        .put_entry(
            &key,
            Cart::ITEMS,
            &"short".to_owned(),
            &2,
            Expiry::Ttl(TimeDelta::hours(1)),
        )
        .await
        .unwrap()
        .unwrap();
    let before = carts.entries(&key, Cart::ITEMS).await.unwrap();

    carts
        .set_ttl(&key, TimeDelta::days(1))
        .await
        .unwrap()
        .unwrap();
    carts
        .update(&key)
        .set(Cart::CURRENCY, &"USD".to_owned())
        .apply()
        .await
        .unwrap()
        .unwrap();
    let row = carts.get(&key).await.unwrap().unwrap();
    assert_eq!(row.expires_at, ms(t0 + TimeDelta::days(1)));
    assert_eq!(row.currency, "USD");
    // The hour's entry keeps its own expiry; the default entry, written
    // with the row's first expiry (2 days), now ends with the row.
    let after = carts.entries(&key, Cart::ITEMS).await.unwrap();
    assert_eq!(after[1], before[1]);
    assert_eq!(before[0].expires_at, ms(t0 + TimeDelta::days(2)));
    assert_eq!(after[0].expires_at, row.expires_at);
    let stored = stored(&carts, "dee", "items").await;
    let kept = stored.iter().find(|c| c.qualifier == b"kept").unwrap();
    assert_eq!(
        Cart::SCHEMA
            .policy
            .expiry_of(kept.timestamp_micros)
            .unwrap(),
        ms(t0 + TimeDelta::days(2)),
        "the entry's cell itself is not rewritten"
    );
}

#[tokio::test]
async fn a_ten_thousand_entry_map_round_trips() {
    let clock = Clock::manual_at_now();
    let seen = support::table::<Seen>(&clock).await;
    let ids: HashMap<Vec<u8>, String> = (0..10_000u32)
        .map(|i| (i.to_be_bytes().to_vec(), format!("v{i}")))
        .collect();
    let row = Seen {
        id: "big".into(),
        ids,
    };
    seen.put(&row).await.unwrap();
    let read = seen.get(&"big".to_owned()).await.unwrap().unwrap();
    assert_eq!(read.value, row);
    assert_eq!(
        seen.entries(&"big".to_owned(), Seen::IDS)
            .await
            .unwrap()
            .len(),
        10_000
    );

    // A conditional update of a row with a large map: its condition is on
    // the row's columns, not on 10,000 entries.
    let carts = support::table::<Cart>(&clock).await;
    let items: Vec<(String, u64)> = (0..10_000).map(|i| (format!("sku-{i:05}"), i)).collect();
    let big = Cart {
        user: "big".into(),
        currency: "EUR".into(),
        items: items.into_iter().collect(),
    };
    carts.put(&big).await.unwrap();
    let key = "big".to_owned();
    let updated = carts
        .update(&key)
        .set(Cart::CURRENCY, &"USD".to_owned())
        .apply();
    assert!(updated.await.unwrap().is_some());
    let read = carts.get(&key).await.unwrap().unwrap();
    assert_eq!(read.currency, "USD");
    assert_eq!(read.items, big.items);
}

#[tokio::test]
async fn entry_keys_with_bytes_0x00_and_0xff_round_trip() {
    let clock = Clock::manual_at_now();
    let seen = support::table::<Seen>(&clock).await;
    let key = "bytes".to_owned();
    let odd: [&[u8]; 4] = [b"\x00", b"\xff", b"\x00\xff\x00", b"a\x00b\xffc"];
    let row = Seen {
        id: key.clone(),
        ids: odd.iter().map(|k| (k.to_vec(), format!("{k:?}"))).collect(),
    };
    seen.put(&row).await.unwrap();
    assert_eq!(seen.get(&key).await.unwrap().unwrap().value, row);

    // A row of entries alone: `put_entry` creates it, `remove_entry` of
    // the last one ends it.
    let other = "only-entries".to_owned();
    let ff = b"\xff\xff".to_vec();
    seen.put_entry(
        &other,
        Seen::IDS,
        &ff,
        &"x".to_owned(),
        Expiry::Ttl(TimeDelta::hours(1)),
    )
    .await
    .unwrap()
    .expect("entries alone make a row");
    let read = seen.get(&other).await.unwrap().unwrap();
    assert_eq!(read.ids.get(&ff).map(String::as_str), Some("x"));
    let stored = stored(&seen, "only-entries", "ids").await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].qualifier, ff, "the key's bytes are the qualifier");
    seen.remove_entry(&other, Seen::IDS, &ff).await.unwrap();
    assert!(seen.get(&other).await.unwrap().is_none());

    seen.remove_entry(&key, Seen::IDS, &b"\x00".to_vec())
        .await
        .unwrap();
    let read = seen.get(&key).await.unwrap().unwrap();
    assert_eq!(read.ids.len(), 3);
    assert!(!read.ids.contains_key(b"\x00".as_slice()));
}

#[tokio::test]
async fn a_map_too_large_for_one_request_is_refused_before_anything_is_sent() {
    let clock = Clock::manual_at_now();
    let seen = support::table::<Seen>(&clock).await;
    // One `DeleteFromFamily`, 99,998 entries' `SetCell`s and the row
    // marker's delete and set: one over the limit.
    let row = Seen {
        id: "huge".into(),
        ids: (0..99_998u32)
            .map(|i| (i.to_be_bytes().to_vec(), String::new()))
            .collect(),
    };
    let err = seen.put(&row).await.unwrap_err();
    assert!(matches!(err, Error::RowTooLarge { .. }), "{err}");
    assert!(err.to_string().contains("100001 mutations"), "{err}");
    assert!(support::stored_cells(&seen, "huge").await.is_empty());

    let long_key = vec![b'k'; 16 * 1024 + 1];
    let err = seen
        .put_entry(
            &"huge".to_owned(),
            Seen::IDS,
            &long_key,
            &String::new(),
            Expiry::PolicyDefault,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err,
            Error::ValueTooLarge(e) if e.field == "ids" && e.max == 16384),
        "{err}"
    );
    assert!(support::stored_cells(&seen, "huge").await.is_empty());
}
