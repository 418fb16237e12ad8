use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
#[bigtable(by_name, rename_all = "Title Case")]
enum Status {
    Active,
    Suspended,
}

fn main() {}
