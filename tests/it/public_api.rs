//! The facade's public API, item by item, against the snapshot in
//! `api/bigtable-ttl.txt`: a change to what users can name fails here until
//! the snapshot is updated in the same commit (`UPDATE_PUBLIC_API=1 cargo
//! test --test it public_api`), so every API change is one a reviewer sees.
//!
//! The listing comes from rustdoc's JSON output, which stable rustdoc
//! writes when `RUSTC_BOOTSTRAP=1` is set for that one command.
//!
//! The snapshots are also read for what they must not hold: items of other
//! crates but a few deliberate ones (so that no other crate's release is a
//! breaking release of this one), and the derive's helper types.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The public API of `package`, one item a line, as `public_api` prints it.
fn public_api_of(package: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let json = rustdoc_json::Builder::default()
        .clear_toolchain()
        .env("RUSTC_BOOTSTRAP", "1")
        .manifest_path(root.join("Cargo.toml"))
        .package(package)
        .all_features(true)
        .target_dir(root.join("target/public-api"))
        .quiet(true)
        .build()
        .unwrap_or_else(|e| panic!("rustdoc writes {package}'s JSON: {e}"));
    // Blanket and auto-trait impls (`impl<T> From<T> for T`, `Send`, …)
    // change with dependencies, not with this crate.
    public_api::Builder::from_rustdoc_json(json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .build()
        .unwrap_or_else(|e| panic!("the JSON lists {package}'s public API: {e}"))
        .to_string()
}

/// `api` equals the snapshot `api/{package}.txt`, or is written there when
/// `UPDATE_PUBLIC_API` is set.
fn check_snapshot(package: &str, api: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("api/{package}.txt"));
    if std::env::var_os("UPDATE_PUBLIC_API").is_some() {
        std::fs::write(&path, api).expect("the snapshot is written");
        return;
    }
    let snapshot = std::fs::read_to_string(&path).unwrap_or_default();
    if snapshot != api {
        let before: BTreeSet<&str> = snapshot.lines().collect();
        let after: BTreeSet<&str> = api.lines().collect();
        let removed: Vec<&&str> = before.difference(&after).collect();
        let added: Vec<&&str> = after.difference(&before).collect();
        panic!(
            "the public API of {package} changed; if that is intended, run \
             `UPDATE_PUBLIC_API=1 cargo test --test it public_api` and commit \
             api/{package}.txt\nremoved:\n{removed:#?}\nadded:\n{added:#?}"
        );
    }
}

/// The facade re-exports the runtime whole (`pub use bigtable_ttl_runtime::*`), so
/// its own listing shows that line and the runtime's shows the items.
#[test]
fn the_public_api_matches_its_snapshot() {
    for package in ["bigtable-ttl", "bigtable-ttl-runtime"] {
        check_snapshot(package, &public_api_of(package));
    }
}

/// The crates a public item may name freely: this library's own, the
/// standard library's, and `chrono`, whose types are this library's
/// timestamps and durations (and which it re-exports, `bigtable_ttl::chrono`).
/// Primitive types count as roots (`bool::from_sql`, an impl's method).
const OWN_ROOTS: &[&str] = &[
    "bigtable_ttl_runtime",
    "bigtable_ttl",
    "core",
    "alloc",
    "std",
    "chrono",
    "bool",
    "char",
    "str",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
];

/// The other crates' items the API names on purpose, each a trait whose
/// crate is the ecosystem's one place for it: a read's rows are a
/// `futures_core::Stream`, the built-in metrics take the application's
/// OpenTelemetry `MeterProvider`, the `json` codec takes any serde type.
/// Anything else of another crate (Bigtable's generated messages, prost,
/// tonic, http, the auth crate) would make that crate's next release a
/// breaking release of this one.
const DELIBERATE: &[&str] = &[
    "futures_core::stream::Stream",
    "opentelemetry::metrics::meter::MeterProvider",
    // `Json<T>` and, with the `serde` feature, the ops reports' impls:
    // `Serialize`/`Serializer`, `Deserialize`/`Deserializer`/`DeserializeOwned`.
    "serde_core::ser::Serialize",
    "serde_core::de::Deserialize",
];

