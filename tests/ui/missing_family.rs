use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks")]
#[ttl(default = "2d")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
}
fn main() {}
