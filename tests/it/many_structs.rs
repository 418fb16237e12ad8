//! Tables of many structs (see `guide/sharing-tables.md`): each struct
//! reads and changes only what it owns. A row carrying another struct's
//! marker and not the reader's is not the reader's row, whatever column
//! names they share; deletes remove only the struct's own cells; layouts
//! that cannot be kept apart are refused before anything is written; rows
//! from before per-struct markers are read and conditioned alike.

use crate::support;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use futures_util::TryStreamExt as _;

use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::MarkStatus;
use bigtable_ttl::{BigtableRow, ClashKind, Clock, CodecError, Error, Insert, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};

/// Single-table design: three entity types in one family, told apart by
/// key prefix, two columns named alike.
mod single {
    use bigtable_ttl::BigtableRow;

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "single", family = "s")]
    #[ttl(default = "1d")]
    pub struct Customer {
        #[bigtable(key)]
        pub id: String,
        pub name: String,
        pub email: String,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "single", family = "s")]
    #[ttl(default = "1d")]
    pub struct Product {
        #[bigtable(key)]
        pub id: String,
        pub name: String,
        pub price: i64,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "single", family = "s")]
    #[ttl(default = "1d")]
    pub struct Label {
        #[bigtable(key)]
        pub id: String,
        pub name: String,
    }

    /// A struct of options only: the weakest claim on a row.
    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "single", family = "s")]
    #[ttl(default = "1d")]
    pub struct Note {
        #[bigtable(key)]
        pub id: String,
        pub name: Option<String>,
    }
}

fn keys<T>(rows: &[bigtable_ttl::Expiring<T>], key: impl Fn(&T) -> &str) -> Vec<String> {
    rows.iter().map(|r| key(&r.value).to_owned()).collect()
}

