//! A linearizability checker: Wing and Gong's search for a sequential
//! order of the calls that the model accepts and that respects real time
//! (a call that returned before another was invoked comes first), with
//! Lowe's memoization of the configurations already explored (the calls
//! placed, the model's state). Each call takes effect at an instant within
//! its call (its linearization point), never before the previous one's:
//! the model's state may depend on time (a value that expires), and the
//! model says at which instants a call may take effect. A call whose
//! outcome is unknown may take effect at any instant after its invocation,
//! or never.
//!
//! Callers check independent objects one at a time (P-compositionality:
//! a history is linearizable iff each object's sub-history is).

use std::collections::HashSet;
use std::hash::Hash;

/// One call of a history, as the checker sees it.
#[derive(Debug, Clone)]
pub struct Entry<O> {
    /// An id the caller gives it (reported back).
    pub id: usize,
    /// When it was invoked (µs).
    pub invoked: i64,
    /// When it returned; `i64::MAX` for a call whose outcome is unknown
    /// (it may take effect any time after its invocation, or never).
    pub returned: i64,
    /// The call and its result.
    pub op: O,
}

/// A sequential specification.
pub trait Model {
    /// The object's state.
    type State: Clone + Eq + Hash;
    /// A call and its result.
    type Op;
    /// The state before any call.
    fn init(&self) -> Self::State;
    /// The ways `entry` may take effect in `state`, at an instant no
    /// earlier than `from` (and within its call): each as that instant
    /// and the state after. Empty when its result is impossible there.
    fn step(
        &self,
        state: &Self::State,
        from: i64,
        entry: &Entry<Self::Op>,
    ) -> Vec<(i64, Self::State)>;
}

/// What the checker found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Linearizable {
    /// An order exists.
    Yes,
    /// None does. `longest` is the longest prefix placed (ids, in order);
    /// `stuck` the call that could not follow it (the one returning first
    /// among those left).
    No {
        /// The longest order found.
        longest: Vec<usize>,
        /// The call that could not be placed after it.
        stuck: usize,
    },
    /// The search gave up after exploring this many configurations.
    Undecided(usize),
}

/// Search `entries` for an order `model` accepts, exploring at most
/// `budget` configurations.
pub fn check<M: Model>(model: &M, entries: &[Entry<M::Op>], budget: usize) -> Linearizable {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| entries[i].invoked);
    let mut search = Search {
        model,
        entries,
        order,
        memo: HashSet::new(),
        path: Vec::new(),
        longest: Vec::new(),
        stuck: None,
        explored: 0,
        budget,
    };
    let mut done = vec![false; entries.len()];
    let init = model.init();
    if search.go(&mut done, 0, &init, i64::MIN) {
        return Linearizable::Yes;
    }
    if search.explored > budget {
        return Linearizable::Undecided(search.explored);
    }
    Linearizable::No {
        longest: search.longest.iter().map(|&i| entries[i].id).collect(),
        stuck: search.stuck.map_or(usize::MAX, |i| entries[i].id),
    }
}

struct Search<'a, M: Model> {
    model: &'a M,
    entries: &'a [Entry<M::Op>],
    /// Indexes by invocation.
    order: Vec<usize>,
    memo: HashSet<(Vec<bool>, M::State, i64)>,
    path: Vec<usize>,
    longest: Vec<usize>,
    stuck: Option<usize>,
    explored: usize,
    budget: usize,
}

impl<M: Model> Search<'_, M> {
    fn go(&mut self, done: &mut Vec<bool>, placed: usize, state: &M::State, at: i64) -> bool {
        let left = || self.order.iter().copied().filter(|&i| !done[i]);
        // Calls whose outcome is unknown may all never take effect.
        if left().all(|i| self.entries[i].returned == i64::MAX) {
            return true;
        }
        self.explored += 1;
        if self.explored > self.budget {
            return false;
        }
        if !self.memo.insert((done.clone(), state.clone(), at)) {
            return false;
        }
        let first_return = left()
            .map(|i| self.entries[i].returned)
            .min()
            .unwrap_or(i64::MAX);
        let first = left().min_by_key(|&i| self.entries[i].returned);
        if placed >= self.longest.len() {
            self.longest.clone_from(&self.path);
            self.stuck = first;
        }
        if first_return < at {
            return false;
        }
        let candidates: Vec<usize> = left()
            .take_while(|&i| self.entries[i].invoked <= first_return)
            .collect();
        for i in candidates {
            let entry = &self.entries[i];
            let from = at.max(entry.invoked);
            for (point, next) in self.model.step(state, from, entry) {
                if point > entry.returned || point < from {
                    continue;
                }
                done[i] = true;
                self.path.push(i);
                if self.go(done, placed + 1, &next, point) {
                    return true;
                }
                self.path.pop();
                done[i] = false;
                if self.explored > self.budget {
                    return false;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain register of integers, 0 at first: a read must see the last
    /// write.
    struct Register;

    #[derive(Debug, Clone)]
    enum RegOp {
        Write(i64),
        Read(i64),
    }

    impl Model for Register {
        type State = i64;
        type Op = RegOp;
        fn init(&self) -> i64 {
            0
        }
        fn step(&self, state: &i64, from: i64, entry: &Entry<RegOp>) -> Vec<(i64, i64)> {
            match entry.op {
                RegOp::Write(v) => vec![(from, v)],
                RegOp::Read(v) if v == *state => vec![(from, v)],
                RegOp::Read(_) => Vec::new(),
            }
        }
    }

    fn e(id: usize, invoked: i64, returned: i64, op: RegOp) -> Entry<RegOp> {
        Entry {
            id,
            invoked,
            returned,
            op,
        }
    }

    #[test]
    fn porcupines_register_examples() {
        // C0: |---- put 100 ----|
        // C1:   |- get 100 -|
        // C2:     |get 0|
        let ok = [
            e(0, 0, 100, RegOp::Write(100)),
            e(1, 25, 75, RegOp::Read(100)),
            e(2, 30, 60, RegOp::Read(0)),
        ];
        assert_eq!(check(&Register, &ok, 1_000), Linearizable::Yes);
        // The read of 0 starts after the read of 100 ended: not
        // linearizable.
        let bad = [
            e(0, 0, 100, RegOp::Write(100)),
            e(1, 25, 75, RegOp::Read(100)),
            e(2, 80, 90, RegOp::Read(0)),
        ];
        assert!(matches!(
            check(&Register, &bad, 1_000),
            Linearizable::No { stuck: 2, .. }
        ));
    }

    #[test]
    fn a_write_whose_outcome_is_unknown_may_take_effect_late_or_never() {
        let late = [
            e(0, 0, i64::MAX, RegOp::Write(7)),
            e(1, 10, 20, RegOp::Read(0)),
            e(2, 30, 40, RegOp::Read(7)),
        ];
        assert_eq!(check(&Register, &late, 1_000), Linearizable::Yes);
        let never = [
            e(0, 0, i64::MAX, RegOp::Write(7)),
            e(1, 10, 20, RegOp::Read(0)),
        ];
        assert_eq!(check(&Register, &never, 1_000), Linearizable::Yes);
        // But not back and forth.
        let flicker = [
            e(0, 0, i64::MAX, RegOp::Write(7)),
            e(1, 10, 20, RegOp::Read(7)),
            e(2, 30, 40, RegOp::Read(0)),
        ];
        assert!(matches!(
            check(&Register, &flicker, 1_000),
            Linearizable::No { .. }
        ));
    }
}
