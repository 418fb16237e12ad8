//! Rows whose cells were written at different times: the typed reader's
//! rule for a row whose required column has expired while other cells of
//! it are live (it is not live: left out, and counted), read with the clock
//! before, between and after the cells' expiries, and once garbage
//! collection has removed the expired column; against a row this library
//! wrote whole, read by a struct with a required field the row never had
//! (an error naming table, row and column). The rows are written as another
//! client writes them: `cbt set`, with the server's timestamps, a second
//! and more apart, or one `MutateRow` with two expiries.

use crate::raw_rows::RawRows as _;
use crate::support;

use std::time::Duration;

use bigtable_ttl::data;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::{BigtableRow, Clock, CodecError, Error, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::TryStreamExt as _;
use support::cbt;
use support::rows::Page;

fn at_micros(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(micros).unwrap()
}

/// The stored timestamp of `row`'s `column`.
async fn stored(table: &Table<Page>, row: &str, column: &[u8]) -> i64 {
    let raw = table.raw_rows(Scan::keys([row])).await.unwrap();
    raw.iter()
        .flat_map(|(_, cells)| cells)
        .find(|c| c.qualifier == column)
        .unwrap_or_else(|| panic!("{row} has no {column:?}: {raw:?}"))
        .timestamp_micros
}

async fn ids(table: &Table<Page>) -> Vec<String> {
    let scanned: Vec<String> = support::scanned(table, |p| p.id).await;
    let streamed: Vec<String> = table
        .stream(Scan::all())
        .map_ok(|p| p.value.id)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(scanned, streamed, "scan and stream agree");
    scanned
}

#[tokio::test]
async fn a_partially_expired_row_is_left_out_and_counted_never_an_error() {
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Page>(&clock).await;
    let conn = table.connection().clone();
    // `url` first, `user` over a second later: the server stamps each.
    cbt(&conn, &["set", "pages", "mixed", "p:url=/home"]);
    cbt(&conn, &["set", "pages", "whole", "p:url=/a", "p:user=ann"]);
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    cbt(&conn, &["set", "pages", "mixed", "p:user=bob"]);
    let url_ts = stored(&table, "mixed", b"url").await;
    let user_ts = stored(&table, "mixed", b"user").await;
    let whole_ts = stored(&table, "whole", b"user").await;
    assert!(user_ts - url_ts >= 1_000_000, "{url_ts} {user_ts}");
    let hour = 3_600_000_000;

    // Before either expires: both rows, whole.
    clock.set(at_micros(url_ts + hour - 500_000));
    assert_eq!(ids(&table).await, ["mixed", "whole"]);
    let mixed = table.get(&"mixed".to_owned()).await.unwrap().unwrap();
    assert_eq!((mixed.url.as_str(), mixed.user.as_str()), ("/home", "bob"));
    assert_eq!(table.read_stats().partially_expired, 0);

    // Between: `url` of `mixed` expired, its `user` not. The row is left
    // out of get, scan and stream, each time counted; nothing fails.
    clock.set(at_micros(url_ts + hour + 1_000));
    assert!(whole_ts + hour > clock.now().timestamp_micros());
    assert!(user_ts + hour > clock.now().timestamp_micros());
    let before = table.read_stats().partially_expired;
    assert_eq!(table.get(&"mixed".to_owned()).await.unwrap(), None);
    assert_eq!(ids(&table).await, ["whole"]);
    assert_eq!(table.read_stats().partially_expired, before + 3);
    // The cells are still stored: the rule is the reader's, not GC's.
    assert_eq!(
        table.raw_rows(Scan::keys(["mixed"])).await.unwrap()[0]
            .1
            .len(),
        2
    );

    // After: every cell of `mixed` expired; the server's filter leaves the
    // row out before the reader sees it.
    clock.set(at_micros(user_ts.max(whole_ts) + hour));
    assert_eq!(ids(&table).await, Vec::<String>::new());
    assert_eq!(table.get(&"mixed".to_owned()).await.unwrap(), None);
}

/// `Page` with one more required field, as a struct changed without
/// `#[bigtable(default)]` on the new field reads the same table (a
/// version of `Page`: its marker).
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "pages", family = "p", marker = "Page")]
#[ttl(default = "1h")]
struct PageWithLang {
    #[bigtable(key)]
    id: String,
    url: String,
    user: String,
    lang: String,
}

