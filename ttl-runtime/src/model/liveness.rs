//! When a row is alive: the one rule that the typed reader, every
//! server-side condition and every planner of a rewrite follow.
//!
//! # Visible cells
//!
//! A cell is *visible* at `now` when its policy says it has not expired
//! ([`crate::Policy`]); garbage collection may still hold expired cells, and
//! they never count. Of each column, only its newest visible cell counts.
//!
//! # Whose row
//!
//! A struct is a view of some cells of a row: its marker, its columns, its
//! shadow column, its map families (see the guide's "Several structs in one
//! table"). A row that carries another struct's visible marker (any
//! qualifier starting with [`ROW_MARKER_PREFIX`](crate::model::schema::ROW_MARKER_PREFIX), in one of the struct's
//! families that is not a map's) and not the struct's own is **not the
//! struct's row**: absent, whatever column names the two share. A row that
//! carries no per-struct marker at all (another program's, or one written
//! before per-struct markers) is judged by the struct's columns, below.
//!
//! # Live rows
//!
//! A row is **live** at `now` when it is the struct's (above) and:
//!
//! * its struct has **required** fields (neither `Option`, nor
//!   `#[bigtable(default)]`, nor a counter): **every** required field's
//!   column has a visible cell;
//! * otherwise: its `written_at` shadow column or any of its columns has a
//!   visible cell, or, in a struct whose fields are all `Option` or
//!   `#[bigtable(default)]`, its row marker, or, in a struct whose fields
//!   are all `Option`, any entry of one of its maps.
//!
//! What else a row holds (`Option`, default and counter fields, fields with
//! their own TTL, map entries) is read **only while the row is live**: it
//! never makes a row live on its own, so a row whose required fields have
//! expired cannot come back through a field that outlived them, an entry
//! written with a longer TTL, or a counter. A row that is not live reads as
//! absent, whatever it still stores; [`Table::get`](crate::Table::get)
//! returns `None`, conditions see no row, and rewrites (`update`, `touch`,
//! `set_ttl`, …) leave it alone. Only a write of a whole row (`put`,
//! `insert_if_absent`, `put_if`, an `increment` that creates its row) makes
//! it live again, and such a write replaces every column and map of the row.
//!
//! # Expiry
//!
//! A live row **expires** when it stops being live: in a struct with
//! required fields, at the earliest expiry among them (every write of this
//! library gives them one timestamp, or an earlier one for a field with a
//! shorter TTL of its own, so that is the row's); otherwise at the latest
//! expiry of its shadow column and columns (and marker), or of its entries
//! when only entries are left.
//!
//! # Three states: live, absent, incomplete
//!
//! A row of a struct with required fields that is not live is one of two
//! things, and the rule tells them apart only from what is stored, never by
//! guessing:
//!
//! * **absent**: none of its required columns has a visible cell, or its
//!   marker shows that the row's required columns have expired (below);
//! * **incomplete** (present but not decodable): some of its required
//!   columns are visible while another is missing, and nothing stored
//!   proves that the missing one expired. A struct that gained a required
//!   field without `#[bigtable(default)]`, a row another program wrote
//!   column by column, a row written before the marker existed, or, on the
//!   emulator, whose reads are not row-atomic, a read torn by a concurrent
//!   write. The typed reader reports it ([`crate::Error::Decode`] naming
//!   the column) or, when asked, skips and counts it; every condition
//!   treats it as a row that exists, so `insert_if_absent` never
//!   overwrites it.
//!
//! # The row marker
//!
//! Every write of a whole row also stores the struct's **row marker**: a
//! cell in the struct's first family whose qualifier is two NUL bytes and
//! the struct's name ([`Schema::marker`]; `#[bigtable(marker = "...")]`
//! names it otherwise), at the row's timestamp (Cassandra's row liveness
//! marker plays the same part). Each struct has its own, so structs sharing
//! a family or a row key never judge their rows by each other's marker. Its
//! value is, when a required field with a shorter TTL of its own makes the
//! row expire before the row's timestamp says, the timestamp carrying the
//! row's expiry (8 bytes, big-endian); otherwise its writer's fingerprint
//! (see `crate::model::writer`; empty before fingerprints). A row live by
//! the marker or shadow column alone, none of the struct's columns
//! visible, whose fingerprint holds none of the struct's names, was
//! written by another struct of the same name (or by a version of this
//! struct that kept none of its names): the rule judges it that struct's
//! row; readers and the rewrites that read it first (`update`, re-times,
//! an increment's recount) report it
//! ([`crate::CodecError::WrittenByAnotherStruct`]), and `add_markers`, the
//! feed and the reaper never take it for the struct's. It does three
//! things:
//!
//! * a row of a struct whose fields are all `Option` or defaults exists
//!   even with every field `None` or cleared (so `insert_if_absent` of such
//!   a value has one winner, and `update().clear(..)` of every field leaves
//!   the row it answers; unless the marker is another struct's, whose row
//!   that would leave: the update is refused, `Error::UpdateLeavesNoRow`).
//!   Only there does the marker make a row: a required field's column
//!   decides, and a counter's windows do;
//! * it proves expiry: a visible marker whose row timestamp has expired
//!   says the row's required columns were written with it and have
//!   expired, so the row is absent, whatever other cells of it (fields with
//!   their own TTL, entries, cells of another writer) are still visible;
//! * it tells a row this library wrote whole from one assembled piece by
//!   piece: a row with a live marker but a required column that holds no
//!   cell at all was written by a struct without that field (the struct
//!   and the table disagree: add `#[bigtable(default)]` to the new field).
//!
//! The one-byte marker `\0` that earlier versions wrote for every struct
//! of a family ([`crate::model::schema::LEGACY_ROW_MARKER`]) counts only for
//! a struct that owns its family; other structs ignore it, and
//! `Table::add_markers` gives rows written before per-struct markers their
//! struct's marker.

