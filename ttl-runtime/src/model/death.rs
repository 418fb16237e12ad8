//! When a row died, and what of it may be deleted: [the liveness
//! rule](crate::liveness) walked back over a row's stored cells, for the
//! expiry feed and the reaper (`ops::feed`, `ops::reap`). Pure.
//!
//! # When a row died
//!
//! A row's verdict changes only when one of its cells stops being visible
//! (its expiry), or when a marker's carried row timestamp expires. Its
//! **death** is the last such instant, at or before now, where it was live
//! the millisecond before and is not live from then on, while it is not
//! live now. Every instant is a whole millisecond, and computed from what
//! is stored alone, so two readers of the same cells agree on it: windows
//! that tile time yield each death once.
//!
//! A struct ([`Judge::Struct`]) decides by its own rule. A family judged
//! without a struct ([`Judge::Family`], the command line's) decides by its
//! markers and its cells' expiries alone: a row carrying row markers (any
//! qualifier starting with two NUL bytes) dies when the latest row expiry
//! they carry passes; a row without one, when its last cell of the family
//! expires. The two agree on rows this library writes whole.
//!
//! # What may be deleted
//!
//! At `now` with a `grace`, the cut-off is the smallest timestamp still
//! visible at `now - grace`: a cell below it had expired then, and stays
//! expired whatever is written afterwards (no write can make a cell whose
//! expiry has passed), so a `DeleteFromColumn` whose time range ends at the
//! cut-off removes nothing a reader can see, now or later, whatever races
//! it. [`plan`] says, for one row:
//!
//! * [`Plan::Whole`]: every cell the judge owns has expired: delete them
//!   all by time range (the row, if it died, is gone for every reader);
//! * [`Plan::Cells`]: the row is live (or, for a family, carries a live
//!   marker), some of its cells expired: delete those by time range;
//! * [`Plan::Conditional`]: the row of a struct died while some of its
//!   cells are still visible (a required field with a shorter TTL of its
//!   own, map entries outliving the row, a row another writer wrote column
//!   by column): delete everything the struct owns, on condition that the
//!   row is still as read;
//! * [`Plan::Keep`]: nothing to delete, and why.

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::cell::Cell;
use crate::model::entry::{EntryEncoder, PendingEntry};
use crate::model::filter::{chain, filter, one_column, only_family};
use crate::model::liveness::{marker_row_ts, verdict, Marker, Newest, Verdict};
use crate::model::policy::{from_micros, Policy, MICROS_PER_MILLI};
use crate::model::proto::{
    column_range::{EndQualifier, StartQualifier},
    row_filter::{Condition, Filter, Interleave},
    value_range::{EndValue, StartValue},
    ColumnRange, RowFilter, TimestampRange, ValueRange,
};
use crate::model::schema::{Schema, CUT_FINGERPRINT_TAG, ROW_MARKER_PREFIX};
use crate::model::writer::written_by_another_struct;

/// Who decides whether a row lives, and which of its cells are its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Judge {
    /// A derived struct, by [the liveness rule](crate::liveness): its own
    /// cells only ([`Schema::owns_cell`]).
    Struct(&'static Schema),
    /// One family, without a struct: every cell of it, under `policy`.
    Family {
        /// The family.
        family: String,
        /// Its TTL policy.
        policy: Policy,
    },
}

/// Why a row keeps every cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Nothing of it is the judge's.
    Nothing,
    /// Live, and nothing of it expired long enough ago.
    Live,
    /// Incomplete: a required column holds no cell and nothing shows it
    /// expired (see [`crate::liveness`]): left for a person to look at.
    Incomplete,
    /// Another struct's row, or cells of the struct's that never made a
    /// row of it: not the struct's to judge.
    Other,
    /// Died less than the grace period ago.
    TooRecent,
    /// A family's row with cells still visible and no live marker: only
    /// a struct can tell which of its expired cells may go.
    Unsure,
}

/// A column of a row as read, `(family, qualifier)`, borrowed from its
/// cells.
pub(crate) type ColumnRef<'c> = (&'c str, &'c [u8]);

