//! The library's data calls (`MutateRow`, `MutateRows`, `ReadRows`,
//! `SampleRowKeys`) on a gRPC channel of its own: one connection pool for
//! every read and write.
//!
//! The channel is configured here (HTTP/2 windows sized for bulk reads and
//! writes, keep-alive as `bigtable_rs` sets it) and its connections are
//! [`super::transport`]'s; every request carries the routing header, its
//! deadline (`grpc-timeout`) and, on Cloud Bigtable, a bearer token. The
//! bodies go through the codecs of [`super::codec`] and [`super::chunk`].
//! Every call bounds its own wait for the answer: the connections do not.

use std::sync::Arc;
use std::time::Duration;

use tonic::transport::{ClientTlsConfig, Endpoint};

use crate::model::error::BoxError;
use crate::model::proto::{
    CheckAndMutateRowRequest, CheckAndMutateRowResponse, ExecuteQueryRequest, ExecuteQueryResponse,
    MutateRowRequest, MutateRowResponse, MutateRowsResponse, PrepareQueryRequest,
    PrepareQueryResponse, ReadModifyWriteRowRequest, ReadModifyWriteRowResponse, ReadRowsRequest,
    SampleRowKeysRequest, SampleRowKeysResponse,
};
use crate::wire::answer::AnswerCodec;
use crate::wire::builtin_metrics::{Method, Rpc};
use crate::wire::chunk::{Message, ReadRowsCodec};
use tonic_prost::ProstCodec;

use crate::wire::codec::{EncodedBatch, MutateRowsBody, MutateRowsCodec};
use crate::wire::cookies::RoutingCookies;
use crate::wire::framing::Checked;
use crate::wire::headers::{
    grpc_timeout, routing_key, routing_value, API_CLIENT_HEADER, DATA_SCOPE, FEATURES_HEADER,
    TIMEOUT_KEY,
};
use crate::wire::status::{no_answer_within, not_sent, was_refused};
use crate::wire::tokens::Tokens;
pub(crate) use crate::wire::transport::KeepAlive;
use crate::wire::transport::{Transport, TransportConfig, CONNECT_TIMEOUT};

/// Cloud Bigtable's global data endpoint.
pub(crate) const DATA_ENDPOINT: &str = "https://bigtable.googleapis.com";
const MUTATE_ROW: &str = "/google.bigtable.v2.Bigtable/MutateRow";
const MUTATE_ROWS: &str = "/google.bigtable.v2.Bigtable/MutateRows";
const CHECK_AND_MUTATE_ROW: &str = "/google.bigtable.v2.Bigtable/CheckAndMutateRow";
const READ_MODIFY_WRITE_ROW: &str = "/google.bigtable.v2.Bigtable/ReadModifyWriteRow";
const READ_ROWS: &str = "/google.bigtable.v2.Bigtable/ReadRows";
const SAMPLE_ROW_KEYS: &str = "/google.bigtable.v2.Bigtable/SampleRowKeys";
const PREPARE_QUERY: &str = "/google.bigtable.v2.Bigtable/PrepareQuery";
const EXECUTE_QUERY: &str = "/google.bigtable.v2.Bigtable/ExecuteQuery";
/// The largest `ReadRowsResponse` message accepted: a bit over Bigtable's
/// 256 MiB row limit (tonic's default cap, 4 MiB, is below its 100 MiB
/// cells, and the emulator sends a whole row in one message).
const MAX_RESPONSE_MESSAGE_BYTES: usize = 260 * 1024 * 1024;
/// Connections to Cloud Bigtable by default, as `bigtable_rs` opened for
/// this library.
pub(crate) const CLOUD_CONNECTIONS: usize = 4;
/// HTTP/2 flow-control windows. The protocol's default, 64 KiB, makes a bulk
/// read of small rows wait on window updates many times a second.
const STREAM_WINDOW_BYTES: u32 = 4 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 8 << 20;

/// A cheap-to-clone handle on the data channel.
#[derive(Clone)]
pub(crate) struct DataChannel {
    channel: Transport,
    tokens: Option<Tokens>,
    /// Sent in every request body and routing header; empty: the
    /// instance's default profile.
    app_profile: Arc<str>,
    /// The endpoint's host and port, for the spans' `server.address` and
    /// `server.port`.
    host: Arc<str>,
    port: Option<u16>,
    /// The connection's built-in metrics: they travel with the channel so
    /// that every call site that sends an RPC has them.
    #[cfg(feature = "opentelemetry")]
    pub(crate) metrics: Arc<crate::wire::builtin_metrics::Instruments>,
}

