use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c", table = "clicks2")]
#[ttl(default = "2d")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
}
fn main() {}
