//! Operations: know what a TTL policy does to a family's data, before and
//! after switching it on.
//!
//! Everything here works on any table and family **by name**, not only on
//! families a derived struct declares, so operators can point it at data
//! written by other programs:
//!
//! * [`audit()`]: scan a family (raw, every version) and count what a policy
//!   would delete at once, which timestamps look real and which artificial;
//! * [`apply()`]: set a family's GC rule to a policy's, refusing when the audit
//!   says data would be lost unless forced;
//! * [`expiries()`]: when a family's cells expire, under its live rule and a
//!   proposed policy ([`ExpiryHistogram`]; `audit` draws the same);
//! * [`plan_parts()`]: a table's key space cut into parts, so that
//!   several processes audit, migrate or verify one part each and their
//!   reports merge ([`AuditReport::merge`], [`Verification::merge`]);
//! * [`inspect()`]: every cell of one row with its expiry under the family's
//!   **live** rule, time left and real write time (Cassandra's `TTL()` and
//!   `WRITETIME()`);
//! * [`migrate()`]: copy a family with real timestamps into a family managed by
//!   a policy, artificial timestamps and shadow column included, resumable
//!   from a checkpoint;
//! * [`expired()`]: the expiry feed, the rows that died within a window of
//!   time with their last values ([`ExpiryWindow`]); `Table::expired` runs
//!   it on a derived struct's families;
//! * [`reap()`]: the reaper, deleting what expired more than a grace period
//!   ago so that other readers stop seeing it, resumable, sharded,
//!   rate-limited ([`ReapOptions`], [`ReapProgress`]); `Table::reap` runs it
//!   on a derived struct's rows.
//!
//! What one typed row can do (re-time, `touch`, `update`, `add_markers`) is
//! on [`crate::Table`], in the client layer below.
//!
//! The module exports what a program calls: the operations above, their
//! requests and reports, and the few pure helpers a tool around them needs
//! (policy parsing, [`policy_from_rule`], the [`Audit`] tally, cutting a
//! key space). The planners behind them (the cell reports of `inspect`, the
//! per-row plans of `migrate`) are private: pure, unit-tested here without
//! a server, and reached through the operations.
//! The `bigtable-ttl` command-line program (`ttl-cli`) is a thin layer over
//! this module. With the `serde` feature, the reports and checkpoints
//! serialize as the JSON that command prints and reads back (a checkpoint
//! written by one version resumes in the next).

mod apply;
mod audit;
mod expiry;
mod feed;
#[cfg(feature = "serde")]
mod files;
mod inspect;
mod migrate;
mod rate;
mod reap;
mod scan;
mod shard;
mod spec;

pub use crate::model::gc_rule::policy_from_rule;
pub use apply::{apply, ApplyOutcome, ApplyRequest};
pub use audit::{audit, Audit, AuditReport, AuditRequest};
pub use expiry::{expiries, ExpiryHistogram, ExpiryRequest, FamilyExpiries, MAX_DAYS};
pub use feed::{expired, ExpiredCells, ExpiredRow, ExpiryWindow, FamilyRows};
pub use inspect::{inspect, CellReport, FamilyPolicy, InspectRequest, RowInspection};
pub use migrate::verify_part;
pub use migrate::{
    migrate, verify, Checkpoint, MigratePlan, MigrateReport, MigrateStatus, RowExpiry, Verification,
};
pub use reap::{reap, ReapOptions, ReapProgress, ReapStatus};
pub use scan::ScanProgress;
pub use shard::{
    check_cover, check_shard, cut, fraction_done, key_samples, part_of, plan_parts, CountOverflow,
    Part, ShardProblem, MAX_PARTS,
};
pub use spec::{parse_duration, parse_policy, policy_spec, short_duration, DEFAULT_WRITTEN_AT};
