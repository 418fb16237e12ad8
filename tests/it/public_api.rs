//! The facade's public API, item by item, against the snapshot in
//! `api/bigtable-ttl.txt`: a change to what users can name fails here until
//! the snapshot is updated in the same commit (`UPDATE_PUBLIC_API=1 cargo
//! test --test it public_api`), so every API change is one a reviewer sees.
//!
//! The listing comes from rustdoc's JSON output, which stable rustdoc
//! writes when `RUSTC_BOOTSTRAP=1` is set for that one command.

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
