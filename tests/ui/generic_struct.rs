use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d")]
struct Click<T> {
    #[bigtable(key)]
    id: String,
    payload: T,
}
fn main() {}
