use bigtable_ttl::BigtableRow;
use chrono::{DateTime, Utc};

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(defualt = "2d")]
struct Click {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires: DateTime<Utc>,
    url: String,
}
fn main() {}
