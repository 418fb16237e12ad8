//! Rate-limit windows that expire every 200 ms, incremented by eight tasks
//! at once for about 3 s (longer, on a loaded machine, until a few windows
//! have rolled over), with the client's clock behind, equal to and
//! ahead of the server's (the emulator's, which is the machine's): every
//! increment is counted in exactly one window.
//!
//! An increment the server counted in a live window and the client then
//! judged over (its own clock having passed the expiry by the time the
//! answer came) used to be counted a second time in a new window, leaving
//! a gap in the first window's answers and one count too many.

use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bigtable_ttl::{BigtableRow, Clock, Error, Expiry, Table};
use chrono::{DateTime, TimeDelta, Utc};

/// Requests of one user, in windows that roll over as each expires.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "windows", family = "w")]
struct Limit {
    #[bigtable(key)]
    user: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    #[bigtable(counter)]
    hits: i64,
}

const TASKS: usize = 8;
const RUN: Duration = Duration::from_secs(3);
const WINDOW: TimeDelta = TimeDelta::milliseconds(200);
/// Windows a run goes on for, past `RUN` if need be: on a loaded machine
/// an increment can take most of a second, and fewer rollovers would
/// show little.
const MIN_WINDOWS: usize = 4;
/// How long a run may go on to see `MIN_WINDOWS` windows.
const RUN_AT_MOST: Duration = Duration::from_secs(20);

/// One acknowledged increment: what it answered, and the real time (the
/// server's) when its call began.
struct Answer {
    value: i64,
    expires_at: DateTime<Utc>,
    began: DateTime<Utc>,
}

/// What `TASKS` tasks got from incrementing one counter for `RUN`, through
/// a client clock `skew` away from the server's: the answers, how many
/// calls gave up on the race to open a window (`Error::Conflict`, which
/// counts nothing), and the counter cells stored at the end (timestamp,
/// value).
async fn increment_for_a_while(skew: TimeDelta) -> (Vec<Answer>, usize, Vec<(i64, i64)>) {
    let limits: Table<Limit> = support::table(&Clock::system_offset(skew)).await;
    let started = Instant::now();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let limits = limits.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let (mut answers, mut conflicts) = (Vec::new(), 0);
                let go_on = || {
                    let elapsed = started.elapsed();
                    elapsed < RUN
                        || (elapsed < RUN_AT_MOST && seen.lock().unwrap().len() < MIN_WINDOWS)
                };
                while go_on() {
                    let began = Utc::now();
                    match limits
                        .increment("ann", Limit::HITS, 1, Expiry::Ttl(WINDOW))
                        .await
                    {
                        Ok(counted) => {
                            seen.lock().unwrap().insert(counted.expires_at);
                            answers.push(Answer {
                                value: counted.value,
                                expires_at: counted.expires_at,
                                began,
                            });
                        }
                        Err(Error::Conflict { .. }) => conflicts += 1,
                        Err(e) => panic!("skew {skew}: {e}"),
                    }
                }
                (answers, conflicts)
            })
        })
        .collect();
    let (mut answers, mut conflicts) = (Vec::new(), 0);
    for task in tasks {
        let (a, c) = task.await.unwrap();
        answers.extend(a);
        conflicts += c;
    }
    let stored = support::stored_cells(&limits, "ann")
        .await
        .into_iter()
        .filter(|c| c.qualifier == b"hits")
        .map(|c| {
            let value = i64::from_be_bytes(c.value.as_slice().try_into().unwrap());
            (c.timestamp_micros, value)
        })
        .collect();
    (answers, conflicts, stored)
}

