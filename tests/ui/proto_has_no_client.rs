// Bigtable's v2 messages are re-exported as `proto`, tonic's generated
// client is not: calls go through `data::RawTable`.
use bigtable_ttl::proto::bigtable_client::BigtableClient;

fn main() {
    let _ = std::mem::size_of::<BigtableClient<()>>();
}
