use std::collections::BTreeMap;

use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "2d")]
struct Cart {
    #[bigtable(key)]
    user: String,
    currency: String,
    #[bigtable(map, family = "c")]
    items: BTreeMap<String, u32>,
    #[bigtable(family = "extra")]
    note: Option<String>,
    #[bigtable(map, family = "extra")]
    tags: BTreeMap<String, String>,
    #[bigtable(map, family = "items2")]
    more: BTreeMap<String, u32>,
    #[bigtable(map, family = "items2")]
    again: BTreeMap<String, u32>,
}

fn main() {}
