//! The Markdown side of `BENCHMARKS.md`: each generated table stands
//! between `<!-- table NAME -->` and `<!-- /table NAME -->`, and only what
//! is between the two is replaced. A table is drawn from data by
//! [`table`]: its columns, each a header and how a row's cell is drawn.

use std::fmt::Write as _;

/// A column: its header, and its cell drawn from a row.
pub(crate) type Column<'a, R> = (&'a str, &'a dyn Fn(&R) -> String);

/// The table of `rows`, a cell per column.
pub(crate) fn table<R>(columns: &[Column<R>], rows: impl IntoIterator<Item = R>) -> String {
    let header = line(columns.iter().map(|c| c.0));
    let rule = vec!["---"; columns.len()].join("|");
    let body: String = (rows.into_iter())
        .map(|r| line(columns.iter().map(|c| (c.1)(&r))))
        .collect();
    format!("{header}|{rule}|\n{body}")
}

/// A table row of `cells`.
pub(crate) fn line<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> String {
    let cells: Vec<S> = cells.into_iter().collect();
    let cells: Vec<&str> = cells.iter().map(AsRef::as_ref).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// Where the text of table `name` in `doc` starts and ends.
fn span(doc: &str, name: &str) -> Option<(usize, usize)> {
    let open = format!("<!-- table {name} -->");
    let start = doc.find(&open)? + open.len();
    let end = start + doc[start..].find(&format!("<!-- /table {name} -->"))?;
    Some((start, end))
}

/// The text of table `name` in `doc`.
pub(crate) fn get<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    span(doc, name).map(|(start, end)| doc[start..end].trim())
}

/// `doc` with the text of table `name` replaced by `text`; a renamed or
/// deleted marker is an error, not a table silently dropped.
pub(crate) fn replace(doc: &str, name: &str, text: &str) -> Result<String, String> {
    let (start, end) = span(doc, name).ok_or_else(|| {
        format!("no `<!-- table {name} -->` … `<!-- /table {name} -->` in the file")
    })?;
    let (before, after) = (&doc[..start], &doc[end..]);
    Ok(format!("{before}\n\n{}\n\n{after}", text.trim()))
}

/// One table from several runs of the same command: a cell the same in
/// every run once, a cell that differs as each run's figure, one a line
/// (`<br>`), run 1 first. The lines above the table are kept once where
/// every run has the same, else each run's, numbered. Tables of other
/// shapes (other contenders or arguments) are an error.
pub(crate) fn merge_runs(runs: &[&str]) -> Result<String, String> {
    let split: Vec<_> = runs.iter().map(|text| above_and_table(text)).collect();
    let Some((first_above, first_table)) = split.first() else {
        return Ok(String::new());
    };
    if split.iter().any(|(_, t)| t.len() != first_table.len()) {
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
            let at = index + 1;
            return Err(format!(
                "the runs' tables differ in shape at row {at}: {row}"
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
        if merged.iter().all(dashes) {
            let _ = writeln!(out, "|{}|", merged.join("|"));
        } else {
            out += &line(merged);
        }
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

    #[test]
    fn only_the_table_is_replaced() {
        let doc = "prose\n<!-- table a -->\n\n| x |\n\n<!-- /table a -->\nmore\n\
                   <!-- table b -->\n| y |\n<!-- /table b -->\n";
        let new = replace(doc, "a", "| new |\n").unwrap();
        assert_eq!(new, doc.replace("| x |", "| new |"));
        assert_eq!(
            (get(&new, "a"), get(&new, "b")),
            (Some("| new |"), Some("| y |"))
        );
        assert!(replace(doc, "c", "x").is_err() && replace("<!-- table a -->", "a", "").is_err());
    }

    #[test]
    fn a_table_is_drawn_from_its_columns() {
        let columns: [Column<(&str, f64)>; 2] = [
            ("what", &|r| format!("`{}`", r.0)),
            ("figure", &|r| format!("{:.1} µs", r.1)),
        ];
        let text = table(&columns, [("get", 1.25), ("put", 2.0)]);
        let want = "| what | figure |\n|---|---|\n| `get` | 1.2 µs |\n| `put` | 2.0 µs |\n";
        assert_eq!(text, want);
    }

    #[test]
    fn runs_merge_cell_by_cell() {
        let run = |load: &str, figure: &str, met: &str| {
            format!(
                "Run on d (load {load}).\n\n| what | figure | target |\n|---|---|---|\n\
                 | write | {figure} | {met} |\n| scan | 1.5 µs | **met** |\n"
            )
        };
        let (one, two) = (run("1.0", "0.67", "**met**"), run("2.1", "0.71", "missed"));
        assert_eq!(
            merge_runs(&[&one, &two]).unwrap(),
            "2 runs. Run 1: Run on d (load 1.0). Run 2: Run on d (load 2.1). A cell that differs \
             between the runs gives each run's figure, one a line, run 1 first.\n\n\
             | what | figure | target |\n|---|---|---|\n\
             | write | 0.67<br>0.71 | **met**<br>missed |\n| scan | 1.5 µs | **met** |\n"
        );
        let same = merge_runs(&[&one, &one]).unwrap();
        assert!(same.starts_with("2 runs. Run on d (load 1.0). A cell"));
        let other_shape = "| a | b |\n|---|---|\n| x | 1 |\n";
        assert!(merge_runs(&[&one, other_shape]).is_err());
    }
}
