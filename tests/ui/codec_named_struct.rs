use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
struct UserId {
    id: String,
}

fn main() {}