/// What to do with one row (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan<'c> {
    /// Keep every cell.
    Keep(Keep),
    /// Every cell of the judge's expired before `before`: delete them by
    /// time range. `died_at`: when the row died, if it was ever live.
    Whole {
        /// When the row died.
        died_at: Option<DateTime<Utc>>,
        /// Its columns.
        columns: Vec<ColumnRef<'c>>,
        /// The cut-off (exclusive end of the time ranges).
        before: i64,
        /// Cells deleted.
        cells: u64,
    },
    /// A live row's cells that expired before `before`, by time range.
    Cells {
        /// The columns holding them.
        columns: Vec<ColumnRef<'c>>,
        /// The cut-off.
        before: i64,
        /// Cells deleted.
        cells: u64,
    },
    /// A struct's row that died while some of its cells are still visible:
    /// delete all the struct owns, on condition that it is still as read.
    Conditional {
        /// When it died.
        died_at: DateTime<Utc>,
    },
}

impl Plan<'_> {
    /// When the row died, for the plans that delete a dead row.
    pub(crate) fn died_at(&self) -> Option<DateTime<Utc>> {
        match self {
            Plan::Whole { died_at, .. } => *died_at,
            Plan::Conditional { died_at } => Some(*died_at),
            Plan::Keep(_) | Plan::Cells { .. } => None,
        }
    }
}

/// The smallest timestamp still visible at `now - grace` under `policy`:
/// cells below it had expired by then.
#[must_use]
pub(crate) fn cutoff(policy: Policy, now: DateTime<Utc>, grace: TimeDelta) -> i64 {
    policy.visible_from(now - grace)
}

/// `t` rounded up to the millisecond: death instants are whole
/// milliseconds, so `from <= d` iff `ceil(from) <= d`.
#[must_use]
pub(crate) fn ceil_millis(t: DateTime<Utc>) -> i64 {
    let micros = t.timestamp_micros();
    let rem = micros.rem_euclid(MICROS_PER_MILLI);
    if rem == 0 {
        micros
    } else {
        micros.saturating_add(MICROS_PER_MILLI - rem)
    }
}

impl Judge {
    /// The policy cells are judged by.
    pub(crate) fn policy(&self) -> Policy {
        match self {
            Judge::Struct(schema) => schema.policy,
            Judge::Family { policy, .. } => *policy,
        }
    }

    /// The families read.
    pub(crate) fn families(&self) -> Vec<&str> {
        match self {
            Judge::Struct(schema) => schema.families.to_vec(),
            Judge::Family { family, .. } => vec![family.as_str()],
        }
    }

    /// Whether `cell` is the judge's: what it may delete.
    pub(crate) fn owns(&self, cell: &Cell) -> bool {
        match self {
            Judge::Struct(schema) => schema.owns_cell(&cell.family, &cell.qualifier),
            Judge::Family { family, .. } => cell.family == *family,
        }
    }

