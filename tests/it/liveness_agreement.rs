//! The one liveness rule (`ttl-runtime`'s `model::liveness`), judged three
//! ways on the same stored cells, at the same "now", against Google's
//! Bigtable emulator:
//!
//! * **the server**: the predicate `insert_if_absent` sends (recorded on
//!   its way to the emulator by a proxy, since it is not public), replayed
//!   in a `CheckAndMutateRow` whose only mutation deletes a column that
//!   holds nothing; its `predicate_matched` says the row is present (live
//!   or incomplete);
//! * **the reader**: `Table::get` at a manual clock (`Some` is live; `None`
//!   absent; `Error::Decode` naming the column incomplete: a required
//!   column holds no cell at all, nothing proves the row expired, and some
//!   required column or the struct's live marker is visible);
//! * **the writer**: `insert_if_absent` at that clock, `Inserted` exactly
//!   when the row was absent, and then the row holds only what it wrote;
//!   over an incomplete row, nothing written and `Error::Decode`;
//!
//! all three at "now" (an insert judges the row when it is sent: a row
//! live then wins, however soon it expires);
//!
//! and all three against the rule as the module documents it, computed
//! here from the generated cells (which cells make a row live, its expiry,
//! the value read back).
//!
//! Each case writes one row of a test struct through a raw `MutateRow` with
//! explicit timestamps: every declared column absent or with one or two
//! versions, the struct's row marker, another struct's (a row carrying it
//! and not the struct's is not the struct's row) and the legacy one-byte
//! marker (which may not count), the shadow column, map entries, a counter's
//! window mark, and cells of no declared column, each expiring just before,
//! at, just after "now" or further off (whole milliseconds; "now" itself
//! has a sub-millisecond part). The structs: required fields, fields all
//! `Option` with a map, a counter; each under both TTL strategies where the
//! derive allows it (counters need one-second expiration).
//!
//! Garbage collection: the emulator collects by real time, so the main
//! properties put "now" an hour ahead of the real time (nothing they write
//! is collected while they run, and the cells' expiries cover both sides of
//! "now"). A second property puts "now" at the real time, judges a batch of
//! rows, waits until the emulator has collected every expired cell, and
//! judges them again: a collected cell is a cell that is not visible, so no
//! verdict changes. (What the reader says of one kind of row that is not
//! live does: a row whose required column's cells have all expired is
//! absent while they are stored, as they prove it expired, and incomplete
//! (`Error::Decode`) once they are collected and nothing proves it, unless
//! the struct's marker does. The property accepts both and counts the rows
//! that moved.)
//!
//! `PROPTEST_CASES` sets the number of cases (128 per struct by default;
//! a thirty-second of that, at least 2, for the collection property, whose
//! cases each wait for a collection pass). Failures are not persisted: a
//! failing case prints its cells, minimised.

use crate::support;

use crate::recorder;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::convert;
use crate::proto::CheckAndMutateRowRequest;
use bigtable_ttl::data::{self, RawTable, RowFilter};
use bigtable_ttl::{
    BigtableRow, CellCodec, Clock, CodecError, Error, Expiring, Insert, Policy, Schema, Table,
    WhenAbsent, LEGACY_ROW_MARKER,
};
use chrono::{DateTime, TimeDelta, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use prost::Message as _;
use recorder::Recorder;

/// Required fields, one-second expiration.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "required_s", family = "f")]
struct RequiredSecond {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    a: String,
    b: String,
    o: Option<String>,
    #[bigtable(map, family = "m")]
    m: BTreeMap<String, String>,
}

/// Required fields, a default TTL, the shadow column, a field with its
/// own TTL.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "required_d", family = "f")]
#[ttl(default = "1h", written_at)]
struct RequiredDefault {
    #[bigtable(key)]
    id: String,
    a: String,
    b: String,
    o: Option<String>,
    #[ttl(for = "10m")]
    h: Option<String>,
    #[bigtable(map, family = "m")]
    m: BTreeMap<String, String>,
}

/// Every field an `Option`, and a map; one-second expiration.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "optional_s", family = "f")]
struct OptionalSecond {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    o: Option<String>,
    p: Option<String>,
    #[bigtable(map, family = "m")]
    m: BTreeMap<String, String>,
}

/// Every field an `Option`, and a map; a default TTL, the shadow column.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "optional_d", family = "f")]
#[ttl(default = "1h", written_at)]
struct OptionalDefault {
    #[bigtable(key)]
    id: String,
    o: Option<String>,
    p: Option<String>,
    #[bigtable(map, family = "m")]
    m: BTreeMap<String, String>,
}

/// A counter beside an `Option`, a `#[bigtable(default)]` field and a map
/// (one-second expiration only).
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "counted_s", family = "f")]
struct CountedSecond {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    #[bigtable(counter)]
    n: i64,
    o: Option<String>,
    #[bigtable(default)]
    d: String,
    #[bigtable(map, family = "m")]
    m: BTreeMap<String, String>,
}