#[tokio::test]
async fn a_shared_column_name_does_not_make_structs_read_each_others_rows() {
    use single::{Customer, Label, Note, Product};
    let clock = Clock::system();
    let customers = support::table::<Customer>(&clock).await;
    let conn = customers.connection().clone();
    let products = Table::<Product>::new(conn.clone()).with_clock(clock.clone());
    let labels = Table::<Label>::new(conn.clone()).with_clock(clock.clone());
    let notes = Table::<Note>::new(conn.clone()).with_clock(clock.clone());
    customers
        .put(&Customer {
            id: "c#1".into(),
            name: "Ann".into(),
            email: "ann@example.com".into(),
        })
        .await
        .unwrap();
    products
        .put(&Product {
            id: "p#1".into(),
            name: "Pen".into(),
            price: 3,
        })
        .await
        .unwrap();
    labels
        .put(&Label {
            id: "l#1".into(),
            name: "red".into(),
        })
        .await
        .unwrap();

    let all = Scan::all();
    assert_eq!(
        keys(&customers.scan(all.clone()).await.unwrap(), |c| &c.id),
        ["c#1"]
    );
    assert_eq!(
        keys(&products.scan(all.clone()).await.unwrap(), |p| &p.id),
        ["p#1"]
    );
    assert_eq!(
        keys(&labels.scan(all.clone()).await.unwrap(), |l| &l.id),
        ["l#1"]
    );
    assert!(notes.scan(all.clone()).await.unwrap().is_empty());
    assert_eq!(labels.get(&"c#1".to_owned()).await.unwrap(), None);
    assert_eq!(notes.get(&"c#1".to_owned()).await.unwrap(), None);
    assert_eq!(customers.get(&"l#1".to_owned()).await.unwrap(), None);
    // Limited scans, forward and reversed, count only their own rows.
    for scan in [all.clone().limit(1), all.clone().reversed().limit(1)] {
        assert_eq!(keys(&labels.scan(scan).await.unwrap(), |l| &l.id), ["l#1"]);
    }
    assert_eq!(
        keys(
            &customers
                .scan(all.clone().reversed().limit(1))
                .await
                .unwrap(),
            |c| &c.id
        ),
        ["c#1"]
    );
    // Streams and parallel scans alike.
    let streamed: Vec<_> = labels.stream(all.clone()).try_collect().await.unwrap();
    assert_eq!(keys(&streamed, |l| &l.id), ["l#1"]);
    let parallel: Vec<_> = customers
        .scan_parallel(all.clone(), 3)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(keys(&parallel, |c| &c.id), ["c#1"]);
    // A skipping scan does not count the others' rows as incomplete.
    let skipping = customers
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    assert_eq!(skipping.scan(all.clone()).await.unwrap().len(), 1);
    let stats = skipping.read_stats();
    assert_eq!((stats.rows_incomplete, stats.rows_skipped), (0, 0));

    // Conditions judge by the same rule: a label named "Ann" is not there.
    let ann = Label::NAME.equals(&"Ann".to_owned());
    assert!(!labels.delete_if(&"c#1".to_owned(), ann).await.unwrap());
    let relabel = Label {
        id: "c#1".into(),
        name: "blue".into(),
    };
    assert_eq!(
        labels
            .put_if(&relabel, Label::NAME.equals(&"Ann".to_owned()))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        labels
            .update(&"c#1".to_owned())
            .set(Label::NAME, &"blue".to_owned())
            .apply()
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        labels
            .touch(&"c#1".to_owned(), TimeDelta::hours(2), TimeDelta::hours(30))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        customers
            .get(&"c#1".to_owned())
            .await
            .unwrap()
            .unwrap()
            .name,
        "Ann"
    );

    // add_markers adopts nothing of the others', and its counters add up.
    let status = labels
        .add_markers(None, |_| ControlFlow::Continue(()))
        .await
        .unwrap();
    let MarkStatus::Done(p) = status else {
        panic!("{status:?}")
    };
    assert_eq!(
        (
            p.rows_read,
            p.rows_marked,
            p.rows_already_marked,
            p.rows_other
        ),
        (3, 0, 1, 2),
        "{p:?}"
    );
    assert_eq!(
        p.rows_read,
        p.rows_marked + p.rows_already_marked + p.rows_incomplete + p.rows_not_live + p.rows_other
    );
    let status = notes
        .add_markers(None, |_| ControlFlow::Continue(()))
        .await
        .unwrap();
    let MarkStatus::Done(p) = status else {
        panic!("{status:?}")
    };
    assert_eq!((p.rows_marked, p.rows_other), (0, 3), "{p:?}");
    for key in ["c#1", "p#1"] {
        let cells = support::stored_cells(&labels, key).await;
        assert!(
            !cells
                .iter()
                .any(|c| c.qualifier == Label::SCHEMA.marker || c.qualifier == Note::SCHEMA.marker),
            "{key}: {cells:?}"
        );
    }
    assert_eq!(labels.get(&"c#1".to_owned()).await.unwrap(), None);
}

/// A vertical split: two structs under one key, in one family or each in
/// its own.
mod split {
    use bigtable_ttl::BigtableRow;

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "split", family = "f")]
    #[ttl(default = "1d")]
    pub struct Core {
        #[bigtable(key)]
        pub id: String,
        pub x: String,
        #[bigtable(map, family = "core_tags")]
        pub tags: std::collections::BTreeMap<String, String>,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "split", family = "f")]
    #[ttl(default = "1d", written_at)]
    pub struct Extra {
        #[bigtable(key)]
        pub id: String,
        pub y: Option<String>,
        #[bigtable(default)]
        pub hits: i64,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "split", family = "g")]
    #[ttl(default = "1d")]
    pub struct Aside {
        #[bigtable(key)]
        pub id: String,
        pub y: String,
    }
}

