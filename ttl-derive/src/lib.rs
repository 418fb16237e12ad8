//! `#[derive(BigtableRow)]` for `bigtable-ttl`. Use it through the
//! `bigtable-ttl` facade, which re-exports it beside the runtime it targets.
//!
//! Layout (after serde and thiserror): `attr.rs` reads the attributes,
//! `ast.rs` is the typed model, `valid.rs` checks the rules that span several
//! fields, `expand.rs` writes the code; `ctxt.rs` collects every error so all
//! mistakes show in one build; `symbol.rs` names the attribute keys.

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
/// | `#[ttl(for = "1h")]` | a per-field TTL, default strategy only, on an `Option<_>` field (it can expire before the row and then reads as `None`) |
/// | `#[bigtable(counter)]` | an `i64` counter, incremented in place by `Table::increment` (an absent counter reads as 0); one-second expiration only (see the README's "Counters") |
/// | `#[bigtable(map, family = "f")]` | a `BTreeMap<K, V>` / `HashMap<K, V>` stored one cell per entry in family `f`, which no other field uses: `K: KeyPart` is the qualifier, `V: CellCodec` the value; each entry has its own expiry (`Table::put_entry`); a whole-row put replaces the map (see the README's "Maps with a TTL per entry") |
///
/// Every other field is a column whose type implements `CellCodec`; an
/// `Option<_>` field deletes its column when `None`.
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
/// on one column, invalid family names, per-field TTLs where they cannot work,
/// a map without a family of its own, generic structs, enums and tuple
/// structs.
#[proc_macro_derive(BigtableRow, attributes(bigtable, ttl))]
pub fn derive_bigtable_row(input: TokenStream) -> TokenStream {
    expand::derive(input.into()).into()
}
