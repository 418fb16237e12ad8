use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
#[bigtable(by_number, rename_all = "snake_case")]
#[repr(i32)]
enum Status {
    Active = 1,
    #[bigtable(rename = "off")]
    Suspended = 2,
}

fn main() {}
