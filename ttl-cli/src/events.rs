//! The rows that died, as JSON lines: what `expired --json` prints and
//! `reap --events` writes before the deletes.

use std::io::Write;

use crate::output::Fallible;
use bigtable_ttl_runtime::ops::{parse_duration, ExpiredCells};
use chrono::{DateTime, Utc};

/// Write `rows` as JSON lines, one a row, and flush them.
pub(crate) fn write_lines(out: &mut dyn Write, rows: &[ExpiredCells]) -> Fallible<()> {
    for row in rows {
        serde_json::to_writer(&mut *out, row)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// An instant of the command line: RFC 3339 (`2026-11-28T06:00:00Z`), or a
/// duration before `now` (`1h` is an hour ago), or `now`.
pub(crate) fn parse_instant(text: &str, now: DateTime<Utc>) -> Fallible<DateTime<Utc>> {
    if text == "now" {
        return Ok(now);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    match parse_duration(text) {
        Ok(ago) => Ok(now - ago),
        Err(_) => Err(format!(
            "`{text}` is not an instant: give one in RFC 3339 (2026-11-28T06:00:00Z), `now`, \
             or a duration ago (90m, 1h, 2d)"
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_are_rfc3339_now_or_a_duration_ago() {
        let now = DateTime::parse_from_rfc3339("2026-11-28T06:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(parse_instant("now", now).unwrap(), now);
        assert_eq!(
            parse_instant("1h", now).unwrap(),
            now - chrono::TimeDelta::hours(1)
        );
        assert_eq!(
            parse_instant("2026-11-28T05:00:00+00:00", now).unwrap(),
            now - chrono::TimeDelta::hours(1)
        );
        let err = parse_instant("yesterday", now).unwrap_err().to_string();
        assert!(err.contains("RFC 3339"), "{err}");
    }
}
