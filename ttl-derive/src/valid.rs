//! Rules that span several fields or attributes. Each error points at the
//! token at fault and says how to fix it.

use std::collections::HashMap;

use quote::ToTokens;
use syn::LitStr;

use crate::ast::{is_datetime_utc, Container, Field, Role};
use crate::ctxt::Ctxt;

/// Bigtable's rules for family names: `[_a-zA-Z0-9][-_.a-zA-Z0-9]*`, at most
/// 64 characters.
const FAMILY_MAX: usize = 64;
/// Bigtable's rules for table IDs: `[_a-zA-Z0-9][-_.a-zA-Z0-9]*`, at most 50.
const TABLE_MAX: usize = 50;

pub fn check(cx: &Ctxt, cont: &Container) {
    check_generics(cx, cont);
    check_names(cx, cont);
    check_keys(cx, cont);
    check_expire_at(cx, cont);
    check_field_ttls(cx, cont);
    check_counters(cx, cont);
    check_maps(cx, cont);
    check_defaults(cx, cont);
    check_skipped(cx, cont);
    check_columns(cx, cont);
}

/// A map is stored one cell per entry, the entry's key as the qualifier, in
/// a family of its own: a whole-row put replaces the map by deleting that
/// family (Bigtable deletes by family or by exact column, never by prefix).
fn check_maps(cx: &Ctxt, cont: &Container) {
    let mut families: HashMap<String, String> = HashMap::new();
    families.insert(cont.family(), "the struct's own columns".to_owned());
    for field in cont.fields_with(Role::Column) {
        families
            .entry(cont.field_family(field))
            .or_insert_with(|| format!("field `{}`", field.name()));
    }
    for field in cont.fields_with(Role::Map) {
        let a = &field.attrs;
        let name = field.name();
        if field.map_types().is_none() {
            cx.error_spanned_by(
                field.ty,
                format!(
                    "map field `{name}` must be a `BTreeMap<K, V>` or a `HashMap<K, V>` (`K` a \
                     `KeyPart`, stored as the column qualifier; `V` a `CellCodec`), found `{}`",
                    field.ty.to_token_stream().to_string().replace(' ', "")
                ),
            );
        }
        if let Some(column) = &a.column {
            cx.error_spanned_by(
                &column.key,
                format!(
                    "`column` cannot be used on map field `{name}`: each entry's key is its \
                     column qualifier; remove it"
                ),
            );
        }
        if let Some(counter) = &a.counter {
            cx.error_spanned_by(
                &counter.key,
                format!("map field `{name}` cannot be a counter; remove `counter`"),
            );
        }
        if let Some(ttl) = &a.ttl_for {
            cx.error_spanned_by(
                &ttl.key,
                format!(
                    "map field `{name}` cannot have a per-field TTL: each entry has its own, \
                     given to `Table::put_entry` (a whole-row put writes the entries with the \
                     row's expiry); remove `for`"
                ),
            );
        }
        // A field has the map role only through its `map` key.
        let Some(map) = &a.map else { continue };
        let Some(family) = &a.family else {
            cx.error_spanned_by(
                &map.key,
                format!(
                    "map field `{name}` needs a column family of its own: write \
                     `#[bigtable(map, family = \"{name}\")]` (a whole-row put replaces the \
                     map by deleting that family, so no other field may live in it)"
                ),
            );
            continue;
        };
        let family_name = family.value.value();
        if let Some(owner) = families.get(&family_name) {
            cx.error_spanned_by(
                &family.value,
                format!(
                    "map field `{name}` needs a column family of its own, but `{family_name}` \
                     also holds {owner}: a whole-row put deletes the map's family; choose \
                     another family"
                ),
            );
        } else {
            families.insert(family_name, format!("map field `{name}`"));
        }
    }
}

