//! Generates the conformance suite's `CloudBigtableV2TestProxy` server from
//! `proto/` with `protox` (a protobuf compiler in Rust: no `protoc` on the
//! machine), Bigtable's v2 messages mapped to the library's own types and
//! `google.rpc` to the crate those types use.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "google/bigtable/testproxy/test_proxy.proto";
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .extern_path(".google.bigtable.v2", "::bigtable_ttl::proto")
        .extern_path(".google.rpc", "::googleapis_tonic_google_rpc::google::rpc")
        .compile_fds(descriptors)?;
    Ok(())
}
