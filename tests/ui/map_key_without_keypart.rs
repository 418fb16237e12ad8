use std::collections::BTreeMap;

use bigtable_ttl::BigtableRow;

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Sku(String);

#[derive(BigtableRow)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "2d")]
struct Cart {
    #[bigtable(key)]
    user: String,
    #[bigtable(map, family = "items")]
    items: BTreeMap<Sku, u64>,
}

fn main() {}
