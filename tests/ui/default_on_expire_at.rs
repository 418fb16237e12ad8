use bigtable_ttl::BigtableRow;
use chrono::{DateTime, Utc};

#[derive(BigtableRow)]
#[bigtable(table = "sessions", family = "s")]
struct Session {
    #[bigtable(key)]
    id: String,
    #[bigtable(default)]
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    user: String,
}

fn main() {}
