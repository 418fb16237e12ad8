//! A call to a loopback port where nothing listens ends, once its retries
//! are spent, with an error saying to which address, how many attempts
//! were made over how long, with the transport's own error as its cause:
//! for reads, writes and admin calls alike. An emulator that refuses a
//! first connection is not running there: that is said at once, without
//! retries. Nothing here needs the emulator.

use crate::support;

use std::net::TcpListener;
use std::time::Duration;

use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{Code, Connection, Error, Table};
use support::rows::{click, Click};

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
    let addr = listener.local_addr().expect("its address");
    drop(listener);
    addr.to_string()
}

/// Three attempts, short delays: the call ends within a few seconds.
fn three_attempts() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_attempts(3)
        .with_initial_delay(Duration::from_millis(20))
        .with_max_delay(Duration::from_millis(100))
        .with_attempt_timeout(Duration::from_secs(10))
        .with_deadline(Duration::from_secs(60))
}

/// `err`'s message and every cause below it, as a reporter prints them.
fn chain(err: &Error) -> String {
    std::iter::successors(Some(err as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

fn assert_exhausted(what: &str, address: &str, err: &Error) {
    match err {
        Error::Server(e) => {
            let bigtable_ttl::error::Server {
                code,
                attempts,
                retries_exhausted,
                ..
            } = &**e;
            assert_eq!(*code, Code::Unavailable, "{what}: {err}");
            assert_eq!(*attempts, 3, "{what}: {err}");
            assert!(retries_exhausted, "{what}: {err}");
        }
        other => panic!("{what}: expected a server error, got {other:?}"),
    }
    // What a caller branches on, without matching the enum.
    assert_eq!(err.code(), Some(Code::Unavailable), "{what}");
    assert!(err.is_retryable() && err.is_exhausted(), "{what}: {err}");
    assert!(!err.is_outcome_unknown() && !err.is_not_found() && !err.is_timeout());
    let message = err.to_string();
    assert!(
        message.contains("3 attempts over ") && message.contains("retries exhausted"),
        "{what}: the message should say the attempts and their time: {message}"
    );
    // Nothing listens: the message says nothing answered, where, and why,
    // rather than that Bigtable answered UNAVAILABLE.
    assert!(
        message.starts_with(&format!("no answer from Bigtable at {address} for table"))
            && message.contains(": connection refused ("),
        "{what}: {message}"
    );
    // The elapsed time is printed as a duration (`1.2s`, `350.0ms`).
    let over = message.split("attempts over ").nth(1).unwrap_or_default();
    assert!(
        over.starts_with(|c: char| c.is_ascii_digit()) && over.contains('s'),
        "{what}: {message}"
    );
    let full = chain(err);
    assert!(
        std::error::Error::source(err).is_some() && full.to_lowercase().contains("connect"),
        "{what}: the cause should be the connection failure: {full}"
    );
}

/// Clicks on a port nothing listens on, through plaintext endpoints (not
/// an emulator's: a refusal is retried), three attempts for every call;
/// and the address.
async fn refused_table() -> (Table<Click>, String) {
    let address = closed_port();
    let endpoint = format!("http://{address}");
    let conn = Connection::builder("p", "i")
        .data_endpoint(endpoint.clone())
        .admin_endpoint(endpoint)
        .admin_retry(three_attempts())
        .connect()
        .await
        .expect("well-formed endpoints");
    let table = Table::<Click>::new(conn)
        .with_read_options(ReadOptions::default().with_retry(three_attempts()))
        .with_write_options(WriteOptions::default().with_retry(three_attempts()));
    (table, address)
}

#[tokio::test]
async fn reads_writes_and_admin_calls_say_address_attempts_time_and_cause() {
    let (table, address) = refused_table().await;

    let err = table.get("k1").await.unwrap_err();
    assert_exhausted("get", &address, &err);
    let err = table.put(&click("k1", "/")).await.unwrap_err();
    assert_exhausted("put", &address, &err);
    let err = table.ensure_schema().await.unwrap_err();
    assert_exhausted("ensure_schema", &address, &err);
}

/// `BIGTABLE_EMULATOR_HOST` (or `Connection::emulator`) naming a port
/// where no emulator runs: each call fails at its first attempt, under
/// the default policies that retry a refusal ten times over about 25 s
/// elsewhere, and says where it looked and what to do. Once an emulator
/// answered, a refusal is retried as any other.
#[tokio::test]
async fn a_first_connection_to_an_emulator_not_there_fails_at_once() {
    let address = closed_port();
    let conn = Connection::emulator(&address, "p", "i").expect("a well-formed host");
    let table = Table::<Click>::new(conn);
    let started = std::time::Instant::now();
    for (what, err) in [
        ("get", table.get("k1").await.unwrap_err()),
        ("put", table.put(&click("k1", "/")).await.unwrap_err()),
        ("ensure_schema", table.ensure_schema().await.unwrap_err()),
    ] {
        assert!(
            matches!(&err,
                Error::Server(e) if e.code == Code::Unavailable && e.attempts == 1 && !e.retries_exhausted),
            "{what}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("no answer from Bigtable at {address} for table"))
                && message.contains("connection refused")
                && message.contains("is the emulator running there?")
                && message.contains("BIGTABLE_EMULATOR_HOST"),
            "{what}: {message}"
        );
        // Still safe to send again, once the emulator runs.
        assert!(err.is_retryable(), "{what}");
    }
    // Three calls, each a single refused connect: far within the 2 s the
    // issue allows a first one, however loaded the machine.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// Each level of `err`'s chain, as a reporter (anyhow's `{:#}`, eyre)
/// prints them one after another.
fn levels(err: &Error) -> Vec<String> {
    std::iter::successors(Some(err as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect()
}

#[tokio::test]
async fn an_error_names_each_cause_once() {
    use futures_util::TryStreamExt as _;
    let (table, _) = refused_table().await;

    let errors = [
        ("get", table.get("k1").await.unwrap_err()),
        (
            "stream",
            table
                .stream(bigtable_ttl::Scan::all())
                .try_collect::<Vec<_>>()
                .await
                .unwrap_err(),
        ),
        ("put", table.put(&click("k1", "/")).await.unwrap_err()),
        (
            "put_all",
            table.put_all(&[click("k1", "/")]).await.unwrap_err(),
        ),
        (
            "insert_if_absent",
            table.insert_if_absent(&click("k1", "/")).await.unwrap_err(),
        ),
        ("ensure_schema", table.ensure_schema().await.unwrap_err()),
    ];
    for (what, err) in &errors {
        let levels = levels(err);
        let full = levels.join(": ");
        println!("{what}: {full}");
        assert_eq!(
            full.matches("Connection refused").count(),
            1,
            "{what}: the cause once: {full}"
        );
        for (i, level) in levels.iter().enumerate() {
            for (j, other) in levels.iter().enumerate() {
                assert!(
                    i == j || !other.contains(level.as_str()),
                    "{what}: level {i} {level:?} is repeated in level {j} {other:?}"
                );
            }
        }
    }
}

/// A table's own policy never passes through the connection builder's
/// checks: one whose deadline no instant can hold is no deadline, not a
/// panic.
#[tokio::test]
async fn a_deadline_of_duration_max_is_no_deadline() {
    let forever = RetryPolicy::default()
        .with_max_attempts(2)
        .with_initial_delay(Duration::from_millis(10))
        .with_attempt_timeout(Duration::MAX)
        .with_deadline(Duration::MAX);
    let conn = Connection::builder("p", "i")
        .data_endpoint(format!("http://{}", closed_port()))
        .connect()
        .await
        .expect("a well-formed endpoint");
    let table = Table::<Click>::new(conn)
        .with_read_options(ReadOptions::default().with_retry(forever))
        .with_write_options(WriteOptions::default().with_retry(forever));
    for err in [
        table.get("k1").await.unwrap_err(),
        table.put(&click("k1", "/")).await.unwrap_err(),
    ] {
        assert!(
            matches!(&err,
                Error::Server(e) if e.code == Code::Unavailable && e.attempts == 2),
            "{err:?}"
        );
    }
}

/// A refused connection sends nothing: no call is an unknown outcome
/// (nothing can have been applied), and each may be sent again.
#[tokio::test]
async fn a_refused_connection_sent_nothing_and_is_safe_to_retry() {
    let (table, _) = refused_table().await;
    let condition = Click::URL.equals(&"/".to_owned());
    let errors = [
        (
            "insert_if_absent",
            table.insert_if_absent(&click("k1", "/")).await.unwrap_err(),
        ),
        (
            "put_if",
            table
                .put_if(&click("k1", "/"), condition)
                .await
                .unwrap_err(),
        ),
        ("put", table.put(&click("k1", "/")).await.unwrap_err()),
        (
            "put_all",
            table.put_all(&[click("k1", "/")]).await.unwrap_err(),
        ),
    ];
    for (what, err) in &errors {
        assert!(!err.is_outcome_unknown(), "{what}: {err}");
        assert!(err.is_retryable(), "{what}: {err:?}");
    }
}