/// How to reach the data endpoint.
pub(crate) struct ChannelConfig {
    /// `http://host:port` (an emulator) or `https://host[:port]`.
    pub(crate) endpoint: String,
    /// PEM root certificates trusted besides the system's (for `https`).
    pub(crate) extra_roots: Vec<Vec<u8>>,
    /// HTTP/2 connections, requests spread over them.
    pub(crate) pool_size: usize,
    pub(crate) keep_alive: KeepAlive,
    pub(crate) tokens: Option<Tokens>,
    pub(crate) app_profile: String,
    /// An emulator's (see [`TransportConfig::emulator`]).
    pub(crate) emulator: bool,
}

/// The tonic endpoint for `uri` with `keep_alive`, TLS for `https` (the
/// system's roots and `extra_roots`). Shared with the admin channel.
pub(crate) fn endpoint(
    uri: &str,
    extra_roots: &[Vec<u8>],
    keep_alive: KeepAlive,
) -> Result<Endpoint, BoxError> {
    let mut endpoint = Endpoint::from_shared(uri.to_owned())?
        .http2_keep_alive_interval(keep_alive.interval)
        .keep_alive_timeout(keep_alive.timeout)
        .keep_alive_while_idle(keep_alive.while_idle);
    if uri.starts_with("https://") {
        let mut tls = ClientTlsConfig::new().with_native_roots();
        for pem in extra_roots {
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
        }
        endpoint = endpoint.tls_config(tls)?;
    }
    Ok(endpoint)
}

impl DataChannel {
    /// The channel `config` describes, connected on first use. Must be
    /// called within a Tokio runtime.
    pub(crate) fn new(config: ChannelConfig) -> Result<Self, BoxError> {
        let channel = Transport::new(TransportConfig {
            uri: config.endpoint.parse()?,
            extra_roots: config.extra_roots,
            pool_size: config.pool_size,
            stream_window: STREAM_WINDOW_BYTES,
            connection_window: CONNECTION_WINDOW_BYTES,
            keep_alive: config.keep_alive,
            connect_timeout: CONNECT_TIMEOUT,
            emulator: config.emulator,
        })?;
        Ok(Self {
            host: channel.host().into(),
            port: Some(channel.port()),
            channel,
            tokens: config.tokens,
            app_profile: config.app_profile.into(),
            #[cfg(feature = "opentelemetry")]
            metrics: crate::wire::builtin_metrics::Instruments::new(None),
        })
    }

    /// The same channel, its built-in metrics going to `provider`.
    #[cfg(feature = "opentelemetry")]
    pub(crate) fn with_meter_provider(
        mut self,
        provider: Option<&crate::wire::builtin_metrics::Provider>,
    ) -> Self {
        self.metrics = crate::wire::builtin_metrics::Instruments::new(provider);
        self
    }

    /// The built-in metrics of one RPC, `method` on `table_name`,
    /// starting now (nothing without the feature `opentelemetry`).
    // The proc-macro crate's build of this one lacks the feature (a host
    // dependency's features are its own), and there `self` goes unused.
    #[cfg_attr(not(feature = "opentelemetry"), allow(clippy::unused_self))]
    pub(crate) fn rpc(&self, table_name: &str, method: Method) -> Rpc {
        #[cfg(feature = "opentelemetry")]
        let rpc = Rpc::start(&self.metrics, &self.app_profile, table_name, method);
        #[cfg(not(feature = "opentelemetry"))]
        let rpc = Rpc::start(table_name, method);
        rpc
    }

    /// The app profile every request names (empty: the default).
    pub(crate) fn app_profile(&self) -> &str {
        &self.app_profile
    }

