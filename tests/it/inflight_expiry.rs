//! No conditional write revives a row that expires while the write is in
//! flight (issue 28). Rows expire at `E` on the system clock, the
//! emulator's; a reader loops `get` across `E`; a re-time or a conditional
//! put, sent a few milliseconds before `E`, would land after it. A write
//! decides on the row being alive at its horizon (now plus the time the
//! server may still apply it), so the row is either re-timed before `E` or
//! left to expire: never seen absent after `E` and then present again.
//!
//! Rounds run side by side on keys of their own, their expiries staggered
//! so that only a few are near `E` at once (a loaded 2-core machine must
//! still loop `get` every few milliseconds around each `E`).

use crate::recorder::Recorder;
use crate::support;

use std::time::Duration;

use bigtable_ttl::{Clock, Connection, Table};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::future::join_all;
use prost::Message as _;
use support::rows::Session;

/// The conditional writes that decide on the row being alive, each
/// extending it by an hour.
#[derive(Debug, Clone, Copy)]
enum Op {
    Touch,
    SetTtl,
    UpdateTtl,
    PutIf,
}

const OPS: [Op; 4] = [Op::Touch, Op::SetTtl, Op::UpdateTtl, Op::PutIf];
const ROUNDS_PER_OP: usize = 64;
/// Between the expiries of two consecutive rounds.
const STAGGER: Duration = Duration::from_millis(12);
/// From a row's write to its expiry.
const LIFE: Duration = Duration::from_millis(450);
/// How long the reader goes on after `E` (and after the write ended).
const WATCH: Duration = Duration::from_millis(120);

/// One `get`: when it was sent, when it ended, and whether it saw the row
/// (with the expiry it saw).
struct Read {
    sent: DateTime<Utc>,
    ended: DateTime<Utc>,
    seen: Option<DateTime<Utc>>,
}

async fn sleep_until(at: DateTime<Utc>) {
    if let Ok(wait) = (at - Utc::now()).to_std() {
        tokio::time::sleep(wait).await;
    }
}

fn millis(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap()
}

/// The write of `op` on `key`: whether it re-timed the row, `None` when
/// its outcome is unknown. Every outcome the library documents is accepted
/// (re-timed before `E`, refused as the row counts as expired, or, on a
/// loaded machine, cut at its deadline with its answer lost); any other
/// error is not.
async fn write(table: &Table<Session>, op: Op, key: &str, user: &str) -> Option<bool> {
    let key = key.to_owned();
    let hour = TimeDelta::hours(1);
    let outcome = match op {
        Op::Touch => table
            .touch(&key, hour, TimeDelta::hours(2))
            .await
            .map(|t| t.is_some_and(|t| t.rewritten)),
        Op::SetTtl => table.set_ttl(&key, hour).await.map(|m| m.is_some()),
        Op::UpdateTtl => table
            .update(&key)
            .set(Session::USER, &format!("{user}+"))
            .ttl(hour)
            .apply()
            .await
            .map(|w| w.is_some()),
        Op::PutIf => {
            let row = Session {
                id: key.clone(),
                expires_at: Utc::now() + hour,
                user: format!("{user}+"),
            };
            table
                .put_if(&row, Session::USER.equals(&user.to_owned()))
                .await
                .map(|w| w.is_some())
        }
    };
    match outcome {
        Ok(rewritten) => Some(rewritten),
        Err(e) if e.is_outcome_unknown() || e.is_timeout() => None,
        Err(e) => panic!("{op:?} on {key}: {e}"),
    }
}

/// Write the round's row to expire at `planned`, or, when a loaded
/// machine got there too late to write it `LIFE` ahead, `LIFE` from now:
/// an expiry already past is refused (`ExpiryNotInFuture`), as documented.
/// The expiry written.
async fn put_row(
    table: &Table<Session>,
    key: &str,
    user: &str,
    planned: DateTime<Utc>,
) -> DateTime<Utc> {
    let life = TimeDelta::from_std(LIFE).unwrap();
    for _ in 0..10 {
        let expiry = planned.max(millis(Utc::now()) + life);
        let row = Session {
            id: key.to_owned(),
            expires_at: expiry,
            user: user.to_owned(),
        };
        match table.put(&row).await {
            Ok(_) => return expiry,
            Err(bigtable_ttl::Error::ExpiryNotInFuture { .. }) => {}
            Err(e) => panic!("writing {key}: {e}"),
        }
    }
    panic!("{key}: ten writes each took longer than {LIFE:?}")
}

