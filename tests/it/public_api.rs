//! The facade's public API, item by item, against the snapshot in
//! `api/bigtable-ttl.txt`: a change to what users can name fails here until
//! the snapshot is updated in the same commit (`UPDATE_PUBLIC_API=1 cargo
//! test --test it public_api`), so every API change is one a reviewer sees.
//!
//! The listing comes from rustdoc's JSON output, which stable rustdoc
//! writes when `RUSTC_BOOTSTRAP=1` is set for that one command.
//!
//! The snapshots are also read for what they must not hold: types of other
//! crates outside the one door where Bigtable's own messages are the point
//! (the raw data layer, `data`, and the `proto` re-export), and the
//! derive's helper types anywhere.

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

/// Names of other crates' items that must not appear in a public item
/// outside the raw data layer: Bigtable's generated messages and the
/// protobuf runtime.
const PROTO_NAMES: &[&str] = &["prost::", "prost_types", "googleapis_tonic"];

/// Names that must not appear in any public item, the raw data layer
/// included: the transport (tonic, http, tower, hyper), the auth crate the
/// built-in credentials use (`TokenSource` is the library's own, so a new
/// `gcp_auth` is not a breaking change), and the types only the derive's
/// expansion uses (hidden like serde's helpers).
const NEVER_NAMES: &[&str] = &[
    "gcp_auth",
    "tonic::",
    "http::",
    "tower",
    "hyper",
    "CellSink",
    "RowView",
    "FieldError",
    "ColumnOf",
];

/// `name` occurs in `line` at the start of a path segment (so `tonic::`
/// does not match inside `googleapis_tonic_…::`).
fn mentions(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The item a listing line is about: what an `impl … for X` is for, or
/// the first path of the crate otherwise.
fn subject(line: &str) -> &str {
    let line = match line.rfind(" for ") {
        Some(at) if line.starts_with("impl") => &line[at + 5..],
        _ => line,
    };
    ["bigtable_ttl_runtime::", "bigtable_ttl::"]
        .iter()
        .filter_map(|root| line.find(root).map(|at| &line[at..]))
        .min_by_key(|rest| std::cmp::Reverse(rest.len()))
        .unwrap_or(line)
}

/// Whether the line is inside the door: the raw data layer (`data`) or the
/// `proto` re-export.
fn in_the_door(line: &str) -> bool {
    let subject = subject(line);
    [
        "bigtable_ttl_runtime::data::",
        "bigtable_ttl_runtime::proto",
    ]
    .iter()
    .any(|door| subject.starts_with(door))
}

/// The lines of `listing` that name a type of another crate where only our
/// own types belong.
fn foreign_lines(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter(|line| {
            let never = NEVER_NAMES.iter().any(|name| mentions(line, name));
            let proto = !in_the_door(line) && PROTO_NAMES.iter().any(|name| mentions(line, name));
            never || proto
        })
        .collect()
}

#[test]
fn no_foreign_types_outside_the_data_door() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for package in ["bigtable-ttl", "bigtable-ttl-runtime"] {
        let listing = std::fs::read_to_string(root.join(format!("api/{package}.txt")))
            .expect("the snapshot is read");
        let foreign = foreign_lines(&listing);
        assert!(
            foreign.is_empty(),
            "{package}'s public API names other crates' types outside `data`/`proto`, \
             or the derive's helpers:\n{foreign:#?}"
        );
        // One re-export of Bigtable's messages.
        let protos: Vec<&str> = listing
            .lines()
            .filter(|line| line.starts_with("pub use ") && line.ends_with("::proto"))
            .collect();
        assert!(
            protos.len() <= 1,
            "more than one proto re-export: {protos:?}"
        );
    }
}

#[test]
fn the_foreign_type_check_sees_what_it_must() {
    let flagged = [
        "pub use bigtable_ttl_runtime::gcp_auth",
        "pub fn bigtable_ttl_runtime::Credentials::provider(alloc::sync::Arc<dyn gcp_auth::TokenProvider>) -> Self",
        "pub fn bigtable_ttl_runtime::filter::read_filter(&bigtable_ttl_runtime::Schema) -> googleapis_tonic_google_bigtable_v2::v2::RowFilter",
        "impl tower_service::Service<http::request::Request<tonic::body::Body>> for bigtable_ttl_runtime::data::DataService",
        "pub fn bigtable_ttl_runtime::BigtableRow::column_of(&str, &[u8]) -> bigtable_ttl_runtime::model::view::ColumnOf",
        "pub bigtable_ttl_runtime::ops::RowPlan::mutations: alloc::vec::Vec<googleapis_tonic_google_bigtable_v2::v2::Mutation>",
        "impl core::convert::From<bigtable_ttl_runtime::data::Row> for prost_types::Any",
    ];
    let clean = [
        "pub fn bigtable_ttl_runtime::Credentials::token_source(alloc::sync::Arc<dyn bigtable_ttl_runtime::TokenSource>) -> Self",
        "pub fn bigtable_ttl_runtime::data::Row::into_proto(self) -> googleapis_tonic_google_bigtable_v2::v2::Row",
        "impl core::convert::TryFrom<bigtable_ttl_runtime::Scan> for bigtable_ttl_runtime::data::ReadRows",
        "pub use bigtable_ttl_runtime::proto",
        "pub fn bigtable_ttl_runtime::admin::GcRule::fmt(&self, &mut core::fmt::Formatter<'_>) -> core::fmt::Result",
    ];
    for line in flagged {
        assert_eq!(foreign_lines(line), [line]);
    }
    for line in clean {
        assert!(foreign_lines(line).is_empty(), "{line}");
    }
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
                    !variant.split('(').next().unwrap_or(variant).contains("::")
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
pub use bigtable_ttl_runtime::proto
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
