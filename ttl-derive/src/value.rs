//! `#[derive(CellCodec)]` and `#[derive(KeyPart)]`: transparent newtypes
//! (`struct UserId(String);`) and C-like enums stored by name or by number.
//!
//! Smaller than the row derive, so model, rules and code live in one file,
//! in that order; errors are still collected in a [`Ctxt`] and all shown.

use proc_macro2::{Literal, TokenStream};
use quote::{quote, ToTokens};
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr, Path, Type};

use crate::attr::{self, Keyed, RenameAll};
use crate::ctxt::Ctxt;
use crate::expand::{at, respan};
use crate::symbol;

/// Which trait is derived.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Derive {
    CellCodec,
    KeyPart,
}

impl Derive {
    fn name(self) -> &'static str {
        match self {
            Derive::CellCodec => "CellCodec",
            Derive::KeyPart => "KeyPart",
        }
    }
}

/// `#[bigtable(...)]` on the type.
#[derive(Default)]
struct TypeAttrs {
    by_name: Option<Keyed<()>>,
    by_number: Option<Keyed<()>>,
    rename_all: Option<Keyed<RenameAll>>,
    crate_path: Option<Keyed<Path>>,
}

impl TypeAttrs {
    fn from_attrs(cx: &Ctxt, attrs: &[Attribute], is_enum: bool) -> Self {
        let mut this = TypeAttrs::default();
        let (place, valid) = if is_enum {
            ("enum", symbol::ENUM_BIGTABLE_KEYS)
        } else {
            ("newtype", symbol::NEWTYPE_BIGTABLE_KEYS)
        };
        for attr in attrs.iter().filter(|a| a.path() == symbol::BIGTABLE) {
            let result = attr.parse_nested_meta(|meta| {
                this.key(cx, &meta, is_enum)?.map_or(Ok(()), |()| {
                    attr::unknown(cx, &meta, symbol::BIGTABLE, place, valid)
                })
            });
            if let Err(e) = result {
                cx.syn_error(e);
            }
        }
        this
    }

    /// Reads one key; `Some(())` when it is not one of this place's keys.
    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta, is_enum: bool) -> syn::Result<Option<()>> {
        let p = &meta.path;
        if *p == symbol::CRATE {
            let path = attr::parse_path(meta)?;
            attr::set_once(cx, &mut self.crate_path, symbol::CRATE, p, path);
        } else if !is_enum {
            return Ok(Some(()));
        } else if *p == symbol::BY_NAME {
            attr::no_value(meta, symbol::BY_NAME)?;
            attr::set_once(cx, &mut self.by_name, symbol::BY_NAME, p, ());
        } else if *p == symbol::BY_NUMBER {
            attr::no_value(meta, symbol::BY_NUMBER)?;
            attr::set_once(cx, &mut self.by_number, symbol::BY_NUMBER, p, ());
        } else if *p == symbol::RENAME_ALL {
            let v = attr::parse_rename_all(cx, meta)?;
            attr::set_once(cx, &mut self.rename_all, symbol::RENAME_ALL, p, v);
        } else {
            return Ok(Some(()));
        }
        Ok(None)
    }
}

/// `#[bigtable(rename = "...")]` on a variant.
fn variant_rename(cx: &Ctxt, attrs: &[Attribute]) -> Option<Keyed<LitStr>> {
    let mut rename = None;
    for attr in attrs.iter().filter(|a| a.path() == symbol::BIGTABLE) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path == symbol::RENAME {
                let v = attr::parse_str(&meta, symbol::RENAME)?;
                attr::set_once(cx, &mut rename, symbol::RENAME, &meta.path, v);
                Ok(())
            } else {
                attr::unknown(
                    cx,
                    &meta,
                    symbol::BIGTABLE,
                    "variant",
                    symbol::VARIANT_BIGTABLE_KEYS,
                )
            }
        });
        if let Err(e) = result {
            cx.syn_error(e);
        }
    }
    rename
}

/// The integer types a `by_number` enum may be `#[repr]`ed as: fixed widths
/// only (`usize` would make the stored width depend on the platform).
const REPRS: &[&str] = &["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64"];

/// The integer of the enum's `#[repr(...)]`, if it is one of [`REPRS`].
fn int_repr(attrs: &[Attribute]) -> Option<Ident> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("repr")) {
        // Other reprs (`C`, `align`) and their arguments are not ours to judge.
        let _ = attr.parse_nested_meta(|meta| {
            if let Some(ident) = meta.path.get_ident() {
                if REPRS.iter().any(|r| ident == r) {
                    found = Some(ident.clone());
                }
            }
            if meta.input.peek(syn::token::Paren) {
                meta.input.parse::<proc_macro2::Group>()?;
            }
            Ok(())
        });
    }
    found
}

