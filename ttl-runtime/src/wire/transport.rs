//! The data channel's HTTP/2 connections, straight on hyper.
//!
//! tonic's `Channel` puts a queue (`tower::buffer`: a task, a channel and
//! a one-shot answer per request) and four layers (origin, user agent,
//! `grpc-timeout` read back from the headers, reconnect) in front of each
//! connection. For one request at a time that is about a twentieth of a
//! call's client work (issue 32, item 3), for nothing the data calls need:
//! hyper's HTTP/2 `SendRequest` takes requests from any number of tasks at
//! once, and every data call bounds its own wait. So [`Transport`] hands
//! each request to a live connection itself, connecting (or reconnecting)
//! on first use. The admin channel stays on tonic's `Channel`.
//!
//! What a request meets here, as with tonic's channel:
//! * a connection that cannot be made: `UNAVAILABLE`, naming the address
//!   and the operating system's reason, tried again by the next request;
//! * a connection that closes: the requests written to it fail as hyper
//!   says (a reset, an incomplete message); one it closed before writing
//!   is *cancelled* (see [`super::channel::never_sent`]), and the next
//!   request connects again;
//! * several connections (`pool_size`): requests go round them; one whose
//!   connection is being made (or made again) is passed over while another
//!   is live, and its connection is made all the same.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt as _, Shared};
use http::uri::{Authority, Scheme};
use hyper::client::conn::http2;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio_rustls::rustls;

use crate::model::error::BoxError;
use crate::wire::cause::{Cause, Unreachable};

/// What this library calls itself in `user-agent`, as tonic's channel
/// named tonic.
const USER_AGENT: &str = concat!("bigtable-ttl/", env!("CARGO_PKG_VERSION"));
/// The protocol a TLS server must agree to (ALPN).
const ALPN_H2: &[u8] = b"h2";

type Sender = http2::SendRequest<tonic::body::Body>;
/// A connection being made, shared by the requests that wait for it.
type Connecting = Shared<BoxFuture<'static, Result<Sender, Arc<tonic::Status>>>>;

/// How the connections are made: the address, TLS, HTTP/2 settings.
pub(crate) struct TransportConfig {
    /// `http://host:port` or `https://host[:port]`.
    pub(crate) uri: http::Uri,
    /// PEM root certificates trusted besides the system's (for `https`).
    pub(crate) extra_roots: Vec<Vec<u8>>,
    pub(crate) pool_size: usize,
    pub(crate) stream_window: u32,
    pub(crate) connection_window: u32,
    pub(crate) keep_alive: KeepAlive,
    /// How long making one connection may take ([`CONNECT_TIMEOUT`]).
    pub(crate) connect_timeout: Duration,
    /// An emulator's: a refused first connection is not worth retrying.
    pub(crate) emulator: bool,
}

/// HTTP/2 keep-alive of a connection: a PING every `interval`, the connection
/// dropped when one goes unanswered for `timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeepAlive {
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
    pub(crate) while_idle: bool,
}

impl Default for KeepAlive {
    /// What `bigtable_rs` and Google's clients use: a ping every 30 s, 10 s
    /// to answer, idle connections included.
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            while_idle: true,
        }
    }
}

/// A cheap-to-clone handle on the data channel's connections: a tower
/// service for tonic's `Grpc` client.
#[derive(Clone)]
pub(crate) struct Transport {
    pool: Arc<Pool>,
}

struct Pool {
    scheme: Scheme,
    authority: Authority,
    connector: Arc<Connector>,
    slots: Box<[Mutex<Slot>]>,
    /// Whose turn the next request is: requests go round the slots.
    next: AtomicUsize,
    /// Numbers the connection attempts, so that an attempt settles only
    /// the slot it was made for, not a later attempt's.
    attempts: AtomicUsize,
}

/// One connection of the pool, numbered by the attempt that made it.
enum Slot {
    Idle,
    /// The attempt, shared by the requests waiting for it, and its task
    /// (aborted when the pool goes).
    Connecting(usize, Connecting, tokio::task::AbortHandle),
    Live(usize, Sender),
}

/// Where a request goes: a live connection (its slot and attempt, to
/// forget it by if it turns the request away), or one being made.
enum Pick {
    Live(usize, usize, Sender),
    Wait(Connecting),
}

