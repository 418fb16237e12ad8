use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
#[bigtable(by_name, rename_all = "lowercase")]
enum Status {
    Active,
    #[bigtable(rename = "active")]
    Enabled,
}

fn main() {}
