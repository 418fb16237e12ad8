//! `BENCHMARKS.md` is one file written by several commands: each owns the
//! sections it renders (a `## ` heading and what follows it, up to the next
//! `## `) and leaves every other section as it found it.

/// `doc` with the section headed `heading` replaced by `text` (which starts
/// with that heading), or with `text` appended when there is none.
#[must_use]
pub fn replace_section(doc: &str, heading: &str, text: &str) -> String {
    let text = text.trim_end();
    let start = if doc.starts_with(&format!("{heading}\n")) {
        Some(0)
    } else {
        doc.find(&format!("\n{heading}\n")).map(|at| at + 1)
    };
    match start {
        Some(start) => {
            let end = doc[start + heading.len()..]
                .find("\n## ")
                .map_or(doc.len(), |at| start + heading.len() + at + 1);
            let rest = &doc[end..];
            let gap = if rest.is_empty() { "\n" } else { "\n\n" };
            format!("{}{text}{gap}{rest}", &doc[..start])
        }
        None => format!("{}\n\n{text}\n", doc.trim_end()),
    }
}

/// Replace (or add) the section headed `heading` of the file at `path`.
///
/// # Errors
/// The file cannot be read or written.
pub fn update_file(path: &std::path::Path, heading: &str, text: &str) -> std::io::Result<()> {
    let old = std::fs::read_to_string(path)?;
    std::fs::write(path, replace_section(&old, heading, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Benchmarks\n\nintro\n\n## A\n\none\n\n## B\n\ntwo\n\n## C\n\nthree\n";

    #[test]
    fn a_section_is_replaced_and_its_neighbours_kept() {
        let doc = replace_section(DOC, "## B", "## B\n\nnew two\n");
        assert_eq!(
            doc,
            "# Benchmarks\n\nintro\n\n## A\n\none\n\n## B\n\nnew two\n\n## C\n\nthree\n"
        );
        let doc = replace_section(DOC, "## C", "## C\n\nnew three");
        assert!(doc.ends_with("## B\n\ntwo\n\n## C\n\nnew three\n"), "{doc}");
    }

    #[test]
    fn a_missing_section_is_appended() {
        let doc = replace_section(DOC, "## D", "## D\n\nfour\n");
        assert!(doc.starts_with(DOC.trim_end()));
        assert!(doc.ends_with("## C\n\nthree\n\n## D\n\nfour\n"), "{doc}");
    }

    #[test]
    fn a_heading_that_only_starts_like_another_is_not_it() {
        let doc = replace_section(DOC, "## B", "## B\n\nx\n");
        let again = replace_section(&doc, "## B", "## B\n\ny\n");
        assert_eq!(again.matches("## B").count(), 1);
        let doc = replace_section("## Bee\n\nz\n", "## B", "## B\n\nb\n");
        assert!(
            doc.contains("## Bee\n\nz") && doc.contains("## B\n\nb"),
            "{doc}"
        );
    }
}
