use bigtable_ttl::BigtableRow;

struct Url(String);

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: Url,
}
fn main() {}
