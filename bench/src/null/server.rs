//! The null server: a gRPC server on loopback that answers Bigtable's data
//! calls doing as little as it can, so that the client is what limits a
//! benchmark against it. `MutateRows`: its entries counted (skipped over,
//! never decoded), each answered `OK`. `ReadRows` on `…/tables/events_<n>`:
//! the workload's first `n` rows, encoded at startup for each `n` of
//! `--rows`, whatever rows the request names (a `get` on `events_1` gets
//! the first row). `MutateRow`: `OK`; `CheckAndMutateRow`: `OK`, the
//! predicate not matched. Anything else: an error.
//!
//! The first call of each method is logged to stderr, so what a client
//! sends first (a ping, a metadata read) shows up. It prints `listening
//! HOST:PORT`, and when its stdin closes the calls per method and entries
//! per table as one JSON line. One thread: on a small machine the clients
//! get the other cores. `--tls CA_FILE`: TLS only, from a CA made at
//! startup whose PEM it writes there; `--token SECRET`: every call must
//! carry `authorization: Bearer SECRET`, as on Cloud Bigtable.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::io::{BufRead as _, Write as _};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bigtable_rs::google::bigtable::v2::read_rows_response::{cell_chunk::RowStatus, CellChunk};
use bigtable_rs::google::bigtable::v2::ReadRowsResponse;
use bigtable_rs::google::bigtable::v2::{mutate_rows_response, MutateRowsResponse};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use http_body_util::{combinators::BoxBody, BodyExt as _, Empty, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::encoding::{decode_key, skip_field, string, DecodeContext};
use prost::Message as _;
use serde_json::json;
use tokio_rustls::rustls;
use ttl_bench::{event, raw_row};

use crate::Res;

/// What a read table's name starts with; the row count follows.
pub(crate) const READ_TABLE_PREFIX: &str = "events_";
/// A `ReadRows` answer message holds the rows that fit in about this.
const MESSAGE_BYTES: usize = 64 * 1024;
/// Large HTTP/2 windows, so a client never waits for a window update.
const STREAM_WINDOW_BYTES: u32 = 8 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 16 << 20;
const MUTATE_ROWS: &str = "/google.bigtable.v2.Bigtable/MutateRows";
/// gRPC status codes.
const NOT_FOUND: u16 = 5;
const UNIMPLEMENTED: u16 = 12;
const INTERNAL: u16 = 13;
const UNAUTHENTICATED: u16 = 16;

type Body = BoxBody<Bytes, Infallible>;

#[derive(Default)]
struct Counts {
    calls: BTreeMap<String, u64>,
    entries: BTreeMap<String, u64>,
}

pub(crate) struct State {
    /// The encoded answer for each row count served.
    reads: HashMap<usize, Arc<[Bytes]>>,
    counts: Mutex<Counts>,
    last: Mutex<BTreeMap<String, Bytes>>,
    /// Tests only: the benchmarks' server does not pay for copying them.
    #[cfg(test)]
    last_headers: Mutex<BTreeMap<String, HeaderMap>>,
    bearer: Option<HeaderValue>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    /// The answers to read tables of `row_counts` rows, the workload
    /// written now; every call refused unless it carries `Bearer {token}`.
    pub(crate) fn new(row_counts: &[usize], token: Option<&str>) -> Result<Self, String> {
        let written = Utc::now();
        let bearer = token.map(|token| HeaderValue::from_str(&format!("Bearer {token}")));
        let bearer = bearer.transpose();
        Ok(Self {
            reads: (row_counts.iter())
                .map(|&n| (n, read_rows_frames(n, written, MESSAGE_BYTES).into()))
                .collect(),
            counts: Mutex::default(),
            last: Mutex::default(),
            #[cfg(test)]
            last_headers: Mutex::default(),
            bearer: bearer.map_err(|e| format!("--token: not a header value: {e}"))?,
        })
    }

    #[cfg(test)]
    pub(crate) fn last_headers(&self, method: &str) -> Option<HeaderMap> {
        lock(&self.last_headers).get(method).cloned()
    }

    /// The last request message of `method` (a full path,
    /// `/google.bigtable.v2.Bigtable/MutateRow`), as it came on the wire.
    #[cfg(test)]
    pub(crate) fn last_request(&self, method: &str) -> Option<Bytes> {
        lock(&self.last).get(method).cloned()
    }

    fn counts(&self) -> serde_json::Value {
        let counts = lock(&self.counts);
        json!({"calls": counts.calls, "entries": counts.entries})
    }
}

/// Run the server until stdin closes: `ttl-bench null-server --rows
/// 100000,1 [--tls CA_FILE] [--token SECRET]`.
pub(crate) fn main(
    row_counts: &[usize],
    tls_ca_out: Option<&std::path::Path>,
    token: Option<&str>,
) -> Res<()> {
    let state = Arc::new(State::new(row_counts, token)?);
    let mut tls = None;
    if let Some(path) = tls_ca_out {
        let (config, ca_pem) = tls_config()?;
        std::fs::write(path, ca_pem)?;
        tls = Some(config);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    println!("listening {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let counted = state.clone();
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines() {}
        println!("{}", counted.counts());
        let _ = std::io::stdout().flush();
        std::process::exit(0);
    });
    Ok(runtime.block_on(serve(listener, state, tls))?)
}

/// A certificate for `localhost` signed by a CA made here (HTTP/2 by ALPN,
/// as gRPC clients ask), and the CA's PEM.
pub(crate) fn tls_config() -> Res<(Arc<rustls::ServerConfig>, String)> {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let name = "ttl-bench null server CA";
    ca.distinguished_name.push(rcgen::DnType::CommonName, name);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate()?)?;
    let key = rcgen::KeyPair::generate()?;
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])?;
    let chain = vec![cert.signed_by(&key, &ca)?.der().clone(), ca.der().clone()];
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let ring = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(ring)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok((Arc::new(config), ca.pem()))
}

