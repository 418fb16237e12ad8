//! Google's built-in client-side metrics (feature `opentelemetry`), read
//! back through the OpenTelemetry SDK's in-memory exporter: against the
//! scripted server (`support/fake_bigtable.rs`) sending the headers
//! Google's front end sends (`server-timing`, the location), and against
//! the emulator, which sends neither. Each connection has its own meter
//! provider, so the tests run side by side.

use crate::fake_bigtable;
use crate::raw_sql;
use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
use crate::proto::{mutate_rows_response, MutateRowsRequest, MutateRowsResponse, ReadRowsResponse};
use bigtable_ttl::data;
use bigtable_ttl::data::{Query, RawTable, ReadRows, Sql, SqlType};
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::telemetry::builtin;
use bigtable_ttl::{Code, Connection, Table};
use fake_bigtable::{four_attempts, Answer, FakeBigtable};
use futures_util::StreamExt as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use prost::Message as _;

const UNAVAILABLE: i32 = 14;
const FAILED_PRECONDITION: i32 = 9;

/// Google's bucket boundaries, copied from java-bigtable's
/// `BuiltinMetricsConstants` (and google-cloud-go's `bucketBounds`), not
/// from the library: a drift on either side fails.
const GOOGLES_BUCKETS: [f64; 40] = [
    0.0,
    1.0,
    2.0,
    3.0,
    4.0,
    5.0,
    6.0,
    8.0,
    10.0,
    13.0,
    16.0,
    20.0,
    25.0,
    30.0,
    40.0,
    50.0,
    65.0,
    80.0,
    100.0,
    130.0,
    160.0,
    200.0,
    250.0,
    300.0,
    400.0,
    500.0,
    650.0,
    800.0,
    1000.0,
    2000.0,
    5000.0,
    10_000.0,
    20_000.0,
    50_000.0,
    100_000.0,
    200_000.0,
    400_000.0,
    800_000.0,
    1_600_000.0,
    3_200_000.0,
];

/// One exported data point.
#[derive(Debug, Clone)]
struct Point {
    metric: String,
    unit: String,
    scope: String,
    attributes: BTreeMap<String, String>,
    /// A histogram's count, a counter's value.
    count: u64,
    /// A histogram's sum.
    sum: f64,
    bounds: Vec<f64>,
}

impl Point {
    fn attr(&self, key: &str) -> &str {
        self.attributes.get(key).map_or("", String::as_str)
    }
}

/// A meter provider whose metrics the test reads back.
struct Recorded {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

impl Recorded {
    fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        Self { provider, exporter }
    }

    /// Every data point recorded so far (cumulative).
    fn points(&self) -> Vec<Point> {
        self.provider
            .force_flush()
            .expect("flush the meter provider");
        let exported = self.exporter.get_finished_metrics().expect("metrics");
        let Some(last) = exported.last() else {
            return Vec::new();
        };
        let mut points = Vec::new();
        for scope in last.scope_metrics() {
            for metric in scope.metrics() {
                let base = |attributes: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| Point {
                    metric: metric.name().to_owned(),
                    unit: metric.unit().to_owned(),
                    scope: scope.scope().name().to_owned(),
                    attributes: attributes
                        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                        .collect(),
                    count: 0,
                    sum: 0.0,
                    bounds: Vec::new(),
                };
                match metric.data() {
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            points.push(Point {
                                count: p.count(),
                                sum: p.sum(),
                                bounds: p.bounds().collect(),
                                ..base(&mut p.attributes())
                            });
                        }
                    }
                    AggregatedMetrics::U64(MetricData::Sum(s)) => {
                        for p in s.data_points() {
                            points.push(Point {
                                count: p.value(),
                                ..base(&mut p.attributes())
                            });
                        }
                    }
                    other => panic!("unexpected aggregation of {}: {other:?}", metric.name()),
                }
            }
        }
        points
    }
}

fn of<'a>(points: &'a [Point], metric: &str) -> Vec<&'a Point> {
    points.iter().filter(|p| p.metric == metric).collect()
}