/// What every test struct offers the properties: a value to insert.
trait Probe:
    BigtableRow<Key = String> + Clone + fmt::Debug + PartialEq + Send + Sync + 'static
{
    /// A whole row for key `id` (expiring at `expires_at` under one-second
    /// expiration), with one map entry.
    fn fresh(id: String, expires_at: DateTime<Utc>) -> Self;
}

fn one_entry() -> BTreeMap<String, String> {
    BTreeMap::from([("fresh".to_owned(), "new".to_owned())])
}

impl Probe for RequiredSecond {
    fn fresh(id: String, expires_at: DateTime<Utc>) -> Self {
        Self {
            id,
            expires_at,
            a: "new-a".into(),
            b: "new-b".into(),
            o: None,
            m: one_entry(),
        }
    }
}

impl Probe for RequiredDefault {
    fn fresh(id: String, _: DateTime<Utc>) -> Self {
        Self {
            id,
            a: "new-a".into(),
            b: "new-b".into(),
            o: None,
            h: Some("hot".into()),
            m: one_entry(),
        }
    }
}

impl Probe for OptionalSecond {
    fn fresh(id: String, expires_at: DateTime<Utc>) -> Self {
        Self {
            id,
            expires_at,
            o: None,
            p: None,
            m: one_entry(),
        }
    }
}

impl Probe for OptionalDefault {
    fn fresh(id: String, _: DateTime<Utc>) -> Self {
        Self {
            id,
            o: Some("new".into()),
            p: None,
            m: BTreeMap::new(),
        }
    }
}

impl Probe for CountedSecond {
    fn fresh(id: String, expires_at: DateTime<Utc>) -> Self {
        Self {
            id,
            expires_at,
            n: 7,
            o: None,
            d: String::new(),
            m: one_entry(),
        }
    }
}

const MILLI: i64 = 1_000;

/// One stored cell as generated: where, its expiry relative to "now" (in
/// whole milliseconds after "now" truncated to the millisecond: `0` has
/// just expired, `1` is live for one more millisecond), its value.
#[derive(Clone, PartialEq, Eq)]
struct StoredCell {
    family: &'static str,
    qualifier: Vec<u8>,
    expires_in_ms: i64,
    value: Vec<u8>,
}

impl fmt::Debug for StoredCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} expires {:+} ms = {:?}",
            self.family,
            self.qualifier.escape_ascii(),
            self.expires_in_ms,
            self.value.escape_ascii().to_string()
        )
    }
}

impl StoredCell {
    /// Visible at a "now" whose millisecond is the one expiries count from.
    fn visible(&self) -> bool {
        self.expires_in_ms > 0
    }

    /// Its timestamp under `policy`, "now" being `now_ms` (µs, a whole
    /// millisecond): the expiry itself, or the expiry less the default TTL.
    fn timestamp(&self, policy: Policy, now_ms: i64) -> i64 {
        let expiry = now_ms + self.expires_in_ms * MILLI;
        match policy {
            Policy::CellExpiry => expiry,
            Policy::DefaultTtl { ttl } => expiry - ttl.num_microseconds().unwrap(),
        }
    }
}

/// Expiries of the main properties: each side of "now" by one millisecond,
/// "now" itself, a few seconds either way, ten minutes either way.
fn expiry_anywhere() -> BoxedStrategy<i64> {
    prop_oneof![
        2 => Just(0i64),
        2 => Just(-1i64),
        2 => Just(1i64),
        4 => -3_000i64..3_000,
        1 => Just(-600_000i64),
        1 => Just(600_000i64),
    ]
    .boxed()
}