use crate::model::policy::Visibility;
use crate::model::schema::Schema;
use crate::model::writer::{fingerprint_in, shares_no_name, Listed};

/// The newest visible timestamp of the parts of a row that are not
/// columns, at one "now".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Newest<'a> {
    /// The struct's row marker.
    pub(crate) marker: Option<Marker<'a>>,
    /// The `written_at` shadow column.
    pub(crate) written_at: Option<i64>,
    /// Any entry of any map field.
    pub(crate) entry: Option<i64>,
    /// Whether another struct's row marker is visible: a qualifier starting
    /// with [`ROW_MARKER_PREFIX`](crate::model::schema::ROW_MARKER_PREFIX) that is not the struct's, in one of its
    /// families that is not a map's.
    pub(crate) foreign_marker: bool,
}

/// The newest visible row marker of a row, judged at one "now".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marker<'a> {
    /// Its timestamp.
    pub(crate) ts: i64,
    /// Whether the row timestamp it carries has expired: the required
    /// columns written with it have, too.
    pub(crate) row_expired: bool,
    /// The name hashes of the struct that wrote it, when it carries a
    /// fingerprint (see `crate::model::writer`).
    pub(crate) fingerprint: Option<Listed<'a>>,
}

impl<'a> Marker<'a> {
    /// The marker stored at `ts` with `value`, judged by `visibility`.
    pub(crate) fn read(ts: i64, value: &'a [u8], visibility: Visibility) -> Self {
        Marker {
            ts,
            row_expired: !visibility.is_visible(marker_row_ts(ts, value)),
            fingerprint: fingerprint_in(value),
        }
    }

    /// Whether a struct declaring none of `schema`'s names wrote it.
    fn written_by_another_struct(self, schema: &Schema) -> bool {
        self.fingerprint
            .is_some_and(|writer| shares_no_name(schema, writer))
    }
}

/// The value of a row marker at `marker_ts` for a row whose expiry is
/// carried by `row_ts`: empty when they are the same timestamp, the usual
/// case, else `row_ts` as 8 bytes big-endian.
#[must_use]
pub(crate) fn marker_value(marker_ts: i64, row_ts: i64) -> Option<[u8; 8]> {
    (row_ts != marker_ts).then(|| row_ts.to_be_bytes())
}

/// The row timestamp a marker at `ts` with `value` carries (see
/// [`marker_value`]); a value of any other length (not written by this
/// library) is read as empty.
#[must_use]
pub(crate) fn marker_row_ts(ts: i64, value: &[u8]) -> i64 {
    <[u8; 8]>::try_from(value).map_or(ts, i64::from_be_bytes)
}

