//! Tables of many structs: a stateful property test on Google's Bigtable
//! emulator over random layouts, against a model of the cells stored and
//! of each struct's own view of them (`guide/sharing-tables.md`,
//! `guide/rows-and-liveness.md`).
//!
//! Derive macros fix each struct's table, families and columns at compile
//! time, so the test keeps a zoo of them ([`zoo`]) and each case draws a
//! layout from it: 2 to 4 structs sharing one fresh table
//! (`Table::with_name`), each given one of two key prefixes, so that
//! structs of one prefix share row keys (a vertical split) and structs of
//! the other meet them in every scan (single-table design). The zoo has
//! shared and own families, a family one struct owns, a struct of two
//! families, overlapping column names (`name`, `status`, `note`), maps
//! (each in its own family), counters, `#[ttl(written_at)]` with distinct
//! shadows beside each other in one family and one default shadow shared
//! by two structs, all-`Option` structs, `#[bigtable(default)]` fields,
//! `marker = "..."` overrides (one keeping another struct's marker, as a
//! renamed struct does), two structs of one name in different modules, and
//! both TTL strategies. Structs that would write the same cells go through
//! different `Connection`s (as two services would); each case also checks
//! that one connection refuses such a pair (`Error::Layout`, nothing sent).
//!
//! Operations: `put`, `insert_if_absent`, `put_if`, `delete`, `delete_if`,
//! `update` (set, clear, `.ttl()`, in combination), `touch`, `set_ttl`,
//! `shift_expiry`, `increment`, `put_entry`, `remove_entry`, `add_markers`; rows written as earlier
//! versions wrote them (the one-byte `\0` marker, sometimes a column
//! short); cells of another client (no marker, nothing deleted); the
//! table's clock moved forward, and real sleeps (the emulator collects
//! expired cells by its wall clock).
//!
//! The table's clock is kept [`LEAD`] ahead of the wall clock (each step
//! starts by moving it there), so garbage collection only ever removes
//! cells the clock already says have expired, under both strategies (a
//! default-TTL family is collected the moment its cells expire by the wall
//! clock, a one-second one a second later); every call's "now" is known
//! exactly. Conditional writes judge the row at their horizon, `now` plus
//! one second under the default write policy.
//!
//! After every step the stored cells are read raw and compared with the
//! model (every stored cell one the model holds, every cell the model
//! holds and is not stored expired), so a write of one struct that touched
//! another's cells is caught at once; then every struct reads every key
//! (`get`), scans with `limit(n)` forward and reversed (skipping what does
//! not decode) and without a limit (strict: a `scan`, a `stream` or a
//! `scan_parallel` in turn), and
//! each answer must be the model's. `add_markers`' counters must add up to
//! the rows it read, and name the rows the model says.
//!
//! Disagreements found are written up in `/work/notes/sm-findings.md`.
//! `PROPTEST_CASES` sets the number of cases, without the time budget.

#[macro_use]
mod zoo;
mod handle;
mod model;

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bigtable_ttl::data::Mutation;
use bigtable_ttl::data::RawTable;
use bigtable_ttl::{Clock, CodecError, Connection, Error, Scan};
use chrono::{TimeDelta, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::support;
use handle::{instant, ms, Handle, Inserted, ReadAs, Rows};
use model::{apply, judge, mark_class, Cells, MarkClass, Mut, Seen};
use support::model_check::{self, ensure, read_agrees, scan_agrees, Step};
use zoo::{Gen, Kind, Who, ALL, CLUSTERS, RUNNABLE};

/// Row keys of a case: two prefixes, two keys each.
const KEYS: [&str; 4] = ["a#0", "a#1", "b#0", "b#1"];

/// How far past its "now" a conditional write judges the row, under the
/// default write policy (see `guide/conditional-writes.md`).
const HORIZON_MS: i64 = 1_000;

/// How far ahead of the wall clock the table's clock is kept (ms): more
/// than a step and its checks take, so that no cell the clock sees as
/// live is collected meanwhile.
const LEAD: i64 = 1_500;

/// Real sleeping per case, at most.
const SLEEPS_MS: u64 = 4_000;

/// Without `PROPTEST_CASES`, no case starts after this long.
const BUDGET: Duration = Duration::from_secs(50);

/// The cases run without `PROPTEST_CASES`.
const CASES: u32 = 24;

/// Structs per case, and which key prefix (0: `a#`, 1: `b#`) each uses.
#[derive(Debug, Clone)]
struct Layout {
    structs: Vec<(Who, usize)>,
    /// Index into the pairs one connection refuses: the pair this case
    /// checks.
    probe: prop::sample::Index,
}

/// One step. `who` indexes the layout (modulo its length); `key` is
/// resolved by [`Case::key`]; `col` indexes the struct's columns (modulo);
/// durations are ms.
#[derive(Debug, Clone)]
enum Op {
    Put {
        who: usize,
        key: u8,
        ttl: i64,
        seed: u8,
    },
    Insert {
        who: usize,
        key: u8,
        ttl: i64,
        seed: u8,
    },
    PutIf {
        who: usize,
        key: u8,
        ttl: i64,
        seed: u8,
        col: usize,
        cseed: u8,
    },
    Delete {
        who: usize,
        key: u8,
    },
    DeleteIf {
        who: usize,
        key: u8,
        col: usize,
        cseed: u8,
    },
    Update {
        who: usize,
        key: u8,
        changes: Vec<(usize, Option<u8>)>,
        ttl: Option<i64>,
    },
    Touch {
        who: usize,
        key: u8,
        ttl: i64,
        wlt: i64,
    },
    SetTtl {
        who: usize,
        key: u8,
        ttl: i64,
    },
    Shift {
        who: usize,
        key: u8,
        by: i64,
    },
    RemoveEntry {
        who: usize,
        key: u8,
        entry: u8,
    },
    Increment {
        who: usize,
        key: u8,
        by: i64,
        ttl: i64,
    },
    PutEntry {
        who: usize,
        key: u8,
        entry: u8,
        seed: u8,
        ttl: i64,
    },
    AddMarkers {
        who: usize,
    },
    /// A row as an earlier version wrote it (`\0` marker), without column
    /// `drop` when given.
    Legacy {
        who: usize,
        key: u8,
        ttl: i64,
        seed: u8,
        drop: Option<usize>,
    },
    /// Another client's cell in one of the struct's columns (or, past
    /// them, a column no struct has), nothing deleted.
    Raw {
        who: usize,
        key: u8,
        col: usize,
        ttl: i64,
        seed: u8,
    },
    Advance {
        ms: i64,
    },
    Sleep {
        ms: u64,
    },
}

fn layout() -> impl Strategy<Value = Layout> {
    let pool = prop_oneof![
        3 => Just(CLUSTERS[0].to_vec()),
        2 => Just(CLUSTERS[1].to_vec()),
        2 => Just(CLUSTERS[2].to_vec()),
        2 => Just(RUNNABLE.to_vec()),
    ];
    (pool, 2usize..=4)
        .prop_flat_map(|(pool, n)| {
            (
                prop::sample::subsequence(pool, n).prop_shuffle(),
                prop::collection::vec(0usize..2, n),
                any::<prop::sample::Index>(),
            )
        })
        .prop_map(|(structs, groups, probe)| Layout {
            structs: structs.into_iter().zip(groups).collect(),
            probe,
        })
}

fn ttl() -> impl Strategy<Value = i64> {
    300i64..=5_000
}

fn seed() -> impl Strategy<Value = u8> {
    0u8..6
}

fn op() -> impl Strategy<Value = Op> {
    let who = 0usize..4;
    let key = 0u8..8;
    let col = 0usize..4;
    prop_oneof![
        5 => (who.clone(), key.clone(), ttl(), seed())
            .prop_map(|(who, key, ttl, seed)| Op::Put { who, key, ttl, seed }),
        4 => (who.clone(), key.clone(), ttl(), seed())
            .prop_map(|(who, key, ttl, seed)| Op::Insert { who, key, ttl, seed }),
        2 => (who.clone(), key.clone(), ttl(), seed(), col.clone(), seed())
            .prop_map(|(who, key, ttl, seed, col, cseed)| Op::PutIf { who, key, ttl, seed, col, cseed }),
        2 => (who.clone(), key.clone()).prop_map(|(who, key)| Op::Delete { who, key }),
        2 => (who.clone(), key.clone(), col.clone(), seed())
            .prop_map(|(who, key, col, cseed)| Op::DeleteIf { who, key, col, cseed }),
        3 => (
                who.clone(),
                key.clone(),
                prop::collection::vec((col.clone(), prop::option::weighted(0.6, seed())), 1..=3),
                prop::option::weighted(0.3, ttl()),
            )
            .prop_map(|(who, key, changes, ttl)| Op::Update { who, key, changes, ttl }),
        2 => (who.clone(), key.clone(), ttl(), 500i64..=4_000)
            .prop_map(|(who, key, ttl, wlt)| Op::Touch { who, key, ttl, wlt }),
        1 => (who.clone(), key.clone(), ttl()).prop_map(|(who, key, ttl)| Op::SetTtl { who, key, ttl }),
        1 => (who.clone(), key.clone(), prop_oneof![-2_000i64..=-100, 100i64..=3_000])
            .prop_map(|(who, key, by)| Op::Shift { who, key, by }),
        1 => (who.clone(), key.clone(), 0u8..2).prop_map(|(who, key, entry)| Op::RemoveEntry { who, key, entry }),
        2 => (who.clone(), key.clone(), 1i64..=3, ttl())
            .prop_map(|(who, key, by, ttl)| Op::Increment { who, key, by, ttl }),
        2 => (who.clone(), key.clone(), 0u8..2, seed(), 500i64..=6_000)
            .prop_map(|(who, key, entry, seed, ttl)| Op::PutEntry { who, key, entry, seed, ttl }),
        2 => who.clone().prop_map(|who| Op::AddMarkers { who }),
        3 => (who.clone(), key.clone(), ttl(), seed(), prop::option::weighted(0.3, col.clone()))
            .prop_map(|(who, key, ttl, seed, drop)| Op::Legacy { who, key, ttl, seed, drop }),
        3 => (who, key, 0usize..5, 300i64..=4_000, seed())
            .prop_map(|(who, key, col, ttl, seed)| Op::Raw { who, key, col, ttl, seed }),
        2 => (100i64..=2_000).prop_map(|ms| Op::Advance { ms }),
        3 => (300u64..=1_500).prop_map(|ms| Op::Sleep { ms }),
    ]
}

fn case() -> impl Strategy<Value = (Layout, Vec<Op>)> {
    (layout(), prop::collection::vec(op(), 1..=24))
}

/// A line of a case's log.
fn note(log: &mut String, started: Instant, line: fmt::Arguments<'_>) {
    let _ = writeln!(log, "  {:>6} ms  {line}", started.elapsed().as_millis());
}

macro_rules! note {
    ($case:expr, $($fmt:tt)+) => {
        note(&mut $case.log, $case.started, format_args!($($fmt)+))
    };
}

/// Every pair of the zoo one connection refuses, by the guide.
fn clashing_pairs() -> Vec<(Who, Who, &'static str)> {
    let mut pairs = Vec::new();
    for (i, a) in ALL.iter().enumerate() {
        for b in &ALL[i + 1..] {
            if let Some(why) = a.clash(*b) {
                pairs.push((*a, *b, why));
            }
        }
    }
    pairs
}

/// The hand-written shapes against the derive's schemas: a typo in the
/// model's copy would otherwise read as a finding.
fn check_shapes() {
    for who in ALL {
        let (shape, schema) = (who.shape(), who.schema());
        let mut families: Vec<&str> = schema.families.to_vec();
        let mut ours: Vec<&str> = shape.families.to_vec();
        assert_eq!(families.remove(0), ours.remove(0), "{who}: first family");
        families.sort_unstable();
        ours.sort_unstable();
        assert_eq!(families, ours, "{who}: families");
        assert_eq!(schema.marker, shape.marker, "{who}: marker");
        assert_eq!(schema.owns_family, shape.owns_family, "{who}: owns_family");
        assert_eq!(
            schema.written_at.map(|s| (s.family, s.qualifier)),
            shape.shadow,
            "{who}: shadow"
        );
        assert_eq!(
            schema.maps.first().map(|m| m.family),
            shape.map,
            "{who}: map"
        );
        let columns: Vec<_> = schema
            .columns
            .iter()
            .map(|c| {
                let kind = match c.when_absent {
                    bigtable_ttl::WhenAbsent::Required => Kind::Required,
                    bigtable_ttl::WhenAbsent::ReadsNone => Kind::Optional,
                    bigtable_ttl::WhenAbsent::ReadsDefault => Kind::WithDefault,
                    bigtable_ttl::WhenAbsent::ReadsZero => Kind::Counter,
                };
                (c.family, c.qualifier, kind)
            })
            .collect();
        let ours: Vec<_> = shape
            .columns
            .iter()
            .map(|c| (c.family, c.qualifier, c.kind))
            .collect();
        assert_eq!(columns, ours, "{who}: columns");
    }
}

/// What one case drives: the layout's tables, on the connections its
/// pairs need.
struct Case<'c> {
    name: String,
    structs: Vec<(Who, usize)>,
    handles: Vec<Box<dyn Handle>>,
    raw: RawTable,
    clock: Clock,
    cells: Vec<Cells>,
    log: String,
    started: Instant,
    slept: u64,
    counts: &'c Counts,
}