#[tokio::test]
async fn a_required_column_never_written_makes_an_incomplete_row_never_a_silent_none() {
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Page>(&clock).await;
    let conn = table.connection().clone();
    // Another program's rows: `half` never had `url`. Nothing stored says
    // it had one that expired: present but incomplete, an error naming the
    // column, never read as absent (an insert would overwrite it).
    cbt(&conn, &["set", "pages", "half", "p:user=ann"]);
    cbt(&conn, &["set", "pages", "whole", "p:url=/a", "p:user=bob"]);
    for err in [
        table.get(&"half".to_owned()).await.unwrap_err(),
        table.scan(Scan::all()).await.unwrap_err(),
    ] {
        assert!(
            matches!(
                &err,
                Error::Decode(e) if e.source == CodecError::Missing && e.row_key == b"half" && e.column == "p:url"
            ),
            "{err:?}"
        );
    }
    let skipping = table
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    assert_eq!(ids(&skipping).await, ["whole"]);
    let stats = table.read_stats();
    assert_eq!(stats.rows_incomplete, 2, "scan and stream: {stats:?}");
    assert_eq!(stats.partially_expired, 0, "{stats:?}");

    // A row this library wrote whole carries a live row marker: read by a
    // struct with a required field the row never had, the struct and the
    // table disagree, and that is an error naming the column.
    table
        .put(&Page {
            id: "mine".into(),
            url: "/m".into(),
            user: "cy".into(),
        })
        .await
        .unwrap();
    let with_lang =
        Table::<PageWithLang>::new(support::connection_to(&conn)).with_clock(clock.clone());
    let errors = [
        with_lang.get(&"mine".to_owned()).await.unwrap_err(),
        with_lang.scan(Scan::keys(["mine"])).await.unwrap_err(),
    ];
    for err in errors {
        assert!(
            matches!(
                &err,
                Error::Decode(e) if e.source == CodecError::Missing && e.table == "pages" && e.row_key == b"mine" && e.column == "p:lang"
            ),
            "{err:?}"
        );
    }

    // Skipping undecodable rows: the rest of the scan comes through (none
    // here: `whole` lacks `lang` too, and `half` `url`), counted as
    // incomplete.
    let skipping = with_lang.with_read_options(ReadOptions::default().with_skip_undecodable(true));
    let rows = skipping.scan(Scan::all()).await.unwrap();
    assert!(rows.is_empty(), "{rows:?}");
    assert_eq!(skipping.read_stats().rows_skipped, 3);
    assert_eq!(skipping.read_stats().rows_incomplete, 3);
}

/// One-second expiration, another program's rows written with two
/// expiries (`owner` 2 s, `scope` a minute), one of them given its marker
/// by `Table::add_markers` while both are live. While the expired `owner`
/// is stored it proves the row expired: left out. Once the emulator's
/// garbage collection has removed it, only the marker proves it: the
/// marked row stays left out of `get`, `scan`, `stream` and
/// `scan_parallel`; the unmarked one is incomplete (an error naming the
/// column, or skipped and counted), never silently absent.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "tokens", family = "t")]
struct Token {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    owner: String,
    scope: String,
}

async fn token_ids(table: &Table<Token>) -> Vec<String> {
    let scanned: Vec<String> = support::scanned(table, |t| t.id).await;
    let streamed: Vec<String> = table
        .stream(Scan::all())
        .map_ok(|t| t.value.id)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(scanned, streamed);
    let mut parallel: Vec<String> = table
        .scan_parallel(Scan::all(), 2)
        .map_ok(|t| t.value.id)
        .try_collect()
        .await
        .unwrap();
    parallel.sort();
    assert_eq!(scanned, parallel);
    scanned
}