/// Names of the types only the derive's expansion uses (hidden like
/// serde's helpers), which no public item may name.
const HELPER_NAMES: &[&str] = &["CellSink", "RowView", "FieldError", "ColumnOf"];

/// The paths of other crates `line` names, outside [`OWN_ROOTS`] and
/// [`DELIBERATE`]: each path that starts a line or follows a character
/// that cannot be part of one (so `Item = T` and `<K, V>` are not paths).
fn foreign_paths(line: &str) -> Vec<&str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = line[at..].find("::") {
        let colons = at + offset;
        let start = line[..colons]
            .rfind(|c: char| !ident(c))
            .map_or(0, |i| i + 1);
        let preceded_by_path = line[..start].ends_with("::");
        let mut end = colons;
        while line[end..].starts_with("::") {
            let next = end + 2;
            end = line[next..]
                .find(|c: char| !ident(c))
                .map_or(line.len(), |i| next + i);
            if end == next {
                break;
            }
        }
        at = end.max(colons + 2);
        if preceded_by_path || start == colons {
            continue;
        }
        let path = line[start..end].trim_end_matches("::");
        let root = &line[start..colons];
        // `Self::Item`, and a generic parameter's (one capital letter, by
        // this crate's convention: `K::with_key`).
        let generic = root == "Self"
            || (root.len() == 1 && root.starts_with(|c: char| c.is_ascii_uppercase()));
        let own = generic || OWN_ROOTS.contains(&root);
        let deliberate = DELIBERATE.iter().any(|item| path.starts_with(item));
        if !own && !deliberate {
            found.push(path);
        }
    }
    found
}

/// `name` occurs in `line` as a whole word.
fn mentions(line: &str, name: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(name).any(|(at, _)| {
        !line[..at].chars().next_back().is_some_and(ident)
            && !line[at + name.len()..].chars().next().is_some_and(ident)
    })
}

/// The lines of `listing` that name an item of another crate not in
/// [`DELIBERATE`], or one of the derive's helpers.
fn foreign_lines(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter(|line| {
            !foreign_paths(line).is_empty() || HELPER_NAMES.iter().any(|name| mentions(line, name))
        })
        .collect()
}

/// We own our surface: no public item of the facade or the runtime names
/// another crate's item but the deliberate ones, the raw data layer
/// included (its mutations, filters and rows are this library's types).
#[test]
fn no_public_item_names_another_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for package in ["bigtable-ttl", "bigtable-ttl-runtime"] {
        let listing = std::fs::read_to_string(root.join(format!("api/{package}.txt")))
            .expect("the snapshot is read");
        let foreign: BTreeSet<&str> = listing.lines().flat_map(foreign_paths).collect();
        assert!(
            foreign.is_empty(),
            "{package}'s public API names other crates' items (keep them \
             inside the crate, or add a deliberate one to DELIBERATE):\n{foreign:#?}\n\
             in:\n{:#?}",
            foreign_lines(&listing)
        );
        let helpers: Vec<&str> = listing
            .lines()
            .filter(|line| HELPER_NAMES.iter().any(|name| mentions(line, name)))
            .collect();
        assert!(
            helpers.is_empty(),
            "{package}'s public API names the derive's helpers:\n{helpers:#?}"
        );
    }
}