#[tokio::test]
async fn deleting_one_structs_row_leaves_the_others_under_the_key() {
    use split::{Aside, Core, Extra};
    let clock = Clock::system();
    let cores = support::table::<Core>(&clock).await;
    let conn = cores.connection().clone();
    let extras = Table::<Extra>::new(conn.clone()).with_clock(clock.clone());
    let asides = Table::<Aside>::new(conn.clone()).with_clock(clock.clone());
    extras.ensure_schema().await.unwrap();
    asides.ensure_schema().await.unwrap();
    let key = "k".to_owned();
    let core = Core {
        id: key.clone(),
        x: "x".into(),
        tags: BTreeMap::from([("a".to_owned(), "1".to_owned())]),
    };
    let extra = Extra {
        id: key.clone(),
        y: Some("y".into()),
        hits: 2,
    };
    let aside = Aside {
        id: key.clone(),
        y: "aside".into(),
    };
    let put_all = || async {
        cores.put(&core).await.unwrap();
        extras.put(&extra).await.unwrap();
        asides.put(&aside).await.unwrap();
    };

    put_all().await;
    let before = support::stored_cells(&cores, &key).await;
    cores.delete(&key).await.unwrap();
    assert_eq!(cores.get(&key).await.unwrap(), None);
    assert_eq!(extras.get(&key).await.unwrap().unwrap().value, extra);
    assert_eq!(asides.get(&key).await.unwrap().unwrap().value, aside);
    // Exactly Core's cells went: its column, marker and map family.
    let after = support::stored_cells(&cores, &key).await;
    let core_owns = |c: &bigtable_ttl::data::Cell| {
        c.family == "core_tags" || c.qualifier == b"x" || c.qualifier == Core::SCHEMA.marker
    };
    let expected: Vec<_> = before.iter().filter(|c| !core_owns(c)).cloned().collect();
    assert_eq!(after, expected);

    put_all().await;
    assert!(cores
        .delete_if(&key, Core::X.equals(&"x".to_owned()))
        .await
        .unwrap());
    assert_eq!(cores.get(&key).await.unwrap(), None);
    assert_eq!(extras.get(&key).await.unwrap().unwrap().value, extra);
    assert_eq!(asides.get(&key).await.unwrap().unwrap().value, aside);

    // And the other way: Extra's delete leaves Core and Aside.
    put_all().await;
    extras.delete(&key).await.unwrap();
    assert_eq!(extras.get(&key).await.unwrap(), None);
    assert_eq!(cores.get(&key).await.unwrap().unwrap().value, core);
    assert_eq!(asides.get(&key).await.unwrap().unwrap().value, aside);
    let left = support::stored_cells(&cores, &key).await;
    assert!(
        !left.iter().any(|c| c.family == "f"
            && [&b"y"[..], b"hits", b"written_at"].contains(&c.qualifier.as_slice())),
        "{left:?}"
    );
}

/// Two structs that cannot share a table as declared.
mod clash {
    pub mod inventory {
        use bigtable_ttl::BigtableRow;

        #[derive(Debug, Clone, PartialEq, BigtableRow)]
        #[bigtable(table = "clash", family = "f")]
        #[ttl(default = "1d")]
        pub struct Item {
            #[bigtable(key)]
            pub id: String,
            pub sku: String,
        }
    }

    pub mod wishlist {
        use bigtable_ttl::BigtableRow;

        #[derive(Debug, Clone, PartialEq, BigtableRow)]
        #[bigtable(table = "clash", family = "f")]
        #[ttl(default = "1d")]
        pub struct Item {
            #[bigtable(key)]
            pub id: String,
            pub label: Option<String>,
        }
    }

    use bigtable_ttl::BigtableRow;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "clash", family = "c")]
    #[ttl(default = "1d")]
    pub struct Cart {
        #[bigtable(key)]
        pub id: String,
        #[bigtable(map, family = "tags")]
        pub items: BTreeMap<String, String>,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "clash", family = "w")]
    #[ttl(default = "1d")]
    pub struct Wishlist {
        #[bigtable(key)]
        pub id: String,
        #[bigtable(map, family = "tags")]
        pub wishes: BTreeMap<String, String>,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "clash", family = "p")]
    #[ttl(default = "1h", written_at)]
    pub struct Post {
        #[bigtable(key)]
        pub id: String,
        pub body: String,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "clash", family = "p")]
    #[ttl(default = "1h", written_at)]
    pub struct Like {
        #[bigtable(key)]
        pub id: String,
        pub who: Option<String>,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "clash", family = "p")]
    #[ttl(default = "1h", written_at = "like_written_at")]
    pub struct OwnLike {
        #[bigtable(key)]
        pub id: String,
        pub who: Option<String>,
    }
}