/// The only point of `metric`.
fn one<'a>(points: &'a [Point], metric: &str) -> &'a Point {
    let found = of(points, metric);
    assert_eq!(found.len(), 1, "{metric}: {found:#?}");
    found[0]
}

async fn fake_table(fake: &FakeBigtable, recorded: &Recorded) -> RawTable {
    let conn = Connection::builder("p", "i")
        .emulator(fake.host())
        .app_profile("serving")
        .meter_provider(Arc::new(recorded.provider.clone()))
        .connect()
        .await
        .unwrap();
    RawTable::new(&conn, "t")
        .with_read_options(ReadOptions::default().with_retry(four_attempts()))
        .with_write_retry(four_attempts())
}

/// A response holding one committed row `key`.
fn row(key: &str) -> Vec<u8> {
    ReadRowsResponse {
        chunks: vec![CellChunk {
            row_key: key.as_bytes().to_vec(),
            family_name: Some("f".into()),
            qualifier: Some(b"col".to_vec()),
            value: b"v".to_vec(),
            timestamp_micros: 1_000,
            row_status: Some(RowStatus::CommitRow(true)),
            ..CellChunk::default()
        }],
        ..ReadRowsResponse::default()
    }
    .encode_to_vec()
}

fn set_cell() -> data::Mutation {
    data::Mutation::set_cell("f", b"col".to_vec(), 1_000, b"v".to_vec())
}

/// The attributes every metric of an RPC `method` on the fake's table
/// `t` carries, served in `cluster`/`zone`.
fn common(method: &str, cluster: &str, zone: &str) -> BTreeMap<String, String> {
    [
        ("project_id", "p"),
        ("instance", "i"),
        ("table", "t"),
        ("app_profile", "serving"),
        ("cluster", cluster),
        ("zone", zone),
        ("method", method),
        ("client_name", builtin::CLIENT_NAME),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// `point`'s attributes, `client_uid` checked and left out.
fn without_uid(point: &Point) -> BTreeMap<String, String> {
    let mut attributes = point.attributes.clone();
    let uid = attributes.remove("client_uid").unwrap_or_default();
    assert!(
        uid.starts_with("rust-") && uid.contains('@'),
        "client_uid {uid:?}"
    );
    attributes
}

fn with(
    mut attributes: BTreeMap<String, String>,
    extra: &[(&str, &str)],
) -> BTreeMap<String, String> {
    for (k, v) in extra {
        attributes.insert((*k).to_owned(), (*v).to_owned());
    }
    attributes
}

#[tokio::test]
async fn a_get_reports_every_metric_with_the_front_ends_headers() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        [Answer::ok(vec![row("r1")]).with_google_headers(7, "c1", "us-east1-b")],
    );
    let recorded = Recorded::new();
    let table = fake_table(&fake, &recorded).await;
    let got = table.read_row("r1", None).await.unwrap();
    assert!(got.is_some());

    let points = recorded.points();
    let base = common("Bigtable.ReadRow", "c1", "us-east1-b");
    let status = with(base.clone(), &[("status", "OK")]);
    let streaming = with(status.clone(), &[("streaming", "false")]);
    for p in &points {
        assert_eq!(p.scope, builtin::METER_NAME, "{p:?}");
    }

    let op = one(&points, "operation_latencies");
    assert_eq!(
        (without_uid(op), op.unit.as_str(), op.count),
        (streaming.clone(), "ms", 1)
    );
    assert_eq!(op.bounds, GOOGLES_BUCKETS);
    let attempt = one(&points, "attempt_latencies");
    assert_eq!((without_uid(attempt), attempt.count), (streaming, 1));
    assert!(attempt.sum <= op.sum, "{attempt:?} within {op:?}");
    let server = one(&points, "server_latencies");
    assert_eq!((without_uid(server), server.count), (status.clone(), 1));
    assert!((server.sum - 7.0).abs() < 1e-9, "{server:?}");
    let first = one(&points, "first_response_latencies");
    assert_eq!((without_uid(first), first.count), (status.clone(), 1));
    assert!(first.sum <= op.sum, "{first:?} within {op:?}");
    let connectivity = one(&points, "connectivity_error_count");
    assert_eq!(
        (without_uid(connectivity), connectivity.unit.as_str()),
        (status, "1")
    );
    assert_eq!(connectivity.count, 0, "the front end answered");
    let application = one(&points, "application_latencies");
    assert_eq!(
        (without_uid(application), application.count),
        (base.clone(), 1)
    );
    let throttling = one(&points, "throttling_latencies");
    assert_eq!((without_uid(throttling), throttling.count), (base, 1));
    assert!(throttling.sum <= attempt.sum, "{throttling:?}");
    assert!(
        of(&points, "retry_count").is_empty(),
        "no retry: nothing counted"
    );
}