/// What a row is at one "now", by the rule of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Live; `row_ts` is the timestamp its expiry comes from.
    Live {
        /// The timestamp carrying the row's expiry.
        row_ts: i64,
    },
    /// Not live, and nothing of its own columns is visible.
    Absent,
    /// Not live, though some of its required columns, or its marker with a
    /// row timestamp that has not expired, are visible: required column
    /// `missing` has no visible cell. Incomplete (see the module doc), or
    /// on the emulator, whose reads are not row-atomic, a read torn by a
    /// concurrent write; a reader that can look at the missing column's
    /// stored cells tells them apart.
    Partial {
        /// The first required column (an index of `Schema::columns`)
        /// without a visible cell.
        missing: usize,
        /// Whether the row marker is visible.
        marked: bool,
    },
    /// Live by its marker or shadow column alone, no column of the struct
    /// holding a visible cell, and the marker was written by a struct
    /// declaring none of its names: another struct's row that happens to
    /// share its marker (two structs of one name in two programs). Readers report it, rewrites leave it alone, the reaper
    /// and the feed never take it for a row of theirs.
    WrittenByAnotherStruct,
}

impl Verdict {
    /// The timestamp carrying a live row's expiry.
    pub(crate) fn row_ts(self) -> Option<i64> {
        match self {
            Verdict::Live { row_ts } => Some(row_ts),
            Verdict::Absent | Verdict::Partial { .. } | Verdict::WrittenByAnotherStruct => None,
        }
    }
}

/// What a required column of a row holds as stored, at one "now": a
/// visible cell, only cells that are not visible (expired), or no cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stored {
    /// A visible cell.
    Visible,
    /// Cells, none of them visible: it expired.
    Expired,
    /// No cell at all.
    Nothing,
}

/// What a row judged [`Verdict::Partial`] really is, once its required
/// columns' stored cells are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settled {
    /// A required column's cells have all expired: the row is not live.
    PartlyExpired,
    /// Required column `missing` holds no cell and nothing proves it
    /// expired.
    Incomplete {
        /// The first such column (an index of `Schema::columns`).
        missing: usize,
    },
    /// Every required column holds a visible cell: the read that judged
    /// the row partial was torn (the emulator's reads are not
    /// row-atomic).
    Torn,
}

/// The one rule every reader of a partial row follows (a read, an
/// `add_markers` run): from what each required column holds as stored
/// (`stored(i)` for column `i` of `Schema::columns`), a row whose required
/// column expired is not live, whatever its other columns hold; one
/// whose required column holds nothing is incomplete.
pub(crate) fn settle(schema: &Schema, stored: impl Fn(usize) -> Stored) -> Settled {
    let mut missing = None;
    for (i, c) in schema.columns.iter().enumerate() {
        if !c.is_required() {
            continue;
        }
        match stored(i) {
            Stored::Visible => {}
            Stored::Expired => return Settled::PartlyExpired,
            Stored::Nothing => {
                missing.get_or_insert(i);
            }
        }
    }
    missing.map_or(Settled::Torn, |missing| Settled::Incomplete { missing })
}

/// The verdict on a row of `schema`, from the newest visible timestamp of
/// each of its columns (`column(i)` for column `i` of `Schema::columns`)
/// and of its other parts.
#[inline]
pub(crate) fn verdict(
    schema: &Schema,
    newest: Newest<'_>,
    column: impl Fn(usize) -> Option<i64>,
) -> Verdict {
    if newest.marker.is_none() && newest.foreign_marker {
        // Another struct's row, whatever column names the two share.
        return Verdict::Absent;
    }
    let mut any_required = false;
    let mut any_required_visible = false;
    let mut missing = None;
    let mut earliest_required: Option<i64> = None;
    let mut latest_column: Option<i64> = None;
    for (i, c) in schema.columns.iter().enumerate() {
        let ts = column(i);
        latest_column = latest_column.max(ts);
        if c.is_required() {
            any_required = true;
            match ts {
                Some(ts) => {
                    any_required_visible = true;
                    earliest_required = Some(earliest_required.map_or(ts, |e| e.min(ts)));
                }
                None => {
                    missing.get_or_insert(i);
                }
            }
        }
    }
    if any_required {
        let Some(missing) = missing else {
            return earliest_required.map_or(Verdict::Absent, |row_ts| Verdict::Live { row_ts });
        };
        return match newest.marker {
            // The marker proves the required columns expired with it.
            Some(marker) if marker.row_expired => Verdict::Absent,
            Some(_) => Verdict::Partial {
                missing,
                marked: true,
            },
            None if any_required_visible => Verdict::Partial {
                missing,
                marked: false,
            },
            // Options, defaults, counters, entries or a shadow alone: no
            // row of this struct (another struct sharing the family, or
            // cells outliving a row whose marker was collected).
            None => Verdict::Absent,
        };
    }
    let all_options = schema.all_fields_optional();
    let marker = newest
        .marker
        .map(|m| m.ts)
        .filter(|_| schema.marker_makes_row());
    let row_ts = match marker.max(newest.written_at).max(latest_column) {
        Some(row_ts) => row_ts,
        None => match newest.entry {
            Some(row_ts) if all_options => row_ts,
            _ => return Verdict::Absent,
        },
    };
    if latest_column.is_none()
        && newest
            .marker
            .is_some_and(|m| m.written_by_another_struct(schema))
    {
        return Verdict::WrittenByAnotherStruct;
    }
    Verdict::Live { row_ts }
}