/// Every operation of `table` is refused with a layout clash of `kind`,
/// naming both structs, and nothing is written.
async fn refused<T: BigtableRow<Key = String> + std::fmt::Debug>(
    table: &Table<T>,
    row: &T,
    kind: &str,
    names: [&str; 2],
) {
    let check = |e: Error| {
        let Error::Layout { clash, .. } = &e else {
            panic!("expected a layout clash, got {e}")
        };
        let found = match clash.kind {
            ClashKind::Marker { .. } => "marker",
            ClashKind::MapFamily { .. } => "map",
            ClashKind::Shadow { .. } => "shadow",
            ClashKind::OwnedFamily { .. } => "owned",
            _ => "other",
        };
        assert_eq!(found, kind, "{e}");
        for name in names {
            assert!(e.to_string().contains(name), "{e}");
        }
    };
    check(table.put(row).await.unwrap_err());
    check(table.insert_if_absent(row).await.unwrap_err());
    check(table.get(&"k".to_owned()).await.unwrap_err());
    check(table.scan(Scan::all()).await.unwrap_err());
    check(table.delete(&"k".to_owned()).await.unwrap_err());
    check(table.put_all([row]).await.unwrap_err());
    check(table.ensure_schema().await.unwrap_err());
    check(table.verify_schema().await.unwrap_err());
    let mut writer = table.writer();
    check(writer.send(row).await.unwrap_err());
    let rows = support::stored_cells(table, "k").await;
    assert!(rows.is_empty(), "nothing written: {rows:?}");
}

#[tokio::test]
async fn layouts_that_cannot_be_kept_apart_are_refused_before_anything_is_written() {
    use clash::{inventory, wishlist, Cart, Like, OwnLike, Post, Wishlist};
    let clock = Clock::system();

    // Two structs of one name: one marker.
    let items = support::table::<inventory::Item>(&clock).await;
    let wishes = Table::<wishlist::Item>::new(items.connection().clone());
    let names = ["inventory::Item", "wishlist::Item"];
    refused(
        &items,
        &inventory::Item {
            id: "k".into(),
            sku: "s".into(),
        },
        "marker",
        names,
    )
    .await;
    refused(
        &wishes,
        &wishlist::Item {
            id: "k".into(),
            label: None,
        },
        "marker",
        names,
    )
    .await;
    // Dropped, the other struct no longer counts: each struct in a process
    // of its own is fine.
    drop(wishes);
    let items = items.with_name("clash");
    items
        .put(&inventory::Item {
            id: "k".into(),
            sku: "s".into(),
        })
        .await
        .unwrap();

    // Two maps in one family.
    let carts = support::table::<Cart>(&clock).await;
    let lists = Table::<Wishlist>::new(carts.connection().clone());
    let cart = Cart {
        id: "k".into(),
        items: BTreeMap::from([("pen".to_owned(), "1".to_owned())]),
    };
    refused(&carts, &cart, "map", ["Cart", "Wishlist"]).await;
    drop(lists);

    // One `written_at` shadow in one family; named apart, both work.
    let posts = support::table::<Post>(&clock).await;
    let likes = Table::<Like>::new(posts.connection().clone());
    let post = Post {
        id: "k".into(),
        body: "hello".into(),
    };
    refused(&posts, &post, "shadow", ["Post", "Like"]).await;
    drop(likes);
    // A handle that met a clash keeps it; a new one starts afresh.
    let name = posts.name().to_owned();
    let posts = posts.with_name(name);
    let own_likes = Table::<OwnLike>::new(posts.connection().clone());
    posts.put(&post).await.unwrap();
    // Post's row is not a like: no phantom `OwnLike { who: None }`.
    assert_eq!(own_likes.get(&"k".to_owned()).await.unwrap(), None);
    let like = OwnLike {
        id: "k".into(),
        who: None,
    };
    assert!(matches!(
        own_likes.insert_if_absent(&like).await.unwrap(),
        Insert::Inserted(_)
    ));
    let read_post = posts.get(&"k".to_owned()).await.unwrap().unwrap();
    let read_like = own_likes.get(&"k".to_owned()).await.unwrap().unwrap();
    assert_eq!((read_post.value.clone(), read_like.value), (post, like));
    assert!(read_post.written_at.is_some());
}

