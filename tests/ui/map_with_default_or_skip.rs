use std::collections::BTreeMap;

use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "2d")]
struct Cart {
    #[bigtable(key)]
    user: String,
    currency: String,
    #[bigtable(map, family = "items", default)]
    items: BTreeMap<String, u64>,
    #[bigtable(map, family = "tags", skip)]
    tags: BTreeMap<String, String>,
}

fn main() {}