struct Variant<'a> {
    ident: &'a Ident,
    /// The bytes stored by name: `rename`, else `rename_all`, else the name.
    stored: String,
}

enum Shape<'a> {
    Newtype(&'a Type),
    ByName(Vec<Variant<'a>>),
    ByNumber {
        repr: Ident,
        variants: Vec<&'a Ident>,
    },
}

/// The `proc_macro2` twin of `#[derive(CellCodec)]`.
pub fn derive_cell_codec(input: TokenStream) -> TokenStream {
    derive(input, Derive::CellCodec)
}

/// The `proc_macro2` twin of `#[derive(KeyPart)]`.
pub fn derive_key_part(input: TokenStream) -> TokenStream {
    derive(input, Derive::KeyPart)
}

fn derive(input: TokenStream, which: Derive) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let cx = Ctxt::new();
    let is_enum = matches!(input.data, Data::Enum(_));
    let attrs = TypeAttrs::from_attrs(&cx, &input.attrs, is_enum);
    let shape = shape(&cx, &input, &attrs, which);
    let krate: Path = attrs
        .crate_path
        .as_ref()
        .map_or_else(|| syn::parse_quote!(::bigtable_ttl), |k| k.value.clone());
    let p = quote!(#krate::__private);
    let ident = &input.ident;
    match (cx.check(), shape) {
        (Ok(()), Some(shape)) => match which {
            Derive::CellCodec => cell_codec(&p, ident, &shape),
            Derive::KeyPart => key_part(&p, ident, &shape),
        },
        (Err(errors), _) => {
            let mut tokens = errors.to_compile_error();
            tokens.extend(fallback(&p, &input, which));
            tokens
        }
        (Ok(()), None) => unreachable!("no shape and no error"),
    }
}

fn shape<'a>(
    cx: &Ctxt,
    input: &'a DeriveInput,
    attrs: &TypeAttrs,
    which: Derive,
) -> Option<Shape<'a>> {
    let name = which.name();
    let what = match which {
        Derive::CellCodec => "newtypes (`struct UserId(String);`) and C-like enums",
        Derive::KeyPart => "newtypes (`struct Tenant(u32);`)",
    };
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            format!("#[derive({name})] does not support generic types: write the newtype or enum with a concrete type"),
        );
        return None;
    }
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                Some(Shape::Newtype(&fields.unnamed[0].ty))
            }
            Fields::Unnamed(fields) => {
                cx.error_spanned_by(
                    fields,
                    format!(
                        "#[derive({name})] is for {what}: a newtype has exactly one field, \
                         `{}` has {}; store several values as several fields of the row, or \
                         as one `Json<T>`",
                        input.ident,
                        fields.unnamed.len()
                    ),
                );
                None
            }
            Fields::Named(fields) => {
                cx.error_spanned_by(
                    fields,
                    format!(
                        "#[derive({name})] is for {what}, not structs with named fields: write \
                         `struct {}(T);`, or store the struct as JSON with `Json<{}>`",
                        input.ident, input.ident
                    ),
                );
                None
            }
            Fields::Unit => {
                cx.error_spanned_by(
                    &input.ident,
                    format!("#[derive({name})] is for {what}: a unit struct has no value to store"),
                );
                None
            }
        },
        Data::Enum(data) if which == Derive::KeyPart => {
            cx.error_spanned_by(
                data.enum_token,
                format!(
                    "#[derive(KeyPart)] is for {what}, not enums: key parts must sort in a \
                     stable byte order; wrap the enum's number in a newtype (`struct Kind(u8);`)"
                ),
            );
            None
        }
        Data::Enum(data) => enum_shape(cx, input, data, attrs),
        Data::Union(data) => {
            cx.error_spanned_by(
                data.union_token,
                format!("#[derive({name})] is for {what}: unions are not supported"),
            );
            None
        }
    }
}

fn enum_shape<'a>(
    cx: &Ctxt,
    input: &'a DeriveInput,
    data: &'a syn::DataEnum,
    attrs: &TypeAttrs,
) -> Option<Shape<'a>> {
    let ident = &input.ident;
    let ok = unit_variants_only(cx, ident, data);
    let by_number = match (&attrs.by_name, &attrs.by_number) {
        (Some(_), Some(second)) => {
            cx.error_spanned_by(
                &second.key,
                "choose one of `by_name` and `by_number`: a cell holds either the variant's \
                 name or its number",
            );
            return None;
        }
        (None, None) => {
            cx.error_spanned_by(
                ident,
                format!(
                    "choose how `{ident}` is stored: `#[bigtable(by_name)]` (the variant's \
                     name as UTF-8, which survives reordering and new variants) or \
                     `#[bigtable(by_number)]` with `#[repr(i32)]` and explicit discriminants \
                     (the number, big-endian)"
                ),
            );
            return None;
        }
        (None, Some(by_number)) => Some(by_number),
        (Some(_), None) => None,
    };
    match by_number {
        Some(by_number) => by_number_shape(cx, input, data, attrs, by_number, ok),
        None => by_name_shape(cx, data, attrs, ok),
    }
}

