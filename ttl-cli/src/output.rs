//! What the commands print: instants and durations for people, progress
//! bars on standard error, cell values as text or hex, aligned tables, and
//! JSON written from `Serialize` report types.

use std::io::{IsTerminal as _, Write};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use ttl_runtime::admin::{describe_rule, gc_rule};
use ttl_runtime::ops::ScanProgress;
use ttl_runtime::Policy;

/// What a command returns: an exit status, or an error printed on standard
/// error with exit status 1.
pub(crate) type Fallible<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Write `report` as pretty JSON, one document.
pub(crate) fn print_json(out: &mut dyn Write, report: &impl Serialize) -> Fallible<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)?;
    Ok(())
}

/// A spinner on standard error while a scan runs: only on a terminal, never
/// with `--json`.
pub(crate) fn progress_bar(json: bool, what: &'static str) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(what);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Show how far a scan got.
pub(crate) fn tick(bar: &ProgressBar, p: ScanProgress) {
    bar.set_message(format!("{} rows, {} cells", p.rows, p.cells));
}

/// An instant as people read it: UTC to the millisecond.
pub(crate) fn instant(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A cell timestamp (µs) as an instant, when chrono can represent it.
pub(crate) fn instant_micros(micros: i64) -> Option<String> {
    DateTime::<Utc>::from_timestamp_micros(micros).map(instant)
}

/// A duration as people read it, to the second (`1day 23h 59m 58s`).
pub(crate) fn span(d: TimeDelta) -> String {
    match d.to_std() {
        Ok(d) => humantime::format_duration(Duration::from_secs(d.as_secs())).to_string(),
        Err(_) => "0s".to_owned(),
    }
}

/// The GC rule a policy sets, as `describe_rule` writes it.
pub(crate) fn rule_of(policy: Policy) -> String {
    describe_rule(&gc_rule(policy.gc_max_age()))
}

/// A cell value: quoted text when it is printable UTF-8, else `0x` and hex.
pub(crate) fn printable(value: &[u8]) -> String {
    match std::str::from_utf8(value) {
        Ok(s) if !s.chars().any(char::is_control) => format!("{s:?}"),
        _ => format!("0x{}", hex::encode(value)),
    }
}

/// `rows` under `header`, each column as wide as its widest cell, two spaces
/// apart; the last column is not padded.
pub(crate) fn print_table<const N: usize>(
    out: &mut dyn Write,
    header: [&str; N],
    rows: &[[String; N]],
) -> Fallible<()> {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; N]| {
        use std::fmt::Write as _;
        let mut s = String::new();
        for (k, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if k + 1 == N {
                s.push_str(cell);
            } else {
                let _ = write!(s, "{cell:<w$}  ");
            }
        }
        s
    };
    writeln!(out, "{}", line(header))?;
    for row in rows {
        writeln!(out, "{}", line(row.each_ref().map(String::as_str)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_text_or_hex() {
        assert_eq!(printable(b"/home"), "\"/home\"");
        assert_eq!(printable(&[0, 1, 0xff]), "0x0001ff");
    }

    #[test]
    fn tables_align_every_column_but_the_last() {
        let mut out = Vec::new();
        let rows = [["a".to_owned(), "long value".to_owned()]];
        print_table(&mut out, ["COLUMN", "VALUE"], &rows).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "COLUMN  VALUE\na       long value\n"
        );
    }
}
