//! No write revives: a stateful property test on Google's Bigtable
//! emulator, against a small in-memory model of expiry, with the
//! emulator's garbage collection really running between steps.
//!
//! Each case runs sequences of operations on a few keys of a one-second
//! struct with a required field, an `Option` field, a counter and a map
//! (`Cart`), or of the same struct without the required field (`Tally`,
//! where an increment creates a row): `put`, `insert_if_absent`, `update`
//! (set, clear), `touch`, `set_ttl`, `shift_expiry`, `increment`,
//! `put_entry`, `remove_entry`, `delete`, `delete_if`, and waits (a
//! while, or until a row of the model has expired, and a while). Rows
//! live 1 to 3 s and entries 0.5 to 8 s (often outliving their row), so
//! they expire, and the emulator (which collects a one-second family every
//! 0.5 to 1.5 s by its own clock) removes them, while a sequence runs.
//! After every step, `get`, `entries` and `scan` of every key are checked
//! against the model:
//!
//! * a cell whose expiry has passed is never read again (a column, an
//!   entry, the row);
//! * a row that reads as absent reads as absent until a write of a whole
//!   row (`put`, a winning `insert_if_absent`, an `increment` that creates
//!   its row);
//! * otherwise reads and answers are exactly what the model says: values,
//!   expiries, who wins.
//!
//! A sequence is one to three acts, each the story of a row that could be
//! revived: a whole-row write, any operations, maybe entries written to
//! outlive the row, any operations, a wait until the row has expired, any
//! operations ("any" is any operation on any key, waits included). Drawn
//! from operations alone, a step on an expired row whose entries outlive
//! it came about once in some forty sequences.
//!
//! Time is the system clock's, as the emulator's collection is. Whether a
//! row or an entry is live is exact except near its expiry: each call is
//! bracketed by readings of the clock taken just before and just after it,
//! every instant the library could have used lies inside, and only an
//! expiry within that bracket (widened by [`MARGIN_MS`] either side) may go
//! either way; outside, the outcome must be the model's. Once a call has
//! shown which way it went, the model follows (a row read as absent is
//! absent from then on). A conditional write that carries the row
//! forward (a re-time, an update, `put_entry`, `put_if`) judges the row at
//! its horizon, [`HORIZON_MS`] past its "now" (a row that expires before
//! the write may land counts as expired to it), so its bracket is shifted
//! by that much; a write that found no live row tells only that the row
//! expires before its horizon. `insert_if_absent` and `delete_if` judge
//! the row when they are sent: their bracket is the call's. Expiries reported by the library (`Written`,
//! `Touched`, `Counted`, a re-time's mutation) must lie within the bracket
//! their TTL gives; the model then keeps the reported instant, which the
//! next reads check.
//!
//! Why sequences with a hand-written model rather than
//! `proptest-state-machine`: whether an operation applies depends on the
//! time it ran at, which only the run knows; a reference state machine
//! generating transitions from a pure model could not use it, and every
//! operation is valid in every state (on a row that is not live it simply
//! does nothing), so there are no preconditions to keep while shrinking.
//! proptest shrinks by dropping sequences, acts and operations and by
//! simplifying operations; a failure prints the minimal case with the log
//! of its failing run (each step, when it ran, what it returned).
//!
//! A case runs up to four sequences side by side, each on keys of its own
//! (they share nothing but the table and the emulator), so that a minute
//! holds many. Bounded: at most 8 s of waits per sequence, 20 cases for
//! `Cart` and 16 for `Tally`, none started after a minute (the two tests
//! run side by side). `PROPTEST_CASES` sets the number of cases, without
//! the minute, for longer runs. Shrinking a failure stops after 3 minutes.

use crate::support;
use support::model_check::{ensure, Step};

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bigtable_ttl::data::Cell;
use bigtable_ttl::{
    BigtableRow, Clock, CounterField, Error, Expiring, Expiry, Field, Insert, MapField, Scan, Table,
};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::future::join_all;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// A cart: its owner (required), a note, a view counter, and items each
/// reserved for its own time.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "carts", family = "c")]
struct Cart {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    owner: String,
    note: Option<String>,
    #[bigtable(counter)]
    views: i64,
    #[bigtable(map, family = "items")]
    items: BTreeMap<String, u64>,
}

/// `Cart` without a required field: an increment on a key with no live row
/// creates one.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "tallies", family = "t")]
struct Tally {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    note: Option<String>,
    #[bigtable(counter)]
    views: i64,
    #[bigtable(map, family = "items")]
    items: BTreeMap<String, u64>,
}

/// The fields of a row, both structs alike (`owner` is `None` for `Tally`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fields {
    owner: Option<String>,
    note: Option<String>,
    views: i64,
    items: BTreeMap<String, u64>,
}

/// What the test needs of a struct.
trait Subject:
    BigtableRow<Key = String> + Clone + fmt::Debug + PartialEq + Send + Sync + 'static
{
    /// Whether it has the required `owner` (else an increment creates rows).
    const HAS_OWNER: bool;
    fn build(id: &str, expires_at: DateTime<Utc>, fields: &Fields) -> Self;
    fn fields(&self) -> Fields;
    fn expires_at_field(&self) -> DateTime<Utc>;
    fn note() -> Field<Self, String>;
    fn owner() -> Option<Field<Self, String>>;
    fn views() -> CounterField<Self>;
    fn items() -> MapField<Self, String, u64>;
}

impl Subject for Cart {
    const HAS_OWNER: bool = true;

