//! A loopback HTTP/2 proxy (127.0.0.1 only) in front of the emulator that
//! records every request it forwards: its path, headers and body. It speaks
//! plaintext HTTP/2, as the emulator does, or terminates TLS with a
//! certificate from a [`TestCa`] made at test time, so the library's Cloud
//! path (TLS, bearer tokens) runs end to end against the real emulator.
//!
//! Headers are read after HPACK decoding, which a byte-level proxy could not
//! do; bodies are collected before being forwarded (every call the library
//! makes sends a finite body).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

use crate::support::loopback;

/// One request as the proxy saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `/google.bigtable.v2.Bigtable/MutateRow`, …
    pub path: String,
    pub headers: hyper::HeaderMap,
    /// The gRPC body: a 5-byte frame header, then the protobuf message.
    pub body: Bytes,
}

impl Seen {
    /// The header `name` as text (empty when absent).
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    }

    /// Whether the body holds `needle` (a string field's bytes).
    pub fn body_contains(&self, needle: &str) -> bool {
        self.body
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
    }
}

/// A certificate authority made at test time, and a server certificate for
/// `localhost` it signed.
pub struct TestCa {
    /// The CA's certificate, PEM: what a client trusts.
    pub ca_pem: String,
    server: Arc<rustls::ServerConfig>,
}

impl TestCa {
    pub fn new() -> Self {
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "bigtable-ttl test CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().unwrap())
                .unwrap();
        let server_key = rcgen::KeyPair::generate().unwrap();
        let server_cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .signed_by(&server_key, &ca)
            .unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into());
        let mut server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![server_cert.der().clone(), ca.der().clone()], key)
        .unwrap();
        // gRPC clients insist on HTTP/2 by ALPN.
        server.alpn_protocols = vec![b"h2".to_vec()];
        Self {
            ca_pem: ca.pem(),
            server: Arc::new(server),
        }
    }
}

struct Shared {
    upstream: SocketAddr,
    seen: Mutex<Vec<Seen>>,
    tls_handshakes: AtomicU64,
}

/// The proxy; it stops with the test's runtime.
pub struct Recorder {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Recorder {
    /// Plaintext HTTP/2 on a free loopback port, forwarding to `upstream`
    /// (`HOST:PORT`, loopback).
    pub async fn start(upstream: &str) -> Self {
        Self::start_with(upstream, None).await
    }

    /// TLS with `ca`'s server certificate (for `localhost`) on a free
    /// loopback port, forwarding in plaintext to `upstream`.
    pub async fn start_tls(upstream: &str, ca: &TestCa) -> Self {
        Self::start_with(upstream, Some(ca.server.clone())).await
    }

    async fn start_with(upstream: &str, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let upstream = loopback::upstream(upstream, "recorder");
        let (listener, addr) = loopback::listen().await;
        let shared = Arc::new(Shared {
            upstream,
            seen: Mutex::default(),
            tls_handshakes: AtomicU64::new(0),
        });
        let accept = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let shared = accept.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        None => serve(client, shared).await,
                        Some(config) => {
                            let acceptor = tokio_rustls::TlsAcceptor::from(config);
                            if let Ok(stream) = acceptor.accept(client).await {
                                shared.tls_handshakes.fetch_add(1, Ordering::SeqCst);
                                serve(stream, shared).await;
                            }
                        }
                    }
                });
            }
        });
        Self { addr, shared }
    }

    /// `127.0.0.1:PORT`, for `Connection::emulator`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// `https://localhost:PORT`, the name the server certificate is for.
    pub fn https_uri(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    /// Every request forwarded so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// TLS handshakes completed.
    pub fn tls_handshakes(&self) -> u64 {
        self.shared.tls_handshakes.load(Ordering::SeqCst)
    }
}

/// Serve one client connection: each request recorded, then sent on one
/// HTTP/2 connection to the upstream, its answer streamed back.
async fn serve<S>(client: S, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Ok(upstream) = TcpStream::connect(shared.upstream).await else {
        return;
    };
    let Ok((sender, connection)) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(upstream)).await
    else {
        return;
    };
    tokio::spawn(connection);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let mut sender = sender.clone();
        let shared = shared.clone();
        async move {
            let (mut parts, body) = request.into_parts();
            let body = body.collect().await?.to_bytes();
            shared.seen.lock().unwrap().push(Seen {
                path: parts.uri.path().to_owned(),
                headers: parts.headers.clone(),
                body: body.clone(),
            });
            let path = parts
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_owned();
            parts.uri = format!("http://{}{path}", shared.upstream)
                .parse()
                .expect("a valid URI");
            let answer: Result<Response<Incoming>, hyper::Error> = sender
                .send_request(Request::from_parts(parts, Full::new(body)))
                .await;
            answer
        }
    });
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(client), service)
        .await;
}
