use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "visits", family = "v", key_separator = "0")]
#[ttl(default = "1h")]
struct Visit {
    #[bigtable(key)]
    customer: String,
    #[bigtable(key)]
    seq: u64,
    page: String,
}
fn main() {}