    /// When the row stored as `cells` died (see the module doc): `None`
    /// when it is live at `now`, or never was.
    pub(crate) fn died_at(&self, cells: &[Cell], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Judge::Struct(schema) => struct_died_at(schema, cells, now),
            Judge::Family { family, policy } => {
                let expiry = family_expiry(*policy, family, cells)?;
                (expiry <= now.timestamp_micros())
                    .then(|| from_micros(expiry).ok())
                    .flatten()
            }
        }
    }

    /// What may be deleted of the row stored as `cells` (every version of
    /// the judge's families, expired or not) at `now`, keeping whatever
    /// expired less than `grace` ago.
    pub(crate) fn plan<'c>(
        &self,
        cells: &'c [Cell],
        now: DateTime<Utc>,
        grace: TimeDelta,
    ) -> Plan<'c> {
        let policy = self.policy();
        let before = cutoff(policy, now, grace);
        // Sized once (a collect through `filter` grows cell by cell).
        let mut owned: Vec<&Cell> = Vec::with_capacity(cells.len());
        owned.extend(cells.iter().filter(|c| self.owns(c)));
        if owned.is_empty() {
            return Plan::Keep(Keep::Nothing);
        }
        if let Judge::Struct(schema) = self {
            if marked_by_another_struct(schema, cells, now) {
                // Its marker is the struct's by name only: that struct's
                // reaper and feed judge the row, live or dead.
                return Plan::Keep(Keep::Other);
            }
        }
        let mut expired: Vec<&Cell> = Vec::with_capacity(owned.len());
        expired.extend(
            owned
                .iter()
                .copied()
                .filter(|c| c.timestamp_micros < before),
        );
        if expired.len() == owned.len() {
            // Nothing of it is visible at `now - grace`, nor can become so.
            return Plan::Whole {
                died_at: self.died_at(cells, now),
                columns: columns_of(&owned),
                before,
                cells: owned.len() as u64,
            };
        }
        let cells_plan = |expired: &[&'c Cell]| -> Plan<'c> {
            if expired.is_empty() {
                Plan::Keep(Keep::Live)
            } else {
                Plan::Cells {
                    columns: columns_of(expired),
                    before,
                    cells: expired.len() as u64,
                }
            }
        };
        match self {
            Judge::Struct(schema) => match struct_verdict(schema, cells, now) {
                Verdict::Live { .. } => cells_plan(&expired),
                // Another struct's row: its reaper and feed judge it (one
                // with a visible marker is kept above already).
                Verdict::WrittenByAnotherStruct => Plan::Keep(Keep::Other),
                verdict => {
                    if its_row_is_another_structs(schema, cells, now) {
                        return Plan::Keep(Keep::Other);
                    }
                    match struct_died_at(schema, cells, now) {
                        Some(died_at) if died_at <= now - grace => Plan::Conditional { died_at },
                        Some(_) => Plan::Keep(Keep::TooRecent),
                        None if matches!(verdict, Verdict::Partial { .. }) => {
                            Plan::Keep(Keep::Incomplete)
                        }
                        None => Plan::Keep(Keep::Other),
                    }
                }
            },
            Judge::Family { .. } => {
                let visibility = policy.visibility(now);
                let live_marker = owned.iter().any(|c| {
                    c.qualifier.starts_with(ROW_MARKER_PREFIX)
                        && visibility.is_visible(c.timestamp_micros)
                });
                if live_marker {
                    // A row of this library's: its marker, not its expired
                    // cells, proves when it expires.
                    return cells_plan(&expired);
                }
                // Older versions under a visible newest one prove nothing.
                let older: Vec<&Cell> = expired
                    .iter()
                    .copied()
                    .filter(|c| {
                        owned.iter().any(|o| {
                            o.qualifier == c.qualifier && visibility.is_visible(o.timestamp_micros)
                        })
                    })
                    .collect();
                match cells_plan(&older) {
                    Plan::Keep(_) => Plan::Keep(Keep::Unsure),
                    plan => plan,
                }
            }
        }
    }

    /// The newest cell of each column visible just before `died_at`: what
    /// the row held when it died, for a family judged without a struct.
    pub(crate) fn last_cells(&self, cells: &[Cell], died_at: DateTime<Utc>) -> Vec<Cell> {
        let visibility = self
            .policy()
            .visibility(died_at - TimeDelta::milliseconds(1));
        let mut newest: Vec<&Cell> = Vec::new();
        for cell in cells
            .iter()
            .filter(|c| self.owns(c) && visibility.is_visible(c.timestamp_micros))
        {
            match newest
                .iter_mut()
                .find(|n| n.family == cell.family && n.qualifier == cell.qualifier)
            {
                Some(kept) if kept.timestamp_micros < cell.timestamp_micros => *kept = cell,
                Some(_) => {}
                None => newest.push(cell),
            }
        }
        newest.into_iter().cloned().collect()
    }
}

