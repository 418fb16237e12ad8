//! `bigtable-ttl-testproxy`: the test proxy of Google's Bigtable client
//! conformance suite (`googleapis/cloud-bigtable-clients-test`), a gRPC
//! server implementing `google.bigtable.testproxy.CloudBigtableV2TestProxy`
//! over the library's raw data layer ([`bigtable_ttl::data`]).
//!
//! ```sh
//! cargo run -p bigtable-ttl-testproxy -- --port 9999
//! ../shared/conformance/run-each.sh 127.0.0.1:9999
//! ```
//!
//! It listens on loopback only. Each `CreateClient` makes a [`Connection`]
//! to the suite's fake server (plaintext, no credentials), under the
//! per-operation timeout the suite asks for; every data call goes through a
//! [`RawTable`] of that connection, so the suite tests the library's own
//! retries, resumption, deadlines, headers and cookies, not the proxy's.
//!
//! [`Connection`]: bigtable_ttl::Connection
//! [`RawTable`]: bigtable_ttl::data::RawTable

mod convert;
mod proxy;
mod status;

/// The generated messages and server of `test_proxy.proto`.
#[allow(
    missing_docs,
    clippy::pedantic,
    clippy::doc_markdown,
    clippy::large_enum_variant
)]
mod pb {
    tonic::include_proto!("google.bigtable.testproxy");

    /// `google.rpc`: the status every result carries.
    pub use googleapis_tonic_google_rpc::google::rpc;
}

use std::net::{Ipv4Addr, SocketAddr};

use clap::Parser;

/// The conformance suite's test proxy over bigtable-ttl's raw data layer.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The loopback port to listen on (0: any free port, printed).
    #[arg(long, default_value_t = 9999)]
    port: u16,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))).await?;
    let addr = listener.local_addr()?;
    println!("bigtable-ttl-testproxy listening on {addr}");
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tonic::transport::Server::builder()
        .add_service(
            pb::cloud_bigtable_v2_test_proxy_server::CloudBigtableV2TestProxyServer::new(
                proxy::Proxy::default(),
            ),
        )
        .serve_with_incoming_shutdown(incoming, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
