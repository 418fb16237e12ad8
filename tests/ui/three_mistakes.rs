use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2 days and a bit")]
struct Click {
    #[bigtable(key)]
    id: String,
    #[bigtable(colum = "u")]
    url: String,
    #[ttl(expire_at)]
    expires: i64,
}
fn main() {}