/// What the cases saw, for the summary line.
#[derive(Default)]
struct Counts {
    cases: AtomicUsize,
    steps: AtomicUsize,
    incomplete: AtomicUsize,
    collected: AtomicUsize,
    marked: AtomicUsize,
    other_rows: AtomicUsize,
    strangers: AtomicUsize,
    refused: AtomicUsize,
    inconclusive: AtomicUsize,
}

fn bump(c: &AtomicUsize, by: usize) {
    c.fetch_add(by, Ordering::Relaxed);
}

/// A read's answer in the model's terms: `Error::Decode` of a missing
/// column is an incomplete row.
fn normalise(read: &Result<Seen, Error>, key: &str) -> Result<Seen, String> {
    match read {
        Ok(seen) => Ok(seen.clone()),
        Err(Error::Decode(e)) if e.source == CodecError::Missing && e.row_key == key.as_bytes() => {
            Ok(Seen::Incomplete(e.column.clone()))
        }
        Err(Error::Decode(e))
            if e.source == CodecError::WrittenByAnotherStruct && e.row_key == key.as_bytes() =>
        {
            Ok(Seen::Stranger)
        }
        Err(e) => Err(format!("{key}: {e:?}")),
    }
}

/// A rewrite of a row that another struct of the same marker wrote, as the
/// model says: refused with `CodecError::WrittenByAnotherStruct`, nothing
/// written.
fn refused_as_stranger<V: fmt::Debug>(call: &str, id: &str, got: Result<V, Error>) -> Step {
    match got {
        Err(Error::Decode(e))
            if e.source == CodecError::WrittenByAnotherStruct && e.row_key == id.as_bytes() =>
        {
            Ok(())
        }
        other => Err(format!(
            "{call}({id}) answered {other:?}; the model's row is another struct's"
        )),
    }
}

fn to_proto(muts: &[Mut]) -> Vec<Mutation> {
    muts.iter()
        .map(|m| match m {
            Mut::DeleteColumn(f, q) => Mutation::delete_from_column(*f, q.clone()),
            Mut::DeleteFamily(f) => Mutation::delete_from_family(*f),
            Mut::Set(f, q, ts, v) => Mutation::set_cell(*f, q.clone(), *ts, v.clone()),
        })
        .collect()
}

