//! `bigtable-ttl expired` and `bigtable-ttl reap` against Google's Bigtable
//! emulator, run in-process through `run_with`: the feed's windows tile
//! time, the reaper's dry run deletes nothing, a run stopped half-way and
//! resumed from its checkpoint deletes every dead row once, writing each
//! as a JSON line before, and `cbt` then sees only the live data; shards
//! sharing a cut, each stopped and resumed, reap each row once; a
//! scheduled run after a finished pass starts a new one. The
//! family's garbage collection keeps 30 days, so that only the reaper
//! removes what the one-hour policy expired.

use crate::cli;
use crate::support;

use std::collections::BTreeSet;

use bigtable_ttl::{BigtableRow, Clock, Connection, Table};
use bigtable_ttl_cli::exit;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;
use support::{cbt, raw_set};

/// The table and its family `f`, collected after 30 days.
#[derive(BigtableRow)]
#[bigtable(table = "feed", family = "f")]
#[ttl(default = "30d")]
struct Feed {
    #[bigtable(key)]
    id: String,
    v: String,
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap()
}

fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis() * 1_000
}

/// The row keys `cbt read` prints.
fn cbt_keys(conn: &Connection) -> BTreeSet<String> {
    cbt(conn, &["read", "feed"])
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(' ') && !l.starts_with('-'))
        .map(str::to_owned)
        .collect()
}

async fn feed_table() -> Table<Feed> {
    support::table::<Feed>(&Clock::system()).await
}

