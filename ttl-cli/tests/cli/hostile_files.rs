//! Arbitrary and adversarial files where the command reads one: reports
//! for `audit --merge` and `migrate --verify --merge`, cut files for
//! `--cut`, checkpoints for `--resume`. Each starts from a valid file and
//! is broken one way (a count of `u64::MAX` or 4e9, a date at chrono's end,
//! a missing field, a repeated part, a truncated or random text, counts
//! that overflow when summed). Whatever the file, the command exits with
//! a status and a message: never a panic, an abort, or a merged total
//! other than the sum of its reports.

use crate::support;

use std::path::Path;
use std::sync::LazyLock;

use bigtable_ttl::Connection;
use bigtable_ttl_cli::{exit, run_with};
use proptest::prelude::*;
use serde_json::{json, Value};
use support::{connection, emulator_host};

/// One runtime for every case: each case runs the command in-process.
static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Runtime::new().unwrap());

/// An instance of the emulator without tables: a file that passes every
/// check leads to "table not found", an error like the others.
static CONN: LazyLock<Connection> = LazyLock::new(|| RUNTIME.block_on(async { connection() }));

/// `bigtable-ttl ARGS…` in-process: (status, stderr, stdout).
fn cli(args: &[&str]) -> (i32, String, String) {
    let host = emulator_host();
    let conn = &*CONN;
    let mut argv = vec![
        "bigtable-ttl",
        "--project",
        conn.project(),
        "--instance",
        conn.instance(),
        "--emulator-host",
        &host,
    ];
    argv.extend_from_slice(args);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = RUNTIME.block_on(run_with(argv, &mut out, &mut err));
    (
        code,
        String::from_utf8_lossy(&err).into_owned(),
        String::from_utf8_lossy(&out).into_owned(),
    )
}

/// An audit report of shard `index` of 2 as `audit --json` writes it.
fn audit_report(index: usize) -> Value {
    let (start, end) = if index == 0 {
        ("", Some("6d"))
    } else {
        ("6d", None)
    };
    json!({
        "table": "t", "family": "f", "policy": "default=2d", "gc_rule": "max_age = 2d",
        "now": "2023-11-14T22:13:20.000Z", "now_micros": 1_700_000_000_000_000_i64,
        "shard": { "index": index, "count": 2, "start_hex": start, "end_hex": end },
        "rows": 2, "cells": 3, "cells_deleted": 1, "rows_losing_cells": 1, "rows_deleted": 0,
        "real_cells": 3, "artificial_cells": 0, "oldest": null, "newest": null,
        "oldest_micros": 1_699_000_000_000_000_i64, "newest_micros": 1_700_000_000_000_000_i64,
        "rows_mixed_expiry": 1, "widest_expiry_spread_ms": 1, "widest_expiry_spread_micros": 1000,
        "widest_expiry_spread": "0s", "would_delete_data": true,
        "expiry": {
            "current": {
                "policy": null,
                "buckets": { "expired": 0, "within_hour": 0, "within_day": 0, "within_week": 0, "later": 0, "never": 3 },
                "days": []
            },
            "proposed": {
                "policy": "default=2d",
                "buckets": { "expired": 1, "within_hour": 0, "within_day": 0, "within_week": 2, "later": 0, "never": 0 },
                "days": [ { "date": "2023-11-14", "cells": 0 }, { "date": "2023-11-15", "cells": 2 } ]
            }
        }
    })
}

/// The counts of an audit report: scaled together, the report stays
/// consistent while two of them overflow when summed.
const AUDIT_COUNTS: [&str; 10] = [
    "/rows",
    "/cells",
    "/cells_deleted",
    "/rows_losing_cells",
    "/real_cells",
    "/rows_mixed_expiry",
    "/expiry/current/buckets/never",
    "/expiry/proposed/buckets/expired",
    "/expiry/proposed/buckets/within_week",
    "/expiry/proposed/days/1/cells",
];

/// Fields to break, beside the counts.
const AUDIT_FIELDS: [&str; 12] = [
    "/now_micros",
    "/shard",
    "/shard/index",
    "/shard/count",
    "/shard/start_hex",
    "/shard/end_hex",
    "/policy",
    "/oldest_micros",
    "/widest_expiry_spread_micros",
    "/expiry/proposed/days/0/date",
    "/expiry/proposed/days",
    "/expiry",
];

