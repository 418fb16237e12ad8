//! The README's "In your `Cargo.toml`" section names only features the
//! facade has, and the chrono it tells users to use is the re-export.
//! (Its Rust examples are compiled as the facade's docs.)

const README: &str = include_str!("../../README.md");
const MANIFEST: &str = include_str!("../../Cargo.toml");

/// The lines of the first fenced block after the heading `heading` of `text`.
fn block_after<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let rest = text
        .split_once(heading)
        .unwrap_or_else(|| panic!("the README has no `{heading}` section"))
        .1;
    let start = rest.find("```").expect("a fenced block") + 3;
    let body = &rest[start..];
    let body = &body[body.find('\n').expect("a fence line") + 1..];
    let end = body.find("```").expect("a closing fence");
    body[..end].lines().collect()
}

/// The names declared in the facade manifest's `[features]` table.
fn facade_features() -> Vec<String> {
    let table = MANIFEST
        .split_once("\n[features]\n")
        .expect("the facade declares [features]")
        .1;
    table
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once('=').map(|(name, _)| name.trim().to_owned()))
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .collect()
}

#[test]
fn the_cargo_toml_section_names_only_real_features() {
    let lines = block_after(README, "## In your `Cargo.toml`");
    let dependency = lines
        .iter()
        .find(|l| l.starts_with("bigtable-ttl"))
        .expect("a bigtable-ttl line");
    let version = env!("CARGO_PKG_VERSION");
    let major_minor = version.rsplit_once('.').map_or(version, |(mm, _)| mm);
    assert!(
        dependency.contains(&format!("\"{major_minor}\"")),
        "{dependency} should ask for {major_minor}"
    );
    let features = facade_features();
    let asked: Vec<&str> = dependency
        .split_once("features = [")
        .map(|(_, rest)| rest.split(']').next().unwrap_or_default())
        .unwrap_or_default()
        .split(',')
        .map(|f| f.trim().trim_matches('"'))
        .filter(|f| !f.is_empty())
        .collect();
    assert!(
        !asked.is_empty(),
        "the section shows how to turn on a feature"
    );
    for feature in asked {
        assert!(
            features.iter().any(|f| f == feature),
            "README asks for feature `{feature}`; the facade has {features:?}"
        );
    }
    // The user needs no chrono line: the README points at the re-export.
    assert!(!lines.iter().any(|l| l.starts_with("chrono")), "{lines:#?}");
    assert!(README.contains("use bigtable_ttl::chrono::{DateTime, TimeDelta, Utc};"));
}

/// What the README's quick start imports, through the facade alone.
#[test]
fn chrono_s_types_come_through_the_facade() {
    use bigtable_ttl::chrono::{DateTime, TimeDelta, Utc};
    let t: DateTime<Utc> = DateTime::from_timestamp(0, 0).expect("the epoch");
    assert_eq!(
        bigtable_ttl::human(t + TimeDelta::minutes(90) - t).to_string(),
        "1h 30m"
    );
}

const GUIDE_MODULE: &str = include_str!("../../src/guide.rs");
const FACADE: &str = include_str!("../../src/lib.rs");

/// The guide's Markdown pages, by file name, read from `guide/`.
fn guide_pages() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/guide");
    let mut pages: Vec<String> = std::fs::read_dir(dir)
        .expect("the guide directory")
        .map(|entry| entry.expect("a guide entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| {
            path.file_name()
                .expect("a file name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    pages.sort();
    pages
}

/// The README stays a front page; the reference lives in the guide.
#[test]
fn the_readme_is_short_and_starts_with_the_two_commands() {
    let lines = README.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; move detail into guide/"
    );
    let first_block = block_after(README, "# bigtable-ttl");
    assert!(
        first_block
            .iter()
            .any(|l| l.starts_with("cargo run --example ")),
        "{first_block:#?}"
    );
    assert!(
        first_block
            .iter()
            .any(|l| l.starts_with("cargo test --workspace --all-features")),
        "{first_block:#?}"
    );
    let ci = include_str!("../../.ci/run");
    assert!(
        ci.contains("cargo test --workspace --all-features"),
        "`.ci/run` runs the README's test command"
    );
}

/// Every page in `guide/` is compiled as a module of `bigtable_ttl::guide`
/// (so its examples are doc tests) and is listed in the README's table.
#[test]
fn every_guide_page_is_compiled_and_listed() {
    let pages = guide_pages();
    assert!(pages.len() >= 10, "{pages:?}");
    for page in &pages {
        assert!(
            GUIDE_MODULE.contains(&format!("include_str!(\"../guide/{page}\")")),
            "guide/{page} is not included by src/guide.rs"
        );
        let module = page.trim_end_matches(".md").replace('-', "_");
        assert!(
            GUIDE_MODULE.contains(&format!("pub mod {module} {{}}")),
            "guide/{page} should be the module guide::{module}"
        );
        // One reference label, two targets: the page on the repository
        // (the README's own definition) and the module on docs.rs (the
        // facade's, which comes first there).
        assert!(
            README.contains(&format!("][{module}]"))
                && README.contains(&format!("\n[{module}]: guide/{page}\n")),
            "README's guide table does not link guide/{page}"
        );
        assert!(
            FACADE.contains(&format!("//! [{module}]: crate::guide::{module}\n")),
            "src/lib.rs does not point [{module}] at guide::{module}"
        );
    }
}

/// The Rust version the README promises is the workspace's `rust-version`.
#[test]
fn the_readme_names_the_rust_version() {
    let msrv = env!("CARGO_PKG_RUST_VERSION");
    assert!(!msrv.is_empty(), "the facade declares rust-version");
    assert!(
        README.contains(&format!("It needs Rust {msrv} or newer")),
        "README should say it needs Rust {msrv}"
    );
}
