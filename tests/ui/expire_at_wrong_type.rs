use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "sessions", family = "s")]
struct Session {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: i64,
    user: String,
}
fn main() {}
