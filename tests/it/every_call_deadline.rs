//! One deadline rule for every call: each public operation of `Table`, of
//! the raw data layer and of `ops` ends within the deadline of the policy
//! that governs it (see the `retry` module's documentation), plus a small
//! margin, against a server that never answers: one that sends nothing
//! at all, one that sends response headers and nothing after, and one
//! that answers each kind of request once, slowly, and then nothing (so
//! a call made of several steps must keep one deadline for all of them).
//!
//! The operations are a table; a test reads the library's source and
//! fails when a public `async fn` (or a function returning a stream) is
//! neither in the table nor set aside with a reason, so a new operation
//! cannot be added without a deadline check.
//!
//! Every operation runs against its own scripted server (`support/
//! fake_bigtable.rs`), all at once: the whole test takes about one
//! deadline.

use crate::fake_bigtable;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
use crate::proto::{
    mutation, CheckAndMutateRowResponse, MutateRowRequest, ReadRowsResponse, SampleRowKeysResponse,
};
use bigtable_ttl::admin::{self, EnsureOptions};
use bigtable_ttl::data;
use bigtable_ttl::data::{Query, RawTable, ReadRows, Sql, SqlType};
use bigtable_ttl::ops::{
    self, ApplyRequest, AuditRequest, ExpiryRequest, ExpiryWindow, InspectRequest, MigratePlan,
    Part, ReapOptions,
};
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{BigtableRow, Clock, Code, Connection, Error, Expiry, Policy, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};
use fake_bigtable::{Answer, FakeBigtable};
use futures_util::future::BoxFuture;
use futures_util::{FutureExt as _, TryStreamExt as _};
use prost::Message as _;

/// What the calls must end within.
const DEADLINE: Duration = Duration::from_secs(2);
/// Shorter than the deadline, longer than half of it: a last attempt not
/// cut at the deadline, or a step with a deadline of its own, overshoots by
/// more than the margin.
const ATTEMPT: Duration = Duration::from_millis(1_600);
/// Timers and scheduling on a loaded 2-core machine.
const MARGIN: Duration = Duration::from_millis(700);
/// How long the slow server takes over each first answer.
const SLOW: Duration = Duration::from_millis(900);

/// A visit: a one-second row with a required field, an optional one, a
/// counter and a map, so that every kind of call has something to do.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "visits", family = "v")]
struct Visit {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    user: String,
    note: Option<String>,
    #[bigtable(counter)]
    pages: i64,
    #[bigtable(map, family = "tags")]
    tags: BTreeMap<String, String>,
}

fn visit(id: &str, now: DateTime<Utc>) -> Visit {
    Visit {
        id: id.to_owned(),
        expires_at: now + TimeDelta::minutes(10),
        user: "ann".to_owned(),
        note: None,
        pages: 0,
        tags: BTreeMap::new(),
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy::default()
        .with_initial_delay(Duration::from_millis(50))
        .with_max_delay(Duration::from_millis(100))
        .with_attempt_timeout(ATTEMPT)
        .with_deadline(DEADLINE)
}

/// How the scripted server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// Takes every request and sends nothing back, not even headers.
    Silent,
    /// Sends the response headers of every request, then nothing.
    HeadersOnly,
    /// Answers the first request of each kind after `SLOW` (a read with
    /// the visit, then a stream that stops; a table with no family; one
    /// key sample), and nothing to any other request. Conditional writes,
    /// increments and writes are never answered.
    SlowFirstAnswers,
}

/// A server of one kind, and handles on it under `policy()` everywhere.
struct Fixture {
    fake: FakeBigtable,
    conn: Connection,
    table: Table<Visit>,
    raw: RawTable,
    clock: Clock,
}

async fn fixture(server: Server, now: DateTime<Utc>, stored: &[u8]) -> Fixture {
    let fake = FakeBigtable::start().await;
    match server {
        Server::Silent => fake.otherwise(Answer::hang()),
        Server::HeadersOnly => fake.otherwise(Answer::ok(vec![]).then_stall()),
        Server::SlowFirstAnswers => {
            fake.otherwise(Answer::hang());
            fake.script(
                "ReadRows",
                [Answer::ok(vec![stored.to_vec()]).after(SLOW).then_stall()],
            );
            fake.script(
                "GetTable",
                // An admin `Table` with every field at its default encodes as
                // no bytes at all.
                [Answer::ok(vec![Vec::new()]).after(SLOW)],
            );
            let sample = SampleRowKeysResponse {
                row_key: b"v5".to_vec(),
                offset_bytes: 100,
            };
            fake.script(
                "SampleRowKeys",
                [Answer::ok(vec![sample.encode_to_vec()]).after(SLOW)],
            );
        }
    }
    on(fake, now).await
}

