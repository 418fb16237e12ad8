//! The sequential model of a compare-and-set register that expires: a
//! version and its expiry, or nothing. Each call judges liveness at the
//! instant the library judges it at, on the caller's clock (the true time
//! plus its skew), while the state it sees or changes is the server's at
//! the instant it takes effect: a read at its invocation (its "now" is
//! taken when it starts); an insert when a round is sent (the first at
//! the invocation, a later round later: a row that expired in between no
//! longer holds the key); a `put_if` and a retime at their invocation
//! plus the write's horizon (they ask for the value live until the latest
//! instant they may land). A request the network holds past that instant
//! still lands when it arrives (the guide says so): the model lets it, as
//! the server does.

use crate::history::{Call, Op, Outcome};
use crate::lin::{Entry, Model};

/// A register's state: its version and expiry (µs, the numbers of the
/// clock that wrote it), if it holds one.
pub type Reg = Option<(i64, i64)>;

/// One register call, as the model reads it.
#[derive(Debug, Clone)]
pub struct RegCall {
    /// The client's clock skew (µs).
    pub skew: i64,
    /// What it asked, and got.
    pub op: Op,
    /// Its outcome (a failed write's outcome is unknown).
    pub outcome: Outcome,
}

/// The model, for clients under a write policy with this horizon (µs).
pub struct Registers {
    /// The horizon.
    pub horizon: i64,
    /// How long after its expiry (on the server's clock, the true one) a
    /// cell may be collected: one second for a one-second-expiration
    /// family. A call the network held past that finds the cell gone,
    /// whatever instant it judges at.
    pub collected_after: i64,
}

/// Whether `state` is live at `instant` (a client's clock).
fn live(state: &Reg, instant: i64) -> bool {
    state.is_some_and(|(_, expires)| instant < expires)
}

impl Model for Registers {
    type State = Reg;
    type Op = RegCall;

    fn init(&self) -> Reg {
        None
    }

    fn step(&self, state: &Reg, from: i64, entry: &Entry<RegCall>) -> Vec<(i64, Reg)> {
        let call = &entry.op;
        let unknown = matches!(call.outcome, Outcome::Failed(_));
        // The instants the call judges liveness at, on its clock: the
        // earliest (its invocation) and, for a call that may judge again
        // (a conflict's next round), the latest (its return).
        let first = entry.invoked + call.skew;
        let last = if unknown { i64::MAX } else { entry.returned }.saturating_add(call.skew);
        let same = (from, *state);
        // Collected before the call's last instant at the server.
        let collected = state.is_some_and(|(_, expires)| {
            expires.saturating_add(self.collected_after) < entry.returned
        });
        let mut ways = Vec::new();
        match (&call.op, &call.outcome) {
            (Op::Restart, _) => ways.push((from, None)),
            (Op::Read { .. }, Outcome::Value(None)) => {
                if !live(state, first) || collected {
                    ways.push(same);
                }
            }
            (Op::Read { .. }, Outcome::Value(Some(seen))) => {
                if live(state, first) && *state == Some(*seen) {
                    ways.push(same);
                }
            }
            (
                Op::Insert {
                    version, expires, ..
                },
                outcome,
            ) => {
                // Each round of an insert takes its own instant: a row
                // live at the invocation may have expired before a later
                // round (the first round met it, the read after found it
                // gone) and that round's insert applies. The earliest
                // instant the state is absent is where it may take effect.
                let absent_from = if collected || !live(state, from + call.skew) {
                    Some(from)
                } else {
                    state.map(|(_, expires)| expires - call.skew)
                };
                let inserted = absent_from.map(|at| (at, Some((*version, *expires))));
                // Found, so not collected yet when it was read, however
                // long the call lasted.
                let found_live = live(state, first);
                match outcome {
                    Outcome::Applied => ways.extend(inserted),
                    Outcome::NotApplied(Some(found)) if found_live && *state == Some(*found) => {
                        ways.push(same);
                    }
                    _ if unknown => {
                        ways.push(same);
                        ways.extend(inserted);
                    }
                    _ => {}
                }
            }
            (
                Op::PutIf {
                    expect,
                    version,
                    expires,
                    ..
                },
                outcome,
            ) => {
                let expected = state.is_some_and(|(v, _)| v == *expect);
                let may_apply = expected && live(state, first + self.horizon);
                let may_refuse =
                    !expected || collected || !live(state, last.saturating_add(self.horizon));
                let applied = (from, Some((*version, *expires)));
                match outcome {
                    Outcome::Applied if may_apply => ways.push(applied),
                    Outcome::NotApplied(_) if may_refuse => ways.push(same),
                    _ if unknown => {
                        ways.push(same);
                        if may_apply {
                            ways.push(applied);
                        }
                    }
                    _ => {}
                }
            }
            (Op::Retime { expires, .. }, outcome) => {
                let may_apply = live(state, first + self.horizon);
                let may_refuse = collected || !live(state, last.saturating_add(self.horizon));
                let applied = state.map(|(v, _)| (from, Some((v, *expires))));
                match outcome {
                    Outcome::Applied if may_apply => ways.extend(applied),
                    Outcome::NotApplied(_) if may_refuse => ways.push(same),
                    _ if unknown => {
                        ways.push(same);
                        if may_apply {
                            ways.extend(applied);
                        }
                    }
                    _ => {}
                }
            }
            _ => ways.push(same),
        }
        ways
    }
}

/// The register calls of `calls` on register `reg` (and the restarts), as
/// the checker's entries, with the skews of `skews`; ids are indexes of
/// `calls`.
#[must_use]
pub fn entries(calls: &[Call], skews: &[i64], reg: usize) -> Vec<Entry<RegCall>> {
    calls
        .iter()
        .enumerate()
        .filter(|(_, c)| match c.op {
            Op::Read { reg: r }
            | Op::Insert { reg: r, .. }
            | Op::PutIf { reg: r, .. }
            | Op::Retime { reg: r, .. } => r == reg,
            Op::Restart => true,
            _ => false,
        })
        // A failed read tells nothing.
        .filter(|(_, c)| !(matches!(c.op, Op::Read { .. }) && c.failed()))
        .map(|(id, c)| Entry {
            id,
            invoked: c.invoked,
            returned: if c.failed() { i64::MAX } else { c.returned },
            op: RegCall {
                skew: skews.get(c.client).copied().unwrap_or(0),
                op: c.op.clone(),
                outcome: c.outcome.clone(),
            },
        })
        .collect()
}
