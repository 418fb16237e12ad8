//! The Cloud path, end to end: TLS and bearer tokens. The real emulator
//! sits behind a loopback proxy that terminates TLS with a certificate from
//! a CA made at test time; the connection is built as toward Cloud Bigtable
//! (`https://` endpoints, a token provider), trusting that CA. The proxy
//! checks that it saw TLS handshakes and the bearer token on data calls and
//! admin calls. Plaintext is for an emulator only: credentials over it are
//! refused.

use crate::recorder;
use crate::support;
use crate::tokens;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bigtable_ttl::admin::{self, EnsureOptions};
use bigtable_ttl::data::RawTable;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{BigtableRow, Connection, Credentials, Error, Scan, Table};
use futures_util::future::BoxFuture;
use futures_util::FutureExt as _;
use recorder::{Recorder, TestCa};
use support::rows::{click, Click};
use tokens::{FixedToken, NeverToken};

const TOKEN: &str = "ya29.test-token-for-bigtable-ttl";
const ADMIN_SERVICE: &str = "/google.bigtable.admin.v2.BigtableTableAdmin/";
const DATA_SERVICE: &str = "/google.bigtable.v2.Bigtable/";

/// A fresh instance name on the emulator.
fn instance() -> String {
    support::connection().instance().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_and_admin_calls_go_over_tls_with_the_bearer_token() {
    let ca = TestCa::new();
    let proxy = Recorder::start_tls(&support::emulator_host(), &ca).await;
    let tokens = FixedToken::new(TOKEN);
    let conn = Connection::builder(support::PROJECT, &instance())
        .data_endpoint(proxy.https_uri())
        .admin_endpoint(proxy.https_uri())
        .tls_root_certificate(ca.ca_pem.clone())
        .credentials(Credentials::token_source(tokens.clone()))
        .connect()
        .await
        .unwrap();
    let table = Table::<Click>::new(conn);

    table.ensure_schema().await.unwrap();
    table.verify_schema().await.unwrap();
    table.put(&click("c1", "/a")).await.unwrap();
    table.put_all(&[click("c2", "/b")]).await.unwrap();
    assert_eq!(
        table.get(&"c1".to_owned()).await.unwrap().unwrap().url,
        "/a"
    );
    assert_eq!(table.scan(Scan::all()).await.unwrap().len(), 2);

    assert!(proxy.tls_handshakes() >= 1, "no TLS handshake seen");
    let seen = proxy.seen();
    let admin = seen
        .iter()
        .filter(|s| s.path.starts_with(ADMIN_SERVICE))
        .count();
    let data = seen
        .iter()
        .filter(|s| s.path.starts_with(DATA_SERVICE))
        .count();
    assert!(
        admin >= 2 && data >= 4,
        "{admin} admin and {data} data calls"
    );
    for s in &seen {
        assert_eq!(
            s.header("authorization"),
            format!("Bearer {TOKEN}"),
            "{}",
            s.path
        );
    }
    // Each side asked for its own scope.
    let scopes = tokens.scopes.lock().unwrap().clone();
    assert!(scopes.iter().any(|s| s.ends_with("/auth/bigtable.data")));
    assert!(scopes
        .iter()
        .any(|s| s.ends_with("/auth/bigtable.admin.table")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_from_an_unknown_ca_is_refused() {
    let ca = TestCa::new();
    let proxy = Recorder::start_tls(&support::emulator_host(), &ca).await;
    let once = RetryPolicy::none().with_attempt_timeout(Duration::from_secs(10));
    let conn = Connection::builder(support::PROJECT, &instance())
        .data_endpoint(proxy.https_uri())
        .admin_endpoint(proxy.https_uri())
        .credentials(Credentials::token_source(FixedToken::new(TOKEN)))
        .retry(once)
        .admin_retry(once)
        .connect()
        .await
        .unwrap();
    let table = Table::<Click>::new(conn);
    let err = table.put(&click("c1", "/a")).await.unwrap_err();
    assert!(matches!(err, Error::Server { .. }), "{err:?}");
    assert!(table.ensure_schema().await.is_err());
    assert_eq!(proxy.tls_handshakes(), 0);
    assert!(proxy.seen().is_empty());
}

/// Fetching the access token is part of an attempt: a token service that
/// never answers times every call out by its deadline, admin and data
/// calls alike, and a conditional write whose request was never sent
/// (no token, no request) is not an unknown outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_service_that_never_answers_cannot_hang_a_call() {
    const DEADLINE: Duration = Duration::from_secs(2);
    const MARGIN: Duration = Duration::from_millis(700);
    let ca = TestCa::new();
    let proxy = Recorder::start_tls(&support::emulator_host(), &ca).await;
    let policy = RetryPolicy::default()
        .with_initial_delay(Duration::from_millis(50))
        .with_max_delay(Duration::from_millis(100))
        .with_attempt_timeout(Duration::from_millis(1_500))
        .with_deadline(DEADLINE);
    let conn = Connection::builder(support::PROJECT, &instance())
        .data_endpoint(proxy.https_uri())
        .admin_endpoint(proxy.https_uri())
        .tls_root_certificate(ca.ca_pem.clone())
        .credentials(Credentials::token_source(Arc::new(NeverToken)))
        .retry(policy)
        .admin_retry(policy)
        .connect()
        .await
        .unwrap();
    let table = Arc::new(
        Table::<Click>::new(conn.clone())
            .with_read_options(ReadOptions::default().with_retry(policy))
            .with_write_options(WriteOptions::default().with_retry(policy)),
    );
    let raw = Arc::new(RawTable::new(&conn, "clicks"));
    let conn = Arc::new(conn);
    let key = || "c1".to_owned();
    let calls: Vec<(&str, BoxFuture<'static, Result<(), Error>>)> = vec![
        ("Table::ensure_schema", {
            let t = table.clone();
            async move { t.ensure_schema().await.map(drop) }.boxed()
        }),
        ("Table::verify_schema", {
            let t = table.clone();
            async move { t.verify_schema().await }.boxed()
        }),
        ("admin::ensure_schema", {
            let c = conn.clone();
            async move {
                admin::ensure_schema(&c, "clicks", Click::SCHEMA, EnsureOptions::new())
                    .await
                    .map(drop)
            }
            .boxed()
        }),
        ("admin::live_rules", {
            let c = conn.clone();
            async move { admin::live_rules(&c, "clicks").await.map(drop) }.boxed()
        }),
        ("Table::get", {
            let t = table.clone();
            async move { t.get(&key()).await.map(drop) }.boxed()
        }),
        ("Table::scan", {
            let t = table.clone();
            async move { t.scan(Scan::all()).await.map(drop) }.boxed()
        }),
        ("Table::put", {
            let t = table.clone();
            async move { t.put(&click("c1", "/a")).await.map(drop) }.boxed()
        }),
        ("Table::put_all", {
            let t = table.clone();
            async move { t.put_all(&[click("c1", "/a")]).await.map(drop) }.boxed()
        }),
        ("Table::insert_if_absent", {
            let t = table.clone();
            async move { t.insert_if_absent(&click("c1", "/a")).await.map(drop) }.boxed()
        }),
        ("Table::put_if", {
            let t = table.clone();
            async move {
                t.put_if(&click("c1", "/b"), Click::URL.equals(&"/a".to_owned()))
                    .await
                    .map(drop)
            }
            .boxed()
        }),
        ("RawTable::check_and_mutate_row", {
            let r = raw.clone();
            async move {
                r.check_and_mutate_row("c1", None, vec![], vec![])
                    .await
                    .map(drop)
            }
            .boxed()
        }),
        ("RawTable::read_modify_write_row", {
            let r = raw.clone();
            async move { r.read_modify_write_row("c1", vec![]).await.map(drop) }.boxed()
        }),
        ("RawTable::sample_row_keys", {
            let r = raw.clone();
            async move { r.sample_row_keys().await.map(drop) }.boxed()
        }),
    ];
    let runs: Vec<_> = calls
        .into_iter()
        .map(|(what, call)| tokio::spawn(timed(what, call)))
        .collect();
    for run in runs {
        let (what, took, result) = run.await.unwrap();
        println!("{what}: {took:?}: {result:?}");
        let err = result
            .unwrap_or_else(|()| panic!("{what}: still waiting after 20 s"))
            .expect_err(what);
        assert!(
            took <= DEADLINE + MARGIN,
            "{what}: took {took:?}, over {DEADLINE:?} + {MARGIN:?}: {err}"
        );
        // Nothing was sent: a deadline, never an unknown outcome.
        assert!(
            err.is_timeout() || matches!(err, Error::PartialWrite { .. }),
            "{what}: {err:?}"
        );
    }
    assert!(proxy.seen().is_empty(), "no request without a token");
}

/// `call`, with how long it took (`Err` when still waiting after 20 s).
async fn timed(
    what: &'static str,
    call: impl Future<Output = Result<(), Error>>,
) -> (&'static str, Duration, Result<Result<(), Error>, ()>) {
    let started = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .map_err(drop);
    (what, started.elapsed(), result)
}

#[tokio::test]
async fn credentials_over_plaintext_are_refused() {
    let tokens = || Credentials::token_source(FixedToken::new(TOKEN));
    let refused = [
        Connection::builder("p", "i")
            .emulator("127.0.0.1:8086")
            .credentials(tokens())
            .connect()
            .await,
        Connection::builder("p", "i")
            .data_endpoint("http://127.0.0.1:8086")
            .admin_endpoint("http://127.0.0.1:8086")
            .credentials(tokens())
            .connect()
            .await,
        Connection::builder("p", "i")
            .admin_endpoint("http://127.0.0.1:8086")
            .credentials(Credentials::key_file("/nonexistent/key.json"))
            .connect()
            .await,
    ];
    for result in refused {
        match result {
            Err(Error::PlaintextWithCredentials(e)) => {
                assert_eq!(e.endpoint, "http://127.0.0.1:8086");
            }
            other => panic!("expected PlaintextWithCredentials, got {other:?}"),
        }
    }
    // No credentials: plaintext is fine (an emulator).
    let conn = Connection::builder("p", "i")
        .data_endpoint("http://127.0.0.1:8086")
        .admin_endpoint("http://127.0.0.1:8086")
        .credentials(Credentials::none())
        .connect()
        .await;
    assert!(conn.is_ok(), "{conn:?}");
}

#[tokio::test]
async fn a_missing_key_file_is_a_connect_error_naming_it() {
    let err = Connection::builder("p", "i")
        .data_endpoint("https://localhost:1")
        .admin_endpoint("https://localhost:1")
        .credentials(Credentials::key_file("/nonexistent/key.json"))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("/nonexistent/key.json"), "{err}");
}
