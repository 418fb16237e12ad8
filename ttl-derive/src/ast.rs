//! A typed model of the input struct, borrowed from syn, with its attributes
//! already read. `valid.rs` checks it, `expand.rs` turns it into code.

use syn::{
    Data, DeriveInput, Fields, GenericArgument, Generics, Ident, LitStr, Path, PathArguments, Type,
};

use crate::attr;
use crate::ctxt::Ctxt;
use crate::symbol;

pub struct Container<'a> {
    pub ident: &'a Ident,
    pub generics: &'a Generics,
    pub attrs: attr::Container,
    pub fields: Vec<Field<'a>>,
}

pub struct Field<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    pub attrs: attr::Field,
    /// `T` when the type is spelled `Option<T>` (detected syntactically).
    pub option_inner: Option<&'a Type>,
    /// The column qualifier: `column = "..."`, else the field name under
    /// the struct's `rename_all`, else the field name.
    pub qualifier: String,
}

/// What a field is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Part of the row key (not a column).
    Key,
    /// The row's expiry (not a column).
    ExpireAt,
    /// A stored column.
    Column,
    /// A map stored one cell per entry in a family of its own.
    Map,
    /// `#[bigtable(skip)]`: not stored, filled with its default when read.
    Skip,
}

impl<'a> Container<'a> {
    /// The model of `input`, or `None` (with the error recorded) when it is
    /// not a struct with named fields.
    pub fn from_ast(cx: &Ctxt, input: &'a DeriveInput) -> Option<Self> {
        const NAMED: &str = "#[derive(BigtableRow)] needs a struct with named fields \
                             (one per key part and column)";
        let attrs = attr::Container::from_attrs(cx, &input.attrs);
        let fields = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) => &named.named,
                Fields::Unnamed(unnamed) => {
                    cx.error_spanned_by(
                        unnamed,
                        format!("{NAMED}; a tuple struct has no field names to use as column qualifiers"),
                    );
                    return None;
                }
                Fields::Unit => {
                    cx.error_spanned_by(
                        &input.ident,
                        format!("{NAMED}; a unit struct has no key and no columns"),
                    );
                    return None;
                }
            },
            Data::Enum(data) => {
                cx.error_spanned_by(
                    data.enum_token,
                    format!("{NAMED}; an enum cannot be mapped to one row (wrap it in a struct field with a `CellCodec`)"),
                );
                return None;
            }
            Data::Union(data) => {
                cx.error_spanned_by(
                    data.union_token,
                    format!("{NAMED}; unions are not supported"),
                );
                return None;
            }
        };
        let case = attrs.rename_all.as_ref().and_then(|r| r.value.case);
        let fields = fields
            .iter()
            .map(|f| {
                // Named fields always have an ident.
                let ident = f.ident.as_ref().expect("named field");
                let attrs = attr::Field::from_attrs(cx, &f.attrs);
                let name = syn::ext::IdentExt::unraw(ident).to_string();
                let qualifier = match (&attrs.column, case) {
                    (Some(column), _) => column.value.value(),
                    (None, Some(case)) => case.field(&name),
                    (None, None) => name,
                };
                Field {
                    ident,
                    ty: &f.ty,
                    attrs,
                    option_inner: option_inner(&f.ty),
                    qualifier,
                }
            })
            .collect();
        Some(Container {
            ident: &input.ident,
            generics: &input.generics,
            attrs,
            fields,
        })
    }

    pub fn fields_with(&self, role: Role) -> impl Iterator<Item = &Field<'a>> {
        self.fields.iter().filter(move |f| f.role() == role)
    }

    /// The table name (empty when missing: an error already).
    pub fn table(&self) -> String {
        self.attrs
            .table
            .as_ref()
            .map_or_else(String::new, |t| t.value.value())
    }

    /// The struct's own family (empty when missing: an error already).
    /// Whether the struct owns its family (`#[bigtable(owns_family)]`).
    pub fn owns_family(&self) -> bool {
        self.attrs.owns_family.is_some()
    }

    /// The qualifier of the struct's row marker: two NUL bytes, then the
    /// name given by `#[bigtable(marker = "...")]` or the struct's own.
    pub fn marker(&self) -> String {
        let name = self.attrs.marker.as_ref().map_or_else(
            || syn::ext::IdentExt::unraw(self.ident).to_string(),
            |m| m.value.value(),
        );
        format!("\0\0{name}")
    }

    pub fn family(&self) -> String {
        self.attrs
            .family
            .as_ref()
            .map_or_else(String::new, |f| f.value.value())
    }

    pub fn field_family(&self, field: &Field) -> String {
        field
            .attrs
            .family
            .as_ref()
            .map_or_else(|| self.family(), |f| f.value.value())
    }

    pub fn written_at_qualifier(&self) -> Option<String> {
        self.attrs.written_at.as_ref().map(|w| {
            w.value.as_ref().map_or_else(
                || symbol::DEFAULT_WRITTEN_AT_QUALIFIER.to_owned(),
                LitStr::value,
            )
        })
    }

    pub fn key_separator(&self) -> String {
        self.attrs
            .key_separator
            .as_ref()
            .map_or_else(String::new, |s| s.value.value())
    }

    /// The default TTL in milliseconds: the default-expiration strategy.
    pub fn default_millis(&self) -> Option<i64> {
        self.attrs.default_ttl.as_ref().and_then(|d| d.value.millis)
    }

    pub fn crate_path(&self) -> Path {
        self.attrs
            .crate_path
            .as_ref()
            .map_or_else(|| syn::parse_quote!(::bigtable_ttl), |p| p.value.clone())
    }

    /// The families in schema order: the struct's first, then each field
    /// family once, in field order.
    pub fn families(&self) -> Vec<String> {
        let mut families = vec![self.family()];
        let stored = self
            .fields_with(Role::Column)
            .chain(self.fields_with(Role::Map));
        for field in stored {
            let family = self.field_family(field);
            if !families.contains(&family) {
                families.push(family);
            }
        }
        families
    }
}