    fn build(id: &str, expires_at: DateTime<Utc>, f: &Fields) -> Self {
        Cart {
            id: id.to_owned(),
            expires_at,
            owner: f.owner.clone().expect("a cart has an owner"),
            note: f.note.clone(),
            views: f.views,
            items: f.items.clone(),
        }
    }

    fn fields(&self) -> Fields {
        Fields {
            owner: Some(self.owner.clone()),
            note: self.note.clone(),
            views: self.views,
            items: self.items.clone(),
        }
    }

    fn expires_at_field(&self) -> DateTime<Utc> {
        self.expires_at
    }

    fn note() -> Field<Self, String> {
        Cart::NOTE
    }

    fn owner() -> Option<Field<Self, String>> {
        Some(Cart::OWNER)
    }

    fn views() -> CounterField<Self> {
        Cart::VIEWS
    }

    fn items() -> MapField<Self, String, u64> {
        Cart::ITEMS
    }
}

impl Subject for Tally {
    const HAS_OWNER: bool = false;

    fn build(id: &str, expires_at: DateTime<Utc>, f: &Fields) -> Self {
        Tally {
            id: id.to_owned(),
            expires_at,
            note: f.note.clone(),
            views: f.views,
            items: f.items.clone(),
        }
    }

    fn fields(&self) -> Fields {
        Fields {
            owner: None,
            note: self.note.clone(),
            views: self.views,
            items: self.items.clone(),
        }
    }

    fn expires_at_field(&self) -> DateTime<Utc> {
        self.expires_at
    }

    fn note() -> Field<Self, String> {
        Tally::NOTE
    }

    fn owner() -> Option<Field<Self, String>> {
        None
    }

    fn views() -> CounterField<Self> {
        Tally::VIEWS
    }

    fn items() -> MapField<Self, String, u64> {
        Tally::ITEMS
    }
}

/// Keys per sequence.
const KEYS: usize = 2;

/// Sequences run side by side in one case, at most.
const LANES: usize = 4;

/// How far past a call's bracket an expiry still counts as possibly
/// crossed. The bracket holds every instant the library and the emulator
/// used (the call answered before its end), so no margin is needed in
/// principle; this one absorbs a system clock stepped while the test runs.
const MARGIN_MS: i64 = 250;

/// How far past its "now" a conditional write judges whether the row is
/// live, under the default write policy: its horizon (a row that expires
/// before the write may land counts as expired to it; see
/// `guide/conditional-writes.md`).
const HORIZON_MS: i64 = 1_000;

/// Waits of one sequence, at most.
const WAITS_MS: u64 = 8_000;

/// One step of a sequence. Keys are indexes into the sequence's own keys;
/// durations are milliseconds.
#[derive(Clone)]
enum Op {
    Put {
        key: usize,
        ttl: i64,
        row: Fields,
    },
    InsertIfAbsent {
        key: usize,
        ttl: i64,
        row: Fields,
    },
    SetNote {
        key: usize,
        note: &'static str,
    },
    ClearNote {
        key: usize,
    },
    SetOwner {
        key: usize,
        owner: &'static str,
    },
    Touch {
        key: usize,
        ttl: i64,
        when_less_than: i64,
    },
    SetTtl {
        key: usize,
        ttl: i64,
    },
    ShiftExpiry {
        key: usize,
        by: i64,
    },
    Increment {
        key: usize,
        by: i64,
        ttl: i64,
    },
    PutEntry {
        key: usize,
        item: &'static str,
        value: u64,
        ttl: i64,
    },
    RemoveEntry {
        key: usize,
        item: &'static str,
    },
    Delete {
        key: usize,
    },
    DeleteIfNote {
        key: usize,
        note: &'static str,
    },
    Wait {
        ms: u64,
    },
    /// Until the model's row `key` has expired (at once when it has none),
    /// then `ms` more.
    WaitPastExpiry {
        key: usize,
        ms: u64,
    },
}

impl fmt::Debug for Op {
    /// One line per step, as a failing sequence is printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let row = |r: &Fields| {
            let owner = r
                .owner
                .as_deref()
                .map(|o| format!("owner {o}, "))
                .unwrap_or_default();
            format!(
                "{owner}note {:?}, views {}, items {:?}",
                r.note, r.views, r.items
            )
        };
        match self {
            Op::Put { key, ttl, row: r } => write!(f, "put k{key} ttl {ttl} ms ({})", row(r)),
            Op::InsertIfAbsent { key, ttl, row: r } => {
                write!(f, "insert_if_absent k{key} ttl {ttl} ms ({})", row(r))
            }
            Op::SetNote { key, note } => write!(f, "update k{key} set note {note:?}"),
            Op::ClearNote { key } => write!(f, "update k{key} clear note"),
            Op::SetOwner { key, owner } => write!(f, "update k{key} set owner {owner:?}"),
            Op::Touch {
                key,
                ttl,
                when_less_than,
            } => write!(
                f,
                "touch k{key} ttl {ttl} ms when less than {when_less_than} ms"
            ),
            Op::SetTtl { key, ttl } => write!(f, "set_ttl k{key} {ttl} ms"),
            Op::ShiftExpiry { key, by } => write!(f, "shift_expiry k{key} {by:+} ms"),
            Op::Increment { key, by, ttl } => {
                write!(f, "increment k{key} by {by} (new row ttl {ttl} ms)")
            }
            Op::PutEntry {
                key,
                item,
                value,
                ttl,
            } => write!(f, "put_entry k{key} {item}={value} ttl {ttl} ms"),
            Op::RemoveEntry { key, item } => write!(f, "remove_entry k{key} {item}"),
            Op::Delete { key } => write!(f, "delete k{key}"),
            Op::DeleteIfNote { key, note } => write!(f, "delete_if k{key} note == {note:?}"),
            Op::Wait { ms } => write!(f, "wait {ms} ms"),
            Op::WaitPastExpiry { key, ms } => write!(f, "wait past k{key}'s expiry + {ms} ms"),
        }
    }
}