/// Structs of one-second expiration sharing a key and the default
/// `written_at` shadow: a layout one process refuses, which two services,
/// each with its own connection, can still make.
mod beats {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "beats", family = "b")]
    #[ttl(written_at)]
    pub struct Beat {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub until: DateTime<Utc>,
        pub note: Option<String>,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "beats", family = "b")]
    #[ttl(written_at)]
    pub struct Owner {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub until: DateTime<Utc>,
        pub name: String,
    }
}

#[tokio::test]
async fn an_expired_row_never_lives_again_through_another_structs_cells() {
    use beats::{Beat, Owner};
    // A manual clock: the beat expires without waiting (the emulator's
    // collection runs on real time, and never ahead of this clock).
    let clock = Clock::manual_at_now();
    let beats = support::table::<Beat>(&clock).await;
    let owners =
        Table::<Owner>::new(support::connection_to(beats.connection())).with_clock(clock.clone());
    let now = clock.now();
    let key = "k".to_owned();
    beats
        .put(&Beat {
            id: key.clone(),
            until: now + TimeDelta::minutes(10),
            note: None,
        })
        .await
        .unwrap();
    owners
        .put(&Owner {
            id: key.clone(),
            until: now + TimeDelta::hours(2),
            name: "ann".into(),
        })
        .await
        .unwrap();
    assert!(beats.get(&key).await.unwrap().is_some());
    clock.advance(TimeDelta::hours(1));
    assert_eq!(beats.get(&key).await.unwrap(), None);
    assert!(beats.scan(Scan::all()).await.unwrap().is_empty());
    let until: DateTime<Utc> = owners.get(&key).await.unwrap().unwrap().until;
    assert_eq!(
        until.timestamp_millis(),
        (now + TimeDelta::hours(2)).timestamp_millis()
    );
    // Nothing a write of Beat judges finds a row to change.
    assert_eq!(
        beats
            .update(&key)
            .set(Beat::NOTE, &"x".to_owned())
            .apply()
            .await
            .unwrap(),
        None
    );
}

/// A struct that owns its family, over rows from before per-struct
/// markers (the one-byte marker `\0`).
mod legacy {
    use bigtable_ttl::BigtableRow;

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "legacy", family = "o", owns_family)]
    #[ttl(default = "1d")]
    pub struct Pair {
        #[bigtable(key)]
        pub id: String,
        pub a: String,
        pub b: String,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "legacy_opts", family = "o", owns_family)]
    #[ttl(default = "1d")]
    pub struct Opts {
        #[bigtable(key)]
        pub id: String,
        pub a: Option<String>,
    }
}

#[tokio::test]
async fn reads_and_inserts_agree_on_rows_from_before_per_struct_markers() {
    use legacy::{Opts, Pair};
    let clock = Clock::system();
    let pairs = support::table::<Pair>(&clock).await;
    let ts = Utc::now().timestamp_millis() * 1_000;
    // The legacy marker alone, and one of two required columns.
    support::raw_set(pairs.raw(), "half", "o", b"\0", ts, b"").await;
    support::raw_set(pairs.raw(), "half", "o", b"a", ts, b"A").await;
    support::raw_set(pairs.raw(), "bare", "o", b"\0", ts, b"").await;
    for key in ["half", "bare"] {
        let err = pairs.get(&key.to_owned()).await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Decode(e) if e.source == CodecError::Missing),
            "{key}: {err}"
        );
        let row = Pair {
            id: key.into(),
            a: "new".into(),
            b: "new".into(),
        };
        let err = pairs.insert_if_absent(&row).await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Decode(e) if e.source == CodecError::Missing),
            "{key}: an incomplete row is never overwritten: {err}"
        );
        let cells = support::stored_cells(&pairs, key).await;
        assert!(!cells.iter().any(|c| c.value == b"new"), "{key}: {cells:?}");
    }

    // A row of options only, every one `None`: held by the legacy marker.
    let opts = Table::<Opts>::new(pairs.connection().clone()).with_clock(clock.clone());
    opts.ensure_schema().await.unwrap();
    support::raw_set(opts.raw(), "none", "o", b"\0", ts, b"").await;
    let read = opts.get(&"none".to_owned()).await.unwrap().unwrap();
    assert_eq!(read.value.a, None);
    let insert = opts
        .insert_if_absent(&Opts {
            id: "none".into(),
            a: Some("second".into()),
        })
        .await
        .unwrap();
    assert!(matches!(insert, Insert::Exists(_)), "{insert:?}");
    assert_eq!(
        opts.get(&"none".to_owned()).await.unwrap().unwrap().value.a,
        None
    );
}

