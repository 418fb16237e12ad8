use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d")]
struct Click {
    #[bigtable(key)]
    id: String,
    #[bigtable(column = "\0marker")]
    url: String,
}
fn main() {}
