//! The null server: a gRPC server on loopback that answers Bigtable's data
//! calls doing as little as it can, so that the client is what limits a
//! benchmark against it.
//!
//! * `MutateRows`: the request's entries are counted (skipped over, never
//!   decoded) and each is answered `OK`;
//! * `ReadRows` on a table named `…/tables/events_<n>`: the workload's first
//!   `n` rows, from frames encoded once at startup for each `n` of
//!   `--rows` (no other table is served: `NOT_FOUND`), whatever rows the
//!   request names (a `get` of the first row's key on `events_1` is
//!   answered that row);
//! * `MutateRow`: `OK`; `CheckAndMutateRow`: `OK`, the predicate not
//!   matched (the single-row latency bench's `put` and `insert_if_absent`);
//! * anything else: `UNIMPLEMENTED`.
//!
//! Every call's method is counted, and the first call of each is logged to
//! stderr, so what a client sends first (a ping, a metadata read) shows up.
//! The last request message of each method but `MutateRows` is kept, for
//! the tests that compare what two clients send.
//! It prints `listening HOST:PORT` on stdout once it accepts connections;
//! when its stdin closes it prints, as one JSON line, the calls per method
//! and the entries acknowledged per table, and exits.
//!
//! It runs on one thread (a current-thread runtime): on a small machine the
//! clients get the other cores.
//!
//! With `--tls CA_FILE` it serves TLS only (a certificate for `localhost`
//! signed by a CA made at startup, whose PEM it writes to `CA_FILE` for the
//! clients to trust); with `--token SECRET` every call must carry
//! `authorization: Bearer SECRET` (else `UNAUTHENTICATED`), as every call to
//! Cloud Bigtable carries an access token.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::io::{BufRead as _, Write as _};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use chrono::Utc;
use futures_util::stream;
use http_body_util::{BodyExt as _, Empty, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;

use super::wire::{
    count_entries, first_message, grpc_frame, mutate_rows_success, read_rows_frames, table_name,
};

/// What a read table's name starts with; the row count follows.
pub(crate) const READ_TABLE_PREFIX: &str = "events_";
/// The size the `ReadRows` answers are cut at: a message holds the rows
/// that fit in about this many bytes.
const MESSAGE_BYTES: usize = 64 * 1024;
/// HTTP/2 windows the server grants: large, so a client is never made to
/// wait for a window update while it sends.
const STREAM_WINDOW_BYTES: u32 = 8 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 16 << 20;

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

#[derive(Default)]
struct Counts {
    calls: BTreeMap<String, u64>,
    entries: BTreeMap<String, u64>,
}

pub(crate) struct State {
    /// The encoded answer for each row count served.
    reads: HashMap<usize, Arc<[Bytes]>>,
    counts: Mutex<Counts>,
    /// The last request message of each method (but `MutateRows`).
    last: Mutex<BTreeMap<String, Bytes>>,
    /// The headers of the last request of each method (tests only: the
    /// benchmarks' server does not pay for copying them).
    #[cfg(test)]
    last_headers: Mutex<BTreeMap<String, hyper::HeaderMap>>,
    /// The `authorization` header every call must carry, if any.
    bearer: Option<HeaderValue>,
}

impl State {
    /// The answers to read tables of `row_counts` rows, the workload
    /// written now.
    pub(crate) fn new(row_counts: &[usize]) -> Self {
        let written = Utc::now();
        Self {
            reads: row_counts
                .iter()
                .map(|&n| (n, read_rows_frames(n, written, MESSAGE_BYTES).into()))
                .collect(),
            counts: Mutex::default(),
            last: Mutex::default(),
            #[cfg(test)]
            last_headers: Mutex::default(),
            bearer: None,
        }
    }

    /// Every call refused unless it carries `Bearer {token}`.
    pub(crate) fn with_token(mut self, token: &str) -> Result<Self, String> {
        self.bearer = Some(
            HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|e| format!("--token: not a header value: {e}"))?,
        );
        Ok(self)
    }

    #[cfg(test)]
    /// The headers of the last request of `method`.
    pub(crate) fn last_headers(&self, method: &str) -> Option<hyper::HeaderMap> {
        self.last_headers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(method)
            .cloned()
    }

    #[cfg(test)]
    /// The last request message of `method` (a full path,
    /// `/google.bigtable.v2.Bigtable/MutateRow`), as it came on the wire.
    pub(crate) fn last_request(&self, method: &str) -> Option<Bytes> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(method)
            .cloned()
    }

    /// Calls per method and entries per table so far, as JSON.
    fn counts(&self) -> serde_json::Value {
        let counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        json!({"calls": counts.calls, "entries": counts.entries})
    }
}

