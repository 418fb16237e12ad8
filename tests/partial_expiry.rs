//! Rows whose cells were written at different times, under the default
//! strategy: the typed reader's rule for a row whose required column has
//! expired while other cells of it are live (it is left out, and counted),
//! against one whose required column was never written (an error naming
//! table, row and column), read with the clock before, between and after
//! the cells' expiries. The rows are written as another client writes them:
//! `cbt set`, with the server's timestamps, a second and more apart.

mod support;

use std::time::Duration;

use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::{BigtableRow, Clock, CodecError, Error, Scan, Table};
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt as _;
use support::cbt;

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "pages", family = "p")]
#[ttl(default = "1h")]
struct Page {
    #[bigtable(key)]
    id: String,
    url: String,
    user: String,
}

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
    let scanned: Vec<String> = table
        .scan(Scan::all())
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.value.id)
        .collect();
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

#[tokio::test]
async fn a_required_column_never_written_stays_an_error_and_can_be_skipped() {
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Page>(&clock).await;
    let conn = table.connection().clone();
    cbt(&conn, &["set", "pages", "half", "p:user=ann"]);
    cbt(&conn, &["set", "pages", "whole", "p:url=/a", "p:user=bob"]);

    let errors = [
        table.get(&"half".to_owned()).await.unwrap_err(),
        table.scan(Scan::all()).await.unwrap_err(),
    ];
    for err in errors {
        assert!(
            matches!(
                &err,
                Error::Decode { table, row_key, column, source: CodecError::Missing }
                    if table == "pages" && row_key == b"half" && column == "p:url"
            ),
            "{err:?}"
        );
    }

    // Skipping undecodable rows: the rest of the scan comes through.
    let skipping = table
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    let rows = skipping.scan(Scan::all()).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].value.id, "whole");
    assert_eq!(skipping.read_stats().rows_skipped, 1);
}

#[tokio::test]
async fn a_timestamp_near_the_end_of_time_names_table_and_row() {
    use bigtable_ttl::proto::{mutation, MutateRowRequest, Mutation};
    let clock = Clock::manual(Utc::now());
    let table = support::table::<Page>(&clock).await;
    let ts = i64::MAX - i64::MAX % 1_000;
    let set = |column: &str, value: &str| Mutation {
        mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: "p".into(),
            column_qualifier: column.as_bytes().to_vec(),
            timestamp_micros: ts,
            value: value.as_bytes().to_vec(),
        })),
    };
    let request = MutateRowRequest {
        table_name: table.connection().table_path("pages"),
        row_key: b"far".to_vec(),
        mutations: vec![set("url", "/x"), set("user", "y")],
        ..MutateRowRequest::default()
    };
    table
        .connection()
        .data_client("pages")
        .unwrap()
        .mutate_row(request)
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
            Error::TimestampOutOfRange { table, row_key, timestamp_micros }
                if table == "pages" && row_key == b"far" && *timestamp_micros == ts
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
