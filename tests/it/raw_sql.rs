//! GoogleSQL through the raw layer (`data::Sql`), against a fake Bigtable
//! (`support/fake_bigtable.rs`): Google's emulator answers `PrepareQuery`
//! with "the emulator does not currently support `PrepareQuery`", so the
//! scripted server is what shows the typed rows, the resumption after a
//! break, the plan made again, and the refusals of bad input and of
//! malformed answers. (Google's conformance suite checks the same through
//! the test proxy: `.ci/conformance-sql`.)

use crate::convert;
use crate::fake_bigtable;

use std::time::{Duration, Instant};

use crate::proto::{
    execute_query_response, partial_result_set::PartialRows, result_set_metadata::Schema,
    ExecuteQueryRequest, ExecuteQueryResponse, PartialResultSet, PrepareQueryRequest,
    PrepareQueryResponse, ProtoRows, ProtoRowsBatch, ProtoSchema, ResultSetMetadata,
};
use bigtable_ttl::data::{Query, Sql, SqlType, SqlValue};
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{Code, Error};
use fake_bigtable::{four_attempts, Answer, FakeBigtable};
use futures_util::TryStreamExt as _;
use prost::Message as _;

const FAILED_PRECONDITION: i32 = 9;
const INTERNAL: i32 = 13;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNAVAILABLE: i32 = 14;

async fn sql(fake: &FakeBigtable, policy: RetryPolicy) -> Sql {
    let conn = fake.connection(policy).await;
    Sql::new(&conn).with_read_options(ReadOptions::default().with_retry(policy))
}

/// `PrepareQuery`'s answer: plan `id`, these columns, valid for an hour.
pub(crate) fn plan(id: &str, columns: &[(&str, SqlType)]) -> Answer {
    plan_for(id, columns, Duration::from_secs(3600))
}

/// `PrepareQuery`'s answer: plan `id`, these columns, valid for `valid`
/// (to the second, rounded down).
fn plan_for(id: &str, columns: &[(&str, SqlType)], valid: Duration) -> Answer {
    let valid_until = std::time::SystemTime::now() + valid;
    let seconds = valid_until
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let response = PrepareQueryResponse {
        metadata: Some(ResultSetMetadata {
            schema: Some(Schema::ProtoSchema(ProtoSchema {
                columns: columns
                    .iter()
                    .map(|(name, ty)| {
                        convert::column(&bigtable_ttl::data::SqlColumn::new(*name, ty.clone()))
                            .unwrap()
                    })
                    .collect(),
            })),
        }),
        prepared_query: id.as_bytes().to_vec(),
        valid_until: Some(prost_types::Timestamp {
            seconds: i64::try_from(seconds).unwrap(),
            nanos: 0,
        }),
    };
    Answer::ok(vec![response.encode_to_vec()])
}

/// `values` as the bytes of one `ProtoRows` batch.
fn batch_bytes(values: &[SqlValue]) -> Vec<u8> {
    ProtoRows {
        values: values
            .iter()
            .map(|v| convert::sql_value_to_wire(v).unwrap())
            .collect(),
    }
    .encode_to_vec()
}

/// One `ExecuteQuery` message carrying `data`.
fn part(data: &[u8], reset: bool, token: &str, checksum: Option<u32>) -> Vec<u8> {
    ExecuteQueryResponse {
        response: Some(execute_query_response::Response::Results(
            PartialResultSet {
                partial_rows: Some(PartialRows::ProtoRowsBatch(ProtoRowsBatch {
                    batch_data: data.to_vec(),
                })),
                resume_token: token.as_bytes().to_vec(),
                batch_checksum: checksum,
                reset,
                ..PartialResultSet::default()
            },
        )),
    }
    .encode_to_vec()
}

/// `values` as one whole batch, checksummed, closed by `token`.
pub(crate) fn batch(values: &[SqlValue], token: &str) -> Vec<u8> {
    let data = batch_bytes(values);
    part(&data, true, token, Some(crc32c::crc32c(&data)))
}