/// Expiries of the collection property: expired (the emulator collects
/// them within seconds) or live well past the property's end (never
/// collected while it runs, although "now" stays where it was).
fn expiry_collectable_or_lasting() -> BoxedStrategy<i64> {
    prop_oneof![
        1 => Just(0i64),
        2 => -600_000i64..0,
        4 => 120_000i64..600_000,
    ]
    .boxed()
}

fn text() -> BoxedStrategy<Vec<u8>> {
    "[a-z]{0,3}".prop_map(String::into_bytes).boxed()
}

fn counter_value() -> BoxedStrategy<Vec<u8>> {
    (-3i64..100).prop_map(|n| n.to_be_bytes().to_vec()).boxed()
}

fn instant_value() -> BoxedStrategy<Vec<u8>> {
    (1_600_000_000_000i64..1_900_000_000_000)
        .prop_map(|ms| {
            DateTime::<Utc>::from_timestamp_millis(ms)
                .unwrap()
                .encode()
                .unwrap()
        })
        .boxed()
}

/// Versions of one column (as many as `counts` says, fewer when two fall
/// on one expiry), at distinct expiries.
fn versions(
    family: &'static str,
    qualifier: Vec<u8>,
    counts: std::ops::RangeInclusive<usize>,
    expiry: &BoxedStrategy<i64>,
    value: fn() -> BoxedStrategy<Vec<u8>>,
) -> BoxedStrategy<Vec<StoredCell>> {
    prop::collection::vec((expiry.clone(), value()), counts)
        .prop_map(move |mut versions| {
            versions.sort_by_key(|(expires, _)| *expires);
            versions.dedup_by_key(|(expires, _)| *expires);
            versions
                .into_iter()
                .map(|(expires_in_ms, value)| StoredCell {
                    family,
                    qualifier: qualifier.clone(),
                    expires_in_ms,
                    value,
                })
                .collect()
        })
        .boxed()
}

/// The cells of one row of `schema`: each declared column, the row marker
/// (the struct's, another struct's and the legacy one), the shadow column,
/// a counter's window mark, map entries, and cells of
/// columns the struct does not declare (one named like a declared column
/// with a byte more, so that a column is known to be selected exactly).
///
/// Each cell expires as `expiry` says, or, one time in two, at one
/// expiry drawn for the whole row: a row as this library writes it (every
/// cell at the row's timestamp), then changed cell by cell.
fn stored_row(
    schema: &'static Schema,
    expiry: fn() -> BoxedStrategy<i64>,
) -> BoxedStrategy<Vec<StoredCell>> {
    expiry()
        .prop_flat_map(move |row| {
            let expiry = prop_oneof![Just(row), expiry()].boxed();
            row_cells(schema, &expiry)
        })
        .boxed()
}

fn row_cells(
    schema: &'static Schema,
    expiry: &BoxedStrategy<i64>,
) -> BoxedStrategy<Vec<StoredCell>> {
    let main = schema.families[0];
    let mut parts: Vec<BoxedStrategy<Vec<StoredCell>>> = Vec::new();
    for column in schema.columns {
        let qualifier = column.qualifier.as_bytes().to_vec();
        if column.when_absent == WhenAbsent::ReadsZero {
            parts.push(versions(
                column.family,
                qualifier,
                0..=2,
                expiry,
                counter_value,
            ));
            let mark = [&[0u8][..], column.qualifier.as_bytes()].concat();
            parts.push(versions(column.family, mark, 0..=1, expiry, || {
                Just(0i64.to_be_bytes().to_vec()).boxed()
            }));
        } else {
            parts.push(versions(column.family, qualifier, 0..=2, expiry, text));
        }
    }
    parts.push(versions(
        main,
        schema.marker.to_vec(),
        0..=2,
        expiry,
        || Just(Vec::new()).boxed(),
    ));
    // Markers no struct here owns: another struct's sharing the family and
    // the row (which makes the row not this struct's, unless it carries
    // this struct's marker too), and the one-byte marker of earlier
    // versions (which counts only for a struct owning its family, and may
    // change no verdict here).
    for foreign in [
        bigtable_ttl::row_marker("Other"),
        LEGACY_ROW_MARKER.to_vec(),
    ] {
        parts.push(versions(main, foreign, 0..=1, expiry, || {
            Just(Vec::new()).boxed()
        }));
    }
    if let Some(shadow) = schema.written_at {
        parts.push(versions(
            shadow.family,
            shadow.qualifier.as_bytes().to_vec(),
            0..=2,
            expiry,
            instant_value,
        ));
    }
    for map in schema.maps {
        let family = map.family;
        let expiry = expiry.clone();
        parts.push(
            prop::collection::btree_set("[a-c]", 0..=3)
                .prop_flat_map(move |keys| {
                    keys.into_iter()
                        .map(|key| versions(family, key.into_bytes(), 1..=2, &expiry, text))
                        .collect::<Vec<_>>()
                })
                .prop_map(|entries| entries.into_iter().flatten().collect())
                .boxed(),
        );
    }
    let near_miss = [schema.columns[0].qualifier.as_bytes(), b"x"].concat();
    for qualifier in [b"zz".to_vec(), near_miss] {
        parts.push(versions(main, qualifier, 0..=1, expiry, text));
    }
    parts
        .prop_map(|parts| parts.into_iter().flatten().collect())
        .boxed()
}

