use bigtable_ttl::BigtableRow;
use chrono::{DateTime, Utc};

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d", written_at)]
struct Click {
    #[bigtable(key)]
    id: String,
    written_at: DateTime<Utc>,
}
fn main() {}