mod prefs {
    use bigtable_ttl::BigtableRow;

    /// Defaults and options, no required field.
    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "prefs", family = "p")]
    #[ttl(default = "1d")]
    pub struct Pref {
        #[bigtable(key)]
        pub id: String,
        #[bigtable(default)]
        pub theme: String,
        pub lang: Option<String>,
    }

    /// Options only, in rows another client writes too.
    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "prefs", family = "p")]
    #[ttl(default = "1d")]
    pub struct Flag {
        #[bigtable(key)]
        pub id: String,
        pub status: Option<String>,
    }
}

#[tokio::test]
async fn an_update_answers_what_a_read_right_after_sees() {
    use prefs::{Flag, Pref};
    let clock = Clock::system();
    let prefs = support::table::<Pref>(&clock).await;
    let key = "u1".to_owned();
    prefs
        .put(&Pref {
            id: key.clone(),
            theme: "dark".into(),
            lang: Some("fr".into()),
        })
        .await
        .unwrap();
    let written = prefs
        .update(&key)
        .clear(Pref::THEME)
        .clear(Pref::LANG)
        .apply()
        .await
        .unwrap()
        .expect("a live row");
    let read = prefs
        .get(&key)
        .await
        .unwrap()
        .expect("the row the update answered");
    assert_eq!(
        read.value,
        Pref {
            id: key.clone(),
            theme: String::new(),
            lang: None
        }
    );
    assert_eq!(read.expires_at, written.expires_at);
    let again = Pref {
        id: key.clone(),
        theme: "light".into(),
        lang: None,
    };
    assert!(matches!(
        prefs.insert_if_absent(&again).await.unwrap(),
        Insert::Exists(_)
    ));

    // Rows of options another client wrote (no marker): a clear, kept or
    // re-timed, leaves the row it answers.
    let flags = Table::<Flag>::new(prefs.connection().clone()).with_clock(clock.clone());
    let ts = Utc::now().timestamp_millis() * 1_000;
    for key in ["kept", "retimed"] {
        support::raw_set(flags.raw(), key, "p", b"status", ts, b"on").await;
        assert_eq!(
            flags
                .get(&key.to_owned())
                .await
                .unwrap()
                .unwrap()
                .status
                .as_deref(),
            Some("on")
        );
    }
    let kept = flags
        .update(&"kept".to_owned())
        .clear(Flag::STATUS)
        .apply()
        .await
        .unwrap()
        .expect("a live row");
    let retimed = flags
        .update(&"retimed".to_owned())
        .clear(Flag::STATUS)
        .ttl(TimeDelta::hours(2))
        .apply()
        .await
        .unwrap()
        .expect("a live row");
    for (key, written) in [("kept", kept), ("retimed", retimed)] {
        let read = flags.get(&key.to_owned()).await.unwrap().expect(key);
        assert_eq!(
            (read.value.status, read.expires_at),
            (None, written.expires_at),
            "{key}"
        );
    }
}

mod racing {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "racing", family = "r")]
    pub struct Slot {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub until: DateTime<Utc>,
        pub name: String,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "racing", family = "r")]
    pub struct Claim {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub until: DateTime<Utc>,
        pub who: String,
    }
}

