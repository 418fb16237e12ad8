use std::collections::BTreeMap;

use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "2d")]
struct Cart {
    #[bigtable(key)]
    user: String,
    currency: String,
    #[bigtable(map)]
    items: BTreeMap<String, u32>,
}

fn main() {}
