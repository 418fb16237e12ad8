//! Two structs of one name in two programs (no `Connection` sees both, so
//! nothing refuses the pair): both write the row marker `\0\0Item`, and a
//! struct whose fields are all `Option` has nothing else to tell its rows
//! by. The marker's value carries its writer's fingerprint (the names of
//! its columns, `guide/sharing-tables.md`): a struct that shares none of
//! them reports the row instead of reading it as its own, and so does
//! every rewrite; a later version of the writer, which keeps a column,
//! reads it.

use std::ops::ControlFlow;

use bigtable_ttl::data::Cell;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::{BigtableRow, Clock, CodecError, Connection, Error, MarkStatus, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};

/// `t` to the millisecond, as stored.
fn ms(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

use crate::support;

mod inventory {
    use bigtable_ttl::BigtableRow;

    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "shop", family = "s")]
    #[ttl(default = "1d")]
    pub struct Item {
        #[bigtable(key)]
        pub id: String,
        pub label: Option<String>,
    }

    impl Item {
        /// Every field `None`: the marker alone makes the row.
        pub fn unlabelled(id: &str) -> Self {
            Item {
                id: id.into(),
                label: None,
            }
        }
    }
}

mod wishlist {
    use bigtable_ttl::BigtableRow;

    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "shop", family = "s")]
    #[ttl(default = "1d")]
    pub struct Item {
        #[bigtable(key)]
        pub id: String,
        pub wish: Option<String>,
        pub qty: Option<i64>,
    }

    impl Item {
        /// Every field `None`: the marker alone makes the row.
        pub fn empty(id: &str) -> Self {
            Item {
                id: id.into(),
                wish: None,
                qty: None,
            }
        }
    }
}

/// `inventory::Item`'s next version: a field more, `label` kept.
mod inventory_v2 {
    use bigtable_ttl::BigtableRow;

    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "shop", family = "s")]
    #[ttl(default = "1d")]
    pub struct Item {
        #[bigtable(key)]
        pub id: String,
        pub label: Option<String>,
        #[bigtable(default)]
        pub count: u64,
    }
}

/// A third `Item` with a map, sharing no name with the others.
mod tagged {
    use std::collections::HashMap;

    use bigtable_ttl::BigtableRow;

    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "shop", family = "s")]
    #[ttl(default = "1d")]
    pub struct Item {
        #[bigtable(key)]
        pub id: String,
        pub note: Option<String>,
        #[bigtable(map, family = "tags")]
        pub tags: HashMap<String, String>,
    }
}

/// `T` on a connection of its own to `conn`'s instance, as another
/// program would open it.
async fn open<T: BigtableRow>(conn: &Connection, clock: &Clock) -> Table<T> {
    let table = Table::<T>::new(support::connection_to(conn)).with_clock(clock.clone());
    table.ensure_schema().await.unwrap();
    table
}

/// Whether `result` is the error of a row whose marker another struct of
/// the same name wrote.
#[track_caller]
fn assert_another_structs<V: std::fmt::Debug>(result: Result<V, Error>, key: &str) {
    match result {
        Err(Error::Decode(e)) if e.source == CodecError::WrittenByAnotherStruct => {
            assert_eq!(e.row_key, key.as_bytes());
            assert!(e.column.ends_with(":\\x00\\x00Item"), "{}", e.column);
            assert!(
                e.source.to_string().contains("#[bigtable(marker = "),
                "the error says what to change: {}",
                e.source
            );
        }
        other => panic!("row {key}: expected another struct's row, got {other:?}"),
    }
}

fn sorted(mut cells: Vec<Cell>) -> Vec<Cell> {
    cells.sort_by(|a, b| {
        (&a.qualifier, a.timestamp_micros).cmp(&(&b.qualifier, b.timestamp_micros))
    });
    cells
}