pub(crate) fn row(key: &str, n: i64) -> [SqlValue; 2] {
    [SqlValue::from(key), SqlValue::Int64(n)]
}

pub(crate) fn columns() -> [(&'static str, SqlType); 2] {
    [("key", SqlType::String), ("n", SqlType::Int64)]
}

/// `FAILED_PRECONDITION` as Bigtable says a plan expired.
fn plan_expired() -> Answer {
    use googleapis_tonic_google_rpc::google::rpc::{
        precondition_failure::Violation, PreconditionFailure, Status,
    };
    let failure = PreconditionFailure {
        violations: vec![Violation {
            r#type: "PREPARED_QUERY_EXPIRED".into(),
            subject: String::new(),
            description: "The prepared query has expired.".into(),
        }],
    };
    let status = Status {
        code: FAILED_PRECONDITION,
        message: "failed precondition".into(),
        details: vec![prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.PreconditionFailure".into(),
            value: failure.encode_to_vec(),
        }],
    };
    Answer::status(FAILED_PRECONDITION).details(status.encode_to_vec())
}

#[tokio::test]
async fn a_query_with_parameters_returns_typed_rows_each_once_across_a_break() {
    let fake = FakeBigtable::start().await;
    fake.script("PrepareQuery", [plan("p1", &columns())]);
    let first: Vec<SqlValue> = [row("a", 1), row("b", 2)].concat();
    let second: Vec<SqlValue> = row("c", 3).to_vec();
    let second_bytes = batch_bytes(&second);
    fake.script(
        "ExecuteQuery",
        [
            // The first batch, final at its token; half of the next one;
            // then the stream breaks.
            Answer::ok(vec![
                batch(&first, "t1"),
                part(&second_bytes[..3], true, "", None),
            ])
            .status_of(UNAVAILABLE),
            // Resumed after t1: the whole second batch.
            Answer::ok(vec![batch(&second, "t2")]),
        ],
    );
    let sql = sql(&fake, four_attempts()).await;
    let prepared = sql
        .prepare(
            "SELECT _key AS key, n FROM t WHERE _key >= @from",
            [("from", SqlType::String)],
        )
        .await
        .unwrap();
    let result = sql
        .execute(prepared.bind().set("from", "a").unwrap())
        .collect()
        .await
        .unwrap();

    let got: Vec<(String, i64)> = result
        .rows
        .iter()
        .map(|r| (r.get("key").unwrap(), r.get("n").unwrap()))
        .collect();
    assert_eq!(
        got,
        [("a".into(), 1), ("b".into(), 2), ("c".into(), 3)],
        "each row once, none lost"
    );
    assert_eq!(result.columns, prepared.columns());

    let prepare: PrepareQueryRequest = fake.received_of("PrepareQuery")[0].decode();
    assert_eq!(
        prepare.param_types.get("from"),
        Some(&convert::sql_type_to_wire(&SqlType::String).unwrap())
    );
    let executes: Vec<ExecuteQueryRequest> = fake
        .received_of("ExecuteQuery")
        .iter()
        .map(fake_bigtable::Received::decode)
        .collect();
    assert_eq!(executes.len(), 2);
    assert!(executes[0].resume_token.is_empty());
    assert_eq!(executes[1].resume_token, b"t1");
    for execute in &executes {
        assert_eq!(execute.prepared_query, b"p1");
        let from = &execute.params["from"];
        assert_eq!(
            from.r#type,
            Some(convert::sql_type_to_wire(&SqlType::String).unwrap())
        );
        assert_eq!(
            convert::sql_value(from, &SqlType::String),
            Ok(SqlValue::from("a"))
        );
    }
    let routing = fake.received_of("ExecuteQuery")[0].header("x-goog-request-params");
    assert!(
        routing.starts_with("name=projects%2Fp%2Finstances%2Fi"),
        "{routing}"
    );
}