#[tokio::test]
async fn a_scan_of_several_responses_counts_the_time_the_caller_held_it() {
    const HOLD: Duration = Duration::from_millis(40);
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        [
            Answer::ok(vec![row("a"), row("b"), row("c")]).with_google_headers(
                12,
                "c2",
                "europe-west1-d",
            ),
        ],
    );
    let recorded = Recorded::new();
    let table = fake_table(&fake, &recorded).await;
    let mut rows = std::pin::pin!(table.read_rows(ReadRows::range("a".."z")));
    let mut keys = Vec::new();
    while let Some(row) = rows.next().await {
        keys.push(row.unwrap().key);
        tokio::time::sleep(HOLD).await;
    }
    assert_eq!(keys.len(), 3);

    let points = recorded.points();
    let base = common("Bigtable.ReadRows", "c2", "europe-west1-d");
    let status = with(base.clone(), &[("status", "OK")]);
    let op = one(&points, "operation_latencies");
    assert_eq!(
        without_uid(op),
        with(status.clone(), &[("streaming", "true")])
    );
    let attempt = one(&points, "attempt_latencies");
    assert_eq!(attempt.count, 1);
    let server = one(&points, "server_latencies");
    assert!((server.sum - 12.0).abs() < 1e-9, "{server:?}");
    let first = one(&points, "first_response_latencies");
    assert_eq!(without_uid(first), status);
    // Held after each of the three rows, for at least HOLD each (a sleep
    // never ends early); the operation lasts at least as long.
    let application = one(&points, "application_latencies");
    assert_eq!(without_uid(application), base);
    let held = 3.0 * HOLD.as_secs_f64() * 1e3;
    assert!(application.sum >= held, "{application:?}");
    assert!(op.sum >= application.sum, "{op:?} vs {application:?}");
    assert_eq!(one(&points, "connectivity_error_count").count, 0);
}

#[tokio::test]
async fn a_retried_write_reports_each_attempt_and_one_retry() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "MutateRow",
        [
            Answer::status(UNAVAILABLE).with_google_headers(3, "c1", "us-east1-b"),
            Answer::ok(vec![Vec::new()]).with_google_headers(4, "c1", "us-east1-c"),
        ],
    );
    let recorded = Recorded::new();
    let table = fake_table(&fake, &recorded).await;
    table.mutate_row("r1", vec![set_cell()]).await.unwrap();
    assert_eq!(fake.received_of("MutateRow").len(), 2);

    let points = recorded.points();
    let first = common("Bigtable.MutateRow", "c1", "us-east1-b");
    let last = common("Bigtable.MutateRow", "c1", "us-east1-c");
    let mut attempts: Vec<_> = of(&points, "attempt_latencies")
        .into_iter()
        .map(|p| (without_uid(p), p.count))
        .collect();
    attempts.sort();
    let mut expected = vec![
        (
            with(
                first.clone(),
                &[("status", "UNAVAILABLE"), ("streaming", "false")],
            ),
            1,
        ),
        (
            with(last.clone(), &[("status", "OK"), ("streaming", "false")]),
            1,
        ),
    ];
    expected.sort();
    assert_eq!(attempts, expected);
    let mut servers: Vec<_> = of(&points, "server_latencies")
        .into_iter()
        .map(|p| (p.attr("status").to_owned(), p.sum))
        .collect();
    servers.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        servers,
        [("OK".to_owned(), 4.0), ("UNAVAILABLE".to_owned(), 3.0)]
    );
    // The operation's attributes are its last attempt's location and its
    // final status.
    let op = one(&points, "operation_latencies");
    assert_eq!(
        (without_uid(op), op.count),
        (
            with(last.clone(), &[("status", "OK"), ("streaming", "false")]),
            1
        )
    );
    let retries = one(&points, "retry_count");
    assert_eq!(
        (without_uid(retries), retries.count),
        (with(last, &[("status", "OK")]), 1)
    );
    let connectivity = of(&points, "connectivity_error_count");
    assert_eq!(connectivity.len(), 2, "one point per status");
    assert!(
        connectivity.iter().all(|p| p.count == 0),
        "{connectivity:?}"
    );
    assert!(
        of(&points, "first_response_latencies").is_empty(),
        "not a read"
    );
}

