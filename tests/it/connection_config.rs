//! Bad connection settings are typed errors saying what is wrong, never a
//! panic inside a dependency. Pure: nothing is sent.

use std::time::Duration;

use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{Connection, ConnectionBuilder, Error};

fn connect_error(host: &str) -> String {
    match Connection::emulator(host, "p", "i") {
        Err(err @ Error::Connect { .. }) => {
            let cause = std::error::Error::source(&err).map(ToString::to_string);
            format!("{err}: {}", cause.unwrap_or_default())
        }
        Err(other) => panic!("{host:?}: expected Error::Connect, got {other:?}"),
        Ok(_) => panic!("{host:?}: accepted"),
    }
}

/// The message alone, as a caller printing `{err}` sees it.
fn connect_message(host: &str) -> String {
    match Connection::emulator(host, "p", "i") {
        Err(err @ Error::Connect { .. }) => err.to_string(),
        Err(other) => panic!("{host:?}: expected Error::Connect, got {other:?}"),
        Ok(_) => panic!("{host:?}: accepted"),
    }
}

#[tokio::test]
async fn bad_emulator_hosts_are_connect_errors_saying_why() {
    for (host, why) in [
        ("::::", "is not a number from 1 to 65535"),
        ("[::1:8086", "not a host name or address"),
        ("", "empty"),
        ("a b:1", "white space"),
        ("http://127.0.0.1:8086", "without a scheme"),
        ("127.0.0.1:99999", "not a number from 1 to 65535"),
        ("127.0.0.1", "no port"),
        ("::1:8086", "IPv6 address goes in brackets"),
    ] {
        let message = connect_error(host);
        assert!(message.contains(why), "{host:?}: {message}");
        assert!(message.contains("HOST:PORT"), "{host:?}: {message}");
        // Nothing was tried: the message says the address is wrong, and how.
        let alone = connect_message(host);
        assert!(
            alone.starts_with("malformed Bigtable address") && alone.contains(why),
            "{host:?}: {alone}"
        );
    }
    for good in [
        "127.0.0.1:8086",
        "[::1]:8086",
        "bigtable:8086",
        "localhost:1",
    ] {
        assert!(
            Connection::emulator(good, "p", "i").is_ok(),
            "{good:?} refused"
        );
    }
}

#[test]
fn outside_a_tokio_runtime_it_is_an_error_not_a_panic() {
    let message = connect_error("127.0.0.1:8086");
    assert!(message.contains("within a Tokio runtime"), "{message}");
}

/// A builder toward an emulator address that is never dialled.
fn builder() -> ConnectionBuilder {
    Connection::builder("p", "i").emulator("127.0.0.1:9")
}

#[tokio::test]
async fn out_of_range_settings_are_typed_errors_saying_the_range() {
    let max = ConnectionBuilder::MAX_DURATION;
    let ok = Duration::from_secs(20);
    let cases: Vec<(ConnectionBuilder, &str, &str)> = vec![
        (
            builder().pool_size(0),
            "pool_size",
            "from 1 to 200 connections",
        ),
        (
            builder().pool_size(201),
            "pool_size",
            "from 1 to 200 connections",
        ),
        (
            builder().pool_size(2_000),
            "pool_size",
            "from 1 to 200 connections",
        ),
        (
            builder().pool_size(usize::MAX),
            "pool_size",
            "from 1 to 200 connections",
        ),
        (
            builder().keep_alive(Duration::MAX, Duration::MAX),
            "keep_alive.interval",
            "from 10s to 1day",
        ),
        (
            builder().keep_alive(Duration::from_secs(1), ok),
            "keep_alive.interval",
            "from 10s to 1day",
        ),
        (
            builder().keep_alive(ok, Duration::MAX),
            "keep_alive.timeout",
            "from 1s to 1day",
        ),
        (
            builder().keep_alive(ok, Duration::ZERO),
            "keep_alive.timeout",
            "from 1s to 1day",
        ),
        (
            builder().retry(RetryPolicy::default().with_deadline(Duration::MAX)),
            "retry.deadline",
            "from 1ms to 1day",
        ),
        (
            builder().retry(RetryPolicy::default().with_attempt_timeout(Duration::ZERO)),
            "retry.attempt_timeout",
            "from 1ms to 1day",
        ),
        (
            builder().retry(RetryPolicy::default().with_max_delay(max + Duration::from_secs(1))),
            "retry.max_delay",
            "from 0s to 1day",
        ),
        (
            builder().retry(RetryPolicy::default().with_initial_delay(Duration::MAX)),
            "retry.initial_delay",
            "from 0s to 1day",
        ),
        (
            builder().retry(RetryPolicy::default().with_max_attempts(0)),
            "retry.max_attempts",
            "at least 1",
        ),
        (
            builder().admin_retry(RetryPolicy::default().with_deadline(Duration::MAX)),
            "admin_retry.deadline",
            "from 1ms to 1day",
        ),
    ];
    for (b, setting, allowed) in cases {
        match b.connect().await {
            Err(err @ Error::InvalidSetting { .. }) => {
                let Error::InvalidSetting(e) = &err else {
                    unreachable!()
                };
                assert_eq!(e.setting, setting, "{err}");
                let message = err.to_string();
                assert!(
                    message.contains(setting) && message.contains(allowed),
                    "{message}"
                );
            }
            Err(other) => panic!("{setting}: expected InvalidSetting, got {other:?}"),
            Ok(_) => panic!("{setting}: {allowed}: accepted"),
        }
    }
}

#[tokio::test]
async fn the_bounds_themselves_are_accepted() {
    let max = ConnectionBuilder::MAX_DURATION;
    for b in [
        builder().pool_size(1),
        builder().pool_size(ConnectionBuilder::MAX_POOL_SIZE),
        builder().keep_alive(
            ConnectionBuilder::MIN_KEEP_ALIVE_INTERVAL,
            ConnectionBuilder::MIN_KEEP_ALIVE_TIMEOUT,
        ),
        builder().keep_alive(max, max),
        builder().retry(
            RetryPolicy::none()
                .with_attempt_timeout(Duration::from_millis(1))
                .with_deadline(max)
                .with_initial_delay(Duration::ZERO)
                .with_max_delay(max),
        ),
    ] {
        let debug = format!("{b:?}");
        b.connect().await.unwrap_or_else(|e| panic!("{debug}: {e}"));
    }
}