#[tokio::test]
async fn two_structs_of_one_name_in_two_programs_report_each_others_rows() {
    let conn = support::connection();
    let clock = Clock::manual(Utc::now());
    let items = open::<inventory::Item>(&conn, &clock).await;
    let wishes = open::<wishlist::Item>(&conn, &clock).await;

    // Every field `None`: the marker alone makes each row.
    let item = inventory::Item::unlabelled("i");
    let wish = wishlist::Item::empty("w");
    items.put(&item).await.unwrap();
    wishes.put(&wish).await.unwrap();
    let labelled = inventory::Item {
        id: "j".into(),
        label: Some("pen".into()),
    };
    items.put(&labelled).await.unwrap();

    // Each reads its own rows.
    assert_eq!(
        items.get(&"i".to_owned()).await.unwrap().unwrap().value,
        item
    );
    assert_eq!(
        wishes.get(&"w".to_owned()).await.unwrap().unwrap().value,
        wish
    );

    // And reports the other's: by `get`, a scan, and a scan that skips.
    assert_another_structs(items.get(&"w".to_owned()).await, "w");
    assert_another_structs(wishes.get(&"i".to_owned()).await, "i");
    assert_another_structs(wishes.get(&"j".to_owned()).await, "j");
    assert_another_structs(wishes.scan(Scan::all()).await, "i");
    let skipping = wishes
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    let ids: Vec<String> = skipping
        .scan(Scan::all())
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.value.id)
        .collect();
    assert_eq!(ids, ["w"]);
    assert_eq!(skipping.read_stats().rows_skipped, 2, "i and j");

    // A rewrite or an insert of the one reports the other's row and leaves
    // it as it was.
    let before = sorted(support::stored_cells(&items, "i").await);
    assert_another_structs(
        wishes
            .update(&"i".to_owned())
            .set(wishlist::Item::WISH, &"book".to_owned())
            .apply()
            .await,
        "i",
    );
    assert_another_structs(
        wishes
            .touch(&"i".to_owned(), TimeDelta::hours(2), TimeDelta::days(2))
            .await,
        "i",
    );
    assert_another_structs(
        wishes
            .insert_if_absent(&wishlist::Item {
                id: "i".into(),
                wish: Some("book".into()),
                qty: Some(1),
            })
            .await,
        "i",
    );
    assert_eq!(sorted(support::stored_cells(&items, "i").await), before);
    assert_eq!(
        items.get(&"i".to_owned()).await.unwrap().unwrap().value,
        item
    );

    // `add_markers` counts them as another struct's, and marks nothing.
    let status = wishes
        .add_markers(None, |_| ControlFlow::Continue(()))
        .await
        .unwrap();
    let MarkStatus::Done(p) = status else {
        panic!("{status:?}")
    };
    assert_eq!(
        (
            p.rows_read,
            p.rows_already_marked,
            p.rows_other,
            p.rows_marked
        ),
        (3, 1, 2, 0),
        "{p:?}"
    );

    // The writer's next version keeps `label`: the rows are its own.
    let next = open::<inventory_v2::Item>(&conn, &clock).await;
    let read = next.get(&"i".to_owned()).await.unwrap().unwrap().value;
    assert_eq!((read.label, read.count), (None, 0));
    // And what it writes, its first version reads.
    next.put(&inventory_v2::Item {
        id: "k".into(),
        label: None,
        count: 3,
    })
    .await
    .unwrap();
    assert!(items.get(&"k".to_owned()).await.unwrap().is_some());
    assert_another_structs(wishes.get(&"k".to_owned()).await, "k");
}

/// A marker written before fingerprints (empty) says nothing of its
/// writer: such a row is read as before, by its columns and the marker.
/// And an expired row is no one's: neither reported nor read.
#[tokio::test]
async fn markers_without_a_fingerprint_and_expired_rows_are_judged_as_before() {
    let conn = support::connection();
    let clock = Clock::manual(Utc::now());
    let items = open::<inventory::Item>(&conn, &clock).await;
    let wishes = open::<wishlist::Item>(&conn, &clock).await;
    let ts = clock.now().timestamp_micros() / 1000 * 1000;
    support::raw_set(items.raw(), "old", "s", b"\0\0Item", ts, b"").await;
    assert_eq!(
        wishes.get(&"old".to_owned()).await.unwrap().unwrap().value,
        wishlist::Item::empty("old")
    );
    assert!(items.get(&"old".to_owned()).await.unwrap().is_some());

    items.put(&inventory::Item::unlabelled("i")).await.unwrap();
    assert_another_structs(wishes.get(&"i".to_owned()).await, "i");
    clock.advance(TimeDelta::days(2));
    assert_eq!(wishes.get(&"i".to_owned()).await.unwrap(), None);
    assert!(wishes.scan(Scan::all()).await.unwrap().is_empty());
    assert_eq!(items.get(&"i".to_owned()).await.unwrap(), None);
}

/// Two structs named `Item` with the default shadow column, one of them
/// with a counter: the shadow makes the other's row live to the counter's
/// struct, and only the marker's fingerprint tells it is not its row.
mod tallies {
    pub mod notes {
        use bigtable_ttl::BigtableRow;

        #[derive(BigtableRow, Debug, Clone, PartialEq)]
        #[bigtable(table = "tally", family = "t")]
        #[ttl(written_at)]
        pub struct Item {
            #[bigtable(key)]
            pub id: String,
            #[ttl(expire_at)]
            pub expires_at: chrono::DateTime<chrono::Utc>,
            pub note: Option<String>,
        }
    }

    pub mod hits {
        use bigtable_ttl::BigtableRow;

        #[derive(BigtableRow, Debug, Clone, PartialEq)]
        #[bigtable(table = "tally", family = "t")]
        #[ttl(written_at)]
        pub struct Item {
            #[bigtable(key)]
            pub id: String,
            #[ttl(expire_at)]
            pub expires_at: chrono::DateTime<chrono::Utc>,
            #[bigtable(counter)]
            pub hits: i64,
        }
    }
}

