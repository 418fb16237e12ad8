use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "profiles", family = "p")]
#[ttl(default = "30d")]
struct Profile {
    #[bigtable(key)]
    id: String,
    name: String,
    #[bigtable(skip, column = "c")]
    cache: Vec<String>,
}

fn main() {}
