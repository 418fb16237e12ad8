//! The checks of a history: leases never overlap, each register is
//! linearizable given the expiries, counters count each acknowledged
//! increment once per window and never continue a window after its
//! expiry.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::history::{Call, History, Op, Outcome};
use crate::lin::{self, Linearizable};
use crate::registers::{entries, Registers};

/// What one check found wrong, and the calls involved (indexes of
/// [`History::calls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// What is wrong, in words.
    pub what: String,
    /// The calls that show it.
    pub calls: Vec<usize>,
}

/// What the checks found.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Every violation.
    pub violations: Vec<Violation>,
    /// Lease acquisitions judged.
    pub acquisitions: usize,
    /// Register calls judged (in all registers).
    pub register_calls: usize,
    /// Acknowledged increments judged.
    pub increments: usize,
    /// Windows left unjudged because the emulator's restart lost them.
    pub windows_lost_to_restart: usize,
}

impl Verdict {
    /// Whether nothing is wrong.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} lease acquisitions, {} register calls, {} increments: {} violations",
            self.acquisitions,
            self.register_calls,
            self.increments,
            self.violations.len()
        )
    }
}

/// Configurations a register's search may explore before it gives up.
const BUDGET: usize = 5_000_000;

/// Every check on `history`.
#[must_use]
pub fn check(history: &History) -> Verdict {
    let mut verdict = Verdict::default();
    leases(history, &mut verdict);
    registers(history, &mut verdict);
    counters(history, &mut verdict);
    verdict
}

/// The restarts' spans.
fn restarts(history: &History) -> Vec<(i64, i64)> {
    history
        .calls
        .iter()
        .filter(|c| c.op == Op::Restart)
        .map(|c| (c.invoked, c.returned))
        .collect()
}

/// One holder's belief: from its acquisition's answer until it asked to
/// release, or its lease's expiry less the largest skew between clients.
#[derive(Debug)]
struct Held {
    lease: usize,
    from: i64,
    until: i64,
    /// The calls that made it (acquisition, renewals).
    calls: Vec<usize>,
}

fn leases(history: &History, verdict: &mut Verdict) {
    let calls = &history.calls;
    let max_skew = history.skews.iter().copied().max().unwrap_or(0);
    let restarts = restarts(history);
    // By holder token: the acquisition, then renewals and the release.
    let mut by_holder: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, c) in calls.iter().enumerate() {
        if let Op::Acquire { holder, .. } | Op::Renew { holder, .. } | Op::Release { holder, .. } =
            &c.op
        {
            by_holder.entry(holder.as_str()).or_default().push(i);
        }
    }
    let mut held = Vec::new();
    for ids in by_holder.values() {
        let Some(&acquired) = ids.first() else {
            continue;
        };
        let acquisition = &calls[acquired];
        let (Op::Acquire { lease, .. }, Outcome::Holds { expires }) =
            (&acquisition.op, &acquisition.outcome)
        else {
            continue;
        };
        verdict.acquisitions += 1;
        // Exclusive until the expiry less the most any other client's
        // clock runs ahead (as a true-time number: the expiry on the
        // holder's clock, less its skew, less the margin).
        let believed = |expires: i64| expires - max_skew;
        let mut h = Held {
            lease: *lease,
            from: acquisition.returned,
            until: believed(*expires),
            calls: vec![acquired],
        };
        for &i in &ids[1..] {
            let c = &calls[i];
            match (&c.op, &c.outcome) {
                (Op::Renew { .. }, Outcome::Holds { expires }) => {
                    if c.returned < h.until {
                        h.until = h.until.max(believed(*expires));
                        h.calls.push(i);
                    } else {
                        // The belief lapsed before the renewal answered.
                        let next = Held {
                            lease: *lease,
                            from: c.returned,
                            until: believed(*expires),
                            calls: vec![i],
                        };
                        held.push(std::mem::replace(&mut h, next));
                    }
                }
                (Op::Release { .. }, _) => {
                    h.until = h.until.min(c.invoked);
                    h.calls.push(i);
                }
                _ => {}
            }
        }
        held.push(h);
    }
    // The emulator's restart loses every lease stored before it: a belief
    // in one whose acquisition was sent before the restart ended (its
    // answer may come after) ends where the restart began.
    for h in &mut held {
        let sent = calls[h.calls[0]].invoked;
        for &(start, end) in &restarts {
            if sent < end && start < h.until {
                h.until = start;
            }
        }
    }
    held.retain(|h| h.from < h.until);
    held.sort_by_key(|h| (h.lease, h.from));
    for (i, a) in held.iter().enumerate() {
        for b in &held[i + 1..] {
            if b.lease != a.lease || b.from >= a.until {
                continue;
            }
            if a.from < b.until && a.from < a.until && b.from < b.until {
                verdict.violations.push(Violation {
                    what: format!(
                        "lease {}: two holders at once, from {} ms to {} ms",
                        a.lease,
                        b.from / 1_000,
                        a.until.min(b.until) / 1_000
                    ),
                    calls: a.calls.iter().chain(&b.calls).copied().collect(),
                });
            }
        }
    }
}