#[tokio::test]
async fn a_failed_conditional_write_reports_its_status() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "CheckAndMutateRow",
        [Answer::status(FAILED_PRECONDITION).with_google_headers(2, "c3", "asia-east1-a")],
    );
    let recorded = Recorded::new();
    let table = fake_table(&fake, &recorded).await;
    let err = table
        .check_and_mutate_row("r1", None, vec![set_cell()], Vec::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(Code::FailedPrecondition), "{err}");

    let points = recorded.points();
    let status = with(
        common("Bigtable.CheckAndMutateRow", "c3", "asia-east1-a"),
        &[("status", "FAILED_PRECONDITION")],
    );
    let streaming = with(status.clone(), &[("streaming", "false")]);
    let op = one(&points, "operation_latencies");
    assert_eq!((without_uid(op), op.count), (streaming.clone(), 1));
    let attempt = one(&points, "attempt_latencies");
    assert_eq!((without_uid(attempt), attempt.count), (streaming, 1));
    let server = one(&points, "server_latencies");
    assert_eq!((without_uid(server), server.sum), (status.clone(), 2.0));
    let connectivity = one(&points, "connectivity_error_count");
    assert_eq!((without_uid(connectivity), connectivity.count), (status, 0));
    assert!(of(&points, "retry_count").is_empty(), "never retried");
}

#[tokio::test]
async fn without_the_front_ends_headers_every_attempt_is_a_connectivity_error() {
    // The emulator sends neither `server-timing` nor the location: as
    // Google's clients report it, no server latency, the default cluster
    // and zone, and each attempt counted.
    let recorded = Recorded::new();
    let instance = format!("builtin-metrics-{}", std::process::id());
    let conn = Connection::builder(support::PROJECT, &instance)
        .emulator(support::emulator_host())
        .meter_provider(Arc::new(recorded.provider.clone()))
        .connect()
        .await
        .unwrap();
    let clicks: Table<support::rows::Click> = Table::new(conn);
    clicks.ensure_schema().await.unwrap();
    let click = support::rows::click("c1", "/a");
    clicks.put(&click).await.unwrap();
    let read = clicks.get(&"c1".to_owned()).await.unwrap();
    assert_eq!(read.map(|r| r.value.id), Some(click.id));

    let points = recorded.points();
    let attempts = of(&points, "attempt_latencies");
    let methods: std::collections::BTreeSet<&str> =
        attempts.iter().map(|p| p.attr("method")).collect();
    assert!(
        methods.contains("Bigtable.MutateRow") && methods.contains("Bigtable.ReadRow"),
        "{methods:?}"
    );
    for p in &points {
        assert_eq!(
            (p.attr("cluster"), p.attr("zone"), p.attr("instance")),
            ("<unspecified>", "global", instance.as_str()),
            "{p:?}"
        );
    }
    assert!(of(&points, "server_latencies").is_empty());
    let attempted: u64 = attempts.iter().map(|p| p.count).sum();
    let unreached: u64 = of(&points, "connectivity_error_count")
        .iter()
        .map(|p| p.count)
        .sum();
    assert_eq!(unreached, attempted);
}