#[tokio::test]
async fn bad_parameters_are_refused_before_anything_is_sent() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "PrepareQuery",
        [plan("p1", &columns()), plan("p2", &[("d", SqlType::Date)])],
    );
    let sql = sql(&fake, four_attempts()).await;
    let prepared = sql
        .prepare("SELECT * FROM t WHERE n > @n", [("n", SqlType::Int64)])
        .await
        .unwrap();

    let unknown = prepared.bind().set("m", 1_i64).unwrap_err();
    assert!(
        matches!(&unknown, Error::QueryParam(e) if e.name == "m" && e.problem.contains("it declares: n")),
        "{unknown}"
    );
    let wrong = prepared.bind().set("n", "ten").unwrap_err();
    assert!(
        matches!(&wrong, Error::QueryParam(e) if e.name == "n" && e.problem.contains("INT64") && e.problem.contains("STRING")),
        "{wrong}"
    );
    let unset = sql.execute(prepared.bind()).collect().await.unwrap_err();
    assert!(
        matches!(&unset, Error::QueryParam(e) if e.name == "n"),
        "{unset}"
    );
    let untyped = sql
        .query(Query::new("SELECT @x AS x").param("x", SqlValue::Null))
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(&untyped, Error::QueryParam(e) if e.name == "x"),
        "{untyped}"
    );
    let mistyped = sql
        .query(Query::new("SELECT @x AS x").typed_param("x", SqlType::Float32, 1.5_f64))
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(&mistyped, Error::QueryParam(e) if e.name == "x"),
        "{mistyped}"
    );
    // What GoogleSQL cannot take: a STRUCT or a MAP parameter (declared or
    // given), a year past 9999 or before 0001, a leap second.
    let map = SqlType::map(SqlType::String, SqlType::Int64);
    let declared = sql
        .prepare("SELECT @m['k'] AS v", [("m", map.clone())])
        .await
        .unwrap_err();
    assert!(
        matches!(&declared, Error::QueryParam(e) if e.name == "m" && e.problem.contains("cannot be a MAP<STRING, INT64>")),
        "{declared}"
    );
    let fields = SqlValue::Struct(vec![(Some("a".into()), SqlValue::Int64(1))]);
    for query in [
        Query::new("SELECT @s.a AS a").param("s", fields.clone()),
        Query::new("SELECT @m['k'] AS v").typed_param(
            "m",
            map,
            SqlValue::Map(vec![(SqlValue::from("k"), SqlValue::Int64(1))]),
        ),
    ] {
        let refused = sql.query(query).collect().await.unwrap_err();
        assert!(
            matches!(&refused, Error::QueryParam(e) if e.problem.contains("cannot be a")),
            "{refused}"
        );
    }
    let dated = sql.prepare("SELECT @d AS d", [("d", SqlType::Date)]).await;
    let y10k = bigtable_ttl::chrono::NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap();
    let far = dated
        .unwrap()
        .bind()
        .set("d", SqlValue::Date(y10k))
        .unwrap_err();
    assert!(
        matches!(&far, Error::QueryParam(e) if e.problem.contains("outside GoogleSQL's years 0001 to 9999")),
        "{far}"
    );

    assert_eq!(
        fake.received_of("PrepareQuery").len(),
        2,
        "only the prepares of valid parameters"
    );
    assert!(fake.received_of("ExecuteQuery").is_empty());
}

