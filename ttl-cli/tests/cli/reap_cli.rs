//! `bigtable-ttl expired` and `bigtable-ttl reap` against Google's Bigtable
//! emulator, run in-process through `run_with`: the feed's windows tile
//! time, the reaper's dry run deletes nothing, a run stopped half-way and
//! resumed from its checkpoint deletes every dead row once, writing each
//! as a JSON line before, and `cbt` then sees only the live data. The
//! family's garbage collection keeps 30 days, so that only the reaper
//! removes what the one-hour policy expired.

use crate::support;

use std::collections::BTreeSet;

use bigtable_ttl::{BigtableRow, Clock, Connection, Table};
use bigtable_ttl_cli::{exit, run_with};
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;
use support::{cbt, emulator_host, raw_set};

/// The table and its family `f`, collected after 30 days.
#[derive(BigtableRow)]
#[bigtable(table = "feed", family = "f")]
#[ttl(default = "30d")]
struct Feed {
    #[bigtable(key)]
    id: String,
    v: String,
}

/// Run `bigtable-ttl ARGS…` against `conn`'s instance; (status, stdout, stderr).
async fn cli(conn: &Connection, args: &[&str]) -> (i32, String, String) {
    let host = emulator_host();
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
    let code = run_with(argv, &mut out, &mut err).await;
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
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
