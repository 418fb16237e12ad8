use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "archive", family = "a")]
#[ttl(default = "3660000d")]
struct Archive {
    #[bigtable(key)]
    id: String,
    body: String,
}
fn main() {}