/// A fact about a row at one "now": what [`live`] and [`present`] are
/// written in, read off the cells by the typed reader ([`verdict`],
/// [`settle`]) and by the server through the filter each compiles to
/// (`model::condition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Atom {
    /// The struct's own row marker has a visible cell.
    OwnMarker,
    /// The struct's newest visible marker carries a row timestamp that has
    /// not expired ([`Marker::row_expired`] is false).
    MarkerRowLive,
    /// Another struct's row marker has a visible cell.
    ForeignMarker,
    /// Column `i` (of `Schema::columns`) has a visible cell.
    Column(usize),
    /// Column `i`'s newest stored cell has expired: it holds cells, none
    /// visible ([`Stored::Expired`]).
    Expired(usize),
    /// The `written_at` shadow column has a visible cell.
    WrittenAt,
    /// A map field has a visible entry.
    Entry,
}

/// A statement about a row made of [`Atom`]s: the rule, written once,
/// which the reader evaluates ([`Formula::holds`]) and
/// `model::condition` compiles into a predicate the server evaluates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Formula {
    /// A fact.
    Atom(Atom),
    /// Every one holds (none: true).
    All(Vec<Formula>),
    /// Some one holds (none: false).
    Any(Vec<Formula>),
    /// It does not hold.
    Not(Box<Formula>),
    /// `then` when `test` holds, else `otherwise`.
    If {
        /// What decides.
        test: Box<Formula>,
        /// What must hold when `test` does.
        then: Box<Formula>,
        /// What must hold when it does not.
        otherwise: Box<Formula>,
    },
}

impl Formula {
    /// Whether it holds of a row whose facts are `fact`: how the tests
    /// check it against [`verdict`] and [`settle`] (the reader's hot path,
    /// which reads no formula) and against the server.
    #[cfg(test)]
    pub(crate) fn holds(&self, fact: &impl Fn(Atom) -> bool) -> bool {
        match self {
            Formula::Atom(atom) => fact(*atom),
            Formula::All(all) => all.iter().all(|f| f.holds(fact)),
            Formula::Any(any) => any.iter().any(|f| f.holds(fact)),
            Formula::Not(f) => !f.holds(fact),
            Formula::If {
                test,
                then,
                otherwise,
            } => {
                if test.holds(fact) {
                    then.holds(fact)
                } else {
                    otherwise.holds(fact)
                }
            }
        }
    }

    fn not(self) -> Formula {
        Formula::Not(Box::new(self))
    }
}

/// The row is the struct's: it carries the struct's own marker, or no
/// other struct's.
fn its_row() -> Formula {
    Formula::All(vec![
        Formula::Atom(Atom::ForeignMarker),
        Formula::Atom(Atom::OwnMarker).not(),
    ])
    .not()
}

/// The required columns' indexes.
fn required(schema: &Schema) -> impl Iterator<Item = usize> + '_ {
    (0..schema.columns.len()).filter(|&i| schema.columns[i].is_required())
}

/// [`live`] but for whose row it is.
fn live_by_columns(schema: &Schema) -> Formula {
    if required(schema).next().is_some() {
        return Formula::All(
            required(schema)
                .map(|i| Formula::Atom(Atom::Column(i)))
                .collect(),
        );
    }
    let mut any: Vec<Formula> = (0..schema.columns.len())
        .map(|i| Formula::Atom(Atom::Column(i)))
        .collect();
    if schema.written_at.is_some() {
        any.push(Formula::Atom(Atom::WrittenAt));
    }
    if schema.marker_makes_row() {
        any.push(Formula::Atom(Atom::OwnMarker));
    }
    if schema.all_fields_optional() && !schema.maps.is_empty() {
        any.push(Formula::Atom(Atom::Entry));
    }
    Formula::Any(any)
}

