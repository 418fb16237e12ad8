use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
#[bigtable(by_name, by_number)]
#[repr(u8)]
enum Status {
    Active = 1,
    Suspended = 2,
}

fn main() {}