/// Whether every variant is a unit variant and there is at least one;
/// an error at each that is not.
fn unit_variants_only(cx: &Ctxt, ident: &Ident, data: &syn::DataEnum) -> bool {
    let mut ok = true;
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) {
            cx.error_spanned_by(
                &variant.fields,
                format!(
                    "#[derive(CellCodec)] stores C-like enums only, but `{ident}::{}` carries \
                     data; store the enum as JSON with `Json<{ident}>`, or split the data into \
                     fields of the row",
                    variant.ident
                ),
            );
            ok = false;
        }
    }
    if data.variants.is_empty() {
        cx.error_spanned_by(
            ident,
            format!("`{ident}` has no variants: there is no value to store"),
        );
        ok = false;
    }
    ok
}

/// A `by_number` enum: an integer `repr` and an explicit discriminant on
/// every variant, no names.
fn by_number_shape<'a>(
    cx: &Ctxt,
    input: &'a DeriveInput,
    data: &'a syn::DataEnum,
    attrs: &TypeAttrs,
    by_number: &Keyed<()>,
    mut ok: bool,
) -> Option<Shape<'a>> {
    let ident = &input.ident;
    if let Some(rename_all) = &attrs.rename_all {
        cx.error_spanned_by(
            &rename_all.key,
            "`rename_all` is for `by_name` enums: a `by_number` enum stores numbers, not names",
        );
    }
    let repr = int_repr(&input.attrs);
    if repr.is_none() {
        cx.error_spanned_by(
            &by_number.key,
            format!(
                "`by_number` needs an integer `#[repr(...)]` on `{ident}` ({}): it fixes \
                 the stored width",
                REPRS.join(", ")
            ),
        );
    }
    for variant in &data.variants {
        if let Some(rename) = variant_rename(cx, &variant.attrs) {
            cx.error_spanned_by(
                &rename.key,
                "`rename` is for `by_name` enums: a `by_number` variant is stored as its \
                 discriminant",
            );
        }
        if variant.discriminant.is_none() {
            cx.error_spanned_by(
                &variant.ident,
                format!(
                    "`by_number` needs an explicit discriminant on every variant \
                     (`{} = 1`): the stored number must not change when variants are \
                     reordered or added",
                    variant.ident
                ),
            );
            ok = false;
        }
    }
    let repr = repr?;
    ok.then(|| Shape::ByNumber {
        repr,
        variants: data.variants.iter().map(|v| &v.ident).collect(),
    })
}

/// A `by_name` enum: each variant stored as its name (renamed, or in the
/// `rename_all` case), no two the same.
fn by_name_shape<'a>(
    cx: &Ctxt,
    data: &'a syn::DataEnum,
    attrs: &TypeAttrs,
    mut ok: bool,
) -> Option<Shape<'a>> {
    let case = attrs.rename_all.as_ref().and_then(|r| r.value.case);
    let mut variants: Vec<Variant> = Vec::new();
    for variant in &data.variants {
        let rename = variant_rename(cx, &variant.attrs);
        let (stored, span_at) = match (&rename, case) {
            (Some(r), _) => (r.value.value(), r.value.to_token_stream()),
            (None, Some(case)) => (
                case.variant(&variant.ident.to_string()),
                variant.ident.to_token_stream(),
            ),
            (None, None) => (variant.ident.to_string(), variant.ident.to_token_stream()),
        };
        if let Some(prev) = variants.iter().find(|v| v.stored == stored) {
            cx.error_spanned_by(
                &span_at,
                format!(
                    "variants `{}` and `{}` are both stored as {stored:?}; give one of them \
                     another `#[bigtable(rename = \"...\")]`",
                    prev.ident, variant.ident
                ),
            );
            ok = false;
        }
        variants.push(Variant {
            ident: &variant.ident,
            stored,
        });
    }
    ok.then_some(Shape::ByName(variants))
}