/// The row is live (see the module doc): it is the struct's, and every
/// required column is visible; without required fields, a column, the
/// shadow column, the marker (fields all `Option` or defaults) or an
/// entry (all `Option`) is. What [`verdict`] calls [`Verdict::Live`].
pub(crate) fn live(schema: &Schema) -> Formula {
    Formula::All(vec![its_row(), live_by_columns(schema)])
}

/// A row exists: live, or incomplete (or, to a reader, torn); what a
/// write that must never overwrite a row (`insert_if_absent`) asks.
/// Without required fields, [`live`]. With them: the row is the struct's
/// and live; or no required column's newest stored cell has expired
/// (which proves the row expired, [`settle`]), and its newest visible
/// marker carries a row timestamp that has not expired, or, with no
/// visible marker, one of its required columns is visible
/// ([`Verdict::Partial`]).
pub(crate) fn present(schema: &Schema) -> Formula {
    if required(schema).next().is_none() {
        return live(schema);
    }
    let proven_expired = Formula::Any(
        required(schema)
            .map(|i| Formula::Atom(Atom::Expired(i)))
            .collect(),
    );
    let shows_a_row = Formula::If {
        test: Box::new(Formula::Atom(Atom::OwnMarker)),
        then: Box::new(Formula::Atom(Atom::MarkerRowLive)),
        otherwise: Box::new(Formula::Any(
            required(schema)
                .map(|i| Formula::Atom(Atom::Column(i)))
                .collect(),
        )),
    };
    let incomplete = Formula::All(vec![proven_expired.not(), shows_a_row]);
    Formula::All(vec![
        its_row(),
        Formula::Any(vec![live_by_columns(schema), incomplete]),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Policy;
    use crate::model::schema::{test_column as column, Column, MapColumn, WhenAbsent};

    const fn schema(columns: &'static [Column], maps: &'static [MapColumn]) -> Schema {
        Schema {
            table: "t",
            policy: Policy::CellExpiry,
            families: &["f", "m"],
            owns_family: false,
            columns,
            maps,
            written_at: None,
            marker: b"\0\0T",
            key_fields: &["id"],
            key_separator: "",
        }
    }

    static REQUIRED: Schema = schema(
        &[
            column("a", WhenAbsent::Required),
            column("b", WhenAbsent::Required),
            column("n", WhenAbsent::ReadsZero),
        ],
        &[MapColumn {
            field: "m",
            family: "m",
        }],
    );
    static OPTIONAL: Schema = schema(
        &[column("o", WhenAbsent::ReadsNone)],
        &[MapColumn {
            field: "m",
            family: "m",
        }],
    );
    static COUNTED: Schema = schema(
        &[column("n", WhenAbsent::ReadsZero)],
        &[MapColumn {
            field: "m",
            family: "m",
        }],
    );

    fn cols(ts: &'static [Option<i64>]) -> impl Fn(usize) -> Option<i64> {
        move |i| ts[i]
    }

    const fn live_marker(ts: i64) -> Marker<'static> {
        Marker {
            ts,
            row_expired: false,
            fingerprint: None,
        }
    }

    /// The struct's marker as a row holds it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum MarkerState {
        None,
        RowLive,
        RowExpired,
    }

    /// Every row a reader can see of `schema`: each column visible, expired
    /// or holding nothing; the marker; another struct's; the shadow
    /// column; an entry.
    fn every_row(schema: &Schema, mut each: impl FnMut(&[Stored], MarkerState, [bool; 3])) {
        use Stored::{Expired, Nothing, Visible};
        let n = schema.columns.len();
        let mut stored = vec![Nothing; n];
        for mut code in 0..3usize.pow(u32::try_from(n).unwrap()) {
            for s in &mut stored {
                *s = [Visible, Expired, Nothing][code % 3];
                code /= 3;
            }
            for marker in [
                MarkerState::None,
                MarkerState::RowLive,
                MarkerState::RowExpired,
            ] {
                for others in 0..8u8 {
                    let [foreign, written_at, entry] =
                        [0, 1, 2].map(|bit| others & (1 << bit) != 0);
                    // A row holds only what the schema has.
                    if (written_at && schema.written_at.is_none())
                        || (entry && schema.maps.is_empty())
                    {
                        continue;
                    }
                    each(&stored, marker, [foreign, written_at, entry]);
                }
            }
        }
    }

    /// The reader's answer on a row: whether it is live, and whether it is
    /// present (live, or partial and not proven expired when its stored
    /// cells are looked at).
    fn reader(
        schema: &Schema,
        stored: &[Stored],
        marker: MarkerState,
        [foreign, written_at, entry]: [bool; 3],
    ) -> (bool, bool) {
        let newest = Newest {
            marker: match marker {
                MarkerState::None => None,
                MarkerState::RowLive => Some(live_marker(4)),
                MarkerState::RowExpired => Some(Marker {
                    ts: 4,
                    row_expired: true,
                    fingerprint: None,
                }),
            },
            written_at: written_at.then_some(5),
            entry: entry.then_some(6),
            foreign_marker: foreign,
        };
        let column =
            |i: usize| (stored[i] == Stored::Visible).then_some(10 + i64::try_from(i).unwrap());
        match verdict(schema, newest, column) {
            Verdict::Live { .. } => (true, true),
            Verdict::Absent => (false, false),
            Verdict::Partial { .. } => (
                false,
                settle(schema, |i| stored[i]) != Settled::PartlyExpired,
            ),
            Verdict::WrittenByAnotherStruct => unreachable!("no marker here carries a fingerprint"),
        }
    }

    /// The same row's facts.
    fn facts(
        stored: &[Stored],
        marker: MarkerState,
        [foreign, written_at, entry]: [bool; 3],
    ) -> impl Fn(Atom) -> bool + '_ {
        move |atom| match atom {
            Atom::OwnMarker => marker != MarkerState::None,
            Atom::MarkerRowLive => marker == MarkerState::RowLive,
            Atom::ForeignMarker => foreign,
            Atom::Column(i) => stored[i] == Stored::Visible,
            Atom::Expired(i) => stored[i] == Stored::Expired,
            Atom::WrittenAt => written_at,
            Atom::Entry => entry,
        }
    }

    static DEFAULTS: Schema = schema(
        &[
            column("o", WhenAbsent::ReadsNone),
            column("d", WhenAbsent::ReadsDefault),
        ],
        &[],
    );
    static ONE_REQUIRED: Schema = Schema {
        written_at: Some(crate::model::schema::ShadowColumn {
            family: "f",
            qualifier: "w",
        }),
        owns_family: true,
        ..schema(
            &[
                column("o", WhenAbsent::ReadsNone),
                column("r", WhenAbsent::Required),
            ],
            &[],
        )
    };
    static SHADOWED: Schema = Schema {
        written_at: Some(crate::model::schema::ShadowColumn {
            family: "f",
            qualifier: "w",
        }),
        ..schema(&[column("o", WhenAbsent::ReadsNone)], &[])
    };

    /// Every schema of up to three columns, each of every kind, with or
    /// without the shadow column and a map.
    fn every_small_schema() -> Vec<Schema> {
        const KINDS: [WhenAbsent; 4] = [
            WhenAbsent::Required,
            WhenAbsent::ReadsNone,
            WhenAbsent::ReadsDefault,
            WhenAbsent::ReadsZero,
        ];
        const NAMES: [&str; 3] = ["c0", "c1", "c2"];
        static MAP: [MapColumn; 1] = [MapColumn {
            field: "m",
            family: "m",
        }];
        let mut schemas = Vec::new();
        for n in 0..=3u32 {
            for mut code in 0..4usize.pow(n) {
                let columns: Vec<Column> = NAMES[..n as usize]
                    .iter()
                    .map(|name| {
                        let kind = KINDS[code % 4];
                        code /= 4;
                        column(name, kind)
                    })
                    .collect();
                let columns: &'static [Column] = Box::leak(columns.into_boxed_slice());
                for (shadow, maps) in [(false, false), (false, true), (true, false), (true, true)] {
                    schemas.push(Schema {
                        written_at: shadow.then_some(crate::model::schema::ShadowColumn {
                            family: "f",
                            qualifier: "w",
                        }),
                        ..schema(columns, if maps { &MAP } else { &[] })
                    });
                }
            }
        }
        schemas
    }

    /// The formulas say of every row what the reader does: [`live`] what
    /// [`verdict`] calls live, [`present`] what a read finds live or
    /// incomplete once [`settle`] has looked at a partial row's stored
    /// cells. What makes `insert_if_absent`'s predicate (compiled from
    /// [`present`]) agree with the typed reader, row by row.
    #[test]
    fn the_formulas_say_what_the_reader_does_of_every_row() {
        for (name, schema) in [
            ("required", &REQUIRED),
            ("optional", &OPTIONAL),
            ("counted", &COUNTED),
            ("defaults", &DEFAULTS),
            ("one required", &ONE_REQUIRED),
            ("shadowed", &SHADOWED),
        ]
        .into_iter()
        .chain(every_small_schema().iter().map(|s| ("small", s)))
        {
            let (live, present) = (live(schema), present(schema));
            let mut rows = 0;
            every_row(schema, |stored, marker, others| {
                let facts = facts(stored, marker, others);
                let (is_live, is_present) = reader(schema, stored, marker, others);
                let row =
                    format!("{stored:?} {marker:?} [foreign, written_at, entry] = {others:?}");
                assert_eq!(live.holds(&facts), is_live, "{name}: live, {row}");
                assert_eq!(present.holds(&facts), is_present, "{name}: present, {row}");
                rows += 1;
            });
            assert!(rows >= 6, "{name}: {rows} rows");
        }
    }

    #[test]
    fn an_expired_required_column_settles_a_partial_row_as_expired() {
        use Stored::{Expired, Nothing, Visible};
        let of = |stored: [Stored; 3]| settle(&REQUIRED, move |i| stored[i]);
        assert_eq!(of([Visible, Expired, Nothing]), Settled::PartlyExpired);
        // An expired column proves it even after one holding nothing.
        assert_eq!(of([Nothing, Expired, Nothing]), Settled::PartlyExpired);
        assert_eq!(
            of([Visible, Nothing, Expired]),
            Settled::Incomplete { missing: 1 }
        );
        assert_eq!(of([Visible, Visible, Nothing]), Settled::Torn);
        // Only required columns count (`n` reads zero).
        assert_eq!(of([Visible, Visible, Expired]), Settled::Torn);
    }

    #[test]
    fn a_marker_whose_row_expired_proves_the_row_absent() {
        let expired = Newest {
            marker: Some(Marker {
                ts: 5,
                row_expired: true,
                fingerprint: None,
            }),
            entry: Some(9),
            ..Newest::default()
        };
        // Whatever else is visible: a required column of another writer,
        // a counter, entries.
        assert_eq!(
            verdict(&REQUIRED, expired, cols(&[Some(7), None, Some(9)])),
            Verdict::Absent
        );
        // Every required column visible again (rewritten by someone): live.
        assert_eq!(
            verdict(&REQUIRED, expired, cols(&[Some(7), Some(8), None])),
            Verdict::Live { row_ts: 7 }
        );
    }

    #[test]
    fn without_a_marker_only_a_visible_required_column_makes_a_row_incomplete() {
        // Defaults, counters, options or entries alone: another struct's
        // row, or what outlived a row whose marker was collected.
        assert_eq!(
            verdict(&REQUIRED, Newest::default(), cols(&[None, None, Some(9)])),
            Verdict::Absent
        );
        let shadow = Newest {
            written_at: Some(3),
            ..Newest::default()
        };
        assert_eq!(
            verdict(&REQUIRED, shadow, cols(&[None, None, None])),
            Verdict::Absent
        );
        assert_eq!(
            verdict(&REQUIRED, Newest::default(), cols(&[None, Some(3), None])),
            Verdict::Partial {
                missing: 0,
                marked: false
            }
        );
    }

    #[test]
    fn a_marker_value_carries_the_row_timestamp_when_it_differs() {
        assert_eq!(marker_value(7, 7), None);
        let value = marker_value(7, 3).unwrap();
        assert_eq!(marker_row_ts(7, &value), 3);
        assert_eq!(marker_row_ts(7, b""), 7);
        // Not this library's: read as empty.
        assert_eq!(marker_row_ts(7, b"x"), 7);
    }

    #[test]
    fn required_fields_all_live_make_the_row_live_until_the_earliest() {
        let v = verdict(
            &REQUIRED,
            Newest::default(),
            cols(&[Some(5), Some(3), None]),
        );
        assert_eq!(v, Verdict::Live { row_ts: 3 });
    }

    #[test]
    fn one_required_field_missing_leaves_the_row_out_whatever_else_is_live() {
        let entry_and_counter = Newest {
            entry: Some(9),
            ..Newest::default()
        };
        assert_eq!(
            verdict(
                &REQUIRED,
                entry_and_counter,
                cols(&[Some(5), None, Some(9)])
            ),
            Verdict::Partial {
                missing: 1,
                marked: false
            }
        );
        let marked = Newest {
            marker: Some(live_marker(5)),
            ..Newest::default()
        };
        assert_eq!(
            verdict(&REQUIRED, marked, cols(&[None, None, None])),
            Verdict::Partial {
                missing: 0,
                marked: true
            }
        );
        // Entries alone are nothing of the row's own.
        assert_eq!(
            verdict(&REQUIRED, entry_and_counter, cols(&[None, None, None])),
            Verdict::Absent
        );
    }

    #[test]
    fn without_required_fields_the_marker_or_any_column_makes_the_row() {
        let marker = Newest {
            marker: Some(live_marker(4)),
            ..Newest::default()
        };
        assert_eq!(
            verdict(&OPTIONAL, marker, cols(&[None])),
            Verdict::Live { row_ts: 4 }
        );
        assert_eq!(
            verdict(&OPTIONAL, marker, cols(&[Some(7)])),
            Verdict::Live { row_ts: 7 }
        );
        assert_eq!(
            verdict(&OPTIONAL, Newest::default(), cols(&[None])),
            Verdict::Absent
        );
    }

    #[test]
    fn the_marker_alone_makes_no_row_of_defaults_or_counters() {
        let marker = Newest {
            marker: Some(live_marker(4)),
            ..Newest::default()
        };
        assert_eq!(verdict(&COUNTED, marker, cols(&[None])), Verdict::Absent);
        assert_eq!(
            verdict(&COUNTED, marker, cols(&[Some(4)])),
            Verdict::Live { row_ts: 4 }
        );
    }

    #[test]
    fn entries_make_a_row_only_when_every_field_is_an_option() {
        let entry = Newest {
            entry: Some(8),
            ..Newest::default()
        };
        assert_eq!(
            verdict(&OPTIONAL, entry, cols(&[None])),
            Verdict::Live { row_ts: 8 }
        );
        // A counter bounds its entries: they do not keep its row.
        assert_eq!(verdict(&COUNTED, entry, cols(&[None])), Verdict::Absent);
    }

    #[test]
    fn a_row_live_by_another_structs_marker_alone_is_that_structs() {
        static STRANGER: Schema = schema(&[column("seen", WhenAbsent::ReadsNone)], &[]);
        static COUNTED_SHADOWED: Schema = Schema {
            written_at: SHADOWED.written_at,
            ..schema(&[column("n", WhenAbsent::ReadsZero)], &[])
        };
        let marked_by = |fingerprint| Newest {
            marker: Some(Marker {
                fingerprint,
                ..live_marker(4)
            }),
            ..Newest::default()
        };
        let stranger = STRANGER.marker_fingerprint();
        let by_stranger = marked_by(fingerprint_in(&stranger));
        assert_eq!(
            verdict(&OPTIONAL, by_stranger, cols(&[None])),
            Verdict::WrittenByAnotherStruct
        );
        // Live by its shadow alone (the marker makes no row of counters):
        // the marker still tells whose row it is.
        let shadowed = Newest {
            written_at: Some(5),
            ..by_stranger
        };
        assert_eq!(
            verdict(&COUNTED_SHADOWED, shadowed, cols(&[None])),
            Verdict::WrittenByAnotherStruct
        );
        assert_eq!(
            verdict(&COUNTED_SHADOWED, by_stranger, cols(&[None])),
            Verdict::Absent
        );
        // A column of its own visible: its row (a version sharing a name).
        assert_eq!(
            verdict(&OPTIONAL, by_stranger, cols(&[Some(3)])),
            Verdict::Live { row_ts: 4 }
        );
        // Required columns decide, whoever wrote the marker.
        assert_eq!(
            verdict(&REQUIRED, by_stranger, cols(&[None, None, None])),
            Verdict::Partial {
                missing: 0,
                marked: true
            }
        );
        // Its own fingerprint, or none (written before fingerprints).
        let own = OPTIONAL.marker_fingerprint();
        for fingerprint in [fingerprint_in(&own), None] {
            assert_eq!(
                verdict(&OPTIONAL, marked_by(fingerprint), cols(&[None])),
                Verdict::Live { row_ts: 4 }
            );
        }
    }
}
