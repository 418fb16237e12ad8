//! The runtime uses no API its dependencies hide: `#[doc(hidden)]` items
//! (prost's `encoding`, tonic's `codegen`, any crate's `__private`) are the
//! doors of generated code, with no semver promise, so a patch release of
//! the dependency may change them and break our users' builds.
//!
//! The check reads the source as text, comments left out.

use std::path::Path;

/// Paths into dependencies' hidden modules.
const HIDDEN: [&str; 3] = ["prost::encoding", "tonic::codegen", "__private"];

/// The lines of `text` (comments left out) that name a hidden path, other
/// than this crate's own `__private` door.
fn hidden_uses(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .filter(|code| {
            HIDDEN.iter().any(|hidden| {
                code.match_indices(hidden)
                    .any(|(at, _)| !(*hidden == "__private" && is_ours(&code[..at])))
            })
        })
        .map(|code| code.trim().to_owned())
        .collect()
}

/// Whether the path ending at `before` is this crate's (`crate::`, or the
/// `mod __private` itself).
fn is_ours(before: &str) -> bool {
    before.ends_with("crate::") || before.trim_end().ends_with("mod")
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the source folder is read") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_runtime_uses_no_hidden_api_of_a_dependency() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 20,
        "expected the runtime's source under {}",
        src.display()
    );
    let found: Vec<String> = files
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("a source file is read");
            hidden_uses(&text)
                .into_iter()
                .map(move |line| format!("{}: {line}", path.display()))
        })
        .collect();
    assert!(found.is_empty(), "hidden dependency APIs used:\n{found:#?}");
}

#[test]
fn the_check_sees_hidden_paths_outside_comments() {
    let text = "use prost::encoding::decode_varint;\n\
                let p = tonic::codegen::http::Uri::default();\n\
                use serde::__private::de;\n\
                // prost::encoding in a comment is fine\n\
                pub mod __private {\n\
                use crate::__private::Field;\n";
    assert_eq!(
        hidden_uses(text),
        [
            "use prost::encoding::decode_varint;",
            "let p = tonic::codegen::http::Uri::default();",
            "use serde::__private::de;",
        ]
    );
}