impl<'c> Case<'c> {
    /// The layout's table, created, each struct on a connection of its own
    /// where one connection would refuse it beside another.
    async fn open(
        conns: &[Connection],
        number: usize,
        layout: &Layout,
        counts: &'c Counts,
    ) -> Result<Case<'c>, String> {
        let name = format!("lsm{number:04}");
        let mut structs: Vec<(Who, usize)> = Vec::new();
        for (who, group) in &layout.structs {
            if !structs.iter().any(|(w, _)| w == who) {
                structs.push((*who, *group));
            }
        }
        // The first connection no struct on it clashes with.
        let mut on: Vec<usize> = Vec::new();
        for (i, (who, _)) in structs.iter().enumerate() {
            let c = (0..conns.len())
                .find(|&c| (0..i).all(|j| on[j] != c || who.clash(structs[j].0).is_none()))
                .expect("enough connections");
            on.push(c);
        }
        let clock = Clock::manual(instant(ms(Utc::now()) + LEAD));
        let mut handles = Vec::new();
        for (i, (who, _)) in structs.iter().enumerate() {
            handle::ensure(*who, &conns[on[i]], &name)
                .await
                .map_err(|e| format!("ensure_schema of {who}: {e}"))?;
        }
        for (i, (who, _)) in structs.iter().enumerate() {
            handles.push(handle::open(*who, &conns[on[i]], &name, &clock));
        }
        let mut log = String::new();
        for (i, (who, group)) in structs.iter().enumerate() {
            let _ = writeln!(
                log,
                "  {who} on prefix {} through connection {}",
                ["a#", "b#"][*group],
                on[i]
            );
        }
        Ok(Case {
            raw: RawTable::new(&conns[0], &name),
            name,
            structs,
            handles,
            clock,
            cells: vec![Cells::new(); KEYS.len()],
            log,
            started: Instant::now(),
            slept: 0,
            counts,
        })
    }

    fn now(&self) -> i64 {
        ms(self.clock.now())
    }

    /// Keep the clock [`LEAD`] ahead of the wall clock.
    fn lead(&self) {
        let wanted = ms(Utc::now()) + LEAD;
        if wanted > self.now() {
            self.clock.set(instant(wanted));
        }
    }

    /// Key `key` of an operation of layout struct `w`: mostly one of its
    /// prefix's, sometimes any.
    fn key(&self, w: usize, key: u8) -> usize {
        let group = self.structs[w].1;
        if key < 6 {
            group * 2 + usize::from(key % 2)
        } else {
            usize::from(key) % KEYS.len()
        }
    }

    #[allow(clippy::unused_self)] // A step's helper like the others, whatever the keys of a case become.
    fn key_of(&self, row_key: &[u8]) -> Result<usize, String> {
        KEYS.iter()
            .position(|k| k.as_bytes() == row_key)
            .ok_or_else(|| format!("a row of no key of the case: {}", row_key.escape_ascii()))
    }

    /// Run `ops`; on a failure, why, with the run's log.
    async fn run(&mut self, ops: &[Op]) -> Result<(), String> {
        for (i, op) in ops.iter().enumerate() {
            self.lead();
            bump(&self.counts.steps, 1);
            let outcome = match self.step(op).await {
                Ok(()) => self.check(i).await,
                Err(e) => Err(e),
            };
            if let Err(e) = outcome {
                if ms(Utc::now()) >= self.now() {
                    // The wall clock caught up with the table's during the
                    // step (a machine loaded past `LEAD`): garbage
                    // collection may have removed cells the clock sees as
                    // live, so the failure may be the machine's.
                    bump(&self.counts.inconclusive, 1);
                    println!(
                        "case on table {} cut short: a step took longer than {LEAD} ms: {e}",
                        self.name
                    );
                    return Ok(());
                }
                return Err(format!(
                    "table {}, step #{i} ({op:?}): {e}\nthe layout and the run:\n{}",
                    self.name, self.log
                ));
            }
        }
        Ok(())
    }

    /// The layout's struct of an operation.
    fn who(&self, w: usize) -> (usize, Who) {
        let w = w % self.structs.len();
        (w, self.structs[w].0)
    }

    async fn step(&mut self, op: &Op) -> Step {
        match *op {
            Op::Advance { ms } => {
                note!(self, "clock + {ms} ms");
                self.clock.advance(TimeDelta::milliseconds(ms));
                Ok(())
            }
            Op::Sleep { ms } => {
                let ms = ms.min(SLEEPS_MS - self.slept);
                note!(self, "sleep {ms} ms");
                self.slept += ms;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.lead();
                Ok(())
            }
            Op::AddMarkers { who } => {
                let (w, who) = self.who(who);
                let now = self.now();
                note!(self, "{who}.add_markers() (now {now})");
                self.add_markers(w).await
            }
            Op::Put { who, key, .. }
            | Op::Insert { who, key, .. }
            | Op::PutIf { who, key, .. }
            | Op::Delete { who, key }
            | Op::DeleteIf { who, key, .. }
            | Op::Update { who, key, .. }
            | Op::Touch { who, key, .. }
            | Op::SetTtl { who, key, .. }
            | Op::Shift { who, key, .. }
            | Op::RemoveEntry { who, key, .. }
            | Op::Increment { who, key, .. }
            | Op::PutEntry { who, key, .. }
            | Op::Legacy { who, key, .. }
            | Op::Raw { who, key, .. } => {
                let (w, who) = self.who(who);
                let k = self.key(w, key);
                let shape = who.shape();
                // A counter's or a map's operation on a struct without
                // one: a put instead.
                let op = match *op {
                    Op::Increment { ttl, by, .. }
                        if !shape.columns.iter().any(|c| c.kind == Kind::Counter) =>
                    {
                        Op::Put {
                            who: w,
                            key,
                            ttl,
                            seed: u8::try_from(by).unwrap_or(0),
                        }
                    }
                    Op::PutEntry { ttl, seed, .. } if shape.map.is_none() => Op::Put {
                        who: w,
                        key,
                        ttl,
                        seed,
                    },
                    Op::RemoveEntry { .. } if shape.map.is_none() => Op::Delete { who: w, key },
                    _ => op.clone(),
                };
                self.step_on(&op, w, k).await
            }
        }
    }

    /// An operation of layout struct `w` on key `k`, against the model.
    #[allow(clippy::too_many_lines)]
    async fn step_on(&mut self, op: &Op, w: usize, k: usize) -> Step {
        let who = self.structs[w].0;
        let shape = who.shape();
        let id = KEYS[k];
        let now = self.now();
        let at_h = judge(shape, &self.cells[k], now + HORIZON_MS);
        // As a rewrite judges it: map entries left out; a row that is
        // another struct's now is not this struct's, whatever it is at
        // the horizon (that marker may expire in flight).
        let rewritten_h = if model::own_marker(shape, &self.cells[k], now).is_none()
            && model::foreign_marker(shape, &self.cells[k], now)
        {
            (Seen::Absent, None)
        } else {
            model::judge_rewrite(shape, &self.cells[k], now + HORIZON_MS)
        };
        let at_now = judge(shape, &self.cells[k], now).0;
        let h = &self.handles[w];
        // Columns a condition or an update can name: not a counter's.
        let plain: Vec<usize> = (0..shape.columns.len())
            .filter(|&i| shape.columns[i].kind != Kind::Counter)
            .collect();
        match op {
            Op::Put { ttl, seed, .. } => {
                note!(self, "{who}.put({id}, seed {seed}, ttl {ttl}) (now {now})");
                let at = now + ttl;
                let got = h
                    .put(id, at, *seed)
                    .await
                    .map_err(|e| format!("put: {e}"))?;
                ensure!(got == at, "put reported expiry {got}, asked {at}");
                let muts = model::whole_row(
                    &Gen::new(who, *seed),
                    model::ts_for(shape, at),
                    now,
                    false,
                    None,
                );
                apply(&mut self.cells[k], &muts);
            }
            Op::Insert { ttl, seed, .. } => {
                note!(
                    self,
                    "{who}.insert_if_absent({id}, seed {seed}, ttl {ttl}) (now {now})"
                );
                let at = now + ttl;
                let got = h.insert(id, at, *seed).await;
                // Judged when it is sent (the conditional-writes guide): a
                // row live then wins, however soon it expires.
                let sent = judge(shape, &self.cells[k], now).0;
                match (got, &sent) {
                    (Ok(Inserted::Inserted(e)), Seen::Absent) => {
                        ensure!(e == at, "insert reported expiry {e}, asked {at}");
                        let muts = model::whole_row(
                            &Gen::new(who, *seed),
                            model::ts_for(shape, at),
                            now,
                            false,
                            None,
                        );
                        apply(&mut self.cells[k], &muts);
                        note!(self, "   inserted");
                    }
                    (Ok(Inserted::Exists(found)), Seen::Live(_)) => {
                        ensure!(
                            found == at_now,
                            "insert_if_absent found {found:?}, the model's row is {at_now:?}"
                        );
                        note!(self, "   exists");
                    }
                    (got @ Err(_), Seen::Stranger) => {
                        refused_as_stranger("insert_if_absent", id, got)?;
                        bump(&self.counts.other_rows, 1);
                        note!(self, "   refused: another struct's row");
                    }
                    (Err(e), Seen::Incomplete(column)) => {
                        let found = normalise(&Err(e), id)?;
                        ensure!(
                            found == Seen::Incomplete(column.clone()),
                            "insert_if_absent on an incomplete row answered {found:?}"
                        );
                        bump(&self.counts.incomplete, 1);
                        note!(self, "   refused: incomplete");
                    }
                    (got, expected) => {
                        return Err(format!(
                        "insert_if_absent: {got:?}, the model's row when it is sent: {expected:?}"
                    ))
                    }
                }
            }
            Op::PutIf {
                ttl,
                seed,
                col,
                cseed,
                ..
            } => {
                let c = plain[col % plain.len()];
                let column = &shape.columns[c];
                note!(
                    self,
                    "{who}.put_if({id}, seed {seed}, ttl {ttl}, if {} == seed {cseed}) (now {now})",
                    column.qualifier
                );
                let at = now + ttl;
                // Judged at the horizon, of a row not another struct's now.
                let theirs_now = model::own_marker(shape, &self.cells[k], now).is_none()
                    && model::foreign_marker(shape, &self.cells[k], now);
                let holds = at_h.0.is_live()
                    && !theirs_now
                    && model::newest_visible(
                        &self.cells[k],
                        column.family,
                        column.qualifier.as_bytes(),
                        now + HORIZON_MS,
                    )
                    .is_some_and(|(_, v)| v == Gen::new(who, *cseed).value_bytes(c).as_slice());
                let got = h
                    .put_if(id, at, *seed, c, *cseed)
                    .await
                    .map_err(|e| format!("put_if: {e}"))?;
                if holds {
                    ensure!(
                        got == Some(at),
                        "put_if answered {got:?}; the condition holds, the row is {:?}",
                        at_h.0
                    );
                    let muts = model::whole_row(
                        &Gen::new(who, *seed),
                        model::ts_for(shape, at),
                        now,
                        false,
                        None,
                    );
                    apply(&mut self.cells[k], &muts);
                } else {
                    ensure!(
                        got.is_none(),
                        "put_if answered {got:?}; the condition does not hold on {:?}",
                        at_h.0
                    );
                }
            }
            Op::Delete { .. } => {
                note!(self, "{who}.delete({id}) (now {now})");
                h.delete(id).await.map_err(|e| format!("delete: {e}"))?;
                apply(&mut self.cells[k], &model::delete_row(shape));
            }
            Op::DeleteIf { col, cseed, .. } => {
                let c = plain[col % plain.len()];
                let column = &shape.columns[c];
                note!(
                    self,
                    "{who}.delete_if({id}, if {} == seed {cseed}) (now {now})",
                    column.qualifier
                );
                // Judged when it is sent: no horizon (it only removes).
                let holds = at_now.is_live()
                    && model::newest_visible(
                        &self.cells[k],
                        column.family,
                        column.qualifier.as_bytes(),
                        now,
                    )
                    .is_some_and(|(_, v)| v == Gen::new(who, *cseed).value_bytes(c).as_slice());
                let got = h
                    .delete_if(id, c, *cseed)
                    .await
                    .map_err(|e| format!("delete_if: {e}"))?;
                ensure!(
                    got == holds,
                    "delete_if answered {got}; the row when it is sent: {at_now:?}"
                );
                if holds {
                    apply(&mut self.cells[k], &model::delete_row(shape));
                }
            }
            Op::Update { changes, ttl, .. } => {
                let changes: Vec<(usize, Option<u8>)> = changes
                    .iter()
                    .map(|(c, s)| (plain[c % plain.len()], *s))
                    .collect();
                note!(
                    self,
                    "{who}.update({id}){}{} (now {now})",
                    changes
                        .iter()
                        .map(|(c, s)| match s {
                            Some(s) => format!(".set({}, seed {s})", shape.columns[*c].qualifier),
                            None => format!(".clear({})", shape.columns[*c].qualifier),
                        })
                        .collect::<String>(),
                    ttl.map(|t| format!(".ttl({t})")).unwrap_or_default()
                );
                self.update(w, k, &changes, *ttl, rewritten_h).await?;
            }
            Op::Touch { ttl, wlt, .. } => {
                note!(
                    self,
                    "{who}.touch({id}, ttl {ttl}, when less than {wlt}) (now {now})"
                );
                let got = h.touch(id, *ttl, *wlt).await;
                if rewritten_h.0 == Seen::Stranger {
                    return refused_as_stranger("touch", id, got);
                }
                let got = got.map_err(|e| format!("touch: {e}"))?;
                match (got, rewritten_h) {
                    (Some(t), (Seen::Live(row), Some(_))) => {
                        let current = row.expiry;
                        let rewrite = current - now < *wlt && now + ttl > current;
                        ensure!(
                            t.rewritten == rewrite,
                            "touch answered {t:?}, the row expiring at {current}"
                        );
                        if rewrite {
                            ensure!(ms(t.expires_at) == now + ttl, "touch reported {t:?}");
                            let muts = model::retime(
                                shape,
                                &self.cells[k],
                                now + HORIZON_MS,
                                model::ts_for(shape, now + ttl),
                                None,
                            );
                            apply(&mut self.cells[k], &muts);
                        } else {
                            ensure!(
                                ms(t.expires_at) == current,
                                "touch reported {t:?}, the row expiring at {current}"
                            );
                        }
                    }
                    (None, (Seen::Absent | Seen::Incomplete(_), _)) => {
                        note!(self, "   no live row");
                    }
                    (got, expected) => {
                        return Err(format!(
                            "touch: {got:?}, the model's row at the horizon: {:?}",
                            expected.0
                        ))
                    }
                }
            }
            Op::SetTtl { ttl, .. } => {
                note!(self, "{who}.set_ttl({id}, {ttl}) (now {now})");
                let got = h.set_ttl(id, *ttl).await;
                if rewritten_h.0 == Seen::Stranger {
                    return refused_as_stranger("set_ttl", id, got);
                }
                let got = got.map_err(|e| format!("set_ttl: {e}"))?;
                match (got, &rewritten_h.0) {
                    (Some(e), Seen::Live(_)) => {
                        ensure!(e == now + ttl, "set_ttl reported {e}");
                        let muts = model::retime(
                            shape,
                            &self.cells[k],
                            now + HORIZON_MS,
                            model::ts_for(shape, now + ttl),
                            None,
                        );
                        apply(&mut self.cells[k], &muts);
                    }
                    (None, Seen::Absent | Seen::Incomplete(_)) => note!(self, "   no live row"),
                    (got, expected) => {
                        return Err(format!(
                            "set_ttl: {got:?}, the model's row at the horizon: {expected:?}"
                        ))
                    }
                }
            }
            Op::Shift { by, .. } => {
                note!(self, "{who}.shift_expiry({id}, {by}) (now {now})");
                let got = h.shift_expiry(id, *by).await;
                if rewritten_h.0 == Seen::Stranger {
                    return refused_as_stranger("shift_expiry", id, got);
                }
                match (got, &rewritten_h.0) {
                    (Ok(Some(e)), Seen::Live(row)) if row.expiry + by > now => {
                        ensure!(
                            e == row.expiry + by,
                            "shift_expiry reported {e}, the row expiring at {}",
                            row.expiry
                        );
                        let muts = model::retime(
                            shape,
                            &self.cells[k],
                            now + HORIZON_MS,
                            model::ts_for(shape, e),
                            None,
                        );
                        apply(&mut self.cells[k], &muts);
                    }
                    (Err(Error::ExpiryNotInFuture { .. }), Seen::Live(row))
                        if row.expiry + by <= now =>
                    {
                        note!(self, "   would expire in the past");
                    }
                    (Ok(None), Seen::Absent | Seen::Incomplete(_)) => note!(self, "   no live row"),
                    (got, expected) => {
                        return Err(format!(
                            "shift_expiry: {got:?}, the model's row at the horizon: {expected:?}"
                        ))
                    }
                }
            }
            Op::RemoveEntry { entry, .. } => {
                let family = shape.map.expect("a map");
                let key = ["k1", "k2"][usize::from(*entry)];
                note!(self, "{who}.remove_entry({id}, {key}) (now {now})");
                h.remove_entry(id, key)
                    .expect("a map")
                    .await
                    .map_err(|e| format!("remove_entry: {e}"))?;
                apply(
                    &mut self.cells[k],
                    &[Mut::DeleteColumn(family, key.as_bytes().to_vec())],
                );
            }
            Op::Increment { by, ttl, .. } => {
                let c = shape
                    .columns
                    .iter()
                    .position(|c| c.kind == Kind::Counter)
                    .expect("a counter");
                note!(self, "{who}.increment({id}, {by}, ttl {ttl}) (now {now})");
                let fut = h.increment(id, *by, *ttl).expect("a counter");
                let got = fut.await;
                self.incremented(w, k, c, *by, *ttl, got)?;
            }
            Op::PutEntry {
                entry, seed, ttl, ..
            } => {
                let family = shape.map.expect("a map");
                let key = ["k1", "k2"][usize::from(*entry)];
                let value = format!("e{seed}");
                note!(
                    self,
                    "{who}.put_entry({id}, {key} = {value}, ttl {ttl}) (now {now})"
                );
                let got = h
                    .put_entry(id, key, &value, *ttl)
                    .expect("a map")
                    .await
                    .map_err(|e| format!("put_entry: {e}"))?;
                let writes = shape.all_options() || at_h.0.is_live();
                ensure!(
                    got == writes.then_some(now + ttl),
                    "put_entry answered {got:?}, the model's row at the horizon: {:?}",
                    at_h.0
                );
                if writes {
                    let ts = model::ts_for(shape, now + ttl);
                    let mut muts = vec![
                        Mut::DeleteColumn(family, key.as_bytes().to_vec()),
                        Mut::Set(family, key.as_bytes().to_vec(), ts, value.into_bytes()),
                    ];
                    // On another struct's row, an entry of a struct of
                    // options brings the struct's marker, at its timestamp
                    // (`Table::put_entry`'s doc).
                    let cells = &self.cells[k];
                    if shape.all_options()
                        && model::own_marker(shape, cells, now).is_none()
                        && model::foreign_marker(shape, cells, now)
                    {
                        muts.push(Mut::Set(
                            shape.first_family(),
                            shape.marker.to_vec(),
                            ts,
                            shape.marker_fingerprint(),
                        ));
                    }
                    apply(&mut self.cells[k], &muts);
                }
            }
            Op::Legacy {
                ttl, seed, drop, ..
            } => {
                let drop = drop.map(|d| d % shape.columns.len());
                note!(
                    self,
                    "legacy {who} row {id}, seed {seed}, ttl {ttl}{} (now {now})",
                    drop.map(|d| format!(", without {}", shape.columns[d].qualifier))
                        .unwrap_or_default()
                );
                let muts = model::whole_row(
                    &Gen::new(who, *seed),
                    model::ts_for(shape, now + ttl),
                    now,
                    true,
                    drop,
                );
                self.raw_write(k, &muts).await?;
            }
            Op::Raw { col, ttl, seed, .. } => {
                let ts = model::ts_for(shape, now + ttl);
                let m = match shape.columns.get(*col) {
                    Some(c) => Mut::Set(
                        c.family,
                        c.qualifier.as_bytes().to_vec(),
                        ts,
                        zoo::value_bytes(c, *seed),
                    ),
                    None => Mut::Set(
                        shape.first_family(),
                        b"extra".to_vec(),
                        ts,
                        format!("r{seed}").into_bytes(),
                    ),
                };
                if let Mut::Set(f, q, _, v) = &m {
                    note!(
                        self,
                        "raw {id}: {f}:{} = {} at ts {ts} (now {now})",
                        q.escape_ascii(),
                        v.escape_ascii()
                    );
                }
                self.raw_write(k, &[m]).await?;
            }
            Op::AddMarkers { .. } | Op::Advance { .. } | Op::Sleep { .. } => {
                unreachable!("not on a key")
            }
        }
        Ok(())
    }

    async fn raw_write(&mut self, k: usize, muts: &[Mut]) -> Step {
        self.raw
            .mutate_row(KEYS[k], to_proto(muts))
            .await
            .map_err(|e| format!("raw write: {e}"))?;
        apply(&mut self.cells[k], muts);
        Ok(())
    }

    /// An update against the model: `changes` applied to a live row (set
    /// at its timestamp, or cleared), its shadow set to now, a struct of
    /// `Option`s without its marker given one; with `ttl`, the whole row
    /// then re-timed. Its answer is what a read right after it sees.
    async fn update(
        &mut self,
        w: usize,
        k: usize,
        changes: &[(usize, Option<u8>)],
        ttl: Option<i64>,
        at_h: (Seen, Option<i64>),
    ) -> Step {
        let who = self.structs[w].0;
        let shape = who.shape();
        let now = self.now();
        let got = self.handles[w].update(KEYS[k], changes, ttl).await;
        let clears_required = changes
            .iter()
            .any(|(c, s)| s.is_none() && shape.columns[*c].kind == Kind::Required);
        if clears_required {
            ensure!(
                matches!(got, Err(Error::RequiredField { .. })),
                "an update clearing a required field answered {got:?}"
            );
            return Ok(());
        }
        if at_h.0 == Seen::Stranger {
            return refused_as_stranger("update", KEYS[k], got);
        }
        let (Seen::Live(_), Some(row_ts)) = at_h else {
            let got = got.map_err(|e| format!("update: {e}"))?;
            ensure!(
                got.is_none(),
                "update answered {got:?}, the model's row at the horizon: {:?}",
                at_h.0
            );
            note!(self, "   no live row");
            return Ok(());
        };
        let horizon = now + HORIZON_MS;
        let mut muts = Vec::new();
        let mut last: BTreeMap<usize, Option<u8>> = BTreeMap::new();
        for (c, s) in changes {
            last.insert(*c, *s);
        }
        for (c, s) in &last {
            let col = &shape.columns[*c];
            let q = col.qualifier.as_bytes().to_vec();
            muts.push(Mut::DeleteColumn(col.family, q.clone()));
            if let Some(s) = s {
                muts.push(Mut::Set(
                    col.family,
                    q,
                    row_ts,
                    Gen::new(who, *s).value_bytes(*c),
                ));
            }
        }
        if let Some((f, q)) = shape.shadow {
            muts.push(Mut::DeleteColumn(f, q.as_bytes().to_vec()));
            muts.push(Mut::Set(
                f,
                q.as_bytes().to_vec(),
                row_ts,
                model::shadow_value(now),
            ));
        }
        if shape.marker_makes_row() && model::own_marker(shape, &self.cells[k], horizon).is_none() {
            muts.push(Mut::DeleteColumn(
                shape.first_family(),
                shape.marker.to_vec(),
            ));
            muts.push(Mut::Set(
                shape.first_family(),
                shape.marker.to_vec(),
                row_ts,
                shape.marker_fingerprint(),
            ));
        }
        let mut after = self.cells[k].clone();
        apply(&mut after, &muts);
        if let Some(ttl) = ttl {
            let retimed = model::retime(
                shape,
                &after,
                horizon,
                model::ts_for(shape, now + ttl),
                Some(model::shadow_value(now)),
            );
            apply(&mut after, &retimed);
        }
        let (seen, _) = model::judge_rewrite(shape, &after, now);
        match seen.expiry() {
            Some(expiry) => {
                let got = got.map_err(|e| format!("update: {e}"))?;
                ensure!(
                    got == Some(expiry),
                    "update answered {got:?}; after it the model's row is {seen:?}"
                );
                self.cells[k] = after;
            }
            None => {
                // Nothing a read would show: refused, nothing written.
                ensure!(
                    matches!(got, Err(Error::UpdateLeavesNoRow { .. })),
                    "update answered {got:?}, yet the row it would leave reads {seen:?}"
                );
            }
        }
        Ok(())
    }

    /// An increment's answer against the model: into a live row (the
    /// counter keeps its timestamp, or takes the row's), a new row for a
    /// struct without required fields, `NoLiveRow` otherwise.
    #[allow(clippy::many_single_char_names)] // w, k, c: struct, key, column, as every step names them
    fn incremented(
        &mut self,
        w: usize,
        k: usize,
        c: usize,
        by: i64,
        ttl: i64,
        got: Result<(i64, i64), Error>,
    ) -> Step {
        let who = self.structs[w].0;
        let shape = who.shape();
        let col = &shape.columns[c];
        let now = self.now();
        let q = col.qualifier.as_bytes().to_vec();
        let mark = zoo::window_mark(col.qualifier);
        let zero = 0i64.to_be_bytes().to_vec();
        let cells = &mut self.cells[k];
        match judge(shape, cells, now) {
            (Seen::Live(_), Some(row_ts)) => {
                let (ts, old) = match model::newest_visible(cells, col.family, &q, now) {
                    Some((ts, v)) => (ts, i64::from_be_bytes(v.try_into().unwrap_or([0; 8]))),
                    None => (row_ts, 0),
                };
                let value = old + by;
                let got = got.map_err(|e| format!("increment: {e}"))?;
                let expected = (value, model::expiry_of(shape, ts));
                ensure!(
                    got == expected,
                    "increment answered {got:?}, the model {expected:?}"
                );
                apply(
                    cells,
                    &[
                        Mut::DeleteColumn(col.family, q.clone()),
                        Mut::Set(col.family, q, ts, value.to_be_bytes().to_vec()),
                        Mut::DeleteColumn(col.family, mark.clone()),
                        Mut::Set(col.family, mark, ts - 1_000, zero),
                    ],
                );
            }
            _ if shape.has_required() => {
                ensure!(
                    matches!(got, Err(Error::NoLiveRow { .. })),
                    "increment on a row that is not live answered {got:?}"
                );
            }
            _ => {
                let got = got.map_err(|e| format!("increment: {e}"))?;
                ensure!(
                    got == (by, now + ttl),
                    "increment answered {got:?}, a new row of {by} until {}",
                    now + ttl
                );
                let ts = model::ts_for(shape, now + ttl);
                let mut muts = Vec::new();
                for cc in shape.columns {
                    muts.push(Mut::DeleteColumn(
                        cc.family,
                        cc.qualifier.as_bytes().to_vec(),
                    ));
                    if cc.kind == Kind::Counter {
                        muts.push(Mut::DeleteColumn(cc.family, zoo::window_mark(cc.qualifier)));
                    }
                }
                if let Some(m) = shape.map {
                    muts.push(Mut::DeleteFamily(m));
                }
                muts.push(Mut::Set(col.family, q, ts, by.to_be_bytes().to_vec()));
                muts.push(Mut::DeleteColumn(col.family, mark.clone()));
                muts.push(Mut::Set(col.family, mark, ts - 1_000, zero));
                if let Some((f, sq)) = shape.shadow {
                    muts.push(Mut::DeleteColumn(f, sq.as_bytes().to_vec()));
                    muts.push(Mut::Set(
                        f,
                        sq.as_bytes().to_vec(),
                        ts,
                        model::shadow_value(now),
                    ));
                }
                muts.push(Mut::DeleteColumn(
                    shape.first_family(),
                    shape.marker.to_vec(),
                ));
                muts.push(Mut::Set(
                    shape.first_family(),
                    shape.marker.to_vec(),
                    ts,
                    shape.marker_fingerprint(),
                ));
                apply(cells, &muts);
            }
        }
        Ok(())
    }

    /// `add_markers` of layout struct `w`: the rows the model says get the
    /// marker, the counters add up to the rows read.
    async fn add_markers(&mut self, w: usize) -> Step {
        let who = self.structs[w].0;
        let shape = who.shape();
        let now = self.now();
        let horizon = now + HORIZON_MS;
        let classes: Vec<(MarkClass, MarkClass)> = self
            .cells
            .iter()
            .map(|c| (mark_class(shape, c, now), mark_class(shape, c, horizon)))
            .collect();
        let p = self.handles[w]
            .add_markers()
            .await
            .map_err(|e| format!("add_markers: {e}"))?;
        note!(self, "   {p:?}");
        let stored = self.stored().await?;
        let mut expected = Expected::default();
        let mut touching = 0;
        let mut not_live_touching = 0;
        for (k, (at_now, at_h)) in classes.into_iter().enumerate() {
            let class = match (&at_now, &at_h) {
                (MarkClass::Marked(ts, value), _) => {
                    // Judged again at the horizon before writing: it may
                    // have stopped being live meanwhile. A marker at the
                    // timestamp of the cells it vouches for outlives none
                    // of them, so one written on a row that dies before
                    // the horizon is fine too.
                    let written = stored[k].iter().any(|c| {
                        c.family == shape.first_family()
                            && c.qualifier == shape.marker
                            && c.timestamp_micros == *ts
                    });
                    match (&at_h, written) {
                        (MarkClass::Marked(ts2, v2), true) => {
                            apply(
                                &mut self.cells[k],
                                &[Mut::Set(shape.first_family(), shape.marker.to_vec(), *ts2, v2.clone())],
                            );
                            MarkClass::Marked(*ts2, v2.clone())
                        }
                        (_, true) => {
                            apply(
                                &mut self.cells[k],
                                &[Mut::Set(shape.first_family(), shape.marker.to_vec(), *ts, value.clone())],
                            );
                            MarkClass::Marked(*ts, value.clone())
                        }
                        (MarkClass::Marked(..), false) => {
                            return Err(format!(
                                "add_markers left {} without the marker the model gives it ({at_now:?})",
                                KEYS[k]
                            ))
                        }
                        (other, _) => other.clone(),
                    }
                }
                _ => at_now,
            };
            if model::touches(shape, &self.cells[k], now) {
                touching += 1;
            }
            match class {
                MarkClass::Marked(..) => expected.marked += 1,
                MarkClass::Already => expected.already += 1,
                MarkClass::Incomplete => expected.incomplete += 1,
                MarkClass::Other => expected.other += 1,
                MarkClass::NotLive => {
                    if model::touches(shape, &self.cells[k], now) {
                        not_live_touching += 1;
                    }
                }
            }
        }
        let rows = stored.iter().filter(|r| !r.is_empty()).count() as u64;
        ensure!(
            p.rows_marked == expected.marked
                && p.rows_already_marked == expected.already
                && p.rows_incomplete == expected.incomplete
                && p.rows_other == expected.other,
            "add_markers counted {p:?}; the model: {expected:?}"
        );
        ensure!(
            p.rows_read
                == p.rows_marked
                    + p.rows_already_marked
                    + p.rows_incomplete
                    + p.rows_not_live
                    + p.rows_other,
            "add_markers' counters do not add up to the rows read: {p:?}"
        );
        ensure!(
            p.rows_not_live >= not_live_touching && p.rows_read >= touching && p.rows_read <= rows,
            "add_markers read {} rows, {} not live; {rows} rows stored, {touching} with a live cell of {who}, {not_live_touching} of them not live",
            p.rows_read,
            p.rows_not_live
        );
        bump(
            &self.counts.marked,
            usize::try_from(p.rows_marked).unwrap_or(0),
        );
        bump(
            &self.counts.other_rows,
            usize::try_from(p.rows_other).unwrap_or(0),
        );
        Ok(())
    }

    /// What is stored, by key.
    async fn stored(&self) -> Result<Vec<Vec<bigtable_ttl::data::Cell>>, String> {
        use futures_util::TryStreamExt as _;
        let read =
            bigtable_ttl::data::ReadRows::try_from(Scan::all()).map_err(|e| e.to_string())?;
        let rows: Vec<bigtable_ttl::data::Row> = self
            .raw
            .read_rows(read)
            .try_collect()
            .await
            .map_err(|e| format!("raw read: {e}"))?;
        let mut by_key = vec![Vec::new(); KEYS.len()];
        for row in rows {
            by_key[self.key_of(&row.key)?] = row.cells;
        }
        Ok(by_key)
    }

    /// The stored cells against the model (`model_check::compare_store`):
    /// a cell the model holds may be gone once it is no longer visible by
    /// its family's rule at the later of the table's clock and the wall
    /// clock.
    fn compare_store(&mut self, stored: &[Vec<bigtable_ttl::data::Cell>]) -> Step {
        let now = self.now().max(ms(Utc::now()));
        let collected = model_check::compare_store(
            &KEYS,
            &mut self.cells,
            stored,
            Vec::as_slice,
            |family, ts| !model::visible(family, ts, now),
        )?;
        bump(&self.counts.collected, collected);
        Ok(())
    }

    /// Every struct's reads of every key against the model, at the cells
    /// stored just before and just after them.
    async fn check(&mut self, step: usize) -> Step {
        let before = self.stored().await?;
        self.compare_store(&before)?;
        let cells_before = self.cells.clone();
        let limit = 1 + step % 3;
        let how = [ReadAs::Scan, ReadAs::Stream, ReadAs::Parallel][step % 3];
        let mut answers = Vec::new();
        for h in &self.handles {
            answers.push(read_all(h.as_ref(), limit, how).await?);
        }
        let after = self.stored().await?;
        self.compare_store(&after)?;
        let now = self.now();
        for (w, (who, _)) in self.structs.iter().enumerate() {
            let shape = who.shape();
            let mut judged = Vec::new();
            for key in 0..KEYS.len() {
                let one = judge(shape, &cells_before[key], now).0;
                let other = judge(shape, &self.cells[key], now).0;
                let got = normalise(&answers[w].gets[key], KEYS[key])?;
                let both = [one, other];
                read_agrees(format_args!("{who}.get({})", KEYS[key]), &got, &both)?;
                if matches!(got, Seen::Incomplete(_)) {
                    bump(&self.counts.incomplete, 1);
                }
                if got == Seen::Stranger {
                    bump(&self.counts.strangers, 1);
                }
                judged.push(both);
            }
            let keys: Vec<usize> = (0..KEYS.len()).collect();
            let backwards: Vec<usize> = keys.iter().rev().copied().collect();
            let live: Vec<(usize, &Seen)> = judged
                .iter()
                .enumerate()
                .filter(|(_, j)| j[0].is_live())
                .map(|(k, j)| (k, &j[0]))
                .collect();
            for (i, order) in [&keys, &backwards].into_iter().enumerate() {
                let read = self.keyed(&answers[w].limited[i])?;
                ensure!(
                    scan_agrees(&read, order, limit, &judged, Seen::is_live),
                    "{who}: scan limit {limit}{} read {read:?}, the model's live rows are {live:?}",
                    if i == 1 { " reversed" } else { "" }
                );
            }
            match &answers[w].strict {
                Ok(rows) => {
                    let read = self.keyed(rows)?;
                    // A row both judgements say does not decode fails it.
                    let surely_incomplete = judged.iter().any(|[a, b]| {
                        matches!(a, Seen::Incomplete(_) | Seen::Stranger)
                            && matches!(b, Seen::Incomplete(_) | Seen::Stranger)
                    });
                    ensure!(
                        !surely_incomplete
                            && scan_agrees(&read, &keys, usize::MAX, &judged, Seen::is_live),
                        "{who}: {how:?} read {read:?}, the model's rows are {judged:?}"
                    );
                }
                Err(Error::Decode(e)) if e.source == CodecError::WrittenByAnotherStruct => {
                    let key = self.key_of(&e.row_key)?;
                    ensure!(
                        judged[key].contains(&Seen::Stranger),
                        "{who}: the strict read failed on {} as another struct's; the model's row is {:?}",
                        KEYS[key],
                        judged[key]
                    );
                }
                Err(Error::Decode(e)) if e.source == CodecError::Missing => {
                    let key = self.key_of(&e.row_key)?;
                    ensure!(
                        judged[key].iter().any(|s| matches!(s, Seen::Incomplete(_))),
                        "{who}: the strict read failed on {} as incomplete; the model's row is {:?}",
                        KEYS[key],
                        judged[key]
                    );
                }
                Err(e) => return Err(format!("{who}: strict read: {e:?}")),
            }
        }
        Ok(())
    }

    fn keyed(&self, rows: &Rows) -> Result<Vec<(usize, Seen)>, String> {
        rows.iter()
            .map(|(k, s)| Ok((self.key_of(k)?, s.clone())))
            .collect()
    }
}

