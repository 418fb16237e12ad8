use bigtable_ttl::KeyPart;

#[derive(KeyPart)]
struct Ratio(f64);

fn main() {}
