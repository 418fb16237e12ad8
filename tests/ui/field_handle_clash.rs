use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "docs", family = "d")]
#[ttl(default = "1d")]
struct Doc {
    #[bigtable(key)]
    id: String,
    version: i64,
}

impl Doc {
    const VERSION: &'static str = "1.0";
}

fn main() {}
