//! One table, one column family, many writers: a stateful property test on
//! Google's Bigtable emulator, against a model of the cells stored and of
//! what each struct makes of them.
//!
//! The family `f` of table `shared` holds, at once:
//!
//! * a **vertical split**: `Core` (two required fields, an `Option`, a map
//!   in a family of its own, as maps must be) and `Stats` (a counter and an
//!   `Option`, no required field) under the same `acct` keys;
//! * a **second entity type** under other keys (`person`), in **three
//!   versions** of one struct sharing its marker through its name: `v1`
//!   (`full`), `v2` (`full`, `email` without a default: a v1 row is
//!   incomplete to it) and `v2b` (`email` with `#[bigtable(default)]`);
//! * **another client** writing raw cells (no marker, no deletion of older
//!   versions) into any of those columns.
//!
//! Operations: `put`, `insert_if_absent`, `update` (set, clear), `touch`,
//! `delete`, `put_entry` by each struct, raw writes, and two kinds of wait:
//! the table's manual clock moved forward (expiry without garbage
//! collection) and real sleeps (the emulator collects one-second families
//! by its own wall clock every 0.5 to 1.5 s, so cells vanish while a
//! sequence runs). The clock never falls behind the wall clock (each step
//! starts by moving it up to the real now), so collection only ever removes
//! cells the clock says have expired, and every call's "now" is known
//! exactly: no outcome is left to timing but collection, which the test
//! watches (below).
//!
//! After every step, every struct reads every key (`get`), and scans the
//! sequence's keys with `limit(n)` forward and reversed (skipping what
//! does not decode) and without a limit (strict). Each answer must be what
//! the model judges by the rule of `guide/rows-and-liveness.md`, written
//! out here on its own: a struct sees only its own columns and the row
//! markers its own writes stored, so a write of another struct can never
//! change its verdict; a row is live, absent, or incomplete (`get` answers
//! `Error::Decode` naming the first required column holding no cell);
//! `insert_if_absent` never overwrites an incomplete row (it answers the
//! same error, and the stored cells are checked unchanged). Conditional
//! writes that carry the row forward judge it at their horizon, `now`
//! plus one second under the default write policy; `insert_if_absent`
//! judges it at `now`, when it is sent.
//!
//! The model also predicts the cells each write stores; after every step
//! the stored cells are read raw and compared with it: every stored cell
//! must be one the model holds, and every cell the model holds that is not
//! stored must have expired (collected). Reads that ran while collection
//! removed a cell may see the row either way, so each is checked against
//! the cells stored just before and just after them.
//!
//! A hand-rolled operation sequence rather than `proptest-state-machine`
//! (not a dependency): every operation is valid in every state, so there
//! are no preconditions to keep while shrinking. `PROPTEST_CASES` sets the
//! number of cases, without the minute's budget.

use crate::raw_rows::RawRows as _;
use crate::support;
use support::model_check::{self, ensure, read_agrees, scan_agrees, Step};

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bigtable_ttl::data;
use bigtable_ttl::data::RawTable;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::{BigtableRow, Clock, CodecError, Error, Expiring, Expiry, Insert, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// The account itself: required fields, an option, tags each with its own
/// expiry.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "shared", family = "f")]
struct Core {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    name: String,
    level: i64,
    note: Option<String>,
    #[bigtable(map, family = "m")]
    tags: BTreeMap<String, String>,
}

/// The same account's statistics, written by another service.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "shared", family = "f")]
struct Stats {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    #[bigtable(counter)]
    visits: i64,
    badge: Option<String>,
}

/// Versions of one struct during a rolling deploy: one marker, the
/// struct's name.
mod v1 {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "shared", family = "f")]
    pub struct Person {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub expires_at: DateTime<Utc>,
        pub full: String,
    }
}

mod v2 {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "shared", family = "f")]
    pub struct Person {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub expires_at: DateTime<Utc>,
        pub full: String,
        pub email: String,
    }
}

mod v2b {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "shared", family = "f")]
    pub struct Person {
        #[bigtable(key)]
        pub id: String,
        #[ttl(expire_at)]
        pub expires_at: DateTime<Utc>,
        pub full: String,
        #[bigtable(default)]
        pub email: String,
    }
}

/// The family every struct shares, and Core's map family.
const F: &str = "f";
const M: &str = "m";

/// Which struct an operation or a read is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Core,
    Stats,
    P1,
    P2,
    P2b,
}

const ALL: [Who; 5] = [Who::Core, Who::Stats, Who::P1, Who::P2, Who::P2b];

/// Whose row markers a struct may judge its rows by: its own, and for
/// versions of one struct, every version's. The model keeps, for every
/// marker cell, which group wrote it: the rule says structs never judge
/// rows by each other's markers, whatever names the markers carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    Core,
    Stats,
    Person,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Required,
    Optional,
    Default,
    Counter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Str,
    I64,
}

struct Col {
    qualifier: &'static str,
    kind: Kind,
    codec: Codec,
}

const fn col(qualifier: &'static str, kind: Kind, codec: Codec) -> Col {
    Col {
        qualifier,
        kind,
        codec,
    }
}

/// What the model knows of a struct, written out here rather than taken
/// from its schema.
struct Shape {
    group: Group,
    columns: &'static [Col],
    map: bool,
}

impl Who {
    fn shape(self) -> Shape {
        use Codec::{Str, I64};
        use Kind::{Counter, Default, Optional, Required};
        const CORE: &[Col] = &[
            col("name", Required, Str),
            col("level", Required, I64),
            col("note", Optional, Str),
        ];
        const STATS: &[Col] = &[col("visits", Counter, I64), col("badge", Optional, Str)];
        const P1: &[Col] = &[col("full", Required, Str)];
        const P2: &[Col] = &[col("full", Required, Str), col("email", Required, Str)];
        const P2B: &[Col] = &[col("full", Required, Str), col("email", Default, Str)];
        let (group, columns) = match self {
            Who::Core => (Group::Core, CORE),
            Who::Stats => (Group::Stats, STATS),
            Who::P1 => (Group::Person, P1),
            Who::P2 => (Group::Person, P2),
            Who::P2b => (Group::Person, P2B),
        };
        Shape {
            group,
            columns,
            map: self == Who::Core,
        }
    }

    /// The value of the struct's row marker, as the library writes it at
    /// the row's own timestamp: the struct's fingerprint.
    fn marker_fingerprint(self) -> Vec<u8> {
        match self {
            Who::Core => Core::SCHEMA.marker_fingerprint(),
            Who::Stats => Stats::SCHEMA.marker_fingerprint(),
            Who::P1 => v1::Person::SCHEMA.marker_fingerprint(),
            Who::P2 => v2::Person::SCHEMA.marker_fingerprint(),
            Who::P2b => v2b::Person::SCHEMA.marker_fingerprint(),
        }
    }