/// `(attributes without client_uid, count)` of every point of `metric`
/// of the RPC `method`, sorted.
fn points_of(points: &[Point], metric: &str, method: &str) -> Vec<(BTreeMap<String, String>, u64)> {
    let mut found: Vec<_> = of(points, metric)
        .into_iter()
        .filter(|p| p.attr("method") == method)
        .map(|p| (without_uid(p), p.count))
        .collect();
    found.sort();
    found
}

/// `method`'s metrics for an RPC of two attempts, the first answered
/// `UNAVAILABLE` where `first` ran, the second OK where `last` ran: one
/// point of attempt latency for each, one operation and one retry under
/// the last attempt's location. The attributes of the OK operation, without
/// `streaming`.
fn retried_once(
    points: &[Point],
    method: &str,
    first: &BTreeMap<String, String>,
    last: &BTreeMap<String, String>,
    streaming: &str,
) -> BTreeMap<String, String> {
    let mut expected = vec![
        (
            with(
                first.clone(),
                &[("status", "UNAVAILABLE"), ("streaming", streaming)],
            ),
            1,
        ),
        (
            with(last.clone(), &[("status", "OK"), ("streaming", streaming)]),
            1,
        ),
    ];
    expected.sort();
    assert_eq!(points_of(points, "attempt_latencies", method), expected);
    let ok = with(last.clone(), &[("status", "OK")]);
    assert_eq!(
        points_of(points, "operation_latencies", method),
        [(with(ok.clone(), &[("streaming", streaming)]), 1)]
    );
    assert_eq!(points_of(points, "retry_count", method), [(ok.clone(), 1)]);
    ok
}

#[tokio::test]
async fn a_scan_resumed_after_a_break_reports_both_attempts_and_one_retry() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        [
            Answer::ok(vec![row("a")])
                .status_of(UNAVAILABLE)
                .with_google_headers(5, "c1", "us-east1-b"),
            Answer::ok(vec![row("b")]).with_google_headers(6, "c1", "us-east1-c"),
        ],
    );
    let recorded = Recorded::new();
    let table = fake_table(&fake, &recorded).await;
    let keys: Vec<Vec<u8>> = table
        .read_rows(ReadRows::range("a".."z"))
        .map(|r| r.unwrap().key)
        .collect()
        .await;
    assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()], "each row once");
    assert_eq!(fake.received_of("ReadRows").len(), 2, "resumed once");

    let points = recorded.points();
    let first = common("Bigtable.ReadRows", "c1", "us-east1-b");
    let last = common("Bigtable.ReadRows", "c1", "us-east1-c");
    let ok = retried_once(&points, "Bigtable.ReadRows", &first, &last, "true");
    assert_eq!(
        points_of(&points, "first_response_latencies", "Bigtable.ReadRows"),
        [(ok, 1)],
        "one per RPC, not per attempt"
    );
    assert_eq!(of(&points, "server_latencies").len(), 2, "one per status");
}

