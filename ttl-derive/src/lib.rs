//! `#[derive(BigtableRow)]` for `bigtable-ttl`. Use it through the
//! `bigtable-ttl` facade, which re-exports it beside the runtime it targets.
//!
//! Layout (after serde and thiserror): `attr.rs` reads the attributes,
//! `ast.rs` is the typed model, `valid.rs` checks the rules that span several
//! fields, `expand.rs` writes the code; `ctxt.rs` collects every error so all
//! mistakes show in one build; `symbol.rs` names the attribute keys;
//! `case.rs` holds `rename_all`'s conversions. `value.rs` is the smaller
//! `#[derive(CellCodec)]` / `#[derive(KeyPart)]` for newtypes and enums.
// No function of the library over about 100 lines without a reason
// stated next to it (the workspace allows long tests and `quote!` impls).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod ast;
mod attr;
mod case;
mod ctxt;
mod duration;
mod expand;
mod symbol;
mod valid;
mod value;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Stores a struct as one Bigtable row with cell-level time-to-live.
///
/// Implements `bigtable_ttl::BigtableRow`: the schema (table, families, GC
/// policy, columns), the row key, the expiry a value asks for, and the
/// encoding and decoding of its cells.
///
/// ```
/// use bigtable_ttl::{BigtableRow, Policy};
/// use chrono::{DateTime, TimeDelta, TimeZone, Utc};
///
/// // Default expiration: clicks live 2 days unless a row says otherwise.
/// #[derive(BigtableRow)]
/// #[bigtable(table = "clicks", family = "c", key_separator = "#")]
/// #[ttl(default = "2d", written_at)]
/// struct Click {
///     #[bigtable(key)]
///     customer: String,
///     #[bigtable(key)]
///     seq: u64,
///     url: String,
///     #[bigtable(column = "ref")]
///     referrer: Option<String>,        // None: the column is absent
///     #[bigtable(family = "m")]
///     #[ttl(for = "1h")]
///     hot: Option<bool>,               // gone after an hour, the row stays
///     #[ttl(expire_at)]
///     expires: Option<DateTime<Utc>>,  // per-row override of the default
/// }
///
/// // One-second expiration: every row carries its own expiry.
/// #[derive(BigtableRow)]
/// #[bigtable(table = "sessions", family = "s")]
/// struct Session {
///     #[bigtable(key)]
///     id: String,
///     #[ttl(expire_at)]
///     expires_at: DateTime<Utc>,
///     user: String,
/// }
///
/// assert_eq!(Click::SCHEMA.policy, Policy::DefaultTtl { ttl: TimeDelta::days(2) });
/// assert_eq!(Click::SCHEMA.families, &["c", "m"]);
/// assert_eq!(Session::SCHEMA.policy, Policy::CellExpiry);
///
/// let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
/// let click = Click {
///     customer: "c3".into(),
///     seq: 7,
///     url: "/home".into(),
///     referrer: None,
///     hot: Some(true),
///     expires: Some(now + TimeDelta::hours(1)),
/// };
/// assert_eq!(click.row_key().unwrap(), b"c3#00000000000000000007");
/// let write = click.mutation().build(now).unwrap();
/// assert_eq!(write.expires_at, now + TimeDelta::hours(1));
/// ```
///
/// # Attributes
///
/// On the struct:
///
/// | attribute | meaning |
/// |---|---|
/// | `#[bigtable(table = "clicks")]` | the table (required) |
/// | `#[bigtable(family = "c")]` | the column family of every column without its own (required) |
/// | `#[bigtable(key_separator = "#")]` | joins several key fields; required with several, an error with one. Keys sort as the tuple of their fields only if the separator sorts below every byte the string parts may contain (`#` is below digits, letters, `-`, `.` and `_`); a part containing it is refused at write time |
/// | `#[bigtable(rename_all = "camelCase")]` | the qualifier of every column without its own `column`, from its field name in one of serde's cases: `"lowercase"`, `"UPPERCASE"`, `"PascalCase"`, `"camelCase"`, `"snake_case"`, `"SCREAMING_SNAKE_CASE"`, `"kebab-case"`, `"SCREAMING-KEBAB-CASE"` (serde's conversion, so a struct also serialized with serde gets the same names); key fields and the `written_at` shadow column are not renamed |
/// | `#[bigtable(owns_family)]` | no other struct stores cells in the struct's family: a whole-row write clears it with one `DeleteFromFamily` instead of one `DeleteFromColumn` per column (half the mutations for the server to apply), which also removes cells of fields the struct no longer has. Leave it out when another struct shares the family: their cells would be deleted |
/// | `#[bigtable(marker = "Person")]` | the name in the struct's row marker (qualifier `\0\0` + name, in its family; see the guide's "Rows and liveness"), instead of the struct's own name: keep it when renaming a struct whose rows are stored, so both versions read each other's rows as their own. Structs sharing a family or a row key must keep distinct names |
/// | `#[bigtable(crate = path)]` | path to the `bigtable_ttl` facade when renamed (default `::bigtable_ttl`; `crate = "path"` works too) |
/// | `#[ttl(default = "2d")]` | default expiration: families get `max_age = 2d`, rows live that long unless told otherwise; without it, one-second expiration (every row needs an `expire_at`) |
/// | `#[ttl(written_at)]`, `#[ttl(written_at = "q")]` | shadow column with the real write time, in the struct's family (qualifier `written_at` by default) |
///
/// On a field:
///
/// | attribute | meaning |
/// |---|---|
/// | `#[bigtable(key)]` | part of the row key (several: in declaration order); not a column; the type implements `KeyPart` |
/// | `#[bigtable(column = "q")]` | the column qualifier (default: the field name) |
/// | `#[bigtable(family = "f")]` | the field's column family (default: the struct's) |
/// | `#[ttl(expire_at)]` | the row's expiry, not a column: `DateTime<Utc>` (required, any strategy) or `Option<DateTime<Utc>>` (with a default: `None` means the default); filled with the row's expiry when read |
/// | `#[ttl(for = "1h")]` | a per-field TTL, default strategy only, on an `Option<_>` field (it can expire before the row and then reads as `None`) or a `#[bigtable(default)]` one (it then reads as its default) |
/// | `#[bigtable(default)]`, `#[bigtable(default = "path::to::fn")]` | a row without this column (written before the field existed, or past the field's own `#[ttl(for)]`) reads with `Default::default()` (or `fn() -> T`) instead of failing with a missing-column error; the field is still written on every put. Not on key, `expire_at`, `Option` (already `None` when absent) or counter (already 0) fields. A row none of whose columns is live is still absent: defaults fill a row, they never make one |
/// | `#[bigtable(skip)]` | not stored and not read: filled with `Default::default()` (or `default = "path"`) on every read; the type must implement `Default`. Not on key fields; no other column attribute with it |
/// | `#[bigtable(counter)]` | an `i64` counter, incremented in place by `Table::increment` (an absent counter reads as 0); one-second expiration only (see the guide's "Counters" page) |
/// | `#[bigtable(map, family = "f")]` | a `BTreeMap<K, V>` / `HashMap<K, V>` stored one cell per entry in family `f`, which no other field uses: `K: KeyPart` is the qualifier, `V: CellCodec` the value; each entry has its own expiry (`Table::put_entry`); a whole-row put replaces the map (see the guide's "Maps with a TTL per entry" page) |
///
/// Every other field is a column whose type implements `CellCodec`; an
/// `Option<_>` field deletes its column when `None`. Newtypes and C-like
/// enums get `CellCodec` (and newtypes `KeyPart`) from
/// [`macro@CellCodec`] and [`macro@KeyPart`].
///
/// Each stored field also gets an associated const named after it in upper
/// case, the typed handle conditional writes and counters take
/// (`Click::URL: Field<Click, String>`, a counter's `CounterField<Self>`, a
/// map's `MapField<Self, K, V>`).
///
/// Durations are humantime's syntax (`"90s"`, `"15m"`, `"1h30m"`, `"2d"`,
/// `"250ms"`, the grammar the `bigtable-ttl` CLI's `--policy` reads too),
/// are parsed at compile time and must be a
/// positive whole number of milliseconds (Bigtable's timestamp granularity).
///
/// Mistakes are compile errors pointing at the token at fault, all reported
/// in one build: unknown or duplicate keys, bad durations, a missing table,
/// family or key, no TTL policy, an `expire_at` of the wrong type, two fields
/// on one column (also after `rename_all`), invalid family names, per-field
/// TTLs where they cannot work, `default` or `skip` where they mean nothing,
/// an unknown `rename_all` case, a map without a family of its own, generic
/// structs, enums and tuple structs.
#[proc_macro_derive(BigtableRow, attributes(bigtable, ttl))]
pub fn derive_bigtable_row(input: TokenStream) -> TokenStream {
    expand::derive(input.into()).into()
}

