//! What the commands print: instants and durations for people, progress
//! bars on standard error, cell values as text or hex, aligned tables, and
//! JSON written from `Serialize` report types.

use std::io::{IsTerminal as _, Write};
use std::time::{Duration, Instant};

use bigtable_ttl_runtime::admin::{describe_rule, gc_rule};
use bigtable_ttl_runtime::data::KeySample;
use bigtable_ttl_runtime::ops::{fraction_done, Part, ScanProgress};
use bigtable_ttl_runtime::Policy;
use chrono::{DateTime, TimeDelta, Utc};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

/// What a command returns: an exit status, or an error printed on standard
/// error with exit status 1.
pub(crate) type Fallible<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Write `report` as pretty JSON, one document.
pub(crate) fn print_json(out: &mut dyn Write, report: &impl Serialize) -> Fallible<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)?;
    Ok(())
}

/// Whether to show progress: on a terminal, never with `--json`.
pub(crate) fn shows_progress(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// A spinner on standard error while a scan runs: only on a terminal, never
/// with `--json`.
pub(crate) fn progress_bar(json: bool, what: &'static str) -> ProgressBar {
    if !shows_progress(json) {
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
pub(crate) fn tick(bar: &ProgressBar, p: &ScanProgress) {
    bar.set_message(format!("{} rows, {} cells", p.rows, p.cells));
}

/// Steps of the progress bar of a part (per mille of its bytes).
const PROGRESS_STEPS: u64 = 1_000;

/// Progress of one part of a long scan on standard error: how far into the
/// part (from `SampleRowKeys`' byte offsets), rows per second and the time
/// left. Only on a terminal, never with `--json` (hidden otherwise).
pub(crate) struct PartProgress {
    bar: ProgressBar,
    samples: Vec<KeySample>,
    part: Part,
    started: Instant,
}

impl PartProgress {
    /// Progress of `what` (`auditing`, `migrating`) over `part`, measured
    /// against `samples` (empty: rows only, no time left).
    pub(crate) fn new(json: bool, what: &str, part: &Part, samples: Vec<KeySample>) -> Self {
        let bar = if shows_progress(json) {
            let bar = ProgressBar::new(PROGRESS_STEPS);
            // Without samples there is no telling how far into the part a
            // row is: rows and rows/s only, no made-up time left.
            let template = if samples.is_empty() {
                "{spinner} {prefix}: {msg} [{elapsed}]"
            } else {
                "{prefix} [{bar:30}] {percent:>3}% {msg}, {eta} left [{elapsed}]"
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        } else {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
        };
        let shard = if part.is_whole() {
            String::new()
        } else {
            format!(" shard {}", part.label())
        };
        bar.set_prefix(format!("{what}{shard}"));
        Self {
            bar,
            samples,
            part: part.clone(),
            started: Instant::now(),
        }
    }

    /// `rows` and `cells` done so far, up to row `last_key`.
    pub(crate) fn update(&self, rows: u64, cells: u64, last_key: Option<&[u8]>) {
        let fraction = last_key.and_then(|k| fraction_done(&self.samples, &self.part, k));
        if let Some(f) = fraction {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            self.bar.set_position((f * PROGRESS_STEPS as f64) as u64);
        }
        self.bar
            .set_message(progress_message(rows, cells, self.started.elapsed()));
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// `12000 rows, 24000 cells, 8000 rows/s`.
fn progress_message(rows: u64, cells: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { rows as f64 / secs } else { 0.0 };
    format!("{rows} rows, {cells} cells, {rate:.0} rows/s")
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
    fn progress_says_rows_per_second() {
        assert_eq!(
            progress_message(12_000, 24_000, Duration::from_millis(1_500)),
            "12000 rows, 24000 cells, 8000 rows/s"
        );
    }

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