#[test]
fn the_foreign_path_check_sees_what_it_must() {
    let flagged = [
        (
            "pub use bigtable_ttl_runtime::proto::<<googleapis_tonic_google_bigtable_v2::google::bigtable::v2::*>>",
            vec!["googleapis_tonic_google_bigtable_v2::google::bigtable::v2"],
        ),
        (
            "pub fn bigtable_ttl_runtime::data::Row::into_proto(self) -> googleapis_tonic_google_bigtable_v2::vec_u8_hash_map::google::bigtable::v2::Row",
            vec!["googleapis_tonic_google_bigtable_v2::vec_u8_hash_map::google::bigtable::v2::Row"],
        ),
        (
            "pub fn bigtable_ttl_runtime::Credentials::provider(alloc::sync::Arc<dyn gcp_auth::TokenProvider>) -> Self",
            vec!["gcp_auth::TokenProvider"],
        ),
        (
            "impl tower_service::Service<http::request::Request<tonic::body::Body>> for bigtable_ttl_runtime::data::DataService",
            vec!["tower_service::Service", "http::request::Request", "tonic::body::Body"],
        ),
        (
            "impl core::convert::From<bigtable_ttl_runtime::data::Row> for prost_types::Any",
            vec!["prost_types::Any"],
        ),
        (
            "impl<T: serde_core::ser::Serialize> bigtable_ttl_runtime::X<T> where T: futures_core::future::Future",
            vec!["futures_core::future::Future"],
        ),
    ];
    for (line, paths) in flagged {
        assert_eq!(foreign_paths(line), paths, "{line}");
        assert_eq!(foreign_lines(line), [line]);
    }
    let clean = [
        "pub fn bigtable_ttl_runtime::data::QueryRows::poll_next(core::pin::Pin<&mut Self>, &mut core::task::wake::Context<'_>) -> core::task::poll::Poll<core::option::Option<Self::Item>>",
        "pub fn bigtable_ttl_runtime::Credentials::token_source(alloc::sync::Arc<dyn bigtable_ttl_runtime::TokenSource>) -> Self",
        "pub fn bigtable_ttl_runtime::data::RawTable::read_rows(&self, bigtable_ttl_runtime::data::ReadRows) -> impl futures_core::stream::Stream<Item = bigtable_ttl_runtime::Result<bigtable_ttl_runtime::data::Row>> + core::marker::Send + 'static",
        "pub fn bigtable_ttl_runtime::ConnectionBuilder::meter_provider(self, alloc::sync::Arc<(dyn opentelemetry::metrics::meter::MeterProvider + core::marker::Send + core::marker::Sync)>) -> Self",
        "impl<T: serde_core::ser::Serialize + serde_core::de::DeserializeOwned> bigtable_ttl_runtime::CellCodec for bigtable_ttl_runtime::Json<T>",
        "pub fn chrono::naive::date::NaiveDate::from_sql(&bigtable_ttl_runtime::data::SqlValue) -> core::result::Result<Self, alloc::string::String>",
        "pub fn bool::from_sql(&bigtable_ttl_runtime::data::SqlValue) -> core::result::Result<Self, alloc::string::String>",
        "pub fn std::collections::hash::map::HashMap<K, V, S>::from_sql(&bigtable_ttl_runtime::data::SqlValue) -> core::result::Result<Self, alloc::string::String>",
        "pub use bigtable_ttl::<<bigtable_ttl_runtime::*>>",
    ];
    for line in clean {
        assert!(foreign_lines(line).is_empty(), "{line}");
    }
    let helper = "pub fn bigtable_ttl_runtime::BigtableRow::column_of(&str, &[u8]) -> bigtable_ttl_runtime::model::view::ColumnOf";
    assert_eq!(foreign_lines(helper), [helper]);
}

/// The runtime's root in the listing; the facade re-exports it whole.
const ROOT: &str = "bigtable_ttl_runtime";

/// The runtime's snapshot, which the sealing checks below read.
fn runtime_listing() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("api/bigtable-ttl-runtime.txt");
    std::fs::read_to_string(path).expect("the snapshot is read")
}

/// Kinds of item a user names as a type; their members (methods,
/// fields, variants, associated types) are public with them.
const TYPE_KINDS: &[&str] = &["struct", "enum", "union", "trait", "type"];

/// The paths of the crate a line names, each cut where the path ends
/// (`bigtable_ttl_runtime::Table<T>::get` gives `bigtable_ttl_runtime::Table`).
fn crate_paths(line: &str) -> Vec<&str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(ROOT)
        .filter(|(at, _)| !line[..*at].chars().next_back().is_some_and(ident))
        .map(|(at, _)| {
            let rest = &line[at..];
            let mut end = 0;
            loop {
                end += rest[end..]
                    .find(|c: char| !ident(c))
                    .unwrap_or(rest.len() - end);
                let more = rest[end..].strip_prefix("::").is_some_and(|next| {
                    next.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                });
                if !more {
                    break &rest[..end];
                }
                end += 2;
            }
        })
        .collect()
}

