//! Reads `#[bigtable(...)]` and `#[ttl(...)]` into plain values.
//!
//! Every mistake is recorded in the [`Ctxt`] and parsing goes on, so one
//! unknown key does not hide the next one. Cross-field rules live in
//! `valid.rs`.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, LitStr, Path, Token};

use crate::case::Case;
use crate::ctxt::Ctxt;
use crate::duration;
use crate::symbol::{self, Symbol};

/// A value given at most once, with the key that gave it (for error spans).
pub struct Keyed<T> {
    /// The key as written (`table`, `for`, …).
    pub key: Path,
    pub value: T,
}

pub fn set_once<T>(cx: &Ctxt, slot: &mut Option<Keyed<T>>, name: Symbol, key: &Path, value: T) {
    if slot.is_some() {
        cx.error_spanned_by(key, format!("duplicate `{name}` key: give it only once"));
    } else {
        *slot = Some(Keyed {
            key: key.clone(),
            value,
        });
    }
}

/// A duration's milliseconds, `None` when invalid (an error is recorded),
/// and the literal, for errors that point at it.
pub struct Duration {
    pub millis: Option<i64>,
    pub lit: LitStr,
}

fn parse_duration(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Duration> {
    let lit: LitStr = meta.value()?.parse()?;
    let millis = match duration::parse_millis(&lit) {
        Ok(ms) => Some(ms),
        Err(e) => {
            cx.syn_error(e);
            None
        }
    };
    Ok(Duration { millis, lit })
}

pub fn parse_str(meta: &ParseNestedMeta, name: Symbol) -> syn::Result<LitStr> {
    let value = meta.value().map_err(|_| {
        meta.error(format_args!(
            "`{name}` needs a value: write `{name} = \"...\"`"
        ))
    })?;
    value.parse()
}

pub fn no_value(meta: &ParseNestedMeta, name: Symbol) -> syn::Result<()> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format_args!("`{name}` takes no value: write just `{name}`")));
    }
    Ok(())
}

/// A `rename_all = "..."` value: the literal, for errors to point at, and
/// its rule (`None` when unknown: an error is recorded).
pub struct RenameAll {
    pub lit: LitStr,
    pub case: Option<Case>,
}

pub fn parse_rename_all(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<RenameAll> {
    let lit = parse_str(meta, symbol::RENAME_ALL)?;
    let case = Case::from_name(&lit.value());
    if case.is_none() {
        cx.error_spanned_by(
            &lit,
            format!(
                "unknown case {:?} in `rename_all`: expected one of {} (serde's names)",
                lit.value(),
                Case::accepted()
            ),
        );
    }
    Ok(RenameAll { lit, case })
}

/// `key = path` or, as serde spells it, `key = "path"` (`crate`, `default`).
pub fn parse_path(meta: &ParseNestedMeta) -> syn::Result<Path> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        value.parse::<LitStr>()?.parse::<Path>()
    } else {
        value.parse::<Path>()
    }
}

/// Report an unknown key (listing the valid ones) and skip its value, so the
/// keys after it are still read.
pub fn unknown(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    attr: Symbol,
    place: &str,
    valid: &[Symbol],
) -> syn::Result<()> {
    let key = quote::ToTokens::to_token_stream(&meta.path)
        .to_string()
        .replace(' ', "");
    let hint = symbol::closest(&key, valid)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default();
    cx.error_spanned_by(
        &meta.path,
        format!(
            "unknown key `{key}` in `#[{attr}(...)]` on a {place}{hint}; expected {}",
            symbol::one_of(valid)
        ),
    );
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}