/// `default` fills a column that a row does not have (it was written before
/// the field existed): only a stored, non-`Option` field can lack one.
fn check_defaults(cx: &Ctxt, cont: &Container) {
    for field in &cont.fields {
        let Some(default) = &field.attrs.default else {
            continue;
        };
        let at = &default.key;
        let name = field.name();
        match field.role() {
            Role::Key => cx.error_spanned_by(
                at,
                format!(
                    "`default` cannot be used on the key field `{name}`: a key field is read \
                     from the row key, which no row lacks; remove `default`"
                ),
            ),
            Role::ExpireAt => cx.error_spanned_by(
                at,
                format!(
                    "`default` cannot be used on the `#[ttl(expire_at)]` field `{name}`: the \
                     expiry is read from the cell timestamps, which no row lacks; remove `default`"
                ),
            ),
            Role::Column if field.is_option() => cx.error_spanned_by(
                at,
                format!(
                    "`default` is redundant on the `Option` field `{name}`: an absent column \
                     already reads as `None`; remove `default` (a default other than `None` \
                     would make a written `None` read back as something else)"
                ),
            ),
            Role::Column if field.is_counter() => cx.error_spanned_by(
                at,
                format!(
                    "`default` cannot be used on the counter `{name}`: an absent counter \
                     reads as 0, the value increments start from; remove `default`"
                ),
            ),
            Role::Map => cx.error_spanned_by(
                at,
                format!(
                    "`default` is redundant on the map field `{name}`: a row without entries \
                     already reads as an empty map; remove `default`"
                ),
            ),
            // A plain column; or, with `skip`, `default = "path"` fills
            // the field with `path()`.
            Role::Column | Role::Skip => {}
        }
    }
}

/// A skipped field is neither stored nor read: attributes about its column,
/// key or expiry would silently mean nothing.
fn check_skipped(cx: &Ctxt, cont: &Container) {
    for field in &cont.fields {
        let Some(skip) = &field.attrs.skip else {
            continue;
        };
        let name = field.name();
        if field.role() == Role::Key {
            cx.error_spanned_by(
                &skip.key,
                format!(
                    "`skip` cannot be used on the key field `{name}`: every row has a key, \
                     and this field is part of it; remove `skip` or `key`"
                ),
            );
            continue;
        }
        for (tokens, attr) in field.attrs.column_attrs() {
            cx.error_spanned_by(
                tokens,
                format!(
                    "`{attr}` cannot be used on the skipped field `{name}`: \
                     `#[bigtable(skip)]` fields are not stored, so they have no column, \
                     family, TTL or expiry; remove `{attr}` or `skip`"
                ),
            );
        }
    }
}

/// Counters are incremented with `ReadModifyWriteRow`, which stamps the new
/// cell with the greater of the old cell's timestamp and the server's clock:
/// only a timestamp in the future (one-second expiration, where it is the
/// expiry) survives an increment unchanged.
fn check_counters(cx: &Ctxt, cont: &Container) {
    for field in cont.fields.iter().filter(|f| f.is_counter()) {
        let Some(counter) = &field.attrs.counter else {
            continue;
        };
        if field.role() != Role::Column {
            // Key and expire_at fields report their clashing keys already.
            continue;
        }
        if let Some(default) = &cont.attrs.default_ttl {
            cx.error_spanned_by(
                &counter.key,
                format!(
                    "counter `{}` needs one-second expiration, but the struct has `#[ttl(default = {:?})]`: Bigtable stamps an incremented cell with the server's now when that is later than its timestamp, so under a default TTL every increment would push the counter's expiry to now + the default. Put counters in a struct with a `#[ttl(expire_at)]` field and no default (the cell timestamp is then the expiry, in the future, and increments keep it)",
                    field.name(),
                    default.value.lit.value()
                ),
            );
        }
        if let Some(ttl) = &field.attrs.ttl_for {
            cx.error_spanned_by(
                &ttl.key,
                format!(
                    "counter `{}` cannot have its own TTL: it lives as long as the expiry it is created with",
                    field.name()
                ),
            );
        }
        if !crate::ast::is_i64(field.ty) {
            cx.error_spanned_by(
                field.ty,
                format!(
                    "counter `{}` must be an `i64`: Bigtable increments 64-bit signed big-endian integers (an absent counter reads as 0, so not `Option`), found `{}`",
                    field.name(),
                    field.ty.to_token_stream().to_string().replace(' ', "")
                ),
            );
        }
    }
}

fn check_generics(cx: &Ctxt, cont: &Container) {
    if !cont.generics.params.is_empty() {
        cx.error_spanned_by(
            cont.generics,
            "#[derive(BigtableRow)] does not support generic structs: a row type has one \
             fixed schema (table, families, columns); write a struct with concrete field types",
        );
    } else if let Some(w) = &cont.generics.where_clause {
        cx.error_spanned_by(
            w,
            "#[derive(BigtableRow)] does not support where clauses on the struct",
        );
    }
}