    /// `message` as a request on `table_name`: routing header, client
    /// name, the operation's routing cookies, deadline, and a bearer token
    /// on Cloud Bigtable. The token is fetched first: the deadline the
    /// request carries (`timeout` from now) is what is left after it.
    async fn request<T>(
        &self,
        message: T,
        table_name: &str,
        timeout: Option<Duration>,
        cookies: &RoutingCookies,
    ) -> Result<tonic::Request<T>, tonic::Status> {
        let started = std::time::Instant::now();
        let span = tracing::Span::current();
        span.record("server.address", &*self.host);
        if let Some(port) = self.port {
            span.record("server.port", port);
        }
        let mut request = tonic::Request::new(message);
        if let Some(value) = routing_value(table_name, &self.app_profile) {
            request.metadata_mut().insert(routing_key(), value);
        }
        API_CLIENT_HEADER.insert_into(request.metadata_mut());
        cookies.apply(request.metadata_mut());
        if let Some(tokens) = &self.tokens {
            let token = tokens.secret(DATA_SCOPE).await.map_err(|e| {
                tonic::Status::unauthenticated(format!("no access token for Cloud Bigtable: {e}"))
            })?;
            let value = format!("Bearer {token}")
                .parse()
                .map_err(|_| tonic::Status::unauthenticated("the access token is not a header"))?;
            request.metadata_mut().insert("authorization", value);
        }
        if let Some(timeout) = timeout {
            request.metadata_mut().insert(
                TIMEOUT_KEY,
                grpc_timeout(timeout.saturating_sub(started.elapsed())),
            );
        }
        Ok(request)
    }

    /// [`DataChannel::request`] by `until`: a token that does not come in
    /// time is a request [`not_sent`].
    async fn request_by<T>(
        &self,
        message: T,
        table_name: &str,
        until: tokio::time::Instant,
        cookies: &RoutingCookies,
    ) -> Result<tonic::Request<T>, tonic::Status> {
        let timeout = until.saturating_duration_since(tokio::time::Instant::now());
        if self.tokens.is_none() {
            // Nothing to wait for: no timer to arm.
            return self
                .request(message, table_name, Some(timeout), cookies)
                .await;
        }
        tokio::time::timeout_at(
            until,
            self.request(message, table_name, Some(timeout), cookies),
        )
        .await
        .unwrap_or_else(|_| {
            Err(not_sent(format!(
                "no access token for Cloud Bigtable within {timeout:?}"
            )))
        })
    }

    /// A tonic client on the channel, once it can take a request; its
    /// answers cut short inside a message are errors (see [`Checked`]).
    async fn ready(&self) -> Result<tonic::client::Grpc<Checked<Transport>>, tonic::Status> {
        let mut grpc = tonic::client::Grpc::new(Checked(self.channel.clone()));
        grpc.ready()
            .await
            .map_err(|e| tonic::Status::unavailable(format!("data channel not ready: {e}")))?;
        #[cfg(feature = "opentelemetry")]
        crate::wire::server_signals::sending();
        Ok(grpc)
    }

    /// One `ReadRows` call with the operation's `cookies` (and those of the
    /// response's headers learnt into them); each response message comes
    /// whole, for the merger to read in place (see [`super::chunk`]).
    /// The caller learns the cookies of an error that ends the stream.
    pub(crate) async fn read_rows(
        &self,
        mut request: ReadRowsRequest,
        cookies: &mut RoutingCookies,
    ) -> Result<tonic::Streaming<Message>, tonic::Status> {
        request.app_profile_id = self.app_profile.to_string();
        let table_name = request.table_name.clone();
        let mut request = self.request(request, &table_name, None, cookies).await?;
        // Announce reverse scans (the merger takes descending keys): Cloud
        // Bigtable refuses a reversed read from a client that does not.
        FEATURES_HEADER.insert_into(request.metadata_mut());
        let path = http::uri::PathAndQuery::from_static(READ_ROWS);
        let response = self
            .ready()
            .await?
            .max_decoding_message_size(MAX_RESPONSE_MESSAGE_BYTES)
            .server_streaming(request, path, ReadRowsCodec)
            .await;
        learnt(response, cookies).map(tonic::Response::into_inner)
    }

    /// One `MutateRow` call (one row's mutations, applied atomically),
    /// the request naming this channel's app profile: shared, as every
    /// attempt sends the same.
    pub(crate) async fn mutate_row(
        &self,
        request: &Arc<MutateRowRequest>,
        timeout: Duration,
        cookies: &mut RoutingCookies,
    ) -> Result<MutateRowResponse, tonic::Status> {
        self.unary(
            MUTATE_ROW,
            Arc::clone(request),
            &request.table_name,
            timeout,
            cookies,
        )
        .await
    }