/// One round: a row expiring at `expiry`, written `LIFE` before; `op` sent
/// `early` before `expiry`, while a reader loops `get`. Whether the write's
/// outcome was known, and the revival the reader saw, if any, as text.
async fn round(
    table: Table<Session>,
    op: Op,
    key: String,
    expiry: DateTime<Utc>,
    early: Duration,
) -> (bool, Option<String>) {
    let user = format!("u-{key}");
    sleep_until(expiry - TimeDelta::from_std(LIFE).unwrap()).await;
    let expiry = put_row(&table, &key, &user, expiry).await;
    let written = std::sync::atomic::AtomicBool::new(false);
    let writer = async {
        sleep_until(expiry - TimeDelta::from_std(early).unwrap()).await;
        let sent = Utc::now();
        let rewritten = write(&table, op, &key, &user).await;
        written.store(true, std::sync::atomic::Ordering::SeqCst);
        (sent, rewritten, Utc::now())
    };
    let reader = async {
        sleep_until(expiry - TimeDelta::milliseconds(5)).await;
        let watch = TimeDelta::from_std(WATCH).unwrap();
        let mut reads = Vec::new();
        let mut last_ends = expiry + watch;
        loop {
            let sent = Utc::now();
            let seen = table.get(&key).await.unwrap().map(|r| r.expires_at);
            let ended = Utc::now();
            reads.push(Read { sent, ended, seen });
            if !written.load(std::sync::atomic::Ordering::SeqCst) {
                last_ends = last_ends.max(ended + TimeDelta::milliseconds(20));
            } else if ended > last_ends {
                break reads;
            }
        }
    };
    let ((sent, rewritten, answered), reads) = tokio::join!(writer, reader);
    (
        rewritten.is_some(),
        revival(&reads, op, &key, expiry, (sent, rewritten, answered)),
    )
}

