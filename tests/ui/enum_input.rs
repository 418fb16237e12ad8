use bigtable_ttl::BigtableRow;

#[derive(BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d")]
enum Click {
    View { id: String },
    Buy { id: String },
}
fn main() {}
