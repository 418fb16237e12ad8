//! The sequential model of a compare-and-set register that expires: a
//! version and its expiry, or nothing. A value is live to a client while
//! that client's clock (the true time plus its skew) is before the
//! expiry, as the library judges it; a write that carries the value
//! forward (`put_if`, a retime) may refuse a value that expires within
//! the write's horizon.

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
}

/// Whether `state` is live at true time `at` to a client of skew `skew`.
fn live(state: &Reg, skew: i64, at: i64) -> bool {
    state.is_some_and(|(_, expires)| at + skew < expires)
}

/// The first instant from `from` at which `state` is not live to a client
/// of skew `skew`.
fn gone_from(state: &Reg, skew: i64, from: i64) -> i64 {
    match state {
        Some((_, expires)) => from.max(expires - skew),
        None => from,
    }
}

impl Registers {
    /// The first instant from `from` at which a write judging `state` at
    /// its horizon finds it not live (it expires within the horizon).
    fn gone_at_horizon(&self, state: &Reg, skew: i64, from: i64) -> i64 {
        gone_from(state, skew + self.horizon, from)
    }
}

impl Model for Registers {
    type State = Reg;
    type Op = RegCall;

    fn init(&self) -> Reg {
        None
    }

    fn step(&self, state: &Reg, from: i64, entry: &Entry<RegCall>) -> Vec<(i64, Reg)> {
        let call = &entry.op;
        let skew = call.skew;
        let unknown = matches!(call.outcome, Outcome::Failed(_));
        let is_live = live(state, skew, from);
        let mut ways = Vec::new();
        match (&call.op, &call.outcome) {
            (Op::Restart, _) => ways.push((from, None)),
            (Op::Read { .. }, Outcome::Value(None)) => {
                ways.push((gone_from(state, skew, from), *state));
            }
            (Op::Read { .. }, Outcome::Value(Some(seen))) => {
                if is_live && *state == Some(*seen) {
                    ways.push((from, *state));
                }
            }
            (
                Op::Insert {
                    version, expires, ..
                },
                outcome,
            ) => {
                let inserted = (gone_from(state, skew, from), Some((*version, *expires)));
                match outcome {
                    Outcome::Applied => ways.push(inserted),
                    Outcome::NotApplied(Some(found)) if is_live && *state == Some(*found) => {
                        ways.push((from, *state));
                    }
                    _ if unknown => ways.extend([(from, *state), inserted]),
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
                let matches = is_live && state.is_some_and(|(v, _)| v == *expect);
                let applied = (from, Some((*version, *expires)));
                match outcome {
                    Outcome::Applied if matches => ways.push(applied),
                    Outcome::NotApplied(_) => {
                        if state.is_some_and(|(v, _)| v == *expect) {
                            ways.push((self.gone_at_horizon(state, skew, from), *state));
                        } else {
                            ways.push((from, *state));
                        }
                    }
                    _ if unknown => {
                        ways.push((from, *state));
                        if matches {
                            ways.push(applied);
                        }
                    }
                    _ => {}
                }
            }
            (Op::Retime { expires, .. }, outcome) => {
                let applied = state.map(|(v, _)| (from, Some((v, *expires))));
                match outcome {
                    Outcome::Applied if is_live => ways.extend(applied),
                    Outcome::NotApplied(_) => {
                        ways.push((self.gone_at_horizon(state, skew, from), *state));
                    }
                    _ if unknown => {
                        ways.push((from, *state));
                        if is_live {
                            ways.extend(applied);
                        }
                    }
                    _ => {}
                }
            }
            _ => ways.push((from, *state)),
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
