//! The reaper (issue 42): `Table::reap` deletes what expired more than a
//! grace period ago, dead rows whole and the expired cells of live rows,
//! never a live cell nor a row written since it was read; `cbt` and
//! Google's Python client stop seeing the expired data; the rows about to
//! die are handed over first, at least once. The families' garbage
//! collection is set to 30 days, so that only the reaper removes what the
//! struct's one-hour policy expired (as on Cloud Bigtable, whose
//! collection comes days late).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bigtable_ttl::ops::{self, ApplyRequest, ExpiredRow, ReapOptions, ReapProgress, ReapStatus};
use bigtable_ttl::{BigtableRow, Clock, Expiry, Insert, Retime, Table};
use chrono::{DateTime, TimeDelta, Utc};

use crate::support::{self, raw_set, stored_cells};

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "reap_slots", family = "s")]
#[ttl(default = "1h")]
struct Slot {
    #[bigtable(key)]
    id: String,
    owner: String,
    #[ttl(for = "1s")]
    hint: Option<String>,
    #[bigtable(map, family = "e")]
    marks: BTreeMap<String, u32>,
}

fn slot(id: &str, owner: &str) -> Slot {
    Slot {
        id: id.to_owned(),
        owner: owner.to_owned(),
        hint: Some(format!("hint of {owner}")),
        marks: BTreeMap::from([("m".to_owned(), 1)]),
    }
}

/// A table of `Slot`s on `clock` whose families garbage collection keeps
/// for 30 days.
async fn reap_table(clock: &Clock) -> Table<Slot> {
    let table = support::table::<Slot>(clock).await;
    for family in Slot::SCHEMA.families {
        let request = ApplyRequest::new(
            table.name(),
            *family,
            ops::parse_policy("default=30d").unwrap(),
        );
        ops::apply(table.connection(), &request, |_| {})
            .await
            .unwrap();
    }
    table
}

fn qualifiers(cells: &[bigtable_ttl::data::Cell]) -> BTreeSet<String> {
    cells
        .iter()
        .map(|c| format!("{}:{}", c.family, c.qualifier.escape_ascii()))
        .collect()
}

async fn reap_all(table: &Table<Slot>, options: &ReapOptions) -> ReapProgress {
    match table
        .reap(options, None, |_| ControlFlow::Continue(()))
        .await
        .unwrap()
    {
        ReapStatus::Done(p) => p,
        other => panic!("{other:?}"),
    }
}