fn registers(history: &History, verdict: &mut Verdict) {
    let regs: BTreeSet<usize> = history
        .calls
        .iter()
        .filter_map(|c| match c.op {
            Op::Read { reg }
            | Op::Insert { reg, .. }
            | Op::PutIf { reg, .. }
            | Op::Retime { reg, .. } => Some(reg),
            _ => None,
        })
        .collect();
    let model = Registers {
        horizon: history.horizon,
        collected_after: 1_000_000,
    };
    for reg in regs {
        let entries = entries(&history.calls, &history.skews, reg);
        verdict.register_calls += entries.iter().filter(|e| e.op.op != Op::Restart).count();
        match lin::check(&model, &entries, BUDGET) {
            Linearizable::Yes => {}
            Linearizable::No { longest, stuck } => verdict.violations.push(Violation {
                what: format!(
                    "register {reg} is not linearizable: no call can follow the {} placed (call {stuck}: {}){}",
                    longest.len(),
                    history.calls.get(stuck).map_or_else(String::new, Call::to_string),
                    around(history, &entries, &longest, stuck)
                ),
                calls: vec![stuck],
            }),
            Linearizable::Undecided(explored) => verdict.violations.push(Violation {
                what: format!(
                    "register {reg}: undecided after {explored} configurations (a history too large to check)"
                ),
                calls: Vec::new(),
            }),
        }
    }
}

/// The calls a reader needs to see why `stuck` could not follow `placed`:
/// those placed (in their order) and the others invoked before `stuck`
/// returned, each with its client's skew. A CI log keeps no timeline.
fn around(
    history: &History,
    entries: &[lin::Entry<crate::registers::RegCall>],
    placed: &[usize],
    stuck: usize,
) -> String {
    const MOST: usize = 16;
    let until = history.calls.get(stuck).map_or(i64::MAX, |c| c.returned);
    let line = |id: usize| {
        let c = &history.calls[id];
        let skew = history.skews.get(c.client).copied().unwrap_or(0);
        format!("\n  call {id} (skew {} ms): {c}", skew / 1_000)
    };
    let mut out = String::from("\nplaced:");
    for &id in placed.iter().rev().take(MOST).rev() {
        out += &line(id);
    }
    out += "\nnot placed, invoked before it returned:";
    for e in entries
        .iter()
        .filter(|e| !placed.contains(&e.id) && e.invoked <= until)
        .take(MOST)
    {
        out += &line(e.id);
    }
    out
}

