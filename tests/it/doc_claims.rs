//! The checkable claims of the README, the guide and BENCHMARKS.md stay
//! true: every file path they name exists, the layout page lists every
//! example, and their Rust snippets import only the crates the README tells
//! a user to add (chrono comes through `bigtable_ttl::chrono`). The
//! CHANGELOG is history and may name files since removed.

use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README, each guide page and BENCHMARKS.md: (name, text).
fn documents() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_owned(), "BENCHMARKS.md".to_owned()];
    let mut pages: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("guide"))
        .expect("the guide directory")
        .map(|entry| entry.expect("a guide entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| format!("guide/{}", path.file_name().unwrap().to_string_lossy()))
        .collect();
    pages.sort();
    names.extend(pages);
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(&name))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, text)
        })
        .collect()
}

/// The spans of `text` between backticks.
fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// Folders of the repository a path named in the docs starts with.
const TOP: [&str; 14] = [
    "src/",
    "tests/",
    "examples/",
    "bench/",
    "guide/",
    ".ci/",
    "ttl-cli/",
    "ttl-derive/",
    "ttl-emulator/",
    "ttl-runtime/",
    "ttl-spec/",
    "ttl-testproxy/",
    "ttl-history/",
    "api/",
];

/// A span that names a file or folder of the repository.
fn repository_path(span: &str) -> Option<&str> {
    let path = span.trim_end_matches(['.', ',', ':', ';']);
    let plain = !path.contains(|c: char| c.is_whitespace() || "*{}<>()|?$=\"'".contains(c));
    (plain && TOP.iter().any(|top| path.starts_with(top))).then_some(path)
}

#[test]
fn every_file_path_the_docs_name_exists() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for (name, text) in documents() {
        for path in code_spans(&text).filter_map(repository_path) {
            checked += 1;
            if !Path::new(ROOT).join(path).exists() {
                missing.push(format!("{name}: `{path}`"));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} paths found: is the scan right?"
    );
    assert!(
        missing.is_empty(),
        "named but absent:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_layout_page_lists_every_example() {
    let layout = std::fs::read_to_string(Path::new(ROOT).join("guide/layout.md")).unwrap();
    let row = layout
        .lines()
        .find(|l| l.starts_with("| `examples/` |"))
        .expect("guide/layout.md has an `examples/` row");
    let mut entries: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("examples"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                format!("{name}/")
            } else {
                name.trim_end_matches(".rs").to_owned()
            }
        })
        .collect();
    entries.sort();
    assert!(entries.len() >= 5, "{entries:?}");
    for entry in entries {
        assert!(
            row.contains(&format!("`{entry}`")),
            "guide/layout.md's examples row does not name `{entry}`: {row}"
        );
    }
}

/// The crates a snippet may import: those of the README's
/// `[dependencies]` block, and the language's own.
fn importable() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let block = readme
        .split_once("```toml\n[dependencies]\n")
        .expect("the README has a [dependencies] block")
        .1;
    let block = &block[..block.find("```").expect("its closing fence")];
    let mut crates: Vec<String> = block
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            l.split_once('=')
                .map(|(name, _)| name.trim().replace('-', "_"))
        })
        .collect();
    assert!(crates.iter().any(|c| c == "bigtable_ttl"), "{crates:?}");
    crates.extend(["std", "core", "crate", "self", "super"].map(String::from));
    crates
}

/// The Rust blocks of `text`, hidden lines (`# …`) included: as rustdoc
/// reads them, a fence with no language is Rust.
fn rust_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    // Inside a fenced block: whether it is Rust, and its lines.
    let mut open: Option<(bool, Vec<&str>)> = None;
    for line in text.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            match open.take() {
                Some((true, lines)) => blocks.push(lines),
                Some((false, _)) => {}
                None => open = Some((info.is_empty() || info.starts_with("rust"), Vec::new())),
            }
        } else if let Some((_, lines)) = open.as_mut() {
            lines.push(line);
        }
    }
    blocks
}

#[test]
fn snippets_import_only_what_the_readme_lists() {
    let importable = importable();
    let mut strays = Vec::new();
    for (name, text) in documents() {
        for block in rust_blocks(&text) {
            for line in block {
                let code = line.trim_start().trim_start_matches('#').trim_start();
                let Some(path) = code.strip_prefix("use ") else {
                    continue;
                };
                let root = path
                    .trim_start_matches("::")
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default();
                if !importable.iter().any(|c| c == root) {
                    strays.push(format!("{name}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        strays.is_empty(),
        "snippets importing a crate the README does not list (chrono is \
         `bigtable_ttl::chrono`):\n{}",
        strays.join("\n")
    );
}