#[tokio::test]
async fn a_malformed_batch_is_an_internal_error_instead_of_rows_and_is_not_retried() {
    let fake = FakeBigtable::start().await;
    let rows: Vec<SqlValue> = [row("a", 1), row("b", 2)].concat();
    let data = batch_bytes(&rows);
    // One wrong checksum; one value of the wrong type in the second row;
    // one row short of a value.
    let wrong_type: Vec<SqlValue> = [
        row("a", 1).to_vec(),
        vec![SqlValue::from("b"), SqlValue::from("two")],
    ]
    .concat();
    fake.script(
        "PrepareQuery",
        [
            plan("p", &columns()),
            plan("p", &columns()),
            plan("p", &columns()),
        ],
    );
    fake.script(
        "ExecuteQuery",
        [
            Answer::ok(vec![part(&data, true, "t", Some(1234))]),
            Answer::ok(vec![batch(&wrong_type, "t")]),
            Answer::ok(vec![batch(&rows[..3], "t")]),
        ],
    );
    let sql = sql(&fake, four_attempts()).await;
    for expected in [
        "Unexpected checksum mismatch",
        "column `n` of row 2: Value kind must be INT_VALUE for columns of type: INT64",
        "Incomplete row received",
    ] {
        let mut rows = std::pin::pin!(sql.query(Query::new("SELECT * FROM t")));
        let first = rows.try_next().await;
        let error = first.expect_err("the batch at fault gives no row");
        assert!(matches!(error, Error::QueryResponse { .. }), "{error}");
        assert_eq!(error.code(), Some(Code::Internal));
        assert!(error.to_string().contains(expected), "{error}");
        assert!(
            rows.try_next().await.unwrap().is_none(),
            "nothing after the error"
        );
    }
    assert_eq!(
        fake.received_of("ExecuteQuery").len(),
        3,
        "one attempt each"
    );
}

#[tokio::test]
async fn a_query_over_its_row_limit_fails_instead_of_returning_part_of_it() {
    let fake = FakeBigtable::start().await;
    fake.script("PrepareQuery", [plan("p", &columns())]);
    fake.script(
        "ExecuteQuery",
        [Answer::ok(vec![batch(
            &[row("a", 1), row("b", 2)].concat(),
            "t",
        )])],
    );
    let sql = sql(&fake, four_attempts()).await;
    let error = sql
        .query(Query::new("SELECT * FROM t").max_rows(1))
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::QueryRowLimit { limit: 1, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn an_expired_plan_is_made_again_before_the_first_token_and_refused_after() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "PrepareQuery",
        [
            plan("old", &columns()),
            plan("new", &[("k", SqlType::Bytes)]),
            plan("p", &columns()),
        ],
    );
    fake.script(
        "ExecuteQuery",
        [
            plan_expired(),
            Answer::ok(vec![batch(&[SqlValue::Bytes(b"x".to_vec())], "t")]),
            // The second query: a row, then the plan expires.
            Answer::ok(vec![batch(&row("a", 1), "t")]).status_of(FAILED_PRECONDITION),
        ],
    );
    let sql = sql(&fake, four_attempts()).await;
    let result = sql
        .query(Query::new("SELECT * FROM t"))
        .collect()
        .await
        .unwrap();
    assert_eq!(
        result.columns,
        vec![bigtable_ttl::data::SqlColumn::new("k", SqlType::Bytes)]
    );
    assert_eq!(result.rows.len(), 1);
    let executes: Vec<ExecuteQueryRequest> = fake
        .received_of("ExecuteQuery")
        .iter()
        .map(fake_bigtable::Received::decode)
        .collect();
    assert_eq!(executes[0].prepared_query, b"old");
    assert_eq!(executes[1].prepared_query, b"new");

    // A FAILED_PRECONDITION that is not an expired plan is final.
    let error = sql
        .query(Query::new("SELECT * FROM t"))
        .collect()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(Code::FailedPrecondition), "{error}");
    assert_eq!(fake.received_of("ExecuteQuery").len(), 3);
}

/// Twenty runs of one prepared query whose plan expired send one
/// `PrepareQuery` between them, not one each: the first run makes the
/// plan again, the others wait for it and run it.
#[tokio::test]
async fn concurrent_runs_of_an_expired_plan_share_one_prepare() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "PrepareQuery",
        [
            plan_for("old", &columns(), Duration::from_secs(1)),
            // Slow enough that every run finds the plan expired meanwhile.
            plan("new", &columns()).after(Duration::from_millis(300)),
        ],
    );
    fake.script(
        "ExecuteQuery",
        (0..20).map(|i| Answer::ok(vec![batch(&row("a", i), "t")])),
    );
    let sql = sql(&fake, four_attempts()).await;
    let prepared = sql
        .prepare("SELECT * FROM t", std::iter::empty::<(String, SqlType)>())
        .await
        .unwrap();
    // Past the second the plan was said to hold.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let runs = (0..20).map(|_| sql.execute(prepared.bind()).collect());
    for result in futures_util::future::join_all(runs).await {
        assert_eq!(result.unwrap().rows.len(), 1);
    }
    assert_eq!(
        fake.received_of("PrepareQuery").len(),
        2,
        "one prepare, then one refresh"
    );
    let executes: Vec<ExecuteQueryRequest> = fake
        .received_of("ExecuteQuery")
        .iter()
        .map(fake_bigtable::Received::decode)
        .collect();
    assert_eq!(executes.len(), 20);
    assert!(executes.iter().all(|e| e.prepared_query == b"new"));
}

