//! A row as a rewrite (`update`, `touch`, `set_ttl`, an increment's
//! recount) sees it: its newest visible cells, judged by
//! [the liveness rule](crate::liveness).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::model::cell::Cell;
use crate::model::liveness::{marker_row_ts, verdict, Marker, Newest, Verdict};
use crate::model::schema::Schema;

/// A row as a rewrite (`update`, `touch`, `set_ttl`, an increment's
/// reset, …) sees it: the newest visible cell of each of its declared
/// columns, its row marker and its shadow column, from its cells as stored
/// (anything else, expired or not visible at `now`, left out), and the
/// verdict of the rule on them.
///
/// Map entries are left out: rewrites leave them as they are (each keeps
/// its own expiry), so a row made of entries alone has nothing a rewrite
/// could change, and is not live to it.
#[derive(Debug)]
pub(crate) struct RowCells<'a> {
    schema: &'a Schema,
    /// By `(family, qualifier)`.
    pub(crate) newest: BTreeMap<(&'a str, &'a [u8]), &'a Cell>,
    verdict: Verdict,
}

impl<'a> RowCells<'a> {
    /// The row of `schema` stored as `cells`, at `now`.
    pub(crate) fn of(schema: &'a Schema, cells: &'a [Cell], now: DateTime<Utc>) -> Self {
        let visibility = schema.policy.visibility(now);
        let mut newest: BTreeMap<(&str, &[u8]), &Cell> = BTreeMap::new();
        for cell in cells {
            let (family, qualifier) = (cell.family.as_str(), cell.qualifier.as_slice());
            let own = schema.column_index(family, qualifier).is_some()
                || schema.is_marker(family, qualifier)
                || schema.is_written_at(family, qualifier);
            if !own || !visibility.is_visible(cell.timestamp_micros) {
                continue;
            }
            let slot = newest.entry((family, qualifier)).or_insert(cell);
            if slot.timestamp_micros < cell.timestamp_micros {
                *slot = cell;
            }
        }
        let ts = |family: &str, qualifier: &[u8]| {
            newest.get(&(family, qualifier)).map(|c| c.timestamp_micros)
        };
        let marker = newest
            .iter()
            .filter(|((family, qualifier), _)| schema.is_marker(family, qualifier))
            .map(|(_, cell)| *cell)
            .max_by_key(|cell| cell.timestamp_micros);
        let parts = Newest {
            marker: marker.map(|m| Marker {
                ts: m.timestamp_micros,
                row_expired: !visibility.is_visible(marker_row_ts(m.timestamp_micros, &m.value)),
            }),
            written_at: schema
                .written_at
                .and_then(|s| ts(s.family, s.qualifier.as_bytes())),
            entry: None,
        };
        let verdict = verdict(schema, parts, |i| {
            let c = &schema.columns[i];
            ts(c.family, c.qualifier.as_bytes())
        });
        Self {
            schema,
            newest,
            verdict,
        }
    }

    /// The verdict of the rule.
    pub(crate) fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// The newest visible cell of `(family, qualifier)`.
    pub(crate) fn get(&self, family: &str, qualifier: &[u8]) -> Option<&'a Cell> {
        self.newest.get(&(family, qualifier)).copied()
    }

    /// The schema.
    pub(crate) fn schema(&self) -> &'a Schema {
        self.schema
    }
}