/// Mostly the first key, so that one row goes through many steps.
fn key() -> impl Strategy<Value = usize> {
    prop_oneof![3 => Just(0), 1 => 1..KEYS]
}

fn ttl() -> impl Strategy<Value = i64> {
    1_000i64..=3_000
}

fn note() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["hi", "yo"][..])
}

fn owner() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["ann", "bob"][..])
}

fn item() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["x", "y", "z"][..])
}

fn row(has_owner: bool) -> impl Strategy<Value = Fields> {
    (
        owner(),
        prop::option::of(note()),
        0i64..5,
        prop::collection::btree_map(item().prop_map(str::to_owned), 1u64..9, 0..=2),
    )
        .prop_map(move |(owner, note, views, items)| Fields {
            owner: has_owner.then(|| owner.to_owned()),
            note: note.map(str::to_owned),
            views,
            items,
        })
}

fn op(has_owner: bool) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (key(), ttl(), row(has_owner)).prop_map(|(key, ttl, row)| Op::Put { key, ttl, row }),
        3 => (key(), ttl(), row(has_owner))
            .prop_map(|(key, ttl, row)| Op::InsertIfAbsent { key, ttl, row }),
        2 => (key(), note()).prop_map(|(key, note)| Op::SetNote { key, note }),
        1 => key().prop_map(|key| Op::ClearNote { key }),
        // `Tally` has no owner: the same weight, another note.
        1 => (key(), owner(), note()).prop_map(move |(key, owner, note)| if has_owner {
            Op::SetOwner { key, owner }
        } else {
            Op::SetNote { key, note }
        }),
        2 => (key(), ttl(), 500i64..=3_000).prop_map(|(key, ttl, when_less_than)| Op::Touch {
            key,
            ttl,
            when_less_than
        }),
        2 => (key(), ttl()).prop_map(|(key, ttl)| Op::SetTtl { key, ttl }),
        2 => (key(), -2_000i64..=2_000).prop_map(|(key, by)| Op::ShiftExpiry { key, by }),
        4 => (key(), -2i64..=5, ttl()).prop_map(|(key, by, ttl)| Op::Increment { key, by, ttl }),
        4 => (key(), item(), 1u64..9, 500i64..=8_000).prop_map(|(key, item, value, ttl)| {
            Op::PutEntry {
                key,
                item,
                value,
                ttl,
            }
        }),
        1 => (key(), item()).prop_map(|(key, item)| Op::RemoveEntry { key, item }),
        1 => key().prop_map(|key| Op::Delete { key }),
        1 => (key(), note()).prop_map(|(key, note)| Op::DeleteIfNote { key, note }),
        4 => (300u64..=2_500).prop_map(|ms| Op::Wait { ms }),
        5 => (key(), 0u64..=2_500).prop_map(|(key, ms)| Op::WaitPastExpiry { key, ms }),
    ]
}

/// One row's story, the kind that could revive: a whole-row write,
/// anything, maybe entries that outlive the row, anything, a wait until
/// the row has expired (its entries often not yet), anything. "Anything"
/// is any operation on any key, waits included.
fn act(has_owner: bool) -> impl Strategy<Value = Vec<Op>> {
    let create = (key(), ttl(), row(has_owner), 0..3).prop_map(|(key, ttl, row, how)| match how {
        0 => Op::Put { key, ttl, row },
        1 => Op::InsertIfAbsent { key, ttl, row },
        // A `Cart` refuses it: no row (a story of what follows on none).
        _ => Op::Increment { key, by: 1, ttl },
    });
    let anything = || prop::collection::vec(op(has_owner), 0..=3);
    let outliving = prop::collection::vec((item(), 1u64..9, 1_500i64..=8_000), 0..=2);
    (
        create,
        anything(),
        outliving,
        anything(),
        0u64..=1_000,
        anything(),
    )
        .prop_map(|(create, first, outliving, then, past, last)| {
            let key = op_key(&create).expect("a write");
            let mut ops = vec![create];
            ops.extend(first);
            ops.extend(
                outliving
                    .into_iter()
                    .map(|(item, value, ttl)| Op::PutEntry {
                        key,
                        item,
                        value,
                        ttl,
                    }),
            );
            ops.extend(then);
            ops.push(Op::WaitPastExpiry { key, ms: past });
            ops.extend(last);
            ops
        })
}

/// One to three acts (their waits cut to [`WAITS_MS`] in all as they run).
fn sequence(has_owner: bool) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(act(has_owner), 1..=3).prop_map(|acts| acts.concat())
}

/// One case: up to [`LANES`] sequences, each on keys of its own, run side
/// by side (a case takes as long as its longest sequence).
fn lanes(has_owner: bool) -> impl Strategy<Value = Vec<Vec<Op>>> {
    prop::collection::vec(sequence(has_owner), 1..=LANES)
}

/// Milliseconds since the epoch of `t`, truncated (as the library
/// truncates its "now").
fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

