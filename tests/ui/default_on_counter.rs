use bigtable_ttl::BigtableRow;
use chrono::{DateTime, Utc};

#[derive(BigtableRow)]
#[bigtable(table = "limits", family = "l")]
struct RateLimit {
    #[bigtable(key)]
    user: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    #[bigtable(counter, default)]
    hits: i64,
}

fn main() {}
