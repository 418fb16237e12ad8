use bigtable_ttl::BigtableRow;
use chrono::{DateTime, Utc};

#[derive(BigtableRow)]
#[bigtable(table = "limits", family = "l")]
struct RateLimit {
    #[bigtable(key)]
    user: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    #[bigtable(counter)]
    hits: u64,
    #[bigtable(counter)]
    misses: Option<i64>,
}

fn main() {}
