use std::collections::BTreeMap;

use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "2d")]
struct Cart {
    #[bigtable(key)]
    user: String,
    #[bigtable(map, family = "items", column = "items")]
    items: BTreeMap<String, u32>,
    #[bigtable(map, family = "tags")]
    #[ttl(for = "1h")]
    tags: BTreeMap<String, String>,
    #[bigtable(key, map)]
    region: String,
}

fn main() {}