/// Answer every connection `listener` accepts, over TLS with `tls`.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> std::io::Result<()> {
    loop {
        let (socket, _) = listener.accept().await?;
        socket.set_nodelay(true)?;
        let (state, tls) = (state.clone(), tls.clone());
        tokio::spawn(async move {
            let Some(config) = tls else {
                return connection(socket, state).await;
            };
            match tokio_rustls::TlsAcceptor::from(config).accept(socket).await {
                Ok(stream) => connection(stream, state).await,
                Err(e) => eprintln!("null server: TLS handshake: {e}"),
            }
        });
    }
}

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
    // A client going away mid-call is normal at its exit.
    if let Err(e) = served.map_err(|e| e.to_string()) {
        if !e.contains("connection") {
            eprintln!("null server: {e}");
        }
    }
}

async fn answer(state: &State, request: Request<Incoming>) -> Response<Body> {
    let method = request.uri().path().to_owned();
    let first = {
        let mut counts = lock(&state.counts);
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
    lock(&state.last_headers).insert(method.clone(), request.headers().clone());
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => return error(INTERNAL, &format!("reading the request: {e}")),
    };
    let message = match first_message(&body) {
        Ok(message) => message,
        Err(e) => return error(INTERNAL, &e),
    };
    if method != MUTATE_ROWS {
        lock(&state.last).insert(method.clone(), Bytes::copy_from_slice(message));
    }
    match method.as_str() {
        MUTATE_ROWS => match table_and_entries(message) {
            Ok((table, n)) => {
                let mut counts = lock(&state.counts);
                *counts
                    .entries
                    .entry(short_name(&table).to_owned())
                    .or_default() += n as u64;
                ok(std::iter::once(mutate_rows_success(n)))
            }
            Err(e) => error(INTERNAL, &e),
        },
        "/google.bigtable.v2.Bigtable/ReadRows" => {
            let table = table_and_entries(message).unwrap_or_default().0;
            let rows = short_name(&table).strip_prefix(READ_TABLE_PREFIX);
            match rows.and_then(|n| state.reads.get(&n.parse().ok()?)) {
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

/// A gRPC answer: the frames, then `grpc-status: 0`.
fn ok(frames: impl Iterator<Item = Bytes> + Send + Sync + 'static) -> Response<Body> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let frames = frames
        .map(|f| Ok(Frame::data(f)))
        .chain(std::iter::once(Ok(Frame::trailers(trailers))));
    let mut response = Response::new(StreamBody::new(futures_util::stream::iter(frames)).boxed());
    let content_type = HeaderValue::from_static("application/grpc");
    response.headers_mut().insert("content-type", content_type);
    response
}

/// A trailers-only gRPC error.
fn error(code: u16, message: &str) -> Response<Body> {
    let mut response = Response::new(Empty::new().boxed());
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-status", HeaderValue::from(code));
    if let Ok(message) = HeaderValue::from_str(&message.replace(['\r', '\n'], " ")) {
        headers.insert("grpc-message", message);
    }
    response
}

/// A message in its gRPC frame: not compressed, its length, the bytes.
fn grpc_frame(message: &[u8]) -> Bytes {
    let len = u32::try_from(message.len()).expect("a message under 4 GiB");
    let mut frame = Vec::with_capacity(5 + message.len());
    frame.push(0);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(message);
    frame.into()
}

/// The message of a gRPC request body (one: every call answered here is
/// unary or server-streaming; no client here compresses requests).
fn first_message(body: &[u8]) -> Result<&[u8], String> {
    let (&flag, rest) = body.split_first().ok_or("empty request body")?;
    if flag != 0 {
        return Err("compressed request: not supported by the null server".into());
    }
    let len = rest
        .first_chunk()
        .map(|len| u32::from_be_bytes(*len) as usize);
    let message = len.and_then(|len| rest.get(4..4 + len));
    message.ok_or_else(|| "request cut short".to_owned())
}

/// A request's table name (its field 1, in every data call) and how many
/// field 2 it holds (`MutateRowsRequest.entries`), each skipped over.
fn table_and_entries(mut message: &[u8]) -> Result<(String, usize), String> {
    let (mut table, mut entries) = (String::new(), 0);
    let context = DecodeContext::default();
    while !message.is_empty() {
        let (field, wire_type) = decode_key(&mut message).map_err(|e| e.to_string())?;
        let read = match field {
            1 => string::merge(wire_type, &mut table, &mut message, context.clone()),
            _ => skip_field(wire_type, field, &mut message, context.clone()),
        };
        read.map_err(|e| e.to_string())?;
        entries += usize::from(field == 2);
    }
    Ok((table, entries))
}

/// Success for entries `0..n`, each with an `OK` status (empty on the
/// wire), as Cloud Bigtable sends it.
fn mutate_rows_success(n: usize) -> Bytes {
    let entry = |i| mutate_rows_response::Entry {
        index: i64::try_from(i).unwrap_or(i64::MAX),
        // `google.rpc.Status`, whose crate bigtable_rs does not re-export.
        #[allow(clippy::default_trait_access)]
        status: Some(Default::default()),
    };
    let response = MutateRowsResponse {
        entries: (0..n).map(entry).collect(),
        ..MutateRowsResponse::default()
    };
    grpc_frame(&response.encode_to_vec())
}

/// The workload's rows `0..n` written at `written`, as a filtered read
/// returns them, in `ReadRowsResponse` frames of about `message_bytes`
/// each, the chunks cut as Cloud Bigtable cuts them: the family named when
/// it changes, the qualifier on each new column, the last chunk committing
/// the row.
fn read_rows_frames(n: usize, written: DateTime<Utc>, message_bytes: usize) -> Vec<Bytes> {
    let (mut frames, mut chunks, mut size) = (Vec::new(), Vec::new(), 0);
    for i in 0..n {
        let (key, cells) = raw_row(&event(i, written));
        let last = cells.len().saturating_sub(1);
        let mut family: Option<&str> = None;
        for (j, cell) in cells.iter().enumerate() {
            let chunk = CellChunk {
                row_key: if j == 0 { key.clone() } else { Vec::new() },
                family_name: (family != Some(cell.family.as_str())).then(|| cell.family.clone()),
                qualifier: Some(cell.qualifier.clone()),
                timestamp_micros: cell.timestamp_micros,
                value: cell.value.clone(),
                row_status: (j == last).then_some(RowStatus::CommitRow(true)),
                ..CellChunk::default()
            };
            family = Some(cell.family.as_str());
            size += chunk.encoded_len() + 3;
            chunks.push(chunk);
        }
        if size >= message_bytes || i + 1 == n {
            let chunks = std::mem::take(&mut chunks);
            let response = ReadRowsResponse {
                chunks,
                ..ReadRowsResponse::default()
            };
            frames.push(grpc_frame(&response.encode_to_vec()));
            size = 0;
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::null::client::{connection, Secure};
    use bigtable_ttl::{Scan, Table};
    use futures_util::TryStreamExt as _;
    use ttl_bench::Event;

    /// The library, over TLS trusting the CA's PEM, with the server's token:
    /// every row written is acknowledged and counted, every row read (in
    /// several messages) decodes into the workload's, a single-row write is
    /// acknowledged, a table not served is an error; a wrong token gets no
    /// call through.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_library_writes_and_reads_through_it() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let state = Arc::new(State::new(&[1, 1234], Some("right")).unwrap());
        let (config, ca_pem) = tls_config().unwrap();
        tokio::spawn(serve(listener, state.clone(), Some(config)));
        let now = Utc::now();
        for (token, accepted) in [("right", true), ("wrong", false)] {
            let secure = Secure {
                ca_pem: ca_pem.clone().into_bytes(),
                token: token.to_owned(),
            };
            let table = Table::<Event>::new(connection(&host, Some(&secure)).await.unwrap());
            let put = table.clone().with_name(token).put(&event(1, now)).await;
            assert_eq!(put.is_ok(), accepted, "{token}: {put:?}");
            let read = table.clone().with_name("events_1234").stream(Scan::all());
            let read: Result<Vec<Event>, _> = read.map_ok(|e| e.value).try_collect().await;
            if !accepted {
                assert!(read.is_err());
                continue;
            }
            let rows = read.unwrap();
            assert_eq!(rows.len(), 1234);
            for (i, got) in rows.into_iter().enumerate() {
                let want = event(i, now);
                let (got_expiry, want_expiry) = (got.expires_at, want.expires_at);
                assert!((got_expiry - want_expiry).abs() < chrono::TimeDelta::minutes(1));
                let fields = |e: Event| (e.id, e.user, e.url, e.clicks);
                assert_eq!(fields(got), fields(want));
            }
            let missing = table.clone().with_name("events_99").scan(Scan::all()).await;
            assert!(missing.is_err(), "no table of 99 rows is served");
            let mut writer = table.with_name("w").writer();
            for i in 0..2500 {
                writer.send(&event(i, now)).await.unwrap();
            }
            assert_eq!(writer.finish().await.unwrap().rows_written, 2500);
        }
        assert_eq!(state.counts()["entries"]["w"], 2500);
    }
}