/// `add_markers`' counters as the model expects them.
#[derive(Debug, Default)]
struct Expected {
    marked: u64,
    already: u64,
    incomplete: u64,
    other: u64,
}

/// One struct's answers after a step.
struct Answers {
    gets: Vec<Result<Seen, Error>>,
    /// The limited scans, forward and reversed, skipping what does not
    /// decode.
    limited: [Rows; 2],
    /// The strict unlimited scan (or stream).
    strict: Result<Rows, Error>,
}

async fn read_all(h: &dyn Handle, limit: usize, how: ReadAs) -> Result<Answers, String> {
    let who = h.who();
    let mut gets = Vec::new();
    for key in KEYS {
        gets.push(h.get(key).await);
    }
    let mut limited = [Vec::new(), Vec::new()];
    for (i, scan) in [
        Scan::all().limit(limit as u64),
        Scan::all().reversed().limit(limit as u64),
    ]
    .into_iter()
    .enumerate()
    {
        limited[i] = h
            .scan(scan, true, ReadAs::Scan)
            .await
            .map_err(|e| format!("{who} limited scan: {e:?}"))?;
    }
    let strict = h.scan(Scan::all(), false, how).await;
    Ok(Answers {
        gets,
        limited,
        strict,
    })
}

/// One connection refuses a pair whose structs would write the same
/// cells: every operation of either fails with `Error::Layout`, nothing
/// sent (the table it names does not exist: a request sent would fail
/// with `NotFound` instead).
async fn probe(conn: &Connection, table: &str, a: Who, b: Who, why: &str) -> Step {
    let clock = Clock::manual(instant(ms(Utc::now()) + LEAD));
    let first = handle::open(a, conn, table, &clock);
    let second = handle::open(b, conn, table, &clock);
    let at = ms(Utc::now()) + 60_000;
    for (h, what) in [(&first, a), (&second, b)] {
        let put = h.put(KEYS[0], at, 1).await;
        ensure!(
            matches!(put, Err(Error::Layout { .. })),
            "{what}.put beside {} on one connection ({why}) answered {put:?}",
            if what == a { b } else { a }
        );
        let get = h.get(KEYS[0]).await;
        ensure!(
            matches!(get, Err(Error::Layout { .. })),
            "{what}.get beside {} on one connection ({why}) answered {get:?}",
            if what == a { b } else { a }
        );
    }
    let ensured = handle::ensure(a, conn, table).await;
    ensure!(
        matches!(ensured, Err(Error::Layout { .. })),
        "{a}.ensure_schema beside {b} on one connection ({why}) answered {ensured:?}"
    );
    drop((first, second));
    Ok(())
}