/// A migrate report of shard `index` of 2 as `migrate --json` writes it.
fn migrate_report(index: usize) -> Value {
    // The last key read lies in the part: "k" before "m", "p" after.
    let (start, end, last_hex, last) = if index == 0 {
        ("", Some("6d"), "6b", "k")
    } else {
        ("6d", None, "70", "p")
    };
    json!({
        "table": "t", "from": "raw", "to": "ttl", "policy": "default=2d", "ttl_ms": null,
        "written_at": "written_at", "expiry": "per-row",
        "last_row_key_hex": last_hex, "last_row_key": last,
        "rows_read": 3, "rows_copied": 2, "cells_copied": 4, "cells_skipped_expired": 1,
        "rows_skipped_expired": 1, "done": true,
        "shard": { "index": index, "count": 2, "start_hex": start, "end_hex": end },
        "status": "done",
        "verification": {
            "source_rows": 3, "source_cells": 5, "expected_rows": 2, "expected_cells": 4,
            "target_rows": 2, "target_cells": 4, "matches": true
        }
    })
}

const MIGRATE_COUNTS: [&str; 8] = [
    "/rows_read",
    "/rows_copied",
    "/cells_copied",
    "/verification/source_rows",
    "/verification/source_cells",
    "/verification/expected_rows",
    "/verification/target_rows",
    "/verification/target_cells",
];

const MIGRATE_FIELDS: [&str; 8] = [
    "/shard",
    "/shard/index",
    "/shard/count",
    "/shard/end_hex",
    "/verification",
    "/status",
    "/last_row_key_hex",
    "/policy",
];

/// Values no honest file holds, or holds at the edge.
fn adversarial() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(u64::MAX)),
        Just(json!(u64::MAX - 1)),
        Just(json!(4_000_000_000_u64)),
        Just(json!(999_999_999_u64)),
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(i64::MIN)),
        Just(json!(i64::MAX)),
        Just(json!(8_210_266_876_799_999_999_i64)), // chrono's last day, in µs
        Just(json!(1e300)),
        Just(json!(null)),
        Just(json!("zz")),
        Just(json!("+262143-12-31")),
        Just(json!([])),
        Just(json!({})),
    ]
}

/// How a valid file is broken.
#[derive(Debug, Clone)]
enum Breakage {
    /// The field at this pointer (of the fields or counts lists) set.
    Set(usize, Value),
    /// The field removed.
    Remove(usize),
    /// Every count multiplied by this power of two: still consistent.
    Scale(u32),
    /// The text cut at this byte (modulo its length).
    Truncate(usize),
    /// Any text at all.
    Text(String),
}

fn breakage() -> impl Strategy<Value = Breakage> {
    prop_oneof![
        4 => (0usize..64, adversarial()).prop_map(|(i, v)| Breakage::Set(i, v)),
        1 => (0usize..64).prop_map(Breakage::Remove),
        2 => (0u32..64).prop_map(Breakage::Scale),
        1 => any::<usize>().prop_map(Breakage::Truncate),
        1 => ".{0,200}".prop_map(Breakage::Text),
    ]
}

/// `doc` broken by `how`, as text; `fields` then `counts` are the pointers
/// `Set` and `Remove` pick from.
fn broken(mut doc: Value, how: &Breakage, fields: &[&str], counts: &[&str]) -> String {
    let pointers: Vec<&str> = fields.iter().chain(counts).copied().collect();
    let pointer = |i: usize| pointers[i % pointers.len()];
    match how {
        Breakage::Set(i, v) => {
            if let Some(slot) = doc.pointer_mut(pointer(*i)) {
                *slot = v.clone();
            }
        }
        Breakage::Remove(i) => {
            let (parent, name) = pointer(*i).rsplit_once('/').unwrap();
            if let Some(Value::Object(map)) = doc.pointer_mut(parent) {
                map.remove(name);
            }
        }
        Breakage::Scale(shift) => {
            for p in counts {
                if let Some(slot) = doc.pointer_mut(p) {
                    let n = slot.as_u64().unwrap_or(0);
                    *slot = json!(n.checked_shl(*shift).unwrap_or(u64::MAX));
                }
            }
        }
        Breakage::Truncate(at) => {
            let text = doc.to_string();
            return text[..at % text.len()].to_owned();
        }
        Breakage::Text(text) => return text.clone(),
    }
    doc.to_string()
}

/// Two files written into `dir`, their paths.
fn write_pair(dir: &Path, a: &str, b: &str) -> [String; 2] {
    [("a.json", a), ("b.json", b)].map(|(name, text)| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    })
}

/// A failure the way the command reports one: status 1, one message.
fn refused(code: i32, err: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(code, exit::ERROR, "{}", err);
    prop_assert!(
        err.starts_with("bigtable-ttl: ") && err.len() > 20,
        "{}",
        err
    );
    prop_assert!(!err.contains("panicked"), "{}", err);
    Ok(())
}