/// What is wrong with the answers of one run: within each window (told
/// apart by its expiry) they must be exactly 1..=n, no gap and no repeat,
/// none for a window that had ended (by the server's clock) before its call
/// began; across windows the last answers add up to the increments
/// acknowledged; the last window's stored cell (under one-second expiration
/// its timestamp is its expiry) holds its last answer.
fn problems(answers: &[Answer], conflicts: usize, stored: &[(i64, i64)]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut windows: BTreeMap<DateTime<Utc>, Vec<i64>> = BTreeMap::new();
    for a in answers {
        if a.expires_at <= a.began {
            problems.push(format!(
                "{} counted into a window that ended at {}, before its call began at {}",
                a.value, a.expires_at, a.began
            ));
        }
        windows.entry(a.expires_at).or_default().push(a.value);
    }
    let mut last_answers = 0;
    let mut broken = 0;
    for (expires_at, values) in &mut windows {
        values.sort_unstable();
        let n = i64::try_from(values.len()).unwrap();
        if *values != (1..=n).collect::<Vec<_>>() {
            broken += 1;
            let missing: Vec<i64> = (1..=n)
                .filter(|v| values.binary_search(v).is_err())
                .collect();
            let extra: Vec<i64> = values
                .iter()
                .enumerate()
                .filter(|&(i, v)| *v > n || (i > 0 && values[i - 1] == *v))
                .map(|(_, v)| *v)
                .collect();
            problems.push(format!(
                "window ending {expires_at}: {n} answers, missing {missing:?}, \
                 repeated or past {n}: {extra:?}"
            ));
        }
        last_answers += values.last().copied().unwrap_or(0);
    }
    if broken > 0 {
        problems.push(format!("{broken} of {} windows not 1..=n", windows.len()));
    }
    if last_answers != i64::try_from(answers.len()).unwrap() {
        problems.push(format!(
            "the windows' last answers add up to {last_answers}, for {} increments acknowledged",
            answers.len()
        ));
    }
    if let Some((expiry, values)) = windows.last_key_value() {
        let cell = stored
            .iter()
            .find(|(ts, _)| *ts == expiry.timestamp_micros())
            .map(|(_, value)| *value);
        if cell != values.last().copied() {
            problems.push(format!(
                "the last window ({expiry}) answered up to {:?}, its stored cell holds {cell:?} \
                 (stored: {stored:?})",
                values.last()
            ));
        }
    }
    if windows.len() < MIN_WINDOWS {
        problems.push(format!("only {} windows in {RUN_AT_MOST:?}", windows.len()));
    }
    // A lost race is retried; giving up is for a pathological row, not for
    // one call in ten.
    if conflicts * 10 > answers.len() {
        problems.push(format!(
            "{conflicts} conflicts for {} answers",
            answers.len()
        ));
    }
    problems
}