/// What a connection is made of.
struct Connector {
    host: String,
    port: u16,
    /// TCP as tonic's channel made it (hyper-util's connector, already
    /// built for tonic): no Nagle delay, and when a name has addresses of
    /// both families, the second tried 300 ms after the first rather than
    /// after the first's connect gives up (minutes, where packets to one
    /// family are dropped).
    tcp: HttpConnector,
    /// `http://host:port`, what the TCP connector is asked for.
    tcp_target: http::Uri,
    tls: Option<Tls>,
    http2: http2::Builder<Boxed>,
    timeout: Duration,
    emulator: bool,
    /// Whether a connection was ever made: before, a refused emulator is
    /// one not started ([`Unreachable::first`]).
    reached: AtomicBool,
}

/// How long making one connection may take, TCP, TLS and the HTTP/2
/// handshake together: an address that drops packets, or a server that
/// takes the connection and never answers TLS, fails the attempt (and the
/// requests waiting for it) and leaves the slot to the next request's turn
/// rather than holding it for good.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

struct Tls {
    connector: tokio_rustls::TlsConnector,
    name: rustls::pki_types::ServerName<'static>,
}

impl Transport {
    /// The connections `config` describes, none made yet.
    ///
    /// # Errors
    /// A URI without a scheme or host, a scheme other than `http` and
    /// `https`, a PEM certificate block that does not parse, no trusted
    /// root at all, or a host that is no TLS server name. (Bytes holding no
    /// PEM certificate block add no root and are no error, as with tonic.)
    pub(crate) fn new(config: TransportConfig) -> Result<Self, BoxError> {
        let parts = config.uri.into_parts();
        let scheme = parts.scheme.ok_or("the data endpoint has no scheme")?;
        let authority = parts.authority.ok_or("the data endpoint has no host")?;
        // An IPv6 host without its brackets: as a socket address and a
        // TLS server name take it.
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let tls = match scheme.as_str() {
            "http" => None,
            "https" => Some(tls(host, &config.extra_roots)?),
            other => {
                return Err(format!(
                    "the data endpoint's scheme {other:?} is neither http nor https"
                )
                .into())
            }
        };
        let port = authority
            .port_u16()
            .unwrap_or_else(|| if tls.is_some() { 443 } else { 80 });
        let mut http2 = http2::Builder::new(Boxed);
        http2
            .timer(TokioTimer::new())
            .initial_stream_window_size(config.stream_window)
            .initial_connection_window_size(config.connection_window)
            .keep_alive_interval(config.keep_alive.interval)
            .keep_alive_timeout(config.keep_alive.timeout)
            .keep_alive_while_idle(config.keep_alive.while_idle);
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        let connector = Connector {
            host: host.to_owned(),
            port,
            tcp,
            tcp_target: format!("http://{}:{port}", authority.host()).parse()?,
            tls,
            http2,
            timeout: config.connect_timeout,
            emulator: config.emulator,
            reached: AtomicBool::new(false),
        };
        Ok(Self {
            pool: Arc::new(Pool {
                scheme,
                authority,
                connector: Arc::new(connector),
                slots: (0..config.pool_size.max(1))
                    .map(|_| Mutex::new(Slot::Idle))
                    .collect(),
                next: AtomicUsize::new(0),
                attempts: AtomicUsize::new(0),
            }),
        })
    }
}

impl Transport {
    /// The endpoint's host, as its URI writes it (an IPv6 one in brackets).
    pub(crate) fn host(&self) -> &str {
        self.pool.authority.host()
    }

    /// The endpoint's port, the scheme's when the URI names none.
    pub(crate) fn port(&self) -> u16 {
        self.pool.connector.port
    }
}

/// The TLS client for `host` (an IPv6 one without brackets): the system's roots and `extra_roots`, HTTP/2
/// by ALPN, ring's cryptography (as tonic's `tls-ring`).
fn tls(host: &str, extra_roots: &[Vec<u8>]) -> Result<Tls, BoxError> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::CertificateDer;

    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    for pem in extra_roots {
        for cert in CertificateDer::pem_slice_iter(pem) {
            roots.add(cert.map_err(|e| format!("a trusted root certificate is not PEM: {e}"))?)?;
        }
    }
    if roots.is_empty() {
        return Err("no trusted root certificate: none found on this system and none given".into());
    }
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols.push(ALPN_H2.to_vec());
    Ok(Tls {
        connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
        name: rustls::pki_types::ServerName::try_from(host.to_owned())?,
    })
}