/// Run the server until stdin closes: `ttl-bench null-server --rows
/// 100000,1 [--tls CA_FILE] [--token SECRET]`.
pub(crate) fn main(
    row_counts: &[usize],
    tls_ca_out: Option<&std::path::Path>,
    token: Option<&str>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut state = State::new(row_counts);
    if let Some(token) = token {
        state = state.with_token(token)?;
    }
    let state = Arc::new(state);
    let tls = match tls_ca_out {
        Some(path) => {
            let (config, ca_pem) = super::tls::server_config()?;
            std::fs::write(path, ca_pem)?;
            Some(config)
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    println!("listening {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    {
        let state = state.clone();
        std::thread::spawn(move || {
            // Until the driver closes our stdin.
            for _ in std::io::stdin().lock().lines() {}
            println!("{}", state.counts());
            let _ = std::io::stdout().flush();
            std::process::exit(0);
        });
    }
    Ok(runtime.block_on(serve(listener, state, tls))?)
}

/// Answer every connection `listener` accepts, over TLS with `tls`.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
) -> std::io::Result<()> {
    loop {
        let (socket, _) = listener.accept().await?;
        socket.set_nodelay(true)?;
        let state = state.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => connection(socket, state).await,
                Some(config) => {
                    match tokio_rustls::TlsAcceptor::from(config).accept(socket).await {
                        Ok(stream) => connection(stream, state).await,
                        Err(e) => eprintln!("null server: TLS handshake: {e}"),
                    }
                }
            }
        });
    }
}

/// Serve one connection's calls.
async fn connection<Io>(io: Io, state: Arc<State>)
where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(answer(&state, request).await) }
    });
    let served = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .max_frame_size(1 << 20)
        .serve_connection(TokioIo::new(io), service)
        .await;
    if let Err(e) = served {
        // A client going away mid-call is normal at its exit.
        if !e.to_string().contains("connection") {
            eprintln!("null server: {e}");
        }
    }
}

/// A gRPC answer: the frames, then `grpc-status: 0`.
fn ok(frames: impl Iterator<Item = Bytes> + Send + Sync + 'static) -> Response<Body> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let frames = frames
        .map(|f| Ok(Frame::data(f)))
        .chain(std::iter::once(Ok(Frame::trailers(trailers))));
    let mut response = Response::new(StreamBody::new(stream::iter(frames)).boxed());
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    response
}

/// A trailers-only gRPC error.
fn error(code: u8, message: &str) -> Response<Body> {
    let mut response = Response::new(Empty::new().boxed());
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-status", HeaderValue::from(u16::from(code)));
    if let Ok(message) = HeaderValue::from_str(&message.replace(['\r', '\n'], " ")) {
        headers.insert("grpc-message", message);
    }
    response
}

const MUTATE_ROWS: &str = "/google.bigtable.v2.Bigtable/MutateRows";
const NOT_FOUND: u8 = 5;
const UNAUTHENTICATED: u8 = 16;
const UNIMPLEMENTED: u8 = 12;
const INTERNAL: u8 = 13;