    /// The struct's row marker qualifier, as the library writes it.
    fn marker(self) -> &'static [u8] {
        match self {
            Who::Core => Core::SCHEMA.marker,
            Who::Stats => Stats::SCHEMA.marker,
            Who::P1 => v1::Person::SCHEMA.marker,
            Who::P2 => v2::Person::SCHEMA.marker,
            Who::P2b => v2b::Person::SCHEMA.marker,
        }
    }

    /// The keys its operations go to (its entity's).
    fn keys(self) -> [usize; 2] {
        match self {
            Who::Core | Who::Stats => [0, 1],
            Who::P1 | Who::P2 | Who::P2b => [2, 3],
        }
    }
}

/// Keys of a sequence: two accounts, two persons.
const KEYS: [&str; 4] = ["acct#0", "acct#1", "person#0", "person#1"];

/// How far past its "now" a conditional write judges the row, under the
/// default write policy (see `guide/conditional-writes.md`).
const HORIZON_MS: i64 = 1_000;

/// Real sleeping per sequence, at most.
const SLEEPS_MS: u64 = 5_000;

/// What a struct makes of a row: normalised so that every struct's answer
/// and the model's compare alike.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Absent,
    /// `Error::Decode` naming this column (`f:qualifier`), missing.
    Incomplete(String),
    Live {
        /// Milliseconds since the epoch.
        expiry: i64,
        fields: Vec<(&'static str, String)>,
    },
}

impl Seen {
    fn is_live(&self) -> bool {
        matches!(self, Seen::Live { .. })
    }
}

/// What a whole-row write stores per column (`None`: deletes it), and
/// the map's entries.
type WholeRow = (
    Vec<(&'static str, Option<Vec<u8>>)>,
    Option<BTreeMap<String, String>>,
);

/// What the test needs of each struct.
trait Subject: BigtableRow<Key = String> + Clone + fmt::Debug + Send + Sync + 'static {
    const WHO: Who;
    fn build(id: &str, expires_at: DateTime<Utc>, seed: u8) -> Self;
    fn expiry_field(&self) -> DateTime<Utc>;
    /// Every field but the key and the expiry, as the model prints them.
    fn fields(&self) -> Vec<(&'static str, String)>;
    /// What a whole-row write stores per column (`None`: deletes it), and
    /// the map's entries.
    fn cells(&self) -> WholeRow;
    /// The update `Set { seed }` makes, and the column and bytes it sets.
    fn set(
        u: bigtable_ttl::Update<'_, Self>,
        seed: u8,
    ) -> (bigtable_ttl::Update<'_, Self>, &'static str, Vec<u8>);
    /// The update `Clear` makes, and the column it clears, if the struct
    /// has a field to clear.
    fn clear(
        u: bigtable_ttl::Update<'_, Self>,
    ) -> Option<(bigtable_ttl::Update<'_, Self>, &'static str)>;
}

fn s(v: &str) -> Vec<u8> {
    v.as_bytes().to_vec()
}

fn n(v: i64) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

const NAMES: [&str; 2] = ["ann", "bob"];

impl Subject for Core {
    const WHO: Who = Who::Core;

    fn build(id: &str, expires_at: DateTime<Utc>, seed: u8) -> Self {
        Core {
            id: id.to_owned(),
            expires_at,
            name: NAMES[usize::from(seed % 2)].to_owned(),
            level: i64::from(seed % 3),
            note: seed.is_multiple_of(2).then(|| "hi".to_owned()),
            tags: (!seed.is_multiple_of(3))
                .then(|| ("t".to_owned(), format!("v{seed}")))
                .into_iter()
                .collect(),
        }
    }

    fn expiry_field(&self) -> DateTime<Utc> {
        self.expires_at
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("name", format!("{:?}", self.name)),
            ("level", self.level.to_string()),
            ("note", format!("{:?}", self.note)),
            ("tags", format!("{:?}", self.tags)),
        ]
    }

    fn cells(&self) -> WholeRow {
        (
            vec![
                ("name", Some(s(&self.name))),
                ("level", Some(n(self.level))),
                ("note", self.note.as_deref().map(s)),
            ],
            Some(self.tags.clone()),
        )
    }

    fn set(
        u: bigtable_ttl::Update<'_, Self>,
        seed: u8,
    ) -> (bigtable_ttl::Update<'_, Self>, &'static str, Vec<u8>) {
        let name = format!("n{seed}");
        let bytes = s(&name);
        (u.set(Core::NAME, &name), "name", bytes)
    }

    fn clear(
        u: bigtable_ttl::Update<'_, Self>,
    ) -> Option<(bigtable_ttl::Update<'_, Self>, &'static str)> {
        Some((u.clear(Core::NOTE), "note"))
    }
}

impl Subject for Stats {
    const WHO: Who = Who::Stats;

    fn build(id: &str, expires_at: DateTime<Utc>, seed: u8) -> Self {
        Stats {
            id: id.to_owned(),
            expires_at,
            visits: i64::from(seed),
            badge: (seed % 2 == 1).then(|| "gold".to_owned()),
        }
    }

    fn expiry_field(&self) -> DateTime<Utc> {
        self.expires_at
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("visits", self.visits.to_string()),
            ("badge", format!("{:?}", self.badge)),
        ]
    }

    fn cells(&self) -> WholeRow {
        (
            vec![
                ("visits", Some(n(self.visits))),
                ("badge", self.badge.as_deref().map(s)),
            ],
            None,
        )
    }

    fn set(
        u: bigtable_ttl::Update<'_, Self>,
        seed: u8,
    ) -> (bigtable_ttl::Update<'_, Self>, &'static str, Vec<u8>) {
        let badge = format!("b{seed}");
        let bytes = s(&badge);
        (u.set(Stats::BADGE, &badge), "badge", bytes)
    }

    fn clear(
        u: bigtable_ttl::Update<'_, Self>,
    ) -> Option<(bigtable_ttl::Update<'_, Self>, &'static str)> {
        Some((u.clear(Stats::BADGE), "badge"))
    }
}

impl Subject for v1::Person {
    const WHO: Who = Who::P1;

    fn build(id: &str, expires_at: DateTime<Utc>, seed: u8) -> Self {
        v1::Person {
            id: id.to_owned(),
            expires_at,
            full: NAMES[usize::from(seed % 2)].to_owned(),
        }
    }

    fn expiry_field(&self) -> DateTime<Utc> {
        self.expires_at
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![("full", format!("{:?}", self.full))]
    }

    fn cells(&self) -> WholeRow {
        (vec![("full", Some(s(&self.full)))], None)
    }

    fn set(
        u: bigtable_ttl::Update<'_, Self>,
        seed: u8,
    ) -> (bigtable_ttl::Update<'_, Self>, &'static str, Vec<u8>) {
        let full = format!("f{seed}");
        let bytes = s(&full);
        (u.set(v1::Person::FULL, &full), "full", bytes)
    }

    fn clear(
        _: bigtable_ttl::Update<'_, Self>,
    ) -> Option<(bigtable_ttl::Update<'_, Self>, &'static str)> {
        None
    }
}

