use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
}
fn main() {}
