//! What a raw read asks for is what it gets: an empty key list reads
//! nothing and sends nothing, a limit is a number of rows (a server that
//! sends more is refused), and the chunk merger holds a server to the
//! `ReadRows` contract (cell sizes across continuation chunks included),
//! against a scripted fake Bigtable and against the emulator.

use crate::fake_bigtable;
use crate::support;

use std::time::Duration;

use crate::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
use bigtable_ttl::data;
use bigtable_ttl::data::{RawTable, ReadRows};
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{Code, Error, Table};
use fake_bigtable::{Answer, FakeBigtable};
use futures_util::TryStreamExt as _;
use prost::Message as _;
use support::rows::Event;

async fn table(fake: &FakeBigtable) -> RawTable {
    let policy = RetryPolicy::default()
        .with_initial_delay(Duration::from_millis(1))
        .with_max_delay(Duration::from_millis(2))
        .with_attempt_timeout(Duration::from_secs(10))
        .with_deadline(Duration::from_secs(20));
    let conn = fake.connection(policy).await;
    RawTable::new(&conn, "t").with_read_options(ReadOptions::default().with_retry(policy))
}

fn cell(key: &str, value: &[u8]) -> CellChunk {
    CellChunk {
        row_key: key.as_bytes().to_vec(),
        family_name: Some("f".into()),
        qualifier: Some(b"col".to_vec()),
        value: value.to_vec(),
        row_status: Some(RowStatus::CommitRow(true)),
        ..CellChunk::default()
    }
}

fn message(chunks: Vec<CellChunk>) -> Vec<u8> {
    crate::proto::ReadRowsResponse {
        chunks,
        ..Default::default()
    }
    .encode_to_vec()
}

async fn read(t: &RawTable, read: ReadRows) -> bigtable_ttl::Result<Vec<bigtable_ttl::data::Row>> {
    t.read_rows(read).try_collect().await
}

/// The error ending `read`; a read that succeeds fails the test, its rows
/// counted, not printed (a test cell is a mebibyte).
async fn refused(t: &RawTable, read: ReadRows) -> Error {
    match t.read_rows(read).try_collect::<Vec<_>>().await {
        Ok(rows) => panic!("read {} rows, expected an error", rows.len()),
        Err(e) => e,
    }
}

#[tokio::test]
async fn no_key_reads_nothing_and_sends_nothing_and_a_limit_is_a_number_of_rows() {
    let fake = FakeBigtable::start().await;
    let t = table(&fake).await;
    assert!(read(&t, ReadRows::keys(Vec::<Vec<u8>>::new()))
        .await
        .unwrap()
        .is_empty());
    assert!(read(&t, ReadRows::keys([b"k"; 0]).limit(3).reversed())
        .await
        .unwrap()
        .is_empty());
    let err = refused(&t, ReadRows::all().limit(0)).await;
    assert!(matches!(err, Error::InvalidRowLimit { .. }), "{err:?}");
    assert!(fake.received_of("ReadRows").is_empty());
}

#[tokio::test]
async fn an_empty_key_list_reads_no_row_of_a_full_table() {
    let typed = Table::<Event>::new(support::connection());
    typed.ensure_schema().await.unwrap();
    let t = RawTable::new(typed.connection(), typed.name());
    let ts = bigtable_ttl::chrono::Utc::now().timestamp_millis() * 1000;
    let entries = ["a", "b", "c", "d", "e"].map(|k| {
        data::Entry::new(
            k.as_bytes().to_vec(),
            vec![data::Mutation::set_cell(
                "e",
                b"v".to_vec(),
                ts,
                k.as_bytes().to_vec(),
            )],
        )
    });
    let written = t.mutate_rows(entries.to_vec()).await.unwrap();
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    assert_eq!(read(&t, ReadRows::all()).await.unwrap().len(), 5);
    assert!(read(&t, ReadRows::keys(Vec::<Vec<u8>>::new()))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_server_sending_more_than_asked_is_refused() {
    let fake = FakeBigtable::start().await;
    let five = ["a", "b", "c", "d", "e"].map(|k| cell(k, b"v")).to_vec();
    fake.script("ReadRows", [Answer::ok(vec![message(five)])]);
    let t = table(&fake).await;
    let err = refused(&t, ReadRows::all().limit(2)).await;
    assert_eq!(err.code(), Some(Code::Internal), "{err}");
    assert!(format!("{err:?}").contains("limit of 2"), "{err:?}");
}

#[tokio::test]
async fn a_split_cell_longer_than_announced_is_refused() {
    let fake = FakeBigtable::start().await;
    let first = CellChunk {
        value_size: 5,
        row_status: None,
        ..cell("r", b"ab")
    };
    let rest = CellChunk {
        value: vec![7; 1 << 20],
        row_status: Some(RowStatus::CommitRow(true)),
        ..CellChunk::default()
    };
    fake.script(
        "ReadRows",
        [Answer::ok(vec![message(vec![first]), message(vec![rest])])],
    );
    let t = table(&fake).await;
    let err = refused(&t, ReadRows::all()).await;
    assert_eq!(err.code(), Some(Code::Internal), "{err}");
    assert!(format!("{err:?}").contains("announced size"), "{err:?}");
}

#[tokio::test]
async fn an_answer_cut_short_inside_a_message_is_an_error() {
    let fake = FakeBigtable::start().await;
    // A frame header announcing 1000 bytes, 10 of them sent, then OK.
    let mut cut = vec![0];
    cut.extend_from_slice(&1000u32.to_be_bytes());
    cut.extend_from_slice(&[0; 10]);
    fake.script(
        "ReadRows",
        [Answer::ok(vec![message(vec![cell("a", b"v")])]).then_raw(cut)],
    );
    let t = table(&fake).await;
    let mut rows = std::pin::pin!(t.read_rows(ReadRows::all()));
    let first = rows.try_next().await.unwrap().unwrap();
    assert_eq!(first.key, b"a");
    let err = match rows.try_next().await {
        Ok(row) => panic!("the read ended with {:?}, not an error", row.map(|r| r.key)),
        Err(e) => e,
    };
    assert_eq!(err.code(), Some(Code::Internal), "{err}");
    assert!(format!("{err:?}").contains("cut short"), "{err:?}");
}
