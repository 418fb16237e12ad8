use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "profiles", family = "p", rename_all = "camel_case")]
#[ttl(default = "30d")]
struct Profile {
    #[bigtable(key)]
    id: String,
    user_name: String,
}

fn main() {}