impl Pool {
    /// Where the next request goes: the connection whose turn it is when
    /// it is live; when it is not, an attempt to make it is under way (one
    /// is started, and runs whether or not a request waits for it) and
    /// another live connection takes the request; when none is live, the
    /// request waits for that attempt.
    fn pick(self: &Arc<Self>) -> Pick {
        let n = self.slots.len();
        let turn = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let connecting = {
            let mut slot = lock(&self.slots[turn]);
            match &*slot {
                Slot::Live(attempt, sender) if !sender.is_closed() => {
                    return Pick::Live(turn, *attempt, sender.clone());
                }
                Slot::Connecting(_, connecting, _) => connecting.clone(),
                Slot::Live(..) | Slot::Idle => self.start(turn, &mut slot),
            }
        };
        self.live(Some(turn)).unwrap_or(Pick::Wait(connecting))
    }

    /// A live connection, not slot `besides`'s, if there is one.
    fn live(&self, besides: Option<usize>) -> Option<Pick> {
        let n = self.slots.len();
        let start = besides.map_or(0, |b| b + 1);
        (0..n).find_map(|i| {
            let index = (start + i) % n;
            if Some(index) == besides {
                return None;
            }
            match &*lock(&self.slots[index]) {
                Slot::Live(attempt, sender) if !sender.is_closed() => {
                    Some(Pick::Live(index, *attempt, sender.clone()))
                }
                _ => None,
            }
        })
    }

    /// Slot `index`'s connection, made by `attempt`, turned a request away
    /// unsent (it is closing: a `GOAWAY`, say, that hyper has not yet
    /// reported as closed): the slot is made again at its next turn.
    fn forget(&self, index: usize, attempt: usize) {
        let mut slot = lock(&self.slots[index]);
        if matches!(&*slot, Slot::Live(a, _) if *a == attempt) {
            *slot = Slot::Idle;
        }
    }

    /// Start making slot `index`'s connection, spawned: it goes on when
    /// the request that started it is served elsewhere or gives up, and
    /// settles the slot (live, or idle again after a failure).
    fn start(self: &Arc<Self>, index: usize, slot: &mut Slot) -> Connecting {
        let attempt = self.attempts.fetch_add(1, Ordering::Relaxed);
        // Weak: the attempt sits in the pool's slot until it ends.
        let pool = Arc::downgrade(self);
        let connector = Arc::clone(&self.connector);
        let connecting = async move {
            let made = connect(connector).await;
            if let Some(pool) = pool.upgrade() {
                let mut slot = lock(&pool.slots[index]);
                if matches!(&*slot, Slot::Connecting(a, ..) if *a == attempt) {
                    *slot = match &made {
                        Ok(sender) => Slot::Live(attempt, sender.clone()),
                        Err(_) => Slot::Idle,
                    };
                }
            }
            if let Err(status) = &made {
                tracing::debug!(%status, "a data connection could not be made");
            }
            made
        }
        .boxed()
        .shared();
        let task = tokio::spawn(connecting.clone()).abort_handle();
        *slot = Slot::Connecting(attempt, connecting.clone(), task);
        connecting
    }
}

impl Drop for Pool {
    /// Attempts under way end with the pool: nothing would use what they
    /// make.
    fn drop(&mut self) {
        for slot in &*self.slots {
            if let Slot::Connecting(_, _, task) = &*lock(slot) {
                task.abort();
            }
        }
    }
}

