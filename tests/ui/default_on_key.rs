use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "profiles", family = "p")]
#[ttl(default = "30d")]
struct Profile {
    #[bigtable(key, default)]
    id: String,
    name: String,
}

fn main() {}
