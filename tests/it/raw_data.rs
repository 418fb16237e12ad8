//! The raw data layer (`bigtable_ttl::data`) on the emulator: rows by any
//! row set, filter, limit and direction; one row; many rows with a result
//! each; check-and-mutate; read-modify-write; samples. The typed table
//! the tests borrow only creates the table and family.

use crate::support;

use bigtable_ttl::chrono::Utc;
use bigtable_ttl::data::{self, RawTable, ReadRows, RowFilter};
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

fn set(qualifier: &str, value: &[u8], ts: i64) -> data::Mutation {
    data::Mutation::set_cell("e", qualifier.as_bytes().to_vec(), ts, value.to_vec())
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
    let entries = ["a", "b", "c", "d", "e"].map(|k| {
        data::Entry::new(
            k.as_bytes().to_vec(),
            vec![set("v", k.as_bytes(), ts), set("v", b"older", ts - 1000)],
        )
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
    let newest = RowFilter::cells_per_column_limit(1);
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
    let has_new = RowFilter::value_regex("new");
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

    let add = |by| data::ReadModifyWriteRule::increment("e", b"n".to_vec(), by);
    t.read_modify_write_row("k", vec![add(5)]).await.unwrap();
    let row = t.read_modify_write_row("k", vec![add(5)]).await.unwrap();
    let n = row.cells.iter().find(|c| c.qualifier == b"n").unwrap();
    assert_eq!(n.value, 10i64.to_be_bytes());
    assert_eq!(n.family, "e");
    let log = data::ReadModifyWriteRule::append("e", b"log".to_vec(), "|a");
    t.read_modify_write_row("k", vec![log.clone()])
        .await
        .unwrap();
    let row = t.read_modify_write_row("k", vec![log]).await.unwrap();
    assert_eq!(row.cells[0].value, b"|a|a");
}

/// The raw layer's filters and deletes, each kind as Bigtable applies it:
/// what `RowFilter`'s constructors and `Mutation`'s say is what the
/// emulator does.
#[tokio::test]
async fn filters_and_deletes_do_what_they_say() {
    let t = events().await;
    let ts = now_micros();
    let row = |key: &str| {
        data::Entry::new(
            key,
            vec![
                set("a", b"apple", ts),
                set("a", b"older", ts - 1000),
                set("b", b"banana", ts),
                set("c", b"cherry", ts),
            ],
        )
    };
    let results = t
        .mutate_rows(vec![row("r1"), row("r2"), row("s1")])
        .await
        .unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let cells = |filter: RowFilter| {
        let t = t.clone();
        async move {
            let row = t.read_row("r1", Some(filter)).await.unwrap();
            row.map(|r| {
                r.cells
                    .into_iter()
                    .map(|c| {
                        format!(
                            "{}={}",
                            String::from_utf8_lossy(&c.qualifier),
                            String::from_utf8_lossy(&c.value)
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
        }
    };
    let newest = RowFilter::cells_per_column_limit(1);
    assert_eq!(
        cells(RowFilter::column_range("e", "a"..="b")).await,
        ["a=apple", "a=older", "b=banana"]
    );
    assert_eq!(
        cells(RowFilter::chain([
            RowFilter::column_range("e", "b"..),
            newest.clone()
        ]))
        .await,
        ["b=banana", "c=cherry"]
    );
    assert_eq!(
        cells(RowFilter::chain([
            RowFilter::value_range("b".."c"),
            newest.clone()
        ]))
        .await,
        ["b=banana"]
    );
    assert_eq!(cells(RowFilter::timestamp_range(0, ts)).await, ["a=older"]);
    assert_eq!(
        cells(RowFilter::chain([
            RowFilter::column_qualifier_regex("c"),
            RowFilter::strip_value()
        ]))
        .await,
        ["c="]
    );
    assert_eq!(
        cells(RowFilter::chain([
            RowFilter::family_name_regex("e"),
            RowFilter::cells_per_row_offset(3)
        ]))
        .await,
        ["c=cherry"]
    );
    assert_eq!(cells(RowFilter::cells_per_row_limit(1)).await, ["a=apple"]);
    assert_eq!(
        cells(RowFilter::interleave([
            RowFilter::column_qualifier_regex("b"),
            RowFilter::column_qualifier_regex("c")
        ]))
        .await,
        ["b=banana", "c=cherry"]
    );
    assert_eq!(
        cells(RowFilter::condition(
            RowFilter::value_regex("banana"),
            Some(RowFilter::column_qualifier_regex("c")),
            Some(RowFilter::block_all())
        ))
        .await,
        ["c=cherry"]
    );
    assert_eq!(
        cells(RowFilter::condition(
            RowFilter::value_regex("kiwi"),
            Some(RowFilter::pass_all()),
            None
        ))
        .await,
        Vec::<String>::new()
    );
    let keys = |rows: Vec<data::Row>| keys(&rows);
    let r_rows: Vec<_> = t
        .read_rows(ReadRows::all().filter(RowFilter::chain([
            RowFilter::row_key_regex("r.*"),
            RowFilter::strip_value(),
        ])))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(keys(r_rows), ["r1", "r2"]);

    // Deletes: versions in a time range, a column, a family, a row.
    t.mutate_row(
        "r1",
        vec![data::Mutation::delete_from_column_in("e", "a", 0, ts)],
    )
    .await
    .unwrap();
    assert_eq!(
        cells(RowFilter::pass_all()).await,
        ["a=apple", "b=banana", "c=cherry"]
    );
    t.mutate_row("r1", vec![data::Mutation::delete_from_column("e", "a")])
        .await
        .unwrap();
    assert_eq!(cells(RowFilter::pass_all()).await, ["b=banana", "c=cherry"]);
    t.mutate_row("r1", vec![data::Mutation::delete_from_family("e")])
        .await
        .unwrap();
    assert!(t.read_row("r1", None).await.unwrap().is_none());
    t.mutate_row("r2", vec![data::Mutation::delete_from_row()])
        .await
        .unwrap();
    assert!(t.read_row("r2", None).await.unwrap().is_none());
    assert!(t.read_row("s1", None).await.unwrap().is_some());
}