/// `add_markers` over rows that other writers delete, re-put, claim for
/// another struct, and that expire, while it runs: every row it read is
/// counted once, as what it found it to be.
#[tokio::test]
async fn add_markers_counts_every_row_it_read_under_racing_writers_and_expiry() {
    use racing::{Claim, Slot};
    const ROWS: usize = 300;
    let clock = Clock::system();
    let slots = support::table::<Slot>(&clock).await;
    let claims = Table::<Claim>::new(slots.connection().clone()).with_clock(clock.clone());
    // Rows another program wrote, without a marker: each expires between
    // half a second and four seconds from now, in whole milliseconds.
    let now = Utc::now();
    let writes = (0..ROWS).map(|i| {
        let raw = slots.raw().clone();
        async move {
            let spread = i64::try_from(i * 37 % 3_500).unwrap();
            let expiry = now + TimeDelta::milliseconds(500 + spread);
            let ts = expiry.timestamp_millis() * 1_000;
            support::raw_set(&raw, &format!("s{i:03}"), "r", b"name", ts, b"n").await;
        }
    });
    futures_util::future::join_all(writes).await;

    let racer = {
        let (slots, claims) = (slots.clone(), claims.clone());
        tokio::spawn(async move {
            for round in 0..200usize {
                let i = (round * 7919) % ROWS;
                let id = format!("s{i:03}");
                let until = Utc::now() + TimeDelta::seconds(30);
                match round % 3 {
                    0 => slots.delete(&id).await.unwrap(),
                    1 => {
                        slots
                            .put(&Slot {
                                id,
                                until,
                                name: "again".into(),
                            })
                            .await
                            .unwrap();
                    }
                    _ => {
                        claims
                            .put(&Claim {
                                id,
                                until,
                                who: "other".into(),
                            })
                            .await
                            .unwrap();
                    }
                }
            }
        })
    };
    let status = slots
        .add_markers(None, |_| ControlFlow::Continue(()))
        .await
        .unwrap();
    racer.await.unwrap();
    let MarkStatus::Done(p) = status else {
        panic!("{status:?}")
    };
    // A row deleted before the run reached it is not read at all.
    assert!(
        p.rows_read > ROWS as u64 / 2 && p.rows_read <= ROWS as u64,
        "{p:?}"
    );
    assert_eq!(
        p.rows_marked + p.rows_already_marked + p.rows_incomplete + p.rows_not_live + p.rows_other,
        p.rows_read,
        "every row read is counted once: {p:?}"
    );
    assert!(p.rows_marked > 0, "{p:?}");
}

mod ledger {
    use bigtable_ttl::BigtableRow;

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "ledger", family = "l")]
    #[ttl(default = "1d")]
    pub struct Invoice {
        #[bigtable(key)]
        pub id: String,
        pub amount: i64,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "ledger", family = "l")]
    #[ttl(default = "1d")]
    pub struct Memo {
        #[bigtable(key)]
        pub id: String,
        pub text: Option<String>,
    }
}

/// Rows from before per-struct markers (the shared one-byte marker) of
/// one struct are never adopted by another sharing the family, by a read
/// or by `add_markers`; once each struct has marked its own, an insert of
/// one under the other's key leaves the other's row as it was.
#[tokio::test]
async fn add_markers_never_adopts_another_structs_rows_from_before_markers() {
    use ledger::{Invoice, Memo};
    let clock = Clock::system();
    let invoices = support::table::<Invoice>(&clock).await;
    let memos = Table::<Memo>::new(invoices.connection().clone()).with_clock(clock.clone());
    let ts = Utc::now().timestamp_millis() * 1_000;
    // An invoice as earlier versions wrote it, and a memo of `None`s.
    support::raw_set(invoices.raw(), "inv-1", "l", b"\0", ts, b"").await;
    support::raw_set(
        invoices.raw(),
        "inv-1",
        "l",
        b"amount",
        ts,
        &5i64.to_be_bytes(),
    )
    .await;
    support::raw_set(invoices.raw(), "memo-1", "l", b"\0", ts, b"").await;
    assert_eq!(memos.get(&"inv-1".to_owned()).await.unwrap(), None);
    let amount = || async {
        invoices
            .get(&"inv-1".to_owned())
            .await
            .unwrap()
            .map(|i| i.amount)
    };
    assert_eq!(amount().await, Some(5));

    let marked = |table_status: MarkStatus| {
        let MarkStatus::Done(p) = table_status else {
            panic!("{table_status:?}")
        };
        assert_eq!(
            p.rows_read,
            p.rows_marked
                + p.rows_already_marked
                + p.rows_incomplete
                + p.rows_not_live
                + p.rows_other
        );
        (p.rows_marked, p.rows_other)
    };
    let status = memos
        .add_markers(None, |_| ControlFlow::Continue(()))
        .await
        .unwrap();
    assert_eq!(marked(status), (1, 1), "memo-1 is Memo's, inv-1 is not");
    assert_eq!(memos.get(&"inv-1".to_owned()).await.unwrap(), None);
    assert_eq!(
        memos.get(&"memo-1".to_owned()).await.unwrap().unwrap().text,
        None
    );
    let status = invoices
        .add_markers(None, |_| ControlFlow::Continue(()))
        .await
        .unwrap();
    assert_eq!(
        marked(status),
        (1, 1),
        "inv-1 is Invoice's, memo-1 Memo's now"
    );

    let memo = Memo {
        id: "inv-1".into(),
        text: Some("hello".into()),
    };
    assert!(matches!(
        memos.insert_if_absent(&memo).await.unwrap(),
        Insert::Inserted(_)
    ));
    assert_eq!(
        amount().await,
        Some(5),
        "Memo's insert wrote Memo's cells only"
    );
    assert_eq!(
        memos.get(&"inv-1".to_owned()).await.unwrap().unwrap().value,
        memo
    );
}