/// A slot's lock, whatever a panicking holder left: a slot is always in a
/// usable state.
fn lock(slot: &Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One connection, made within the connect timeout: TCP, TLS where
/// configured, the HTTP/2 handshake; the connection's task spawned on the
/// runtime.
async fn connect(connector: Arc<Connector>) -> Result<Sender, Arc<tonic::Status>> {
    let address = if connector.host.contains(':') {
        format!("[{}]:{}", connector.host, connector.port)
    } else {
        format!("{}:{}", connector.host, connector.port)
    };
    let unavailable = |what: &str, e: BoxError| {
        let mut status =
            tonic::Status::unavailable(format!("{what} {address}: {}", Cause::of(&*e).chain()));
        status.set_source(Arc::new(Unreachable {
            address: address.clone(),
            first: connector.emulator && !connector.reached.load(Ordering::Relaxed),
            source: e,
        }));
        Arc::new(status)
    };
    let timeout = connector.timeout;
    match tokio::time::timeout(timeout, handshakes(&connector)).await {
        Ok(Ok(sender)) => {
            connector.reached.store(true, Ordering::Relaxed);
            Ok(sender)
        }
        Ok(Err((what, e))) => Err(unavailable(what, e)),
        Err(_) => Err(unavailable(
            "cannot connect to",
            format!("no connection within {timeout:?}").into(),
        )),
    }
}

/// TCP, TLS and HTTP/2, in turn; a failure names its step.
async fn handshakes(connector: &Connector) -> Result<Sender, (&'static str, BoxError)> {
    let tcp =
        tower_service::Service::call(&mut connector.tcp.clone(), connector.tcp_target.clone())
            .await
            .map_err(|e| ("cannot connect to", e.into()))?
            .into_inner();
    let Some(tls) = &connector.tls else {
        return http2_over(&connector.http2, TokioIo::new(tcp)).await;
    };
    let stream = tls
        .connector
        .connect(tls.name.clone(), tcp)
        .await
        .map_err(|e| ("no TLS session with", e.into()))?;
    if stream.get_ref().1.alpn_protocol() != Some(ALPN_H2) {
        return Err((
            "no HTTP/2 over TLS with",
            "the server did not agree to h2 (ALPN)".into(),
        ));
    }
    http2_over(&connector.http2, TokioIo::new(stream)).await
}

/// The HTTP/2 handshake over `io` (TCP, or TLS over it), the connection
/// then driven by a task of its own.
async fn http2_over<T>(
    http2: &http2::Builder<Boxed>,
    io: T,
) -> Result<Sender, (&'static str, BoxError)>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = http2
        .handshake(io)
        .await
        .map_err(|e| ("no HTTP/2 handshake with", e.into()))?;
    tokio::spawn(drive(connection));
    Ok(sender)
}

/// hyper's executor: each request's body and answer get a task of their
/// own, spawned boxed. Moved unboxed into the runtime's task, the futures
/// (a request body's pipe is about a kilobyte) were copied several times
/// on each spawn: 4.8 M instructions over 1,050 calls against 1.9 M.
#[derive(Clone, Copy)]
struct Boxed;

impl<F> hyper::rt::Executor<F> for Boxed
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        tokio::spawn(Box::pin(future));
    }
}

/// Run a connection until it closes; why it closed goes to the log (its
/// requests have their own errors).
async fn drive<F: Future<Output = hyper::Result<()>>>(connection: F) {
    if let Err(e) = connection.await {
        tracing::debug!(error = %e, "a data connection closed");
    }
}

impl tower_service::Service<http::Request<tonic::body::Body>> for Transport {
    /// The body as tonic's channel gives it: hyper's errors become
    /// statuses there.
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    /// Always ready: a request waits for its connection in its own future,
    /// bounded by its caller's timeout.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let (mut head, body) = request.into_parts();
        let mut uri = std::mem::take(&mut head.uri).into_parts();
        uri.scheme = Some(self.pool.scheme.clone());
        uri.authority = Some(self.pool.authority.clone());
        head.uri = match http::Uri::from_parts(uri) {
            Ok(uri) => uri,
            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
        };
        head.headers.insert(
            http::header::USER_AGENT,
            http::HeaderValue::from_static(USER_AGENT),
        );
        let request = http::Request::from_parts(head, body);
        let pool = Arc::clone(&self.pool);
        Box::pin(async move { send(&pool, request).await })
    }
}

/// Send `request` on the connection its turn gives it, waiting for one to
/// be made when none is live. A request a connection turns away unsent (it
/// is closing) goes to the next; after [`SENDS`] turns, the last refusal
/// is the answer (hyper's "cancelled": never written, safe to send again).
async fn send(
    pool: &Arc<Pool>,
    mut request: http::Request<tonic::body::Body>,
) -> Result<http::Response<tonic::body::Body>, BoxError> {
    let mut turns = 0;
    loop {
        turns += 1;
        let (mut sender, forget) = match pool.pick() {
            Pick::Live(index, attempt, sender) => (sender, Some((index, attempt))),
            Pick::Wait(connecting) => match connecting.await {
                Ok(sender) => (sender, None),
                // That attempt failed: a connection made meanwhile serves.
                Err(status) => match pool.live(None) {
                    Some(Pick::Live(index, attempt, sender)) => (sender, Some((index, attempt))),
                    _ => return Err((*status).clone().into()),
                },
            },
        };
        match sender.try_send_request(request).await {
            Ok(response) => return Ok(response.map(tonic::body::Body::new)),
            Err(mut refused) => match refused.take_message() {
                Some(unsent) if turns < SENDS => {
                    if let Some((index, attempt)) = forget {
                        pool.forget(index, attempt);
                    }
                    request = unsent;
                }
                _ => return Err(refused.into_error().into()),
            },
        }
    }
}

