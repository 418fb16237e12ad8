use bigtable_ttl::BigtableRow;

struct Locale(String);

impl bigtable_ttl::CellCodec for Locale {
    fn encode(&self) -> Result<Vec<u8>, bigtable_ttl::CodecError> {
        self.0.encode()
    }
    fn decode(bytes: &[u8]) -> Result<Self, bigtable_ttl::CodecError> {
        String::decode(bytes).map(Locale)
    }
}

#[derive(BigtableRow)]
#[bigtable(table = "profiles", family = "p")]
#[ttl(default = "30d")]
struct Profile {
    #[bigtable(key)]
    id: String,
    name: String,
    #[bigtable(default)]
    locale: Locale,
}

fn main() {}
