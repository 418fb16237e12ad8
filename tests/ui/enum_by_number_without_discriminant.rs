use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
#[bigtable(by_number)]
#[repr(i32)]
enum Status {
    Active = 1,
    Suspended,
}

fn main() {}
