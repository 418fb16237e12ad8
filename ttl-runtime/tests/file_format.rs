//! The checkpoint and report files of `tests/data`, written by the
//! `bigtable-ttl` command, read back field by field: a field renamed or
//! dropped from the file format (`serde` feature) fails here, so that files
//! written by one version stay readable by the next. Each file is also
//! written again, and every key the runtime writes is found in it with the
//! same value.

use bigtable_ttl_runtime::chrono::{DateTime, NaiveDate, Utc};
use bigtable_ttl_runtime::ops::{AuditReport, Checkpoint, Part, ReapProgress, Verification};
use bigtable_ttl_runtime::Policy;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

fn file(name: &str) -> String {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `name` read as `T`, and written again: each key `T` writes stands in
/// the file (at the top level, or under `under`) with the same value.
fn read<T: DeserializeOwned + Serialize>(name: &str, under: Option<&str>) -> T {
    let original: Value = serde_json::from_str(&file(name)).unwrap();
    let original = under.map_or(&original, |key| &original[key]);
    let value = T::deserialize(original).unwrap_or_else(|e| panic!("{name}: {e}"));
    let Value::Object(written) = serde_json::to_value(&value).unwrap() else {
        panic!("{name}: not written as an object");
    };
    for (key, v) in &written {
        assert_eq!(
            original.get(key),
            Some(v),
            "{name}: key `{key}` written again"
        );
    }
    value
}

fn ev_old() -> Vec<u8> {
    b"ev-old".to_vec()
}

#[test]
fn a_migrate_checkpoint_reads_back() {
    let cp: Checkpoint = read("migrate-checkpoint.json", None);
    assert_eq!(cp.project.as_deref(), Some("test-project"));
    assert_eq!(cp.instance.as_deref(), Some("test-4221-0"));
    assert_eq!(cp.last_row_key.as_deref(), Some(&b"ev-03"[..]));
    assert_eq!(
        (
            cp.rows_read,
            cp.rows_copied,
            cp.cells_copied,
            cp.cells_skipped_expired,
            cp.rows_skipped_expired
        ),
        (4, 4, 8, 0, 0)
    );
    assert_eq!(cp.part, Part::new(0, 2, Vec::new(), Some(ev_old())));
}

#[test]
fn a_migrate_report_reads_back_with_its_verification() {
    let cp: Checkpoint = read("migrate-report.json", None);
    assert_eq!(cp.last_row_key, Some(ev_old()));
    assert_eq!(
        (
            cp.rows_read,
            cp.rows_copied,
            cp.cells_copied,
            cp.cells_skipped_expired,
            cp.rows_skipped_expired
        ),
        (1, 0, 0, 1, 1)
    );
    assert_eq!(cp.part, Part::new(1, 2, ev_old(), None));
    let v: Verification = read("migrate-report.json", Some("verification"));
    assert_eq!(
        (
            v.source_rows,
            v.source_cells,
            v.expected_rows,
            v.expected_cells,
            v.target_rows,
            v.target_cells
        ),
        (1, 1, 0, 0, 0, 0)
    );
    assert!(v.matches());
}

#[test]
fn a_reap_checkpoint_reads_back() {
    let p: ReapProgress = read("reap-checkpoint.json", None);
    assert_eq!(p.last_row_key.as_deref(), Some(&b"ev-08"[..]));
    assert_eq!(
        [
            p.rows_scanned,
            p.rows_reaped,
            p.rows_trimmed,
            p.cells_reaped,
            p.rows_skipped_live,
            p.rows_skipped_recent,
            p.rows_skipped_changed,
            p.rows_skipped_unsure,
            p.rows_skipped_other
        ],
        [2, 2, 0, 4, 0, 0, 0, 0, 0]
    );
    assert_eq!(p.part, Part::new(0, 2, Vec::new(), Some(ev_old())));
}

#[test]
fn a_cut_reads_back() {
    let text = file("cut.json");
    let cut: Value = serde_json::from_str(&text).unwrap();
    let parts: Vec<Part> = serde_json::from_value(cut["parts"].clone()).unwrap();
    assert_eq!(
        parts,
        [
            Part::new(0, 2, Vec::new(), Some(ev_old())),
            Part::new(1, 2, ev_old(), None)
        ]
    );
    assert_eq!(serde_json::to_value(&parts).unwrap(), cut["parts"]);
}

#[test]
fn an_audit_report_reads_back_with_its_histograms() {
    let r: AuditReport = read("audit-report.json", None);
    assert_eq!((r.table.as_str(), r.family.as_str()), ("events", "raw"));
    assert_eq!(r.policy, Policy::default_ttl(chrono_days(1)));
    let now = DateTime::<Utc>::from_timestamp_micros(1_795_856_326_214_379).unwrap();
    assert_eq!(r.now, now);
    assert_eq!(r.part, Part::new(0, 2, Vec::new(), Some(ev_old())));
    assert_eq!(
        [
            r.rows,
            r.cells,
            r.cells_deleted,
            r.rows_losing_cells,
            r.rows_deleted,
            r.real_cells,
            r.artificial_cells,
            r.rows_mixed_expiry
        ],
        [12, 24, 0, 0, 0, 24, 0, 12]
    );
    assert_eq!(r.oldest_micros, Some(1_795_849_726_159_000));
    assert_eq!(r.newest_micros, Some(1_795_856_326_160_000));
    assert_eq!(r.widest_expiry_spread_micros, 1_000);
    let current = r
        .expiry_current
        .as_ref()
        .expect("the live rule's histogram");
    assert_eq!(current.policy, Some(Policy::default_ttl(chrono_days(3650))));
    assert_eq!(current.now, now);
    assert_eq!(current.buckets().map(|(_, n)| n), [0, 0, 0, 0, 24, 0]);
    assert!(current.days.is_empty(), "{:?}", current.days);
    let proposed = &r.expiry_proposed;
    assert_eq!(proposed.policy, Some(Policy::default_ttl(chrono_days(1))));
    assert_eq!(proposed.buckets().map(|(_, n)| n), [0, 0, 24, 0, 0, 0]);
    let day = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
    assert_eq!(proposed.days.iter().collect::<Vec<_>>(), [(&day, &24)]);
}

fn chrono_days(n: i64) -> bigtable_ttl_runtime::chrono::TimeDelta {
    bigtable_ttl_runtime::chrono::TimeDelta::days(n)
}