/// `(family, qualifier, value)` of cells.
type CellSet = BTreeSet<(String, Vec<u8>, Vec<u8>)>;

/// What a row of these cells is at "now", by the rule as
/// `model::liveness` documents it.
#[derive(Debug, Clone, PartialEq)]
enum Rule {
    Live {
        /// `(family, qualifier, value)` of what a put of the value read
        /// back writes: each column's newest visible cell (a counter with
        /// none reads 0, a default field its default), each map's visible
        /// entries.
        cells: CellSet,
        expires_at: DateTime<Utc>,
        written_at: Option<DateTime<Utc>>,
    },
    /// Not live, and nothing proves there is a row: absent to reads and
    /// conditions alike.
    Absent,
    /// Not live, yet present: some required column (or the struct's marker
    /// with a row that has not expired) is visible while required column
    /// `column` (`family:qualifier`, the first in declaration order) holds
    /// no cell at all, and no stored cell proves the row expired. Reads
    /// say `Decode` naming the column; `insert_if_absent` never overwrites.
    Incomplete { column: String },
}

impl Rule {
    fn is_live(&self) -> bool {
        matches!(self, Rule::Live { .. })
    }

    /// Live or incomplete: what `insert_if_absent`'s predicate matches.
    fn is_present(&self) -> bool {
        !matches!(self, Rule::Absent)
    }

