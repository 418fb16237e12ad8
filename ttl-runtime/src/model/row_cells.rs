//! A row as a rewrite (`update`, `touch`, `set_ttl`, an increment's
//! recount) sees it: its newest visible cells, judged by
//! [the liveness rule](crate::liveness).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::model::cell::Cell;
use crate::model::liveness::{settle, verdict, Marker, Newest, Settled, Stored, Verdict};
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
    foreign_marker: bool,
    stranger_cells: bool,
    /// Columns (indexes of `Schema::columns`) holding a stored cell that
    /// is not visible: what settles a partial verdict.
    hidden: Vec<usize>,
}

impl<'a> RowCells<'a> {
    /// The row of `schema` stored as `cells`, at `now`.
    pub(crate) fn of(schema: &'a Schema, cells: &'a [Cell], now: DateTime<Utc>) -> Self {
        let visibility = schema.policy.visibility(now);
        let mut newest: BTreeMap<(&str, &[u8]), &Cell> = BTreeMap::new();
        let mut foreign_marker = false;
        let mut stranger_cells = false;
        let mut hidden = Vec::new();
        for cell in cells {
            let (family, qualifier) = (cell.family.as_str(), cell.qualifier.as_slice());
            if !visibility.is_visible(cell.timestamp_micros) {
                if let Some(i) = schema.column_index(family, qualifier) {
                    hidden.push(i);
                }
                continue;
            }
            let own = schema.column_index(family, qualifier).is_some()
                || schema.is_marker(family, qualifier)
                || schema.is_written_at(family, qualifier);
            if !own {
                if schema.is_foreign_marker(family, qualifier) {
                    foreign_marker = true;
                } else if !schema.owns_cell(family, qualifier) {
                    stranger_cells |= schema.families.contains(&family);
                }
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
            // The first of equal timestamps in qualifier order (the legacy
            // marker before the struct's), as the typed reader keeps it.
            .reduce(|kept, cell| {
                if cell.timestamp_micros > kept.timestamp_micros {
                    cell
                } else {
                    kept
                }
            });
        let parts = Newest {
            marker: marker.map(|m| Marker::read(m.timestamp_micros, &m.value, visibility)),
            written_at: schema
                .written_at
                .and_then(|s| ts(s.family, s.qualifier.as_bytes())),
            entry: None,
            foreign_marker,
        };
        let verdict = verdict(schema, parts, |i| {
            let c = &schema.columns[i];
            ts(c.family, c.qualifier.as_bytes())
        });
        Self {
            schema,
            newest,
            verdict,
            foreign_marker,
            stranger_cells,
            hidden,
        }
    }

    /// What a row judged [`Verdict::Partial`] is, by the readers' rule
    /// ([`settle`]): from the cells it was made of, all the row's stored
    /// cells when they were read unfiltered.
    pub(crate) fn settled(&self) -> Settled {
        settle(self.schema, |i| {
            let c = &self.schema.columns[i];
            if self.get(c.family, c.qualifier.as_bytes()).is_some() {
                Stored::Visible
            } else if self.hidden.contains(&i) {
                Stored::Expired
            } else {
                Stored::Nothing
            }
        })
    }

    /// Whether another struct's marker is visible in the row (see
    /// [`crate::liveness`]).
    pub(crate) fn foreign_marker(&self) -> bool {
        self.foreign_marker
    }

    /// Whether a visible cell of one of the struct's families is neither
    /// the struct's own ([`Schema::owns_cell`]) nor a row marker: a cell of
    /// another struct sharing the family, or of another program.
    pub(crate) fn stranger_cells(&self) -> bool {
        self.stranger_cells
    }

    /// Whether the row is another struct's that shares the struct's marker
    /// ([`Verdict::WrittenByAnotherStruct`]), which a rewrite reports and
    /// leaves alone.
    pub(crate) fn written_by_another_struct(&self) -> bool {
        self.verdict == Verdict::WrittenByAnotherStruct
    }

    /// Whether the struct's own marker is visible.
    pub(crate) fn marked(&self) -> bool {
        self.newest.keys().any(|(f, q)| self.schema.is_marker(f, q))
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
