use bigtable_ttl::BigtableRow;

struct Connection;

#[derive(BigtableRow)]
#[bigtable(table = "profiles", family = "p")]
#[ttl(default = "30d")]
struct Profile {
    #[bigtable(key)]
    id: String,
    name: String,
    #[bigtable(skip)]
    conn: Connection,
}

fn main() {}