/// Attributes of the struct.
#[derive(Default)]
pub struct Container {
    pub table: Option<Keyed<LitStr>>,
    pub family: Option<Keyed<LitStr>>,
    pub key_separator: Option<Keyed<LitStr>>,
    pub crate_path: Option<Keyed<Path>>,
    pub rename_all: Option<Keyed<RenameAll>>,
    /// `owns_family`: no other struct stores cells in the struct's family.
    pub owns_family: Option<Keyed<()>>,
    /// `marker = "..."`: the name in the struct's row marker, instead of
    /// the struct's own.
    pub marker: Option<Keyed<LitStr>>,
    pub default_ttl: Option<Keyed<Duration>>,
    /// The `written_at` key and its qualifier (the literal, when one is given).
    pub written_at: Option<Keyed<Option<LitStr>>>,
    /// An unknown or malformed key was reported in `#[bigtable(...)]`: "missing
    /// `table`" would then most likely repeat the same mistake.
    pub bigtable_garbled: bool,
    /// Likewise for `#[ttl(...)]` and "no TTL policy".
    pub ttl_garbled: bool,
}

impl Container {
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut this = Container::default();
        for attr in attrs {
            let (result, garbled) = if attr.path() == symbol::BIGTABLE {
                let r = attr.parse_nested_meta(|meta| this.bigtable_key(cx, &meta));
                (r, &mut this.bigtable_garbled)
            } else if attr.path() == symbol::TTL {
                let r = attr.parse_nested_meta(|meta| this.ttl_key(cx, &meta));
                (r, &mut this.ttl_garbled)
            } else {
                continue;
            };
            if let Err(e) = result {
                *garbled = true;
                cx.syn_error(e);
            }
        }
        this
    }

    fn bigtable_key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        let p = &meta.path;
        if *p == symbol::TABLE {
            let v = parse_str(meta, symbol::TABLE)?;
            set_once(cx, &mut self.table, symbol::TABLE, p, v);
        } else if *p == symbol::FAMILY {
            let v = parse_str(meta, symbol::FAMILY)?;
            set_once(cx, &mut self.family, symbol::FAMILY, p, v);
        } else if *p == symbol::KEY_SEPARATOR {
            let v = parse_str(meta, symbol::KEY_SEPARATOR)?;
            set_once(cx, &mut self.key_separator, symbol::KEY_SEPARATOR, p, v);
        } else if *p == symbol::CRATE {
            let path = parse_path(meta)?;
            set_once(cx, &mut self.crate_path, symbol::CRATE, p, path);
        } else if *p == symbol::RENAME_ALL {
            let v = parse_rename_all(cx, meta)?;
            set_once(cx, &mut self.rename_all, symbol::RENAME_ALL, p, v);
        } else if *p == symbol::OWNS_FAMILY {
            no_value(meta, symbol::OWNS_FAMILY)?;
            set_once(cx, &mut self.owns_family, symbol::OWNS_FAMILY, p, ());
        } else if *p == symbol::MARKER {
            let v = parse_str(meta, symbol::MARKER)?;
            set_once(cx, &mut self.marker, symbol::MARKER, p, v);
        } else {
            self.bigtable_garbled = true;
            unknown(
                cx,
                meta,
                symbol::BIGTABLE,
                "struct",
                symbol::STRUCT_BIGTABLE_KEYS,
            )?;
        }
        Ok(())
    }

    fn ttl_key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        let p = &meta.path;
        if *p == symbol::DEFAULT {
            let v = parse_duration(cx, meta)?;
            set_once(cx, &mut self.default_ttl, symbol::DEFAULT, p, v);
        } else if *p == symbol::WRITTEN_AT {
            let v = if meta.input.peek(Token![=]) {
                Some(meta.value()?.parse::<LitStr>()?)
            } else {
                None
            };
            set_once(cx, &mut self.written_at, symbol::WRITTEN_AT, p, v);
        } else {
            self.ttl_garbled = true;
            unknown(cx, meta, symbol::TTL, "struct", symbol::STRUCT_TTL_KEYS)?;
        }
        Ok(())
    }
}

