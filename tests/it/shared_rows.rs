//! Structs that share a column family, or a family and a row key (the
//! single-table design and the vertical split of the design notes), and a
//! struct read by a newer version of itself: each struct's rows are judged
//! by its own cells and its own row marker only, and a row that is present
//! but incomplete is reported, never read as absent and never overwritten.

use crate::support;

use std::time::{Duration, Instant};

use bigtable_ttl::data;
use bigtable_ttl::data::RawTable;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::{BigtableRow, Clock, CodecError, Error, Insert, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};

/// Two entity types in one table and one family, told apart by key.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "single", family = "s")]
#[ttl(default = "1d")]
struct Profile {
    #[bigtable(key)]
    id: String,
    name: String,
}

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "single", family = "s")]
#[ttl(default = "1d")]
struct Order {
    #[bigtable(key)]
    id: String,
    total: i64,
    note: Option<String>,
}

#[tokio::test]
async fn structs_sharing_a_family_read_only_their_own_rows() {
    let clock = Clock::system();
    let profiles = support::table::<Profile>(&clock).await;
    let orders = Table::<Order>::new(profiles.connection().clone()).with_clock(clock.clone());
    orders.ensure_schema().await.unwrap();
    profiles
        .put(&Profile {
            id: "p1".into(),
            name: "Ann".into(),
        })
        .await
        .unwrap();
    orders
        .put(&Order {
            id: "o1".into(),
            total: 42,
            note: None,
        })
        .await
        .unwrap();

    let names: Vec<String> = support::scanned(&profiles, |p| p.id).await;
    assert_eq!(names, ["p1"]);
    let ids: Vec<String> = support::scanned(&orders, |o| o.id).await;
    assert_eq!(ids, ["o1"]);
    assert_eq!(profiles.get(&"o1".to_owned()).await.unwrap(), None);
    assert_eq!(orders.get(&"p1".to_owned()).await.unwrap(), None);
    let stats = profiles.read_stats();
    assert_eq!((stats.rows_incomplete, stats.partially_expired), (0, 0));

    // Each row holds its own struct's marker, named for the struct.
    let cells = support::stored_cells(&orders, "o1").await;
    assert!(
        cells.iter().any(|c| c.qualifier == b"\0\0Order"),
        "{cells:?}"
    );
    assert!(!cells.iter().any(|c| c.qualifier == b"\0\0Profile"));

    // An insert of one struct is not refused by the other's row.
    let inserted = profiles
        .insert_if_absent(&Profile {
            id: "o1".into(),
            name: "Bo".into(),
        })
        .await
        .unwrap();
    assert!(matches!(inserted, Insert::Inserted(_)), "{inserted:?}");
}

/// One-second expiration; `Core` and `Extra` under one row key in one
/// family, written by different services with different expiries.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "split", family = "p")]
struct Core {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    x: String,
}

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "split", family = "p")]
struct Extra {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    y: Option<String>,
}

#[tokio::test]
async fn a_struct_sharing_a_row_never_keeps_the_others_expired_row_alive() {
    let clock = Clock::system();
    let cores = support::table::<Core>(&clock).await;
    let extras = Table::<Extra>::new(cores.connection().clone()).with_clock(clock.clone());
    extras.ensure_schema().await.unwrap();
    let core_expiry = Utc::now() + TimeDelta::milliseconds(1_500);
    cores
        .put(&Core {
            id: "k".into(),
            expires_at: core_expiry,
            x: "core".into(),
        })
        .await
        .unwrap();
    extras
        .put(&Extra {
            id: "k".into(),
            expires_at: Utc::now() + TimeDelta::hours(1),
            y: None,
        })
        .await
        .unwrap();
    assert!(cores.get(&"k".to_owned()).await.unwrap().is_some());

    // Wait (bounded) for `x` and Core's marker to expire and be collected.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cells = support::stored_cells(&cores, "k").await;
        if !cells.iter().any(|c| c.qualifier == b"x") {
            break;
        }
        if Utc::now() > core_expiry {
            assert_eq!(cores.get(&"k".to_owned()).await.unwrap(), None);
        }
        assert!(
            Instant::now() < deadline,
            "`x` was not collected in 30 s: {cells:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Extra's marker lives an hour more; Core's row stays absent.
    assert_eq!(cores.get(&"k".to_owned()).await.unwrap(), None);
    assert!(cores.scan(Scan::all()).await.unwrap().is_empty());
    assert!(extras.get(&"k".to_owned()).await.unwrap().is_some());
    let stats = cores.read_stats();
    assert_eq!(stats.rows_incomplete, 0, "{stats:?}");
}

/// A struct that gained a required field without `#[bigtable(default)]`:
/// version 1 and version 2 of `Person` (one marker name, the struct's).
mod v1 {
    use bigtable_ttl::BigtableRow;

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "people", family = "p")]
    #[ttl(default = "1d")]
    pub struct Person {
        #[bigtable(key)]
        pub id: String,
        pub name: String,
    }
}

mod v2 {
    use bigtable_ttl::BigtableRow;

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "people", family = "p")]
    #[ttl(default = "1d")]
    pub struct Person {
        #[bigtable(key)]
        pub id: String,
        pub name: String,
        pub email: String,
    }
}