fn counters(history: &History, verdict: &mut Verdict) {
    let calls = &history.calls;
    let restarts = restarts(history);
    let spans_restart = |from: i64, to: i64| {
        restarts
            .iter()
            .any(|&(start, end)| from < end && start < to)
    };
    // Acknowledged increments by counter and window (its expiry).
    let mut windows: BTreeMap<(usize, i64), Vec<usize>> = BTreeMap::new();
    for (i, c) in calls.iter().enumerate() {
        if let (Op::Increment { counter, .. }, Outcome::Counted { expires, .. }) =
            (&c.op, &c.outcome)
        {
            windows.entry((*counter, *expires)).or_default().push(i);
            verdict.increments += 1;
            // Nothing expired comes back: an increment sent after its
            // window's expiry (the server's clock, the true one) never
            // lands in it.
            if c.invoked > *expires {
                verdict.violations.push(Violation {
                    what: format!(
                        "counter {counter}: an increment invoked at {} ms counted in the window that expired at {} ms",
                        c.invoked / 1_000,
                        expires / 1_000
                    ),
                    calls: vec![i],
                });
            }
        }
    }
    for ((counter, expires), ids) in windows {
        let first = ids.iter().map(|&i| calls[i].invoked).min().unwrap_or(0);
        if spans_restart(first, expires) {
            verdict.windows_lost_to_restart += 1;
            continue;
        }
        // Increments whose outcome is unknown that may have landed in it.
        let unknown = calls
            .iter()
            .filter(|c| {
                matches!((&c.op, &c.outcome), (Op::Increment { counter: k, .. }, Outcome::Failed(_)) if *k == counter)
                    && c.invoked < expires
            })
            .count();
        let mut values: Vec<(i64, usize)> = ids
            .iter()
            .filter_map(|&i| match calls[i].outcome {
                Outcome::Counted { value, .. } => Some((value, i)),
                _ => None,
            })
            .collect();
        values.sort_unstable();
        for pair in values.windows(2) {
            if pair[0].0 == pair[1].0 {
                verdict.violations.push(Violation {
                    what: format!(
                        "counter {counter}, window to {} ms: two increments both answered {} (one was not counted)",
                        expires / 1_000,
                        pair[0].0
                    ),
                    calls: vec![pair[0].1, pair[1].1],
                });
            }
        }
        let most = ids.len() + unknown;
        if let Some(&(value, i)) = values.last() {
            if usize::try_from(value).map_or(true, |v| v > most) {
                verdict.violations.push(Violation {
                    what: format!(
                        "counter {counter}, window to {} ms: counted {value} for {} acknowledged and {unknown} unknown increments (one counted twice)",
                        expires / 1_000,
                        ids.len()
                    ),
                    calls: vec![i],
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(client: usize, invoked_ms: i64, returned_ms: i64, op: Op, outcome: Outcome) -> Call {
        Call {
            client,
            invoked: invoked_ms * 1_000,
            returned: returned_ms * 1_000,
            op,
            outcome,
        }
    }

    fn history(calls: Vec<Call>) -> History {
        History {
            skews: vec![0, 0, 0],
            horizon: 1_000_000,
            calls,
        }
    }

    fn acquire(client: usize, holder: &str, at: i64, expires_ms: i64) -> Call {
        call(
            client,
            at,
            at + 2,
            Op::Acquire {
                lease: 0,
                holder: holder.into(),
            },
            Outcome::Holds {
                expires: expires_ms * 1_000,
            },
        )
    }

    /// The old horizon's behaviour: an acquisition that took a lease one
    /// second before its expiry.
    #[test]
    fn an_acquisition_before_the_holders_expiry_is_an_overlap() {
        let h = history(vec![
            acquire(0, "a", 0, 150),
            acquire(1, "b", 10, 160),
            acquire(2, "c", 200, 350),
        ]);
        let v = check(&h);
        assert_eq!(v.violations.len(), 1, "{v:?}");
        assert_eq!(v.violations[0].calls, vec![0, 1]);
        // Released before the next acquisition answered: no overlap.
        let mut released = h.calls.clone();
        released.insert(
            1,
            call(
                0,
                5,
                8,
                Op::Release {
                    lease: 0,
                    holder: "a".into(),
                },
                Outcome::Released(true),
            ),
        );
        assert!(check(&history(released)).ok());
    }

    #[test]
    fn skew_shortens_what_a_holder_may_believe() {
        // b takes the lease 100 ms before a's expiry as a reads it: fine
        // only if some client's clock runs 100 ms ahead of a's.
        let calls = vec![acquire(0, "a", 0, 300), acquire(1, "b", 200, 500)];
        let mut h = history(calls);
        assert!(!check(&h).ok());
        h.skews = vec![0, 150_000, 0];
        assert!(check(&h).ok());
    }

    fn write(client: usize, at: i64, to: i64, reg_op: Op, outcome: Outcome) -> Call {
        call(client, at, to, reg_op, outcome)
    }

    #[test]
    fn a_register_read_after_its_expiry_is_not_linearizable() {
        let insert = Op::Insert {
            reg: 0,
            version: 1,
            expires: 100_000,
        };
        let read = Op::Read { reg: 0 };
        let ok = history(vec![
            write(0, 0, 5, insert.clone(), Outcome::Applied),
            write(1, 10, 20, read.clone(), Outcome::Value(Some((1, 100_000)))),
            write(1, 110, 120, read.clone(), Outcome::Value(None)),
        ]);
        assert!(check(&ok).ok(), "{:?}", check(&ok));
        // Expired, then read again: something expired came back.
        let back = history(vec![
            write(0, 0, 5, insert, Outcome::Applied),
            write(
                1,
                110,
                120,
                read.clone(),
                Outcome::Value(Some((1, 100_000))),
            ),
        ]);
        let v = check(&back);
        assert_eq!(v.violations.len(), 1, "{v:?}");
        assert_eq!(v.violations[0].calls, vec![1]);
    }

    /// What the first long run met: a read whose request the network held
    /// while a client whose clock runs 500 ms behind inserted a value
    /// already expired by the reader's clock. The read judged liveness
    /// when it started, as the library documents, and saw the value: not
    /// a violation.
    #[test]
    fn a_read_judges_liveness_when_it_starts() {
        let mut h = history(vec![
            write(
                0,
                0,
                1_200,
                Op::Read { reg: 0 },
                Outcome::Value(Some((1, 700_000))),
            ),
            write(
                1,
                900,
                905,
                Op::Insert {
                    reg: 0,
                    version: 1,
                    expires: 700_000,
                },
                Outcome::Applied,
            ),
        ]);
        h.skews = vec![500_000, -500_000, 0];
        assert!(check(&h).ok(), "{:?}", check(&h));
    }

    /// From the second long run: an acquisition sent before the
    /// emulator's restart whose answer came after it (the proxy held it):
    /// the restart lost the lease, and another client took it.
    #[test]
    fn a_lease_acquired_across_a_restart_ends_at_the_restart() {
        let mut calls = vec![
            acquire(0, "a", 0, 3_000),
            call(usize::MAX, 500, 600, Op::Restart, Outcome::Done),
            acquire(1, "b", 1_000, 4_000),
        ];
        calls[0].returned = 900_000;
        assert!(check(&history(calls)).ok());
    }

    /// From the second long run: a read whose request the network held
    /// past the garbage collection of a value its start still saw live.
    #[test]
    fn a_read_held_past_collection_may_miss_the_value() {
        let insert = Op::Insert {
            reg: 0,
            version: 1,
            expires: 100_000,
        };
        let h = |returned| {
            history(vec![
                write(0, 0, 5, insert.clone(), Outcome::Applied),
                write(1, 10, returned, Op::Read { reg: 0 }, Outcome::Value(None)),
            ])
        };
        assert!(check(&h(1_200)).ok());
        assert!(!check(&h(20)).ok());
    }

    #[test]
    fn a_compare_and_set_that_lands_on_an_expired_value_is_not_linearizable() {
        // v1 expires at 100 ms; a put_if(version == 1) answered after it
        // applied, and a read in between saw nothing: the put_if carried
        // an expired value forward.
        let h = history(vec![
            write(
                0,
                0,
                5,
                Op::Insert {
                    reg: 0,
                    version: 1,
                    expires: 100_000,
                },
                Outcome::Applied,
            ),
            write(1, 101, 102, Op::Read { reg: 0 }, Outcome::Value(None)),
            write(
                2,
                95,
                300,
                Op::PutIf {
                    reg: 0,
                    expect: 1,
                    version: 2,
                    expires: 900_000,
                },
                Outcome::Applied,
            ),
            write(
                1,
                310,
                320,
                Op::Read { reg: 0 },
                Outcome::Value(Some((2, 900_000))),
            ),
        ]);
        assert!(!check(&h).ok());
    }

    /// From a CI run: an insert whose first round met a live value and
    /// whose read after it found the value expired, so a second round
    /// (sent later, judged then) applied. Another insert then found it,
    /// and returned after the value could have been collected (found, it
    /// was not). Applied while the value was live at every instant of the
    /// call is still a violation.
    #[test]
    fn an_insert_may_apply_in_a_later_round_once_the_holder_expired() {
        let insert = |version, expires_ms: i64| Op::Insert {
            reg: 0,
            version,
            expires: expires_ms * 1_000,
        };
        let h = |second_returned| {
            history(vec![
                write(0, 0, 5, insert(1, 100), Outcome::Applied),
                write(1, 50, second_returned, insert(2, 900), Outcome::Applied),
                write(
                    2,
                    second_returned + 10,
                    2_500,
                    insert(3, 900),
                    Outcome::NotApplied(Some((2, 900_000))),
                ),
            ])
        };
        let later_round = h(150);
        assert!(check(&later_round).ok(), "{:?}", check(&later_round));
        let while_held = h(90);
        let v = check(&while_held);
        assert_eq!(v.violations.len(), 1, "{v:?}");
    }

    #[test]
    fn counters_count_each_acknowledged_increment_once() {
        let inc = |client, at, value| {
            call(
                client,
                at,
                at + 3,
                Op::Increment {
                    counter: 0,
                    window: 1_000_000,
                },
                Outcome::Counted {
                    value,
                    expires: 1_000_000,
                },
            )
        };
        assert!(check(&history(vec![inc(0, 0, 1), inc(1, 1, 2), inc(2, 2, 3)])).ok());
        let lost = check(&history(vec![inc(0, 0, 1), inc(1, 1, 1)]));
        assert_eq!(lost.violations.len(), 1, "{lost:?}");
        let twice = check(&history(vec![inc(0, 0, 1), inc(1, 1, 3)]));
        assert_eq!(twice.violations.len(), 1, "{twice:?}");
        let late = check(&history(vec![inc(0, 0, 1), inc(1, 1_001, 2)]));
        assert_eq!(late.violations.len(), 1, "{late:?}");
    }
}