#[tokio::test]
async fn an_expired_required_column_once_collected_is_proven_expired_only_by_a_marker() {
    use bigtable_ttl::data::RawTable;
    use bigtable_ttl::MarkStatus;

    use std::ops::ControlFlow;
    let clock = Clock::system();
    let table = support::table::<Token>(&clock).await;
    let now_ms = Utc::now().timestamp_millis() * 1_000;
    let set = |qualifier: &str, ts: i64| {
        data::Mutation::set_cell("t", qualifier.as_bytes().to_vec(), ts, b"x".to_vec())
    };
    let owner_ts = now_ms + 3_000_000;
    let scope_ts = now_ms + 60_000_000;
    for key in ["aged", "aged-marked"] {
        RawTable::new(table.connection(), "tokens")
            .mutate_row(key, vec![set("owner", owner_ts), set("scope", scope_ts)])
            .await
            .unwrap();
    }
    for id in ["a", "b", "c"] {
        table
            .put(&Token {
                id: id.into(),
                expires_at: Utc::now() + TimeDelta::minutes(5),
                owner: "me".into(),
                scope: "all".into(),
            })
            .await
            .unwrap();
    }
    // The upgrade path, over `aged-marked` only, while both columns live.
    let only = bigtable_ttl::ops::Part::new(
        0,
        1,
        b"aged-marked".to_vec(),
        Some(b"aged-marked\0".to_vec()),
    );
    let status = table
        .add_markers(Some(bigtable_ttl::MarkProgress::for_part(only)), |_| {
            ControlFlow::Continue(())
        })
        .await
        .unwrap();
    let MarkStatus::Done(progress) = status else {
        panic!("{status:?}")
    };
    assert_eq!(
        (progress.rows_read, progress.rows_marked),
        (1, 1),
        "{progress:?}"
    );
    let marker: Vec<_> = support::stored_cells(&table, "aged-marked")
        .await
        .into_iter()
        .filter(|c| c.qualifier == Token::SCHEMA.marker)
        .collect();
    assert_eq!(marker.len(), 1, "{marker:?}");
    // At the newest required timestamp, carrying the row's (the earliest).
    assert_eq!(marker[0].timestamp_micros, scope_ts);
    assert_eq!(marker[0].value, owner_ts.to_be_bytes());
    assert_eq!(
        token_ids(&table).await,
        ["a", "aged", "aged-marked", "b", "c"]
    );

    // Wait (bounded) for the emulator to collect the expired `owner`s.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for key in ["aged", "aged-marked"] {
        loop {
            let cells = support::stored_cells(&table, key).await;
            if !cells.iter().any(|c| c.qualifier == b"owner") {
                assert!(cells.iter().any(|c| c.qualifier == b"scope"), "{cells:?}");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the expired `owner` was not collected in 30 s: {cells:?}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    assert_eq!(table.get(&"aged-marked".to_owned()).await.unwrap(), None);
    let err = table.get(&"aged".to_owned()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Decode(e) if e.source == CodecError::Missing && e.row_key == b"aged" && e.column == "t:owner"
        ),
        "{err:?}"
    );
    let skipping = table
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    assert_eq!(token_ids(&skipping).await, ["a", "b", "c"]);
    let stats = table.read_stats();
    assert_eq!(
        stats.rows_incomplete, 3,
        "scan, stream, parallel: {stats:?}"
    );
}

#[tokio::test]
async fn a_timestamp_near_the_end_of_time_names_table_and_row() {
    use bigtable_ttl::data::RawTable;

    let clock = Clock::manual(Utc::now());
    let table = support::table::<Page>(&clock).await;
    let ts = i64::MAX - i64::MAX % 1_000;
    let set = |column: &str, value: &str| {
        data::Mutation::set_cell(
            "p",
            column.as_bytes().to_vec(),
            ts,
            value.as_bytes().to_vec(),
        )
    };
    RawTable::new(table.connection(), "pages")
        .mutate_row("far", vec![set("url", "/x"), set("user", "y")])
        .await
        .unwrap();
    table
        .put(&Page {
            id: "near".into(),
            url: "/n".into(),
            user: "z".into(),
        })
        .await
        .unwrap();
    let err = table.scan(Scan::all()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::TimestampOutOfRange(e) if e.table == "pages" && e.row_key == b"far" && e.timestamp_micros == ts
        ),
        "{err:?}"
    );
    let skipping = table.with_read_options(ReadOptions::default().with_skip_undecodable(true));
    let rows = skipping.scan(Scan::all()).await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.value.id.as_str()).collect::<Vec<_>>(),
        ["near"]
    );
    assert_eq!(skipping.read_stats().rows_skipped, 1);
}