#[tokio::test]
async fn an_incomplete_row_is_reported_by_reads_and_never_overwritten_by_inserts() {
    let clock = Clock::system();
    let old = support::table::<v1::Person>(&clock).await;
    let new = Table::<v2::Person>::new(support::connection_to(old.connection()))
        .with_clock(clock.clone());
    // `marked`: written by version 1 of this library's struct (its marker
    // is there). `unmarked`: the same cell written by another program, or
    // before markers existed.
    old.put(&v1::Person {
        id: "marked".into(),
        name: "Ann".into(),
    })
    .await
    .unwrap();
    let ts = Utc::now().timestamp_millis() * 1_000;
    RawTable::new(old.connection(), "people")
        .mutate_row(
            "unmarked",
            vec![data::Mutation::set_cell(
                "p",
                b"name".to_vec(),
                ts,
                b"Bob".to_vec(),
            )],
        )
        .await
        .unwrap();
    assert_eq!(
        v1::Person::SCHEMA.marker,
        v2::Person::SCHEMA.marker,
        "versions of one struct share its marker"
    );

    let missing_email = |err: &Error, key: &str| {
        matches!(&err,
            Error::Decode(e) if e.source == CodecError::Missing && e.row_key == key.as_bytes() && e.column == "p:email"
        )
    };
    for key in ["marked", "unmarked"] {
        let err = new.get(&key.to_owned()).await.unwrap_err();
        assert!(missing_email(&err, key), "{key}: {err:?}");
        // The insert writes nothing over the row, even when reads skip it.
        let skipping = new
            .clone()
            .with_read_options(ReadOptions::default().with_skip_undecodable(true));
        let fresh = v2::Person {
            id: key.into(),
            name: "Intruder".into(),
            email: "i@example.com".into(),
        };
        let err = skipping.insert_if_absent(&fresh).await.unwrap_err();
        assert!(missing_email(&err, key), "{key}: {err:?}");
        let kept = old.get(&key.to_owned()).await.unwrap().expect(key);
        assert_ne!(kept.value.name, "Intruder", "{key} was overwritten");
    }
    let skipping = new
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    assert!(skipping.scan(Scan::all()).await.unwrap().is_empty());
    assert_eq!(new.read_stats().rows_incomplete, 2);

    // A whole write of version 2 makes the row whole again.
    new.put(&v2::Person {
        id: "marked".into(),
        name: "Ann".into(),
        email: "ann@example.com".into(),
    })
    .await
    .unwrap();
    let read = new.get(&"marked".to_owned()).await.unwrap().unwrap();
    assert_eq!(read.value.email, "ann@example.com");
}

/// Rows written without the struct's marker get it from `add_markers`,
/// which resumes after the last row it reports and writes nothing twice.
#[tokio::test]
async fn add_markers_resumes_where_it_stopped_and_marks_each_row_once() {
    use bigtable_ttl::{MarkProgress, MarkStatus};
    use std::ops::ControlFlow;
    let clock = Clock::system();
    let people = support::table::<v1::Person>(&clock).await;
    let ts = Utc::now().timestamp_millis() * 1_000;
    for key in ["k1", "k2", "k3"] {
        RawTable::new(people.connection(), "people")
            .mutate_row(
                key,
                vec![data::Mutation::set_cell(
                    "p",
                    b"name".to_vec(),
                    ts,
                    key.as_bytes().to_vec(),
                )],
            )
            .await
            .unwrap();
    }
    let marked = |cells: &[bigtable_ttl::data::Cell]| {
        cells
            .iter()
            .filter(|c| c.qualifier == v1::Person::SCHEMA.marker)
            .count()
    };
    // A run that had done `k1` and stopped: the rest.
    let mut resume = MarkProgress::default();
    resume.last_row_key = Some(b"k1".to_vec());
    let mut pages = 0;
    let status = people
        .add_markers(Some(resume), |_| {
            pages += 1;
            ControlFlow::Continue(())
        })
        .await
        .unwrap();
    let MarkStatus::Done(done) = status else {
        panic!("{status:?}")
    };
    assert_eq!((done.rows_read, done.rows_marked), (2, 2), "{done:?}");
    assert_eq!(done.last_row_key.as_deref(), Some(&b"k3"[..]));
    assert_eq!(pages, 1);
    assert_eq!(marked(&support::stored_cells(&people, "k1").await), 0);
    for key in ["k2", "k3"] {
        let cells = support::stored_cells(&people, key).await;
        assert_eq!(marked(&cells), 1, "{key}: {cells:?}");
        let marker = cells
            .iter()
            .find(|c| c.qualifier == v1::Person::SCHEMA.marker)
            .unwrap();
        // At the row's timestamp, carrying the struct's fingerprint.
        assert_eq!(
            (marker.timestamp_micros, marker.value.as_slice()),
            (ts, &v1::Person::SCHEMA.marker_fingerprint()[..])
        );
    }
    // From the start: only `k1` is left to mark.
    let status = people
        .add_markers(None, |_| ControlFlow::Break(()))
        .await
        .unwrap();
    let MarkStatus::Stopped(all) = status else {
        panic!("{status:?}")
    };
    assert_eq!(
        (all.rows_read, all.rows_marked, all.rows_already_marked),
        (3, 1, 2),
        "{all:?}"
    );
    for key in ["k1", "k2", "k3"] {
        assert_eq!(marked(&support::stored_cells(&people, key).await), 1);
    }
}
