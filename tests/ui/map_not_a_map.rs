use std::collections::BTreeMap;

use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "2d")]
struct Cart {
    #[bigtable(key)]
    user: String,
    #[bigtable(map, family = "items")]
    items: Vec<(String, u32)>,
    #[bigtable(map, family = "tags")]
    tags: Option<BTreeMap<String, String>>,
}

fn main() {}
