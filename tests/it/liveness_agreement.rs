//! The typed reader and `insert_if_absent`'s predicate agree on real
//! cells, against Google's Bigtable emulator.
//!
//! Both follow one rule written once (`ttl-runtime`'s
//! `model::liveness::present`, a formula over facts of a row): the
//! predicate is that formula compiled into a `RowFilter`
//! (`model::condition::compile`), and a pure test there checks the formula
//! against the reader's `verdict` and `settle` on every combination of
//! facts for every schema of up to three columns. What no pure test can
//! check, and this one does, is the part each side does alone on stored
//! cells:
//!
//! * **the server**: how the emulator evaluates each fact's filter
//!   (visibility at "now" to the millisecond under both TTL strategies,
//!   the newest version of a column, the marker's value carrying the row's
//!   timestamp, other structs' markers found by column range, columns
//!   selected by exact name). The predicate `insert_if_absent` sends is
//!   recorded on its way to the emulator by a proxy (it is not public) and
//!   replayed in a `CheckAndMutateRow` whose only mutation deletes a column
//!   that holds nothing; its `predicate_matched` says the row is present;
//! * **the reader**: `Table::get` at a manual clock reads the facts off the
//!   cells it is sent, and settles a partial row by one more look at the
//!   stored cells: `Some` is live, `None` absent, `Error::Decode` naming a
//!   required column incomplete;
//! * **the writer**: `insert_if_absent` at that clock, `Inserted` exactly
//!   when the reader found the row absent (and then the row holds only
//!   what it wrote), `Exists` with the row read when it was live, nothing
//!   written and `Error::Decode` when it was incomplete;
//!
//! all at "now" (an insert judges the row when it is sent: a row live then
//! wins, however soon it expires). The server must call present exactly
//! the rows the reader finds live or incomplete. What a live row reads as
//! (its values, its expiry) is the reader's own, checked by the tests of
//! reads, not here.
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

use std::collections::BTreeMap;
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

/// What the typed reader says of a row at "now".
#[derive(Debug, Clone, PartialEq)]
enum Read<T> {
    Live(Expiring<T>),
    Absent,
    /// `Error::Decode` naming required column `column`, which holds no cell.
    Incomplete {
        column: String,
    },
}

impl<T> Read<T> {
    /// Live or incomplete: what `insert_if_absent`'s predicate must match.
    fn is_present(&self) -> bool {
        !matches!(self, Read::Absent)
    }
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

    /// What the reader says of row `key`, which must be what the server's
    /// predicate says: present exactly when the reader finds it live or
    /// incomplete.
    async fn judge(&self, key: &str, context: &str) -> Result<Read<T>, TestCaseError> {
        let read = match self.table.get(&key.to_owned()).await {
            Ok(Some(row)) => Read::Live(row),
            Ok(None) => Read::Absent,
            Err(Error::Decode(e)) if e.source == CodecError::Missing => {
                Read::Incomplete { column: e.column }
            }
            Err(e) => return Err(TestCaseError::fail(format!("the reader ({context}): {e}"))),
        };
        let server = self.server_says_present(key).await;
        prop_assert_eq!(
            server,
            read.is_present(),
            "the server's predicate ({}) against the reader: {:?}",
            context,
            read
        );
        let slot = match read {
            Read::Live(_) => 0,
            Read::Absent => 1,
            Read::Incomplete { .. } => 2,
        };
        self.tally[slot].fetch_add(1, Ordering::Relaxed);
        Ok(read)
    }

    /// `insert_if_absent` at "now" wins exactly when the reader found the
    /// row absent, and then the row is what it wrote, nothing older;
    /// over a live row it returns the row read; over an incomplete row it
    /// writes nothing and says `Decode`, as a read does.
    async fn insert(&self, key: &str, read: Read<T>) -> Result<(), TestCaseError> {
        let fresh = T::fresh(
            key.to_owned(),
            DateTime::from_timestamp_micros(self.now_ms()).unwrap() + TimeDelta::hours(1),
        );
        match (self.table.insert_if_absent(&fresh).await, read) {
            (Ok(Insert::Exists(row)), Read::Live(read)) => {
                prop_assert_eq!(row, read, "insert_if_absent returns the row read");
            }
            (Ok(Insert::Inserted(written)), Read::Absent) => {
                let back = self.table.get(&key.to_owned()).await.unwrap();
                let back = back.expect("the inserted row reads back");
                prop_assert_eq!(&back.value, &fresh, "only what the insert wrote");
                prop_assert_eq!(back.expires_at, written.expires_at);
            }
            (Err(Error::Decode(e)), Read::Incomplete { column })
                if e.source == CodecError::Missing && e.column == column =>
            {
                let after = self.table.get(&key.to_owned()).await;
                prop_assert!(
                    matches!(after, Err(Error::Decode { .. })),
                    "an insert over an incomplete row changed it: {:?}",
                    after
                );
            }
            (insert, read) => prop_assert!(
                false,
                "insert_if_absent: {:?}; the reader: {:?}",
                insert,
                read
            ),
        }
        Ok(())
    }

    /// One case of the main property.
    async fn case(&self, cells: &[StoredCell]) -> Result<(), TestCaseError> {
        let key = self.next_key();
        self.write(&key, cells).await;
        let read = self.judge(&key, "stored").await?;
        self.insert(&key, read).await
    }

    /// One case of the collection property: a batch of rows judged, then
    /// judged again once the emulator has collected their expired cells.
    async fn collected_case(&self, rows: &[Vec<StoredCell>]) -> Result<(), TestCaseError> {
        let mut judged = Vec::new();
        for cells in rows {
            let key = self.next_key();
            self.write(&key, cells).await;
            let read = self.judge(&key, "before collection").await?;
            judged.push((key, cells, read));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for (key, cells, _) in &judged {
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
        for (key, _, before) in judged {
            let after = self.judge(&key, "after collection").await?;
            match (&before, &after) {
                // A row whose required column's only cells expired: proven
                // expired while they were stored, incomplete once they are
                // not (nothing left proves it).
                (Read::Absent, Read::Incomplete { .. }) => {
                    self.tally[3].fetch_add(1, Ordering::Relaxed);
                }
                (before, after) => {
                    prop_assert_eq!(before, after, "read before and after collection");
                }
            }
            self.insert(&key, after).await?;
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