impl Judge {
    /// The read filter of the feed and the reaper: every cell (every
    /// version) of the judge's families, of the rows holding a cell of them
    /// whose timestamp is in `[lo, hi)` (`hi` `None`: unbounded) or a row
    /// marker carrying a row timestamp in it; other rows are not sent at
    /// all, so what is read grows with the cells in the range, not with
    /// the table.
    pub(crate) fn rows_touching(&self, lo: i64, hi: Option<i64>) -> RowFilter {
        let families = or(self.families().into_iter().map(only_family).collect());
        let stamped = chain(vec![
            families.clone(),
            filter(Filter::TimestampRangeFilter(TimestampRange {
                start_timestamp_micros: lo,
                end_timestamp_micros: hi.unwrap_or(0),
            })),
        ]);
        let markers = match self {
            Judge::Struct(schema) => one_column(schema.marker_family(), schema.marker),
            Judge::Family { family, .. } => filter(Filter::ColumnRangeFilter(ColumnRange {
                family_name: family.clone(),
                start_qualifier: Some(StartQualifier::StartQualifierClosed(
                    ROW_MARKER_PREFIX.to_vec(),
                )),
                end_qualifier: Some(EndQualifier::EndQualifierOpen(vec![0, 1])),
            })),
        };
        // A marker's value is its row timestamp, 8 bytes big-endian, which
        // order as the numbers do for the non-negative timestamps Bigtable
        // takes (an empty value or a fingerprint carries the marker's own,
        // in `stamped`).
        let carried = chain(vec![
            markers,
            filter(Filter::ValueRangeFilter(ValueRange {
                start_value: Some(StartValue::StartValueClosed(
                    lo.max(0).to_be_bytes().to_vec(),
                )),
                // Below every fingerprint, which carries no timestamp.
                end_value: Some(EndValue::EndValueOpen(hi.map_or_else(
                    || vec![CUT_FINGERPRINT_TAG],
                    |hi| hi.max(0).to_be_bytes().to_vec(),
                ))),
            })),
        ]);
        filter(Filter::Condition(Box::new(Condition {
            predicate_filter: Some(Box::new(or(vec![stamped, carried]))),
            true_filter: Some(Box::new(families)),
            false_filter: None,
        })))
    }

    /// The timestamps of the cells that expire in `[from, to)` (death
    /// instants are their expiries): `[lo, hi)`, `None` when none can.
    pub(crate) fn timestamps_expiring(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Option<(i64, i64)> {
        let lifetime = self.policy().expiry_micros(0).ok()?;
        let lo = ceil_millis(from).saturating_sub(lifetime).max(0);
        let hi = ceil_millis(to).saturating_sub(lifetime);
        (hi > lo).then_some((lo, hi))
    }
}

/// Row `key`'s `DeleteFromColumn` of each of `columns`, of the cells
/// whose timestamp is below `before` only (the cells that had expired at
/// the cut-off, never one written since or still visible), written at the
/// end of `out` as one entry of a `MutateRowsRequest`: no `Mutation` value
/// is built, kept or freed.
pub(crate) fn encode_range_deletes(
    out: &mut Vec<u8>,
    key: &[u8],
    columns: &[ColumnRef<'_>],
    before: i64,
) {
    let mut entry = PendingEntry::begin(out, key);
    let mut unused = Vec::new();
    let mut encoder = EntryEncoder {
        out,
        staged: &mut unused,
        entry: &mut entry,
    };
    for (family, qualifier) in columns {
        encoder.delete_column_in(family, qualifier, Some((0, before)));
    }
    entry.finish(out);
}

/// The stable id of the death of row `key` of `table` at `died_at`: 32 hex
/// digits, FNV-1a (128 bits) of the table, a NUL, the key, a NUL and the
/// instant's microseconds (8 bytes big-endian). The same death has the same
/// id in every run, on every machine, so a consumer drops duplicates by it.
#[must_use]
pub(crate) fn event_id(table: &str, key: &[u8], died_at: DateTime<Utc>) -> String {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let micros = died_at.timestamp_micros().to_be_bytes();
    let bytes = table
        .as_bytes()
        .iter()
        .chain(&[0])
        .chain(key)
        .chain(&[0])
        .chain(&micros);
    let hash = bytes.fold(OFFSET, |h, &b| (h ^ u128::from(b)).wrapping_mul(PRIME));
    format!("{hash:032x}")
}

/// Any one of `filters` (itself when alone).
fn or(mut filters: Vec<RowFilter>) -> RowFilter {
    if filters.len() == 1 {
        filters.remove(0)
    } else {
        filter(Filter::Interleave(Interleave { filters }))
    }
}

/// The distinct `(family, qualifier)` of `cells`, in order.
fn columns_of<'c>(cells: &[&'c Cell]) -> Vec<ColumnRef<'c>> {
    let mut columns: Vec<ColumnRef<'c>> = Vec::with_capacity(cells.len());
    columns.extend(
        cells
            .iter()
            .map(|c| (c.family.as_str(), c.qualifier.as_slice())),
    );
    columns.sort();
    columns.dedup();
    columns
}