/// What a listing declares: each item's path and kind (`struct`, `fn`,
/// `mod`, `use`, …; `member` for a field or a variant).
fn declarations(listing: &str) -> BTreeMap<&str, &str> {
    let mut declared = BTreeMap::new();
    for line in listing.lines() {
        let mut words = line.split(' ').skip_while(|w| w.starts_with("#["));
        if words.next() != Some("pub") {
            continue;
        }
        let mut kind = "member";
        for word in words {
            if let Some(path) = crate_paths(word).first().filter(|_| word.starts_with(ROOT)) {
                declared.entry(*path).or_insert(kind);
                break;
            }
            kind = word;
        }
    }
    declared
}

/// Whether `path` is public: declared, or a member of a declared type.
/// (A private item under a public module is neither.)
fn is_public(declared: &BTreeMap<&str, &str>, path: &str) -> bool {
    if declared.contains_key(path) {
        return true;
    }
    let mut prefix = path;
    while let Some(at) = prefix.rfind("::") {
        prefix = &prefix[..at];
        if let Some(kind) = declared.get(prefix) {
            return TYPE_KINDS.contains(kind);
        }
    }
    false
}

/// Type names a line gives without any path: rustdoc prints a type so when
/// it finds no public path to it. Generic parameters (one capital letter,
/// by this crate's convention), `Self` and associated-type bindings
/// (`Item = …`) are not such names.
fn bare_names(line: &str) -> Vec<&str> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(|c: char| c.is_ascii_uppercase())
        .filter(|(at, _)| {
            !line[..*at]
                .chars()
                .next_back()
                .is_some_and(|c| ident(c) || c == ':' || c == '\'')
        })
        .filter_map(|(at, _)| {
            let len = line[at..]
                .find(|c: char| !ident(c))
                .unwrap_or(line.len() - at);
            let name = &line[at..at + len];
            let binding = line[at + len..].starts_with(" =");
            (name.len() > 1 && name != "Self" && !binding).then_some(name)
        })
        .collect()
}

/// The lines of `listing` whose public item names a type users cannot
/// name: one of the crate's private paths, or a type without a path.
fn private_names(listing: &str) -> Vec<&str> {
    let declared = declarations(listing);
    listing
        .lines()
        .filter(|line| {
            crate_paths(line)
                .iter()
                .any(|path| !is_public(&declared, path))
                || !bare_names(line).is_empty()
        })
        .collect()
}

/// Types declared under more than one path, as `a and b`: one type
/// re-exported twice, or two types of one name a reader would confuse.
fn second_paths(listing: &str) -> Vec<String> {
    let declared = declarations(listing);
    let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (path, kind) in &declared {
        let Some((parent, name)) = path.rsplit_once("::") else {
            continue;
        };
        // An associated type (`ReadRows::Error`) is its type's member.
        let in_a_module = parent == ROOT || matches!(declared.get(parent), Some(&"mod" | &"use"));
        if TYPE_KINDS.contains(kind) && in_a_module {
            by_name.entry(name).or_default().push(path);
        }
    }
    by_name
        .into_values()
        .filter(|paths| paths.len() > 1)
        .map(|paths| paths.join(" and "))
        .collect()
}

/// The variants of the crate's `Error` a user's code could construct or
/// match field by field, so that a new field would break it.
fn exhaustive_error_variants(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter(|line| {
            line.strip_prefix("pub bigtable_ttl_runtime::Error::")
                .is_some_and(|variant| {
                    // A variant, not one of its fields (`Error::Decode::table: …`).
                    let name = variant.split('(').next().unwrap_or(variant);
                    // A variant holding its fields boxed, in a struct that is
                    // itself non-exhaustive: a field added goes there.
                    let boxed = variant
                        == format!(
                            "{name}(alloc::boxed::Box<bigtable_ttl_runtime::error::{name}>)"
                        )
                        && listing.lines().any(|l| {
                            l == format!(
                                "#[non_exhaustive] pub struct bigtable_ttl_runtime::error::{name}"
                            )
                        });
                    !name.contains("::") && !boxed
                })
        })
        .collect()
}

