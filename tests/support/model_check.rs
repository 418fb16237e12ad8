//! What the stateful property tests (`layouts_state_machine`,
//! `shared_state_machine`, `no_revival`) check against their models: the
//! cells the emulator stores, each read and each limited scan. Each test
//! keeps its own model (what it holds of a cell, when a cell may be
//! collected, what a struct makes of a row); these compare the answers
//! with it.

use std::collections::BTreeMap;
use std::fmt::{Debug, Display};

use bigtable_ttl::data::Cell;

/// A step of a sequence: `Err` says what disagreed with the model.
pub type Step = Result<(), String>;

/// Fail the step, saying why, unless `$cond` holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}
#[allow(unused_imports)]
pub(crate) use ensure;

/// A row's cells as a model holds them: by (family, qualifier), by
/// timestamp (µs), what the model knows of the cell.
pub type ModelCells<V> = BTreeMap<(String, Vec<u8>), BTreeMap<i64, V>>;

/// The cells stored in each row (`stored[k]`, the row of `keys[k]`)
/// against the model's (`model[k]`): each stored cell one the model holds,
/// of the same value (`value` of what the model holds); each one the model
/// holds and is not stored one the emulator may have collected
/// (`collectible(family, timestamp)`). The model then holds what is
/// stored. Returns how many cells were collected.
pub fn compare_store<V: Clone + Debug>(
    keys: &[&str],
    model: &mut [ModelCells<V>],
    stored: &[Vec<Cell>],
    value: impl Fn(&V) -> &[u8],
    collectible: impl Fn(&str, i64) -> bool,
) -> Result<usize, String> {
    let at = |c: &Cell| (c.family.clone(), c.qualifier.clone());
    let mut collected = 0;
    for (key, stored) in stored.iter().enumerate() {
        let held = &model[key];
        for c in stored {
            let same = held
                .get(&at(c))
                .and_then(|v| v.get(&c.timestamp_micros))
                .is_some_and(|h| value(h) == c.value);
            ensure!(
                same,
                "{}: stored {}:{} at {} = {}, the model holds {:?}",
                keys[key],
                c.family,
                c.qualifier.escape_ascii(),
                c.timestamp_micros,
                c.value.escape_ascii(),
                held.get(&at(c))
            );
        }
        let mut kept = ModelCells::new();
        for ((family, q), versions) in held {
            for (ts, cell) in versions {
                let is_stored = stored
                    .iter()
                    .any(|c| (&c.family, &c.qualifier, c.timestamp_micros) == (family, q, *ts));
                if is_stored {
                    kept.entry((family.clone(), q.clone()))
                        .or_default()
                        .insert(*ts, cell.clone());
                } else {
                    ensure!(
                        collectible(family, *ts),
                        "{}: {family}:{} at {ts} is live, but not stored",
                        keys[key],
                        q.escape_ascii()
                    );
                    collected += 1;
                }
            }
        }
        model[key] = kept;
    }
    Ok(collected)
}

/// A read (`what` read `got`) agrees with the model when it answered the
/// row as the model judges it at the cells stored just before the read
/// (`one`) or just after (`other`): collection may remove cells in
/// between.
pub fn read_agrees<S: PartialEq + Debug>(
    what: impl Display,
    got: &S,
    [one, other]: &[S; 2],
) -> Step {
    ensure!(
        got == one || got == other,
        "{what} read {got:?}, the model's row is {one:?}{}",
        if one == other {
            String::new()
        } else {
            format!(" or {other:?}")
        }
    );
    Ok(())
}

/// Whether `read`, a scan's rows in the order of `keys`, is what a scan
/// limited to `limit` rows may answer when each key's row is either of its
/// two judgments (`judged[key]`: at the cells stored just before the reads
/// and just after; collection may remove cells in between): a row `live`
/// in both is never left out before the limit is reached, one live in
/// either may be.
pub fn scan_agrees<S: PartialEq>(
    read: &[(usize, S)],
    keys: &[usize],
    limit: usize,
    judged: &[[S; 2]],
    live: impl Fn(&S) -> bool,
) -> bool {
    let mut next = read.iter().peekable();
    let mut taken = 0;
    for &key in keys {
        if taken == limit {
            break;
        }
        let [one, other] = &judged[key];
        match next.peek() {
            Some((k, seen)) if *k == key => {
                if !((live(one) && seen == one) || (live(other) && seen == other)) {
                    return false;
                }
                next.next();
                taken += 1;
            }
            _ if live(one) && live(other) => return false,
            _ => {}
        }
    }
    next.next().is_none()
}