/// Versions 2 and 2b have the same fields; 2b's `email` can be cleared.
macro_rules! person_v2 {
    ($m:ident, $who:expr, $clear:expr) => {
        impl Subject for $m::Person {
            const WHO: Who = $who;

            fn build(id: &str, expires_at: DateTime<Utc>, seed: u8) -> Self {
                $m::Person {
                    id: id.to_owned(),
                    expires_at,
                    full: NAMES[usize::from(seed % 2)].to_owned(),
                    email: format!("e{seed}"),
                }
            }

            fn expiry_field(&self) -> DateTime<Utc> {
                self.expires_at
            }

            fn fields(&self) -> Vec<(&'static str, String)> {
                vec![
                    ("full", format!("{:?}", self.full)),
                    ("email", format!("{:?}", self.email)),
                ]
            }

            fn cells(&self) -> WholeRow {
                (
                    vec![
                        ("full", Some(s(&self.full))),
                        ("email", Some(s(&self.email))),
                    ],
                    None,
                )
            }

            fn set(
                u: bigtable_ttl::Update<'_, Self>,
                seed: u8,
            ) -> (bigtable_ttl::Update<'_, Self>, &'static str, Vec<u8>) {
                let email = format!("m{seed}");
                let bytes = s(&email);
                (u.set($m::Person::EMAIL, &email), "email", bytes)
            }

            fn clear(
                u: bigtable_ttl::Update<'_, Self>,
            ) -> Option<(bigtable_ttl::Update<'_, Self>, &'static str)> {
                $clear.then(|| (u.clear($m::Person::EMAIL), "email"))
            }
        }
    };
}

person_v2!(v2, Who::P2, false);
person_v2!(v2b, Who::P2b, true);

/// One step. Keys are indexes into [`KEYS`]; durations are milliseconds.
#[derive(Clone)]
enum Op {
    Put {
        who: Who,
        key: usize,
        ttl: i64,
        seed: u8,
    },
    InsertIfAbsent {
        who: Who,
        key: usize,
        ttl: i64,
        seed: u8,
    },
    Set {
        who: Who,
        key: usize,
        seed: u8,
    },
    Clear {
        who: Who,
        key: usize,
    },
    Touch {
        who: Who,
        key: usize,
        ttl: i64,
        when_less_than: i64,
    },
    Delete {
        who: Who,
        key: usize,
    },
    PutEntry {
        key: usize,
        tag: &'static str,
        seed: u8,
        ttl: i64,
    },
    /// Another client's cell: no marker, older versions kept.
    Raw {
        key: usize,
        column: &'static str,
        ttl: i64,
        seed: u8,
    },
    /// The table's clock moves on; the wall clock does not wait.
    Advance {
        ms: i64,
    },
    /// Real time passes (garbage collection runs).
    Sleep {
        ms: u64,
    },
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Put {
                who,
                key,
                ttl,
                seed,
            } => {
                write!(f, "{who:?}.put({}, seed {seed}, ttl {ttl} ms)", KEYS[*key])
            }
            Op::InsertIfAbsent {
                who,
                key,
                ttl,
                seed,
            } => write!(
                f,
                "{who:?}.insert_if_absent({}, seed {seed}, ttl {ttl} ms)",
                KEYS[*key]
            ),
            Op::Set { who, key, seed } => {
                write!(f, "{who:?}.update({}).set(seed {seed})", KEYS[*key])
            }
            Op::Clear { who, key } => write!(f, "{who:?}.update({}).clear()", KEYS[*key]),
            Op::Touch {
                who,
                key,
                ttl,
                when_less_than,
            } => write!(
                f,
                "{who:?}.touch({}, ttl {ttl} ms, when less than {when_less_than} ms)",
                KEYS[*key]
            ),
            Op::Delete { who, key } => write!(f, "{who:?}.delete({})", KEYS[*key]),
            Op::PutEntry {
                key,
                tag,
                seed,
                ttl,
            } => write!(
                f,
                "Core.put_entry({}, {tag}=e{seed}, ttl {ttl} ms)",
                KEYS[*key]
            ),
            Op::Raw {
                key,
                column,
                ttl,
                seed,
            } => write!(
                f,
                "raw {}: f:{column} (seed {seed}) ttl {ttl} ms",
                KEYS[*key]
            ),
            Op::Advance { ms } => write!(f, "clock + {ms} ms"),
            Op::Sleep { ms } => write!(f, "sleep {ms} ms"),
        }
    }
}

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![3 => Just(Who::Core), 3 => Just(Who::Stats), 2 => Just(Who::P1), 2 => Just(Who::P2), 2 => Just(Who::P2b)]
}

/// A struct and one of its entity's keys, mostly the first.
fn who_key() -> impl Strategy<Value = (Who, usize)> {
    (who(), prop_oneof![3 => Just(0), 1 => Just(1)]).prop_map(|(w, i)| (w, w.keys()[i]))
}

fn ttl() -> impl Strategy<Value = i64> {
    1_000i64..=4_000
}

fn seed() -> impl Strategy<Value = u8> {
    0u8..6
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (who_key(), ttl(), seed()).prop_map(|((who, key), ttl, seed)| Op::Put { who, key, ttl, seed }),
        4 => (who_key(), ttl(), seed())
            .prop_map(|((who, key), ttl, seed)| Op::InsertIfAbsent { who, key, ttl, seed }),
        2 => (who_key(), seed()).prop_map(|((who, key), seed)| Op::Set { who, key, seed }),
        1 => who_key().prop_map(|(who, key)| match who {
            Who::P1 | Who::P2 => Op::Clear { who: Who::P2b, key },
            _ => Op::Clear { who, key },
        }),
        2 => (who_key(), ttl(), 500i64..=4_000).prop_map(|((who, key), ttl, when_less_than)| {
            Op::Touch { who, key, ttl, when_less_than }
        }),
        1 => who_key().prop_map(|(who, key)| Op::Delete { who, key }),
        2 => (0usize..2, prop::sample::select(&["t", "u"][..]), seed(), 500i64..=6_000)
            .prop_map(|(key, tag, seed, ttl)| Op::PutEntry { key, tag, seed, ttl }),
        4 => (0usize..4, 0usize..4, 200i64..=4_000, seed()).prop_map(|(key, c, ttl, seed)| {
            let column = if key < 2 {
                ["name", "level", "badge", "visits"][c]
            } else {
                ["full", "email", "full", "email"][c]
            };
            Op::Raw { key, column, ttl, seed }
        }),
        2 => (100i64..=2_000).prop_map(|ms| Op::Advance { ms }),
        3 => (300u64..=2_000).prop_map(|ms| Op::Sleep { ms }),
    ]
}

fn sequence() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..=20)
}

/// The bytes another client writes into `column`.
fn raw_value(column: &str, seed: u8) -> Vec<u8> {
    match column {
        "level" | "visits" => n(i64::from(seed)),
        _ => s(&format!("r{seed}")),
    }
}