async fn answer(state: &State, request: Request<Incoming>) -> Response<Body> {
    let method = request.uri().path().to_owned();
    let first = {
        let mut counts = state
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let calls = counts.calls.entry(method.clone()).or_default();
        *calls += 1;
        *calls == 1
    };
    if first {
        eprintln!("null server: first call to {method}");
    }
    if let Some(bearer) = &state.bearer {
        if request.headers().get("authorization") != Some(bearer) {
            return error(UNAUTHENTICATED, "no bearer token, or not the server's");
        }
    }
    #[cfg(test)]
    state
        .last_headers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(method.clone(), request.headers().clone());
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => return error(INTERNAL, &format!("reading the request: {e}")),
    };
    let message = match first_message(&body) {
        Ok(message) => message,
        Err(e) => return error(INTERNAL, &e),
    };
    if method != MUTATE_ROWS {
        state
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(method.clone(), Bytes::copy_from_slice(message));
    }
    match method.as_str() {
        MUTATE_ROWS => match count_entries(message) {
            Ok((n, table)) => {
                *state
                    .counts
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .entries
                    .entry(short_name(&table).to_owned())
                    .or_default() += n as u64;
                ok(std::iter::once(mutate_rows_success(n)))
            }
            Err(e) => error(INTERNAL, &e),
        },
        "/google.bigtable.v2.Bigtable/ReadRows" => {
            let table = table_name(message).unwrap_or_default();
            let frames = short_name(&table)
                .strip_prefix(READ_TABLE_PREFIX)
                .and_then(|n| n.parse().ok())
                .and_then(|n: usize| state.reads.get(&n));
            match frames {
                Some(frames) => {
                    let frames = frames.clone();
                    ok((0..frames.len()).map(move |i| frames[i].clone()))
                }
                None => error(
                    NOT_FOUND,
                    &format!("the null server serves no table {table:?}"),
                ),
            }
        }
        // Empty messages: `MutateRowResponse`, and a `CheckAndMutateRowResponse`
        // whose predicate did not match.
        "/google.bigtable.v2.Bigtable/MutateRow"
        | "/google.bigtable.v2.Bigtable/CheckAndMutateRow" => ok(std::iter::once(grpc_frame(&[]))),
        other => error(
            UNIMPLEMENTED,
            &format!("the null server does not answer {other}"),
        ),
    }
}

/// `projects/p/instances/i/tables/t` → `t`.
fn short_name(table: &str) -> &str {
    table.rsplit('/').next().unwrap_or(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigtable_ttl::{Connection, Scan, Table};
    use futures_util::TryStreamExt as _;
    use ttl_bench::{event, Event};

    /// The library's own client, through the null server: every row
    /// written is acknowledged and counted, every row read decodes into
    /// the workload's, and a single-row write is acknowledged.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_library_writes_and_reads_through_it() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let state = Arc::new(State::new(&[1, 1234]));
        tokio::spawn(serve(listener, state.clone(), None));
        let conn = Connection::emulator(&host, "p", "i").unwrap();

        let now = Utc::now();
        let mut writer = Table::<Event>::new(conn.clone()).with_name("w").writer();
        for i in 0..2500 {
            writer.send(&event(i, now)).await.unwrap();
        }
        assert_eq!(writer.finish().await.unwrap().rows_written, 2500);

        let read: Vec<Event> = Table::<Event>::new(conn.clone())
            .with_name("events_1234")
            .stream(Scan::all())
            .map_ok(|e| e.value)
            .try_collect()
            .await
            .unwrap();
        assert_eq!(read.len(), 1234);
        assert_eq!(read[1233].clicks, 7 * 1233);
        assert_eq!(read[17].url, event(17, now).url);

        let missing = Table::<Event>::new(conn.clone())
            .with_name("events_99")
            .scan(Scan::all())
            .await;
        assert!(missing.is_err(), "no table of 99 rows is served");
        Table::<Event>::new(conn)
            .with_name("w")
            .put(&event(1, now))
            .await
            .unwrap();

        let counts = state.counts();
        assert_eq!(counts["entries"]["w"], 2500);
        assert!(counts["calls"]["/google.bigtable.v2.Bigtable/MutateRow"].as_u64() >= Some(1));
    }

    /// Over TLS, the library trusts the server by the CA's PEM and its
    /// token gets every call through; a wrong token gets none.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tls_and_a_token_are_required_and_enough() {
        use super::super::client::{connection, Secure, Target};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let state = Arc::new(State::new(&[3]).with_token("right").unwrap());
        let (config, ca_pem) = super::super::tls::server_config().unwrap();
        tokio::spawn(serve(listener, state.clone(), Some(config)));
        let now = Utc::now();
        for (token, accepted) in [("right", true), ("wrong", false)] {
            let secure = Secure {
                ca_pem: ca_pem.clone().into_bytes(),
                token: token.to_owned(),
            };
            let target = Target {
                host: &host,
                secure: Some(&secure),
            };
            let table = Table::<Event>::new(connection(&target).await.unwrap());
            let put = table.clone().with_name(token).put(&event(1, now)).await;
            let read = table.with_name("events_3").scan(Scan::all()).await;
            assert_eq!(put.is_ok(), accepted, "{token}: {put:?}");
            assert_eq!(
                read.as_ref().map(Vec::len).ok(),
                accepted.then_some(3),
                "{token}"
            );
        }
    }
}
