//! The raw layer sends twice only what may be applied twice, as Google's
//! clients decide it: a fake Bigtable (`support/fake_bigtable.rs`) counts
//! the attempts of `MutateRow` and `MutateRows` holding a `SetCell` at the
//! server's time (`-1`), an `AddToCell` or a `MergeToCell`, next to
//! idempotent writes that are retried.

use crate::fake_bigtable;

use std::time::Duration;

use crate::proto::{mutate_rows_response, MutateRowsRequest, MutateRowsResponse};
use bigtable_ttl::data;
use bigtable_ttl::data::RawTable;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::{Code, Error};
use fake_bigtable::{four_attempts, Answer, FakeBigtable};
use prost::Message as _;

const UNAVAILABLE: i32 = 14;

async fn table(fake: &FakeBigtable) -> RawTable {
    let policy = four_attempts();
    let conn = fake.connection(policy).await;
    RawTable::new(&conn, "t")
        .with_read_options(ReadOptions::default().with_retry(policy))
        .with_write_retry(policy)
}

fn set_at(timestamp_micros: i64) -> data::Mutation {
    data::Mutation::set_cell("f", b"col".to_vec(), timestamp_micros, b"v".to_vec())
}

fn add_to_cell() -> data::Mutation {
    data::Mutation::add_to_cell("sum", b"col".to_vec(), 0, 1)
}

fn merge_to_cell() -> data::Mutation {
    data::Mutation::merge_to_cell("sum", b"col".to_vec(), 0, 1)
}

fn entry(key: &str, mutations: Vec<data::Mutation>) -> data::Entry {
    data::Entry::new(key.as_bytes().to_vec(), mutations)
}

/// A `MutateRows` answer giving the entries at `indices` an `UNAVAILABLE`.
fn unavailable_for(indices: &[i64]) -> Vec<u8> {
    MutateRowsResponse {
        entries: indices
            .iter()
            .map(|&index| mutate_rows_response::Entry {
                index,
                status: Some(googleapis_tonic_google_rpc::google::rpc::Status {
                    code: UNAVAILABLE,
                    ..Default::default()
                }),
            })
            .collect(),
        ..MutateRowsResponse::default()
    }
    .encode_to_vec()
}

#[tokio::test]
async fn a_mutate_row_that_is_not_idempotent_is_sent_once_and_its_outcome_is_unknown() {
    for (what, mutations) in [
        ("server time", vec![set_at(1000), set_at(-1)]),
        ("AddToCell", vec![add_to_cell()]),
        ("MergeToCell", vec![merge_to_cell()]),
    ] {
        let fake = FakeBigtable::start().await;
        fake.script("MutateRow", vec![Answer::status(UNAVAILABLE); 4]);
        let err = table(&fake)
            .await
            .mutate_row("k", mutations)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::OutcomeUnknown(e) if e.row_key == b"k"),
            "{what}: {err:?}"
        );
        assert_eq!(err.code(), Some(Code::Unavailable), "{what}");
        assert_eq!(fake.received_of("MutateRow").len(), 1, "{what}");
    }

    // The same failures, an idempotent row: retried until written.
    let fake = FakeBigtable::start().await;
    fake.script("MutateRow", vec![Answer::status(UNAVAILABLE); 3]);
    table(&fake)
        .await
        .mutate_row("k", vec![set_at(1000)])
        .await
        .unwrap();
    assert_eq!(fake.received_of("MutateRow").len(), 4);
}

#[tokio::test]
async fn mutate_rows_retries_the_idempotent_entries_of_a_mixed_batch_only() {
    let fake = FakeBigtable::start().await;
    // Entries 0 and 1 answered UNAVAILABLE, 2 and 3 no answer at all.
    fake.script(
        "MutateRows",
        [Answer::ok(vec![unavailable_for(&[0, 1])]).status_of(UNAVAILABLE)],
    );
    let t = table(&fake).await;
    let results = t
        .mutate_rows(vec![
            entry("a", vec![set_at(1000)]),
            entry("b", vec![set_at(-1)]),
            entry("c", vec![set_at(2000)]),
            entry("d", vec![add_to_cell()]),
        ])
        .await
        .unwrap();
    let sent: Vec<Vec<String>> = fake
        .received_of("MutateRows")
        .iter()
        .map(|r| {
            r.decode::<MutateRowsRequest>()
                .entries
                .iter()
                .map(|e| String::from_utf8_lossy(&e.row_key).into_owned())
                .collect()
        })
        .collect();
    assert_eq!(sent, [vec!["a", "b", "c", "d"], vec!["a", "c"]]);
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    let b = results[1].as_ref().unwrap_err();
    assert_eq!((b.code, b.answered), (Code::Unavailable, true), "{b:?}");
    let d = results[3].as_ref().unwrap_err();
    assert_eq!((d.code, d.answered), (Code::Unavailable, false), "{d:?}");
    assert!(d.message.contains("not idempotent"), "{}", d.message);

    // Alone and unanswered, such an entry is still reported as one whose
    // outcome is unknown, not as a request that failed as a whole.
    let fake = FakeBigtable::start().await;
    fake.script("MutateRows", vec![Answer::status(UNAVAILABLE); 4]);
    let results = table(&fake)
        .await
        .mutate_rows(vec![entry("e", vec![merge_to_cell()])])
        .await
        .unwrap();
    let e = results[0].as_ref().unwrap_err();
    assert!(!e.answered, "{e:?}");
    assert_eq!(fake.received_of("MutateRows").len(), 1);
}