/// Rows of every kind, judged 20 minutes after `t0` with a minute's grace.
async fn rows_of_every_kind(table: &Table<Slot>, t0: DateTime<Utc>) {
    let ttl = |m: i64| TimeDelta::minutes(m);
    let put = |s: Slot, t: TimeDelta| {
        let table = table.clone();
        async move { table.put_with(s.mutation().ttl(t)).await }
    };
    put(slot("dead", "ann"), ttl(10)).await.unwrap();
    put(slot("live", "bob"), ttl(120)).await.unwrap();
    put(slot("outlived", "cy"), ttl(10)).await.unwrap();
    table
        .put_entry(
            &"outlived".to_owned(),
            Slot::MARKS,
            &"late".to_owned(),
            &2,
            Expiry::Ttl(ttl(120)),
        )
        .await
        .unwrap()
        .expect("a live row");
    put(slot("recent", "dee"), ttl(20) - TimeDelta::seconds(1))
        .await
        .unwrap();
    let mut eve = slot("stranger", "eve");
    eve.hint = None;
    put(eve, ttl(120)).await.unwrap();
    let raw = table.raw();
    let micros = |t: DateTime<Utc>| t.timestamp_millis() * 1_000;
    // Another program's cell, long expired, in a live row: not the struct's.
    raw_set(raw, "stranger", "s", b"zz", micros(t0 - ttl(180)), b"x").await;
    // Incomplete: the marker live, the required column never written.
    raw_set(raw, "incomplete", "s", b"\0\0Slot", micros(t0), b"").await;
    raw_set(raw, "incomplete", "s", b"hint", micros(t0 - ttl(180)), b"h").await;
    // A live row with an older version of its required column, expired.
    put(slot("versions", "fay"), ttl(120)).await.unwrap();
    raw_set(
        raw,
        "versions",
        "s",
        b"owner",
        micros(t0 - ttl(180)),
        b"old",
    )
    .await;
    // Another struct's row sharing the column name `owner`.
    raw_set(raw, "other", "s", b"\0\0Other", micros(t0), b"").await;
    raw_set(raw, "other", "s", b"owner", micros(t0), b"o").await;
    raw_set(raw, "other", "s", b"owner", micros(t0 - ttl(180)), b"old").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_rows_go_whole_expired_cells_of_live_rows_go_and_nothing_else() {
    let t0 = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let clock = Clock::manual(t0);
    let table = reap_table(&clock).await;
    rows_of_every_kind(&table, t0).await;
    clock.set(t0 + TimeDelta::minutes(20));
    let keys = [
        "dead",
        "incomplete",
        "live",
        "other",
        "outlived",
        "recent",
        "stranger",
        "versions",
    ];
    let mut before = BTreeMap::new();
    for key in keys {
        before.insert(key, qualifiers(&stored_cells(&table, key).await));
    }
    let options = ReapOptions::new()
        .with_grace(Duration::from_secs(60))
        .with_page_rows(3);

    // A dry run counts what would go and deletes nothing.
    let dry = reap_all(&table, &options.clone().with_dry_run(true)).await;
    for key in keys {
        assert_eq!(
            qualifiers(&stored_cells(&table, key).await),
            before[key],
            "{key}"
        );
    }
    let done = reap_all(&table, &options).await;
    assert_eq!(dry, done, "the dry run counted what the run did");
    assert_eq!(
        (
            done.rows_scanned,
            done.rows_reaped,
            done.rows_trimmed,
            done.rows_skipped_recent,
            done.rows_skipped_unsure,
            done.rows_skipped_other,
            done.rows_skipped_live,
        ),
        (8, 2, 2, 1, 1, 1, 1),
        "{done:?}"
    );
    let after = |key| {
        let table = table.clone();
        async move { qualifiers(&stored_cells(&table, key).await) }
    };
    assert!(after("dead").await.is_empty(), "a dead row goes whole");
    assert!(
        after("outlived").await.is_empty(),
        "a dead row whose entry outlived it goes whole, on condition"
    );
    let mut live = before["live"].clone();
    live.remove("s:hint");
    assert_eq!(
        after("live").await,
        live,
        "only the expired field of a live row"
    );
    for key in ["recent", "incomplete", "other", "stranger"] {
        assert_eq!(after(key).await, before[key], "{key} is left alone");
    }
    let versions = stored_cells(&table, "versions").await;
    let owners: Vec<&[u8]> = versions
        .iter()
        .filter(|c| c.qualifier == b"owner")
        .map(|c| c.value.as_slice())
        .collect();
    assert_eq!(
        owners.len(),
        1,
        "the expired version went, the live one stayed"
    );
    let read = table.get(&"live".to_owned()).await.unwrap().unwrap();
    assert_eq!(
        (read.owner.as_str(), read.hint.as_deref()),
        ("bob", None),
        "{read:?}"
    );
    // Nothing left to do.
    let again = reap_all(&table, &options).await;
    assert_eq!((again.rows_reaped, again.cells_reaped), (0, 0), "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rows_about_to_die_are_handed_over_before_they_are_deleted() {
    let t0 = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let clock = Clock::manual(t0);
    let table = reap_table(&clock).await;
    rows_of_every_kind(&table, t0).await;
    clock.set(t0 + TimeDelta::minutes(20));
    let options = ReapOptions::new().with_grace(Duration::from_secs(60));
    // The outbox refuses them (a consumer down): nothing is deleted.
    let handed: Arc<Mutex<Vec<ExpiredRow<Slot>>>> = Arc::default();
    let status = table
        .reap_with_events(
            &options,
            None,
            |rows| {
                handed.lock().unwrap().extend(rows);
                async { ControlFlow::Break(()) }
            },
            |_| ControlFlow::Continue(()),
        )
        .await
        .unwrap();
    let ReapStatus::Stopped(stopped) = status else {
        panic!("{status:?}")
    };
    assert_eq!(stopped.rows_reaped, 0);
    assert!(!stored_cells(&table, "dead").await.is_empty());
    let first: Vec<ExpiredRow<Slot>> = std::mem::take(&mut *handed.lock().unwrap());
    let died: BTreeMap<String, DateTime<Utc>> = first
        .iter()
        .map(|r| (r.value.id.clone(), r.died_at))
        .collect();
    let ms = |t: DateTime<Utc>| DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap();
    assert_eq!(
        died,
        BTreeMap::from([
            ("dead".to_owned(), ms(t0 + TimeDelta::minutes(10))),
            ("outlived".to_owned(), ms(t0 + TimeDelta::minutes(10))),
        ])
    );
    let dead = &first[0];
    assert_eq!(dead.value.owner, "ann", "its last values");
    // Resumed: handed over again, the same events, then deleted.
    let status = table
        .reap_with_events(
            &options,
            Some(stopped),
            |rows| {
                handed.lock().unwrap().extend(rows);
                async { ControlFlow::Continue(()) }
            },
            |_| ControlFlow::Continue(()),
        )
        .await
        .unwrap();
    let ReapStatus::Done(done) = status else {
        panic!("{status:?}")
    };
    assert_eq!(done.rows_reaped, 2);
    let second = handed.lock().unwrap().clone();
    let ids = |rows: &[ExpiredRow<Slot>]| -> Vec<String> {
        rows.iter().map(|r| r.event_id.clone()).collect()
    };
    assert_eq!(ids(&second), ids(&first), "the same deaths, the same ids");
    assert!(stored_cells(&table, "dead").await.is_empty());
}

/// A dead row whose last values no longer decode (another program wrote
/// bytes that are not UTF-8 over its `owner`): with events, the reaper
/// names it and deletes nothing, since it cannot hand it over; without,
/// it decodes nothing and the row goes like any dead row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_row_that_no_longer_decodes_goes_unless_events_are_wanted() {
    let t0 = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let clock = Clock::manual(t0);
    let table = reap_table(&clock).await;
    table
        .put_with(
            slot("garbled", "ann")
                .mutation()
                .ttl(TimeDelta::minutes(10)),
        )
        .await
        .unwrap();
    let owner = stored_cells(&table, "garbled")
        .await
        .into_iter()
        .find(|c| c.qualifier == b"owner")
        .expect("the owner cell");
    raw_set(
        table.raw(),
        "garbled",
        "s",
        b"owner",
        owner.timestamp_micros,
        b"\xff\xfe",
    )
    .await;
    clock.set(t0 + TimeDelta::minutes(20));
    let options = ReapOptions::new().with_grace(Duration::from_secs(60));
    let with_events = table
        .reap_with_events(
            &options,
            None,
            |_| async { ControlFlow::Continue(()) },
            |_| ControlFlow::Continue(()),
        )
        .await;
    assert!(
        matches!(with_events, Err(bigtable_ttl::Error::Decode(_))),
        "{with_events:?}"
    );
    assert!(!stored_cells(&table, "garbled").await.is_empty(), "kept");
    let done = reap_all(&table, &options).await;
    assert_eq!(
        (done.rows_reaped, done.rows_skipped_unsure),
        (1, 0),
        "{done:?}"
    );
    assert!(stored_cells(&table, "garbled").await.is_empty(), "gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_written_between_the_reapers_read_and_its_deletes_keeps_all_it_holds() {
    let t0 = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let clock = Clock::manual(t0);
    let table = reap_table(&clock).await;
    rows_of_every_kind(&table, t0).await;
    clock.set(t0 + TimeDelta::minutes(20));
    // Between the read and the deletes (while the dead rows are handed
    // over): the dead row inserted anew, the outlived one put anew, the
    // live one put anew (its new hint live), the one with an old version
    // re-timed.
    let status = table
        .reap_with_events(
            &ReapOptions::new().with_grace(Duration::from_secs(60)),
            None,
            |_| {
                let table = table.clone();
                async move {
                    let ttl = TimeDelta::hours(3);
                    let inserted = table
                        .insert_if_absent_with(slot("dead", "new").mutation().ttl(ttl))
                        .await
                        .unwrap();
                    assert!(matches!(inserted, Insert::Inserted(_)), "{inserted:?}");
                    for key in ["outlived", "live"] {
                        table
                            .put_with(slot(key, "new").mutation().ttl(ttl))
                            .await
                            .unwrap();
                    }
                    table
                        .retime(&"versions".to_owned(), Retime::Ttl(ttl))
                        .await
                        .unwrap()
                        .expect("live");
                    ControlFlow::Continue(())
                }
            },
            |_| ControlFlow::Continue(()),
        )
        .await
        .unwrap();
    let ReapStatus::Done(done) = status else {
        panic!("{status:?}")
    };
    assert_eq!(done.rows_skipped_changed, 1, "the outlived row: {done:?}");
    for (key, owner) in [
        ("dead", "new"),
        ("outlived", "new"),
        ("live", "new"),
        ("versions", "fay"),
    ] {
        let row = table.get(&key.to_owned()).await.unwrap().expect(key);
        assert_eq!(row.owner, owner, "{key}");
        assert_eq!(row.marks.get("m"), Some(&1), "{key}");
        if owner == "new" {
            assert_eq!(row.hint.as_deref(), Some("hint of new"), "{key}");
        }
    }
}

/// What a writer knows of one of its keys.
#[derive(Debug, Clone)]
struct Known {
    owner: String,
    expires_at: DateTime<Utc>,
    /// The hint, while its own second lasts.
    hint_until: DateTime<Utc>,
    /// Entries written by `put_entry`: value and expiry.
    entries: BTreeMap<String, (u32, DateTime<Utc>)>,
}

/// A tiny deterministic generator (xorshift): the race differs by seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
    fn millis(&mut self, from: i64, to: i64) -> TimeDelta {
        TimeDelta::milliseconds(
            from + i64::try_from(self.below(u64::try_from(to - from).unwrap())).unwrap(),
        )
    }
}

/// Margin kept from an expiry before a row or cell must still be read.
const MARGIN: TimeDelta = TimeDelta::milliseconds(300);

/// One writer racing the reaper over `keys` for `run`: puts, touches,
/// re-times, map entries and `insert_if_absent` once a row expired; after
/// each, what must still be live is read back. The losses it saw.
async fn writer(table: Table<Slot>, keys: Vec<String>, seed: u64, run: Duration) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut known: BTreeMap<String, Known> = BTreeMap::new();
    let mut lost = Vec::new();
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < run {
        n += 1;
        let key = keys[usize::try_from(rng.below(keys.len() as u64)).unwrap()].clone();
        let now = Utc::now();
        let state = known.get(&key).cloned();
        let owner = format!("{key}-{n}");
        match state {
            Some(k) if k.expires_at - now > MARGIN => match rng.below(4) {
                0 => {
                    let ttl = rng.millis(400, 1_500);
                    let written = table
                        .put_with(slot(&key, &owner).mutation().ttl(ttl))
                        .await
                        .unwrap();
                    known.insert(key.clone(), fresh(owner, written.expires_at, now));
                }
                1 => {
                    let touched = table
                        .touch(&key, TimeDelta::seconds(1), TimeDelta::seconds(2))
                        .await
                        .unwrap();
                    if let Some(t) = touched {
                        known.get_mut(&key).unwrap().expires_at = t.expires_at;
                    }
                }
                2 => {
                    let ttl = rng.millis(500, 1_500);
                    if let Some(m) = table.retime(&key, Retime::Ttl(ttl)).await.unwrap() {
                        let k = known.get_mut(&key).unwrap();
                        k.expires_at = m.expires_at;
                        k.hint_until = k.hint_until.min(m.expires_at);
                    }
                }
                _ => {
                    let ttl = rng.millis(200, 3_000);
                    let name = format!("e{}", rng.below(3));
                    let value = u32::try_from(n).unwrap();
                    let written = table
                        .put_entry(&key, Slot::MARKS, &name, &value, Expiry::Ttl(ttl))
                        .await
                        .unwrap();
                    if let Some(w) = written {
                        known
                            .get_mut(&key)
                            .unwrap()
                            .entries
                            .insert(name, (value, w.expires_at));
                    }
                }
            },
            Some(k) if now - k.expires_at < MARGIN => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            _ => {
                // Expired (or never written): the insert must win.
                let ttl = rng.millis(400, 1_500);
                match table
                    .insert_if_absent_with(slot(&key, &owner).mutation().ttl(ttl))
                    .await
                    .unwrap()
                {
                    Insert::Inserted(w) => {
                        known.insert(key.clone(), fresh(owner, w.expires_at, now));
                    }
                    Insert::Exists(row) => {
                        lost.push(format!("{key}: expired, yet an insert found {row:?}"));
                        continue;
                    }
                }
            }
        }
        // What must be live now is read back.
        let k = &known[&key];
        let asked = Utc::now();
        let row = table.get(&key).await.unwrap();
        if k.expires_at - asked <= MARGIN {
            continue;
        }
        let Some(row) = row else {
            lost.push(format!(
                "{key}: live until {}, read absent at {asked}",
                k.expires_at
            ));
            continue;
        };
        if row.owner != k.owner {
            lost.push(format!(
                "{key}: owner {} read, {} written",
                row.owner, k.owner
            ));
        }
        if k.hint_until - asked > MARGIN && row.hint.is_none() {
            lost.push(format!(
                "{key}: its hint, live until {}, gone",
                k.hint_until
            ));
        }
        for (name, (value, until)) in &k.entries {
            let live = (*until).min(k.expires_at);
            if live - asked > MARGIN && row.marks.get(name) != Some(value) {
                lost.push(format!(
                    "{key}: entry {name}={value} live until {until}, read {:?}",
                    row.marks.get(name)
                ));
            }
        }
    }
    lost
}

