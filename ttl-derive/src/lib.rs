//! `#[derive(BigtableRow)]` for `bigtable-ttl`. Use it through the
//! `bigtable-ttl` facade, which re-exports it beside the runtime it targets.

mod ast;
mod attr;
mod ctxt;
mod duration;
mod expand;
mod symbol;
mod valid;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Derives `BigtableRow`: the schema, row key, expiry, cell encoding and
/// decoding of a struct stored as one Bigtable row.
#[proc_macro_derive(BigtableRow, attributes(bigtable, ttl))]
pub fn derive_bigtable_row(input: TokenStream) -> TokenStream {
    expand::derive(input.into()).into()
}
