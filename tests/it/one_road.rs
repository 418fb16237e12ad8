//! The bulk writer and `ops::migrate` write through the raw layer's
//! `MutateRows` (`RawTable::mutate_rows`, the call Google's conformance
//! suite drives), so they make its decisions: the same entries re-sent,
//! the same ones reported, a request refused as a whole the same error. A
//! fake Bigtable (`support/fake_bigtable.rs`) gives the answers a real
//! server gives only when it misbehaves.

use crate::fake_bigtable;
use crate::support::rows::{click, Click};

use std::collections::HashMap;
use std::ops::ControlFlow;

use crate::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
use crate::proto::{MutateRowsRequest, ReadRowsResponse};
use bigtable_ttl::data::{self, RawTable};
use bigtable_ttl::ops::{self, MigratePlan};
use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{BigtableRow, Clock, Code, Connection, Error, Policy, Table};
use chrono::{TimeDelta, Utc};
use fake_bigtable::{four_attempts, mutate_rows_statuses, Answer, FakeBigtable};
use prost::Message as _;

const OK: i32 = 0;
const PERMISSION_DENIED: i32 = 7;
const UNAVAILABLE: i32 = 14;

async fn connection(fake: &FakeBigtable) -> Connection {
    Connection::builder("p", "i")
        .emulator(fake.host())
        .retry(four_attempts())
        .admin_retry(four_attempts())
        .connect()
        .await
        .unwrap()
}

/// The row keys of each `MutateRows` request `fake` received, in order.
fn sent_keys(fake: &FakeBigtable) -> Vec<Vec<Vec<u8>>> {
    fake.received_of("MutateRows")
        .iter()
        .map(|r| {
            r.decode::<MutateRowsRequest>()
                .entries
                .into_iter()
                .map(|e| e.row_key)
                .collect()
        })
        .collect()
}

/// Three rows answered `OK`, `UNAVAILABLE` and `PERMISSION_DENIED`, then the
/// one re-sent answered OK.
fn script_three(fake: &FakeBigtable) {
    fake.script(
        "MutateRows",
        [
            Answer::ok(vec![mutate_rows_statuses([
                (0, OK),
                (1, UNAVAILABLE),
                (2, PERMISSION_DENIED),
            ])]),
            Answer::ok(vec![mutate_rows_statuses([(0, OK)])]),
        ],
    );
}

#[tokio::test]
async fn the_bulk_writer_re_sends_and_reports_the_entries_mutate_rows_does() {
    let rows = [click("a", "/"), click("b", "/"), click("c", "/")];
    let now = Utc::now();
    let entries: Vec<_> = rows
        .iter()
        .map(|row| data::Entry::from(row.mutation().build(now).unwrap()))
        .collect();
    let keys: Vec<Vec<u8>> = entries.iter().map(|e| e.row_key.clone()).collect();

    // The raw layer's decisions.
    let fake = FakeBigtable::start().await;
    script_three(&fake);
    let results = RawTable::new(&connection(&fake).await, "clicks")
        .mutate_rows(entries)
        .await
        .unwrap();
    assert!(results[0].is_ok() && results[1].is_ok(), "{results:?}");
    let refused = results[2].as_ref().unwrap_err();
    assert_eq!(
        (refused.code, refused.answered),
        (Code::PermissionDenied, true)
    );
    let raw_sent = sent_keys(&fake);
    assert_eq!(raw_sent, vec![keys.clone(), vec![keys[1].clone()]]);

    // The typed bulk write's: the same requests, the same row reported.
    let fake = FakeBigtable::start().await;
    script_three(&fake);
    let table = Table::<Click>::new(connection(&fake).await)
        .with_write_options(WriteOptions::default().with_retry(four_attempts()));
    let err = table.put_all(&rows).await.unwrap_err();
    let Error::PartialWrite(e) = &err else {
        panic!("a partial write, not {err:?}");
    };
    let bigtable_ttl::error::PartialWrite {
        written, failed, ..
    } = &**e;
    assert_eq!(*written, 2, "{err}");
    assert_eq!(failed.len(), 1, "{err}");
    assert_eq!(failed[0].row_key, keys[2], "{err}");
    assert_eq!(failed[0].code, Some(Code::PermissionDenied), "{err}");
    assert_eq!(sent_keys(&fake), raw_sent);
}

// The admin messages `GetTable` answers with, as much of them as
// `live_rules` reads (google.bigtable.admin.v2: Table, ColumnFamily,
// GcRule's `max_age`).
#[derive(Clone, PartialEq, prost::Message)]
struct AdminTable {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(map = "string, message", tag = "3")]
    column_families: HashMap<String, AdminFamily>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct AdminFamily {
    #[prost(message, optional, tag = "1")]
    gc_rule: Option<AdminGcRule>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct AdminGcRule {
    #[prost(message, optional, tag = "2")]
    max_age: Option<prost_types::Duration>,
}

#[tokio::test]
async fn a_migrate_write_refused_as_a_whole_is_the_servers_error_as_mutate_rows_says() {
    let policy = Policy::default_ttl(TimeDelta::days(2));
    let fake = FakeBigtable::start().await;
    // The source family and the target with the policy's rule.
    let target = AdminFamily {
        gc_rule: Some(AdminGcRule {
            max_age: Some(prost_types::Duration {
                seconds: policy.gc_max_age().num_seconds(),
                nanos: 0,
            }),
        }),
    };
    let live = AdminTable {
        name: "projects/p/instances/i/tables/t".into(),
        column_families: HashMap::from([
            ("old".to_owned(), AdminFamily::default()),
            ("ttl".to_owned(), target),
        ]),
    };
    fake.script("GetTable", [Answer::ok(vec![live.encode_to_vec()])]);
    // One source row, written an hour ago: alive under the policy.
    let written = (Utc::now() - TimeDelta::hours(1)).timestamp_millis() * 1000;
    let row = CellChunk {
        row_key: b"r1".to_vec(),
        family_name: Some("old".into()),
        qualifier: Some(b"q".to_vec()),
        timestamp_micros: written,
        value: b"v".to_vec(),
        row_status: Some(RowStatus::CommitRow(true)),
        ..CellChunk::default()
    };
    let page = ReadRowsResponse {
        chunks: vec![row],
        ..ReadRowsResponse::default()
    };
    fake.script("ReadRows", [Answer::ok(vec![page.encode_to_vec()])]);
    fake.script("MutateRows", [Answer::status(PERMISSION_DENIED)]);

    let plan = MigratePlan::new("t", "old", "ttl", policy);
    let err = ops::migrate(
        &connection(&fake).await,
        &plan,
        None,
        &Clock::system(),
        |_| ControlFlow::Continue(()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err,
            Error::Server(e) if e.code == Code::PermissionDenied),
        "the server's refusal, as RawTable::mutate_rows reports it: {err:?}"
    );
    // Refused, not lost: sent once.
    assert_eq!(sent_keys(&fake), vec![vec![b"r1".to_vec()]]);
}
