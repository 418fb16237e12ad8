//! A scripted Bigtable on loopback (127.0.0.1 only), for the client
//! behaviours a real server shows only when it misbehaves: it answers each
//! data RPC with what the test queued for that method (a delay, response
//! messages, a final status with `RetryInfo` details, routing cookies in
//! headers or trailers, the front end's timing and location headers) and
//! records every request: its method, headers, decoded body and arrival
//! time. Speaks plaintext HTTP/2 gRPC through hyper, as `recorder.rs`
//! does.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt as _, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message as _;

use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::Connection;

use crate::support::loopback;

/// Four attempts, quick delays: the tests against the fake count
/// requests and attempts, not time.
pub fn four_attempts() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_attempts(4)
        .with_initial_delay(Duration::from_millis(1))
        .with_max_delay(Duration::from_millis(2))
        .with_attempt_timeout(Duration::from_secs(10))
        .with_deadline(Duration::from_secs(20))
}

/// Where an answer stops for good, the request left open: a server that
/// never answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stall {
    /// It does not: the answer ends with its status.
    #[default]
    Never,
    /// Before the response headers: nothing comes back at all.
    BeforeHeaders,
    /// After the headers and the messages, before the status: a call
    /// answered, then a stream that stops.
    AfterMessages,
}

/// One scripted answer to one request.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// Wait this long before answering at all (no headers either).
    pub delay: Duration,
    /// Whether (and where) the answer stops, never to end.
    pub stall: Stall,
    /// Response headers (routing cookies, say).
    pub headers: Vec<(&'static str, String)>,
    /// Response messages, encoded.
    pub messages: Vec<Vec<u8>>,
    /// The final gRPC status code (0: OK).
    pub code: i32,
    /// Its message.
    pub message: String,
    /// A `RetryInfo` delay in the status details.
    pub retry_delay: Option<Duration>,
    /// Trailers besides the status (routing cookies, say).
    pub trailers: Vec<(&'static str, String)>,
    /// Bytes sent as they are after the messages, before the status: a
    /// frame cut short, say.
    pub raw: Vec<u8>,
    /// A `google.rpc.Status`, encoded, sent as the status details
    /// (`grpc-status-details-bin`) in place of a `RetryInfo` one.
    pub details: Vec<u8>,
}

impl Answer {
    /// OK with these messages.
    pub fn ok(messages: Vec<Vec<u8>>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// The status `code` (a `tonic::Code` number) and nothing else.
    pub fn status(code: i32) -> Self {
        Self {
            code,
            message: "scripted failure".into(),
            ..Self::default()
        }
    }

    /// The same answer ending with the status `code` (messages first).
    pub fn status_of(mut self, code: i32) -> Self {
        self.code = code;
        self.message = "scripted failure".into();
        self
    }

    /// No answer at all, ever: no headers, no message, no status.
    pub fn hang() -> Self {
        Self {
            stall: Stall::BeforeHeaders,
            ..Self::default()
        }
    }

    /// The headers and messages of this answer, then nothing more, the
    /// call left open.
    pub fn then_stall(mut self) -> Self {
        self.stall = Stall::AfterMessages;
        self
    }

    /// The same answer after `delay`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// With a routing cookie `x-goog-cbt-cookie-{name}: value` in its trailers.
    pub fn cookie(mut self, name: &'static str, value: &str) -> Self {
        self.trailers.push((name, value.to_owned()));
        self
    }

    /// With `bytes` sent unframed after the messages.
    pub fn then_raw(mut self, bytes: Vec<u8>) -> Self {
        self.raw = bytes;
        self
    }

    /// With `status` (a `google.rpc.Status`, encoded) as its details.
    pub fn details(mut self, status: Vec<u8>) -> Self {
        self.details = status;
        self
    }

    /// With a `RetryInfo` asking for `delay`.
    pub fn retry_after(mut self, delay: Duration) -> Self {
        self.retry_delay = Some(delay);
        self
    }

    /// With the response headers Google's front end adds: its latency
    /// (`server-timing: gfet4t7; dur={server_ms}`) and where the request
    /// ran (`x-goog-ext-425905942-bin`, a `ResponseParams`).
    pub fn with_google_headers(mut self, server_ms: u32, cluster: &str, zone: &str) -> Self {
        let location = crate::proto::ResponseParams {
            zone_id: Some(zone.to_owned()),
            cluster_id: Some(cluster.to_owned()),
            afe_id: Some(1),
        };
        self.headers
            .push(("server-timing", format!("gfet4t7; dur={server_ms}")));
        self.headers.push((
            "x-goog-ext-425905942-bin",
            STANDARD_NO_PAD.encode(location.encode_to_vec()),
        ));
        self
    }
}

/// One request as the fake server received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// `ReadRows`, `MutateRow`, …
    pub method: String,
    pub headers: hyper::HeaderMap,
    /// The request message (the gRPC frame's payload).
    pub body: Bytes,
    pub at: Instant,
}

impl Received {
    /// The header `name` as text (empty when absent).
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    }

    /// The body decoded as `M`.
    pub fn decode<M: prost::Message + Default>(&self) -> M {
        M::decode(self.body.clone()).expect("a request the client encoded")
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<HashMap<String, VecDeque<Answer>>>,
    /// What a request gets once its method's script is used up; `None`:
    /// what a healthy server would answer.
    otherwise: Mutex<Option<Answer>>,
    received: Mutex<Vec<Received>>,
    /// When the last answer carrying a message was sent.
    last_message: Mutex<Option<Instant>>,
}

/// The fake server; it stops with the test's runtime.
pub struct FakeBigtable {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeBigtable {
    /// A fake server on a free loopback port. Call inside a tokio runtime.
    pub async fn start() -> Self {
        let (listener, addr) = loopback::listen().await;
        let shared = Arc::new(Shared::default());
        let accept = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = accept.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let shared = shared.clone();
                        async move { Ok::<_, Infallible>(answer(&shared, request).await) }
                    });
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, shared }
    }

    /// `127.0.0.1:PORT`, for `Connection::builder(..).emulator(..)`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// A connection to this server (project `p`, instance `i`) retrying
    /// data calls under `policy`.
    pub async fn connection(&self, policy: RetryPolicy) -> Connection {
        Connection::builder("p", "i")
            .emulator(self.host())
            .retry(policy)
            .connect()
            .await
            .unwrap()
    }

    /// Answer the next requests of `method` (`ReadRows`, …) with `answers`,
    /// in order; once they are used up, requests get what a healthy server
    /// would say to them: no rows, an empty unary answer, `OK` for every
    /// `MutateRows` entry.
    pub fn script(&self, method: &str, answers: impl IntoIterator<Item = Answer>) {
        self.shared
            .script
            .lock()
            .unwrap()
            .entry(method.to_owned())
            .or_default()
            .extend(answers);
    }

    /// Answer every request whose method has no scripted answer left with
    /// `answer` (admin calls included), instead of what a healthy server
    /// would: `Answer::hang()` makes a server that never answers.
    pub fn otherwise(&self, answer: Answer) {
        *self.shared.otherwise.lock().unwrap() = Some(answer);
    }

    /// Every request received so far, in order of arrival.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// When the server last sent an answer carrying a message (a row, a
    /// sample, a table): a call's last sign of progress.
    pub fn last_message(&self) -> Option<Instant> {
        *self.shared.last_message.lock().unwrap()
    }

    /// The requests of `method` received so far.
    pub fn received_of(&self, method: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.method == method)
            .collect()
    }
}

