//! What the client does when the server misbehaves, against a scripted
//! fake Bigtable on loopback (`support/fake_bigtable.rs`): the behaviours
//! Google's conformance suite checks, held here without it. Routing
//! cookies sent back on retries, a server's `RetryInfo` delay honoured
//! within the deadline, the headers every call carries, resumption of
//! forward and reversed reads after the last row or the last scanned key,
//! per-operation timeouts, concurrent streams on one client, and the calls
//! that are never re-sent.

use crate::fake_bigtable;

use std::time::{Duration, Instant};

use crate::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
use crate::proto::row_range::{EndKey, StartKey};
use crate::proto::{ReadRowsRequest, ReadRowsResponse, SampleRowKeysResponse};
use bigtable_ttl::data;
use bigtable_ttl::data::{RawTable, ReadRows};
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{Code, Connection, Error};
use fake_bigtable::{mutate_rows_statuses, Answer, FakeBigtable};
use futures_util::TryStreamExt as _;
use prost::Message as _;

const UNAVAILABLE: i32 = 14;
const PERMISSION_DENIED: i32 = 7;

/// A raw table `t` on `fake`, under app profile `serving`, with `policy`
/// for reads and writes.
async fn table(fake: &FakeBigtable, policy: RetryPolicy) -> RawTable {
    let conn = Connection::builder("p", "i")
        .emulator(fake.host())
        .app_profile("serving")
        .retry(policy)
        .connect()
        .await
        .unwrap();
    RawTable::new(&conn, "t")
        .with_read_options(ReadOptions::default().with_retry(policy))
        .with_write_retry(policy)
}

/// Quick retries: the tests measure the server's delays, not the backoff's.
fn quick() -> RetryPolicy {
    RetryPolicy::default()
        .with_initial_delay(Duration::from_millis(1))
        .with_max_delay(Duration::from_millis(2))
        .with_attempt_timeout(Duration::from_secs(10))
        .with_deadline(Duration::from_secs(20))
}

/// A response holding one committed row `key` (`f:col = value`).
fn row(key: &str, value: &str) -> Vec<u8> {
    ReadRowsResponse {
        chunks: vec![CellChunk {
            row_key: key.as_bytes().to_vec(),
            family_name: Some("f".into()),
            qualifier: Some(b"col".to_vec()),
            value: value.as_bytes().to_vec(),
            row_status: Some(RowStatus::CommitRow(true)),
            ..CellChunk::default()
        }],
        ..ReadRowsResponse::default()
    }
    .encode_to_vec()
}

/// A response saying the server scanned up to `key` without a row to send.
fn scanned(key: &str) -> Vec<u8> {
    ReadRowsResponse {
        last_scanned_row_key: key.as_bytes().to_vec(),
        ..ReadRowsResponse::default()
    }
    .encode_to_vec()
}

fn keys(rows: &[bigtable_ttl::data::Row]) -> Vec<String> {
    rows.iter()
        .map(|r| String::from_utf8_lossy(&r.key).into_owned())
        .collect()
}

fn set_cell() -> data::Mutation {
    data::Mutation::set_cell("f", b"col".to_vec(), 1000, b"v".to_vec())
}

fn entry(key: &str) -> data::Entry {
    data::Entry::new(key.as_bytes().to_vec(), vec![set_cell()])
}

#[tokio::test]
async fn routing_cookies_from_trailers_go_back_on_the_retries_of_the_same_operation() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        [
            Answer::ok(vec![row("row-01", "v1")])
                .status_of(UNAVAILABLE)
                .cookie("test", "c1"),
            Answer::status(UNAVAILABLE),
            Answer::status(UNAVAILABLE).cookie("test", "c2"),
            Answer::ok(vec![row("row-05", "v5")]),
        ],
    );
    fake.script(
        "MutateRows",
        [Answer::status(UNAVAILABLE).cookie("test", "m1")],
    );
    fake.script(
        "SampleRowKeys",
        [Answer::status(UNAVAILABLE).cookie("test", "s1")],
    );
    let t = table(&fake, quick()).await;
    let rows: Vec<_> = t.read_rows(ReadRows::all()).try_collect().await.unwrap();
    assert_eq!(keys(&rows), ["row-01", "row-05"]);
    let sent: Vec<String> = fake
        .received_of("ReadRows")
        .iter()
        .map(|r| r.header("x-goog-cbt-cookie-test"))
        .collect();
    // None before the server gave one; kept when an answer has none; replaced.
    assert_eq!(sent, ["", "c1", "c1", "c2"]);

    let results = t.mutate_rows(vec![entry("r")]).await.unwrap();
    assert!(results[0].is_ok());
    t.sample_row_keys().await.unwrap();
    for (method, cookie) in [("MutateRows", "m1"), ("SampleRowKeys", "s1")] {
        let sent: Vec<String> = fake
            .received_of(method)
            .iter()
            .map(|r| r.header("x-goog-cbt-cookie-test"))
            .collect();
        assert_eq!(sent, ["", cookie], "{method}");
    }
    // A new operation starts without the cookies of another.
    let _: Vec<_> = t.read_rows(ReadRows::all()).try_collect().await.unwrap();
    assert_eq!(
        fake.received_of("ReadRows")
            .last()
            .unwrap()
            .header("x-goog-cbt-cookie-test"),
        ""
    );
}