#[tokio::test]
async fn a_batch_write_partly_failed_then_retried_reports_both_attempts_and_one_retry() {
    let fake = FakeBigtable::start().await;
    // Entry 0 written, entry 1 UNAVAILABLE; the retry writes entry 1.
    let partly = MutateRowsResponse {
        entries: vec![
            mutate_rows_response::Entry {
                index: 0,
                status: Some(googleapis_tonic_google_rpc::google::rpc::Status::default()),
            },
            mutate_rows_response::Entry {
                index: 1,
                status: Some(googleapis_tonic_google_rpc::google::rpc::Status {
                    code: UNAVAILABLE,
                    ..Default::default()
                }),
            },
        ],
        ..MutateRowsResponse::default()
    };
    let written = MutateRowsResponse {
        entries: vec![mutate_rows_response::Entry {
            index: 0,
            status: Some(googleapis_tonic_google_rpc::google::rpc::Status::default()),
        }],
        ..MutateRowsResponse::default()
    };
    fake.script(
        "MutateRows",
        [
            Answer::ok(vec![partly.encode_to_vec()]).with_google_headers(3, "c1", "us-east1-b"),
            Answer::ok(vec![written.encode_to_vec()]).with_google_headers(4, "c1", "us-east1-b"),
        ],
    );
    let recorded = Recorded::new();
    let table = fake_table(&fake, &recorded).await;
    let results = table
        .mutate_rows(vec![
            data::Entry::new(b"r1".to_vec(), vec![set_cell()]),
            data::Entry::new(b"r2".to_vec(), vec![set_cell()]),
        ])
        .await
        .unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let sent: Vec<usize> = fake
        .received_of("MutateRows")
        .iter()
        .map(|r| r.decode::<MutateRowsRequest>().entries.len())
        .collect();
    assert_eq!(sent, [2, 1], "the failed entry alone sent again");

    let points = recorded.points();
    let base = common("Bigtable.MutateRows", "c1", "us-east1-b");
    retried_once(&points, "Bigtable.MutateRows", &base, &base, "false");
}

/// The attributes every metric of a GoogleSQL RPC `method` carries: the
/// instance's, the table unspecified as Google's Java client has it.
fn common_sql(method: &str, cluster: &str, zone: &str) -> BTreeMap<String, String> {
    with(
        common(method, cluster, zone),
        &[("table", builtin::UNSPECIFIED_TABLE)],
    )
}

async fn fake_sql(fake: &FakeBigtable, recorded: &Recorded) -> Sql {
    let conn = Connection::builder("p", "i")
        .emulator(fake.host())
        .app_profile("serving")
        .meter_provider(Arc::new(recorded.provider.clone()))
        .connect()
        .await
        .unwrap();
    Sql::new(&conn).with_read_options(ReadOptions::default().with_retry(four_attempts()))
}