    fn judge(schema: &Schema, cells: &[StoredCell], now_ms: i64) -> Rule {
        let newest = |family: &str, qualifier: &[u8]| {
            cells
                .iter()
                .filter(|c| c.family == family && c.qualifier == qualifier && c.visible())
                .max_by_key(|c| c.expires_in_ms)
        };
        let stored = |family: &str, qualifier: &[u8]| {
            cells
                .iter()
                .any(|c| c.family == family && c.qualifier == qualifier)
        };
        let expiry = |c: &StoredCell| now_ms + c.expires_in_ms * MILLI;
        let columns: Vec<Option<&StoredCell>> = schema
            .columns
            .iter()
            .map(|c| newest(c.family, c.qualifier.as_bytes()))
            .collect();
        let marker = newest(schema.families[0], schema.marker);
        // Another struct's marker and not this struct's: not its row,
        // whatever else the row holds.
        let foreign = newest(schema.families[0], &bigtable_ttl::row_marker("Other")).is_some();
        if marker.is_none() && foreign {
            return Rule::Absent;
        }
        let shadow = schema
            .written_at
            .and_then(|s| newest(s.family, s.qualifier.as_bytes()));
        let entries: Vec<&StoredCell> = schema
            .maps
            .iter()
            .flat_map(|m| {
                let mut keys: Vec<&[u8]> = cells
                    .iter()
                    .filter(|c| c.family == m.family)
                    .map(|c| c.qualifier.as_slice())
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                keys.into_iter()
                    .filter_map(|k| newest(m.family, k))
                    .collect::<Vec<_>>()
            })
            .collect();

        let required: Vec<usize> = (0..schema.columns.len())
            .filter(|&i| schema.columns[i].when_absent == WhenAbsent::Required)
            .collect();
        let expires_micros = if required.is_empty() {
            let all_options = schema
                .columns
                .iter()
                .all(|c| c.when_absent == WhenAbsent::ReadsNone);
            let options_and_defaults = schema.columns.iter().all(|c| {
                matches!(
                    c.when_absent,
                    WhenAbsent::ReadsNone | WhenAbsent::ReadsDefault
                )
            });
            let own = columns
                .iter()
                .flatten()
                .copied()
                .chain(shadow)
                .chain(marker.filter(|_| options_and_defaults))
                .map(expiry)
                .max();
            let by_entries = entries
                .iter()
                .copied()
                .map(expiry)
                .max()
                .filter(|_| all_options);
            own.or(by_entries)
        } else {
            let missing: Vec<usize> = required
                .iter()
                .copied()
                .filter(|&i| columns[i].is_none())
                .collect();
            if !missing.is_empty() {
                return Rule::not_live(schema, &missing, &columns, marker, &stored);
            }
            required.iter().map(|&i| expiry(columns[i].unwrap())).min()
        };
        let Some(expires_micros) = expires_micros else {
            return Rule::Absent;
        };

        let mut read = BTreeSet::new();
        for (column, cell) in schema.columns.iter().zip(&columns) {
            let value = match (cell, column.when_absent) {
                (Some(cell), _) => cell.value.clone(),
                (None, WhenAbsent::ReadsZero) => 0i64.to_be_bytes().to_vec(),
                // The test structs' default fields are `String`s.
                (None, WhenAbsent::ReadsDefault) => Vec::new(),
                (None, _) => continue,
            };
            read.insert((column.family.to_owned(), column.qualifier.into(), value));
        }
        for entry in entries {
            read.insert((
                entry.family.to_owned(),
                entry.qualifier.clone(),
                entry.value.clone(),
            ));
        }
        Rule::Live {
            cells: read,
            expires_at: DateTime::from_timestamp_micros(expires_micros).unwrap(),
            written_at: shadow.map(|c| DateTime::<Utc>::decode(&c.value).unwrap()),
        }
    }
}

impl Rule {
    /// A row of a struct with required fields, `missing` of them without
    /// a visible cell: absent when a stored cell proves it expired (the
    /// marker's row timestamp, or a missing column's expired cell),
    /// incomplete when something of the row's own is visible, else absent.
    fn not_live(
        schema: &Schema,
        missing: &[usize],
        columns: &[Option<&StoredCell>],
        marker: Option<&StoredCell>,
        stored: &dyn Fn(&str, &[u8]) -> bool,
    ) -> Rule {
        let name = |i: usize| {
            let c = &schema.columns[i];
            (c.family, c.qualifier.as_bytes())
        };
        // The generated markers carry no value: their own timestamp is the
        // row's, and `newest` yields only visible cells.
        let proven_expired = missing.iter().any(|&i| {
            let (family, qualifier) = name(i);
            stored(family, qualifier)
        });
        let any_required_visible = schema
            .columns
            .iter()
            .zip(columns)
            .any(|(c, cell)| c.when_absent == WhenAbsent::Required && cell.is_some());
        if proven_expired || (marker.is_none() && !any_required_visible) {
            return Rule::Absent;
        }
        let (family, qualifier) = name(missing[0]);
        Rule::Incomplete {
            column: format!("{family}:{}", String::from_utf8_lossy(qualifier)),
        }
    }
}

/// `(family, qualifier, value)` of each cell a put of `value` at `now`
/// sets, but the row marker, the shadow column and window marks: what the
/// reader decoded, in the rule's terms.
fn cells_of<T: BigtableRow>(value: &T, now: DateTime<Utc>) -> (CellSet, DateTime<Utc>) {
    let m = value
        .mutation()
        .build(now)
        .expect("a value read back writes");
    let shadow = T::SCHEMA.written_at;
    let set = data::mutations_of(&m)
        .into_iter()
        .filter_map(|m| match m {
            data::Mutation::SetCell {
                family,
                qualifier,
                value,
                ..
            } => Some((family, qualifier, value)),
            _ => None,
        })
        .filter(|(family, qualifier, _)| {
            let is_map = T::SCHEMA.maps.iter().any(|m| m.family == *family);
            let reserved = !is_map && qualifier.first() == Some(&0);
            let is_shadow =
                shadow.is_some_and(|s| s.family == *family && s.qualifier.as_bytes() == *qualifier);
            !reserved && !is_shadow
        })
        .collect();
    (set, m.expires_at)
}