    /// One `CheckAndMutateRow` call: the predicate and the mutations of one
    /// row, applied atomically.
    pub(crate) async fn check_and_mutate_row(
        &self,
        mut request: CheckAndMutateRowRequest,
        timeout: Duration,
    ) -> Result<CheckAndMutateRowResponse, tonic::Status> {
        request.app_profile_id = self.app_profile.to_string();
        let table_name = request.table_name.clone();
        let mut cookies = RoutingCookies::default();
        self.unary(
            CHECK_AND_MUTATE_ROW,
            Arc::new(request),
            &table_name,
            timeout,
            &mut cookies,
        )
        .await
    }

    /// One `ReadModifyWriteRow` call: the rules applied atomically to one
    /// row, the cells they wrote in the answer.
    pub(crate) async fn read_modify_write_row(
        &self,
        mut request: ReadModifyWriteRowRequest,
        timeout: Duration,
    ) -> Result<ReadModifyWriteRowResponse, tonic::Status> {
        request.app_profile_id = self.app_profile.to_string();
        let table_name = request.table_name.clone();
        let mut cookies = RoutingCookies::default();
        self.unary(
            READ_MODIFY_WRITE_ROW,
            Arc::new(request),
            &table_name,
            timeout,
            &mut cookies,
        )
        .await
    }

    /// One `PrepareQuery` call: a GoogleSQL query planned for its
    /// instance, within `timeout`.
    pub(crate) async fn prepare_query(
        &self,
        mut request: PrepareQueryRequest,
        timeout: Duration,
    ) -> Result<PrepareQueryResponse, tonic::Status> {
        request.app_profile_id = self.app_profile.to_string();
        let instance = request.instance_name.clone();
        let mut cookies = RoutingCookies::default();
        self.unary(
            PREPARE_QUERY,
            Arc::new(request),
            &instance,
            timeout,
            &mut cookies,
        )
        .await
    }

    /// One `ExecuteQuery` call, its stream to end within `timeout` (the
    /// server is told so), with the query's `cookies` (and those of the
    /// response's headers learnt into them).
    pub(crate) async fn execute_query(
        &self,
        mut request: ExecuteQueryRequest,
        timeout: Duration,
        cookies: &mut RoutingCookies,
    ) -> Result<tonic::Streaming<ExecuteQueryResponse>, tonic::Status> {
        request.app_profile_id = self.app_profile.to_string();
        let instance = request.instance_name.clone();
        let request = self
            .request(request, &instance, Some(timeout), cookies)
            .await?;
        let path = http::uri::PathAndQuery::from_static(EXECUTE_QUERY);
        let call = async {
            self.ready()
                .await?
                .max_decoding_message_size(MAX_RESPONSE_MESSAGE_BYTES)
                .server_streaming(request, path, ProstCodec::default())
                .await
        };
        // The answer's head within the timeout too: the stream's messages
        // are the caller's to bound, the wait before them is this call's.
        let response = tokio::time::timeout(timeout, call)
            .await
            .unwrap_or_else(|_| {
                Err(no_answer_within(format!(
                    "no answer to ExecuteQuery within {timeout:?}"
                )))
            });
        learnt(response, cookies).map(tonic::Response::into_inner)
    }

