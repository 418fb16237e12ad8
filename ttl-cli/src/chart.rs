//! When the cells expire, drawn: the buckets and the per-day bars of
//! [`ExpiryHistogram`]s as text on a terminal, as JSON, and as an SVG file
//! (plotters).

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use bigtable_ttl_runtime::ops::{policy_spec, ExpiryHistogram};
use bigtable_ttl_runtime::Policy;
use chrono::{NaiveDate, TimeDelta};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::output::{rule_of, Fallible};

/// One histogram to draw, with what it is.
pub(crate) struct Labeled<'a> {
    /// "live rule" or "proposed policy".
    pub(crate) what: &'static str,
    pub(crate) histogram: &'a ExpiryHistogram,
}

impl Labeled<'_> {
    /// `live rule: default=2d (max_age = 2d)`.
    fn title(&self) -> String {
        format!("{}: {}", self.what, rule_text(self.histogram.policy))
    }
}

/// A rule as people read it: `default=2d (max_age = 2d)`, or that nothing
/// expires.
fn rule_text(policy: Option<Policy>) -> String {
    match policy {
        Some(p) => format!("{} ({})", policy_spec(&p), rule_of(p)),
        None => "no age rule (nothing expires)".to_owned(),
    }
}

/// The days the per-day chart spans: from today through the longest
/// horizon of `charts` (at least today).
fn chart_days(charts: &[Labeled<'_>]) -> Vec<NaiveDate> {
    let horizon = charts
        .iter()
        .filter_map(|c| c.histogram.horizon())
        .max()
        .unwrap_or(TimeDelta::zero());
    let first = charts.iter().map(|c| c.histogram.now).min();
    match first {
        Some(now) => ExpiryHistogram::new(None, now)
            .daily(horizon)
            .into_iter()
            .map(|(d, _)| d)
            .collect(),
        None => Vec::new(),
    }
}

/// Cells of `h` expiring on each of `days`.
fn counts_on(h: &ExpiryHistogram, days: &[NaiveDate]) -> Vec<u64> {
    days.iter()
        .map(|d| h.days.get(d).copied().unwrap_or(0))
        .collect()
}

/// Columns of the longest bar on a terminal.
const BAR_COLUMNS: usize = 40;
/// More days than this are shown a week to a line on a terminal.
const MAX_DAY_LINES: usize = 31;

/// A bar of `value` out of `max` in `BAR_COLUMNS` columns, to an eighth of
/// a column; a value above zero shows at least a sliver.
fn bar(value: u64, max: u64) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    if value == 0 || max == 0 {
        return String::new();
    }
    let eighths = (u128::from(value) * (BAR_COLUMNS as u128) * 8 / u128::from(max)).max(1);
    let eighths = usize::try_from(eighths).unwrap_or(BAR_COLUMNS * 8);
    let mut s = "█".repeat(eighths / 8);
    if eighths % 8 > 0 {
        s.push(EIGHTHS[eighths % 8]);
    }
    s
}