/// The clock's readings just before and just after a call: every "now"
/// the call used lies between.
#[derive(Debug, Clone, Copy)]
struct Bracket {
    before: i64,
    after: i64,
}

/// Whether something expiring at a given instant was live for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Was {
    Live,
    Expired,
    /// Its expiry falls in the call's bracket: either.
    Either,
}

impl Bracket {
    fn was(self, expiry: i64) -> Was {
        if expiry + MARGIN_MS <= self.before {
            Was::Expired
        } else if expiry > self.after + MARGIN_MS {
            Was::Live
        } else {
            Was::Either
        }
    }

    /// The horizons of a conditional write made within the bracket.
    fn horizon(self) -> Self {
        Self {
            before: self.before + HORIZON_MS,
            after: self.after + HORIZON_MS,
        }
    }

    /// Whether `reported` is an expiry `ttl` after a "now" of the bracket.
    fn holds(self, reported: DateTime<Utc>, ttl: i64) -> bool {
        (self.before + ttl - MARGIN_MS..=self.after + ttl + MARGIN_MS).contains(&ms(reported))
    }
}

/// A row as the model knows it.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    expiry: i64,
    fields: Fields,
    /// Each entry's value and expiry (`fields.items` is unused).
    entries: BTreeMap<String, (u64, i64)>,
}

impl Row {
    fn whole(expiry: i64, fields: &Fields) -> Self {
        Row {
            expiry,
            fields: fields.clone(),
            entries: fields
                .items
                .iter()
                .map(|(k, v)| (k.clone(), (*v, expiry)))
                .collect(),
        }
    }
}

/// One sequence's run: its keys, the model, the log.
struct Run<'t, S: Subject> {
    table: &'t Table<S>,
    prefix: String,
    rows: Vec<Option<Row>>,
    log: String,
    started: Instant,
    /// Cells stored after the previous step, per key.
    stored: Vec<Vec<Cell>>,
    /// Cells the emulator collected between steps (gone without a write).
    collected: usize,
    /// What the sequence's waits have slept so far (ms).
    slept: u64,
    /// Steps on a row that was not live while entries of it outlived it,
    /// stored: chances to revive them.
    chances: usize,
}

impl<'t, S: Subject> Run<'t, S> {
    fn new(table: &'t Table<S>, prefix: String) -> Self {
        Run {
            table,
            prefix,
            rows: vec![None; KEYS],
            log: String::new(),
            started: Instant::now(),
            stored: vec![Vec::new(); KEYS],
            collected: 0,
            slept: 0,
            chances: 0,
        }
    }

    fn id(&self, key: usize) -> String {
        format!("{}-k{key}", self.prefix)
    }

    /// The model's row `key` as a call bracketed by `b` saw it.
    fn was(&self, key: usize, b: Bracket) -> Was {
        self.rows[key]
            .as_ref()
            .map_or(Was::Expired, |row| b.was(row.expiry))
    }

    fn row(&mut self, key: usize) -> &mut Row {
        self.rows[key].as_mut().expect("a live row in the model")
    }

    fn note(&mut self, line: impl fmt::Display) {
        let _ = writeln!(
            self.log,
            "  {:>6} ms  {line}",
            self.started.elapsed().as_millis()
        );
    }

    /// Run `ops`; on a failure, the step it failed at and why.
    async fn sequence(&mut self, ops: &[Op]) -> Result<(), (usize, String)> {
        for (i, op) in ops.iter().enumerate() {
            self.note(format_args!("#{i} {op:?}"));
            if let Some(key) = op_key(op) {
                self.count_chance(key);
            }
            let outcome = match self.step(op).await {
                Ok(()) => self.check_reads().await,
                Err(e) => Err(e),
            };
            if let Err(e) = outcome {
                let why = format!("step #{i} ({op:?}): {e}\nthe run:\n{}", self.log);
                return Err((i, why));
            }
            self.watch_collection(op).await;
        }
        Ok(())
    }

    /// Count a step on row `key` that could revive: the row is not live
    /// (by the model, as of now) while entries of it outlive it, stored.
    fn count_chance(&mut self, key: usize) {
        let now = Utc::now().timestamp_micros();
        let live = self.rows[key]
            .as_ref()
            .is_some_and(|row| row.expiry * 1_000 > now);
        let family = S::SCHEMA.maps[0].family;
        if !live
            && self.stored[key]
                .iter()
                .any(|c| c.family == family && c.timestamp_micros > now)
        {
            self.chances += 1;
        }
    }

    /// Count the cells that vanished since the previous step without a
    /// write to their row: the emulator's collection at work.
    async fn watch_collection(&mut self, op: &Op) {
        for key in 0..KEYS {
            let now = support::stored_cells(self.table, self.id(key)).await;
            let written = op_key(op) == Some(key);
            if !written {
                let gone = self.stored[key].iter().filter(|c| !now.contains(c)).count();
                self.collected += gone;
            }
            self.stored[key] = now;
        }
    }