/// Every increment counted in exactly one window (see [`problems`]), with
/// the client's clock behind, level with and ahead of the server's. Skews
/// of more than a window's TTL are covered: a client 300 ms behind opens
/// windows already over at the server, each increment then landing in a
/// window opened by the server's clock; one 300 ms ahead closes windows
/// the server still counts in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_increment_is_counted_in_exactly_one_window_whatever_the_skew() {
    let mut report = Vec::new();
    for skew in [
        TimeDelta::milliseconds(-300),
        TimeDelta::milliseconds(-100),
        TimeDelta::zero(),
        TimeDelta::milliseconds(300),
    ] {
        let (answers, conflicts, stored) = increment_for_a_while(skew).await;
        report.extend(
            problems(&answers, conflicts, &stored)
                .into_iter()
                .map(|p| format!("skew {skew}: {p}")),
        );
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// A quota: a required plan and a counter.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "quotas", family = "q")]
struct Quota {
    #[bigtable(key)]
    user: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    plan: String,
    #[bigtable(counter)]
    used: i64,
}

/// Rewrite row `key`'s `columns` (each with its value) at the expiry `at`
/// (one-second expiration: a cell's timestamp is its expiry), clearing
/// each column first, as a writer that knows nothing of window marks does
/// (an earlier version of this library, another program): the counter's
/// mark stays where the longer window it replaces put it.
async fn rewrite_without_mark<T: BigtableRow>(
    table: &Table<T>,
    key: &str,
    at: DateTime<Utc>,
    columns: &[(&str, Vec<u8>)],
) {
    use bigtable_ttl::data::Mutation;
    let family = T::SCHEMA.families[0];
    let ts = at.timestamp_millis() * 1000;
    let mutations = columns
        .iter()
        .flat_map(|(qualifier, value)| {
            [
                Mutation::delete_from_column(family, qualifier.as_bytes()),
                Mutation::set_cell(family, qualifier.as_bytes(), ts, value.clone()),
            ]
        })
        .collect();
    table.raw().mutate_row(key, mutations).await.unwrap();
}

/// The timestamp of row `key`'s newest stored cell of column `qualifier`.
async fn stored_ts<T: BigtableRow>(table: &Table<T>, key: &str, qualifier: &[u8]) -> Option<i64> {
    support::stored_cells(table, key)
        .await
        .iter()
        .filter(|c| c.qualifier == qualifier)
        .map(|c| c.timestamp_micros)
        .max()
}

/// A row whose counter another writer rewrote with a shorter expiry than
/// its window mark's (the mark of the longer window it replaced) is still
/// live: an increment counts into it, keeps its expiry and moves its mark
/// where it belongs; once that expiry passes, the row is gone and the
/// stale mark keeps nothing of it alive. The increment used to be judged
/// dead by the later mark and counted again at the mark's instant: here it
/// answered `NoLiveRow` and deleted the live counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_rewritten_under_a_longer_window_s_mark_still_counts_in_its_row() {
    let quotas: Table<Quota> = support::table(&Clock::system()).await;
    let quota = Quota {
        user: "ann".into(),
        expires_at: Utc::now() + TimeDelta::seconds(60),
        plan: "gold".into(),
        used: 1,
    };
    quotas.put(&quota).await.unwrap();
    let short = shorter_window();
    let used = 5i64.to_be_bytes().to_vec();
    rewrite_without_mark(
        &quotas,
        "ann",
        short,
        &[("plan", b"silver".to_vec()), ("used", used)],
    )
    .await;
    assert!(stored_ts(&quotas, "ann", b"\0used").await > Some(short.timestamp_micros()));

    let counted = quotas
        .increment("ann", Quota::USED, 2, LONG)
        .await
        .expect("a live row counts");
    assert_eq!((counted.value, counted.expires_at), (7, short));
    let got = quotas.get("ann").await.unwrap().expect("still live");
    assert_eq!((got.plan.as_str(), got.used), ("silver", 7));
    let mark = stored_ts(&quotas, "ann", b"\0used").await;
    assert_eq!(
        mark,
        Some(short.timestamp_micros() - 1_000),
        "the mark moved to its window"
    );

    // What must go: past the shorter expiry, nothing of the row is live.
    sleep_past(short).await;
    assert_eq!(quotas.get("ann").await.unwrap(), None);
    assert!(matches!(
        quotas.increment("ann", Quota::USED, 1, LONG).await,
        Err(Error::NoLiveRow { .. })
    ));
}

/// The same for a struct of counters alone: the increment used to replace
/// the live count with a new window holding the increment alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_rewritten_under_a_longer_window_s_mark_still_counts_in_its_window() {
    let limits: Table<Limit> = support::table(&Clock::system()).await;
    limits.increment("ann", Limit::HITS, 1, LONG).await.unwrap();
    let short = shorter_window();
    rewrite_without_mark(
        &limits,
        "ann",
        short,
        &[("hits", 5i64.to_be_bytes().to_vec())],
    )
    .await;
    assert!(stored_ts(&limits, "ann", b"\0hits").await > Some(short.timestamp_micros()));

    let counted = limits.increment("ann", Limit::HITS, 2, LONG).await.unwrap();
    assert_eq!((counted.value, counted.expires_at), (7, short));
    let mark = stored_ts(&limits, "ann", b"\0hits").await;
    assert_eq!(
        mark,
        Some(short.timestamp_micros() - 1_000),
        "the mark moved to its window"
    );

    // What must go: past the shorter expiry, a new window.
    sleep_past(short).await;
    let counted = limits.increment("ann", Limit::HITS, 1, LONG).await.unwrap();
    assert_eq!(counted.value, 1, "a new window, nothing of the old count");
    assert!(counted.expires_at > short + TimeDelta::seconds(50));
}

/// The longer window's TTL, and the expiry of the shorter one that
/// replaces it (a whole millisecond, as a cell's timestamp holds it).
const LONG: Expiry = Expiry::Ttl(TimeDelta::seconds(60));

fn shorter_window() -> DateTime<Utc> {
    let at = Utc::now() + TimeDelta::milliseconds(2500);
    DateTime::from_timestamp_millis(at.timestamp_millis()).unwrap()
}

async fn sleep_past(at: DateTime<Utc>) {
    let wait = (at - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_millis(300)).await;
}