impl Field<'_> {
    pub fn role(&self) -> Role {
        if self.attrs.key.is_some() {
            Role::Key
        } else if self.attrs.skip.is_some() {
            Role::Skip
        } else if self.attrs.expire_at.is_some() {
            Role::ExpireAt
        } else if self.attrs.map.is_some() {
            Role::Map
        } else {
            Role::Column
        }
    }

    /// The column qualifier, `rename_all` and `column` applied.
    pub fn qualifier(&self) -> String {
        self.qualifier.clone()
    }

    /// Whether an absent column reads as a default value (`default`).
    pub fn has_default(&self) -> bool {
        self.attrs.default.is_some()
    }

    /// The field name as the schema and error messages show it.
    pub fn name(&self) -> String {
        syn::ext::IdentExt::unraw(self.ident).to_string()
    }

    pub fn is_option(&self) -> bool {
        self.option_inner.is_some()
    }

    /// `(K, V)` of a field spelled `BTreeMap<K, V>` or `HashMap<K, V>`.
    pub fn map_types(&self) -> Option<(&Type, &Type)> {
        map_args(self.ty)
    }

    /// A counter column (`#[bigtable(counter)]`), incremented in place.
    pub fn is_counter(&self) -> bool {
        self.attrs.counter.is_some()
    }
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// The single type argument of a path type whose last segment is `name`.
fn single_arg<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let seg = last_segment(ty)?;
    if seg.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let mut types = args.args.iter();
    match (types.next(), types.next()) {
        (Some(GenericArgument::Type(t)), None) => Some(t),
        _ => None,
    }
}

/// `(K, V)` of a type spelled `BTreeMap<K, V>` or `HashMap<K, V>` (any
/// path ending so; a `HashMap` with a hasher parameter too).
fn map_args(ty: &Type) -> Option<(&Type, &Type)> {
    let seg = last_segment(ty)?;
    if seg.ident != "BTreeMap" && seg.ident != "HashMap" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    Some((types.next()?, types.next()?))
}

/// `T` for a type spelled `Option<T>` (any path ending in `Option`).
pub fn option_inner(ty: &Type) -> Option<&Type> {
    single_arg(ty, "Option")
}

/// Whether the type's key encoding is decimal digits: the integer and
/// `DateTime<Utc>` key parts (by how the type is spelled).
pub fn is_digit_key(ty: &Type) -> bool {
    is_datetime_utc(ty)
        || last_segment(ty).is_some_and(|seg| {
            seg.arguments.is_none() && ["u64", "u32", "i64", "i32"].iter().any(|t| seg.ident == t)
        })
}

/// Whether the type is spelled `i64` (a counter's type: Bigtable increments
/// 64-bit big-endian signed integers).
pub fn is_i64(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|seg| seg.arguments.is_none() && seg.ident == "i64")
}

/// Whether the type is spelled `DateTime<Utc>` (any paths ending so).
pub fn is_datetime_utc(ty: &Type) -> bool {
    single_arg(ty, "DateTime")
        .and_then(last_segment)
        .is_some_and(|seg| seg.ident == "Utc" && seg.arguments.is_none())
}