    async fn step(&mut self, op: &Op) -> Step {
        let table = self.table;
        let t = || ms(Utc::now());
        match op {
            Op::Put { key, ttl, row } => {
                let expiry = t() + ttl;
                let value = S::build(&self.id(*key), instant(expiry), row);
                let written = table.put(&value).await.map_err(|e| format!("put: {e}"))?;
                ensure!(ms(written.expires_at) == expiry, "put reported {written:?}");
                self.rows[*key] = Some(Row::whole(expiry, row));
                self.note(format_args!("   written, expires {}", self.at(expiry)));
            }
            Op::InsertIfAbsent { key, ttl, row } => {
                let expiry = t() + ttl;
                let value = S::build(&self.id(*key), instant(expiry), row);
                let before = t();
                let inserted = table.insert_if_absent(&value).await;
                let b = Bracket { before, after: t() };
                // Judged when sent: a row live then wins.
                let was = self.was(*key, b);
                match inserted.map_err(|e| format!("insert_if_absent: {e}"))? {
                    Insert::Inserted(written) => {
                        ensure!(
                            was != Was::Live,
                            "won over a live row {:?}",
                            self.rows[*key]
                        );
                        ensure!(ms(written.expires_at) == expiry, "reported {written:?}");
                        self.rows[*key] = Some(Row::whole(expiry, row));
                        self.note(format_args!("   inserted, expires {}", self.at(expiry)));
                    }
                    Insert::Exists(live) => {
                        ensure!(
                            was != Was::Expired,
                            "lost to a row that had expired: {live:?}"
                        );
                        self.note("   exists");
                        self.check_row(*key, Some(&live), b, "the row insert_if_absent found")?;
                    }
                }
            }
            Op::SetNote { key, note } => {
                let note = (*note).to_owned();
                self.update(
                    *key,
                    |u| u.set(S::note(), &note),
                    |f| f.note = Some(note.clone()),
                )
                .await?;
            }
            Op::ClearNote { key } => {
                self.update(*key, |u| u.clear(S::note()), |f| f.note = None)
                    .await?;
            }
            Op::SetOwner { key, owner } => {
                let owner = (*owner).to_owned();
                let field = S::owner().expect("only structs with an owner set it");
                self.update(
                    *key,
                    |u| u.set(field, &owner),
                    |f| f.owner = Some(owner.clone()),
                )
                .await?;
            }
            Op::Touch {
                key,
                ttl,
                when_less_than,
            } => {
                let before = t();
                let touched = table
                    .touch(
                        self.id(*key).as_str(),
                        TimeDelta::milliseconds(*ttl),
                        TimeDelta::milliseconds(*when_less_than),
                    )
                    .await
                    .map_err(|e| format!("touch: {e}"))?;
                let b = Bracket { before, after: t() };
                let was = self.was(*key, b.horizon());
                let Some(touched) = touched else {
                    return self.gone(*key, b, "touch");
                };
                ensure!(was != Was::Expired, "touched an expired row: {touched:?}");
                let current = self.row(*key).expiry;
                // Rewritten at "now" iff less than `when_less_than` was left
                // and the new expiry is later.
                let must = current - b.before < when_less_than - MARGIN_MS
                    && b.before + ttl > current + MARGIN_MS;
                let must_not = current - b.after >= when_less_than + MARGIN_MS
                    || b.after + ttl <= current - MARGIN_MS;
                if touched.rewritten {
                    ensure!(
                        !must_not,
                        "rewritten, expiring at {}: {touched:?}",
                        self.at(current)
                    );
                    ensure!(b.holds(touched.expires_at, *ttl), "reported {touched:?}");
                    ensure!(
                        ms(touched.expires_at) > current,
                        "touch moved the expiry from {} to {}",
                        self.at(current),
                        touched.expires_at
                    );
                    self.row(*key).expiry = ms(touched.expires_at);
                } else {
                    ensure!(
                        !must,
                        "not rewritten, expiring at {}: {touched:?}",
                        self.at(current)
                    );
                    ensure!(ms(touched.expires_at) == current, "reported {touched:?}");
                }
                self.note(format_args!("   {touched:?}"));
            }
            Op::SetTtl { key, ttl } => {
                let before = t();
                let retimed = table
                    .set_ttl(self.id(*key).as_str(), TimeDelta::milliseconds(*ttl))
                    .await
                    .map_err(|e| format!("set_ttl: {e}"))?;
                let b = Bracket { before, after: t() };
                let was = self.was(*key, b.horizon());
                let Some(m) = retimed else {
                    return self.gone(*key, b, "set_ttl");
                };
                ensure!(
                    was != Was::Expired,
                    "re-timed an expired row to {}",
                    m.expires_at
                );
                ensure!(
                    b.holds(m.expires_at, *ttl),
                    "set_ttl reported {}",
                    m.expires_at
                );
                self.row(*key).expiry = ms(m.expires_at);
                self.note(format_args!("   expires {}", m.expires_at));
            }
            Op::ShiftExpiry { key, by } => {
                let before = t();
                let shifted = table
                    .shift_expiry(self.id(*key).as_str(), TimeDelta::milliseconds(*by))
                    .await;
                let b = Bracket { before, after: t() };
                let was = self.was(*key, b.horizon());
                match shifted {
                    Ok(Some(m)) => {
                        ensure!(
                            was != Was::Expired,
                            "shifted an expired row to {}",
                            m.expires_at
                        );
                        let expiry = self.row(*key).expiry + by;
                        ensure!(ms(m.expires_at) == expiry, "shifted to {}", m.expires_at);
                        ensure!(expiry + MARGIN_MS > b.before, "shifted into the past");
                        self.row(*key).expiry = expiry;
                        self.note(format_args!("   expires {}", m.expires_at));
                    }
                    Ok(None) => return self.gone(*key, b, "shift_expiry"),
                    Err(Error::ExpiryNotInFuture { .. }) => {
                        ensure!(was != Was::Expired, "an expired row's expiry checked");
                        let expiry = self.row(*key).expiry + by;
                        ensure!(expiry <= b.after + MARGIN_MS, "refused {}", self.at(expiry));
                        self.note("   refused: not in the future");
                    }
                    Err(e) => return Err(format!("shift_expiry: {e}")),
                }
            }
            Op::Increment { key, by, ttl } => {
                let before = t();
                let counted = table
                    .increment(
                        self.id(*key).as_str(),
                        S::views(),
                        *by,
                        Expiry::Ttl(TimeDelta::milliseconds(*ttl)),
                    )
                    .await;
                let b = Bracket { before, after: t() };
                let was = self.was(*key, b);
                match counted {
                    Ok(c) => {
                        let in_row = self.rows[*key].as_ref().is_some_and(|r| {
                            was != Was::Expired
                                && c.value == r.fields.views + by
                                && ms(c.expires_at) == r.expiry
                        });
                        if in_row {
                            self.row(*key).fields.views += by;
                        } else {
                            ensure!(!S::HAS_OWNER, "counted {c:?} into no live row");
                            // A new row replaces one that expires before
                            // the horizon of the step that opens it.
                            ensure!(
                                self.was(*key, b.horizon()) != Was::Live,
                                "counted {c:?} beside the live row"
                            );
                            ensure!(c.value == *by && b.holds(c.expires_at, *ttl), "{c:?}");
                            let fields = Fields {
                                owner: None,
                                note: None,
                                views: *by,
                                items: BTreeMap::new(),
                            };
                            self.rows[*key] = Some(Row::whole(ms(c.expires_at), &fields));
                        }
                        self.note(format_args!("   {c:?}"));
                    }
                    Err(Error::NoLiveRow { .. }) if S::HAS_OWNER => {
                        return self.gone(*key, b, "increment");
                    }
                    Err(e) => return Err(format!("increment: {e}")),
                }
            }
            Op::PutEntry {
                key,
                item,
                value,
                ttl,
            } => {
                let before = t();
                let written = table
                    .put_entry(
                        self.id(*key).as_str(),
                        S::items(),
                        &(*item).to_owned(),
                        value,
                        Expiry::Ttl(TimeDelta::milliseconds(*ttl)),
                    )
                    .await
                    .map_err(|e| format!("put_entry: {e}"))?;
                let b = Bracket { before, after: t() };
                let was = self.was(*key, b.horizon());
                let Some(w) = written else {
                    return self.gone(*key, b, "put_entry");
                };
                ensure!(
                    was != Was::Expired,
                    "an entry written into an expired row: {w:?}"
                );
                ensure!(b.holds(w.expires_at, *ttl), "put_entry reported {w:?}");
                let expiry = ms(w.expires_at);
                self.row(*key)
                    .entries
                    .insert((*item).to_owned(), (*value, expiry));
                self.note(format_args!("   expires {}", self.at(expiry)));
            }
            Op::RemoveEntry { key, item } => {
                table
                    .remove_entry(self.id(*key).as_str(), S::items(), &(*item).to_owned())
                    .await
                    .map_err(|e| format!("remove_entry: {e}"))?;
                if let Some(row) = &mut self.rows[*key] {
                    row.entries.remove(*item);
                }
            }
            Op::Delete { key } => {
                table
                    .delete(self.id(*key).as_str())
                    .await
                    .map_err(|e| format!("delete: {e}"))?;
                self.rows[*key] = None;
            }
            Op::DeleteIfNote { key, note } => {
                let before = t();
                let deleted = table
                    .delete_if(
                        self.id(*key).as_str(),
                        S::note().equals(&(*note).to_owned()),
                    )
                    .await
                    .map_err(|e| format!("delete_if: {e}"))?;
                let b = Bracket { before, after: t() };
                // Judged when sent: no horizon.
                let was = self.was(*key, b);
                let holds = self.rows[*key]
                    .as_ref()
                    .is_some_and(|r| r.fields.note.as_deref() == Some(*note));
                if deleted {
                    ensure!(
                        holds && was != Was::Expired,
                        "deleted {:?}",
                        self.rows[*key]
                    );
                    self.rows[*key] = None;
                } else if holds {
                    return self.gone_at(*key, b, b, "delete_if");
                }
                self.note(format_args!("   deleted: {deleted}"));
            }
            Op::Wait { ms } => self.sleep(*ms).await,
            Op::WaitPastExpiry { key, ms } => {
                let left = self.rows[*key]
                    .as_ref()
                    .map_or(0, |row| row.expiry - t())
                    .max(0);
                self.sleep(left.unsigned_abs() + ms).await;
            }
        }
        Ok(())
    }