#[test]
fn random_layouts_of_structs_sharing_a_table_each_see_and_change_only_their_own() {
    check_shapes();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let conns: Vec<Connection> = rt.block_on(async {
        let first = support::connection();
        let mut conns = vec![first.clone()];
        for _ in 0..3 {
            conns.push(support::connection_to(&first));
        }
        conns
    });
    let probes = clashing_pairs();
    let asked: Option<u32> = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    let budget = asked.is_none().then_some(BUDGET);
    let mut runner = TestRunner::new(Config {
        cases: asked.unwrap_or(CASES),
        failure_persistence: None,
        max_shrink_time: 120_000,
        ..Config::default()
    });
    let started = Instant::now();
    let counts = Counts::default();
    let result = runner.run(&case(), |(layout, ops)| {
        if budget.is_some_and(|b| started.elapsed() > b) {
            return Ok(());
        }
        let number = counts.cases.fetch_add(1, Ordering::Relaxed);
        rt.block_on(async {
            let (a, b, why) = *layout.probe.get(&probes);
            let probe_conn = support::connection_to(&conns[0]);
            probe(&probe_conn, &format!("lsm{number:04}p"), a, b, why)
                .await
                .map_err(TestCaseError::fail)?;
            bump(&counts.refused, 1);
            let mut case = Case::open(&conns, number, &layout, &counts)
                .await
                .map_err(TestCaseError::fail)?;
            case.run(&ops).await.map_err(TestCaseError::fail)
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    println!(
        "{} cases, {} steps in {:?}; {} incomplete answers, {} cells collected while running, \
         {} rows marked and {} rows of another struct left alone by add_markers, \
         {} reads of rows another struct of the same marker wrote, {} clashing pairs refused, \
         {} cases cut short by a slow step",
        counts.cases.load(Ordering::Relaxed),
        counts.steps.load(Ordering::Relaxed),
        started.elapsed(),
        counts.incomplete.load(Ordering::Relaxed),
        counts.collected.load(Ordering::Relaxed),
        counts.marked.load(Ordering::Relaxed),
        counts.other_rows.load(Ordering::Relaxed),
        counts.strangers.load(Ordering::Relaxed),
        counts.refused.load(Ordering::Relaxed),
        counts.inconclusive.load(Ordering::Relaxed),
    );
}

/// Run `ops`, a case the random runs found, on a fresh table laid out as
/// `structs`, through four connections as the random runs do, and fail
/// where the model and the library disagree.
fn replay(structs: Vec<(Who, usize)>, ops: &[Op]) {
    use proptest::strategy::{Strategy as _, ValueTree as _};
    check_shapes();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let probe = any::<prop::sample::Index>()
        .new_tree(&mut TestRunner::deterministic())
        .unwrap()
        .current();
    let layout = Layout { structs, probe };
    rt.block_on(async {
        let first = support::connection();
        let mut conns = vec![first.clone()];
        for _ in 0..3 {
            conns.push(support::connection_to(&first));
        }
        let counts = Counts::default();
        let mut case = Case::open(&conns, 0, &layout, &counts).await.unwrap();
        if let Err(e) = case.run(ops).await {
            panic!("{e}");
        }
    });
}

/// Three structs named `Item` (one marker) in two programs: `audit::Item`
/// shares no column name with the other two, so each reports the rows the
/// others wrote (`get`, scans, `insert_if_absent`, `update`, re-times) and
/// `add_markers` leaves them alone, while `inventory::Item` and
/// `wishlist::Item`, which share `label`, read each other's as their own.
/// Then the rows expire, and are no one's.
#[test]
fn structs_of_one_name_and_no_column_in_common_report_each_other_s_rows() {
    let structs = vec![(Who::InvItem, 0), (Who::WishItem, 0), (Who::AuditItem, 0)];
    let ops = [
        Op::Put {
            who: 0,
            key: 0,
            ttl: 3000,
            seed: 1,
        },
        Op::Put {
            who: 2,
            key: 1,
            ttl: 3000,
            seed: 2,
        },
        Op::Insert {
            who: 2,
            key: 0,
            ttl: 3000,
            seed: 3,
        },
        Op::Update {
            who: 2,
            key: 0,
            changes: vec![(0, Some(4))],
            ttl: None,
        },
        Op::Touch {
            who: 1,
            key: 1,
            ttl: 4000,
            wlt: 5000,
        },
        Op::SetTtl {
            who: 0,
            key: 1,
            ttl: 2000,
        },
        Op::Shift {
            who: 2,
            key: 0,
            by: 500,
        },
        Op::AddMarkers { who: 2 },
        Op::AddMarkers { who: 1 },
        Op::Advance { ms: 2000 },
        Op::Sleep { ms: 1500 },
        Op::Put {
            who: 2,
            key: 0,
            ttl: 3000,
            seed: 5,
        },
    ];
    replay(structs, &ops);
}

/// A case the random runs found (shrunk to its first steps): `Wishlist`,
/// a struct of options with a map, puts an entry into a row that carries
/// `Quota`'s marker and not its own; the entry brings `Wishlist`'s marker
/// (`Table::put_entry`), which the model must hold too.
#[test]
fn an_entry_on_another_struct_s_row_brings_its_struct_s_marker() {
    let structs = vec![(Who::Extra, 0), (Who::Quota, 0), (Who::Wishlist, 1)];
    let ops = [
        Op::Insert {
            who: 3,
            key: 2,
            ttl: 2961,
            seed: 3,
        },
        Op::Increment {
            who: 0,
            key: 7,
            by: 2,
            ttl: 4532,
        },
        Op::Put {
            who: 1,
            key: 6,
            ttl: 4860,
            seed: 5,
        },
        Op::Legacy {
            who: 1,
            key: 3,
            ttl: 1992,
            seed: 3,
            drop: Some(1),
        },
        Op::Sleep { ms: 999 },
        Op::PutEntry {
            who: 2,
            key: 4,
            entry: 0,
            seed: 1,
            ttl: 2439,
        },
    ];
    replay(structs, &ops);
}

/// A case the random runs found (not shrunk: its steps race the clock):
/// `Extra`, which owns its family, shifts the expiry of a row whose own
/// marker expires between now and the write's horizon while its columns
/// and the legacy marker live on. The re-time wrote a new marker and left
/// the old version beside it (a whole-row write clears an owned family
/// first; a re-time does not), where the model holds one marker.
#[test]
fn a_re_time_replaces_its_struct_s_marker_expired_before_the_horizon() {
    let structs = vec![(Who::Extra, 0), (Who::Wishlist, 0), (Who::Stats, 0)];
    let ops = [
        Op::AddMarkers { who: 2 },
        Op::Increment {
            who: 0,
            key: 3,
            by: 1,
            ttl: 2012,
        },
        Op::AddMarkers { who: 2 },
        Op::Delete { who: 3, key: 7 },
        Op::AddMarkers { who: 1 },
        Op::Legacy {
            who: 3,
            key: 7,
            ttl: 1889,
            seed: 3,
            drop: Some(0),
        },
        Op::Raw {
            who: 0,
            key: 6,
            col: 0,
            ttl: 3328,
            seed: 1,
        },
        Op::Legacy {
            who: 0,
            key: 5,
            ttl: 4339,
            seed: 1,
            drop: Some(2),
        },
        Op::Insert {
            who: 1,
            key: 4,
            ttl: 2162,
            seed: 3,
        },
        Op::Legacy {
            who: 2,
            key: 3,
            ttl: 4033,
            seed: 3,
            drop: None,
        },
        Op::Delete { who: 0, key: 4 },
        Op::PutEntry {
            who: 1,
            key: 2,
            entry: 1,
            seed: 4,
            ttl: 5194,
        },
        Op::Increment {
            who: 1,
            key: 0,
            by: 2,
            ttl: 4136,
        },
        Op::Raw {
            who: 0,
            key: 7,
            col: 0,
            ttl: 647,
            seed: 4,
        },
        Op::PutIf {
            who: 0,
            key: 7,
            ttl: 1643,
            seed: 1,
            col: 2,
            cseed: 1,
        },
        Op::PutEntry {
            who: 0,
            key: 5,
            entry: 1,
            seed: 3,
            ttl: 1670,
        },
        Op::Legacy {
            who: 3,
            key: 1,
            ttl: 3801,
            seed: 2,
            drop: None,
        },
        Op::AddMarkers { who: 1 },
        Op::Raw {
            who: 1,
            key: 3,
            col: 4,
            ttl: 1048,
            seed: 0,
        },
        Op::Sleep { ms: 1120 },
        Op::PutIf {
            who: 2,
            key: 5,
            ttl: 1156,
            seed: 3,
            col: 1,
            cseed: 4,
        },
        Op::SetTtl {
            who: 1,
            key: 1,
            ttl: 3439,
        },
        Op::Shift {
            who: 3,
            key: 1,
            by: 2056,
        },
        Op::Raw {
            who: 2,
            key: 5,
            col: 4,
            ttl: 955,
            seed: 0,
        },
    ];
    replay(structs, &ops);
}

/// Found by a long run (300 cases): `Tag` (all options) and `Product`
/// share the column `name` and the row `b#1`; Product's put leaves the
/// newest cell there, Tag's update clears it, and the row lives on by
/// Tag's older marker. The update answered the expiry of the cell it
/// cleared, where a read right after sees the marker's.
#[test]
fn an_update_clearing_the_newest_cell_of_a_row_of_options_answers_the_expiry_it_leaves() {
    let structs = vec![(Who::Product, 0), (Who::Tag, 1)];
    let ops = [
        Op::Update {
            who: 3,
            key: 7,
            changes: vec![(1, None), (1, None), (1, Some(4))],
            ttl: None,
        },
        Op::Insert {
            who: 0,
            key: 5,
            ttl: 4577,
            seed: 0,
        },
        Op::PutIf {
            who: 2,
            key: 1,
            ttl: 2146,
            seed: 0,
            col: 2,
            cseed: 5,
        },
        Op::Put {
            who: 1,
            key: 0,
            ttl: 897,
            seed: 5,
        },
        Op::Sleep { ms: 752 },
        Op::DeleteIf {
            who: 2,
            key: 3,
            col: 2,
            cseed: 1,
        },
        Op::PutEntry {
            who: 1,
            key: 7,
            entry: 1,
            seed: 3,
            ttl: 3651,
        },
        Op::Put {
            who: 0,
            key: 7,
            ttl: 3661,
            seed: 2,
        },
        Op::DeleteIf {
            who: 0,
            key: 1,
            col: 3,
            cseed: 1,
        },
        Op::Update {
            who: 1,
            key: 1,
            changes: vec![(0, None), (3, Some(2)), (3, None)],
            ttl: None,
        },
    ];
    replay(structs, &ops);
}
