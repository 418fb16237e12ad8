// Bigtable's generated v2 messages are not part of the API: the raw data
// layer has types of its own (`data::Mutation`, `data::RowFilter`, …), so
// a new release of the generated crate is not a breaking release of this one.
use bigtable_ttl::proto::Mutation;

fn main() {
    let _ = std::mem::size_of::<Mutation>();
}
