//! The runtime's source is in layers, and this test keeps it so.
//!
//! Each folder of `src/` is a layer: `model` (the pure core) below `wire`
//! (gRPC) below `client` (I/O) below `ops` (operations by family name). A
//! file may name modules of its own layer and of the layers below, never of
//! one above; the files must not name each other in a circle; and the pure
//! core names neither tokio nor tonic. Files name modules by their layer path
//! (`crate::model::policy`), never by the re-exports `lib.rs` keeps for users
//! (`crate::policy`), so that the rule can be read off the path.
//!
//! The check reads the source as text: every `crate::…` and `super::…` path
//! outside comments, `use` trees with braces expanded.
//!
//! It also keeps one road to Bigtable's data API: only the raw data layer
//! (`client/data/`, `RawTable`) sends data RPCs, so that Google's client
//! conformance suite, which drives that layer through the test proxy, vouches
//! for every byte the library sends. The typed table, the bulk writer, the
//! operations and the schema checks call `RawTable`'s operations; none takes
//! the data channel or the raw layer's machinery for itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first.
const LAYERS: [&str; 4] = ["model", "wire", "client", "ops"];

/// The raw data layer: the one road to Bigtable's data API.
const RAW_LAYER: &str = "client/data/";

/// What only the raw layer may call: the data channel, its `MutateRows`
/// batches (per-entry retries and idempotence) and its resumed `ReadRows`
/// stream. A definition (`fn send_batch`) is not a call.
const RAW_ONLY: [(&str, &str); 3] = [
    ("data_channel", "the data channel"),
    ("send_batch", "the raw layer's MutateRows batches"),
    ("read_rows_with", "the raw layer's resumed ReadRows stream"),
];

/// Where the data channel's type may be named besides the raw layer: the
/// gRPC layer that defines it, the connection and its builder that open it,
/// and the read engine the raw layer hands it to.
const CHANNEL_HOLDERS: [&str; 4] = [
    "wire/",
    "client/builder.rs",
    "client/connection.rs",
    "client/read.rs",
];

/// Names of the side roads this issue closed, which must not come back.
const GONE: [&str; 1] = ["write_entries"];

/// A source file: its path under `src/` (`model/row.rs`) and its text.
struct Source {
    path: String,
    text: String,
}

#[test]
fn no_file_names_a_higher_layer_or_a_file_that_names_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources = read_tree(&src);
    assert!(
        sources.iter().any(|s| s.path == "model/policy.rs"),
        "expected the layered tree under {}",
        src.display()
    );
    let problems = check(&sources);
    assert!(
        problems.is_empty(),
        "the runtime's layers are broken:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn only_the_raw_layer_sends_data_rpcs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources = read_tree(&src);
    assert!(
        sources.iter().any(|s| s.path == "client/data/mod.rs"),
        "expected the raw layer under {}",
        src.display()
    );
    let problems = side_roads(&sources);
    assert!(
        problems.is_empty(),
        "data RPCs sent around the raw layer:\n  {}",
        problems.join("\n  ")
    );
}

/// What only the transport reads: the operating system's and the
/// transport's error texts and types, to tell how a call Bigtable did not
/// answer ended. The pure core keeps what the transport found (a variant's
/// field); it reads no transport's words itself.
const TRANSPORT_READING: [&str; 3] = ["os error", "downcast_ref::<std::io::Error>", "ErrorKind::"];