fn cell_codec(p: &TokenStream, ident: &Ident, shape: &Shape) -> TokenStream {
    let result = quote!(::core::result::Result);
    let bytes = quote!(::std::vec::Vec<::core::primitive::u8>);
    // `encode` and `encode_into`, each from the stored bytes `__stored`
    // (a `&[u8]`) where the value has them.
    let from_stored = |stored: TokenStream| {
        (
            quote! {
                #stored
                #result::Ok(::std::borrow::ToOwned::to_owned(__stored))
            },
            quote! {
                #stored
                ::std::vec::Vec::extend_from_slice(__out, __stored);
                #result::Ok(())
            },
        )
    };
    let (encode, encode_into, decode) = match shape {
        Shape::Newtype(inner) => {
            let trait_ = respan(quote!(#p::CellCodec), at(inner));
            (
                quote!(<#inner as #trait_>::encode(&self.0)),
                quote!(<#inner as #trait_>::encode_into(&self.0, __out)),
                quote!(#result::map(<#inner as #trait_>::decode(__bytes), #ident)),
            )
        }
        Shape::ByName(variants) => {
            let name = ident.to_string();
            let stored: Vec<Literal> = variants
                .iter()
                .map(|v| Literal::byte_string(v.stored.as_bytes()))
                .collect();
            let idents: Vec<&Ident> = variants.iter().map(|v| v.ident).collect();
            let (encode, encode_into) = from_stored(quote! {
                let __stored: &'static [::core::primitive::u8] = match *self {
                    #(#ident::#idents => #stored,)*
                };
            });
            (
                encode,
                encode_into,
                quote! {
                    match __bytes {
                        #(#stored => #result::Ok(#ident::#idents),)*
                        _ => #result::Err(#p::unknown_name(#name, __bytes)),
                    }
                },
            )
        }
        Shape::ByNumber { repr, variants } => {
            let name = ident.to_string();
            let repr = quote!(::core::primitive::#repr);
            let (encode, encode_into) = from_stored(quote! {
                let __n: #repr = match *self {
                    #(#ident::#variants => #ident::#variants as #repr,)*
                };
                let __stored = &<#repr>::to_be_bytes(__n)[..];
            });
            (
                encode,
                encode_into,
                quote! {
                    let __n = <#repr>::from_be_bytes(#p::fixed_width(__bytes)?);
                    #(
                        if __n == #ident::#variants as #repr {
                            return #result::Ok(#ident::#variants);
                        }
                    )*
                    #result::Err(#p::unknown_number(#name, __n))
                },
            )
        }
    };
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::CellCodec for #ident {
                #[inline]
                fn encode(&self) -> #result<#bytes, #p::CodecError> {
                    #encode
                }
                #[inline]
                fn encode_into(&self, __out: &mut #bytes) -> #result<(), #p::CodecError> {
                    #encode_into
                }
                #[inline]
                fn decode(__bytes: &[::core::primitive::u8]) -> #result<Self, #p::CodecError> {
                    #decode
                }
            }
        };
    }
}

fn key_part(p: &TokenStream, ident: &Ident, shape: &Shape) -> TokenStream {
    let Shape::Newtype(inner) = shape else {
        unreachable!("enums are refused for KeyPart");
    };
    let result = quote!(::core::result::Result);
    let bytes = quote!(::std::vec::Vec<::core::primitive::u8>);
    let trait_ = respan(quote!(#p::KeyPart), at(inner));
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::KeyPart for #ident {
                #[inline]
                fn write_key(&self, __out: &mut #bytes) -> #result<(), #p::CodecError> {
                    <#inner as #trait_>::write_key(&self.0, __out)
                }
                #[inline]
                fn read_key(__bytes: &[::core::primitive::u8]) -> #result<Self, #p::CodecError> {
                    #result::map(<#inner as #trait_>::read_key(__bytes), #ident)
                }
                #[inline]
                fn to_key(&self) -> #result<#bytes, #p::CodecError> {
                    <#inner as #trait_>::to_key(&self.0)
                }
            }
        };
    }
}

/// An impl beside the errors, so uses of the type do not pile up "trait
/// not implemented" errors (as the row derive's fallback).
fn fallback(p: &TokenStream, input: &DeriveInput, which: Derive) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let result = quote!(::core::result::Result);
    let bytes = quote!(::std::vec::Vec<::core::primitive::u8>);
    let body = match which {
        Derive::CellCodec => quote! {
            impl #impl_generics #p::CellCodec for #ident #ty_generics #where_clause {
                fn encode(&self) -> #result<#bytes, #p::CodecError> {
                    ::core::unreachable!()
                }
                fn decode(_: &[::core::primitive::u8]) -> #result<Self, #p::CodecError> {
                    ::core::unreachable!()
                }
            }
        },
        Derive::KeyPart => quote! {
            impl #impl_generics #p::KeyPart for #ident #ty_generics #where_clause {
                fn write_key(&self, _: &mut #bytes) -> #result<(), #p::CodecError> {
                    ::core::unreachable!()
                }
                fn read_key(_: &[::core::primitive::u8]) -> #result<Self, #p::CodecError> {
                    ::core::unreachable!()
                }
            }
        },
    };
    quote! {
        const _: () = {
            #[automatically_derived]
            #body
        };
    }
}
