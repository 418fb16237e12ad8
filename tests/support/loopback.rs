//! The tests' own servers (the fault-injecting proxy, the recorder, the
//! scripted Bigtable) listen on loopback only and forward to loopback
//! only: never another address.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::net::TcpListener;

/// `upstream` (`HOST:PORT`, `localhost` or a loopback address) as a socket
/// address. Panics on any other address: the `forwarder` (a proxy, a
/// recorder) only forwards to loopback.
pub fn upstream(upstream: &str, forwarder: &str) -> SocketAddr {
    let upstream: SocketAddr = upstream
        .replace("localhost", "127.0.0.1")
        .parse()
        .expect("upstream is HOST:PORT");
    assert!(
        upstream.ip().is_loopback(),
        "the {forwarder} only forwards to loopback"
    );
    upstream
}

/// A listener on a free loopback port, and its address. Call inside a
/// tokio runtime.
pub async fn listen() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    (listener, addr)
}