/// A read that saw no row after `expiry` followed by one that saw it, as
/// text.
fn revival(
    reads: &[Read],
    op: Op,
    key: &str,
    expiry: DateTime<Utc>,
    (sent, rewritten, answered): (DateTime<Utc>, Option<bool>, DateTime<Utc>),
) -> Option<String> {
    let first_gone = reads
        .iter()
        .find(|r| r.sent >= expiry && r.seen.is_none())?;
    let back = reads
        .iter()
        .find(|r| r.sent >= first_gone.ended && r.seen.is_some())?;
    let us = |d: TimeDelta| d.num_microseconds().unwrap();
    Some(format!(
        "{op:?} {key}: expiry {expiry}, sent {} µs before it, answered {} µs after it \
         (re-timed: {rewritten:?}); a get at E+{} µs saw no row, one at E+{} µs saw it \
         expiring at {}",
        us(expiry - sent),
        us(answered - expiry),
        us(first_gone.sent - expiry),
        us(back.sent - expiry),
        back.seen.unwrap(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_conditional_write_revives_a_row_expiring_while_it_is_in_flight() {
    let table = support::table::<Session>(&Clock::system()).await;
    // The first expiry leaves time to spawn every round and write its row.
    let start = millis(Utc::now()) + TimeDelta::milliseconds(600);
    let stagger = TimeDelta::from_std(STAGGER).unwrap();
    let rounds = (0..ROUNDS_PER_OP * OPS.len()).map(|i| {
        let op = OPS[i % OPS.len()];
        let expiry = start + stagger * i32::try_from(i).unwrap();
        // 0 to 10 ms before the expiry, spread evenly over the rounds of
        // each operation.
        let early = Duration::from_micros(((i / OPS.len()) * 10_000 / ROUNDS_PER_OP) as u64);
        tokio::spawn(round(table.clone(), op, format!("k{i:03}"), expiry, early))
    });
    let outcomes: Vec<(bool, Option<String>)> = join_all(rounds)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let known = outcomes.iter().filter(|(known, _)| *known).count();
    println!("{known} of {} writes had a known outcome", outcomes.len());
    // Writes cut at their deadline say nothing of what a decided write
    // does: most must have been decided for the rounds to show anything.
    assert!(known * 2 >= outcomes.len(), "only {known} writes decided");
    let revivals: Vec<String> = outcomes.into_iter().filter_map(|(_, r)| r).collect();
    assert!(
        revivals.is_empty(),
        "{} of {} rounds revived their row:\n{}",
        revivals.len(),
        ROUNDS_PER_OP * OPS.len(),
        revivals.join("\n")
    );
}

/// The bound the rule rests on: a conditional write's only attempt
/// carries a `grpc-timeout` no longer than the horizon it decided at
/// (1 s at most), even under a write policy allowing 30 s per attempt, and
/// its predicate asks for cells alive at that horizon, not at its now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_write_is_cut_at_its_horizon() {
    let table = support::table::<Session>(&Clock::system()).await;
    let recorder = Recorder::start(&support::emulator_host()).await;
    let conn = table.connection();
    let recorded = Table::<Session>::new(
        Connection::emulator(&recorder.host(), conn.project(), conn.instance()).unwrap(),
    );
    let key = "cut".to_owned();
    let before = Utc::now();
    recorded
        .put(&Session {
            id: key.clone(),
            expires_at: before + TimeDelta::minutes(5),
            user: "ann".into(),
        })
        .await
        .unwrap();
    assert!(recorded
        .touch(&key, TimeDelta::hours(1), TimeDelta::hours(2))
        .await
        .unwrap()
        .is_some_and(|t| t.rewritten));
    let seen = recorder.seen();
    let check = seen
        .iter()
        .rev()
        .find(|s| s.path.ends_with("/CheckAndMutateRow"))
        .expect("touch sends a CheckAndMutateRow");
    let timeout = check.header("grpc-timeout");
    let (digits, unit) = timeout.split_at(timeout.len() - 1);
    let value: u64 = digits.parse().unwrap();
    let micros = match unit {
        "H" => value * 3_600_000_000,
        "M" => value * 60_000_000,
        "S" => value * 1_000_000,
        "m" => value * 1_000,
        "u" => value,
        "n" => value / 1_000,
        other => panic!("grpc-timeout unit {other:?} in {timeout:?}"),
    };
    assert!(
        (1..=1_000_000).contains(&micros),
        "grpc-timeout {timeout:?}"
    );
    // The predicate's live-cell filter starts past the write's now: at its
    // horizon, up to the timeout later.
    let request = crate::proto::CheckAndMutateRowRequest::decode(&check.body[5..]).unwrap();
    let starts = timestamp_starts(request.predicate_filter.as_ref().unwrap());
    let after = Utc::now();
    assert!(!starts.is_empty());
    for start in starts {
        let start = DateTime::from_timestamp_micros(start).unwrap();
        assert!(
            start > after && start <= after + TimeDelta::microseconds(i64::try_from(micros).unwrap() + 1_000),
            "a live-cell filter from {start}, the call ran from {before} to {after}, timeout {timeout}"
        );
    }
}

/// The starts of the open-ended timestamp ranges (the live-cell filters)
/// in `filter`.
fn timestamp_starts(filter: &crate::proto::RowFilter) -> Vec<i64> {
    use crate::proto::row_filter::Filter;
    let mut starts = Vec::new();
    let mut stack = vec![filter];
    while let Some(f) = stack.pop() {
        match f.filter.as_ref() {
            Some(Filter::TimestampRangeFilter(r)) if r.end_timestamp_micros == 0 => {
                starts.push(r.start_timestamp_micros);
            }
            Some(Filter::Chain(c)) => stack.extend(c.filters.iter()),
            Some(Filter::Interleave(i)) => stack.extend(i.filters.iter()),
            Some(Filter::Condition(c)) => {
                stack.extend(c.predicate_filter.as_deref());
                stack.extend(c.true_filter.as_deref());
                stack.extend(c.false_filter.as_deref());
            }
            _ => {}
        }
    }
    starts
}