/// The histograms as text: a table of buckets, one column per rule, then
/// each rule's cells per day over its horizon as horizontal bars (runs of
/// days without cells on one line; a week to a line over long horizons).
pub(crate) fn print_text(out: &mut dyn Write, charts: &[Labeled<'_>]) -> Fallible<()> {
    let Some(first) = charts.first() else {
        return Ok(());
    };
    writeln!(
        out,
        "when the cells expire (from {}):",
        crate::output::instant(first.histogram.now)
    )?;
    let mut header = format!("  {:<18}", "");
    for c in charts {
        let name = format!("{}: {}", c.what, policy_or_none(c.histogram.policy));
        let _ = write!(header, "  {:>28}", truncate(&name, 28));
    }
    writeln!(out, "{}", header.trim_end())?;
    for (i, (name, _)) in first.histogram.buckets().iter().enumerate() {
        let mut line = format!("  {name:<18}");
        for c in charts {
            let _ = write!(line, "  {:>28}", c.histogram.buckets()[i].1);
        }
        writeln!(out, "{line}")?;
    }
    for c in charts {
        let Some(horizon) = c.histogram.horizon() else {
            continue;
        };
        let (days, counts): (Vec<NaiveDate>, Vec<u64>) =
            c.histogram.daily(horizon).into_iter().unzip();
        writeln!(out, "cells expiring per day (UTC), {}:", c.title())?;
        let lines: Vec<(String, u64)> = if days.len() > MAX_DAY_LINES {
            days.chunks(7)
                .zip(counts.chunks(7))
                .map(|(d, n)| {
                    let week = n.iter().fold(0u64, |sum, n| sum.saturating_add(*n));
                    (span_label(d[0], d[d.len() - 1]), week)
                })
                .collect()
        } else {
            collapse_empty(&days, &counts)
        };
        let max = lines.iter().map(|(_, n)| *n).max().unwrap_or(0);
        if max == 0 {
            writeln!(out, "  none ahead")?;
            continue;
        }
        for (label, n) in &lines {
            writeln!(out, "  {label:<12}  {:<BAR_COLUMNS$} {n}", bar(*n, max))?;
        }
    }
    Ok(())
}

/// `11-24..11-30`.
fn span_label(first: NaiveDate, last: NaiveDate) -> String {
    format!("{}..{}", first.format("%m-%d"), last.format("%m-%d"))
}

/// A line per day, runs of three or more days without cells as one line.
fn collapse_empty(days: &[NaiveDate], counts: &[u64]) -> Vec<(String, u64)> {
    let mut lines = Vec::new();
    let mut i = 0;
    while i < days.len() {
        let run = counts[i..].iter().take_while(|n| **n == 0).count();
        if run >= 3 {
            lines.push((span_label(days[i], days[i + run - 1]), 0));
            i += run;
        } else {
            lines.push((days[i].format("%Y-%m-%d").to_string(), counts[i]));
            i += 1;
        }
    }
    lines
}

fn policy_or_none(policy: Option<Policy>) -> String {
    policy.map_or_else(|| "no age rule".to_owned(), |p| policy_spec(&p))
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

/// The bucket names on the SVG's x axis.
const BUCKET_LABELS: [&str; 6] = [
    "expired",
    "≤ 1 hour",
    "≤ 1 day",
    "≤ 1 week",
    "later",
    "never",
];

/// Write the histograms as an SVG file: one row per rule, its buckets on
/// the left, its cells per day on the right, the days the same for every
/// row so they compare at a glance.
pub(crate) fn write_svg(path: &Path, title: &str, charts: &[Labeled<'_>]) -> Fallible<()> {
    let rows = u32::try_from(charts.len().max(1))?;
    let size = (1200, 80 + 330 * rows);
    let root = SVGBackend::new(path, size).into_drawing_area();
    draw(&root, title, charts).map_err(|e| format!("drawing {}: {e}", path.display()))?;
    root.present()
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(())
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    charts: &[Labeled<'_>],
) -> DrawResult {
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 24).into_font())?;
    let days = chart_days(charts);
    let rows = root.split_evenly((charts.len().max(1), 1));
    let colors = [RGBColor(70, 110, 170), RGBColor(200, 110, 40)];
    for (k, (c, area)) in charts.iter().zip(&rows).enumerate() {
        let color = colors[k % colors.len()];
        let (left, right) = area.split_horizontally(470);
        let buckets: Vec<u64> = c.histogram.buckets().iter().map(|(_, n)| *n).collect();
        bars(
            &left,
            &c.title(),
            &BUCKET_LABELS
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>(),
            &buckets,
            color,
            "cells",
        )?;
        let counts = counts_on(c.histogram, &days);
        let labels: Vec<String> = days.iter().map(|d| d.format("%m-%d").to_string()).collect();
        let caption = if c.histogram.policy.is_none() {
            format!(
                "cells expiring per day (UTC), {}: none, no age rule",
                c.what
            )
        } else if counts.iter().all(|n| *n == 0) {
            format!("cells expiring per day (UTC), {}: none ahead", c.what)
        } else {
            format!("cells expiring per day (UTC), {}", c.what)
        };
        bars(&right, &caption, &labels, &counts, color, "cells")?;
    }
    Ok(())
}

/// One bar chart: `values` over the categories `labels`, each bar with its
/// count on top.
fn bars(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    labels: &[String],
    values: &[u64],
    color: RGBColor,
    y_desc: &str,
) -> DrawResult {
    let n = u32::try_from(labels.len().max(1))?;
    // An eighth above the tallest bar, for its count; at u64::MAX (a
    // crafted report's) the axis ends there.
    let tallest = values.iter().copied().max().unwrap_or(0).max(1);
    let top = tallest.saturating_add(tallest / 8).saturating_add(1);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 17).into_font())
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d((0..n).into_segmented(), 0u64..top)?;
    // At most about 12 labels under the bars, so that dates do not overlap.
    let step = labels.len().div_ceil(12).max(1);
    let formatter = |v: &SegmentValue<u32>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            let i = *i as usize;
            if i.is_multiple_of(step) {
                labels.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
        SegmentValue::Last => String::new(),
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(labels.len() + 1)
        .x_label_formatter(&formatter)
        .y_desc(y_desc)
        .y_labels(6)
        .label_style(("sans-serif", 13))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()?;
    chart.draw_series(
        Histogram::vertical(&chart)
            .style(color.filled())
            .margin(if labels.len() > 40 { 1 } else { 6 })
            .data((0u32..).zip(values.iter().copied())),
    )?;
    // The counts above the bars, where there is room for them.
    if labels.len() <= 40 {
        chart.draw_series((0u32..).zip(values).filter(|(_, v)| **v > 0).map(|(i, v)| {
            Text::new(
                v.to_string(),
                (SegmentValue::CenterOf(i), *v),
                TextStyle::from(("sans-serif", 12).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            )
        }))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    #[test]
    fn bars_are_scaled_to_eighths_of_a_column() {
        assert_eq!(bar(0, 10), "");
        assert_eq!(bar(10, 10).chars().count(), BAR_COLUMNS);
        assert_eq!(bar(5, 10), "█".repeat(BAR_COLUMNS / 2));
        assert_eq!(bar(1, 1_000_000), "▏");
    }

    /// Counts as large as a u64 holds draw without overflow.
    #[test]
    fn the_largest_counts_draw_as_text_and_svg() {
        let now = DateTime::<Utc>::from_timestamp_millis(1_700_000_000_000).unwrap();
        let mut h = ExpiryHistogram::new(Some(Policy::default_ttl(TimeDelta::days(60))), now);
        h.within_week = u64::MAX;
        for day in 1..60 {
            h.days
                .insert((now + TimeDelta::days(day)).date_naive(), u64::MAX);
        }
        let charts = [Labeled {
            what: "proposed policy",
            histogram: &h,
        }];
        let mut out = Vec::new();
        print_text(&mut out, &charts).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains(&u64::MAX.to_string()));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        write_svg(&path, "title", &charts).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("<svg"));
    }
}