/// Connections a request is offered to before a refusal is its answer.
const SENDS: usize = 3;

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field(
                "endpoint",
                &format_args!("{}://{}", self.pool.scheme, self.pool.authority),
            )
            .field("connections", &self.pool.slots.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use tower_service::Service as _;

    /// A loopback listener that counts the connections it accepts and
    /// `keep`s them open, never answering, or closes them at once.
    async fn listener(keep: bool) -> (u16, Arc<AtomicU64>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&accepted);
        tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                if keep {
                    open.push(socket);
                }
            }
        });
        (port, accepted)
    }

    fn transport(port: u16, pool_size: usize) -> Transport {
        Transport::new(TransportConfig {
            uri: format!("http://127.0.0.1:{port}").parse().unwrap(),
            extra_roots: Vec::new(),
            pool_size,
            stream_window: 1 << 20,
            connection_window: 1 << 20,
            keep_alive: KeepAlive::default(),
            connect_timeout: CONNECT_TIMEOUT,
            emulator: false,
        })
        .unwrap()
    }

    /// `n` requests at once, each given up after `wait`.
    async fn send(transport: &Transport, n: usize, wait: Duration) -> Vec<Option<tonic::Status>> {
        let calls = (0..n).map(|_| {
            let mut transport = transport.clone();
            async move {
                let request = http::Request::builder()
                    .uri("/google.bigtable.v2.Bigtable/MutateRow")
                    .body(tonic::body::Body::empty())
                    .unwrap();
                match tokio::time::timeout(wait, transport.call(request)).await {
                    Ok(Err(e)) => Some(tonic::Status::from_error(e)),
                    Ok(Ok(_)) | Err(_) => None,
                }
            }
        });
        futures_util::future::join_all(calls).await
    }

    #[tokio::test]
    async fn requests_at_once_on_one_connection_open_it_once() {
        let (port, accepted) = listener(true).await;
        let errors = send(&transport(port, 1), 10, Duration::from_millis(300)).await;
        assert!(errors.iter().all(Option::is_none), "{errors:?}");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn requests_take_the_pools_connections_in_turn() {
        let (port, accepted) = listener(true).await;
        let transport = transport(port, 3);
        send(&transport, 9, Duration::from_millis(300)).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
        // Live now: more requests open nothing more.
        send(&transport, 9, Duration::from_millis(100)).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_connection_refused_is_unavailable_and_tried_again_by_the_next_request() {
        let port = {
            let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            taken.local_addr().unwrap().port()
        };
        let transport = transport(port, 1);
        for _ in 0..2 {
            let errors = send(&transport, 1, Duration::from_secs(10)).await;
            let status = errors[0].as_ref().expect("nothing listens there");
            assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
            assert!(
                status.message().contains(&format!("127.0.0.1:{port}")),
                "{status:?}"
            );
            assert!(status.message().contains("refused"), "{status:?}");
            // The operating system's error is in the chain, for the
            // library's errors to name (see `model::error`).
            let mut source = std::error::Error::source(status);
            let mut io = false;
            while let Some(e) = source {
                io |= e.is::<std::io::Error>();
                source = e.source();
            }
            assert!(io, "{status:?}");
        }
    }

    #[tokio::test]
    async fn a_server_that_never_answers_tls_fails_the_attempt_at_the_connect_timeout() {
        const TIMEOUT: Duration = Duration::from_millis(300);
        let (port, accepted) = listener(true).await;
        let transport = Transport::new(TransportConfig {
            uri: format!("https://127.0.0.1:{port}").parse().unwrap(),
            extra_roots: Vec::new(),
            pool_size: 1,
            stream_window: 1 << 20,
            connection_window: 1 << 20,
            keep_alive: KeepAlive::default(),
            connect_timeout: TIMEOUT,
            emulator: false,
        })
        .unwrap();
        let started = tokio::time::Instant::now();
        let errors = send(&transport, 1, Duration::from_secs(20)).await;
        let status = errors[0].as_ref().expect("the attempt fails");
        assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
        assert!(status.message().contains("within"), "{status:?}");
        let took = started.elapsed();
        assert!(
            took >= TIMEOUT && took < Duration::from_secs(10),
            "{took:?}"
        );
        // The slot is free again: the next request makes a new attempt.
        send(&transport, 1, Duration::from_millis(10)).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_connection_closed_by_the_server_is_made_again() {
        let (port, accepted) = listener(false).await;
        let transport = transport(port, 1);
        // The server closes each connection at once: a request fails
        // (or waits, if the close is not seen in time), and the next
        // request's turn finds the connection closed and makes another.
        for _ in 0..3 {
            send(&transport, 1, Duration::from_millis(500)).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(accepted.load(Ordering::SeqCst) >= 2, "{accepted:?}");
    }
}
