//! One row's cells as files: what `inspect ROW --json` prints, and the
//! expiry feed's events (`expired --json`, `reap --events`), one JSON
//! line a dead row.

use serde::ser::SerializeStruct as _;
use serde::{Serialize, Serializer};

use super::{instant, lossy, printable, span};
use crate::model::cell::Cell;
use crate::model::gc_rule::describe_rule;
use crate::model::schema::{LEGACY_ROW_MARKER, ROW_MARKER_PREFIX};
use crate::ops::feed::ExpiredCells;
use crate::ops::inspect::{CellReport, FamilyPolicy, RowInspection};
use crate::ops::spec::policy_spec;

/// `inspect ROW --json`.
impl Serialize for RowInspection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut r = s.serialize_struct("RowInspection", 5)?;
        r.serialize_field("table", &self.table)?;
        r.serialize_field("row_key", &lossy(&self.row_key))?;
        r.serialize_field("now", &instant(self.now))?;
        r.serialize_field("families", &self.families)?;
        r.serialize_field("cells", &self.cells)?;
        r.end()
    }
}

/// The family's rule as `describe_rule` writes it, and the policy it is.
impl Serialize for FamilyPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut f = s.serialize_struct("FamilyPolicy", 2)?;
        f.serialize_field("gc_rule", &describe_rule(&self.rule))?;
        f.serialize_field("policy", &self.policy.as_ref().map(policy_spec))?;
        f.end()
    }
}

/// A cell with its instants as text and its value as text and hex; `marker`
/// says it is a row marker (`\0\0` and a struct's name, or the legacy `\0`).
impl Serialize for CellReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut c = s.serialize_struct("CellReport", 13)?;
        c.serialize_field("family", &self.family)?;
        c.serialize_field("qualifier", &lossy(&self.qualifier))?;
        c.serialize_field("value", &lossy(&self.value))?;
        c.serialize_field("value_hex", &hex::encode(&self.value))?;
        c.serialize_field("timestamp_micros", &self.timestamp_micros)?;
        let timestamp = chrono::DateTime::from_timestamp_micros(self.timestamp_micros).map(instant);
        c.serialize_field("timestamp", &timestamp)?;
        c.serialize_field("shadow", &self.is_shadow)?;
        let marker =
            self.qualifier == LEGACY_ROW_MARKER || self.qualifier.starts_with(ROW_MARKER_PREFIX);
        c.serialize_field("marker", &marker)?;
        c.serialize_field("alive", &self.alive)?;
        c.serialize_field("expires_at", &self.expires_at.map(instant))?;
        let time_left_ms = self.time_left.map(|d| d.num_milliseconds());
        c.serialize_field("time_left_ms", &time_left_ms)?;
        c.serialize_field("time_left", &self.time_left.map(span))?;
        c.serialize_field("written_at", &self.written_at.map(instant))?;
        c.end()
    }
}

/// One dead row: its stable event id (a consumer drops duplicates by it),
/// key (text and hex), death instant and last cells.
impl Serialize for ExpiredCells {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut e = s.serialize_struct("ExpiredCells", 5)?;
        e.serialize_field("event_id", &self.event_id)?;
        e.serialize_field("row_key", &lossy(&self.row_key))?;
        e.serialize_field("row_key_hex", &hex::encode(&self.row_key))?;
        e.serialize_field("died_at", &instant(self.died_at))?;
        let cells: Vec<EventCell<'_>> = self.cells.iter().map(EventCell).collect();
        e.serialize_field("cells", &cells)?;
        e.end()
    }
}

/// A cell the row held the millisecond before it died; its value quoted
/// when printable UTF-8, else `0x` and hex.
struct EventCell<'a>(&'a Cell);

impl Serialize for EventCell<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cell = self.0;
        let mut c = s.serialize_struct("Cell", 5)?;
        c.serialize_field("family", &cell.family)?;
        c.serialize_field("qualifier", &lossy(&cell.qualifier))?;
        c.serialize_field("qualifier_hex", &hex::encode(&cell.qualifier))?;
        c.serialize_field("timestamp_micros", &cell.timestamp_micros)?;
        c.serialize_field("value", &printable(&cell.value))?;
        c.end()
    }
}