#[test]
fn only_the_transport_reads_transport_errors() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found: Vec<String> = read_tree(&src)
        .iter()
        .filter(|s| s.path.starts_with("model/"))
        .flat_map(|s| {
            let code = s.text.split("#[cfg(test)]").next().unwrap_or_default();
            TRANSPORT_READING
                .iter()
                .filter(move |word| code.contains(*word))
                .map(move |word| format!("{} reads `{word}`", s.path))
        })
        .collect();
    assert!(
        found.is_empty(),
        "the pure core reads the transport's errors (move it to wire/cause.rs):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_road_check_catches_every_side_road() {
    let file = |path: &str, text: &str| Source {
        path: path.to_owned(),
        text: text.to_owned(),
    };
    let sources = [
        file(
            "client/data/mod.rs",
            "fn f(c: &Connection) { send_batch(c.data_channel(), b); read_rows_with(ch, r); }\n",
        ),
        file("client/data/mutate.rs", "pub(super) async fn send_batch() {}\n"),
        file(
            "client/read.rs",
            "use crate::wire::channel::DataChannel;\npub(crate) fn read_rows_with(channel: DataChannel) {}\n",
        ),
        file(
            "client/writer.rs",
            "async fn w(conn: &Connection) { send_batch(conn.data_channel(), batch).await; }\n",
        ),
        file(
            "client/admin.rs",
            "fn r(c: &Connection) { read_rows_with(c.data_channel(), request); }\n// send_batch in a comment is fine\n",
        ),
        file("ops/scan.rs", "struct Pages { channel: crate::wire::channel::DataChannel }\n"),
        file("ops/migrate.rs", "pub(crate) async fn write_entries() {}\n"),
    ];
    let problems = side_roads(&sources).join("\n");
    for expected in [
        "client/writer.rs calls send_batch (the raw layer's MutateRows batches)",
        "client/writer.rs calls data_channel (the data channel)",
        "client/admin.rs calls read_rows_with (the raw layer's resumed ReadRows stream)",
        "ops/scan.rs names DataChannel",
        "ops/migrate.rs has write_entries",
    ] {
        assert!(
            problems.contains(expected),
            "missing {expected:?} in:\n{problems}"
        );
    }
    for fine in ["client/data/", "client/read.rs"] {
        assert!(
            !problems.lines().any(|line| line.starts_with(fine)),
            "{fine}: {problems}"
        );
    }
    assert!(!problems.contains("comment"), "{problems}");
}

/// Every file that reaches Bigtable's data API around the raw layer, one
/// line each.
fn side_roads(sources: &[Source]) -> Vec<String> {
    let mut problems = Vec::new();
    for source in sources {
        let path = source.path.as_str();
        let code = strip_comments(&source.text);
        for gone in GONE {
            if !identifier_at(&code, gone).is_empty() {
                problems.push(format!(
                    "{path} has {gone}: write through RawTable's operations"
                ));
            }
        }
        if path.starts_with(RAW_LAYER) {
            continue;
        }
        for (name, what) in RAW_ONLY {
            let calls = identifier_at(&code, name)
                .into_iter()
                .any(|i| !code[..i].trim_end().ends_with("fn"));
            if calls {
                problems.push(format!(
                    "{path} calls {name} ({what}): data RPCs go through RawTable ({RAW_LAYER})"
                ));
            }
        }
        let holder = CHANNEL_HOLDERS.iter().any(|h| path.starts_with(h));
        if !holder && !identifier_at(&code, "DataChannel").is_empty() {
            problems.push(format!(
                "{path} names DataChannel: only the raw layer ({RAW_LAYER}) holds the data channel"
            ));
        }
    }
    problems
}