#[tokio::test]
async fn a_query_reports_its_prepare_and_its_execute_resumed_once() {
    const HOLD: Duration = Duration::from_millis(40);
    let fake = FakeBigtable::start().await;
    fake.script(
        "PrepareQuery",
        [raw_sql::plan("p1", &raw_sql::columns()).with_google_headers(2, "c1", "us-east1-b")],
    );
    fake.script(
        "ExecuteQuery",
        [
            // The first batch, then the stream breaks; resumed, the second.
            Answer::ok(vec![raw_sql::batch(&raw_sql::row("a", 1), "t1")])
                .status_of(UNAVAILABLE)
                .with_google_headers(3, "c1", "us-east1-b"),
            Answer::ok(vec![raw_sql::batch(&raw_sql::row("b", 2), "t2")]).with_google_headers(
                4,
                "c1",
                "us-east1-c",
            ),
        ],
    );
    let recorded = Recorded::new();
    let sql = fake_sql(&fake, &recorded).await;
    let prepared = sql
        .prepare(
            "SELECT _key AS key, n FROM t",
            Vec::<(&str, SqlType)>::new(),
        )
        .await
        .unwrap();
    let mut rows = std::pin::pin!(sql.execute(prepared.bind()));
    let mut keys = Vec::new();
    while let Some(row) = rows.next().await {
        keys.push(row.unwrap().get::<String>("key").unwrap());
        tokio::time::sleep(HOLD).await;
    }
    assert_eq!(keys, ["a", "b"], "each row once");
    assert_eq!(fake.received_of("ExecuteQuery").len(), 2, "resumed once");

    let points = recorded.points();
    // PrepareQuery: one attempt, unary.
    let prepare = common_sql("Bigtable.PrepareQuery", "c1", "us-east1-b");
    let prepare_ok = with(prepare.clone(), &[("status", "OK")]);
    let unary = with(prepare_ok.clone(), &[("streaming", "false")]);
    assert_eq!(
        points_of(&points, "operation_latencies", "Bigtable.PrepareQuery"),
        [(unary.clone(), 1)]
    );
    assert_eq!(
        points_of(&points, "attempt_latencies", "Bigtable.PrepareQuery"),
        [(unary, 1)]
    );
    let server: Vec<f64> = of(&points, "server_latencies")
        .into_iter()
        .filter(|p| p.attr("method") == "Bigtable.PrepareQuery")
        .map(|p| p.sum)
        .collect();
    assert_eq!(server, [2.0]);
    assert_eq!(
        points_of(&points, "connectivity_error_count", "Bigtable.PrepareQuery"),
        [(prepare_ok, 0)]
    );
    assert_eq!(
        points_of(&points, "throttling_latencies", "Bigtable.PrepareQuery"),
        [(prepare.clone(), 1)]
    );
    assert_eq!(
        points_of(&points, "application_latencies", "Bigtable.PrepareQuery"),
        [(prepare, 1)]
    );
    assert!(points_of(&points, "retry_count", "Bigtable.PrepareQuery").is_empty());

    // ExecuteQuery: two attempts, the first broken, streaming.
    let first = common_sql("Bigtable.ExecuteQuery", "c1", "us-east1-b");
    let last = common_sql("Bigtable.ExecuteQuery", "c1", "us-east1-c");
    retried_once(&points, "Bigtable.ExecuteQuery", &first, &last, "true");
    let mut servers: Vec<(String, f64)> = of(&points, "server_latencies")
        .into_iter()
        .filter(|p| p.attr("method") == "Bigtable.ExecuteQuery")
        .map(|p| (p.attr("status").to_owned(), p.sum))
        .collect();
    servers.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        servers,
        [("OK".to_owned(), 4.0), ("UNAVAILABLE".to_owned(), 3.0)]
    );
    let connectivity = of(&points, "connectivity_error_count");
    assert!(
        connectivity.iter().all(|p| p.count == 0),
        "the front end answered every attempt: {connectivity:?}"
    );
    // The caller held the stream after the first row at least (the
    // second may come after the RPC ended, as with ReadRows).
    let application = points_of(&points, "application_latencies", "Bigtable.ExecuteQuery");
    assert_eq!(application, [(last, 1)]);
    let held: f64 = of(&points, "application_latencies")
        .into_iter()
        .filter(|p| p.attr("method") == "Bigtable.ExecuteQuery")
        .map(|p| p.sum)
        .sum();
    assert!(held >= HOLD.as_secs_f64() * 1e3, "{held} ms");
    // As Google's Java client: first_response_latencies is ReadRows'.
    assert!(
        of(&points, "first_response_latencies").is_empty(),
        "{:?}",
        of(&points, "first_response_latencies")
    );
}

#[tokio::test]
async fn a_one_call_query_reports_its_retried_prepare_then_its_execute() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "PrepareQuery",
        [
            Answer::status(UNAVAILABLE).with_google_headers(1, "c1", "us-east1-b"),
            raw_sql::plan("p1", &raw_sql::columns()).with_google_headers(1, "c1", "us-east1-b"),
        ],
    );
    fake.script(
        "ExecuteQuery",
        [
            Answer::ok(vec![raw_sql::batch(&raw_sql::row("a", 1), "t1")]).with_google_headers(
                1,
                "c1",
                "us-east1-b",
            ),
        ],
    );
    let recorded = Recorded::new();
    let sql = fake_sql(&fake, &recorded).await;
    let result = sql
        .query(Query::new("SELECT _key AS key, n FROM t"))
        .collect()
        .await
        .unwrap();
    assert_eq!(result.rows.len(), 1);

    let points = recorded.points();
    let prepare = common_sql("Bigtable.PrepareQuery", "c1", "us-east1-b");
    retried_once(
        &points,
        "Bigtable.PrepareQuery",
        &prepare,
        &prepare,
        "false",
    );
    let execute = with(
        common_sql("Bigtable.ExecuteQuery", "c1", "us-east1-b"),
        &[("status", "OK"), ("streaming", "true")],
    );
    assert_eq!(
        points_of(&points, "operation_latencies", "Bigtable.ExecuteQuery"),
        [(execute.clone(), 1)]
    );
    assert_eq!(
        points_of(&points, "attempt_latencies", "Bigtable.ExecuteQuery"),
        [(execute, 1)]
    );
    assert!(points_of(&points, "retry_count", "Bigtable.ExecuteQuery").is_empty());
}