#[tokio::test]
async fn a_retry_info_delay_is_waited_and_the_deadline_still_holds() {
    let fake = FakeBigtable::start().await;
    let wait = Duration::from_millis(800);
    fake.script(
        "ReadRows",
        [
            Answer::ok(vec![row("row-01", "v1")])
                .status_of(UNAVAILABLE)
                .retry_after(wait),
            Answer::status(UNAVAILABLE),
            Answer::ok(vec![row("row-05", "v5")]),
        ],
    );
    fake.script("MutateRow", [Answer::status(UNAVAILABLE).retry_after(wait)]);
    // PERMISSION_DENIED is final, unless the server asks for a retry.
    fake.script(
        "SampleRowKeys",
        [Answer::status(PERMISSION_DENIED).retry_after(wait)],
    );
    let t = table(&fake, quick()).await;
    let rows: Vec<_> = t.read_rows(ReadRows::all()).try_collect().await.unwrap();
    assert_eq!(keys(&rows), ["row-01", "row-05"]);
    let at: Vec<Instant> = fake.received_of("ReadRows").iter().map(|r| r.at).collect();
    assert!(at[1] - at[0] >= wait, "{:?}", at[1] - at[0]);
    // Without RetryInfo, the policy's own (millisecond) backoff.
    assert!(at[2] - at[1] < wait / 2, "{:?}", at[2] - at[1]);

    t.mutate_row("r", vec![set_cell()]).await.unwrap();
    let at: Vec<Instant> = fake.received_of("MutateRow").iter().map(|r| r.at).collect();
    assert!(at[1] - at[0] >= wait, "{:?}", at[1] - at[0]);
    t.sample_row_keys().await.unwrap();
    assert_eq!(fake.received_of("SampleRowKeys").len(), 2);

    // A delay that would end past the deadline ends the call instead.
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        [
            Answer::status(UNAVAILABLE).retry_after(Duration::from_millis(300)),
            Answer::status(UNAVAILABLE).retry_after(Duration::from_secs(6)),
            Answer::ok(vec![row("row-05", "v5")]),
        ],
    );
    let t = table(&fake, quick().with_deadline(Duration::from_secs(2))).await;
    let started = Instant::now();
    let err = t
        .read_rows(ReadRows::all())
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.code(), Some(Code::Unavailable), "{err}");
    assert!(
        matches!(&err,
            Error::Server(e) if e.retries_exhausted),
        "{err}"
    );
    assert_eq!(fake.received_of("ReadRows").len(), 2);
}

#[tokio::test]
async fn every_call_names_the_client_its_table_and_app_profile() {
    let fake = FakeBigtable::start().await;
    let t = table(&fake, quick()).await;
    let _: Vec<_> = t.read_rows(ReadRows::all()).try_collect().await.unwrap();
    t.read_row("k", None).await.unwrap();
    t.mutate_row("k", vec![set_cell()]).await.unwrap();
    let written = t.mutate_rows(vec![entry("k")]).await.unwrap();
    assert!(written[0].is_ok());
    t.check_and_mutate_row("k", None, vec![set_cell()], vec![])
        .await
        .unwrap();
    t.read_modify_write_row(
        "k",
        vec![data::ReadModifyWriteRule::increment("f", b"n".to_vec(), 1)],
    )
    .await
    .unwrap();
    t.sample_row_keys().await.unwrap();
    let seen = fake.received();
    let methods: Vec<&str> = seen.iter().map(|r| r.method.as_str()).collect();
    for method in [
        "ReadRows",
        "MutateRow",
        "MutateRows",
        "CheckAndMutateRow",
        "ReadModifyWriteRow",
        "SampleRowKeys",
    ] {
        assert!(methods.contains(&method), "{method} not sent: {methods:?}");
    }
    for request in &seen {
        let client = request.header("x-goog-api-client");
        assert!(client.contains("gccl/"), "{}: {client:?}", request.method);
        let params = request.header("x-goog-request-params");
        assert!(
            params.contains("table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft"),
            "{}: {params}",
            request.method
        );
        assert!(params.contains("app_profile_id=serving"), "{params}");
    }
}