/// Attributes of one field.
#[derive(Default)]
pub struct Field {
    pub key: Option<Keyed<()>>,
    pub column: Option<Keyed<LitStr>>,
    pub family: Option<Keyed<LitStr>>,
    pub expire_at: Option<Keyed<()>>,
    pub ttl_for: Option<Keyed<Duration>>,
    pub counter: Option<Keyed<()>>,
    pub map: Option<Keyed<()>>,
    /// `default` (`None`: `Default::default`) or `default = "path"` (a
    /// function returning the field's type).
    pub default: Option<Keyed<Option<Path>>>,
    pub skip: Option<Keyed<()>>,
}

impl Field {
    /// The attributes present that describe a stored column (its name,
    /// family or TTL): each key as written, for errors to point at, and its name.
    pub fn column_attrs(&self) -> impl Iterator<Item = (&Path, &'static str)> {
        [
            self.column.as_ref().map(|k| (&k.key, "column")),
            self.family.as_ref().map(|k| (&k.key, "family")),
            self.expire_at.as_ref().map(|k| (&k.key, "expire_at")),
            self.ttl_for.as_ref().map(|k| (&k.key, "for")),
            self.counter.as_ref().map(|k| (&k.key, "counter")),
            self.map.as_ref().map(|k| (&k.key, "map")),
        ]
        .into_iter()
        .flatten()
    }

    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut this = Field::default();
        for attr in attrs {
            let result = if attr.path() == symbol::BIGTABLE {
                attr.parse_nested_meta(|meta| this.bigtable_key(cx, &meta))
            } else if attr.path() == symbol::TTL {
                attr.parse_nested_meta(|meta| this.ttl_key(cx, &meta))
            } else {
                continue;
            };
            if let Err(e) = result {
                cx.syn_error(e);
            }
        }
        this
    }

    fn bigtable_key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        let p = &meta.path;
        if *p == symbol::KEY {
            no_value(meta, symbol::KEY)?;
            set_once(cx, &mut self.key, symbol::KEY, p, ());
        } else if *p == symbol::COLUMN {
            let v = parse_str(meta, symbol::COLUMN)?;
            set_once(cx, &mut self.column, symbol::COLUMN, p, v);
        } else if *p == symbol::FAMILY {
            let v = parse_str(meta, symbol::FAMILY)?;
            set_once(cx, &mut self.family, symbol::FAMILY, p, v);
        } else if *p == symbol::COUNTER {
            no_value(meta, symbol::COUNTER)?;
            set_once(cx, &mut self.counter, symbol::COUNTER, p, ());
        } else if *p == symbol::MAP {
            no_value(meta, symbol::MAP)?;
            set_once(cx, &mut self.map, symbol::MAP, p, ());
        } else if *p == symbol::DEFAULT {
            // `default` or, as serde spells it, `default = "path::to::fn"`.
            let path = if meta.input.peek(Token![=]) {
                Some(parse_path(meta)?)
            } else {
                no_value(meta, symbol::DEFAULT)?;
                None
            };
            set_once(cx, &mut self.default, symbol::DEFAULT, p, path);
        } else if *p == symbol::SKIP {
            no_value(meta, symbol::SKIP)?;
            set_once(cx, &mut self.skip, symbol::SKIP, p, ());
        } else {
            unknown(
                cx,
                meta,
                symbol::BIGTABLE,
                "field",
                symbol::FIELD_BIGTABLE_KEYS,
            )?;
        }
        Ok(())
    }

    fn ttl_key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        let p = &meta.path;
        if *p == symbol::EXPIRE_AT {
            no_value(meta, symbol::EXPIRE_AT)?;
            set_once(cx, &mut self.expire_at, symbol::EXPIRE_AT, p, ());
        } else if *p == symbol::FOR {
            let v = parse_duration(cx, meta)?;
            set_once(cx, &mut self.ttl_for, symbol::FOR, p, v);
        } else {
            unknown(cx, meta, symbol::TTL, "field", symbol::FIELD_TTL_KEYS)?;
        }
        Ok(())
    }
}