    /// One unary call to `path` on `table_name`, with the operation's
    /// `cookies`, learning those of the answer (headers, or an error's
    /// trailers). A request that never left the client (queued on a
    /// connection that closed before writing it), or that the server
    /// refused before processing it (`REFUSED_STREAM`, past a `GOAWAY`'s
    /// last stream), is sent again, at most three sends in all, as gRPC's
    /// transparent retry does: nothing of it was applied, so even a call
    /// that is not idempotent cannot apply twice.
    async fn unary<Req, Resp>(
        &self,
        path: &'static str,
        message: Arc<Req>,
        table_name: &str,
        timeout: Duration,
        cookies: &mut RoutingCookies,
    ) -> Result<Resp, tonic::Status>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        const SENDS: usize = 3;
        let started = std::time::Instant::now();
        let until = tokio::time::Instant::now() + timeout;
        let path = http::uri::PathAndQuery::from_static(path);
        let mut sends = 0;
        loop {
            sends += 1;
            let request = self
                .request_by(Arc::clone(&message), table_name, until, cookies)
                .await?;
            let call = async {
                self.ready()
                    .await?
                    .unary(request, path.clone(), AnswerCodec::default())
                    .await
            };
            let Ok(response) = tokio::time::timeout_at(until, call).await else {
                return Err(no_answer_within(format!("no answer within {timeout:?}")));
            };
            match learnt(response, cookies) {
                Ok(response) => return Ok(response.into_inner()),
                Err(status) if never_sent(&status) && sends < SENDS => {
                    tracing::debug!(%status, "sending a request again that never left the client");
                }
                Err(status) => return Err(at_deadline(status, started, timeout)),
            }
        }
    }

    /// One `MutateRows` call sending `batch`'s entries `selected` (all when
    /// `None`), as already encoded.
    pub(crate) async fn mutate_rows(
        &self,
        table_name: Arc<str>,
        batch: Arc<EncodedBatch>,
        selected: Option<Vec<usize>>,
        timeout: Duration,
        cookies: &mut RoutingCookies,
    ) -> Result<tonic::Streaming<MutateRowsResponse>, tonic::Status> {
        let body = MutateRowsBody {
            table_name: table_name.clone(),
            app_profile: self.app_profile.clone(),
            batch,
            selected,
        };
        let request = self
            .request(body, &table_name, Some(timeout), cookies)
            .await?;
        let path = http::uri::PathAndQuery::from_static(MUTATE_ROWS);
        let response = self
            .ready()
            .await?
            .server_streaming(request, path, MutateRowsCodec)
            .await;
        learnt(response, cookies).map(tonic::Response::into_inner)
    }

    /// One `SampleRowKeys` call on `table_name`, its whole answer within
    /// `timeout`: row keys, in key order, that cut the table into parts of
    /// about equal size, each with the bytes stored before it.
    pub(crate) async fn sample_row_keys(
        &self,
        table_name: &str,
        timeout: Duration,
        cookies: &mut RoutingCookies,
    ) -> Result<Vec<SampleRowKeysResponse>, tonic::Status> {
        let started = std::time::Instant::now();
        let call = async {
            let message = SampleRowKeysRequest {
                table_name: table_name.to_owned(),
                app_profile_id: self.app_profile.to_string(),
                ..SampleRowKeysRequest::default()
            };
            let request = self
                .request(message, table_name, Some(timeout), cookies)
                .await?;
            let path = http::uri::PathAndQuery::from_static(SAMPLE_ROW_KEYS);
            let response = self
                .ready()
                .await?
                .server_streaming(request, path, ProstCodec::default())
                .await;
            let mut stream = learnt(response, cookies)?.into_inner();
            let mut samples = Vec::new();
            loop {
                match stream.message().await {
                    Ok(Some(sample)) => samples.push(sample),
                    Ok(None) => return Ok(samples),
                    Err(status) => {
                        cookies.learn(status.metadata());
                        return Err(status);
                    }
                }
            }
        };
        let call = async {
            call.await
                .map_err(|status| at_deadline(status, started, timeout))
        };
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or_else(|_| {
                Err(no_answer_within(format!(
                    "no complete answer to SampleRowKeys within {timeout:?}"
                )))
            })
    }
}

/// `status` as the deadline it is when it is a `CANCELLED` that came once
/// the call's `timeout` had passed since `started`: gRPC servers reset a
/// stream with `CANCEL` when its `grpc-timeout` runs out, which can beat
/// the client's own timer.
pub(crate) fn at_deadline(
    status: tonic::Status,
    started: std::time::Instant,
    timeout: Duration,
) -> tonic::Status {
    if status.code() == tonic::Code::Cancelled && started.elapsed() >= timeout {
        let mut deadline = no_answer_within(format!(
            "no answer within {timeout:?} ({})",
            status.message()
        ));
        *deadline.metadata_mut() = status.metadata().clone();
        deadline
    } else {
        status
    }
}

/// Whether `status` is the failure of a request hyper never wrote to its
/// connection (one queued on a connection that closed first, which hyper
/// cancels: "connection closed"), or one the server refused before
/// processing it ([`was_refused`]: `REFUSED_STREAM`, past a `GOAWAY`'s last
/// stream). A request already written fails otherwise (an incomplete
/// message, another stream reset).
pub(crate) fn never_sent(status: &tonic::Status) -> bool {
    use std::error::Error as _;
    if was_refused(status) {
        return true;
    }
    let mut source = status.source();
    while let Some(error) = source {
        if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
            return hyper.is_canceled();
        }
        source = error.source();
    }
    false
}