/// Whether the row's newest marker of the struct's name, visible or not,
/// was written by a struct sharing none of its names (its fingerprint,
/// see `crate::model::writer`), while none of the struct's columns holds a
/// visible cell at `now`: the other struct's row, as the typed readers
/// judge it, and its marker not the struct's to delete.
fn marked_by_another_struct(schema: &Schema, cells: &[Cell], now: DateTime<Utc>) -> bool {
    let visibility = schema.policy.visibility(now);
    let mut marker: Option<&Cell> = None;
    for c in cells {
        if schema.column_index(&c.family, &c.qualifier).is_some()
            && visibility.is_visible(c.timestamp_micros)
        {
            return false;
        }
        if schema.is_marker(&c.family, &c.qualifier)
            && marker.is_none_or(|m| m.timestamp_micros < c.timestamp_micros)
        {
            marker = Some(c);
        }
    }
    marker.is_some_and(|m| written_by_another_struct(schema, &m.value))
}

/// Whether the row carries another struct's visible marker and not the
/// struct's own at `now`: not the struct's row at all.
fn its_row_is_another_structs(schema: &Schema, cells: &[Cell], now: DateTime<Utc>) -> bool {
    let visibility = schema.policy.visibility(now);
    let visible = cells
        .iter()
        .filter(|c| visibility.is_visible(c.timestamp_micros));
    let mut own = false;
    let mut foreign = false;
    for c in visible {
        own |= schema.is_marker(&c.family, &c.qualifier);
        foreign |= schema.is_foreign_marker(&c.family, &c.qualifier);
    }
    foreign && !own
}

/// The verdict of [the rule](crate::liveness) on a row of `schema` stored
/// as `cells`, at `at`: the newest visible cell of each column, the
/// marker, the shadow, map entries and other structs' markers, as the
/// typed reader reduces them.
pub(crate) fn struct_verdict(schema: &Schema, cells: &[Cell], at: DateTime<Utc>) -> Verdict {
    let visibility = schema.policy.visibility(at);
    // The newest visible timestamp of each column: on the stack for the
    // structs most have (a reaper judges every row it reads two or three
    // times).
    let mut on_stack = [None; 32];
    let mut on_heap;
    let columns: &mut [Option<i64>] = if let Some(c) = on_stack.get_mut(..schema.columns.len()) {
        c
    } else {
        on_heap = vec![None; schema.columns.len()];
        &mut on_heap
    };
    let mut newest = Newest::default();
    let mut marker: Option<&Cell> = None;
    for cell in cells {
        let ts = cell.timestamp_micros;
        if !visibility.is_visible(ts) {
            continue;
        }
        let (family, qualifier) = (cell.family.as_str(), cell.qualifier.as_slice());
        if schema.is_marker(family, qualifier) {
            if marker.is_none_or(|m| m.timestamp_micros < ts) {
                marker = Some(cell);
            }
        } else if let Some(i) = schema.column_index(family, qualifier) {
            columns[i] = columns[i].max(Some(ts));
        } else if schema.map_index(family).is_some() {
            newest.entry = newest.entry.max(Some(ts));
        } else if schema.is_written_at(family, qualifier) {
            newest.written_at = newest.written_at.max(Some(ts));
        } else if schema.is_foreign_marker(family, qualifier) {
            newest.foreign_marker = true;
        }
    }
    newest.marker = marker.map(|m| Marker::read(m.timestamp_micros, &m.value, visibility));
    verdict(schema, newest, |i| columns[i])
}

