use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "archive", family = "a")]
#[ttl(default = "36500d")]
struct Archive {
    #[bigtable(key)]
    id: String,
    body: String,
    #[ttl(for = "1h")]
    preview: Option<String>,
}
fn main() {}
