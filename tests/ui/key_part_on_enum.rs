use bigtable_ttl::KeyPart;

#[derive(KeyPart)]
enum Region {
    Eu,
    Us,
}

fn main() {}