/// When a row of `schema` stored as `cells` died (see the module doc).
fn struct_died_at(schema: &Schema, cells: &[Cell], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let live =
        |at: DateTime<Utc>| matches!(struct_verdict(schema, cells, at), Verdict::Live { .. });
    if live(now) {
        return None;
    }
    // Just before it died: live, or held by its live marker while a
    // required column is missing (collected since: the marker vouches
    // that the row was written whole with it).
    let was_live = |at: DateTime<Utc>| {
        matches!(
            struct_verdict(schema, cells, at),
            Verdict::Live { .. } | Verdict::Partial { marked: true, .. }
        )
    };
    let policy = schema.policy;
    let now_micros = now.timestamp_micros();
    // Sized once: a collect through `flat_map` grows it cell by cell.
    let mut instants: Vec<i64> = Vec::with_capacity(cells.len() + 1);
    for c in cells {
        let own = policy.expiry_micros(c.timestamp_micros).ok();
        let carried = schema
            .is_marker(&c.family, &c.qualifier)
            .then(|| {
                policy
                    .expiry_micros(marker_row_ts(c.timestamp_micros, &c.value))
                    .ok()
            })
            .flatten();
        instants.extend(
            [own, carried]
                .into_iter()
                .flatten()
                .filter(|&at| at <= now_micros),
        );
    }
    instants.sort_unstable();
    instants.dedup();
    let millisecond = TimeDelta::milliseconds(1);
    instants.into_iter().rev().find_map(|micros| {
        let at = from_micros(micros).ok()?;
        (was_live(at - millisecond) && !was_live(at)).then_some(at)
    })
}

