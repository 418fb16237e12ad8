use proc_macro::TokenStream;
#[proc_macro_derive(BigtableRow, attributes(bigtable, ttl))]
pub fn derive(_i: TokenStream) -> TokenStream {
    TokenStream::new()
}
