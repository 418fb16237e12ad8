use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "0s")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
}
fn main() {}