async fn on(fake: FakeBigtable, now: DateTime<Utc>) -> Fixture {
    let conn = Connection::builder("p", "i")
        .emulator(fake.host())
        .retry(policy())
        .admin_retry(policy())
        .connect()
        .await
        .unwrap();
    let clock = Clock::manual(now);
    let table = Table::<Visit>::new(conn.clone())
        .with_clock(clock.clone())
        .with_read_options(
            ReadOptions::default()
                .with_retry(policy())
                .with_idle_timeout(ATTEMPT),
        )
        // One row per request, one request at a time: a bulk write of three
        // rows is three requests in a row.
        .with_write_options(
            WriteOptions::default()
                .with_retry(policy())
                .with_max_rows_per_request(1)
                .with_max_in_flight(1),
        );
    let raw = RawTable::new(&conn, "visits");
    Fixture {
        fake,
        conn,
        table,
        raw,
        clock,
    }
}

/// The `ReadRowsResponse` holding the visit `v1` as `put` stores it at
/// `now`: what the slow server answers a read with.
async fn stored_visit(now: DateTime<Utc>) -> Vec<u8> {
    let fixture = on(FakeBigtable::start().await, now).await;
    fixture.table.put(&visit("v1", now)).await.unwrap();
    let put: MutateRowRequest = fixture.fake.received_of("MutateRow")[0].decode();
    let mut cells: Vec<mutation::SetCell> = put
        .mutations
        .into_iter()
        .filter_map(|m| match m.mutation {
            Some(mutation::Mutation::SetCell(set)) => Some(set),
            _ => None,
        })
        .collect();
    cells.sort_by(|a, b| {
        (&a.family_name, &a.column_qualifier).cmp(&(&b.family_name, &b.column_qualifier))
    });
    let last = cells.len() - 1;
    let chunks = cells
        .into_iter()
        .enumerate()
        .map(|(i, cell)| CellChunk {
            row_key: put.row_key.clone(),
            family_name: Some(cell.family_name),
            qualifier: Some(cell.column_qualifier),
            timestamp_micros: cell.timestamp_micros,
            value: cell.value,
            row_status: (i == last).then_some(RowStatus::CommitRow(true)),
            ..CellChunk::default()
        })
        .collect();
    ReadRowsResponse {
        chunks,
        ..ReadRowsResponse::default()
    }
    .encode_to_vec()
}

/// How a call that never got its answer must fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `Error::Server` with `DEADLINE_EXCEEDED`.
    Deadline,
    /// `Error::OutcomeUnknown`: a conditional write was sent, its answer
    /// never came, and nothing read since says whether it was applied.
    Unknown,
    /// `Error::PartialWrite` naming every row: a bulk write.
    Unwritten,
}

/// What the deadline bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// The whole call, every step of it, from its start.
    Call,
    /// The time without progress: a scan or a bulk write, renewed by every
    /// answer carrying rows (and, for `ops`, one deadline per admin call
    /// and per stretch of scan).
    Progress,
}

type Call = fn(Arc<Fixture>) -> BoxFuture<'static, Result<(), Error>>;

struct Operation {
    /// What the table calls it.
    name: &'static str,
    /// The public functions it exercises, as `file::name` under
    /// `ttl-runtime/src`.
    covers: &'static [&'static str],
    bound: Bound,
    /// Against the silent server and the one that sends only headers.
    expect: Expect,
    call: Call,
}

fn key() -> String {
    "v1".to_owned()
}

/// A raw `SetCell` in family `v`.
fn set_cell() -> data::Mutation {
    data::Mutation::set_cell(
        "v",
        b"user".to_vec(),
        4_000_000_000_000_000,
        b"bob".to_vec(),
    )
}