/// Stores a newtype as its inner type, or a C-like enum by name or by number,
/// in one Bigtable cell: implements `bigtable_ttl::CellCodec`.
///
/// A newtype (`struct UserId(String);`) is stored exactly as its one field,
/// so wrapping an existing field's type changes no byte. An enum chooses,
/// explicitly, how it is stored:
///
/// * `#[bigtable(by_name)]`: the variant's name as UTF-8. Survives
///   reordering and new variants. `#[bigtable(rename_all = "...")]` (serde's
///   case names) on the enum and `#[bigtable(rename = "...")]` on a variant
///   change the stored name; a per-variant `rename` wins.
/// * `#[bigtable(by_number)]` with an integer `#[repr(u8 | u16 | u32 | u64 |
///   i8 | i16 | i32 | i64)]` and an explicit discriminant on every variant:
///   the number, big-endian in the repr's width (so an `i32` enum is stored
///   as `i32` fields are).
///
/// A cell that names no variant decodes to
/// `CodecError::UnknownVariant`, which a read reports as `Error::Decode`
/// with the table, row and column.
///
/// ```
/// use bigtable_ttl::{CellCodec, CodecError};
///
/// #[derive(CellCodec, Debug, PartialEq)]
/// struct UserId(String);
///
/// #[derive(CellCodec, Debug, PartialEq)]
/// #[bigtable(by_name, rename_all = "snake_case")]
/// enum Status {
///     Active,
///     OnHold,
///     #[bigtable(rename = "gone")]
///     Deleted,
/// }
///
/// #[derive(CellCodec, Debug, PartialEq)]
/// #[bigtable(by_number)]
/// #[repr(u8)]
/// enum Plan {
///     Free = 0,
///     Pro = 2,
/// }
///
/// assert_eq!(UserId("ann".into()).encode().unwrap(), b"ann");
/// assert_eq!(Status::OnHold.encode().unwrap(), b"on_hold");
/// assert_eq!(Status::decode(b"gone").unwrap(), Status::Deleted);
/// assert_eq!(Plan::Pro.encode().unwrap(), [2]);
/// assert!(matches!(
///     Status::decode(b"Active"),
///     Err(CodecError::UnknownVariant { enum_name: "Status", .. })
/// ));
/// ```
///
/// Mistakes are compile errors at the token at fault: a struct with named
/// fields or more than one field, an enum whose variants carry data, neither
/// or both of `by_name` and `by_number`, `by_number` without an integer
/// `repr` or a discriminant, two variants stored alike, an unknown
/// `rename_all` case.
#[proc_macro_derive(CellCodec, attributes(bigtable))]
pub fn derive_cell_codec(input: TokenStream) -> TokenStream {
    value::derive_cell_codec(input.into()).into()
}

/// Makes a newtype a row-key part with its inner type's encoding:
/// implements `bigtable_ttl::KeyPart` (`#[derive(KeyPart)] struct Tenant(u32);`
/// sorts and splits exactly as a `u32` key field does).
///
/// ```
/// use bigtable_ttl::{BigtableRow, KeyPart};
///
/// #[derive(KeyPart, Debug, PartialEq)]
/// struct Tenant(u32);
///
/// #[derive(BigtableRow)]
/// #[bigtable(table = "visits", family = "v", key_separator = "#")]
/// #[ttl(default = "1h")]
/// struct Visit {
///     #[bigtable(key)]
///     tenant: Tenant,
///     #[bigtable(key)]
///     user: String,
///     page: String,
/// }
///
/// let key = Visit::encode_key(&(Tenant(7), "ann".into())).unwrap();
/// assert_eq!(key, b"0000000007#ann");
/// ```
///
/// Only single-field tuple structs: anything else is a compile error
/// pointing at it.
#[proc_macro_derive(KeyPart, attributes(bigtable))]
pub fn derive_key_part(input: TokenStream) -> TokenStream {
    value::derive_key_part(input.into()).into()
}