#[tokio::test]
async fn a_plan_that_expires_after_rows_came_is_an_error() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "PrepareQuery",
        [plan("p", &columns()), plan("q", &columns())],
    );
    let mut expired = plan_expired();
    expired.messages = vec![batch(&row("a", 1), "t")];
    fake.script("ExecuteQuery", [expired]);
    let sql = sql(&fake, four_attempts()).await;
    let error = sql
        .query(Query::new("SELECT * FROM t"))
        .collect()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(Code::Internal), "{error}");
    assert!(
        error
            .to_string()
            .contains("Unexpected plan refresh attempt after first token"),
        "{error}"
    );
    assert_eq!(
        fake.received_of("PrepareQuery").len(),
        1,
        "not prepared again"
    );
}

#[tokio::test]
async fn only_what_googles_clients_retry_is_retried() {
    let fake = FakeBigtable::start().await;
    fake.script(
        "PrepareQuery",
        [Answer::status(UNAVAILABLE), plan("p", &columns())],
    );
    fake.script(
        "ExecuteQuery",
        [Answer::status(UNAVAILABLE), Answer::status(INTERNAL)],
    );
    let sql = sql(&fake, four_attempts()).await;
    let error = sql
        .query(Query::new("SELECT * FROM t"))
        .collect()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(Code::Internal), "{error}");
    assert_eq!(fake.received_of("PrepareQuery").len(), 2);
    assert_eq!(fake.received_of("ExecuteQuery").len(), 2);

    // RESOURCE_EXHAUSTED alone: the library's reads retry it, Google's
    // clients do not retry a query on it.
    fake.script("PrepareQuery", [plan("p", &columns())]);
    fake.script("ExecuteQuery", [Answer::status(RESOURCE_EXHAUSTED)]);
    let error = sql
        .query(Query::new("SELECT * FROM t"))
        .collect()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(Code::ResourceExhausted), "{error}");
    assert_eq!(fake.received_of("ExecuteQuery").len(), 3, "sent once");
}

#[tokio::test]
async fn a_query_that_gets_no_answer_ends_at_its_deadline() {
    let fake = FakeBigtable::start().await;
    fake.script("PrepareQuery", [plan("p", &columns())]);
    fake.script(
        "ExecuteQuery",
        [Answer::hang(), Answer::hang(), Answer::hang()],
    );
    let deadline = Duration::from_secs(1);
    let sql = sql(&fake, four_attempts().with_deadline(deadline)).await;
    let started = Instant::now();
    let error = sql
        .query(Query::new("SELECT * FROM t"))
        .collect()
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(error.is_timeout(), "{error}");
    assert!(took >= deadline, "{took:?}");
    // A loaded 2-core box may be slow to wake up; never near the 10 s
    // attempt timeout, though.
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[tokio::test]
async fn the_emulator_has_no_sql_and_says_so_once() {
    // Google's emulator refuses PrepareQuery: the call fails at once with
    // the emulator's own words, not after a round of retries.
    let sql = Sql::new(&crate::support::connection());
    let error = sql
        .prepare("SELECT * FROM t", std::iter::empty::<(String, SqlType)>())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Server(e) if e.attempts == 1),
        "{error:?}"
    );
    assert!(!error.is_retryable(), "{error}");
    let text = format!(
        "{error}: {:?}",
        std::error::Error::source(&error).map(ToString::to_string)
    );
    assert!(text.contains("PrepareQuery"), "{text}");
}
