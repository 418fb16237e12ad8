//! Generates the conformance suite's `CloudBigtableV2TestProxy` server from
//! `proto/` with `protox` (a protobuf compiler in Rust: no `protoc` on the
//! machine); the Bigtable v2 messages it carries are those of the crate the
//! library is built on, and `google.rpc` the crate those use. The library's
//! API has types of its own, so the proxy converts (`src/convert.rs`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "google/bigtable/testproxy/test_proxy.proto";
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .extern_path(
            ".google.bigtable.v2",
            "::googleapis_tonic_google_bigtable_v2::google::bigtable::v2",
        )
        .extern_path(
            ".google.type",
            "::googleapis_tonic_google_bigtable_v2::google::r#type",
        )
        .extern_path(".google.rpc", "::googleapis_tonic_google_rpc::google::rpc")
        .compile_fds(descriptors)?;
    Ok(())
}
