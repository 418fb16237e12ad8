//! A history checker for bigtable-ttl's conditional writes.
//!
//! [`workload::run`] starts Google's Bigtable emulator behind a fault
//! proxy (answers and requests held 0 to 1.5 s, answers dropped,
//! connections reset in the middle of their streams, the emulator
//! restarted once), runs concurrent clients whose clocks are skewed by up
//! to ±500 ms (each table's [`bigtable_ttl::Clock`]) doing leases
//! (acquire, renew, release), compare-and-set registers (`insert_if_absent`,
//! `put_if`, `get`, `retime`) and counters (`increment` in windows), and
//! records every call: its invocation, its return and its result
//! ([`history`]). [`check()`] then judges the history:
//!
//! * **leases never overlap**: no two holders believe they hold one lease
//!   at once, a holder believing so from its acquisition's answer until it
//!   asks to release, or until its lease's expiry less the largest clock
//!   skew between clients (what the conditional-writes guide promises);
//! * **each compare-and-set register is linearizable given the expiries**
//!   ([`lin`]: Wing and Gong's search with Lowe's memoization, each
//!   register checked on its own, as Porcupine's P-compositionality does;
//!   [`registers`] is the sequential model, where a value vanishes at its
//!   expiry as each client's clock sees it);
//! * **counters count each acknowledged increment once per window**, and no
//!   increment continues a window after its expiry;
//! * **nothing expired comes back** (part of the register model: a read
//!   returns a value only while it is live; a retime or `put_if` applies
//!   only to a live value).
//!
//! A failing history is written as an SVG timeline ([`render`]), one lane
//! per client, the violating calls marked.
//!
//! No crate does this: `lincheck` checks data structures under loom, not
//! recorded histories; `todc-utils`' checker takes deterministic
//! sequential specifications, and a register that expires needs a step
//! that may take effect before or after an expiry (two next states).

pub mod check;
pub mod history;
pub mod lin;
pub mod registers;
pub mod render;
pub mod workload;

#[path = "../../tests/support/proxy.rs"]
#[allow(dead_code, missing_docs, clippy::pedantic)]
pub mod proxy;

/// The proxy's loopback-only listening and forwarding (`super::loopback`
/// in `proxy.rs`, as in the tests' support).
#[path = "../../tests/support/loopback.rs"]
#[allow(dead_code, clippy::pedantic)]
mod loopback;

pub use check::{check, Verdict, Violation};
pub use history::{Call, History, Op, Outcome};

use std::path::{Path, PathBuf};

/// Judge `run`'s history; when it fails, write its timeline to
/// `out/{name}.svg` and return that path with the verdict.
///
/// # Errors
/// When the timeline cannot be written.
pub fn judge(
    run: &workload::Run,
    out: &Path,
    name: &str,
) -> std::io::Result<(Verdict, Option<PathBuf>)> {
    let verdict = check(&run.history);
    if verdict.ok() {
        return Ok((verdict, None));
    }
    std::fs::create_dir_all(out)?;
    let path = out.join(format!("{name}.svg"));
    std::fs::write(&path, render::svg(&run.history, &verdict))?;
    Ok((verdict, Some(path)))
}

/// One line of figures for a run and its verdict.
#[must_use]
pub fn figures(run: &workload::Run, verdict: &Verdict) -> String {
    let calls = &run.history.calls;
    let failed = calls.iter().filter(|c| c.failed()).count();
    format!(
        "{} calls ({failed} failed or unknown), {} clients; faults: {} connections cut of {}, {} emulator restart(s); {verdict}",
        calls.len(),
        run.history.skews.len(),
        run.cuts,
        run.connections,
        run.restarts,
    )
}