/// Where `name` occurs in `code` as a whole identifier (no identifier
/// character on either side).
fn identifier_at(code: &str, name: &str) -> Vec<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name)
        .filter(|(i, _)| {
            let before = code[..*i].chars().next_back();
            let after = code[i + name.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn the_check_catches_an_upward_name_a_circle_and_io_in_the_core() {
    let file = |path: &str, text: &str| Source {
        path: path.to_owned(),
        text: text.to_owned(),
    };
    let sources = [
        file("lib.rs", "pub mod model;\npub use model::policy;\n"),
        file("model/mod.rs", "pub mod a;\npub mod b;\n"),
        file(
            "model/a.rs",
            "use crate::model::{b::B, policy::P};\n// crate::client::table in a comment is fine\n",
        ),
        file(
            "model/b.rs",
            "pub fn f() { crate::model::a::g(); tokio::spawn(async {}); }\n",
        ),
        file("model/policy.rs", "use crate::client::table::Table;\n"),
        file("client/mod.rs", "pub mod table;\n"),
        file("client/table.rs", "use crate::policy::Policy;\n"),
    ];
    let problems = check(&sources).join("\n");
    for expected in [
        "model/policy.rs names crate::client::table::Table (layer client, above model)",
        "model/a.rs -> model/b.rs -> model/a.rs",
        "model/b.rs names tokio",
        "client/table.rs names crate::policy::Policy: name modules by their layer path",
    ] {
        assert!(
            problems.contains(expected),
            "missing {expected:?} in:\n{problems}"
        );
    }
    assert!(!problems.contains("comment"), "{problems}");
}

fn read_tree(src: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).expect("under src");
                out.push(Source {
                    path: rel.to_string_lossy().replace('\\', "/"),
                    text: std::fs::read_to_string(&path).expect("read file"),
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Every broken rule, one line each.
fn check(sources: &[Source]) -> Vec<String> {
    let files: BTreeSet<&str> = sources.iter().map(|s| s.path.as_str()).collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        let path = source.path.as_str();
        if path == "lib.rs" {
            continue;
        }
        let code = strip_comments(&source.text);
        let layer = layer_of(path);
        if layer == Some(0) {
            for io in ["tokio", "tonic"] {
                if mentions_crate(&code, io) {
                    problems.push(format!("{path} names {io}: the pure core does no I/O"));
                }
            }
        }
        for name in crate_paths(&code, path) {
            let shown = format!("crate::{}", name.join("::"));
            let first = name[0].as_str();
            let Some(target_layer) = LAYERS.iter().position(|l| *l == first) else {
                problems.push(format!(
                    "{path} names {shown}: name modules by their layer path (crate::model::…, crate::wire::…, crate::client::…, crate::ops::…)"
                ));
                continue;
            };
            if let Some(own) = layer {
                if target_layer > own {
                    problems.push(format!(
                        "{path} names {shown} (layer {}, above {})",
                        LAYERS[target_layer], LAYERS[own]
                    ));
                }
            }
            if let Some(file) = resolve(&files, &name) {
                if file != path {
                    edges.entry(path).or_default().insert(file);
                }
            }
        }
    }
    problems.extend(cycles(&edges));
    problems
}

/// The layer of a file under `src/`, by its folder (`None` at the root).
fn layer_of(path: &str) -> Option<usize> {
    let folder = path.split('/').next()?;
    LAYERS.iter().position(|l| *l == folder)
}

/// `text` without `//` comments (doc comments included) and string literals'
/// contents, so that prose and messages naming a module do not count.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_string = false;
        let mut prev = ' ';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if in_string {
                if c == '"' && prev != '\\' {
                    in_string = false;
                    kept.push('"');
                }
                prev = if prev == '\\' && c == '\\' { ' ' } else { c };
                i += 1;
                continue;
            }
            if c == '"' {
                in_string = true;
                kept.push('"');
            } else if c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            } else {
                kept.push(c);
            }
            prev = c;
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// Whether `code` names the crate `name` (`name::…` not preceded by a path
/// or identifier character).
fn mentions_crate(code: &str, name: &str) -> bool {
    let needle = format!("{name}::");
    code.match_indices(&needle).any(|(i, _)| {
        code[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
    })
}

/// Every module path `code` (of file `path`) names through `crate::` or
/// `super::`, as segments after `crate`; `use` trees are expanded.
fn crate_paths(code: &str, path: &str) -> Vec<Vec<String>> {
    let module = module_of(path);
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || {
            let p = bytes[i - 1];
            !(p.is_alphanumeric() || p == '_' || p == ':')
        };
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let (base, skip) = if boundary && rest.starts_with("crate::") {
            (Vec::new(), 7)
        } else if boundary && rest.starts_with("super::") {
            // `super` of a file's module; inside an inline `mod tests` it is
            // the file itself, which resolves to the file and is skipped.
            let mut base = module.clone();
            base.pop();
            (base, 7)
        } else {
            i += 1;
            continue;
        };
        let (tree, used) = read_tree_expr(&bytes[i + skip..]);
        for tail in expand(&tree) {
            let mut full = base.clone();
            let mut tail = tail;
            while tail.first().is_some_and(|s| s == "super") {
                tail.remove(0);
                full.pop();
            }
            full.extend(tail);
            if !full.is_empty() && full[0] != "self" {
                out.push(full);
            }
        }
        i += skip + used.max(1);
    }
    out
}

/// The module path of a file: `model/row.rs` is `[model, row]`, and
/// `ops/mod.rs` is `[ops]`.
fn module_of(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// A path expression after `crate::`: identifiers and `::`, with one level
/// of braces or more, up to what cannot continue it. Returns the text and
/// how many characters it took.
fn read_tree_expr(chars: &[char]) -> (String, usize) {
    let mut depth = 0usize;
    let mut out = String::new();
    for (n, &c) in chars.iter().enumerate() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return (out, n),
            '}' => depth -= 1,
            c if c.is_alphanumeric() || c == '_' || c == ':' || c == '*' => {}
            ',' | ' ' | '\n' | '\t' if depth > 0 => {}
            _ => return (out, n),
        }
        out.push(c);
    }
    let n = chars.len();
    (out, n)
}

/// `a::{b::C, d}` as `[[a, b, C], [a, d]]`; only the module segments
/// matter, so a trailing item name is kept and resolution ignores it.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim().trim_end_matches("::");
    let Some(open) = tree.find('{') else {
        let segs: Vec<String> = tree
            .split("::")
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty() && s != "*" && s != "self")
            .collect();
        return if segs.is_empty() { vec![] } else { vec![segs] };
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    let mut out = Vec::new();
    for item in items {
        let subs = expand(item);
        if subs.is_empty() && !prefix.is_empty() {
            out.push(prefix.clone());
        }
        for sub in subs {
            let mut full = prefix.clone();
            full.extend(sub);
            out.push(full);
        }
    }
    out
}

/// The deepest file a module path lands in (`[model, row, BigtableRow]` is
/// `model/row.rs`).
fn resolve(files: &BTreeSet<&str>, name: &[String]) -> Option<String> {
    let mut found = None;
    let mut dir = PathBuf::new();
    for segment in name {
        dir.push(segment);
        let as_file = format!("{}.rs", dir.to_string_lossy());
        let as_mod = format!("{}/mod.rs", dir.to_string_lossy());
        if files.contains(as_file.as_str()) {
            found = Some(as_file);
        } else if files.contains(as_mod.as_str()) {
            found = Some(as_mod);
        } else {
            break;
        }
    }
    found
}

/// Each circle of files naming each other, once, as `a -> b -> a`.
fn cycles(edges: &BTreeMap<&str, BTreeSet<String>>) -> Vec<String> {
    let mut found = BTreeSet::new();
    for &start in edges.keys() {
        // Depth-first search for a path back to `start`.
        let mut stack: Vec<(String, Vec<String>)> =
            vec![(start.to_owned(), vec![start.to_owned()])];
        let mut seen = BTreeSet::new();
        while let Some((node, trail)) = stack.pop() {
            for next in edges.get(node.as_str()).into_iter().flatten() {
                if next == start {
                    let mut circle = trail.clone();
                    // One spelling per circle: rotate to its smallest file.
                    let min = circle
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, f)| f.as_str())
                        .map_or(0, |(i, _)| i);
                    circle.rotate_left(min);
                    let first = circle[0].clone();
                    circle.push(first);
                    found.insert(format!(
                        "files name each other in a circle: {}",
                        circle.join(" -> ")
                    ));
                } else if seen.insert(next.clone()) {
                    let mut trail = trail.clone();
                    trail.push(next.clone());
                    stack.push((next.clone(), trail));
                }
            }
        }
    }
    found.into_iter().collect()
}