/// The increment's server-side step lands where it may (a counter stamp
/// at the server's now, expired at once: the stamp a window that is over
/// leaves); its recount reads the row, reports it as another struct's and
/// counts nothing into it.
#[tokio::test]
async fn an_increment_never_counts_into_a_row_another_struct_of_its_name_wrote() {
    use tallies::{hits, notes};
    let conn = support::connection();
    let clock = Clock::system();
    let notes = open::<notes::Item>(&conn, &clock).await;
    let hits = open::<hits::Item>(&conn, &clock).await;
    let note = notes::Item {
        id: "k".into(),
        expires_at: ms(clock.now() + TimeDelta::hours(1)),
        note: None,
    };
    notes.put(&note).await.unwrap();
    let before = sorted(support::stored_cells(&notes, "k").await);
    let got = hits
        .increment(
            &"k".to_owned(),
            hits::Item::HITS,
            1,
            bigtable_ttl::Expiry::Ttl(TimeDelta::hours(1)),
        )
        .await;
    assert_another_structs(got, "k");
    assert_another_structs(hits.get(&"k".to_owned()).await, "k");
    assert_eq!(
        notes.get(&"k".to_owned()).await.unwrap().unwrap().value,
        note
    );
    // The other struct's cells as they were; anything more has expired.
    let after = sorted(support::stored_cells(&notes, "k").await);
    let now = clock.now().timestamp_micros();
    for cell in &after {
        assert!(
            before.contains(cell) || cell.timestamp_micros <= now,
            "a live cell added: {cell:?}"
        );
    }
    assert!(before.iter().all(|c| after.contains(c)));
}

/// One pass of `table`'s reaper to its end: its progress, and the ids of
/// the rows it handed over.
async fn reaped<T: BigtableRow>(
    table: &Table<T>,
    options: &bigtable_ttl::ops::ReapOptions,
    id: impl Fn(&T) -> String,
) -> (bigtable_ttl::ops::ReapProgress, Vec<String>) {
    let mut handed = Vec::new();
    let status = table
        .reap_with_events(
            options,
            None,
            |rows| {
                handed.extend(rows.iter().map(|e| id(&e.value)));
                async { ControlFlow::Continue(()) }
            },
            |_| ControlFlow::Continue(()),
        )
        .await
        .unwrap();
    let bigtable_ttl::ops::ReapStatus::Done(done) = status else {
        panic!("{status:?}")
    };
    (done, handed)
}

/// A dead row is judged by the struct whose marker it carries: the other
/// struct of the name neither hands it over nor deletes it, so that its
/// writer's feed and reaper still find it.
#[tokio::test]
async fn the_reaper_leaves_a_dead_row_to_the_struct_of_its_name_that_wrote_it() {
    use bigtable_ttl::ops::{ExpiryWindow, ReapOptions};
    use futures_util::TryStreamExt as _;
    let conn = support::connection();
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let items = open::<inventory::Item>(&conn, &clock).await;
    let wishes = open::<wishlist::Item>(&conn, &clock).await;
    wishes.put(&wishlist::Item::empty("w")).await.unwrap();
    items.put(&inventory::Item::unlabelled("i")).await.unwrap();
    clock.advance(TimeDelta::days(2));
    let window = ExpiryWindow::new(t0, clock.now());
    let options = ReapOptions::new().with_grace(std::time::Duration::from_secs(60));

    let (done, handed) = reaped(&items, &options, |i| i.id.clone()).await;
    assert_eq!(handed, ["i"]);
    assert_eq!(
        (done.rows_reaped, done.rows_skipped_other),
        (1, 1),
        "{done:?}"
    );
    assert!(support::stored_cells(&items, "i").await.is_empty());

    // The other struct's dead row is there for its own feed and reaper.
    let fed: Vec<String> = wishes
        .expired(&window)
        .map_ok(|e| e.value.id)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(fed, ["w"]);
    let (_, handed) = reaped(&wishes, &options, |w| w.id.clone()).await;
    assert_eq!(handed, ["w"]);
    assert!(support::stored_cells(&wishes, "w").await.is_empty());
}

/// A map's entries are read only from a row of the struct's: of a row
/// another `Item` wrote, `entries` reports it, as `get` does.
#[tokio::test]
async fn entries_of_a_row_another_struct_of_its_name_wrote_are_reported() {
    let conn = support::connection();
    let clock = Clock::manual(Utc::now());
    let items = open::<inventory::Item>(&conn, &clock).await;
    let tagged = open::<tagged::Item>(&conn, &clock).await;
    items.put(&inventory::Item::unlabelled("e")).await.unwrap();
    tagged
        .put(&tagged::Item {
            id: "t".into(),
            note: None,
            tags: [("colour".to_owned(), "red".to_owned())].into(),
        })
        .await
        .unwrap();
    assert_another_structs(
        tagged.entries(&"e".to_owned(), tagged::Item::TAGS).await,
        "e",
    );
    let own = tagged
        .entries(&"t".to_owned(), tagged::Item::TAGS)
        .await
        .unwrap();
    assert_eq!(own.len(), 1);
    assert_another_structs(items.get(&"t".to_owned()).await, "t");
}