/// The state of a key just written whole at `now`.
fn fresh(owner: String, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Known {
    Known {
        owner,
        expires_at,
        hint_until: (now + TimeDelta::seconds(1)).min(expires_at),
        // A whole-row write replaces the map: its one entry lives with the row.
        entries: BTreeMap::from([("m".to_owned(), (1, expires_at))]),
    }
}

/// The row keys `cbt read` prints for `table`.
fn cbt_keys(table: &Table<Slot>) -> BTreeSet<String> {
    support::cbt(table.connection(), &["read", table.name()])
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(' ') && !l.starts_with('-'))
        .map(str::to_owned)
        .collect()
}

/// Runs of the race, each on a fresh table with its own seed.
const RACES: u64 = 5;

/// Rows put to live on after a race.
const SURVIVORS: [&str; 2] = ["s1", "s2"];

/// One race on a fresh table: four writers over 24 keys and the reaper,
/// over and over, for `run`; then the survivors put. The live data the
/// writers found lost, and the rows the reaper deleted.
async fn race(seed: u64, run: Duration) -> (Table<Slot>, Vec<String>, u64) {
    let table = reap_table(&Clock::system()).await;
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let keys: Vec<String> = (0..6).map(|k| format!("w{w}k{k}")).collect();
            tokio::spawn(writer(table.clone(), keys, seed.wrapping_mul(w + 7), run))
        })
        .collect();
    let reaped = Arc::new(AtomicU64::new(0));
    let reaper = {
        let (table, reaped) = (table.clone(), reaped.clone());
        tokio::spawn(async move {
            let options = ReapOptions::new()
                .with_grace(Duration::from_millis(100))
                .with_page_rows(4);
            let started = Instant::now();
            while started.elapsed() < run {
                let p = reap_all(&table, &options).await;
                reaped.fetch_add(p.rows_reaped, Ordering::Relaxed);
            }
        })
    };
    let mut lost = Vec::new();
    for w in writers {
        lost.extend(w.await.unwrap());
    }
    reaper.await.unwrap();
    for key in SURVIVORS {
        table
            .put_with(slot(key, "stays").mutation().ttl(TimeDelta::hours(1)))
            .await
            .unwrap();
    }
    (table, lost, reaped.load(Ordering::Relaxed))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_re_times_and_inserts_racing_the_reaper_lose_no_live_row_or_cell() {
    // Installed (once, into the target directory) while the races run.
    let python = tokio::task::spawn_blocking(support::google_python::python);
    let base = u64::from(std::process::id()) | 1;
    let mut tables = Vec::new();
    let mut lost = Vec::new();
    for n in 0..RACES {
        let (table, lost_here, reaped) =
            race(base.wrapping_add(n * 0x9E37), Duration::from_secs(3)).await;
        eprintln!(
            "race {n}: {reaped} dead rows reaped, {} losses",
            lost_here.len()
        );
        assert!(reaped > 0, "race {n}: the reaper raced them");
        lost.extend(lost_here.into_iter().map(|l| format!("race {n}: {l}")));
        tables.push(table);
    }
    assert!(
        lost.is_empty(),
        "live data lost in {RACES} races:\n{}",
        lost.join("\n")
    );

    // Everything the writers wrote expires (entries live 3 s at most).
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let expected: BTreeSet<String> = SURVIVORS.iter().map(|s| (*s).to_owned()).collect();
    python.await.expect("Google's Python client installed");
    for table in &tables {
        let stale = cbt_keys(table);
        assert!(
            stale.len() > SURVIVORS.len(),
            "cbt sees the expired rows before the reaper: {stale:?}"
        );
        assert_eq!(
            support::google_python::row_keys(table.connection(), table.name()),
            stale,
            "Google's Python client sees what cbt sees before the reaper"
        );
        let done = reap_all(table, &ReapOptions::new().with_grace(Duration::ZERO)).await;
        assert!(done.rows_reaped > 0, "{done:?}");
        assert_eq!(cbt_keys(table), expected, "cbt sees only the live rows");
        assert_eq!(
            support::google_python::row_keys(table.connection(), table.name()),
            expected,
            "Google's Python client sees only the live rows"
        );
        for key in SURVIVORS {
            let row = table.get(&key.to_owned()).await.unwrap().expect("live");
            assert_eq!(row.owner, "stays");
        }
    }
}