/// The metrics table of `guide/observability.md`: name, kind, unit and
/// attributes of each.
fn guide_table() -> BTreeMap<String, (String, String, Vec<String>)> {
    let guide = include_str!("../../guide/observability.md");
    let table = guide
        .split("<!-- built-in metrics table -->")
        .nth(1)
        .expect("the guide marks its built-in metrics table");
    table
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with("| `"))
        .map(|line| {
            let cells: Vec<String> = line
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace('`', ""))
                .collect();
            let attributes = cells[3]
                .split(',')
                .map(|a| a.trim().to_owned())
                .filter(|a| !a.is_empty())
                .collect();
            (
                cells[0].clone(),
                (cells[1].clone(), cells[2].clone(), attributes),
            )
        })
        .collect()
}

#[tokio::test]
async fn names_units_and_attributes_are_those_the_guide_lists() {
    let guide = guide_table();
    // The library's own list says the same as the guide.
    let listed: BTreeMap<String, (String, String, Vec<String>)> = builtin::BUILTIN_METRICS
        .iter()
        .map(|m| {
            let mut attributes: Vec<String> = builtin::COMMON_ATTRIBUTES
                .iter()
                .chain(m.attributes)
                .map(|a| (*a).to_owned())
                .collect();
            attributes.sort();
            (
                m.name.to_owned(),
                (m.kind.to_owned(), m.unit.to_owned(), attributes),
            )
        })
        .collect();
    let mut sorted_guide = guide.clone();
    for (_, _, attributes) in sorted_guide.values_mut() {
        attributes.sort();
    }
    assert_eq!(listed, sorted_guide, "BUILTIN_METRICS against the guide");
    assert_eq!(
        builtin::LATENCY_BUCKETS_MS.map(f64::to_bits),
        GOOGLES_BUCKETS.map(f64::to_bits)
    );

    // What is really exported: a read, and a write retried once, bring
    // every metric.
    let fake = FakeBigtable::start().await;
    fake.script(
        "ReadRows",
        [Answer::ok(vec![row("r1")]).with_google_headers(1, "c", "z")],
    );
    fake.script(
        "MutateRow",
        [
            Answer::status(UNAVAILABLE).with_google_headers(1, "c", "z"),
            Answer::ok(vec![Vec::new()]).with_google_headers(1, "c", "z"),
        ],
    );
    let recorded = Recorded::new();
    let table = fake_table(&fake, &recorded).await;
    table.read_row("r1", None).await.unwrap();
    table.mutate_row("r1", vec![set_cell()]).await.unwrap();
    let mut exported: BTreeMap<String, (String, String, Vec<String>)> = BTreeMap::new();
    for p in recorded.points() {
        let kind = if p.bounds.is_empty() {
            "counter"
        } else {
            "histogram"
        };
        let mut attributes: Vec<String> = p.attributes.keys().cloned().collect();
        attributes.sort();
        let entry = (kind.to_owned(), p.unit.clone(), attributes);
        if let Some(seen) = exported.insert(p.metric.clone(), entry.clone()) {
            assert_eq!(seen, entry, "{}: one set of attributes", p.metric);
        }
        if kind == "histogram" {
            assert_eq!(p.bounds, GOOGLES_BUCKETS, "{}", p.metric);
        }
    }
    assert_eq!(exported, sorted_guide, "exported against the guide");
}
