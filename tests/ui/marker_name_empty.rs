use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "people", family = "p", marker = "")]
#[ttl(default = "1d")]
struct Person {
    #[bigtable(key)]
    id: String,
    name: String,
}
fn main() {}