type Body = StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

async fn answer(shared: &Shared, request: Request<Incoming>) -> Response<Body> {
    let at = Instant::now();
    let method = request
        .uri()
        .path()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .unwrap_or_default();
    shared.received.lock().unwrap().push(Received {
        method: method.clone(),
        headers: parts.headers,
        body: body.slice(5.min(body.len())..),
        at,
    });
    let scripted = shared
        .script
        .lock()
        .unwrap()
        .get_mut(&method)
        .and_then(VecDeque::pop_front)
        .or_else(|| shared.otherwise.lock().unwrap().clone())
        .unwrap_or_else(|| healthy(&method, &body));
    tokio::time::sleep(scripted.delay).await;
    if scripted.stall == Stall::BeforeHeaders {
        std::future::pending::<()>().await;
    }
    if !scripted.messages.is_empty() {
        *shared.last_message.lock().unwrap() = Some(Instant::now());
    }
    let mut frames: Vec<Result<Frame<Bytes>, Infallible>> = Vec::new();
    for message in &scripted.messages {
        let mut frame = BytesMut::with_capacity(message.len() + 5);
        frame.extend_from_slice(&[0]);
        frame.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
        frame.extend_from_slice(message);
        frames.push(Ok(Frame::data(frame.freeze())));
    }
    if !scripted.raw.is_empty() {
        frames.push(Ok(Frame::data(Bytes::from(scripted.raw.clone()))));
    }
    let mut trailers = hyper::HeaderMap::new();
    trailers.insert("grpc-status", scripted.code.to_string().parse().unwrap());
    if !scripted.message.is_empty() {
        trailers.insert("grpc-message", scripted.message.parse().unwrap());
    }
    if !scripted.details.is_empty() {
        trailers.insert(
            "grpc-status-details-bin",
            STANDARD_NO_PAD.encode(&scripted.details).parse().unwrap(),
        );
    } else if let Some(delay) = scripted.retry_delay {
        trailers.insert(
            "grpc-status-details-bin",
            STANDARD_NO_PAD
                .encode(retry_details(scripted.code, delay))
                .parse()
                .unwrap(),
        );
    }
    for (name, value) in &scripted.trailers {
        trailers.insert(
            hyper::header::HeaderName::from_bytes(format!("x-goog-cbt-cookie-{name}").as_bytes())
                .unwrap(),
            value.parse().unwrap(),
        );
    }
    let frames = futures_util::stream::iter(frames);
    let body = if scripted.stall == Stall::AfterMessages {
        use futures_util::StreamExt as _;
        frames.chain(futures_util::stream::pending()).boxed()
    } else {
        use futures_util::StreamExt as _;
        frames
            .chain(futures_util::stream::iter([Ok(Frame::trailers(trailers))]))
            .boxed()
    };
    let mut response = Response::builder()
        .status(200)
        .header("content-type", "application/grpc");
    for (name, value) in &scripted.headers {
        response = response.header(*name, value.as_str());
    }
    response.body(StreamBody::new(body)).unwrap()
}

