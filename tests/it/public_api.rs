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

use std::collections::BTreeSet;
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
/// included: the transport (tonic, http, tower, hyper), and the types only
/// the derive's expansion uses (hidden like serde's helpers).
const NEVER_NAMES: &[&str] = &[
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
            // `gcp_auth` is named once: the token provider `Credentials` takes.
            let gcp_auth = mentions(line, "gcp_auth") && !line.contains("Credentials::provider(");
            let never = NEVER_NAMES.iter().any(|name| mentions(line, name));
            let proto = !in_the_door(line) && PROTO_NAMES.iter().any(|name| mentions(line, name));
            gcp_auth || never || proto
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
        "pub fn bigtable_ttl_runtime::filter::read_filter(&bigtable_ttl_runtime::Schema) -> googleapis_tonic_google_bigtable_v2::v2::RowFilter",
        "impl tower_service::Service<http::request::Request<tonic::body::Body>> for bigtable_ttl_runtime::data::DataService",
        "pub fn bigtable_ttl_runtime::BigtableRow::column_of(&str, &[u8]) -> bigtable_ttl_runtime::model::view::ColumnOf",
        "pub bigtable_ttl_runtime::ops::RowPlan::mutations: alloc::vec::Vec<googleapis_tonic_google_bigtable_v2::v2::Mutation>",
        "impl core::convert::From<bigtable_ttl_runtime::data::Row> for prost_types::Any",
    ];
    let clean = [
        "pub fn bigtable_ttl_runtime::Credentials::provider(alloc::sync::Arc<dyn gcp_auth::TokenProvider>) -> Self",
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
