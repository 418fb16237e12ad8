//! `BENCHMARKS.md` is written by hand but for its tables: each generated
//! table, with the line saying when and on what it was measured, stands
//! between `<!-- table NAME -->` and `<!-- /table NAME -->`, and
//! `ttl-bench report` replaces what is between the two, nothing else.

fn markers(name: &str) -> (String, String) {
    (
        format!("<!-- table {name} -->"),
        format!("<!-- /table {name} -->"),
    )
}

/// The text of table `name` in `doc`.
#[must_use]
pub fn get<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    let (open, close) = markers(name);
    let start = doc.find(&open)? + open.len();
    let end = doc[start..].find(&close)? + start;
    Some(doc[start..end].trim())
}

/// `doc` with the text of table `name` replaced by `text`.
///
/// # Errors
/// `doc` has no such table (a renamed or deleted marker is an error, not a
/// table silently dropped).
pub fn replace(doc: &str, name: &str, text: &str) -> Result<String, String> {
    let (open, close) = markers(name);
    let missing = || format!("no `{open}` … `{close}` in the file");
    let start = doc.find(&open).ok_or_else(missing)? + open.len();
    let end = start + doc[start..].find(&close).ok_or_else(missing)?;
    let (before, after) = (&doc[..start], &doc[end..]);
    Ok(format!("{before}\n\n{}\n\n{after}", text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# B\n\nprose\n\n<!-- table a -->\n\n| x |\n\n<!-- /table a -->\n\nmore \
                       prose\n<!-- table b -->\n| y |\n<!-- /table b -->\n";

    #[test]
    fn only_the_table_is_replaced() {
        let doc = replace(DOC, "a", "| new |\n|---|\n").unwrap();
        assert_eq!(
            doc,
            "# B\n\nprose\n\n<!-- table a -->\n\n| new |\n|---|\n\n<!-- /table a -->\n\nmore \
             prose\n<!-- table b -->\n| y |\n<!-- /table b -->\n"
        );
        assert_eq!(get(&doc, "a"), Some("| new |\n|---|"));
        assert_eq!(get(&doc, "b"), Some("| y |"));
        // Again: the same file.
        assert_eq!(replace(&doc, "a", "| new |\n|---|").unwrap(), doc);
    }

    #[test]
    fn a_missing_table_is_an_error() {
        assert!(replace(DOC, "c", "x").is_err());
        assert!(replace("<!-- table a -->", "a", "x").is_err());
        assert_eq!(get(DOC, "ab"), None);
    }
}