#[test]
fn no_public_item_names_a_private_type() {
    let listing = runtime_listing();
    let private = private_names(&listing);
    assert!(
        private.is_empty(),
        "public items of bigtable-ttl-runtime name types users cannot name \
         (make the type public at one path, or keep the item crate-private):\n{private:#?}"
    );
}

#[test]
fn every_type_has_one_path() {
    let listing = runtime_listing();
    let twice = second_paths(&listing);
    assert!(
        twice.is_empty(),
        "types of bigtable-ttl-runtime public under more than one path:\n{twice:#?}"
    );
}

#[test]
fn every_error_variant_is_non_exhaustive() {
    let listing = runtime_listing();
    let open = exhaustive_error_variants(&listing);
    assert!(
        open.is_empty(),
        "variants of `Error` without #[non_exhaustive] (a field added to one \
         would break code that builds or matches it):\n{open:#?}"
    );
}

#[test]
fn the_sealing_checks_see_what_they_must() {
    let listing = "\
pub mod bigtable_ttl_runtime
pub mod bigtable_ttl_runtime::data
pub struct bigtable_ttl_runtime::data::Row
impl core::convert::From<(alloc::vec::Vec<u8>, alloc::vec::Vec<Cell>)> for bigtable_ttl_runtime::data::Row
pub fn bigtable_ttl_runtime::data::Row::cells(&self) -> &[bigtable_ttl_runtime::data::Cell]
pub struct bigtable_ttl_runtime::data::ReadRows
pub type bigtable_ttl_runtime::data::ReadRows::Error = bigtable_ttl_runtime::Error
pub fn bigtable_ttl_runtime::data::ReadRows::and_keys<K: core::convert::AsRef<[u8]>>(self, impl core::iter::traits::collect::IntoIterator<Item = K>) -> Self
pub struct bigtable_ttl_runtime::RawCell
pub bigtable_ttl_runtime::RawCell::family: alloc::string::String
pub fn bigtable_ttl_runtime::RawCell::as_cell_ref(&self) -> bigtable_ttl_runtime::model::view::CellRef<'_>
pub fn bigtable_ttl_runtime::RawCell::fmt(&self, &mut core::fmt::Formatter<'_>) -> core::fmt::Result
#[non_exhaustive] pub struct bigtable_ttl_runtime::data::WriteStats
#[non_exhaustive] pub struct bigtable_ttl_runtime::writer::WriteStats
pub mod bigtable_ttl_runtime::writer
pub fn bigtable_ttl_runtime::writer::BulkWriter<T>::stats(&self) -> bigtable_ttl_runtime::writer::WriteStats
pub struct bigtable_ttl_runtime::writer::BulkWriter<T>
#[non_exhaustive] pub enum bigtable_ttl_runtime::Error
pub bigtable_ttl_runtime::Error::EmptyRowKey
pub bigtable_ttl_runtime::Error::EmptyRowKey::table: alloc::string::String
#[non_exhaustive] pub bigtable_ttl_runtime::Error::Conflict
pub bigtable_ttl_runtime::Error::Conflict::attempts: u32
pub bigtable_ttl_runtime::Error::Io(alloc::string::String)
#[non_exhaustive] pub bigtable_ttl_runtime::Error::Other(alloc::string::String)
";
    assert_eq!(
        private_names(listing),
        [
            "impl core::convert::From<(alloc::vec::Vec<u8>, alloc::vec::Vec<Cell>)> for bigtable_ttl_runtime::data::Row",
            "pub fn bigtable_ttl_runtime::data::Row::cells(&self) -> &[bigtable_ttl_runtime::data::Cell]",
            "pub fn bigtable_ttl_runtime::RawCell::as_cell_ref(&self) -> bigtable_ttl_runtime::model::view::CellRef<'_>",
        ]
    );
    assert_eq!(
        second_paths(listing),
        ["bigtable_ttl_runtime::data::WriteStats and bigtable_ttl_runtime::writer::WriteStats"]
    );
    assert_eq!(
        exhaustive_error_variants(listing),
        [
            "pub bigtable_ttl_runtime::Error::EmptyRowKey",
            "pub bigtable_ttl_runtime::Error::Io(alloc::string::String)",
        ]
    );
}