#[tokio::test]
async fn reads_resume_after_the_last_row_or_scanned_key_in_either_direction() {
    let fake = FakeBigtable::start().await;
    // Forward: a row, a key scanned past, a break.
    fake.script(
        "ReadRows",
        [
            Answer::ok(vec![row("abar", "a"), scanned("qfoo")]).status_of(UNAVAILABLE),
            Answer::ok(vec![row("zbar", "z")]),
        ],
    );
    let t = table(&fake, quick()).await;
    let rows: Vec<_> = t.read_rows(ReadRows::all()).try_collect().await.unwrap();
    assert_eq!(keys(&rows), ["abar", "zbar"]);
    let retry: ReadRowsRequest = fake.received_of("ReadRows")[1].decode();
    assert_eq!(
        retry.rows.unwrap().row_ranges[0].start_key,
        Some(StartKey::StartKeyOpen(b"qfoo".to_vec()))
    );

    // Reversed, with a limit: resumed below the last key, the limit reduced.
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        [
            Answer::ok(vec![row("zbar", "z"), scanned("qfoo")]).status_of(UNAVAILABLE),
            Answer::ok(vec![row("kbar", "k")]).status_of(UNAVAILABLE),
            Answer::ok(vec![row("abar", "a")]),
        ],
    );
    let t = table(&fake, quick()).await;
    let rows: Vec<_> = t
        .read_rows(ReadRows::range("a".."zz").reversed().limit(3))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(keys(&rows), ["zbar", "kbar", "abar"]);
    let sent: Vec<ReadRowsRequest> = fake
        .received_of("ReadRows")
        .iter()
        .map(fake_bigtable::Received::decode)
        .collect();
    assert!(sent.iter().all(|r| r.reversed));
    assert_eq!(
        sent.iter().map(|r| r.rows_limit).collect::<Vec<_>>(),
        [3, 2, 1]
    );
    let ends: Vec<_> = sent[1..]
        .iter()
        .map(|r| r.rows.clone().unwrap().row_ranges[0].clone())
        .collect();
    assert_eq!(ends[0].end_key, Some(EndKey::EndKeyOpen(b"qfoo".to_vec())));
    assert_eq!(ends[1].end_key, Some(EndKey::EndKeyOpen(b"kbar".to_vec())));
    assert_eq!(
        ends[1].start_key,
        Some(StartKey::StartKeyClosed(b"a".to_vec()))
    );

    // A reversed read refuses keys that do not descend.
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        [Answer::ok(vec![row("row-03", "3"), row("row-07", "7")])],
    );
    let t = table(&fake, quick()).await;
    let err = t
        .read_rows(ReadRows::all().reversed())
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert!(format!("{err:?}").contains("decreasing"), "{err:?}");
}

#[tokio::test]
async fn a_read_that_has_its_rows_ignores_what_follows() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        // INTERNAL is final: read on, the call would fail.
        [Answer::ok(vec![row("row-01", "v1")]).status_of(13)],
    );
    let t = table(&fake, quick()).await;
    let rows: Vec<_> = t
        .read_rows(ReadRows::all().limit(1))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(keys(&rows), ["row-01"]);
    assert_eq!(fake.received_of("ReadRows").len(), 1);
}

