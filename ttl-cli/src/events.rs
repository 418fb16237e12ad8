//! The rows that died, as JSON lines: what `expired --json` prints and
//! `reap --events` writes before the deletes.

use std::io::Write;

use bigtable_ttl_runtime::ops::{parse_duration, ExpiredCells};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::output::{instant, printable, Fallible};

/// One dead row: its stable event id (a consumer drops duplicates by it),
/// key (text and hex), death instant and last cells.
#[derive(Debug, Serialize)]
pub(crate) struct EventJson {
    pub(crate) event_id: String,
    pub(crate) row_key: String,
    pub(crate) row_key_hex: String,
    pub(crate) died_at: String,
    pub(crate) cells: Vec<CellJson>,
}

/// A cell the row held the millisecond before it died.
#[derive(Debug, Serialize)]
pub(crate) struct CellJson {
    family: String,
    qualifier: String,
    qualifier_hex: String,
    timestamp_micros: i64,
    /// Quoted text when printable UTF-8, else `0x` and hex.
    value: String,
}

impl From<&ExpiredCells> for EventJson {
    fn from(row: &ExpiredCells) -> Self {
        Self {
            event_id: row.event_id.clone(),
            row_key: String::from_utf8_lossy(&row.row_key).into_owned(),
            row_key_hex: hex::encode(&row.row_key),
            died_at: instant(row.died_at),
            cells: row
                .cells
                .iter()
                .map(|c| CellJson {
                    family: c.family.clone(),
                    qualifier: String::from_utf8_lossy(&c.qualifier).into_owned(),
                    qualifier_hex: hex::encode(&c.qualifier),
                    timestamp_micros: c.timestamp_micros,
                    value: printable(&c.value),
                })
                .collect(),
        }
    }
}

/// Write `rows` as JSON lines, one a row, and flush them.
pub(crate) fn write_lines(out: &mut dyn Write, rows: &[ExpiredCells]) -> Fallible<()> {
    for row in rows {
        serde_json::to_writer(&mut *out, &EventJson::from(row))?;
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
