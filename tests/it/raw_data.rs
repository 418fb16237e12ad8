//! The raw data layer (`bigtable_ttl::data`) on the emulator: rows by any
//! row set, filter, limit and direction; one row; many rows with a result
//! each; check-and-mutate; read-modify-write; samples. The typed table
//! the tests borrow only creates the table and family.

use crate::support;

use bigtable_ttl::chrono::Utc;
use bigtable_ttl::data::{RawTable, ReadRows};
use bigtable_ttl::proto::row_filter::Filter;
use bigtable_ttl::proto::{
    mutate_rows_request, mutation, read_modify_write_rule, Mutation, ReadModifyWriteRule, RowFilter,
};
use bigtable_ttl::Table;
use futures_util::TryStreamExt as _;
use support::rows::Event;

/// A raw handle on a fresh `events` table (family `e`, cells kept 2 days).
async fn events() -> RawTable {
    let typed = Table::<Event>::new(support::connection());
    typed.ensure_schema().await.unwrap();
    RawTable::new(typed.connection(), typed.name())
}

/// Now, in whole milliseconds (as Bigtable wants cell timestamps).
fn now_micros() -> i64 {
    Utc::now().timestamp_millis() * 1000
}

fn set(qualifier: &str, value: &[u8], ts: i64) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: "e".into(),
            column_qualifier: qualifier.as_bytes().to_vec(),
            timestamp_micros: ts,
            value: value.to_vec(),
        })),
    }
}

fn keys(rows: &[bigtable_ttl::data::Row]) -> Vec<String> {
    rows.iter()
        .map(|r| String::from_utf8_lossy(&r.key).into_owned())
        .collect()
}

async fn read(t: &RawTable, read: ReadRows) -> Vec<String> {
    let rows: Vec<_> = t.read_rows(read).try_collect().await.unwrap();
    keys(&rows)
}

#[tokio::test]
async fn row_sets_filters_limits_and_direction() {
    let t = events().await;
    let ts = now_micros();
    let entries = ["a", "b", "c", "d", "e"].map(|k| mutate_rows_request::Entry {
        row_key: k.as_bytes().to_vec(),
        mutations: vec![set("v", k.as_bytes(), ts), set("v", b"older", ts - 1000)],
        ..mutate_rows_request::Entry::default()
    });
    let results = t.mutate_rows(entries.to_vec()).await.unwrap();
    assert_eq!(results.len(), 5);
    assert!(results.iter().all(Result::is_ok), "{results:?}");

    assert_eq!(read(&t, ReadRows::all()).await, ["a", "b", "c", "d", "e"]);
    assert_eq!(
        read(&t, ReadRows::keys(["e", "a", "zz"]).and_range("b"..="c")).await,
        ["a", "b", "c", "e"]
    );
    assert_eq!(read(&t, ReadRows::range("b".."d")).await, ["b", "c"]);
    assert_eq!(read(&t, ReadRows::range(.."b")).await, ["a"]);
    assert_eq!(read(&t, ReadRows::range("d"..)).await, ["d", "e"]);
    assert_eq!(read(&t, ReadRows::all().limit(2)).await, ["a", "b"]);
    assert_eq!(
        read(&t, ReadRows::all().reversed().limit(2)).await,
        ["e", "d"]
    );
    assert_eq!(
        read(&t, ReadRows::range("b"..="d").reversed()).await,
        ["d", "c", "b"]
    );

    // Every version unfiltered, the newest only with a filter.
    let all = t.read_row("c", None).await.unwrap().unwrap();
    assert_eq!(all.cells.len(), 2);
    let newest = RowFilter {
        filter: Some(Filter::CellsPerColumnLimitFilter(1)),
    };
    let one = t.read_row("c", Some(newest)).await.unwrap().unwrap();
    assert_eq!(one.cells.len(), 1);
    assert_eq!(one.cells[0].value, b"c");
    assert_eq!(one.cells[0].timestamp_micros, ts);
    assert!(t.read_row("zz", None).await.unwrap().is_none());

    let samples = t.sample_row_keys().await.unwrap();
    assert!(!samples.is_empty());
}

#[tokio::test]
async fn one_row_writes_conditions_and_counters() {
    let t = events().await;
    let ts = now_micros();
    t.mutate_row("k", vec![set("state", b"new", ts)])
        .await
        .unwrap();
    let has_new = RowFilter {
        filter: Some(Filter::ValueRegexFilter(b"new".to_vec())),
    };
    let matched = t
        .check_and_mutate_row(
            "k",
            Some(has_new.clone()),
            vec![set("state", b"seen", ts + 1000)],
            vec![set("state", b"never", ts + 1000)],
        )
        .await
        .unwrap();
    assert!(matched);
    let absent = t
        .check_and_mutate_row("nothing", None, vec![], vec![set("state", b"made", ts)])
        .await
        .unwrap();
    assert!(!absent);
    let row = t.read_row("nothing", None).await.unwrap().unwrap();
    assert_eq!(row.cells[0].value, b"made");

    let add = |by| ReadModifyWriteRule {
        family_name: "e".into(),
        column_qualifier: b"n".to_vec(),
        rule: Some(read_modify_write_rule::Rule::IncrementAmount(by)),
    };
    t.read_modify_write_row("k", vec![add(5)]).await.unwrap();
    let row = t.read_modify_write_row("k", vec![add(5)]).await.unwrap();
    let n = row.cells.iter().find(|c| c.qualifier == b"n").unwrap();
    assert_eq!(n.value, 10i64.to_be_bytes());
    let proto = row.into_proto();
    assert_eq!(proto.families[0].name, "e");
}