/// `Table::add_markers` settles a partial row as the readers do: a row
/// whose required `owner` expired (stored, not yet collected) while its
/// `scope` lives is not live to a read, marked (its marker expired with
/// `owner`) or not, and so not live to `add_markers` either, never
/// counted incomplete nor given a marker. A row whose required column
/// holds no cell at all stays incomplete to both.
#[tokio::test]
async fn add_markers_judges_a_partly_expired_row_as_a_read_does() {
    use bigtable_ttl::data::RawTable;
    use bigtable_ttl::MarkStatus;
    use std::ops::ControlFlow;

    let start = Utc::now();
    let clock = Clock::manual(start);
    let table = support::table::<Token>(&clock).await;
    let t0 = start.timestamp_millis() * 1_000;
    let (early, late) = (t0 + 100_000_000, t0 + 300_000_000);
    let set = |qualifier: &[u8], ts: i64| {
        data::Mutation::set_cell("t", qualifier.to_vec(), ts, b"x".to_vec())
    };
    let raw = RawTable::new(table.connection(), "tokens");
    raw.mutate_row("expired", vec![set(b"owner", early), set(b"scope", late)])
        .await
        .unwrap();
    raw.mutate_row(
        "expired-marked",
        vec![
            set(b"owner", early),
            set(b"scope", late),
            data::Mutation::set_cell("t", Token::SCHEMA.marker.to_vec(), early, Vec::new()),
        ],
    )
    .await
    .unwrap();
    raw.mutate_row("no-owner", vec![set(b"scope", late)])
        .await
        .unwrap();
    // Between the two expiries; the emulator collects nothing it holds
    // (its garbage collection goes by the real clock, before `early`).
    clock.advance(TimeDelta::seconds(200));

    let skipping = table
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    assert_eq!(token_ids(&skipping).await, Vec::<String>::new());
    assert_eq!(table.get(&"expired".to_owned()).await.unwrap(), None);
    assert_eq!(table.get(&"expired-marked".to_owned()).await.unwrap(), None);
    assert!(table.get(&"no-owner".to_owned()).await.is_err());

    let status = table
        .add_markers(None, |_| ControlFlow::Continue(()))
        .await
        .unwrap();
    let MarkStatus::Done(progress) = status else {
        panic!("{status:?}")
    };
    assert_eq!(
        (
            progress.rows_read,
            progress.rows_not_live,
            progress.rows_incomplete,
            progress.rows_marked
        ),
        (3, 2, 1, 0),
        "{progress:?}"
    );
    for key in ["expired", "expired-marked", "no-owner"] {
        let markers = support::stored_cells(&table, key)
            .await
            .into_iter()
            .filter(|c| c.qualifier == Token::SCHEMA.marker && c.timestamp_micros != early)
            .count();
        assert_eq!(markers, 0, "{key}: a marker was written");
    }
}
