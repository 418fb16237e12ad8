//! A history as an SVG timeline: one lane per client (and one for the
//! emulator's restart), each call a bar from its invocation to its return,
//! labelled with what it asked and got; the calls a violation names are
//! red, and the violations are listed under the lanes.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::check::Verdict;
use crate::history::{History, Op};

/// Pixels per millisecond, and a lane's height.
const PX_PER_MS: f64 = 0.5;
const LANE: usize = 46;
const LEFT: usize = 90;

/// Pixel positions of a drawing a few thousand pixels wide: the casts
/// between counts, times and pixels lose nothing that shows.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
/// `history` as an SVG document, the calls of `verdict`'s violations
/// marked. Only the span around the violations is drawn (the whole
/// history when there is none), so a long run's timeline stays readable.
#[must_use]
pub fn svg(history: &History, verdict: &Verdict) -> String {
    let marked: BTreeSet<usize> = verdict
        .violations
        .iter()
        .flat_map(|v| v.calls.iter().copied())
        .collect();
    let calls = &history.calls;
    let (from, to) = if marked.is_empty() {
        let from = calls.iter().map(|c| c.invoked).min().unwrap_or(0);
        let to = calls.iter().map(|c| c.returned).max().unwrap_or(0);
        (from, to)
    } else {
        let from = marked.iter().map(|&i| calls[i].invoked).min().unwrap_or(0) - 2_000_000;
        let to = marked.iter().map(|&i| calls[i].returned).max().unwrap_or(0) + 2_000_000;
        (from, to)
    };
    let lanes = history.skews.len() + 1;
    let x = |t: i64| LEFT as f64 + ((t.clamp(from, to) - from) as f64 / 1_000.0) * PX_PER_MS;
    let width = x(to) as usize + 40;
    let listed = verdict.violations.len();
    let height = lanes * LANE + 40 + listed * 18;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="10">"#
    );
    let _ = writeln!(
        out,
        "<title>bigtable-ttl history: {}</title>",
        escape(&verdict.to_string())
    );
    for lane in 0..lanes {
        let y = lane * LANE + 20;
        let name = if lane < history.skews.len() {
            format!("client {lane} ({:+} ms)", history.skews[lane] / 1_000)
        } else {
            "emulator".to_owned()
        };
        let _ = writeln!(
            out,
            r#"<text x="4" y="{}">{}</text>"#,
            y + 16,
            escape(&name)
        );
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{}" x2="{width}" y2="{}" stroke="#ddd"/>"##,
            y + LANE - 4,
            y + LANE - 4
        );
    }
    // Seconds along the top.
    let mut tick = from - from.rem_euclid(1_000_000);
    while tick <= to {
        if tick >= from {
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="12" fill="#888">{} s</text>"##,
                x(tick),
                (tick - from) / 1_000_000
            );
        }
        tick += 1_000_000;
    }
    for (i, c) in calls.iter().enumerate() {
        if c.returned < from || c.invoked > to {
            continue;
        }
        let lane = if c.op == Op::Restart {
            history.skews.len()
        } else {
            c.client
        };
        let y = lane * LANE + 20 + (i % 3) * 8;
        let (x0, x1) = (x(c.invoked), x(c.returned).max(x(c.invoked) + 2.0));
        let fill = if marked.contains(&i) {
            "#e33"
        } else if c.failed() {
            "#fb3"
        } else {
            "#69c"
        };
        let label = format!("#{i} {:?} -> {:?}", c.op, c.outcome);
        let _ = writeln!(
            out,
            r#"<rect x="{x0:.1}" y="{y}" width="{:.1}" height="6" fill="{fill}"><title>{}</title></rect>"#,
            x1 - x0,
            escape(&label)
        );
        if marked.contains(&i) {
            let _ = writeln!(
                out,
                r##"<text x="{x0:.1}" y="{}" fill="#c00">{}</text>"##,
                y + 16,
                escape(&label)
            );
        }
    }
    for (n, v) in verdict.violations.iter().enumerate() {
        let _ = writeln!(
            out,
            r##"<text x="4" y="{}" fill="#c00">{}</text>"##,
            lanes * LANE + 34 + n * 18,
            escape(&v.what)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Call, Outcome};

    #[test]
    fn violating_calls_are_marked() {
        let acquire = |client, holder: &str, at: i64| Call {
            client,
            invoked: at,
            returned: at + 2_000,
            op: Op::Acquire {
                lease: 0,
                holder: holder.into(),
            },
            outcome: Outcome::Holds {
                expires: at + 150_000,
            },
        };
        let history = History {
            skews: vec![0, 0],
            horizon: 1_000_000,
            calls: vec![acquire(0, "a", 0), acquire(1, "b", 10_000)],
        };
        let verdict = crate::check(&history);
        assert!(!verdict.ok());
        let svg = svg(&history, &verdict);
        assert!(svg.starts_with("<svg"), "{svg}");
        assert_eq!(svg.matches(r##"fill="#e33""##).count(), 2, "{svg}");
        assert!(svg.contains("two holders at once"), "{svg}");
    }
}
