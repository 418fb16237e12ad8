use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "profiles", family = "p", rename_all = "UPPERCASE")]
#[ttl(default = "30d")]
struct Profile {
    #[bigtable(key)]
    id: String,
    user_name: String,
    #[bigtable(column = "USER_NAME")]
    display_name: String,
}

fn main() {}