/// When a row of `family` stored as `cells` expires, judged without a
/// struct: the latest row expiry its markers carry, or, without a
/// marker, the expiry of its latest cell (µs). `None` without a cell.
fn family_expiry(policy: Policy, family: &str, cells: &[Cell]) -> Option<i64> {
    let of_family = cells.iter().filter(|c| c.family == family);
    let mut markers: Option<i64> = None;
    let mut columns: Option<i64> = None;
    // The newest cell of each marker column carries its row's timestamp.
    let mut newest_marker: Vec<&Cell> = Vec::new();
    for cell in of_family {
        if cell.qualifier.starts_with(ROW_MARKER_PREFIX) {
            match newest_marker
                .iter_mut()
                .find(|m| m.qualifier == cell.qualifier)
            {
                Some(kept) if kept.timestamp_micros < cell.timestamp_micros => *kept = cell,
                Some(_) => {}
                None => newest_marker.push(cell),
            }
        }
        let expiry = policy.expiry_micros(cell.timestamp_micros).ok();
        columns = columns.max(expiry);
    }
    for marker in newest_marker {
        let carried = marker_row_ts(marker.timestamp_micros, &marker.value);
        markers = markers.max(policy.expiry_micros(carried).ok());
    }
    markers.or(columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::liveness::marker_value;
    use crate::model::schema::{Column, MapColumn, WhenAbsent};

    const fn column(qualifier: &'static str, when_absent: WhenAbsent) -> Column {
        Column::of("f", qualifier, when_absent)
    }

    static SCHEMA: Schema = Schema {
        table: "t",
        policy: Policy::CellExpiry,
        families: &["f", "m"],
        owns_family: false,
        columns: &[
            column("a", WhenAbsent::Required),
            column("b", WhenAbsent::Required),
            column("o", WhenAbsent::ReadsNone),
        ],
        maps: &[MapColumn {
            field: "m",
            family: "m",
        }],
        written_at: None,
        marker: b"\0\0T",
        key_fields: &["id"],
        key_separator: "",
    };

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    /// A one-second cell expiring at `ms`.
    fn cell(family: &str, qualifier: &[u8], ms: i64) -> Cell {
        Cell::new(family, qualifier.to_vec(), ms * 1_000, b"v".to_vec())
    }

    /// A row of `SCHEMA` written whole, expiring at `ms`.
    fn row(ms: i64) -> Vec<Cell> {
        vec![
            cell("f", b"\0\0T", ms),
            cell("f", b"a", ms),
            cell("f", b"b", ms),
        ]
    }

    const STRUCT: Judge = Judge::Struct(&SCHEMA);

    #[test]
    fn a_row_dies_when_its_first_required_column_expires() {
        let mut cells = row(10_000);
        // `b` written later, living longer; the marker carries `a`'s expiry.
        cells[2] = cell("f", b"b", 12_000);
        cells[0].value = marker_value(12_000_000, 10_000_000).unwrap().to_vec();
        cells[0].timestamp_micros = 12_000_000;
        assert_eq!(STRUCT.died_at(&cells, at(9_999)), None, "live");
        assert_eq!(STRUCT.died_at(&cells, at(10_000)), Some(at(10_000)));
        // Judged later, the same instant.
        assert_eq!(STRUCT.died_at(&cells, at(50_000)), Some(at(10_000)));
        // Once `a` is collected, the marker still says when.
        cells.remove(1);
        assert_eq!(STRUCT.died_at(&cells, at(50_000)), Some(at(10_000)));
    }

    #[test]
    fn an_incomplete_row_never_died() {
        let cells = vec![cell("f", b"a", 10_000)];
        assert_eq!(STRUCT.died_at(&cells, at(20_000)), None);
        assert_eq!(
            STRUCT.plan(&cells[..0], at(20_000), TimeDelta::zero()),
            Plan::Keep(Keep::Nothing)
        );
        let live_a = vec![cell("f", b"a", 30_000)];
        assert_eq!(
            STRUCT.plan(&live_a, at(20_000), TimeDelta::zero()),
            Plan::Keep(Keep::Incomplete)
        );
    }

    #[test]
    fn a_dead_row_whose_cells_all_expired_goes_whole_by_time_range() {
        let cells = row(10_000);
        let plan = STRUCT.plan(&cells, at(20_000), TimeDelta::seconds(5));
        let Plan::Whole {
            died_at,
            columns,
            before,
            cells: n,
        } = plan
        else {
            panic!("{plan:?}")
        };
        assert_eq!(died_at, Some(at(10_000)));
        assert_eq!(n, 3);
        assert_eq!(columns.len(), 3);
        assert_eq!(before, 15_001_000, "visible from now - grace");
        // Within the grace: kept.
        assert_eq!(
            STRUCT.plan(&cells, at(12_000), TimeDelta::seconds(5)),
            Plan::Keep(Keep::TooRecent)
        );
    }

    #[test]
    fn a_live_rows_expired_cells_go_by_time_range_and_never_its_live_ones() {
        let mut cells = row(30_000);
        cells.push(cell("f", b"o", 5_000));
        cells.push(cell("m", b"k1", 6_000));
        cells.push(cell("m", b"k2", 40_000));
        cells.push(cell("f", b"a", 4_000)); // an older version
        cells.push(cell("f", b"stranger", 1_000)); // not the struct's
        let plan = STRUCT.plan(&cells, at(20_000), TimeDelta::zero());
        let Plan::Cells {
            columns,
            before,
            cells: n,
        } = plan
        else {
            panic!("{plan:?}")
        };
        assert_eq!(n, 3);
        assert_eq!(
            columns,
            vec![("f", &b"a"[..]), ("f", &b"o"[..]), ("m", &b"k1"[..])]
        );
        assert!(cells
            .iter()
            .filter(|c| SCHEMA.policy.is_visible(c.timestamp_micros, at(20_000)))
            .all(|c| c.timestamp_micros >= before));
    }

    #[test]
    fn a_dead_row_with_cells_still_visible_is_deleted_only_on_condition() {
        // Entries outliving the row.
        let mut cells = row(10_000);
        cells.push(cell("m", b"k", 90_000));
        assert_eq!(
            STRUCT.plan(&cells, at(20_000), TimeDelta::zero()),
            Plan::Conditional {
                died_at: at(10_000)
            }
        );
        assert_eq!(
            STRUCT.plan(&cells, at(20_000), TimeDelta::seconds(30)),
            Plan::Keep(Keep::TooRecent)
        );
        // Another struct's row: not ours to judge.
        let mut theirs = vec![cell("f", b"a", 90_000), cell("f", b"\0\0U", 90_000)];
        theirs.push(cell("f", b"b", 10_000));
        assert_eq!(
            STRUCT.plan(&theirs, at(20_000), TimeDelta::zero()),
            Plan::Keep(Keep::Other)
        );
    }

    #[test]
    fn a_family_row_dies_by_its_markers_or_its_last_cell() {
        let family = Judge::Family {
            family: "f".to_owned(),
            policy: Policy::CellExpiry,
        };
        let plain = vec![cell("f", b"x", 10_000), cell("f", b"y", 20_000)];
        assert_eq!(family.died_at(&plain, at(15_000)), None);
        assert_eq!(family.died_at(&plain, at(25_000)), Some(at(20_000)));
        // Mixed, no marker: only older versions may go.
        let mut versions = plain.clone();
        versions.push(cell("f", b"y", 5_000));
        let Plan::Cells { columns, .. } = family.plan(&versions, at(15_000), TimeDelta::zero())
        else {
            panic!()
        };
        assert_eq!(columns, vec![("f", &b"y"[..])]);
        assert_eq!(
            family.plan(&plain, at(15_000), TimeDelta::zero()),
            Plan::Keep(Keep::Unsure)
        );
        // A live marker: every expired cell may go.
        let mut marked = plain.clone();
        marked.push(cell("f", b"\0\0T", 20_000));
        assert!(matches!(
            family.plan(&marked, at(15_000), TimeDelta::zero()),
            Plan::Cells { cells: 1, .. }
        ));
        // The marker's carried expiry decides the death.
        let mut carried = marked.clone();
        carried[2].value = marker_value(20_000_000, 12_000_000).unwrap().to_vec();
        assert_eq!(family.died_at(&carried, at(15_000)), Some(at(12_000)));
        assert_eq!(
            family.last_cells(&plain, at(20_000)),
            vec![plain[1].clone()]
        );
    }

    #[test]
    fn an_event_id_is_the_same_death_everywhere_and_another_elsewhere() {
        let id = event_id("t", b"k", at(5));
        assert_eq!(id.len(), 32);
        assert_eq!(id, event_id("t", b"k", at(5)));
        assert_ne!(id, event_id("t", b"k", at(6)));
        assert_ne!(id, event_id("t", b"k2", at(5)));
        assert_ne!(id, event_id("u", b"k", at(5)));
        // FNV-1a 128 of nothing is its offset basis: the constants are FNV's.
        assert_eq!(event_id("", b"", at(0)).len(), 32);
    }

    #[test]
    fn a_window_maps_to_the_timestamps_expiring_in_it() {
        let one_second = STRUCT;
        assert_eq!(
            one_second.timestamps_expiring(at(1_000), at(2_000)),
            Some((1_000_000, 2_000_000))
        );
        assert_eq!(one_second.timestamps_expiring(at(2_000), at(2_000)), None);
        let default = Judge::Family {
            family: "f".to_owned(),
            policy: Policy::default_ttl(TimeDelta::seconds(1)),
        };
        assert_eq!(
            default.timestamps_expiring(at(1_500), at(3_000)),
            Some((500_000, 2_000_000))
        );
    }

    #[test]
    fn a_window_bound_rounds_up_to_the_millisecond() {
        assert_eq!(ceil_millis(at(5)), 5_000);
        assert_eq!(ceil_millis(at(5) + TimeDelta::microseconds(1)), 6_000);
    }
}
