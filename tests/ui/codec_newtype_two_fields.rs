use bigtable_ttl::CellCodec;

#[derive(CellCodec)]
struct Point(i64, i64);

fn main() {}