#[tokio::test]
async fn every_call_ends_by_its_operation_timeout() {
    let fake = FakeBigtable::start().await;
    let late = Duration::from_secs(6);
    for method in [
        "ReadRows",
        "MutateRow",
        "MutateRows",
        "CheckAndMutateRow",
        "ReadModifyWriteRow",
        "SampleRowKeys",
    ] {
        fake.script(method, [Answer::ok(vec![]).after(late)]);
    }
    let timeout = Duration::from_secs(1);
    // The attempt timeout is longer: the deadline cuts the last attempt.
    let t = table(
        &fake,
        RetryPolicy::default()
            .with_attempt_timeout(Duration::from_secs(4))
            .with_deadline(timeout),
    )
    .await;
    let within = |started: Instant, what: &str| {
        let took = started.elapsed();
        assert!(
            took >= timeout && took < Duration::from_secs(3),
            "{what} took {took:?}"
        );
    };
    let started = Instant::now();
    let err = t.read_row("k", None).await.unwrap_err();
    within(started, "ReadRows");
    assert_eq!(err.code(), Some(Code::DeadlineExceeded), "{err}");
    let started = Instant::now();
    let err = t.mutate_row("k", vec![set_cell()]).await.unwrap_err();
    within(started, "MutateRow");
    assert_eq!(err.code(), Some(Code::DeadlineExceeded), "{err}");
    let started = Instant::now();
    let err = t.mutate_rows(vec![entry("k")]).await.unwrap_err();
    within(started, "MutateRows");
    assert_eq!(err.code(), Some(Code::DeadlineExceeded), "{err}");
    let started = Instant::now();
    let err = t
        .check_and_mutate_row("k", None, vec![set_cell()], vec![])
        .await
        .unwrap_err();
    within(started, "CheckAndMutateRow");
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    assert_eq!(err.code(), Some(Code::DeadlineExceeded), "{err}");
    let started = Instant::now();
    let err = t.read_modify_write_row("k", vec![]).await.unwrap_err();
    within(started, "ReadModifyWriteRow");
    assert_eq!(err.code(), Some(Code::DeadlineExceeded), "{err}");
    let started = Instant::now();
    let err = t.sample_row_keys().await.unwrap_err();
    within(started, "SampleRowKeys");
    assert_eq!(err.code(), Some(Code::DeadlineExceeded), "{err}");
}

#[tokio::test]
async fn one_client_runs_concurrent_streams() {
    let fake = FakeBigtable::start().await;
    let answers: Vec<Answer> = (0..5)
        .map(|i| Answer::ok(vec![row(&format!("op{i}-row"), "v")]).after(Duration::from_secs(1)))
        .collect();
    fake.script("ReadRows", answers);
    let t = table(&fake, quick()).await;
    let started = Instant::now();
    let reads = (0..5).map(|i| {
        let t = t.clone();
        async move { t.read_row(format!("op{i}-row"), None).await }
    });
    let rows = futures_util::future::try_join_all(reads).await.unwrap();
    assert!(rows.iter().all(Option::is_some));
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    let at: Vec<Instant> = fake.received_of("ReadRows").iter().map(|r| r.at).collect();
    let spread = *at.iter().max().unwrap() - *at.iter().min().unwrap();
    assert!(spread < Duration::from_millis(500), "{spread:?}");
}

#[tokio::test]
async fn mutate_rows_retries_only_failed_entries_and_reports_each() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "MutateRows",
        [
            Answer::ok(vec![mutate_rows_statuses([
                (0, 0),
                (1, UNAVAILABLE),
                (2, PERMISSION_DENIED),
            ])]),
            Answer::ok(vec![mutate_rows_statuses([(0, 0)])]),
        ],
    );
    let t = table(&fake, quick()).await;
    let results = t
        .mutate_rows(vec![entry("a"), entry("b"), entry("c")])
        .await
        .unwrap();
    assert!(results[0].is_ok() && results[1].is_ok());
    let failed = results[2].clone().unwrap_err();
    assert_eq!(
        (failed.index, failed.code, failed.answered),
        (2, Code::PermissionDenied, true)
    );
    assert_eq!(failed.row_key, b"c");
    let retry: crate::proto::MutateRowsRequest = fake.received_of("MutateRows")[1].decode();
    let retried: Vec<&[u8]> = retry.entries.iter().map(|e| e.row_key.as_slice()).collect();
    assert_eq!(retried, [b"b".as_slice()]);
}

#[tokio::test]
async fn check_and_mutate_and_read_modify_write_are_never_re_sent() {
    let fake = FakeBigtable::start().await;
    fake.script("CheckAndMutateRow", [Answer::status(UNAVAILABLE)]);
    fake.script("ReadModifyWriteRow", [Answer::status(UNAVAILABLE)]);
    let t = table(&fake, quick()).await;
    let err = t
        .check_and_mutate_row("k", None, vec![set_cell()], vec![])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    assert_eq!(err.code(), Some(Code::Unavailable));
    let err = t.read_modify_write_row("k", vec![]).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::Unavailable));
    assert_eq!(fake.received_of("CheckAndMutateRow").len(), 1);
    assert_eq!(fake.received_of("ReadModifyWriteRow").len(), 1);
    // A refusal is the server's decision, not an unknown outcome.
    fake.script("CheckAndMutateRow", [Answer::status(PERMISSION_DENIED)]);
    let err = t
        .check_and_mutate_row("k", None, vec![set_cell()], vec![])
        .await
        .unwrap_err();
    assert!(
        matches!(&err,
            Error::Server(e) if e.code == Code::PermissionDenied),
        "{err}"
    );
    let _ = SampleRowKeysResponse::default();
}
