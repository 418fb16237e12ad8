use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "limits", family = "l")]
#[ttl(default = "2h")]
struct RateLimit {
    #[bigtable(key)]
    user: String,
    #[bigtable(counter)]
    hits: i64,
}

fn main() {}