fn name_is_valid(name: &str, max: usize) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    name.len() <= max
        && (first.is_ascii_alphanumeric() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn check_family_name(cx: &Ctxt, lit: &LitStr) {
    let name = lit.value();
    if !name_is_valid(&name, FAMILY_MAX) {
        cx.error_spanned_by(
            lit,
            format!(
                "invalid column family name {name:?}: Bigtable family names match \
                 `[_a-zA-Z0-9][-_.a-zA-Z0-9]*` and have at most {FAMILY_MAX} characters"
            ),
        );
    }
}

/// The longest marker name: its qualifier (two bytes more) stays far below
/// Bigtable's 16 KiB qualifier limit and costs little in every row.
const MARKER_NAME_MAX: usize = 256;

fn check_names(cx: &Ctxt, cont: &Container) {
    let attrs = &cont.attrs;
    if let Some(marker) = &attrs.marker {
        let name = marker.value.value();
        if name.is_empty() || name.len() > MARKER_NAME_MAX || name.contains('\0') {
            cx.error_spanned_by(
                &marker.value,
                format!(
                    "invalid marker name {name:?}: the row marker's qualifier is two NUL \
                     bytes and this name, which must be non-empty, without NUL bytes and at \
                     most {MARKER_NAME_MAX} bytes; leave `marker` out to use the struct's name"
                ),
            );
        }
    }
    match &attrs.table {
        None if attrs.bigtable_garbled => {}
        None => cx.error_spanned_by(
            cont.ident,
            "missing table name: add `#[bigtable(table = \"...\")]` to the struct",
        ),
        Some(table) => {
            let name = table.value.value();
            if !name_is_valid(&name, TABLE_MAX) {
                cx.error_spanned_by(
                    &table.value,
                    format!(
                        "invalid table name {name:?}: Bigtable table IDs match \
                         `[_a-zA-Z0-9][-_.a-zA-Z0-9]*` and have at most {TABLE_MAX} characters"
                    ),
                );
            }
        }
    }
    match &attrs.family {
        None if attrs.bigtable_garbled => {}
        None => cx.error_spanned_by(
            cont.ident,
            "missing column family: add `#[bigtable(family = \"...\")]` to the struct \
             (the family of every column without its own `family`)",
        ),
        Some(family) => check_family_name(cx, &family.value),
    }
    for field in &cont.fields {
        if let Some(family) = &field.attrs.family {
            check_family_name(cx, &family.value);
        }
        if let Some(column) = &field.attrs.column {
            if column.value.value().is_empty() {
                cx.error_spanned_by(
                    &column.value,
                    "empty column qualifier: Bigtable needs a non-empty qualifier; \
                     leave out `column` to use the field name",
                );
            } else if column.value.value().starts_with('\0') {
                cx.error_spanned_by(&column.value, RESERVED_QUALIFIER);
            }
        }
    }
    if let Some(written_at) = &attrs.written_at {
        if let Some(lit) = &written_at.value {
            if lit.value().is_empty() {
                cx.error_spanned_by(
                    lit,
                    "empty qualifier for the `written_at` shadow column; \
                     write `#[ttl(written_at)]` to use \"written_at\"",
                );
            } else if lit.value().starts_with('\0') {
                cx.error_spanned_by(lit, RESERVED_QUALIFIER);
            }
        }
    }
}

/// Qualifiers starting with a NUL byte are the library's own cells (the
/// row marker is `\0`).
const RESERVED_QUALIFIER: &str = "a column qualifier starting with a NUL byte is reserved for the \
     library's own cells (the row marker is `\\0`); choose another name";

fn check_keys(cx: &Ctxt, cont: &Container) {
    for field in cont.fields_with(Role::Key) {
        for (tokens, name) in field.attrs.column_attrs() {
            cx.error_spanned_by(
                tokens,
                format!(
                    "`{name}` cannot be used on the key field `{}`: key fields form the row key \
                     and are not stored as columns, so they have no column, family or TTL",
                    field.name()
                ),
            );
        }
    }
    let keys: Vec<&Field> = cont.fields_with(Role::Key).collect();
    let separator = cont.attrs.key_separator.as_ref();
    match (keys.as_slice(), separator) {
        ([], _) => cx.error_spanned_by(
            cont.ident,
            "no key field: mark the field that holds the row key with `#[bigtable(key)]` \
             (several fields make a composite key, in declaration order)",
        ),
        ([only], Some(sep)) => cx.error_spanned_by(
            &sep.key,
            format!(
                "`key_separator` is only for composite keys, but `{}` is the only key field; \
                 remove it",
                only.name()
            ),
        ),
        ([_], None) => {}
        ([_, second, ..], None) => {
            let names: Vec<String> = keys.iter().map(|k| format!("`{}`", k.name())).collect();
            cx.error_spanned_by(
                second.ident,
                format!(
                    "several key fields ({}) need a separator to join them: add \
                     `#[bigtable(key_separator = \"#\")]` to the struct, with a string \
                     that cannot appear in any key part",
                    names.join(", ")
                ),
            );
        }
        (_, Some(sep)) => {
            let text = sep.value.value();
            if text.is_empty() {
                cx.error_spanned_by(
                    &sep.value,
                    "empty `key_separator`: the key could not be split back into its fields; \
                     use a non-empty string such as \"#\"",
                );
            }
            let digits = keys.iter().find(|k| crate::ast::is_digit_key(k.ty));
            if let (true, Some(field)) = (text.bytes().any(|b| b.is_ascii_digit()), digits) {
                cx.error_spanned_by(
                    &sep.value,
                    format!(
                        "`key_separator` {text:?} contains a digit, and the key field `{}` is \
                         encoded as decimal digits: two keys could join to the same bytes; \
                         use a separator without digits, such as \"#\"",
                        field.name()
                    ),
                );
            }
        }
    }
}

fn check_expire_at(cx: &Ctxt, cont: &Container) {
    let has_default = cont.attrs.default_ttl.is_some();
    let mut first: Option<&Field> = None;
    for field in cont.fields_with(Role::ExpireAt) {
        let a = &field.attrs;
        // `expire_at` itself is what makes this field's role.
        let clashing = a.column_attrs().filter(|(_, name)| *name != "expire_at");
        for (tokens, name) in clashing {
            cx.error_spanned_by(
                tokens,
                format!(
                    "`{name}` cannot be used on the `#[ttl(expire_at)]` field `{}`: the expiry \
                     is stored in the cell timestamps, not in a column",
                    field.name()
                ),
            );
        }
        if let Some(prev) = first {
            // Only a present expire_at makes a field have this role.
            if let Some(key) = &a.expire_at {
                cx.error_spanned_by(
                    &key.key,
                    format!(
                        "a second `#[ttl(expire_at)]` field: `{}` already holds this row's expiry; \
                         a row has one expiry",
                        prev.name()
                    ),
                );
            }
        } else {
            first = Some(field);
        }
        match field.option_inner {
            None if is_datetime_utc(field.ty) => {}
            Some(inner) if is_datetime_utc(inner) => {
                if !has_default {
                    cx.error_spanned_by(
                        field.ty,
                        "an optional `#[ttl(expire_at)]` needs a default TTL for the rows that \
                         leave it `None`: add `#[ttl(default = \"...\")]` to the struct, or make \
                         the field `DateTime<Utc>` so that every row carries its expiry",
                    );
                }
            }
            _ => cx.error_spanned_by(
                field.ty,
                format!(
                    "`#[ttl(expire_at)]` must be on a `DateTime<Utc>` field (or an \
                     `Option<DateTime<Utc>>` when the struct has a default TTL), found `{}`",
                    field.ty.to_token_stream().to_string().replace(' ', "")
                ),
            ),
        }
    }
    if !has_default && first.is_none() && !cont.attrs.ttl_garbled {
        cx.error_spanned_by(
            cont.ident,
            "no TTL policy: add `#[ttl(default = \"2d\")]` to the struct (default expiration: \
             rows live that long unless told otherwise), or a `#[ttl(expire_at)]` field of type \
             `DateTime<Utc>` (one-second expiration: every row carries its own expiry)",
        );
    }
}

fn check_field_ttls(cx: &Ctxt, cont: &Container) {
    let has_default = cont.attrs.default_ttl.is_some();
    let default = cont.attrs.default_ttl.as_ref();
    if let Some((millis, lit)) = default.and_then(|d| Some((d.value.millis?, &d.value.lit))) {
        if millis > bigtable_ttl_spec::MAX_GC_AGE_MILLIS {
            cx.error_spanned_by(
                lit,
                format!(
                    "default TTL {:?} is over the longest `max_age` a GC rule can hold \
                     (10,000 years, a protobuf Duration's limit): Bigtable would refuse \
                     the family's rule",
                    lit.value()
                ),
            );
        }
    }
    for field in cont.fields_with(Role::Column) {
        let Some(ttl) = &field.attrs.ttl_for else {
            continue;
        };
        if let (Some(d), Some(t)) = (default.and_then(|d| d.value.millis), ttl.value.millis) {
            if d.saturating_sub(t) > bigtable_ttl_spec::MAX_SHORTER_THAN_DEFAULT_MILLIS {
                cx.error_spanned_by(
                    &ttl.value.lit,
                    format!(
                        "per-field TTL {:?} is more than 50 years shorter than the default \
                         TTL {:?}: its cells would be stamped that far before their write \
                         time, before 1970, and Bigtable rejects timestamps before the \
                         epoch; shorten the default or lengthen this TTL",
                        ttl.value.lit.value(),
                        default.map(|d| d.value.lit.value()).unwrap_or_default()
                    ),
                );
            }
        }
        if !has_default {
            cx.error_spanned_by(
                &ttl.key,
                "a per-field TTL needs the default-expiration strategy: add \
                 `#[ttl(default = \"...\")]` to the struct; under one-second expiration \
                 every cell's timestamp is the row's expiry",
            );
        }
        if !field.is_option() && !field.has_default() {
            cx.error_spanned_by(
                field.ty,
                format!(
                    "a field with a per-field TTL must be an `Option<_>` or have \
                     `#[bigtable(default)]`: `{}` can expire before the row, and then reads \
                     as `None` or its default",
                    field.name()
                ),
            );
        }
    }
}

fn check_columns(cx: &Ctxt, cont: &Container) {
    let mut seen: HashMap<(String, String), &Field> = HashMap::new();
    for field in cont.fields_with(Role::Column) {
        let column = (cont.field_family(field), field.qualifier());
        if let Some(prev) = seen.get(&column) {
            let at = field.attrs.column.as_ref().map_or_else(
                || field.ident.to_token_stream(),
                |c| c.value.to_token_stream(),
            );
            // Name the rule when it made (one of) the clashing names.
            let by_rule = field.attrs.column.is_none() || prev.attrs.column.is_none();
            let renamed = match &cont.attrs.rename_all {
                Some(rename) if by_rule => {
                    format!(" (after `rename_all = {:?}`)", rename.value.lit.value())
                }
                _ => String::new(),
            };
            cx.error_spanned_by(
                at,
                format!(
                    "fields `{}` and `{}` are both stored in column `{}:{}`{renamed}; give one \
                     of them another `#[bigtable(column = \"...\")]` or `family`",
                    prev.name(),
                    field.name(),
                    column.0,
                    column.1
                ),
            );
        } else {
            seen.insert(column, field);
        }
    }
    if let (Some(written_at), Some(qualifier)) =
        (&cont.attrs.written_at, cont.written_at_qualifier())
    {
        let column = (cont.family(), qualifier);
        if let Some(field) = seen.get(&column) {
            let at = written_at.value.as_ref().map_or_else(
                || written_at.key.to_token_stream(),
                ToTokens::to_token_stream,
            );
            cx.error_spanned_by(
                at,
                format!(
                    "the `written_at` shadow column `{}:{}` clashes with field `{}`; name the \
                     shadow column with `#[ttl(written_at = \"...\")]` or move the field with \
                     `#[bigtable(column = \"...\")]`",
                    column.0,
                    column.1,
                    field.name()
                ),
            );
        }
    }
    let has_map = cont.fields_with(Role::Map).next().is_some();
    if seen.is_empty() && cont.attrs.written_at.is_none() && !has_map {
        cx.error_spanned_by(
            cont.ident,
            "no stored column: a Bigtable row without cells does not exist, so this struct \
             could never be read back; add a field that is neither key nor `expire_at`, or \
             `#[ttl(written_at)]`",
        );
    }
}
