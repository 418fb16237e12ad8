//! `BENCHMARKS.md` is written by hand but for its tables: each generated
//! table, with the line saying when and on what it was measured, stands
//! between `<!-- table NAME -->` and `<!-- /table NAME -->`, and
//! `ttl-bench report` replaces what is between the two, nothing else.

use std::fmt::Write as _;

/// Where the text of table `name` in `doc` starts and ends.
fn span(doc: &str, name: &str) -> Option<(usize, usize)> {
    let open = format!("<!-- table {name} -->");
    let start = doc.find(&open)? + open.len();
    let end = start + doc[start..].find(&format!("<!-- /table {name} -->"))?;
    Some((start, end))
}

/// The text of table `name` in `doc`.
#[must_use]
pub fn get<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    span(doc, name).map(|(start, end)| doc[start..end].trim())
}

/// `doc` with the text of table `name` replaced by `text`.
///
/// # Errors
/// `doc` has no such table (a renamed or deleted marker is an error, not a
/// table silently dropped).
pub fn replace(doc: &str, name: &str, text: &str) -> Result<String, String> {
    let (start, end) = span(doc, name).ok_or_else(|| {
        format!("no `<!-- table {name} -->` … `<!-- /table {name} -->` in the file")
    })?;
    let (before, after) = (&doc[..start], &doc[end..]);
    Ok(format!("{before}\n\n{}\n\n{after}", text.trim()))
}

/// One table from several runs of the same command: a cell that is the
/// same in every run once, a cell that differs as each run's figure, one a
/// line (`<br>`), run 1 first; so a target's **met** standing alone was met
/// in every run. The lines above the table (when, at what load) are kept
/// once where every run has the same, else each run's, numbered.
///
/// # Errors
/// The runs' tables differ in shape (rows or columns): runs of different
/// contenders or arguments, which cannot be set side by side.
pub fn merge_runs(runs: &[&str]) -> Result<String, String> {
    let split: Vec<_> = runs.iter().map(|text| above_and_table(text)).collect();
    let Some((first_above, first_table)) = split.first() else {
        return Ok(String::new());
    };
    if split
        .iter()
        .any(|(_, table)| table.len() != first_table.len())
    {
        return Err("the runs' tables differ in their number of rows".to_owned());
    }
    let mut out = format!("{} runs.", runs.len());
    for (line, text) in first_above.iter().enumerate() {
        if split.iter().all(|(above, _)| above.get(line) == Some(text)) {
            let _ = write!(out, " {text}");
        } else {
            for (run, (above, _)) in split.iter().enumerate() {
                let text = above.get(line).copied().unwrap_or("–");
                let _ = write!(out, " Run {}: {text}", run + 1);
            }
        }
    }
    out.push_str(
        " A cell that differs between the runs gives each run's figure, one a line, run 1 first.\n\n",
    );
    for (index, row) in first_table.iter().enumerate() {
        let rows: Vec<Vec<&str>> = split.iter().map(|(_, table)| cells(table[index])).collect();
        let shape = rows[0].len();
        if rows.iter().any(|r| r.len() != shape) {
            return Err(format!(
                "the runs' tables differ in shape at row {}: {row}",
                index + 1
            ));
        }
        let merged: Vec<String> = (0..shape)
            .map(|column| {
                let each: Vec<&str> = rows.iter().map(|r| r[column]).collect();
                if each.iter().all(|c| *c == each[0]) {
                    each[0].to_owned()
                } else {
                    each.join("<br>")
                }
            })
            .collect();
        let dashes = |c: &String| !c.is_empty() && c.chars().all(|c| c == '-' || c == ':');
        let _ = if merged.iter().all(dashes) {
            writeln!(out, "|{}|", merged.join("|"))
        } else {
            writeln!(out, "| {} |", merged.join(" | "))
        };
    }
    Ok(out)
}

/// The non-empty lines above a generated table, and the table's rows.
fn above_and_table(text: &str) -> (Vec<&str>, Vec<&str>) {
    let lines: Vec<&str> = text.trim().lines().collect();
    let table = lines.iter().position(|l| l.starts_with('|'));
    let (above, table) = lines.split_at(table.unwrap_or(lines.len()));
    let above = above.iter().copied().filter(|l| !l.is_empty()).collect();
    (above, table.to_vec())
}

/// A table row's cells, trimmed (Markdown has no `|` inside a cell).
fn cells(row: &str) -> Vec<&str> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    row.split('|').map(str::trim).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "prose\n<!-- table a -->\n\n| x |\n\n<!-- /table a -->\nmore \
                       prose\n<!-- table b -->\n| y |\n<!-- /table b -->\n";

    #[test]
    fn only_the_table_is_replaced() {
        let doc = replace(DOC, "a", "| new |\n").unwrap();
        assert_eq!(
            doc,
            "prose\n<!-- table a -->\n\n| new |\n\n<!-- /table a -->\nmore \
             prose\n<!-- table b -->\n| y |\n<!-- /table b -->\n"
        );
        assert_eq!(
            (get(&doc, "a"), get(&doc, "b")),
            (Some("| new |"), Some("| y |"))
        );
        assert_eq!(replace(&doc, "a", "| new |").unwrap(), doc);
        assert!(replace(DOC, "c", "x").is_err() && replace("<!-- table a -->", "a", "").is_err());
    }

    #[test]
    fn runs_merge_cell_by_cell() {
        let run = |load: &str, figure: &str, met: &str| {
            format!(
                "Run on 2026-11-29 (load {load}).\n\n| what | figure | target |\n|---|---|---|\n\
                 | write | {figure} | {met} |\n| scan | 1.5 µs | **met** |\n"
            )
        };
        let (one, two) = (
            run("1.0", "0.67 µs", "**met**"),
            run("2.1", "0.71 µs", "missed"),
        );
        assert_eq!(
            merge_runs(&[&one, &two]).unwrap(),
            "2 runs. Run 1: Run on 2026-11-29 (load 1.0). Run 2: Run on 2026-11-29 (load 2.1). \
             A cell that differs between the runs gives each run's figure, one a line, run 1 \
             first.\n\n| what | figure | target |\n|---|---|---|\n\
             | write | 0.67 µs<br>0.71 µs | **met**<br>missed |\n| scan | 1.5 µs | **met** |\n"
        );
        // The same line above the table in every run is said once.
        let same = merge_runs(&[&one, &one]).unwrap();
        assert!(same.starts_with("2 runs. Run on 2026-11-29 (load 1.0). A cell"));
    }

    #[test]
    fn runs_of_other_shapes_do_not_merge() {
        let two_rows = "| a | b |\n|---|---|\n| x | 1 |\n| y | 2 |\n";
        let one_row = "| a | b |\n|---|---|\n| x | 1 |\n";
        let other_columns = "| a | b | c |\n|---|---|---|\n| x | 1 | 2 |\n| y | 2 | 3 |\n";
        assert!(merge_runs(&[two_rows, one_row]).is_err());
        assert!(merge_runs(&[two_rows, other_columns]).is_err());
        assert!(merge_runs(&[two_rows, two_rows]).is_ok());
    }
}
