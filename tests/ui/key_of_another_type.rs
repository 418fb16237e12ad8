use bigtable_ttl::{BigtableRow, Table};

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
}

async fn read(clicks: Table<Click>) {
    let _ = clicks.get(&7u64).await;
}

fn main() {
    let _ = read;
}