/// One cell as the model holds it: its value and, for a row marker, the
/// group whose write stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cell {
    value: Vec<u8>,
    writer: Option<Group>,
}

/// A row's cells: by (family, qualifier), by timestamp (µs).
type Cells = BTreeMap<(String, Vec<u8>), BTreeMap<i64, Cell>>;

fn at(family: &str, qualifier: &[u8]) -> (String, Vec<u8>) {
    (family.to_owned(), qualifier.to_vec())
}

fn decode(codec: Codec, bytes: &[u8]) -> String {
    match codec {
        Codec::Str => format!("{:?}", String::from_utf8_lossy(bytes)),
        Codec::I64 => <[u8; 8]>::try_from(bytes).map_or_else(
            |_| format!("bad {bytes:?}"),
            |b| i64::from_be_bytes(b).to_string(),
        ),
    }
}

/// The newest cell of a column, and whether it is visible at `now` (ms).
fn newest<'c>(
    cells: &'c Cells,
    family: &str,
    qualifier: &[u8],
    now: i64,
) -> Option<(i64, &'c Cell, bool)> {
    let (ts, cell) = cells.get(&at(family, qualifier))?.iter().next_back()?;
    Some((*ts, cell, *ts > now * 1_000))
}

/// What `who` makes of a row holding `cells` at `now` (ms): the rule of
/// `guide/rows-and-liveness.md`, by the struct's own columns and the
/// markers its own group wrote.
fn judge(who: Who, cells: &Cells, now: i64) -> Seen {
    let shape = who.shape();
    let visible = |q: &str| newest(cells, F, q.as_bytes(), now).filter(|c| c.2);
    // A row carrying another struct's marker and not this struct's is not
    // this struct's row (`guide/sharing-tables.md`).
    let marker_visible = |q: &[u8]| newest(cells, F, q, now).is_some_and(|c| c.2);
    let foreign = cells
        .keys()
        .any(|(f, q)| f == F && q.starts_with(b"\0\0") && q != who.marker() && marker_visible(q));
    if foreign && !marker_visible(who.marker()) {
        return Seen::Absent;
    }
    let required: Vec<&Col> = shape
        .columns
        .iter()
        .filter(|c| c.kind == Kind::Required)
        .collect();
    let row_ts = if required.is_empty() {
        shape
            .columns
            .iter()
            .filter_map(|c| visible(c.qualifier))
            .map(|c| c.0)
            .max()
    } else if required.iter().all(|c| visible(c.qualifier).is_some()) {
        required
            .iter()
            .filter_map(|c| visible(c.qualifier))
            .map(|c| c.0)
            .min()
    } else {
        let marked = cells.get(&at(F, who.marker())).is_some_and(|m| {
            m.iter()
                .any(|(ts, c)| *ts > now * 1_000 && c.writer == Some(shape.group))
        });
        if !marked && !required.iter().any(|c| visible(c.qualifier).is_some()) {
            return Seen::Absent;
        }
        // What is stored tells: an expired cell proves the row expired.
        let mut none = None;
        for c in &required {
            match newest(cells, F, c.qualifier.as_bytes(), now) {
                Some((_, _, false)) => return Seen::Absent,
                Some(_) => {}
                None => {
                    none.get_or_insert(c.qualifier);
                }
            }
        }
        return Seen::Incomplete(format!("{F}:{}", none.expect("a required column missing")));
    };
    let Some(row_ts) = row_ts else {
        return Seen::Absent;
    };
    let mut fields: Vec<(&'static str, String)> = shape
        .columns
        .iter()
        .map(|c| {
            let value = visible(c.qualifier).map(|(_, cell, _)| decode(c.codec, &cell.value));
            let shown = match (c.kind, value) {
                (Kind::Optional, Some(v)) => format!("Some({v})"),
                (Kind::Optional, None) => "None".to_owned(),
                (_, Some(v)) => v,
                (Kind::Default, None) => format!("{:?}", ""),
                (Kind::Counter, None) => "0".to_owned(),
                (Kind::Required, None) => unreachable!("a live row's required column"),
            };
            (c.qualifier, shown)
        })
        .collect();
    if shape.map {
        let tags: BTreeMap<String, String> = cells
            .iter()
            .filter(|((family, _), _)| family == M)
            .filter_map(|((_, q), versions)| {
                let (ts, cell) = versions.iter().next_back()?;
                (*ts > now * 1_000).then(|| {
                    (
                        String::from_utf8_lossy(q).into_owned(),
                        String::from_utf8_lossy(&cell.value).into_owned(),
                    )
                })
            })
            .collect();
        fields.push(("tags", format!("{tags:?}")));
    }
    Seen::Live {
        expiry: row_ts / 1_000,
        fields,
    }
}

/// The model's effect of `who.delete`: every cell `who` owns goes (its
/// columns, their window marks, its marker, the legacy marker, its map's
/// family), nothing else.
fn delete_owned(cells: &mut Cells, who: Who) {
    let shape = who.shape();
    for c in shape.columns {
        cells.remove(&at(F, c.qualifier.as_bytes()));
        cells.remove(&at(F, &[&[0u8][..], c.qualifier.as_bytes()].concat()));
    }
    cells.remove(&at(F, who.marker()));
    cells.remove(&at(F, b"\0"));
    if shape.map {
        cells.retain(|(family, _), _| family != M);
    }
}

/// The model's effect of a whole-row write of `who` at `ts` (µs).
fn write_whole(
    cells: &mut Cells,
    who: Who,
    ts: i64,
    columns: Vec<(&'static str, Option<Vec<u8>>)>,
    map: Option<BTreeMap<String, String>>,
) {
    for (q, value) in columns {
        cells.remove(&at(F, q.as_bytes()));
        if let Some(value) = value {
            set(cells, F, q.as_bytes(), ts, value, None);
        }
    }
    cells.remove(&at(F, who.marker()));
    set(
        cells,
        F,
        who.marker(),
        ts,
        who.marker_fingerprint(),
        Some(who.shape().group),
    );
    mark_windows(cells, who, ts, |_| true);
    if let Some(map) = map {
        cells.retain(|(family, _), _| family != M);
        for (k, v) in map {
            set(cells, M, k.as_bytes(), ts, s(&v), None);
        }
    }
}

fn set(cells: &mut Cells, family: &str, q: &[u8], ts: i64, value: Vec<u8>, writer: Option<Group>) {
    cells
        .entry(at(family, q))
        .or_default()
        .insert(ts, Cell { value, writer });
}

/// The model's effect of a re-time of `who`'s live row to `ts` (µs), judged
/// at `judged_at` (ms, the write's horizon): each column's newest cell
/// visible then and the marker written anew (its column cleared first),
/// entries kept. A cell that
/// expires before the horizon is not carried (the library's rule: no write
/// revives a cell expiring in flight); it stays as it was, to expire.
fn write_retimed(cells: &mut Cells, who: Who, judged_at: i64, ts: i64) {
    let visible: Vec<&str> = who
        .shape()
        .columns
        .iter()
        .filter(|c| newest(cells, F, c.qualifier.as_bytes(), judged_at).is_some_and(|n| n.2))
        .map(|c| c.qualifier)
        .collect();
    for c in who.shape().columns {
        if let Some((_, cell, true)) = newest(cells, F, c.qualifier.as_bytes(), judged_at) {
            let value = cell.value.clone();
            cells.remove(&at(F, c.qualifier.as_bytes()));
            set(cells, F, c.qualifier.as_bytes(), ts, value, None);
        }
    }
    mark_windows(cells, who, ts, |q| visible.contains(&q));
    // Every version of the marker goes, one that expires before the
    // horizon too: the library clears the marker's column before it writes
    // the marker anew.
    cells.remove(&at(F, who.marker()));
    set(
        cells,
        F,
        who.marker(),
        ts,
        who.marker_fingerprint(),
        Some(who.shape().group),
    );
}

/// A counter's window mark (see `guide/counters.md`): a cell one
/// millisecond before the counter's, written with it, for each counter of
/// `who` that `has` says to.
fn mark_windows(cells: &mut Cells, who: Who, ts: i64, has: impl Fn(&str) -> bool) {
    for c in who.shape().columns {
        if c.kind == Kind::Counter && has(c.qualifier) {
            let mark = [b"\0", c.qualifier.as_bytes()].concat();
            cells.remove(&at(F, &mark));
            set(cells, F, &mark, ts - 1_000, n(0), None);
        }
    }
}

/// Milliseconds since the epoch.
fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

/// Every struct's table handle, on one connection and one manual clock;
/// `skip` reads skip what does not decode.
struct Tables {
    clock: Clock,
    core: Table<Core>,
    stats: Table<Stats>,
    p1: Table<v1::Person>,
    p2: Table<v2::Person>,
    p2b: Table<v2b::Person>,
    raw: RawTable,
}

impl Tables {
    async fn new() -> Self {
        let clock = Clock::manual(instant(ms(Utc::now())));
        let core = support::table::<Core>(&clock).await;
        let conn = core.connection().clone();
        let stats = Table::<Stats>::new(conn.clone()).with_clock(clock.clone());
        // Versions of one struct share its marker: each runs in a process
        // of its own, so each has a connection of its own (one connection
        // refuses two structs writing one marker).
        let p1 = Table::<v1::Person>::new(support::connection_to(&conn)).with_clock(clock.clone());
        let p2 = Table::<v2::Person>::new(support::connection_to(&conn)).with_clock(clock.clone());
        let p2b =
            Table::<v2b::Person>::new(support::connection_to(&conn)).with_clock(clock.clone());
        let raw = RawTable::new(&conn, "shared");
        Tables {
            clock,
            core,
            stats,
            p1,
            p2,
            p2b,
            raw,
        }
    }
}

/// Dispatch a generic call on the table of `$who`.
macro_rules! with_table {
    ($tables:expr, $who:expr, |$t:ident| $body:expr) => {
        match $who {
            Who::Core => {
                let $t = &$tables.core;
                $body
            }
            Who::Stats => {
                let $t = &$tables.stats;
                $body
            }
            Who::P1 => {
                let $t = &$tables.p1;
                $body
            }
            Who::P2 => {
                let $t = &$tables.p2;
                $body
            }
            Who::P2b => {
                let $t = &$tables.p2b;
                $body
            }
        }
    };
}

/// A read's answer, normalised.
fn seen<S: Subject>(read: Result<Option<Expiring<S>>, Error>, key: &str) -> Result<Seen, String> {
    match read {
        Ok(None) => Ok(Seen::Absent),
        Ok(Some(row)) => {
            ensure!(
                row.value.expiry_field() == row.expires_at,
                "{key}: the expiry field {} is not the row's {}",
                row.value.expiry_field(),
                row.expires_at
            );
            Ok(Seen::Live {
                expiry: ms(row.expires_at),
                fields: row.value.fields(),
            })
        }
        Err(Error::Decode(e)) if e.source == CodecError::Missing && e.row_key == key.as_bytes() => {
            Ok(Seen::Incomplete(e.column))
        }
        Err(e) => Err(format!("{key}: {e:?}")),
    }
}

/// Every struct's answers after one step, before they are judged.
struct Answers {
    /// By struct, by key.
    gets: Vec<Vec<Seen>>,
    /// By struct: the limited scans, forward and reversed, as (key, seen).
    limited: Vec<[Vec<(usize, Seen)>; 2]>,
    /// By struct: the strict unlimited scan, or the key of the row it
    /// failed on as incomplete.
    strict: Vec<Result<Vec<(usize, Seen)>, usize>>,
}

/// One sequence's run: the model, the log.
struct Run<'t> {
    tables: &'t Tables,
    prefix: String,
    cells: Vec<Cells>,
    log: String,
    started: Instant,
    slept: u64,
    /// Reads that found a row incomplete, and inserts refused by one.
    incomplete: usize,
    /// Cells the emulator collected while the sequence ran.
    collected: usize,
}

impl<'t> Run<'t> {
    fn new(tables: &'t Tables, prefix: String) -> Self {
        Run {
            tables,
            prefix,
            cells: vec![Cells::new(); KEYS.len()],
            log: String::new(),
            started: Instant::now(),
            slept: 0,
            incomplete: 0,
            collected: 0,
        }
    }

    fn id(&self, key: usize) -> String {
        format!("{}/{}", self.prefix, KEYS[key])
    }

    fn key_of(&self, row_key: &[u8]) -> Result<usize, String> {
        (0..KEYS.len())
            .find(|&k| self.id(k).as_bytes() == row_key)
            .ok_or_else(|| {
                format!(
                    "a row of no key of the sequence: {}",
                    row_key.escape_ascii()
                )
            })
    }

    fn note(&mut self, line: impl fmt::Display) {
        let _ = writeln!(
            self.log,
            "  {:>6} ms  {line}",
            self.started.elapsed().as_millis()
        );
    }

    fn now(&self) -> i64 {
        ms(self.tables.clock.now())
    }

    /// Run `ops`; on a failure, why, with the run's log.
    async fn sequence(&mut self, ops: &[Op]) -> Result<(), String> {
        for (i, op) in ops.iter().enumerate() {
            // Never behind the wall clock: collection removes only what
            // the table's clock says has expired.
            let real = ms(Utc::now());
            if real > self.now() {
                self.tables.clock.set(instant(real));
            }
            self.note(format_args!("#{i} {op:?} (now {})", self.now()));
            let outcome = match self.step(op).await {
                Ok(()) => self.check_reads(i).await,
                Err(e) => Err(e),
            };
            if let Err(e) = outcome {
                return Err(format!("step #{i} ({op:?}): {e}\nthe run:\n{}", self.log));
            }
        }
        Ok(())
    }

    async fn step(&mut self, op: &Op) -> Step {
        let tables = self.tables;
        match *op {
            Op::Put { who, .. }
            | Op::InsertIfAbsent { who, .. }
            | Op::Set { who, .. }
            | Op::Clear { who, .. }
            | Op::Touch { who, .. }
            | Op::Delete { who, .. } => with_table!(tables, who, |t| self.step_as(t, op).await)?,
            Op::PutEntry {
                key,
                tag,
                seed,
                ttl,
            } => {
                let now = self.now();
                let expected = judge(Who::Core, &self.cells[key], now + HORIZON_MS);
                let written = tables
                    .core
                    .put_entry(
                        self.id(key).as_str(),
                        Core::TAGS,
                        &tag.to_owned(),
                        &format!("e{seed}"),
                        Expiry::Ttl(TimeDelta::milliseconds(ttl)),
                    )
                    .await;
                match (written, expected) {
                    (Ok(Some(w)), Seen::Live { .. }) => {
                        ensure!(ms(w.expires_at) == now + ttl, "put_entry reported {w:?}");
                        let cells = &mut self.cells[key];
                        cells.remove(&at(M, tag.as_bytes()));
                        set(
                            cells,
                            M,
                            tag.as_bytes(),
                            (now + ttl) * 1_000,
                            s(&format!("e{seed}")),
                            None,
                        );
                        self.note("   written");
                    }
                    (Ok(None), Seen::Absent | Seen::Incomplete(_)) => self.note("   no live row"),
                    (got, expected) => {
                        return Err(format!(
                            "put_entry: {got:?}, the model's row at the horizon: {expected:?}"
                        ))
                    }
                }
            }
            Op::Raw {
                key,
                column,
                ttl,
                seed,
            } => {
                let ts = (self.now() + ttl) * 1_000;
                let value = raw_value(column, seed);
                tables
                    .raw
                    .mutate_row(
                        self.id(key),
                        vec![data::Mutation::set_cell(
                            F,
                            column.as_bytes().to_vec(),
                            ts,
                            value.clone(),
                        )],
                    )
                    .await
                    .map_err(|e| format!("raw write: {e}"))?;
                set(&mut self.cells[key], F, column.as_bytes(), ts, value, None);
            }
            Op::Advance { ms } => tables.clock.advance(TimeDelta::milliseconds(ms)),
            Op::Sleep { ms } => {
                let ms = ms.min(SLEEPS_MS - self.slept);
                self.slept += ms;
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
        }
        Ok(())
    }

    /// An operation of struct `S` on its row, against the model.
    async fn step_as<S: Subject>(&mut self, t: &Table<S>, op: &Op) -> Step {
        let now = self.now();
        let (Op::Put { key, .. }
        | Op::InsertIfAbsent { key, .. }
        | Op::Set { key, .. }
        | Op::Clear { key, .. }
        | Op::Touch { key, .. }
        | Op::Delete { key, .. }) = *op
        else {
            unreachable!("an operation of a struct")
        };
        let id = self.id(key);
        // The row as a conditional write judges it, and as a read does.
        let at_horizon = judge(S::WHO, &self.cells[key], now + HORIZON_MS);
        let at_now = judge(S::WHO, &self.cells[key], now);
        match *op {
            Op::Put { ttl, seed, .. } => {
                let value = S::build(&id, instant(now + ttl), seed);
                let written = t.put(&value).await.map_err(|e| format!("put: {e}"))?;
                ensure!(
                    ms(written.expires_at) == now + ttl,
                    "put reported {written:?}"
                );
                let (columns, map) = value.cells();
                write_whole(
                    &mut self.cells[key],
                    S::WHO,
                    (now + ttl) * 1_000,
                    columns,
                    map,
                );
            }
            Op::InsertIfAbsent { ttl, seed, .. } => {
                let value = S::build(&id, instant(now + ttl), seed);
                let inserted = t.insert_if_absent(&value).await;
                // An insert judges the row when it is sent, not at a
                // horizon: a row live then wins.
                match (inserted, &at_now) {
                    (Ok(Insert::Inserted(w)), Seen::Absent) => {
                        ensure!(ms(w.expires_at) == now + ttl, "insert reported {w:?}");
                        let (columns, map) = value.cells();
                        write_whole(
                            &mut self.cells[key],
                            S::WHO,
                            (now + ttl) * 1_000,
                            columns,
                            map,
                        );
                        self.note("   inserted");
                    }
                    (Ok(Insert::Exists(row)), Seen::Live { .. }) => {
                        let found = seen(Ok(Some(row)), &id)?;
                        ensure!(
                            found == at_now,
                            "insert_if_absent found {found:?}, the model's row is {at_now:?}"
                        );
                        self.note("   exists");
                    }
                    (Err(e), Seen::Incomplete(column)) => {
                        let found = seen::<S>(Err(e), &id)?;
                        ensure!(
                            found == Seen::Incomplete(column.clone()),
                            "insert_if_absent on an incomplete row answered {found:?}"
                        );
                        self.incomplete += 1;
                        self.note("   refused: incomplete");
                    }
                    (got, expected) => {
                        return Err(format!(
                            "insert_if_absent: {got:?}, the model's row: {expected:?}"
                        ))
                    }
                }
            }
            Op::Set { seed, .. } => {
                let (update, column, bytes) = S::set(t.update(id.as_str()), seed);
                let written = update.apply().await;
                self.updated(
                    S::WHO,
                    key,
                    written,
                    &at_horizon,
                    &at_now,
                    column,
                    Some(bytes),
                    "update set",
                )?;
            }
            Op::Clear { .. } => {
                let Some((update, column)) = S::clear(t.update(id.as_str())) else {
                    return Ok(());
                };
                let written = update.apply().await;
                self.updated(
                    S::WHO,
                    key,
                    written,
                    &at_horizon,
                    &at_now,
                    column,
                    None,
                    "update clear",
                )?;
            }
            Op::Touch {
                ttl,
                when_less_than,
                ..
            } => {
                let touched = t
                    .touch(
                        id.as_str(),
                        TimeDelta::milliseconds(ttl),
                        TimeDelta::milliseconds(when_less_than),
                    )
                    .await;
                match (touched, &at_horizon, &at_now) {
                    (Ok(Some(touched)), Seen::Live { .. }, Seen::Live { expiry, .. }) => {
                        let rewrite = expiry - now < when_less_than && now + ttl > *expiry;
                        ensure!(
                            touched.rewritten == rewrite,
                            "touch answered {touched:?}, the row expiring at {expiry}"
                        );
                        if rewrite {
                            ensure!(
                                ms(touched.expires_at) == now + ttl,
                                "touch reported {touched:?}"
                            );
                            write_retimed(
                                &mut self.cells[key],
                                S::WHO,
                                now + HORIZON_MS,
                                (now + ttl) * 1_000,
                            );
                        } else {
                            ensure!(
                                ms(touched.expires_at) == *expiry,
                                "touch reported {touched:?}"
                            );
                        }
                        self.note(format_args!("   {touched:?}"));
                    }
                    // Another struct's row now (its marker may expire
                    // before the horizon): not this struct's.
                    (Ok(None), Seen::Absent | Seen::Incomplete(_), _)
                    | (Ok(None), _, Seen::Absent) => {
                        self.note("   no live row");
                    }
                    (got, expected, _) => {
                        return Err(format!(
                            "touch: {got:?}, the model's row at the horizon: {expected:?}"
                        ))
                    }
                }
            }
            Op::Delete { .. } => {
                t.delete(id.as_str())
                    .await
                    .map_err(|e| format!("delete: {e}"))?;
                delete_owned(&mut self.cells[key], S::WHO);
            }
            _ => unreachable!("an operation of a struct"),
        }
        Ok(())
    }

    /// A partial update's answer against the model (`bytes`: set column to
    /// them; `None`: clear it).
    #[allow(clippy::too_many_arguments)]
    fn updated(
        &mut self,
        who: Who,
        key: usize,
        written: Result<Option<bigtable_ttl::Written>, Error>,
        at_horizon: &Seen,
        at_now: &Seen,
        column: &str,
        bytes: Option<Vec<u8>>,
        how: &str,
    ) -> Step {
        match (written, at_horizon, at_now) {
            (Ok(Some(w)), Seen::Live { .. }, Seen::Live { expiry, .. }) => {
                let cells = &mut self.cells[key];
                cells.remove(&at(F, column.as_bytes()));
                if let Some(bytes) = bytes {
                    set(cells, F, column.as_bytes(), expiry * 1_000, bytes, None);
                }
                // What a read right after sees: a clear can take away the
                // cell that carried the row's expiry (another client's,
                // later than the marker).
                let after = judge(who, &self.cells[key], self.now());
                let Seen::Live { expiry: left, .. } = after else {
                    return Err(format!(
                        "{how} reported {w:?}; the model's row after it: {after:?}"
                    ));
                };
                ensure!(
                    ms(w.expires_at) == left,
                    "{how} reported {w:?}, the row expires at {left} after it ({expiry} before)"
                );
                self.note("   updated");
            }
            // Not live at the horizon, or another struct's row now (its
            // marker may expire before the horizon): no row to update.
            (Ok(None), Seen::Absent | Seen::Incomplete(_), _) | (Ok(None), _, Seen::Absent) => {
                self.note("   no live row");
            }
            // Clearing the last visible field of a struct whose marker does
            // not make a row (it has a counter) would leave nothing a read
            // shows: refused, nothing written (`Error::UpdateLeavesNoRow`).
            (Err(Error::UpdateLeavesNoRow(_)), Seen::Live { .. }, _) if bytes.is_none() => {
                let mut after = self.cells[key].clone();
                after.remove(&at(F, column.as_bytes()));
                let counter = who.shape().columns.iter().any(|c| c.kind == Kind::Counter);
                let left = judge(who, &after, self.now());
                ensure!(
                    counter && left == Seen::Absent,
                    "{how} was refused as leaving no row; the model's row after it: {left:?}"
                );
                self.note("   refused: it would leave no row");
            }
            (got, expected, _) => {
                return Err(format!(
                    "{how}: {got:?}, the model's row at the horizon: {expected:?}"
                ))
            }
        }
        Ok(())
    }

    /// What is stored, by key.
    async fn stored(&self) -> Result<Vec<Vec<bigtable_ttl::data::Cell>>, String> {
        let rows = self
            .tables
            .core
            .raw_rows(Scan::prefix(format!("{}/", self.prefix)))
            .await
            .map_err(|e| format!("raw read: {e}"))?;
        let mut by_key = vec![Vec::new(); KEYS.len()];
        for (row_key, cells) in rows {
            by_key[self.key_of(&row_key)?] = cells;
        }
        Ok(by_key)
    }

    /// The stored cells against the model (`model_check::compare_store`):
    /// a cell the model holds may be gone once it has expired (its
    /// timestamp is its expiry).
    fn compare_store(&mut self, stored: &[Vec<bigtable_ttl::data::Cell>]) -> Step {
        // Collection runs on the emulator's real clock, which a sleep may
        // have carried past the table's: what either says has expired may
        // be gone.
        let now = self.now().max(ms(Utc::now()));
        self.collected += model_check::compare_store(
            &KEYS,
            &mut self.cells,
            stored,
            |cell: &Cell| cell.value.as_slice(),
            |_, ts| ts <= now * 1_000,
        )?;
        Ok(())
    }

    /// Every struct's reads of every key against the model, at the cells
    /// stored just before and just after them.
    async fn check_reads(&mut self, step: usize) -> Step {
        let before = self.stored().await?;
        self.compare_store(&before)?;
        let cells_before = self.cells.clone();
        let limit = 1 + step % 3;
        let tables = self.tables;
        let mut answers = Answers {
            gets: Vec::new(),
            limited: Vec::new(),
            strict: Vec::new(),
        };
        for who in ALL {
            with_table!(tables, who, |t| self.read_as(t, limit, &mut answers).await)?;
        }
        let after = self.stored().await?;
        self.compare_store(&after)?;
        let now = self.now();
        for (w, who) in ALL.into_iter().enumerate() {
            let mut live = Vec::new();
            let mut judged = Vec::new();
            let mut maybe_incomplete = Vec::new();
            let mut surely_incomplete = Vec::new();
            for key in 0..KEYS.len() {
                let one = judge(who, &cells_before[key], now);
                let other = judge(who, &self.cells[key], now);
                let got = &answers.gets[w][key];
                let both = [one.clone(), other.clone()];
                read_agrees(format_args!("{who:?}.get({})", KEYS[key]), got, &both)?;
                if matches!(got, Seen::Incomplete(_)) {
                    self.incomplete += 1;
                }
                if let Seen::Live { .. } = one {
                    live.push((key, one.clone()));
                }
                judged.push(both);
                match (&one, &other) {
                    (Seen::Incomplete(_), Seen::Incomplete(_)) => surely_incomplete.push(key),
                    (Seen::Incomplete(_), _) | (_, Seen::Incomplete(_)) => {
                        maybe_incomplete.push(key);
                    }
                    _ => {}
                }
            }
            let forward: Vec<_> = live.iter().take(limit).cloned().collect();
            let reversed: Vec<_> = live.iter().rev().take(limit).cloned().collect();
            let keys: Vec<usize> = (0..KEYS.len()).collect();
            let backwards: Vec<usize> = keys.iter().rev().copied().collect();
            ensure!(
                scan_agrees(&answers.limited[w][0], &keys, limit, &judged, Seen::is_live),
                "{who:?}: scan limit {limit} read {:?}, the model's first live rows are {forward:?}",
                answers.limited[w][0]
            );
            ensure!(
                scan_agrees(&answers.limited[w][1], &backwards, limit, &judged, Seen::is_live),
                "{who:?}: reversed scan limit {limit} read {:?}, the model's last live rows are {reversed:?}",
                answers.limited[w][1]
            );
            match &answers.strict[w] {
                Ok(rows) => {
                    ensure!(
                        surely_incomplete.is_empty()
                            && scan_agrees(rows, &keys, usize::MAX, &judged, Seen::is_live),
                        "{who:?}: scan read {rows:?}, the model's live rows are {live:?}, incomplete {surely_incomplete:?}"
                    );
                }
                Err(key) => ensure!(
                    surely_incomplete.contains(key) || maybe_incomplete.contains(key),
                    "{who:?}: scan failed on {} as incomplete",
                    KEYS[*key]
                ),
            }
        }
        Ok(())
    }

    /// Struct `S`'s reads, gathered into `answers`.
    async fn read_as<S: Subject>(&self, t: &Table<S>, limit: usize, answers: &mut Answers) -> Step {
        let mut gets = Vec::new();
        for key in 0..KEYS.len() {
            let id = self.id(key);
            gets.push(
                seen(t.get(id.as_str()).await, &id)
                    .map_err(|e| format!("{:?}.get: {e}", S::WHO))?,
            );
        }
        answers.gets.push(gets);
        let skipping = t
            .clone()
            .with_read_options(ReadOptions::default().with_skip_undecodable(true));
        let prefix = format!("{}/", self.prefix);
        let mut limited = [Vec::new(), Vec::new()];
        for (i, scan) in [
            Scan::prefix(&prefix).limit(limit as u64),
            Scan::prefix(&prefix).reversed().limit(limit as u64),
        ]
        .into_iter()
        .enumerate()
        {
            let rows = skipping
                .scan(scan)
                .await
                .map_err(|e| format!("{:?} limited scan: {e}", S::WHO))?;
            limited[i] = self.scanned(rows)?;
        }
        answers.limited.push(limited);
        let strict = match t.scan(Scan::prefix(&prefix)).await {
            Ok(rows) => Ok(self.scanned(rows)?),
            Err(Error::Decode(e)) if e.source == CodecError::Missing => {
                Err(self.key_of(&e.row_key)?)
            }
            Err(e) => return Err(format!("{:?} scan: {e}", S::WHO)),
        };
        answers.strict.push(strict);
        Ok(())
    }

    fn scanned<S: Subject>(&self, rows: Vec<Expiring<S>>) -> Result<Vec<(usize, Seen)>, String> {
        rows.into_iter()
            .map(|row| {
                let key = self.key_of(&row.row_key().map_err(|e| e.to_string())?)?;
                Ok((key, seen(Ok(Some(row)), KEYS[key])?))
            })
            .collect()
    }
}

/// Without `PROPTEST_CASES`, no case starts after this long (the rest pass
/// without running, and the count printed says so).
const BUDGET: Duration = Duration::from_secs(45);

#[test]
fn structs_sharing_a_family_and_rows_each_see_only_their_own() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tables = rt.block_on(Tables::new());
    let asked: Option<u32> = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    let budget = asked.is_none().then_some(BUDGET);
    let mut runner = TestRunner::new(Config {
        cases: asked.unwrap_or(24),
        failure_persistence: None,
        max_shrink_time: 120_000,
        ..Config::default()
    });
    let started = Instant::now();
    let (runs, incomplete, collected) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    let result = runner.run(&sequence(), |ops| {
        if budget.is_some_and(|b| started.elapsed() > b) {
            return Ok(());
        }
        let case = runs.fetch_add(1, Ordering::Relaxed);
        let mut run = Run::new(&tables, format!("run{case:04}"));
        let outcome = rt.block_on(run.sequence(&ops));
        incomplete.fetch_add(run.incomplete, Ordering::Relaxed);
        collected.fetch_add(run.collected, Ordering::Relaxed);
        outcome.map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    println!(
        "{} sequences in {:?}; {} incomplete answers; {} cells collected while running",
        runs.load(Ordering::Relaxed),
        started.elapsed(),
        incomplete.load(Ordering::Relaxed),
        collected.load(Ordering::Relaxed)
    );
}

/// The index of `key` in [`KEYS`].
fn key_of(key: &str) -> usize {
    KEYS.iter().position(|k| *k == key).expect("a key")
}

/// Run `ops` as one sequence named `name`, checked as the random runs are.
fn replay(name: &str, ops: &[Op]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tables = rt.block_on(Tables::new());
    let mut run = Run::new(&tables, name.to_owned());
    if let Err(e) = rt.block_on(run.sequence(ops)) {
        panic!("{e}");
    }
}

/// A case the random runs found: another client's `badge` is the only
/// field of a `Stats` row (a counter and an option, no marker); clearing it
/// would leave no row a read shows (a counter's struct is not kept by its
/// marker), so the update is refused, and the model must say the same.
#[test]
fn clearing_the_last_field_of_a_row_of_a_counter_s_struct_is_refused() {
    let key = key_of("acct#0");
    let ops = [
        Op::Raw {
            key,
            column: "badge",
            ttl: 5_000,
            seed: 0,
        },
        Op::Clear {
            who: Who::Stats,
            key,
        },
    ];
    replay("found0000", &ops);
}

/// A case the random runs found (with `Stats`; a failure with `Person`'s
/// versions had the same shape): a row kept live past the write's horizon by another client's
/// counter while its marker expires before it; the re-time clears every
/// version of the marker, the one about to expire too, and the model must
/// say the same.
#[test]
fn a_touch_clears_a_marker_that_expires_before_its_horizon() {
    let key = key_of("acct#0");
    let ops = [
        Op::Put {
            who: Who::Stats,
            key,
            ttl: 2_000,
            seed: 5,
        },
        Op::Raw {
            key,
            column: "visits",
            ttl: 5_000,
            seed: 2,
        },
        // The marker now expires within the second the touch is judged by.
        Op::Advance { ms: 1_500 },
        Op::Touch {
            who: Who::Stats,
            key,
            ttl: 4_000,
            when_less_than: 4_000,
        },
    ];
    replay("found0001", &ops);
}

/// A case the random runs found: another client wrote `badge` into a
/// `Stats` row to expire after the row's marker; clearing it takes away the
/// cell that carried the row's expiry, so the update answers the expiry a
/// read right after sees (the marker's), and the model must say the same.
#[test]
fn clearing_the_field_that_carried_the_expiry_answers_the_expiry_left() {
    let key = key_of("acct#0");
    let ops = [
        Op::Put {
            who: Who::Stats,
            key,
            ttl: 2_000,
            seed: 4,
        },
        Op::Raw {
            key,
            column: "badge",
            ttl: 3_000,
            seed: 1,
        },
        Op::Clear {
            who: Who::Stats,
            key,
        },
    ];
    replay("found0002", &ops);
}