/// A conditional write or an increment whose answer arrived but does not
/// decode was applied by the server: an unknown outcome (never re-sent),
/// not an error the server decided on.
#[tokio::test]
async fn an_answer_that_does_not_decode_is_an_unknown_outcome() {
    // Field 1 as a varint whose continuation bit never ends.
    let garbage = vec![0x08, 0xff, 0xff, 0xff];
    for method in ["CheckAndMutateRow", "ReadModifyWriteRow"] {
        let fake = FakeBigtable::start().await;
        fake.script(method, vec![Answer::ok(vec![garbage.clone()])]);
        let raw = table(&fake).await;
        let err = if method == "CheckAndMutateRow" {
            raw.check_and_mutate_row("k", None, vec![set_at(1000)], Vec::new())
                .await
                .unwrap_err()
        } else {
            let rule = data::ReadModifyWriteRule::increment("f", b"n".to_vec(), 1);
            raw.read_modify_write_row("k", vec![rule])
                .await
                .unwrap_err()
        };
        assert!(err.is_outcome_unknown(), "{method}: {err:?}");
        assert_eq!(fake.received_of(method).len(), 1, "{method}: sent once");
    }
}

/// An insert whose every answer is lost, while every read shows its cells
/// are not there and no row holds the key, ends with what went wrong (a
/// retryable server error), not `Conflict`: nothing kept changing the row.
#[tokio::test]
async fn an_insert_whose_answers_are_all_lost_is_not_a_conflict() {
    use crate::support::rows::{click, Click};
    let fake = FakeBigtable::start().await;
    fake.script("CheckAndMutateRow", vec![Answer::status(UNAVAILABLE); 8]);
    // Every read: no row.
    fake.otherwise(Answer::ok(Vec::new()));
    let policy = four_attempts();
    let conn = fake.connection(policy).await;
    let table = bigtable_ttl::Table::<Click>::new(conn)
        .with_read_options(ReadOptions::default().with_retry(policy))
        .with_write_options(bigtable_ttl::writer::WriteOptions::default().with_retry(policy));
    let err = table.insert_if_absent(&click("k", "/")).await.unwrap_err();
    assert!(!matches!(err, Error::Conflict { .. }), "{err:?}");
    assert!(!err.is_outcome_unknown(), "{err:?}");
    assert_eq!(err.code(), Some(Code::Unavailable), "{err:?}");
    assert!(err.is_retryable(), "{err:?}");
}

/// A call sent once that ends without an answer says how long it took,
/// not "1 attempt over 0ns".
#[tokio::test]
async fn a_call_sent_once_reports_the_time_it_took() {
    let fake = FakeBigtable::start().await;
    fake.script("CheckAndMutateRow", vec![Answer::hang()]);
    let policy = four_attempts().with_attempt_timeout(Duration::from_millis(300));
    let conn = fake.connection(policy).await;
    let raw = RawTable::new(&conn, "t").with_write_retry(policy);
    let err = raw
        .check_and_mutate_row("k", None, vec![set_at(1000)], Vec::new())
        .await
        .unwrap_err();
    let Error::OutcomeUnknown(lost) = &err else {
        panic!("{err:?}")
    };
    let source = &lost.source;
    let Some(Error::Server(e)) = source.downcast_ref::<Error>() else {
        panic!("{source:?}")
    };
    assert_eq!(e.attempts, 1, "{err:?}");
    assert!(e.elapsed >= Duration::from_millis(250), "{err:?}");
    assert!(!source.to_string().contains("over 0ns"), "{source}");
}