/// What the file says of `pointer`, as a number, when it is one.
fn count_in(text: &str, pointer: &str) -> Option<u128> {
    let doc: Value = serde_json::from_str(text).ok()?;
    doc.pointer(pointer)?.as_u64().map(u128::from)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `audit --merge` of a broken report and a valid one (or both broken
    /// by scaling): a merged total is the sum of the reports', or the
    /// merge is refused with a message.
    #[test]
    fn audit_merge_of_hostile_reports(
        how in breakage(),
        both in any::<bool>(),
        which in 0usize..2,
        svg in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = (0..2)
            .map(|i| {
                if i == which || both {
                    broken(audit_report(i), &how, &AUDIT_FIELDS, &AUDIT_COUNTS)
                } else {
                    audit_report(i).to_string()
                }
            })
            .collect();
        let [a, b] = write_pair(dir.path(), &texts[0], &texts[1]);
        let chart = dir.path().join("chart.svg");
        let mut args = vec!["audit", "--json", "--merge", &a, &b];
        if svg {
            args.extend(["--svg", chart.to_str().unwrap()]);
        }
        let (code, err, out) = cli(&args);
        if code == exit::ERROR {
            return refused(code, &err);
        }
        prop_assert!(code == exit::OK || code == exit::WOULD_DELETE, "{} {}", code, err);
        let merged: Value = serde_json::from_str(&out).unwrap();
        for field in ["/rows", "/cells", "/cells_deleted", "/real_cells"] {
            let sum = count_in(&texts[0], field).unwrap() + count_in(&texts[1], field).unwrap();
            prop_assert_eq!(u128::from(merged.pointer(field).unwrap().as_u64().unwrap()), sum);
        }
    }

    /// `migrate --verify --merge` of a broken report and a valid one.
    #[test]
    fn migrate_merge_of_hostile_reports(
        how in breakage(),
        both in any::<bool>(),
        which in 0usize..2,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = (0..2)
            .map(|i| {
                if i == which || both {
                    broken(migrate_report(i), &how, &MIGRATE_FIELDS, &MIGRATE_COUNTS)
                } else {
                    migrate_report(i).to_string()
                }
            })
            .collect();
        let [a, b] = write_pair(dir.path(), &texts[0], &texts[1]);
        let (code, err, out) = cli(&[
            "migrate", "t", "--from", "raw", "--to", "ttl", "--policy", "default=2d",
            "--verify", "--json", "--merge", &a, &b,
        ]);
        if code == exit::ERROR && out.is_empty() {
            return refused(code, &err);
        }
        let merged: Value = serde_json::from_str(&out).unwrap();
        for field in ["/rows_read", "/verification/source_rows", "/verification/target_cells"] {
            // A checkpoint's counts default to 0 when absent.
            let sum = count_in(&texts[0], field).unwrap_or(0) + count_in(&texts[1], field).unwrap_or(0);
            prop_assert_eq!(u128::from(merged.pointer(field).unwrap().as_u64().unwrap()), sum);
        }
    }
}

/// A cut of `t` into 2 parts, as `--cut` writes it.
fn cut_file() -> Value {
    json!({
        "table": "t", "count": 2,
        "parts": [
            { "index": 0, "count": 2, "start_hex": "", "end_hex": "6d" },
            { "index": 1, "count": 2, "start_hex": "6d", "end_hex": null }
        ]
    })
}

const CUT_FIELDS: [&str; 9] = [
    "/count",
    "/table",
    "/parts",
    "/parts/0",
    "/parts/1/index",
    "/parts/1/count",
    "/parts/0/end_hex",
    "/parts/1/start_hex",
    "/parts/1/end_hex",
];

/// A checkpoint of `migrate t --from raw --to ttl --policy default=2d`.
fn checkpoint() -> Value {
    let mut doc = migrate_report(1);
    let map = doc.as_object_mut().unwrap();
    map.remove("status");
    map.remove("verification");
    map.insert("done".to_owned(), json!(false));
    doc
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `--cut FILE` with a broken cut: refused with a message (a cut that
    /// is still valid reaches the server, where the table is missing).
    #[test]
    fn a_hostile_cut_file(how in breakage(), reversed in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let mut doc = cut_file();
        if reversed {
            doc["parts"].as_array_mut().unwrap().reverse();
        }
        let path = dir.path().join("cut.json");
        std::fs::write(&path, broken(doc, &how, &CUT_FIELDS, &[])).unwrap();
        let (code, err, _) = cli(&[
            "audit", "t", "-f", "raw", "-p", "one-second", "--shard", "1/2",
            "--cut", path.to_str().unwrap(),
        ]);
        refused(code, &err)?;
    }

    /// `--resume` from a broken checkpoint: refused with a message.
    #[test]
    fn a_hostile_checkpoint(how in breakage()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cp.json");
        std::fs::write(&path, broken(checkpoint(), &how, &MIGRATE_FIELDS, &MIGRATE_COUNTS)).unwrap();
        let (code, err, _) = cli(&[
            "migrate", "t", "--from", "raw", "--to", "ttl", "--policy", "default=2d",
            "--shard", "1/2", "--checkpoint", path.to_str().unwrap(), "--resume",
        ]);
        refused(code, &err)?;
    }
}

/// The cases the issue met, each once: counts that crash a merge or a
/// chart, and files too large to read.
#[test]
fn the_reported_crashes_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, doc: &Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, doc.to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let b = write("b.json", &audit_report(1));
    // The files the cases break are valid as they stand.
    let a = write("a.json", &audit_report(0));
    let (code, err, out) = cli(&["audit", "--json", "--merge", &a, &b]);
    assert_eq!(code, exit::WOULD_DELETE, "{err}");
    let merged: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (merged["rows"].as_u64(), merged["cells"].as_u64()),
        (Some(4), Some(6))
    );
    let m = [0, 1].map(|i| write(&format!("m{i}.json"), &migrate_report(i)));
    let (code, err, _) = cli(&[
        "migrate",
        "t",
        "--from",
        "raw",
        "--to",
        "ttl",
        "--policy",
        "default=2d",
        "--verify",
        "--merge",
        &m[0],
        &m[1],
    ]);
    assert_eq!(code, exit::OK, "{err}");
    let cut = write("cut.json", &cut_file());
    let (code, err, _) = cli(&[
        "audit",
        "t",
        "-f",
        "raw",
        "-p",
        "one-second",
        "--shard",
        "1/2",
        "--cut",
        &cut,
    ]);
    assert!(
        code == exit::ERROR && err.contains("does not exist"),
        "{err}"
    );
    let cp = write("cp.json", &checkpoint());
    let (code, err, _) = cli(&[
        "migrate",
        "t",
        "--from",
        "raw",
        "--to",
        "ttl",
        "--policy",
        "default=2d",
        "--shard",
        "1/2",
        "--checkpoint",
        &cp,
        "--resume",
    ]);
    assert!(
        code == exit::ERROR && err.contains("does not exist"),
        "{err}"
    );
    let cases: [(&str, &str, Value, &str); 4] = [
        (
            "count-max.json",
            "/shard/count",
            json!(u64::MAX),
            "over the limit of 1024",
        ),
        (
            "count-4e9.json",
            "/shard/count",
            json!(4_000_000_000_u64),
            "over the limit of 1024",
        ),
        (
            "now-end.json",
            "/now_micros",
            json!(8_210_266_876_799_999_999_i64),
            "now_micros",
        ),
        ("rows-max.json", "/rows", json!(u64::MAX), "rows"),
    ];
    for (name, pointer, value, says) in cases {
        let mut doc = audit_report(0);
        *doc.pointer_mut(pointer).unwrap() = value;
        let a = write(name, &doc);
        let (code, err, _) = cli(&["audit", "--merge", &a, &b]);
        assert_eq!(code, exit::ERROR, "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
    }
    // Two consistent reports whose counts overflow only when summed.
    let mut scaled = Vec::new();
    for i in 0..2 {
        let mut doc = audit_report(i);
        for p in AUDIT_COUNTS {
            let slot = doc.pointer_mut(p).unwrap();
            *slot = json!(slot.as_u64().unwrap() << 62);
        }
        scaled.push(write(&format!("scaled-{i}.json"), &doc));
    }
    let (code, err, _) = cli(&["audit", "--merge", &scaled[0], &scaled[1]]);
    assert_eq!(code, exit::ERROR, "{err}");
    assert!(err.contains("scaled-1.json"), "the file is named: {err}");
    assert!(err.contains("add up to more than"), "{err}");
    // A bucket of u64::MAX drawn: the chart's scale does not overflow.
    let mut doc = audit_report(0);
    doc["shard"] = Value::Null;
    for p in ["/cells", "/real_cells", "/expiry/current/buckets/never"] {
        *doc.pointer_mut(p).unwrap() = json!(u64::MAX);
    }
    *doc.pointer_mut("/expiry/proposed/buckets/within_week")
        .unwrap() = json!(u64::MAX - 1);
    let whole = write("whole.json", &doc);
    let svg = dir.path().join("c.svg");
    let (code, err, _) = cli(&["audit", "--merge", &whole, "--svg", svg.to_str().unwrap()]);
    assert_eq!(code, exit::WOULD_DELETE, "{err}");
    // A file far larger than any report is refused unread.
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let (code, err, _) = cli(&["audit", "--merge", big.to_str().unwrap(), &b]);
    assert_eq!(code, exit::ERROR, "{err}");
    assert!(err.contains("is over 1048576 bytes"), "{err}");
    let (code, err, _) = cli(&[
        "audit",
        "t",
        "-f",
        "raw",
        "-p",
        "one-second",
        "--shard",
        "1/2",
        "--cut",
        big.to_str().unwrap(),
    ]);
    assert_eq!(code, exit::ERROR, "{err}");
    assert!(err.contains("is over 67108864 bytes"), "{err}");
}
