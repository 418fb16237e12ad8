use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(family = "c")]
#[ttl(default = "2d")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
}
fn main() {}