/// What a healthy server answers to `method` with `body` (framed).
fn healthy(method: &str, body: &Bytes) -> Answer {
    match method {
        "MutateRow" | "CheckAndMutateRow" | "ReadModifyWriteRow" => Answer::ok(vec![Vec::new()]),
        "MutateRows" => {
            let request = crate::proto::MutateRowsRequest::decode(body.slice(5.min(body.len())..))
                .unwrap_or_default();
            let ok = (0..request.entries.len()).map(|index| (i64::try_from(index).unwrap(), 0));
            Answer::ok(vec![mutate_rows_statuses(ok)])
        }
        _ => Answer::default(),
    }
}

/// A `MutateRows` answer giving each entry `(index, code)` the status
/// `code` (0 is `OK`).
pub fn mutate_rows_statuses(entries: impl IntoIterator<Item = (i64, i32)>) -> Vec<u8> {
    crate::proto::MutateRowsResponse {
        entries: entries
            .into_iter()
            .map(|(index, code)| crate::proto::mutate_rows_response::Entry {
                index,
                status: Some(googleapis_tonic_google_rpc::google::rpc::Status {
                    code,
                    ..Default::default()
                }),
            })
            .collect(),
        ..Default::default()
    }
    .encode_to_vec()
}

/// A `google.rpc.Status` of `code` whose details hold `RetryInfo { delay }`.
fn retry_details(code: i32, delay: Duration) -> Vec<u8> {
    use googleapis_tonic_google_rpc::google::rpc::{RetryInfo, Status};
    let info = RetryInfo {
        retry_delay: Some(prost_types::Duration {
            seconds: i64::try_from(delay.as_secs()).unwrap(),
            nanos: i32::try_from(delay.subsec_nanos()).unwrap(),
        }),
    };
    Status {
        code,
        message: "retry later".into(),
        details: vec![prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.RetryInfo".into(),
            value: info.encode_to_vec(),
        }],
    }
    .encode_to_vec()
}
