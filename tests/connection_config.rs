//! Bad connection settings are typed errors saying what is wrong, never a
//! panic inside a dependency. Pure: nothing is sent.

use bigtable_ttl::{Connection, Error};

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