#[tokio::test]
async fn expired_windows_tile_time_and_yield_each_death_once() {
    let table = feed_table().await;
    let conn = table.connection().clone();
    let t = now();
    let raw = table.raw();
    // Under default=1h a cell written at w expires at w + 1h.
    raw_set(
        raw,
        "a",
        "f",
        b"v",
        micros(t - TimeDelta::minutes(90)),
        b"va",
    )
    .await;
    raw_set(
        raw,
        "b",
        "f",
        b"v",
        micros(t - TimeDelta::minutes(150)),
        b"vb",
    )
    .await;
    raw_set(raw, "live", "f", b"v", micros(t), b"vl").await;
    let at = |d: TimeDelta| (t - d).to_rfc3339();
    let window = |from: String, to: String| {
        let conn = conn.clone();
        async move {
            let args = [
                "expired",
                "feed",
                "--family",
                "f",
                "--policy",
                "default=1h",
                "--from",
                &from,
                "--to",
                &to,
                "--json",
            ];
            let (code, out, err) = cli(&conn, &args).await;
            assert_eq!(code, exit::OK, "{err}");
            lines(&out)
        }
    };
    let early = window(at(TimeDelta::hours(2)), at(TimeDelta::hours(1))).await;
    let late = window(at(TimeDelta::hours(1)), t.to_rfc3339()).await;
    let keys = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|e| e["row_key"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(keys(&early), ["b"]);
    assert_eq!(keys(&late), ["a"]);
    let a = &late[0];
    assert_eq!(
        a["died_at"].as_str().unwrap(),
        (t - TimeDelta::minutes(30))
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    );
    assert_eq!(a["cells"][0]["value"], "\"va\"");
    assert_eq!(a["event_id"].as_str().unwrap().len(), 32, "{a}");

    // Read as people do: a table and a count.
    let (code, out, err) = cli(
        &conn,
        &[
            "expired",
            "feed",
            "--family",
            "f",
            "--policy",
            "default=1h",
            "--from",
            "3h",
        ],
    )
    .await;
    assert_eq!(code, exit::OK, "{err}");
    assert!(out.contains("2 rows died from"), "{out}");

    // A window that is not over yet is refused, saying why.
    let (code, _, err) = cli(
        &conn,
        &[
            "expired",
            "feed",
            "--family",
            "f",
            "--policy",
            "default=1h",
            "--from",
            "1h",
            "--to",
            &(t + TimeDelta::hours(1)).to_rfc3339(),
        ],
    )
    .await;
    assert_eq!(code, exit::ERROR);
    assert!(err.contains("window"), "{err}");
}

#[tokio::test]
async fn reap_dry_run_deletes_nothing_and_a_resumed_run_reaps_each_dead_row_once() {
    let table = feed_table().await;
    let conn = table.connection().clone();
    let t = now();
    let raw = table.raw();
    let dead: Vec<String> = (0..6).map(|i| format!("dead{i}")).collect();
    for key in &dead {
        raw_set(
            raw,
            key,
            "f",
            b"v",
            micros(t - TimeDelta::hours(2)),
            b"gone",
        )
        .await;
    }
    raw_set(raw, "live", "f", b"v", micros(t), b"here").await;
    // A live row with an expired older version: trimmed, not deleted.
    raw_set(raw, "mixed", "f", b"v", micros(t), b"new").await;
    raw_set(
        raw,
        "mixed",
        "f",
        b"v",
        micros(t - TimeDelta::hours(3)),
        b"old",
    )
    .await;
    let every: BTreeSet<String> = dead
        .iter()
        .cloned()
        .chain(["live".to_owned(), "mixed".to_owned()])
        .collect();
    let reap = ["reap", "feed", "--family", "f", "--policy", "default=1h"];

    let (code, out, err) = cli(&conn, &[&reap[..], &["--dry-run", "--json"]].concat()).await;
    assert_eq!(code, exit::OK, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["rows_reaped"], 6, "{report}");
    assert_eq!(report["rows_trimmed"], 1, "{report}");
    assert_eq!(report["status"], "done", "{report}");
    assert_eq!(cbt_keys(&conn), every, "a dry run deletes nothing");

    let dir = std::env::temp_dir().join(format!(
        "reap-cli-{}-{}",
        std::process::id(),
        conn.instance()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (cp, events) = (dir.join("cp.json"), dir.join("events.jsonl"));
    let (cp, events) = (cp.to_str().unwrap(), events.to_str().unwrap());
    let run = [
        &reap[..],
        &[
            "--batch-rows",
            "2",
            "--checkpoint",
            cp,
            "--events",
            events,
            "--json",
        ],
    ]
    .concat();
    let (code, out, err) = cli(&conn, &[&run[..], &["--stop-after", "2"]].concat()).await;
    assert_eq!(code, exit::STOPPED, "{out}{err}");
    let stopped: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(stopped["rows_scanned"], 2, "{stopped}");
    // Started again without --resume: refused, nothing lost.
    let (code, _, err) = cli(&conn, &run).await;
    assert_eq!(code, exit::ERROR);
    assert!(err.contains("pass --resume"), "{err}");
    let (code, out, err) = cli(&conn, &[&run[..], &["--resume", "--rate", "1000"]].concat()).await;
    assert_eq!(code, exit::OK, "{err}");
    let done: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        done["rows_scanned"], 7,
        "each row read once over both runs: {done}"
    );
    assert_eq!(done["rows_reaped"], 6, "{done}");
    assert_eq!(done["rows_trimmed"], 1, "{done}");

    let expected: BTreeSet<String> = ["live".to_owned(), "mixed".to_owned()].into();
    assert_eq!(cbt_keys(&conn), expected, "cbt sees only the live rows");
    let mixed = cbt(&conn, &["read", "feed", "prefix=mixed"]);
    assert!(
        mixed.contains("\"new\"") && !mixed.contains("\"old\""),
        "{mixed}"
    );

    let written = lines(&std::fs::read_to_string(events).unwrap());
    let keys: BTreeSet<String> = written
        .iter()
        .map(|e| e["row_key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        keys,
        dead.iter().cloned().collect(),
        "each dead row handed over"
    );
    let ids: BTreeSet<&str> = written
        .iter()
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 6, "one event id a death: {written:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scheduled reaper (a checkpoint kept on a volume and
/// `--resume-if-present`, what `examples/ops/reap-cronjob.yaml` runs): the
/// run after a finished pass starts a new one, so a row that died since,
/// keyed before the last pass's last row, goes too.
#[tokio::test]
async fn a_scheduled_reaper_starts_a_new_pass_after_a_finished_one() {
    let table = feed_table().await;
    let conn = table.connection().clone();
    let t = now();
    let raw = table.raw();
    let expired = micros(t - TimeDelta::hours(2));
    for key in ["b-dead", "z-dead"] {
        raw_set(raw, key, "f", b"v", expired, b"gone").await;
    }
    raw_set(raw, "m-live", "f", b"v", micros(t), b"here").await;
    let dir = std::env::temp_dir().join(format!(
        "reap-cron-{}-{}",
        std::process::id(),
        conn.instance()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let cp = dir.join("cp.json");
    let run = [
        "reap",
        "feed",
        "--family",
        "f",
        "--policy",
        "default=1h",
        "--checkpoint",
        cp.to_str().unwrap(),
        "--resume-if-present",
        "--json",
    ];
    let (code, out, err) = cli(&conn, &run).await;
    assert_eq!(code, exit::OK, "{err}");
    let first: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&first["rows_reaped"], &first["status"]),
        (&2.into(), &"done".into()),
        "{first}"
    );

    raw_set(raw, "a-dead", "f", b"v", expired, b"gone").await;
    let (code, out, err) = cli(&conn, &run).await;
    assert_eq!(code, exit::OK, "{err}");
    let next: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(next["rows_reaped"], 1, "a pass of its own: {next}");
    assert_eq!(
        cbt_keys(&conn),
        BTreeSet::from(["m-live".to_owned()]),
        "the row that died since is gone too"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `reap --shard I/N --cut FILE` as `migrate` has it: three shards sharing
/// one cut, each stopped after its first batch and resumed from its own
/// checkpoint. A dry run counts each dead row once over the shards; the
/// real run hands each over once, from the shard whose part holds its key,
/// and deletes it, `cbt` then seeing only the live rows.
#[tokio::test]
async fn a_sharded_reaper_stopped_and_resumed_reaps_each_row_once() {
    const DEAD: usize = 60;
    const SHARDS: usize = 3;
    let table = feed_table().await;
    let conn = table.connection().clone();
    let t = now();
    let raw = table.raw();
    let dead: BTreeSet<String> = (0..DEAD).map(|i| format!("d{i:03}")).collect();
    for key in &dead {
        raw_set(
            raw,
            key,
            "f",
            b"v",
            micros(t - TimeDelta::hours(2)),
            b"gone",
        )
        .await;
    }
    for key in ["d0005-live", "d0505-live"] {
        raw_set(raw, key, "f", b"v", micros(t), b"here").await;
    }
    let dir = std::env::temp_dir().join(format!(
        "reap-shards-{}-{}",
        std::process::id(),
        conn.instance()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let cut = path("cut.json");
    // Each shard's runs: stopped after a batch of 2, then resumed; the
    // last report of each.
    let shards = |dry: bool| {
        let (conn, cut) = (conn.clone(), cut.clone());
        async move {
            let mut reports = Vec::new();
            for i in 0..SHARDS {
                let tag = if dry { "dry" } else { "real" };
                let (cp, events) = (
                    path(&format!("{tag}-{i}.json")),
                    path(&format!("{tag}-{i}.jsonl")),
                );
                let shard = format!("{i}/{SHARDS}");
                let mut run = vec![
                    "reap",
                    "feed",
                    "--family",
                    "f",
                    "--policy",
                    "default=1h",
                    "--shard",
                    &shard,
                    "--cut",
                    &cut,
                    "--batch-rows",
                    "2",
                    "--checkpoint",
                    &cp,
                    "--events",
                    &events,
                    "--json",
                ];
                if dry {
                    run.push("--dry-run");
                }
                let (code, out, err) =
                    cli(&conn, &[&run[..], &["--stop-after", "1"]].concat()).await;
                let report: Value = serde_json::from_str(&out).unwrap_or_default();
                let last = if code == exit::STOPPED {
                    let (code, out, err) = cli(&conn, &[&run[..], &["--resume"]].concat()).await;
                    assert_eq!(code, exit::OK, "shard {i} resumed: {err}");
                    serde_json::from_str(&out).unwrap()
                } else {
                    // A part with no row ends before a batch is read.
                    assert_eq!(code, exit::OK, "shard {i}: {err}");
                    report
                };
                assert_eq!(last["status"], "done", "shard {i}: {last}");
                reports.push((last, events));
            }
            reports
        }
    };
    let sum = |reports: &[(Value, String)]| -> u64 {
        reports
            .iter()
            .map(|(r, _)| r["rows_reaped"].as_u64().unwrap())
            .sum()
    };

    let dry = shards(true).await;
    assert_eq!(
        sum(&dry),
        DEAD as u64,
        "each dead row counted once: {dry:?}"
    );
    assert_eq!(cbt_keys(&conn).len(), DEAD + 2, "a dry run deletes nothing");

    let real = shards(false).await;
    assert_eq!(sum(&real), DEAD as u64, "{real:?}");
    let mut handed = Vec::new();
    for (report, events) in &real {
        let part = &report["shard"];
        for event in lines(&std::fs::read_to_string(events).unwrap_or_default()) {
            let key = event["row_key"].as_str().unwrap().to_owned();
            assert!(
                part.is_null()
                    || (part["start"].as_str().unwrap() <= key.as_str()
                        && part["end"].as_str().is_none_or(|end| key.as_str() < end)),
                "{key} handed over by the shard of {part}"
            );
            handed.push(key);
        }
    }
    handed.sort();
    assert_eq!(
        handed,
        dead.iter().cloned().collect::<Vec<_>>(),
        "each once"
    );
    assert_eq!(
        cbt_keys(&conn),
        BTreeSet::from(["d0005-live".to_owned(), "d0505-live".to_owned()])
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
