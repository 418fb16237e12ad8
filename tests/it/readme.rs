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

/// Three columns in a family other structs share, and the same struct
/// owning its family, each with and without a shadow column.
mod costs {
    use bigtable_ttl::BigtableRow;

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f")]
    #[ttl(default = "1d")]
    pub struct Shared {
        #[bigtable(key)]
        pub id: String,
        pub a: String,
        pub b: String,
        pub c: String,
    }

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f")]
    #[ttl(default = "1d", written_at)]
    pub struct SharedWritten {
        #[bigtable(key)]
        pub id: String,
        pub a: String,
        pub b: String,
        pub c: String,
    }

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f", owns_family)]
    #[ttl(default = "1d")]
    pub struct Owned {
        #[bigtable(key)]
        pub id: String,
        pub a: String,
        pub b: String,
        pub c: String,
    }

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f", owns_family)]
    #[ttl(default = "1d", written_at)]
    pub struct OwnedWritten {
        #[bigtable(key)]
        pub id: String,
        pub a: String,
        pub b: String,
        pub c: String,
    }
}

/// The README's cost of a write is what a whole-row write sends: 2N + 2
/// mutations for N columns set, N + 2 owning the family, a shadow column
/// 2 more (1 owning the family).
#[test]
fn the_readme_s_write_cost_is_what_a_write_sends() {
    use bigtable_ttl::data::mutations_of;
    use bigtable_ttl::BigtableRow as _;
    use costs::{Owned, OwnedWritten, Shared, SharedWritten};

    let now = bigtable_ttl::chrono::Utc::now();
    let s = || "v".to_owned();
    let n = 3;
    // The same row through each of the four layouts.
    macro_rules! sent {
        ($($layout:ident),*) => {
            [$(mutations_of(
                &$layout { id: s(), a: s(), b: s(), c: s() }
                    .mutation()
                    .build(now)
                    .unwrap(),
            )
            .len()),*]
        };
    }
    let sent = sent!(Shared, Owned, SharedWritten, OwnedWritten);
    assert_eq!(sent, [2 * n + 2, n + 2, 2 * n + 2 + 2, n + 2 + 1]);
    let line = README
        .lines()
        .find(|l| l.starts_with("* **Writes:**"))
        .expect("the README's cost of a write");
    for says in [
        "sends 2N + 2 mutations",
        "N + 2 with `#[bigtable(owns_family)]`",
        "adds 2 (1 with `owns_family`)",
    ] {
        assert!(line.contains(says), "{says:?}: {line}");
    }
}

/// What the first screen says of the project's status is what the
/// manifest says: its version, no placeholder address, the licence files
/// its `license` names.
#[test]
fn the_status_and_licence_are_true() {
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        README.contains(&format!(
            "Version {version}, **not yet published on crates.io**"
        )),
        "the README states version {version} and that it is unpublished"
    );
    for line in MANIFEST.lines().filter(|l| l.starts_with("repository")) {
        assert!(
            !line.contains(".invalid") && !line.contains("example."),
            "a placeholder repository: {line}"
        );
    }
    assert!(MANIFEST.contains("license = \"MIT OR Apache-2.0\""));
    let root = env!("CARGO_MANIFEST_DIR");
    let mit = std::fs::read_to_string(format!("{root}/LICENSE-MIT")).expect("LICENSE-MIT");
    let apache = std::fs::read_to_string(format!("{root}/LICENSE-APACHE")).expect("LICENSE-APACHE");
    assert!(mit.starts_with("Copyright (c) the bigtable-ttl developers"));
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
}

/// The README's "In your `Cargo.toml`" block, pasted as it is into a new
/// project beside a clone (here a link to this checkout, at the
/// `../bigtable-ttl` the line names), resolves: cargo finds
/// `bigtable-ttl` with the features it asks for. A `version`-only line
/// fails here with "no matching package named `bigtable-ttl` found" while
/// nothing is published.
#[test]
fn the_readme_s_dependency_lines_resolve() {
    let lines = block_after(README, "## In your `Cargo.toml`");
    let scratch = std::env::temp_dir().join(format!("bigtable-ttl-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let app = scratch.join("app");
    std::fs::create_dir_all(app.join("src")).expect("a scratch project");
    std::os::unix::fs::symlink(env!("CARGO_MANIFEST_DIR"), scratch.join("bigtable-ttl"))
        .expect("a link standing for the clone");
    let manifest = format!(
        "[package]\nname = \"app\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n{}\n",
        lines.join("\n")
    );
    std::fs::write(app.join("Cargo.toml"), manifest).expect("the manifest");
    std::fs::write(app.join("src/main.rs"), "fn main() {}\n").expect("main.rs");
    // Offline: the registry's crates are those this workspace was built
    // with; only the resolution is checked, nothing is built.
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--offline", "--format-version", "1"])
        .current_dir(&app)
        .env("CARGO_TARGET_DIR", scratch.join("target"))
        .output()
        .expect("cargo runs");
    let _ = std::fs::remove_dir_all(&scratch);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the README's dependency lines do not resolve: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("\"name\":\"bigtable-ttl\"") && stdout.contains("\"json\""),
        "bigtable-ttl with feature json in the resolved graph"
    );
}
