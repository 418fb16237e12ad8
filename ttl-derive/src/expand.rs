//! Code generation. Reads only the checked model (`ast`), never attributes.

use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{DeriveInput, Index, Path};

use crate::ast::{Container, Field, Role};
use crate::ctxt::Ctxt;
use crate::valid;

/// The `proc_macro2` twin of `#[derive(BigtableRow)]`, callable from tests.
pub fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let cx = Ctxt::new();
    let cont = Container::from_ast(&cx, &input);
    if let Some(cont) = &cont {
        valid::check(&cx, cont);
    }
    match (cx.check(), cont) {
        (Ok(()), Some(cont)) => impl_row(&cont),
        (Err(errors), cont) => {
            let mut tokens = errors.to_compile_error();
            tokens.extend(fallback(&input, cont.as_ref()));
            tokens
        }
        // `from_ast` returns `None` only after recording an error.
        (Ok(()), None) => unreachable!("no model and no error"),
    }
}

/// A span that resolves like the rest of the expansion but is reported at
/// `tokens` (a field's type): a missing `CellCodec`/`KeyPart` points there.
pub fn at(tokens: &impl Spanned) -> Span {
    Span::call_site().located_at(tokens.span())
}

/// `tokens` with every span set to `span`, including interpolated paths and
/// literals, so a whole call is reported at the field rather than across the
/// derive.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(g) = &tree {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tree = TokenTree::Group(group);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

fn ms(millis: i64) -> Literal {
    Literal::i64_unsuffixed(millis)
}

/// What generating one `BigtableRow` impl needs, computed once: one method
/// per generated item, in the manner of `serde_derive`'s output pieces.
struct Gen<'a> {
    cont: &'a Container<'a>,
    /// `::path::to::bigtable_ttl::__private`: the one door to the runtime.
    p: TokenStream,
    keys: Vec<&'a Field<'a>>,
    columns: Vec<&'a Field<'a>>,
    maps: Vec<&'a Field<'a>>,
}

fn impl_row(cont: &Container) -> TokenStream {
    let gen = Gen::new(cont);
    let p = &gen.p;
    let ident = cont.ident;
    let key_ty = gen.key_type();
    let schema = gen.schema();
    let encode_key = gen.key_parts(false);
    let row_key = gen.key_parts(true);
    let write_row_key = gen.write_row_key();
    let expiry = gen.expiry();
    let write_cells = gen.write_cells();
    let column_of = column_of(cont, &gen.columns, &gen.maps, p);
    let decode = gen.decode();
    let key_prefixes = key_prefixes(cont, &gen.keys, p);
    let field_handles = field_handles(cont, &gen.columns, &gen.maps, p);
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::BigtableRow for #ident {
                type Key = #key_ty;
                const SCHEMA: &'static #p::Schema = &#schema;
                fn encode_key(__key: &Self::Key) -> #p::Result<::std::vec::Vec<::core::primitive::u8>> {
                    #encode_key
                }
                fn row_key(&self) -> #p::Result<::std::vec::Vec<::core::primitive::u8>> {
                    #row_key
                }
                #write_row_key
                fn expiry(&self) -> #p::Expiry {
                    #expiry
                }
                fn write_cells(
                    &self,
                    __sink: &mut #p::CellSink<'_, Self>,
                ) -> ::core::result::Result<(), #p::FieldError> {
                    #write_cells
                    ::core::result::Result::Ok(())
                }
                #[inline]
                fn column_of(
                    __family: &::core::primitive::str,
                    __qualifier: &[::core::primitive::u8],
                ) -> #p::ColumnOf {
                    #column_of
                }
                #[inline]
                fn decode(
                    __row: &#p::RowView<'_>,
                ) -> ::core::result::Result<Self, #p::FieldError> {
                    #decode
                }
            }
            #key_prefixes
            #field_handles
        };
    }
}

