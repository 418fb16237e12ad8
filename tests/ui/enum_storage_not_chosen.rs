use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
enum Status {
    Active,
    Suspended,
}

fn main() {}
