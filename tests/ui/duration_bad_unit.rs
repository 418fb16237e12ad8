use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2 fortnights")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
}
fn main() {}