fn migration() -> MigratePlan {
    MigratePlan::new(
        "visits",
        "v",
        "w",
        ops::parse_policy("default=30d").unwrap(),
    )
}

/// The visits' family, for the operations on a family by name.
fn visit_rows() -> ops::FamilyRows {
    ops::FamilyRows::new("visits", "v", ops::parse_policy("default=30d").unwrap())
}

/// Every operation, with the public functions it covers.
fn operations() -> Vec<Operation> {
    use Bound::{Call, Progress};
    use Expect::{Deadline, Unknown, Unwritten};
    vec![
        // ----- Table: reads
        Operation {
            name: "Table::get",
            covers: &["client/table/reads.rs::get"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.table.get(&key()).await.map(drop) }.boxed(),
        },
        Operation {
            name: "Table::scan",
            covers: &["client/table/reads.rs::scan"],
            bound: Progress,
            expect: Deadline,
            call: |f| async move { f.table.scan(Scan::all()).await.map(drop) }.boxed(),
        },
        Operation {
            name: "Table::add_markers",
            covers: &["client/table/markers.rs::add_markers"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .add_markers(None, |_| std::ops::ControlFlow::Continue(()))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::stream",
            covers: &["client/table/reads.rs::stream"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .stream(Scan::all())
                        .try_collect::<Vec<_>>()
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::scan_parallel",
            covers: &["client/table/parallel.rs::scan_parallel"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .scan_parallel(Scan::all(), 2)
                        .try_collect::<Vec<_>>()
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::split_scan",
            covers: &["client/table/parallel.rs::split_scan"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.table.split_scan(Scan::all(), 4).await.map(drop) }.boxed(),
        },
        Operation {
            name: "Table::entries",
            covers: &["client/table/map.rs::entries"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.table.entries(&key(), Visit::TAGS).await.map(drop) }.boxed(),
        },
        // ----- Table: writes
        Operation {
            name: "Table::put",
            covers: &["client/table/writes.rs::put"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move { f.table.put(&visit("v1", f.clock.now())).await.map(drop) }.boxed()
            },
        },
        Operation {
            name: "Table::put_with",
            covers: &["client/table/writes.rs::put_with"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    let v = visit("v1", f.clock.now());
                    f.table
                        .put_with(v.mutation().ttl(TimeDelta::hours(1)))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::delete",
            covers: &["client/table/writes.rs::delete"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.table.delete(&key()).await }.boxed(),
        },
        Operation {
            name: "Table::put_all",
            covers: &["client/table/writes.rs::put_all"],
            bound: Progress,
            expect: Unwritten,
            call: |f| {
                async move {
                    let now = f.clock.now();
                    let rows = [visit("v1", now), visit("v2", now), visit("v3", now)];
                    f.table.put_all(&rows).await.map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::put_all_with",
            covers: &["client/table/writes.rs::put_all_with"],
            bound: Progress,
            expect: Unwritten,
            call: |f| {
                async move {
                    let now = f.clock.now();
                    let rows = [visit("v1", now), visit("v2", now), visit("v3", now)];
                    f.table
                        .put_all_with(rows.iter().map(BigtableRow::mutation))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::writer",
            covers: &[
                "client/writer.rs::send",
                "client/writer.rs::send_with",
                "client/writer.rs::flush",
                "client/writer.rs::finish",
            ],
            bound: Progress,
            expect: Unwritten,
            call: |f| {
                async move {
                    let now = f.clock.now();
                    // A producer that waits between rows (as one fed by a
                    // channel does): each request's outcome is in before
                    // the next row comes, which must not restart the
                    // writer's clock when nothing was answered.
                    let pause = || tokio::time::sleep(Duration::from_millis(50));
                    let mut writer = f.table.writer();
                    writer.send(&visit("v1", now)).await?;
                    pause().await;
                    writer.send_with(visit("v2", now).mutation()).await?;
                    pause().await;
                    writer.send(&visit("v3", now)).await?;
                    pause().await;
                    writer.finish().await.map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::remove_entry",
            covers: &["client/table/map.rs::remove_entry"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .remove_entry(&key(), Visit::TAGS, &"k".to_owned())
                        .await
                }
                .boxed()
            },
        },
        // ----- Table: conditional and multi-step writes
        Operation {
            name: "Table::insert_if_absent",
            covers: &["client/table/conditional.rs::insert_if_absent"],
            bound: Call,
            expect: Unknown,
            call: |f| {
                async move {
                    f.table
                        .insert_if_absent(&visit("v1", f.clock.now()))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::insert_if_absent_with",
            covers: &["client/table/conditional.rs::insert_if_absent_with"],
            bound: Call,
            expect: Unknown,
            call: |f| {
                async move {
                    let v = visit("v1", f.clock.now());
                    f.table
                        .insert_if_absent_with(v.mutation().ttl(TimeDelta::hours(1)))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::put_if",
            covers: &["client/table/conditional.rs::put_if"],
            bound: Call,
            expect: Unknown,
            call: |f| {
                async move {
                    let v = visit("v1", f.clock.now());
                    f.table
                        .put_if(&v, Visit::USER.equals(&"ann".to_owned()))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::put_if_with",
            covers: &["client/table/conditional.rs::put_if_with"],
            bound: Call,
            expect: Unknown,
            call: |f| {
                async move {
                    let v = visit("v1", f.clock.now());
                    f.table
                        .put_if_with(v.mutation(), Visit::USER.equals(&"ann".to_owned()))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::delete_if",
            covers: &["client/table/conditional.rs::delete_if"],
            bound: Call,
            expect: Unknown,
            call: |f| {
                async move {
                    f.table
                        .delete_if(&key(), Visit::USER.equals(&"ann".to_owned()))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::put_entry",
            covers: &["client/table/map.rs::put_entry"],
            bound: Call,
            expect: Unknown,
            call: |f| {
                async move {
                    f.table
                        .put_entry(
                            &key(),
                            Visit::TAGS,
                            &"k".to_owned(),
                            &"v".to_owned(),
                            Expiry::Ttl(TimeDelta::minutes(5)),
                        )
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::increment",
            covers: &["client/table/counter.rs::increment"],
            bound: Call,
            // A struct with a required field: the row is read first.
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .increment(&key(), Visit::PAGES, 1, Expiry::Ttl(TimeDelta::hours(1)))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::update",
            covers: &["client/table/update.rs::apply"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .update(&key())
                        .set(Visit::NOTE, &"seen".to_owned())
                        .apply()
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::retime",
            covers: &["client/table/retime.rs::retime"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .retime(&key(), bigtable_ttl::Retime::Ttl(TimeDelta::hours(1)))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::touch",
            covers: &["client/table/retime.rs::touch"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .touch(&key(), TimeDelta::hours(1), TimeDelta::hours(2))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::set_ttl",
            covers: &["client/table/retime.rs::set_ttl"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move { f.table.set_ttl(&key(), TimeDelta::hours(1)).await.map(drop) }.boxed()
            },
        },
        Operation {
            name: "Table::shift_expiry",
            covers: &["client/table/retime.rs::shift_expiry"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .shift_expiry(&key(), TimeDelta::minutes(30))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        // ----- Table: schema (admin policy)
        Operation {
            name: "Table::ensure_schema",
            covers: &["client/table/mod.rs::ensure_schema"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.table.ensure_schema().await.map(drop) }.boxed(),
        },
        Operation {
            name: "Table::ensure_schema_with",
            covers: &["client/table/mod.rs::ensure_schema_with"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    let force = EnsureOptions::new().with_force_one_second(true);
                    f.table.ensure_schema_with(force).await.map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::verify_schema",
            covers: &["client/table/mod.rs::verify_schema"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.table.verify_schema().await }.boxed(),
        },
        // ----- the raw data layer
        Operation {
            name: "RawTable::read_rows",
            covers: &["client/data/mod.rs::read_rows"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    f.raw
                        .read_rows(ReadRows::all())
                        .try_collect::<Vec<_>>()
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "RawTable::read_row",
            covers: &["client/data/mod.rs::read_row"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.raw.read_row("v1", None).await.map(drop) }.boxed(),
        },
        Operation {
            name: "RawTable::mutate_row",
            covers: &["client/data/mod.rs::mutate_row"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.raw.mutate_row("v1", vec![set_cell()]).await }.boxed(),
        },
        Operation {
            name: "RawTable::mutate_rows",
            covers: &["client/data/mod.rs::mutate_rows"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    let entry = data::Entry::new(b"v1".to_vec(), vec![set_cell()]);
                    f.raw.mutate_rows(vec![entry]).await.map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "RawTable::check_and_mutate_row",
            covers: &["client/data/mod.rs::check_and_mutate_row"],
            bound: Call,
            expect: Unknown,
            call: |f| {
                async move {
                    f.raw
                        .check_and_mutate_row("v1", None, vec![set_cell()], vec![])
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "RawTable::read_modify_write_row",
            covers: &["client/data/mod.rs::read_modify_write_row"],
            bound: Call,
            expect: Unknown,
            call: |f| {
                async move { f.raw.read_modify_write_row("v1", vec![]).await.map(drop) }.boxed()
            },
        },
        Operation {
            name: "RawTable::sample_row_keys",
            covers: &["client/data/mod.rs::sample_row_keys"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { f.raw.sample_row_keys().await.map(drop) }.boxed(),
        },
        // ----- GoogleSQL
        Operation {
            name: "Sql::prepare",
            covers: &["client/data/sql/mod.rs::prepare"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    Sql::new(&f.conn)
                        .prepare(
                            "SELECT _key FROM visits",
                            std::iter::empty::<(String, SqlType)>(),
                        )
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Sql::query(..).collect",
            covers: &["client/data/sql/mod.rs::collect"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    Sql::new(&f.conn)
                        .query(Query::new("SELECT _key FROM visits"))
                        .collect()
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        // ----- admin
        Operation {
            name: "admin::ensure_schema",
            covers: &["client/admin.rs::ensure_schema"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    admin::ensure_schema(&f.conn, "visits", Visit::SCHEMA, EnsureOptions::new())
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "admin::verify_schema",
            covers: &["client/admin.rs::verify_schema"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move { admin::verify_schema(&f.conn, "visits", Visit::SCHEMA).await }.boxed()
            },
        },
        Operation {
            name: "admin::live_rules",
            covers: &["client/admin.rs::live_rules"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { admin::live_rules(&f.conn, "visits").await.map(drop) }.boxed(),
        },
        // ----- ops
        Operation {
            name: "ops::inspect",
            covers: &["ops/inspect.rs::inspect"],
            bound: Call,
            expect: Deadline,
            call: |f| {
                async move {
                    ops::inspect(&f.conn, &InspectRequest::new("visits", "v1"))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "ops::key_samples",
            covers: &["ops/shard.rs::key_samples"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { ops::key_samples(&f.conn, "visits").await.map(drop) }.boxed(),
        },
        Operation {
            name: "ops::plan_parts",
            covers: &["ops/shard.rs::plan_parts"],
            bound: Call,
            expect: Deadline,
            call: |f| async move { ops::plan_parts(&f.conn, "visits", 4).await.map(drop) }.boxed(),
        },
        Operation {
            name: "ops::audit",
            covers: &["ops/audit.rs::audit"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    let request = AuditRequest::new("visits", "v", Policy::CellExpiry);
                    ops::audit(&f.conn, &request, |_| {}).await.map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "ops::apply",
            covers: &["ops/apply.rs::apply"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    let request = ApplyRequest::new("visits", "v", Policy::CellExpiry);
                    ops::apply(&f.conn, &request, |_| {}).await.map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "ops::expiries",
            covers: &["ops/expiry.rs::expiries"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    ops::expiries(&f.conn, &ExpiryRequest::new("visits", "v"), |_| {})
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "ops::migrate",
            covers: &["ops/migrate.rs::migrate"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    ops::migrate(&f.conn, &migration(), None, &f.clock, |_| {
                        ControlFlow::Continue(())
                    })
                    .await
                    .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "ops::verify",
            covers: &["ops/migrate.rs::verify"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    ops::verify(&f.conn, &migration(), f.clock.now())
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "ops::verify_part",
            covers: &["ops/migrate.rs::verify_part"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    ops::verify_part(&f.conn, &migration(), &Part::whole(), f.clock.now())
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        // ----- The expiry feed and the reaper
        Operation {
            name: "Table::expired",
            covers: &["ops/feed.rs::expired"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    let now = f.clock.now();
                    let window = ExpiryWindow::new(now - TimeDelta::hours(1), now);
                    f.table
                        .expired(&window)
                        .try_collect::<Vec<_>>()
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            // The same file and name as `Table::expired`: covered there.
            name: "ops::expired",
            covers: &[],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    let now = f.clock.now();
                    let window = ExpiryWindow::new(now - TimeDelta::hours(1), now);
                    ops::expired(&f.conn, &visit_rows(), &window, now)
                        .try_collect::<Vec<_>>()
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::reap",
            covers: &["ops/reap.rs::reap"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .reap(&ReapOptions::new(), None, |_| ControlFlow::Continue(()))
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            name: "Table::reap_with_events",
            covers: &["ops/reap.rs::reap_with_events"],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    f.table
                        .reap_with_events(
                            &ReapOptions::new(),
                            None,
                            |_| async { ControlFlow::Continue(()) },
                            |_| ControlFlow::Continue(()),
                        )
                        .await
                        .map(drop)
                }
                .boxed()
            },
        },
        Operation {
            // The same file and name as `Table::reap`: covered there.
            name: "ops::reap",
            covers: &[],
            bound: Progress,
            expect: Deadline,
            call: |f| {
                async move {
                    ops::reap(
                        &f.conn,
                        &visit_rows(),
                        &ReapOptions::new(),
                        None,
                        &f.clock,
                        |_| async { ControlFlow::Continue(()) },
                        |_| ControlFlow::Continue(()),
                    )
                    .await
                    .map(drop)
                }
                .boxed()
            },
        },
    ]
}

/// Public functions that make no call to Bigtable a deadline could bound,
/// each with the reason.
const NOT_CALLS: &[(&str, &str)] = &[
    (
        "client/connection.rs::connect",
        "makes the connection (lazily: nothing is sent before the first call)",
    ),
    (
        "client/connection.rs::cloud",
        "makes the connection (lazily: nothing is sent before the first call)",
    ),
];

/// How one run of an operation went.
struct Run {
    name: &'static str,
    server: Server,
    took: Duration,
    /// The time it may take: from its start, or from the server's last
    /// answer for a call bounded by progress.
    allowed: Duration,
    result: Result<Result<(), Error>, ()>,
    expect: Expect,
}

async fn run(server: Server, op: Operation, now: DateTime<Utc>, stored: Arc<Vec<u8>>) -> Run {
    let fixture = Arc::new(fixture(server, now, &stored).await);
    let started = Instant::now();
    // Far past any deadline here: a call still waiting then never ends.
    let result = tokio::time::timeout(Duration::from_secs(20), (op.call)(fixture.clone()))
        .await
        .map_err(drop);
    let took = started.elapsed();
    let since = match (op.bound, fixture.fake.last_message()) {
        (Bound::Progress, Some(at)) if at > started => at - started,
        _ => Duration::ZERO,
    };
    Run {
        name: op.name,
        server,
        took,
        allowed: since + DEADLINE + MARGIN,
        result,
        expect: op.expect,
    }
}

/// Whether `err` is what a call of this kind must end with.
fn as_expected(expect: Expect, err: &Error) -> bool {
    match expect {
        Expect::Deadline => matches!(&err,
            Error::Server(e) if e.code == Code::DeadlineExceeded),
        Expect::Unknown => matches!(err, Error::OutcomeUnknown { .. }),
        Expect::Unwritten => {
            matches!(&err, Error::PartialWrite(e) if e.written == 0 && e.failed.len() == 3)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_ends_by_its_deadline_against_a_server_that_never_answers() {
    let now = Utc::now();
    let stored = Arc::new(stored_visit(now).await);
    let mut runs = Vec::new();
    for server in [
        Server::Silent,
        Server::HeadersOnly,
        Server::SlowFirstAnswers,
    ] {
        for op in operations() {
            runs.push(tokio::spawn(run(server, op, now, stored.clone())));
        }
    }
    let mut failures = Vec::new();
    println!(
        "{:<32} {:<17} {:>8} {:>8}  outcome",
        "operation", "server", "took", "allowed"
    );
    for run in runs {
        let run = run.await.unwrap();
        let outcome = match &run.result {
            Err(()) => "still waiting after 20 s".to_owned(),
            Ok(Ok(())) => "Ok".to_owned(),
            Ok(Err(e)) => e.to_string(),
        };
        println!(
            "{:<32} {:<17} {:>7.2}s {:>7.2}s  {outcome}",
            run.name,
            format!("{:?}", run.server),
            run.took.as_secs_f64(),
            run.allowed.as_secs_f64(),
        );
        let in_time = run.result.is_ok() && run.took <= run.allowed;
        // The silent servers answer nothing: every call must fail, and as
        // its kind says. The slow one answers some: only the time counts.
        let right = match (&run.result, run.server) {
            (_, Server::SlowFirstAnswers) => true,
            (Ok(Err(e)), _) => as_expected(run.expect, e),
            _ => false,
        };
        if !in_time || !right {
            failures.push(format!(
                "{} against {:?}: took {:?} (allowed {:?}), expected {:?}: {outcome}",
                run.name, run.server, run.took, run.allowed, run.expect
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every public `async fn`, and every public function returning a stream,
/// of `ttl-runtime/src`, as `file::name`.
fn public_calls() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("ttl-runtime/src");
    let mut found = BTreeSet::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let file = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let line = line.trim_start();
                let (rest, is_async) = if let Some(rest) = line.strip_prefix("pub async fn ") {
                    (rest, true)
                } else if let Some(rest) = line.strip_prefix("pub fn ") {
                    (rest, false)
                } else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                // The signature, up to its body or where clause.
                let signature: String = lines[i..]
                    .iter()
                    .take_while(|l| !l.trim_start().starts_with('{'))
                    .take(12)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" ");
                let signature = signature.split(" where").next().unwrap_or_default();
                let signature = signature.split('{').next().unwrap_or_default();
                if is_async || signature.contains("-> impl Stream") {
                    found.insert(format!("{file}::{name}"));
                }
            }
        }
    }
    found
}

#[test]
fn the_table_lists_every_public_call() {
    let found = public_calls();
    let mut listed = BTreeSet::new();
    for op in operations() {
        for covered in op.covers {
            assert!(
                listed.insert((*covered).to_owned()),
                "{covered} is listed twice"
            );
        }
    }
    for (call, _why) in NOT_CALLS {
        listed.insert((*call).to_owned());
    }
    let missing: Vec<_> = found.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&found).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "public calls without a deadline check (add them to `operations()`): {missing:?}; \
         listed but not found in the source: {stale:?}"
    );
    // The scan itself sees what it should.
    assert!(found.contains("client/table/reads.rs::get"), "{found:?}");
    assert!(found.contains("client/table/reads.rs::stream"), "{found:?}");
}

/// A conditional rewrite decides on a row it has just read: a read slower
/// than the horizon (a large row, a loaded machine) still leaves the write
/// the time its horizon gives, counted from after the read, within the
/// call's deadline (here far off).
#[tokio::test]
async fn a_rewrite_after_a_read_slower_than_the_horizon_is_still_sent() {
    let now = Utc::now();
    let stored = stored_visit(now).await;
    let fake = FakeBigtable::start().await;
    // Longer than the horizon's longest (one second).
    fake.script(
        "ReadRows",
        [Answer::ok(vec![stored]).after(Duration::from_millis(1_500))],
    );
    let matched = CheckAndMutateRowResponse {
        predicate_matched: true,
    };
    fake.script(
        "CheckAndMutateRow",
        [Answer::ok(vec![matched.encode_to_vec()])],
    );
    let patient = RetryPolicy::default()
        .with_attempt_timeout(Duration::from_secs(20))
        .with_deadline(Duration::from_secs(30));
    let conn = fake.connection(patient).await;
    let table = Table::<Visit>::new(conn)
        .with_clock(Clock::manual(now))
        .with_read_options(ReadOptions::default().with_retry(patient))
        .with_write_options(WriteOptions::default().with_retry(patient));
    let updated = table
        .update(&key())
        .set(Visit::USER, &"bob".to_owned())
        .apply()
        .await;
    assert!(matches!(updated, Ok(Some(_))), "{updated:?}");
    assert_eq!(fake.received_of("CheckAndMutateRow").len(), 1);
}
