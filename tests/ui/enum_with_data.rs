use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
#[bigtable(by_name)]
enum Status {
    Active,
    Suspended { until: i64 },
}

fn main() {}