/// `response` as it is, its routing cookies (response headers, or an
/// error's trailers) learnt into `cookies`.
fn learnt<T>(
    response: Result<tonic::Response<T>, tonic::Status>,
    cookies: &mut RoutingCookies,
) -> Result<tonic::Response<T>, tonic::Status> {
    match &response {
        Ok(response) => cookies.learn(response.metadata()),
        Err(status) => cookies.learn(status.metadata()),
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::headers::{routing_header, API_CLIENT, API_CLIENT_KEY, ROUTING_KEY};

    #[derive(Default)]
    struct FixedToken(std::sync::Mutex<Vec<String>>);

    impl crate::wire::tokens::TokenSource for FixedToken {
        fn token<'a>(
            &'a self,
            scopes: &'a [&'a str],
        ) -> std::pin::Pin<
            Box<
                dyn std::future::Future<
                        Output = Result<
                            crate::wire::tokens::AccessToken,
                            Box<dyn std::error::Error + Send + Sync>,
                        >,
                    > + Send
                    + 'a,
            >,
        > {
            self.0
                .lock()
                .unwrap()
                .extend(scopes.iter().map(|s| (*s).to_owned()));
            Box::pin(async { Ok(crate::wire::tokens::AccessToken::new("t0ken")) })
        }
    }

    /// Connections to a port nothing listens on, never made.
    fn nowhere() -> Transport {
        Transport::new(TransportConfig {
            uri: http::Uri::from_static("http://127.0.0.1:9"),
            extra_roots: Vec::new(),
            pool_size: 1,
            stream_window: STREAM_WINDOW_BYTES,
            connection_window: CONNECTION_WINDOW_BYTES,
            keep_alive: KeepAlive::default(),
            connect_timeout: CONNECT_TIMEOUT,
            emulator: false,
        })
        .unwrap()
    }

    #[test]
    fn a_cancel_past_the_deadline_is_the_deadline() {
        let long_ago = std::time::Instant::now()
            .checked_sub(Duration::from_secs(3))
            .unwrap();
        let cut = at_deadline(
            tonic::Status::cancelled("h2 protocol error: stream reset"),
            long_ago,
            Duration::from_secs(2),
        );
        assert_eq!(cut.code(), tonic::Code::DeadlineExceeded);
        let early = at_deadline(
            tonic::Status::cancelled("by the caller"),
            std::time::Instant::now(),
            Duration::from_secs(2),
        );
        assert_eq!(early.code(), tonic::Code::Cancelled);
    }

    #[tokio::test]
    async fn a_cloud_request_carries_token_routing_and_deadline() {
        let tokens = Arc::new(FixedToken::default());
        let channel = DataChannel {
            channel: nowhere(),
            tokens: Some(Tokens::new(tokens.clone())),
            app_profile: "batch".into(),
            host: "127.0.0.1".into(),
            port: Some(9),
            #[cfg(feature = "opentelemetry")]
            metrics: crate::wire::builtin_metrics::Instruments::new(None),
        };
        let table = "projects/p/instances/i/tables/t";
        let mut cookies = RoutingCookies::default();
        let mut trailers = tonic::metadata::MetadataMap::new();
        trailers.insert("x-goog-cbt-cookie-test", "c1".parse().unwrap());
        cookies.learn(&trailers);
        let request = channel
            .request((), table, Some(Duration::from_secs(7)), &cookies)
            .await
            .unwrap();
        let headers = request.metadata().clone().into_headers();
        assert_eq!(headers["authorization"], "Bearer t0ken");
        assert_eq!(
            headers[ROUTING_KEY],
            routing_header(table, "batch").as_str()
        );
        // What is left of 7 s once the token is there.
        let timeout: u64 = headers["grpc-timeout"]
            .to_str()
            .unwrap()
            .strip_suffix('m')
            .unwrap()
            .parse()
            .unwrap();
        assert!((6_900..7_000).contains(&timeout), "{timeout}");
        assert_eq!(headers[API_CLIENT_KEY], API_CLIENT);
        assert_eq!(headers["x-goog-cbt-cookie-test"], "c1");
        assert_eq!(*tokens.0.lock().unwrap(), [DATA_SCOPE]);

        let emulator = DataChannel {
            tokens: None,
            ..channel
        };
        let request = emulator
            .request((), table, None, &RoutingCookies::default())
            .await
            .unwrap();
        assert!(request.metadata().get("authorization").is_none());
        assert!(request.metadata().get("grpc-timeout").is_none());
    }
}