impl<'a> Gen<'a> {
    fn new(cont: &'a Container<'a>) -> Self {
        let krate = cont.crate_path();
        Self {
            cont,
            p: quote!(#krate::__private),
            keys: cont.fields_with(Role::Key).collect(),
            columns: cont.fields_with(Role::Column).collect(),
            maps: cont.fields_with(Role::Map).collect(),
        }
    }

    /// `type Key`: the key field's type, or a tuple of the key fields' types.
    fn key_type(&self) -> TokenStream {
        if let [only] = self.keys.as_slice() {
            only.ty.to_token_stream()
        } else {
            let tys = self.keys.iter().map(|k| k.ty);
            quote!((#(#tys,)*))
        }
    }

    /// `const SCHEMA`: the struct as plain data.
    fn schema(&self) -> TokenStream {
        let p = &self.p;
        let cont = self.cont;
        let table = cont.table();
        let separator = cont.key_separator();
        let policy = self.policy();
        let families = cont.families();
        let column_defs = self.columns.iter().map(|f| self.column_def(f));
        let map_defs = self.maps.iter().map(|f| {
            let name = f.name();
            let family = cont.field_family(f);
            quote!(#p::MapColumn { field: #name, family: #family })
        });
        let written_at = if let Some(qualifier) = cont.written_at_qualifier() {
            let family = cont.family();
            quote!(::core::option::Option::Some(#p::ShadowColumn {
                family: #family,
                qualifier: #qualifier,
            }))
        } else {
            quote!(::core::option::Option::None)
        };
        let key_names: Vec<String> = self.keys.iter().map(|k| k.name()).collect();
        let owns_family = cont.owns_family();
        let marker = Literal::byte_string(cont.marker().as_bytes());
        quote! {
            #p::Schema {
                table: #table,
                policy: #policy,
                families: &[#(#families),*],
                owns_family: #owns_family,
                columns: &[#(#column_defs),*],
                maps: &[#(#map_defs),*],
                written_at: #written_at,
                marker: #marker,
                key_fields: &[#(#key_names),*],
                key_separator: #separator,
            }
        }
    }

    /// The TTL policy, its default duration parsed at compile time.
    fn policy(&self) -> TokenStream {
        let p = &self.p;
        if let Some(millis) = self.cont.default_millis() {
            let millis = ms(millis);
            quote!(#p::Policy::DefaultTtl { ttl: #p::millis(#millis) })
        } else {
            quote!(#p::Policy::CellExpiry)
        }
    }

    /// One `Column` of the schema.
    fn column_def(&self, f: &Field) -> TokenStream {
        let p = &self.p;
        let name = f.name();
        let family = self.cont.field_family(f);
        let qualifier = f.qualifier();
        let when_absent = if f.is_option() {
            quote!(#p::WhenAbsent::ReadsNone)
        } else if f.has_default() {
            quote!(#p::WhenAbsent::ReadsDefault)
        } else if f.is_counter() {
            quote!(#p::WhenAbsent::ReadsZero)
        } else {
            quote!(#p::WhenAbsent::Required)
        };
        let ttl = if let Some(millis) = f.attrs.ttl_for.as_ref().and_then(|t| t.value.millis) {
            let millis = ms(millis);
            quote!(::core::option::Option::Some(#p::millis(#millis)))
        } else {
            quote!(::core::option::Option::None)
        };
        quote! {
            #p::Column {
                field: #name,
                family: #family,
                qualifier: #qualifier,
                ttl: #ttl,
                when_absent: #when_absent,
            }
        }
    }

    /// The body of `encode_key` (from `__key`) or `row_key` (from `self`).
    fn key_parts(&self, from_self: bool) -> TokenStream {
        let p = &self.p;
        let table = self.cont.table();
        let separator = self.cont.key_separator();
        if let [only] = self.keys.as_slice() {
            // One key field: its bytes are the key, no builder.
            let name = only.name();
            let access = if from_self {
                let f = only.ident;
                quote!(&self.#f)
            } else {
                quote!(__key)
            };
            // The one call that needs the field's `KeyPart`, as in
            // `write_row_key`: a key type without one is one error, not two.
            let write = respan(
                quote!(#p::KeyBuilder::write_single(#table, #name, #access, &mut __bytes)),
                at(only.ty),
            );
            return quote! {
                let mut __bytes = ::std::vec::Vec::new();
                #write?;
                ::core::result::Result::Ok(__bytes)
            };
        }
        let parts = self.keys.iter().enumerate().map(|(i, k)| {
            let name = k.name();
            let access = if from_self {
                let f = k.ident;
                quote!(&self.#f)
            } else {
                let i = Index::from(i);
                quote!(&__key.#i)
            };
            respan(quote!(__k.part(#name, #access)?;), at(k.ty))
        });
        quote! {
            let mut __k = #p::KeyBuilder::new(#table, #separator);
            #(#parts)*
            __k.finish()
        }
    }

    /// `write_row_key` for a key of one field, its bytes appended straight
    /// to the buffer; a composite key keeps the trait's (`row_key`, copied).
    fn write_row_key(&self) -> TokenStream {
        let [only] = self.keys.as_slice() else {
            return TokenStream::new();
        };
        let p = &self.p;
        let table = self.cont.table();
        let name = only.name();
        let f = only.ident;
        let body = respan(
            quote!(#p::KeyBuilder::write_single(#table, #name, &self.#f, __out)),
            at(only.ty),
        );
        quote! {
            fn write_row_key(
                &self,
                __out: &mut ::std::vec::Vec<::core::primitive::u8>,
            ) -> #p::Result<()> {
                #body
            }
        }
    }

    /// The body of `expiry`: the `expire_at` field's, or the policy's default.
    fn expiry(&self) -> TokenStream {
        let p = &self.p;
        match self.cont.fields_with(Role::ExpireAt).next() {
            Some(f) if f.is_option() => {
                let ident = f.ident;
                quote!(#p::expiry_at_opt(self.#ident))
            }
            Some(f) => {
                let ident = f.ident;
                quote!(#p::expiry_at(self.#ident))
            }
            None => quote!(#p::Expiry::PolicyDefault),
        }
    }

    /// The statements of `write_cells`: each column, then each map, handed
    /// to the sink.
    fn write_cells(&self) -> TokenStream {
        let columns = self.columns.iter().enumerate().map(|(i, f)| {
            let ident = f.ident;
            let i = Literal::usize_unsuffixed(i);
            if f.is_option() {
                respan(quote!(__sink.optional(#i, &self.#ident)?;), at(f.ty))
            } else {
                respan(quote!(__sink.required(#i, &self.#ident)?;), at(f.ty))
            }
        });
        let maps = self.maps.iter().enumerate().map(|(i, f)| {
            let ident = f.ident;
            let i = Literal::usize_unsuffixed(i);
            respan(quote!(__sink.map(#i, &self.#ident)?;), at(f.ty))
        });
        quote!(#(#columns)* #(#maps)*)
    }

    /// The body of `decode`: every field, in declaration order, read from
    /// the row view.
    fn decode(&self) -> TokenStream {
        let mut next = Indexes::default();
        let fields: Vec<TokenStream> = self
            .cont
            .fields
            .iter()
            .map(|f| {
                let ident = f.ident;
                let value = self.decode_field(f, &mut next);
                quote!(#ident: #value)
            })
            .collect();
        let split_key = if self.keys.len() > 1 {
            quote!(let __key = __row.key_parts()?;)
        } else {
            TokenStream::new()
        };
        quote! {
            #split_key
            ::core::result::Result::Ok(Self { #(#fields),* })
        }
    }

    /// The expression reading field `f`, the next key part, column or map
    /// taken from `next`.
    fn decode_field(&self, f: &Field, next: &mut Indexes) -> TokenStream {
        match f.role() {
            // One key field: the whole key, not split.
            Role::Key if self.keys.len() == 1 => respan(quote!(__row.key_field()?), at(f.ty)),
            Role::Key => {
                let i = next.take(Role::Key);
                respan(quote!(__key.field(#i)?), at(f.ty))
            }
            Role::Column => {
                let i = next.take(Role::Column);
                decode_column(f, &i)
            }
            Role::Map => {
                let i = next.take(Role::Map);
                respan(quote!(__row.map(#i)?), at(f.ty))
            }
            Role::ExpireAt if f.is_option() => {
                quote!(::core::option::Option::Some(__row.expires_at()))
            }
            Role::ExpireAt => quote!(__row.expires_at()),
            Role::Skip => {
                let default = default_fn(f).unwrap_or_else(|| default_of(f));
                quote!(#default())
            }
        }
    }
}

/// The next index of each kind of stored part, in declaration order.
#[derive(Default)]
struct Indexes {
    key: usize,
    column: usize,
    map: usize,
}

impl Indexes {
    /// The next index for `role` (a key part, column or map), as a literal.
    fn take(&mut self, role: Role) -> Literal {
        let slot = match role {
            Role::Key => &mut self.key,
            Role::Map => &mut self.map,
            _ => &mut self.column,
        };
        let i = *slot;
        *slot += 1;
        Literal::usize_unsuffixed(i)
    }
}

/// The expression reading column field `f`, column `i` of the schema.
fn decode_column(f: &Field, i: &Literal) -> TokenStream {
    if f.is_option() {
        respan(quote!(__row.column_opt(#i)?), at(f.ty))
    } else if let Some(default) = default_fn(f) {
        // A row written before the field existed. Reported whole at the
        // field (or the `default` path), so a type without `Default` is one
        // error there.
        let span = f
            .attrs
            .default
            .as_ref()
            .and_then(|d| d.value.as_ref())
            .map_or_else(|| at(f.ty), at);
        respan(
            quote!(::core::option::Option::unwrap_or_else(__row.column_opt(#i)?, #default)),
            span,
        )
    } else if f.is_counter() {
        // An absent counter is zero.
        respan(
            quote!(::core::option::Option::unwrap_or(__row.column_opt(#i)?, 0)),
            at(f.ty),
        )
    } else {
        respan(quote!(__row.column(#i)?), at(f.ty))
    }
}

/// The function filling a `default` field whose column is absent: the
/// user's `default = "path"`, or `Default::default` spanned at the field's
/// type (a type without `Default` is reported there).
fn default_fn(f: &Field) -> Option<TokenStream> {
    let default = f.attrs.default.as_ref()?;
    Some(match &default.value {
        Some(path) => respan(path.to_token_stream(), at(path)),
        None => default_of(f),
    })
}

/// `<T as Default>::default`, reported at the field's type.
fn default_of(f: &Field) -> TokenStream {
    let ty = f.ty;
    respan(quote!(<#ty as ::core::default::Default>::default), at(f.ty))
}

/// One associated const per stored column, named after its field in upper
/// case (`Lease::OWNER`): the typed handle conditions are built from. Its
/// value type is the field's, or `Option`'s inner type.
fn field_handles(
    cont: &Container,
    columns: &[&Field],
    maps: &[&Field],
    p: &TokenStream,
) -> TokenStream {
    let ident = cont.ident;
    let map_handles = maps.iter().enumerate().filter_map(|(i, f)| {
        let (k, v) = f.map_types()?;
        let name = f.name();
        let handle = syn::Ident::new(&name.to_uppercase(), f.ident.span());
        let i = Literal::usize_unsuffixed(i);
        let doc = format!(
            " The map field `{name}`: `table.put_entry(&key, {ident}::{handle}, &k, &v, expiry)`."
        );
        let item = quote! {
            #[doc = #doc]
            pub const #handle: #p::MapField<#ident, #k, #v> = #p::MapField::new(#i);
        };
        Some(respan(item, at(f.ident)))
    });
    let handles = columns.iter().enumerate().map(|(i, f)| {
        let name = f.name();
        let handle = syn::Ident::new(&name.to_uppercase(), f.ident.span());
        let value_ty = f.option_inner.unwrap_or(f.ty);
        let i = Literal::usize_unsuffixed(i);
        let item = if f.is_counter() {
            let doc = format!(
                " The counter `{name}`: `table.increment(&key, {ident}::{handle}, 1, expiry)`."
            );
            quote! {
                #[doc = #doc]
                pub const #handle: #p::CounterField<#ident> = #p::CounterField::new(#i);
            }
        } else {
            let doc = format!(
                " The stored field `{name}`, for conditional writes: `{ident}::{handle}.equals(&value)`."
            );
            quote! {
                #[doc = #doc]
                pub const #handle: #p::Field<#ident, #value_ty> = #p::Field::new(#i);
            }
        };
        // Reported at the field: a clash with a const of the user's own.
        respan(item, at(f.ident))
    });
    quote! {
        #[automatically_derived]
        impl #ident {
            #(#handles)*
            #(#map_handles)*
        }
    }
}

/// `KeyPrefix` for the tuples of the first 1 ..< n key fields' types of a
/// composite key of n fields: typed prefix scans (`Scan::key_prefix`).
fn key_prefixes(cont: &Container, keys: &[&Field], p: &TokenStream) -> TokenStream {
    let ident = cont.ident;
    let table = cont.table();
    let separator = cont.key_separator();
    let impls = (1..keys.len()).map(|k| {
        let first = &keys[..k];
        let tys = first.iter().map(|f| f.ty);
        let parts = first.iter().enumerate().map(|(i, f)| {
            let name = f.name();
            let i = Index::from(i);
            respan(quote!(__k.part(#name, &self.#i)?;), at(f.ty))
        });
        quote! {
            #[automatically_derived]
            impl #p::KeyPrefix<#ident> for (#(#tys,)*) {
                fn key_prefix(&self) -> #p::Result<::std::vec::Vec<::core::primitive::u8>> {
                    let mut __k = #p::KeyBuilder::new(#table, #separator);
                    #(#parts)*
                    __k.finish_prefix()
                }
            }
        }
    });
    quote!(#(#impls)*)
}

/// The body of `column_of`: a `match` on the family, then on the qualifier
/// bytes, as hand-written decoding does (no string search per cell).
fn column_of(
    cont: &Container,
    columns: &[&Field],
    maps: &[&Field],
    p: &TokenStream,
) -> TokenStream {
    // Families in schema order, each with its (qualifier, answer) arms.
    let mut families: Vec<(String, Vec<(String, TokenStream)>)> = Vec::new();
    let mut arm = |family: String, qualifier: String, answer: TokenStream| match families
        .iter_mut()
        .find(|(f, _)| *f == family)
    {
        Some((_, arms)) => arms.push((qualifier, answer)),
        None => families.push((family, vec![(qualifier, answer)])),
    };
    for (i, f) in columns.iter().enumerate() {
        let i = Literal::usize_unsuffixed(i);
        arm(
            cont.field_family(f),
            f.qualifier(),
            quote!(#p::ColumnOf::Column(#i)),
        );
    }
    if let Some(qualifier) = cont.written_at_qualifier() {
        arm(cont.family(), qualifier, quote!(#p::ColumnOf::WrittenAt));
    }
    // The row marker: two NUL bytes and a name, which the validation keeps
    // from being a column's name; in a family the struct owns, the one-byte
    // marker of earlier versions too (see `liveness`).
    arm(cont.family(), cont.marker(), quote!(#p::ColumnOf::Marker));
    if cont.owns_family() {
        arm(cont.family(), "\0".to_owned(), quote!(#p::ColumnOf::Marker));
    }
    let families = families.into_iter().map(|(family, arms)| {
        let arms = arms.into_iter().map(|(qualifier, answer)| {
            let qualifier = Literal::byte_string(qualifier.as_bytes());
            quote!(#qualifier => #answer,)
        });
        quote! {
            #family => match __qualifier {
                #(#arms)*
                _ => #p::ColumnOf::Other,
            },
        }
    });
    // A map's family holds its entries and nothing else: any qualifier.
    let map_families = maps.iter().enumerate().map(|(i, f)| {
        let family = cont.field_family(f);
        let i = Literal::usize_unsuffixed(i);
        quote!(#family => #p::ColumnOf::MapEntry(#i),)
    });
    quote! {
        match __family {
            #(#families)*
            #(#map_families)*
            _ => #p::ColumnOf::Other,
        }
    }
}

/// What is emitted beside the errors: an impl whose bodies are never run, so
/// code using the type does not pile up "trait not implemented" errors
/// (after thiserror's `fallback.rs`).
fn fallback(input: &DeriveInput, cont: Option<&Container>) -> TokenStream {
    let krate: Path = cont.map_or_else(|| syn::parse_quote!(::bigtable_ttl), Container::crate_path);
    let p = quote!(#krate::__private);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let keys: Vec<&Field> = cont.map_or_else(Vec::new, |c| c.fields_with(Role::Key).collect());
    let key_ty = if let [only] = keys.as_slice() {
        only.ty.to_token_stream()
    } else {
        let tys = keys.iter().map(|k| k.ty);
        quote!((#(#tys,)*))
    };
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #p::BigtableRow for #ident #ty_generics #where_clause {
                type Key = #key_ty;
                const SCHEMA: &'static #p::Schema = &#p::Schema {
                    table: "",
                    policy: #p::Policy::CellExpiry,
                    families: &[],
                    owns_family: false,
                    columns: &[],
                    maps: &[],
                    written_at: ::core::option::Option::None,
                    marker: b"",
                    key_fields: &[],
                    key_separator: "",
                };
                fn encode_key(_: &Self::Key) -> #p::Result<::std::vec::Vec<::core::primitive::u8>> {
                    ::core::unreachable!()
                }
                fn row_key(&self) -> #p::Result<::std::vec::Vec<::core::primitive::u8>> {
                    ::core::unreachable!()
                }
                fn expiry(&self) -> #p::Expiry {
                    ::core::unreachable!()
                }
                fn write_cells(
                    &self,
                    _: &mut #p::CellSink<'_, Self>,
                ) -> ::core::result::Result<(), #p::FieldError> {
                    ::core::unreachable!()
                }
                fn decode(_: &#p::RowView<'_>) -> ::core::result::Result<Self, #p::FieldError> {
                    ::core::unreachable!()
                }
            }
        };
    }
}
