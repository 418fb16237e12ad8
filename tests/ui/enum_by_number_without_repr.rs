use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
#[bigtable(by_number)]
enum Status {
    Active = 1,
    Suspended = 2,
}

fn main() {}