    /// Sleep `ms`, within what is left of [`WAITS_MS`].
    async fn sleep(&mut self, ms: u64) {
        let ms = ms.min(WAITS_MS - self.slept);
        self.slept += ms;
        self.note(format_args!("   sleeping {ms} ms"));
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    /// A partial update of row `key`: `Some` keeps the expiry and applies
    /// `change` to the model.
    async fn update(
        &mut self,
        key: usize,
        set: impl FnOnce(bigtable_ttl::Update<'_, S>) -> bigtable_ttl::Update<'_, S>,
        change: impl FnOnce(&mut Fields),
    ) -> Step {
        let before = ms(Utc::now());
        let id = self.id(key);
        let written = set(self.table.update(id.as_str()))
            .apply()
            .await
            .map_err(|e| format!("update: {e}"))?;
        let b = Bracket {
            before,
            after: ms(Utc::now()),
        };
        let was = self.was(key, b.horizon());
        let Some(w) = written else {
            return self.gone(key, b, "update");
        };
        ensure!(was != Was::Expired, "updated an expired row: {w:?}");
        let row = self.row(key);
        ensure!(
            ms(w.expires_at) == row.expiry,
            "the update moved the expiry: {w:?}"
        );
        change(&mut row.fields);
        Ok(())
    }

    /// A conditional write made within `b` found no live row `key`: right
    /// unless the model's row was certainly live at its horizon. A row that
    /// may still be live now keeps its expiry (it only expires before the
    /// horizon); otherwise it is absent from now on.
    fn gone(&mut self, key: usize, b: Bracket, call: &str) -> Step {
        self.gone_at(key, b.horizon(), b, call)
    }

    /// [`Self::gone`] for a write judged within `judged` (its horizon, or
    /// `b` itself for one judged when sent).
    fn gone_at(&mut self, key: usize, judged: Bracket, b: Bracket, call: &str) -> Step {
        ensure!(
            self.was(key, judged) != Was::Live,
            "{call} found no live row when it judged it, the model's is {:?}",
            self.rows[key]
        );
        if self.was(key, b) == Was::Expired {
            self.rows[key] = None;
        }
        self.note(format_args!("   {call}: no live row"));
        Ok(())
    }

    /// An expiry, relative to the start of the run.
    fn at(&self, expiry: i64) -> String {
        let start = ms(Utc::now()) - i64::try_from(self.started.elapsed().as_millis()).unwrap();
        format!("at {} ms", expiry - start)
    }

    /// `get`, `entries` and `scan` of every key against the model.
    async fn check_reads(&mut self) -> Step {
        for key in 0..KEYS {
            let before = ms(Utc::now());
            let read = self
                .table
                .get(self.id(key).as_str())
                .await
                .map_err(|e| format!("get: {e}"))?;
            let b = Bracket {
                before,
                after: ms(Utc::now()),
            };
            self.check_row(key, read.as_ref(), b, "get")?;

            let before = ms(Utc::now());
            let entries = self
                .table
                .entries(self.id(key).as_str(), S::items())
                .await
                .map_err(|e| format!("entries: {e}"))?;
            let b = Bracket {
                before,
                after: ms(Utc::now()),
            };
            let entries: BTreeMap<String, (u64, DateTime<Utc>)> = entries
                .into_iter()
                .map(|e| (e.key, (e.value, e.expires_at)))
                .collect();
            self.check_entries(key, &entries, b)?;
        }
        let before = ms(Utc::now());
        let scanned = self
            .table
            .scan(Scan::prefix(format!("{}-", self.prefix)))
            .await
            .map_err(|e| format!("scan: {e}"))?;
        let b = Bracket {
            before,
            after: ms(Utc::now()),
        };
        for key in 0..KEYS {
            let id = self.id(key);
            let row = scanned
                .iter()
                .find(|r| r.row_key().ok() == Some(id.clone().into_bytes()));
            self.check_row(key, row, b, "scan")?;
        }
        ensure!(
            scanned.len() <= KEYS,
            "scan read rows of no key: {scanned:?}"
        );
        Ok(())
    }

    /// A read of row `key` (`None`: absent) against the model; an outcome
    /// the bracket leaves open settles the model.
    fn check_row(&mut self, key: usize, read: Option<&Expiring<S>>, b: Bracket, how: &str) -> Step {
        let was = self.was(key, b);
        let Some(read) = read else {
            ensure!(
                was != Was::Live,
                "{how}: row k{key} absent, the model's is {:?}",
                self.rows[key]
            );
            self.rows[key] = None;
            return Ok(());
        };
        ensure!(
            was != Was::Expired,
            "{how}: row k{key} read back {read:?}, though {}",
            match &self.rows[key] {
                None => "it read as absent or was deleted before".to_owned(),
                Some(row) => format!("it expired {}", self.at(row.expiry)),
            }
        );
        let row = self.rows[key].as_mut().expect("not expired");
        ensure!(
            ms(read.expires_at) == row.expiry && ms(read.value.expires_at_field()) == row.expiry,
            "{how}: row k{key} read {read:?}, expiring at {}",
            row.expiry
        );
        let fields = read.value.fields();
        ensure!(
            (&fields.owner, &fields.note, fields.views)
                == (&row.fields.owner, &row.fields.note, row.fields.views),
            "{how}: row k{key} read {fields:?}, the model's is {:?}",
            row.fields
        );
        let entries: BTreeMap<String, (u64, DateTime<Utc>)> = fields
            .items
            .into_iter()
            .map(|(k, v)| (k, (v, read.expires_at)))
            .collect();
        self.compare_entries(key, &entries, b, false, how)
    }

    /// What `entries` read of row `key` against the model (each entry's
    /// expiry: its own, or the row's when sooner).
    fn check_entries(
        &mut self,
        key: usize,
        read: &BTreeMap<String, (u64, DateTime<Utc>)>,
        b: Bracket,
    ) -> Step {
        match self.was(key, b) {
            Was::Expired => {
                ensure!(read.is_empty(), "entries of expired row k{key}: {read:?}");
                Ok(())
            }
            // An empty answer may be a row that has just expired.
            Was::Either if read.is_empty() => Ok(()),
            Was::Live | Was::Either => self.compare_entries(key, read, b, true, "entries"),
        }
    }

    /// Entries read from a live row `key` against the model's: every one
    /// read is in the model and has not expired, every one certainly live
    /// is read, with its value (and, with `expiries`, its expiry).
    fn compare_entries(
        &mut self,
        key: usize,
        read: &BTreeMap<String, (u64, DateTime<Utc>)>,
        b: Bracket,
        expiries: bool,
        how: &str,
    ) -> Step {
        let row = self.rows[key].as_mut().expect("a live row");
        for (item, (value, expires_at)) in read {
            let Some(&(model, expiry)) = row.entries.get(item) else {
                return Err(format!(
                    "{how}: entry {item}={value} of k{key}, which the model does not hold: {:?}",
                    row.entries
                ));
            };
            ensure!(
                b.was(expiry) != Was::Expired,
                "{how}: entry {item} of k{key} read after its expiry ({expiry})"
            );
            ensure!(
                *value == model,
                "{how}: entry {item} of k{key} is {value}, not {model}"
            );
            if expiries {
                ensure!(
                    ms(*expires_at) == expiry.min(row.expiry),
                    "{how}: entry {item} of k{key} expires {expires_at}, not {}",
                    expiry.min(row.expiry)
                );
            }
        }
        let mut left = BTreeMap::new();
        for (item, (value, expiry)) in std::mem::take(&mut row.entries) {
            match b.was(expiry) {
                Was::Live => ensure!(
                    read.contains_key(&item),
                    "{how}: entry {item}={value} of k{key} missing, expiring at {expiry}"
                ),
                Was::Either if !read.contains_key(&item) => continue,
                Was::Expired => continue,
                Was::Either => {}
            }
            left.insert(item, (value, expiry));
        }
        row.entries = left;
        Ok(())
    }
}

/// The key an operation writes to, if any.
fn op_key(op: &Op) -> Option<usize> {
    match op {
        Op::Put { key, .. }
        | Op::InsertIfAbsent { key, .. }
        | Op::SetNote { key, .. }
        | Op::ClearNote { key }
        | Op::SetOwner { key, .. }
        | Op::Touch { key, .. }
        | Op::SetTtl { key, .. }
        | Op::ShiftExpiry { key, .. }
        | Op::Increment { key, .. }
        | Op::PutEntry { key, .. }
        | Op::RemoveEntry { key, .. }
        | Op::Delete { key }
        | Op::DeleteIfNote { key, .. } => Some(*key),
        Op::Wait { .. } | Op::WaitPastExpiry { .. } => None,
    }
}

/// Without `PROPTEST_CASES`, no sequence starts after this long (the
/// remaining cases pass without running, and the count says so): the test
/// stays bounded on a loaded machine.
const BUDGET: Duration = Duration::from_secs(60);

fn no_write_revives<S: Subject>(default_cases: u32) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let table = rt.block_on(support::table::<S>(&Clock::system()));
    let asked: Option<u32> = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    let cases = asked.unwrap_or(default_cases);
    let budget = asked.is_none().then_some(BUDGET);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_shrink_time: 180_000,
        ..Config::default()
    });
    let started = Instant::now();
    let (runs, sequences, collected, chances) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    // Once a case has failed, proptest shrinks it. A failure that depends
    // on when a call ran relative to an expiry may not come back on every
    // run, so each candidate gets three runs to fail; and steps past the
    // earliest failing one so far are not run (they cannot matter), so that
    // they cost nothing and are shrunk away.
    let failed = AtomicBool::new(false);
    let steps = AtomicUsize::new(usize::MAX);
    let result = runner.run(&lanes(S::HAS_OWNER), |lanes| {
        let shrinking = failed.load(Ordering::Relaxed);
        if !shrinking && budget.is_some_and(|b| started.elapsed() > b) {
            return Ok(());
        }
        sequences.fetch_add(lanes.len(), Ordering::Relaxed);
        let limit = steps.load(Ordering::Relaxed);
        for _ in 0..if shrinking { 3 } else { 1 } {
            let case = runs.fetch_add(1, Ordering::Relaxed);
            let outcomes = rt.block_on(join_all(lanes.iter().enumerate().map(|(lane, ops)| {
                let mut run = Run::new(&table, format!("run{case:04}-l{lane}"));
                async move {
                    let outcome = run.sequence(&ops[..ops.len().min(limit)]).await;
                    ((run.collected, run.chances), outcome)
                }
            })));
            let mut first = None;
            for (lane, ((cells, tries), outcome)) in outcomes.into_iter().enumerate() {
                collected.fetch_add(cells, Ordering::Relaxed);
                chances.fetch_add(tries, Ordering::Relaxed);
                if let (None, Err((step, why))) = (&first, outcome) {
                    first = Some((step, format!("sequence {lane}, {why}")));
                }
            }
            if let Some((step, why)) = first {
                failed.store(true, Ordering::Relaxed);
                steps.fetch_min(step + 1, Ordering::Relaxed);
                return Err(TestCaseError::fail(why));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    println!(
        "{}: {} sequences ({} cases of {cases}) in {:?}; the emulator collected {} cells \
         between steps; {} steps on a row that was not live while entries of it outlived it",
        S::SCHEMA.table,
        sequences.load(Ordering::Relaxed),
        runs.load(Ordering::Relaxed),
        started.elapsed(),
        collected.load(Ordering::Relaxed),
        chances.load(Ordering::Relaxed)
    );
}

#[test]
fn no_write_revives_a_row_with_a_required_field() {
    no_write_revives::<Cart>(20);
}

#[test]
fn no_write_revives_a_row_an_increment_creates() {
    no_write_revives::<Tally>(16);
}