/// A lease and the notes another program writes beside it, in one family.
mod handover {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "handover", family = "h")]
    pub struct Lease {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub until: DateTime<Utc>,
        pub holder: String,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "handover", family = "h")]
    pub struct Note {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub until: DateTime<Utc>,
        pub text: Option<String>,
    }
}

/// A row that carries another struct's marker now is not this struct's,
/// even when that marker expires before the write's horizon: an update, a
/// re-time or a `put_if` judged it at the horizon alone, answered `Some`
/// and wrote, while a `get` right after still found no row of its struct
/// (found by the shared-family state machine). Once the marker has
/// expired, the row is this struct's by its columns, and they write.
#[tokio::test]
async fn a_marker_expiring_before_the_horizon_hands_no_row_over() {
    use handover::{Lease, Note};
    let clock = Clock::manual_at_now();
    let leases = support::table::<Lease>(&clock).await;
    let notes =
        Table::<Note>::new(support::connection_to(leases.connection())).with_clock(clock.clone());
    let now = clock.now();
    let key = "k".to_owned();
    leases
        .put(&Lease {
            id: key.clone(),
            until: now + TimeDelta::milliseconds(500),
            holder: "ann".into(),
        })
        .await
        .unwrap();
    // Another program's note, no marker, for an hour.
    let ts = (now + TimeDelta::hours(1)).timestamp_millis() * 1000;
    support::raw_set(leases.raw(), &key, "h", b"text", ts, b"hi").await;

    assert_eq!(notes.get(&key).await.unwrap(), None, "the lease's row now");
    let x = "x".to_owned();
    let set = notes.update(&key).set(Note::TEXT, &x).apply().await;
    assert_eq!(set.unwrap(), None);
    assert_eq!(
        notes
            .touch(&key, TimeDelta::hours(2), TimeDelta::hours(3))
            .await
            .unwrap(),
        None
    );
    let hi = "hi".to_owned();
    let note = Note {
        id: key.clone(),
        until: now + TimeDelta::hours(2),
        text: Some("y".into()),
    };
    assert_eq!(
        notes.put_if(&note, Note::TEXT.equals(&hi)).await.unwrap(),
        None
    );
    assert!(!notes.delete_if(&key, Note::TEXT.equals(&hi)).await.unwrap());
    assert_eq!(notes.get(&key).await.unwrap(), None, "nothing was written");

    clock.advance(TimeDelta::seconds(1));
    let note = notes
        .get(&key)
        .await
        .unwrap()
        .expect("the note's row by its column");
    assert_eq!(note.text.as_deref(), Some("hi"));
    let set = notes.update(&key).set(Note::TEXT, &x).apply().await;
    assert!(set.unwrap().is_some());
    let note = notes.get(&key).await.unwrap().unwrap();
    assert_eq!(note.text.as_deref(), Some("x"));
}