/// One struct's table, "now", and the predicate `insert_if_absent` sends
/// at that "now".
struct Bench<T: Probe> {
    table: Table<T>,
    clock: Clock,
    /// Keeps the proxy the predicate was recorded through alive.
    _recorder: Recorder,
    predicate: RowFilter,
    next: AtomicUsize,
    /// Rows judged live, absent, incomplete (a `Decode` error); rows of
    /// the collection property read as absent before collection and as a
    /// `Decode` error after (a required column's expired cell, the proof,
    /// collected).
    tally: [AtomicUsize; 4],
}

impl<T: Probe> Bench<T> {
    async fn new(now: DateTime<Utc>) -> Self {
        let clock = Clock::manual(now);
        let table = support::table::<T>(&clock).await;
        let recorder = Recorder::start(&support::emulator_host()).await;
        let conn = table.connection();
        let recorded = Table::<T>::new(
            bigtable_ttl::Connection::emulator(&recorder.host(), conn.project(), conn.instance())
                .unwrap(),
        )
        .with_clock(clock.clone());
        recorded
            .insert_if_absent(&T::fresh("~probe".into(), now + TimeDelta::hours(1)))
            .await
            .unwrap();
        let seen = recorder.seen();
        let body = &seen
            .iter()
            .rev()
            .find(|s| s.path.ends_with("/CheckAndMutateRow"))
            .expect("insert_if_absent sends a CheckAndMutateRow")
            .body;
        let request = CheckAndMutateRowRequest::decode(&body[5..]).unwrap();
        assert!(request.true_mutations.is_empty() && !request.false_mutations.is_empty());
        table.delete(&"~probe".to_owned()).await.unwrap();
        Self {
            table,
            clock,
            _recorder: recorder,
            predicate: convert::row_filter(request.predicate_filter.unwrap()).unwrap(),
            next: AtomicUsize::new(0),
            tally: Default::default(),
        }
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// "now" truncated to the millisecond, in µs.
    fn now_ms(&self) -> i64 {
        let micros = self.now().timestamp_micros();
        micros - micros % MILLI
    }

    fn tally(&self) -> String {
        let [live, not, decode, became] = self.tally.each_ref().map(|t| t.load(Ordering::Relaxed));
        format!(
            "{live} live, {not} absent, {decode} incomplete (a Decode error); \
             {became} absent before collection, a Decode error after"
        )
    }

    fn next_key(&self) -> String {
        format!("row-{:05}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    async fn write(&self, key: &str, cells: &[StoredCell]) {
        if cells.is_empty() {
            return;
        }
        let now_ms = self.now_ms();
        let mutations = cells
            .iter()
            .map(|c| {
                data::Mutation::set_cell(
                    c.family.to_owned(),
                    c.qualifier.clone(),
                    c.timestamp(T::SCHEMA.policy, now_ms),
                    c.value.clone(),
                )
            })
            .collect();
        self.raw().mutate_row(key, mutations).await.unwrap();
    }

    fn raw(&self) -> RawTable {
        RawTable::new(self.table.connection(), self.table.name())
    }

    /// The emulator's verdict on `insert_if_absent`'s predicate for row
    /// `key` (a row live or incomplete is present); the mutation deletes a
    /// column that holds nothing.
    async fn server_says_present(&self, key: &str) -> bool {
        let harmless = data::Mutation::delete_from_column(T::SCHEMA.families[0], "never-written");
        self.raw()
            .check_and_mutate_row(
                key,
                Some(self.predicate.clone()),
                vec![harmless],
                Vec::new(),
            )
            .await
            .unwrap()
    }

    /// The server's verdict and the reader's must agree with `rule`; the
    /// reader's row is returned.
    async fn judge(
        &self,
        key: &str,
        rule: &Rule,
        context: &str,
    ) -> Result<Option<Expiring<T>>, TestCaseError> {
        let server = self.server_says_present(key).await;
        prop_assert_eq!(
            server,
            rule.is_present(),
            "the server's predicate ({}); rule: {:?}",
            context,
            rule
        );
        let read = self.table.get(&key.to_owned()).await;
        match (rule, read) {
            (
                Rule::Live {
                    cells,
                    expires_at,
                    written_at,
                },
                Ok(Some(row)),
            ) => {
                prop_assert_eq!(row.expires_at, *expires_at, "expiry read ({})", context);
                prop_assert_eq!(row.written_at, *written_at, "written_at read ({})", context);
                let (read, declared) = cells_of(&row.value, self.now());
                prop_assert_eq!(&read, cells, "value read ({}): {:?}", context, row.value);
                if T::SCHEMA.policy == Policy::CellExpiry {
                    prop_assert_eq!(declared, *expires_at, "the expire_at field ({})", context);
                }
                self.tally[0].fetch_add(1, Ordering::Relaxed);
                Ok(Some(row))
            }
            (Rule::Absent, Ok(None)) => {
                self.tally[1].fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
            (Rule::Incomplete { column: missing }, Err(Error::Decode(e)))
                if e.source == CodecError::Missing && *missing == e.column =>
            {
                self.tally[2].fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
            (rule, read) => Err(TestCaseError::fail(format!(
                "the reader ({context}) read {read:?}; rule: {rule:?}"
            ))),
        }
    }

    /// `insert_if_absent` at "now" wins exactly when the row is absent
    /// then (`rule`), and then the row is what it wrote,
    /// nothing older; over a row incomplete there it writes nothing and
    /// says `Decode`, as a read does.
    async fn insert(
        &self,
        key: &str,
        rule: &Rule,
        read: Option<Expiring<T>>,
    ) -> Result<(), TestCaseError> {
        let fresh = T::fresh(
            key.to_owned(),
            DateTime::from_timestamp_micros(self.now_ms()).unwrap() + TimeDelta::hours(1),
        );
        match self.table.insert_if_absent(&fresh).await {
            Ok(Insert::Exists(row)) => {
                prop_assert!(
                    rule.is_live(),
                    "insert_if_absent found a live row {:?}; rule: {:?}",
                    row,
                    rule
                );
                prop_assert_eq!(Some(row), read, "insert_if_absent returns the row read");
            }
            Ok(Insert::Inserted(written)) => {
                prop_assert!(
                    !rule.is_present(),
                    "insert_if_absent won over a live or incomplete row; rule: {:?}",
                    rule
                );
                let back = self.table.get(&key.to_owned()).await.unwrap();
                let back = back.expect("the inserted row reads back");
                prop_assert_eq!(&back.value, &fresh, "only what the insert wrote");
                prop_assert_eq!(back.expires_at, written.expires_at);
            }
            Err(Error::Decode(e))
                if e.source == CodecError::Missing
                    && matches!(rule, Rule::Incomplete { column: c } if *c == e.column) =>
            {
                let after = self.table.get(&key.to_owned()).await;
                prop_assert!(
                    matches!(after, Err(Error::Decode { .. })),
                    "an insert over an incomplete row changed it: {:?}",
                    after
                );
            }
            Err(e) => prop_assert!(false, "insert_if_absent failed: {e}; rule: {:?}", rule),
        }
        Ok(())
    }

    /// One case of the main property.
    async fn case(&self, cells: &[StoredCell]) -> Result<(), TestCaseError> {
        let key = self.next_key();
        self.write(&key, cells).await;
        let rule = Rule::judge(T::SCHEMA, cells, self.now_ms());
        let read = self.judge(&key, &rule, "stored").await?;
        self.insert(&key, &rule, read).await
    }

    /// One case of the collection property: a batch of rows judged, then
    /// judged again once the emulator has collected their expired cells.
    async fn collected_case(&self, rows: &[Vec<StoredCell>]) -> Result<(), TestCaseError> {
        let now_ms = self.now_ms();
        let mut judged = Vec::new();
        for cells in rows {
            let key = self.next_key();
            self.write(&key, cells).await;
            let rule = Rule::judge(T::SCHEMA, cells, now_ms);
            let errors = self.tally[2].load(Ordering::Relaxed);
            let read = self.judge(&key, &rule, "before collection").await?;
            let was_error = self.tally[2].load(Ordering::Relaxed) > errors;
            judged.push((key, cells, rule, read, was_error));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for (key, cells, ..) in &judged {
            let expired = cells.iter().filter(|c| !c.visible()).count();
            let kept = cells.len() - expired;
            loop {
                let stored = support::stored_cells(&self.table, key.as_str()).await.len();
                if stored == kept {
                    break;
                }
                prop_assert!(
                    stored > kept,
                    "{} cells of {} stored, {} of them live: a live one was collected",
                    stored,
                    cells.len(),
                    kept
                );
                prop_assert!(
                    Instant::now() < deadline,
                    "the emulator kept expired cells 30 s: {} stored, {} live",
                    stored,
                    kept
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        for (key, cells, before, read, was_error) in &judged {
            let left: Vec<StoredCell> = cells.iter().filter(|c| c.visible()).cloned().collect();
            let after = Rule::judge(T::SCHEMA, &left, now_ms);
            // Only what the rule says of cells no longer stored may change
            // (a required column may now hold no cell at all).
            match (before, &after) {
                (
                    Rule::Absent | Rule::Incomplete { .. },
                    Rule::Absent | Rule::Incomplete { .. },
                ) => {}
                (before, after) => prop_assert_eq!(before, after, "the rule on the cells left"),
            }
            let errors = self.tally[2].load(Ordering::Relaxed);
            let again = self.judge(key, &after, "after collection").await?;
            if !*was_error && self.tally[2].load(Ordering::Relaxed) > errors {
                // A row whose required column's only cells expired: proven
                // expired while they were stored, incomplete once they are
                // not (nothing left proves it).
                self.tally[3].fetch_add(1, Ordering::Relaxed);
            }
            prop_assert_eq!(&again, read, "read before and after collection");
            self.insert(key, &after, again).await?;
        }
        Ok(())
    }
}

/// `PROPTEST_CASES`, or `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn report<V: fmt::Debug>(result: Result<(), TestError<V>>) {
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The whole-millisecond real now, plus `ahead`, plus 0.537 ms (so that
/// "now" is never itself a whole millisecond).
fn now_plus(ahead: TimeDelta) -> DateTime<Utc> {
    let ms = Utc::now().timestamp_millis();
    DateTime::from_timestamp_millis(ms).unwrap() + ahead + TimeDelta::microseconds(537)
}

fn agree<T: Probe>() {
    let rt = runtime();
    // An hour ahead of the real time: nothing written is collected meanwhile.
    let bench = rt.block_on(Bench::<T>::new(now_plus(TimeDelta::hours(1))));
    let started = Instant::now();
    let cases = cases(128);
    report(
        runner(cases).run(&stored_row(T::SCHEMA, expiry_anywhere), |cells| {
            rt.block_on(bench.case(&cells))
        }),
    );
    println!(
        "{}: {cases} cases in {:?}: {}",
        T::SCHEMA.table,
        started.elapsed(),
        bench.tally()
    );
}

fn collection_changes_nothing<T: Probe>() {
    let rt = runtime();
    let bench = rt.block_on(Bench::<T>::new(now_plus(TimeDelta::zero())));
    let started = Instant::now();
    let cases = (cases(128) / 32).max(2);
    let rows = prop::collection::vec(stored_row(T::SCHEMA, expiry_collectable_or_lasting), 1..=6);
    report(runner(cases).run(&rows, |rows| rt.block_on(bench.collected_case(&rows))));
    println!(
        "{}: {cases} batches in {:?}: {}",
        T::SCHEMA.table,
        started.elapsed(),
        bench.tally()
    );
}

#[test]
fn required_fields_one_second() {
    agree::<RequiredSecond>();
}

#[test]
fn required_fields_default_ttl() {
    agree::<RequiredDefault>();
}

#[test]
fn optional_fields_one_second() {
    agree::<OptionalSecond>();
}

#[test]
fn optional_fields_default_ttl() {
    agree::<OptionalDefault>();
}

#[test]
fn counter_one_second() {
    agree::<CountedSecond>();
}

#[test]
fn collection_changes_no_verdict_required_one_second() {
    collection_changes_nothing::<RequiredSecond>();
}

#[test]
fn collection_changes_no_verdict_optional_default_ttl() {
    collection_changes_nothing::<OptionalDefault>();
}

#[test]
fn collection_changes_no_verdict_counter() {
    collection_changes_nothing::<CountedSecond>();
}
