//! The `bigtable-ttl` binary run as a fleet runs it: shards started at
//! once, each PID 1 in its own PID namespace (as every pod of a
//! Kubernetes Job is), sharing one directory for the cut, checkpoints and
//! reports; and the mistakes a fleet's operator can make, refused at once.

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bigtable_ttl::data::RawTable;
use bigtable_ttl::data::{Entry, Mutation};
use bigtable_ttl::Connection;
use bigtable_ttl_cli::{exit, run_with};
use serde_json::Value;
use support::{cbt, connection, emulator_host};

const BIN: &str = env!("CARGO_BIN_EXE_bigtable-ttl");

/// Table `events`, family `raw` (no age rule) and `other`, holding `rows`
/// rows written an hour ago, keys with 0x00 and 0xFF bytes among them.
async fn events(conn: &Connection, rows: usize) {
    cbt(conn, &["createtable", "events"]);
    cbt(conn, &["createfamily", "events", "raw"]);
    cbt(conn, &["createfamily", "events", "other"]);
    let written = (chrono::Utc::now().timestamp_millis() - 3_600_000) * 1_000;
    let entries = (0..rows)
        .map(|i| {
            let mut key = format!("ev-{i:04}-").into_bytes();
            key.push([0x00, 0xff, b'k'][i % 3]);
            Entry::new(
                key,
                vec![Mutation::set_cell(
                    "raw",
                    b"url".to_vec(),
                    written,
                    format!("/page/{i}").into_bytes(),
                )],
            )
        })
        .collect();
    for answer in RawTable::new(conn, "events")
        .mutate_rows(entries)
        .await
        .unwrap()
    {
        assert!(answer.is_ok(), "{answer:?}");
    }
}

/// `bigtable-ttl ARGS…` against `conn`'s instance.
fn argv(conn: &Connection, args: &[&str]) -> Vec<String> {
    let host = emulator_host();
    let mut argv: Vec<String> = [
        "--project",
        conn.project(),
        "--instance",
        conn.instance(),
        "--emulator-host",
        &host,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    argv.extend(args.iter().map(|s| (*s).to_owned()));
    argv
}

/// `program ARGS…` in a PID namespace of its own, where it is PID 1.
fn in_own_pid_namespace(program: &str, args: &[String]) -> Command {
    let mut command = Command::new("unshare");
    command
        .args(["--pid", "--fork", "--", program])
        .args(args)
        .env_remove("BIGTABLE_EMULATOR_HOST")
        .stdin(Stdio::null());
    command
}

/// unshare is there and puts a process at PID 1: what the fleet test
/// relies on, checked so that its absence fails with a clear message.
fn unshare_gives_pid_1() {
    let output = in_own_pid_namespace("sh", &["-c".to_owned(), "echo $$".to_owned()])
        .output()
        .unwrap_or_else(|e| {
            panic!("this test needs `unshare` (util-linux) on the PATH, run as root: {e}")
        });
    let pid = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && pid.trim() == "1",
        "`unshare --pid --fork` must run as root and give PID 1 (got {:?}, {}): {}",
        pid.trim(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Eight shards of `migrate`, each PID 1 in its own PID namespace, started
/// at once sharing one cut, with a ninth process on shard 0's checkpoint
/// and report (a pod replaced while the old one still runs), ten rounds:
/// every process succeeds, the first complete cut is the one all used,
/// no temporary file is left, and the reports merge into a verified
/// whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_shards_in_their_own_pid_namespaces_share_one_cut_checkpoints_and_reports() {
    const ROWS: usize = 240;
    const SHARDS: usize = 8;
    unshare_gives_pid_1();
    let conn = connection();
    events(&conn, ROWS).await;
    let migrate = [
        "migrate",
        "events",
        "--from",
        "raw",
        "--to",
        "ttl",
        "--policy",
        "default=2d",
        "--batch-rows",
        "4",
        "--resume-if-present",
        "--json",
    ];
    let started = Instant::now();
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
        let shard = |i: usize| {
            let mut args: Vec<String> = migrate.iter().map(|s| (*s).to_owned()).collect();
            args.extend([
                "--shard".to_owned(),
                format!("{i}/{SHARDS}"),
                "--cut".to_owned(),
                path("cut.json"),
                "--checkpoint".to_owned(),
                path(&format!("shard-{i}.json")),
                "--report".to_owned(),
                path(&format!("report-{i}.json")),
            ]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            in_own_pid_namespace(BIN, &argv(&conn, &args))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let processes: Vec<_> = (0..SHARDS).chain([0]).map(|i| (i, shard(i))).collect();
        for (i, process) in processes {
            let output = process.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "round {round}, shard {i}: {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut expected: Vec<String> = (0..SHARDS)
            .flat_map(|i| [format!("report-{i}.json"), format!("shard-{i}.json")])
            .chain(["cut.json".to_owned()])
            .collect();
        expected.sort();
        assert_eq!(names, expected, "round {round}: only the shards' files");
        let cut: Value =
            serde_json::from_str(&std::fs::read_to_string(path("cut.json")).unwrap()).unwrap();
        for i in 0..SHARDS {
            let report: Value = serde_json::from_str(
                &std::fs::read_to_string(path(&format!("report-{i}.json"))).unwrap(),
            )
            .unwrap();
            assert_eq!(report["status"], "done", "round {round}, shard {i}");
            assert_eq!(
                report["shard"], cut["parts"][i],
                "round {round}: shard {i} worked on the shared cut's part {i}"
            );
        }
        let mut merge: Vec<String> = migrate[..8].iter().map(|s| (*s).to_owned()).collect();
        merge.extend(["--verify", "--json", "--merge"].map(str::to_owned));
        merge.extend((0..SHARDS).map(|i| path(&format!("report-{i}.json"))));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(
            std::iter::once("bigtable-ttl".to_owned()).chain(merge),
            &mut out,
            &mut err,
        )
        .await;
        let err = String::from_utf8_lossy(&err);
        assert_eq!(code, exit::OK, "round {round}: {err}");
        let merged: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(merged["verification"]["source_rows"], ROWS);
        assert_eq!(merged["verification"]["matches"], true);
    }
    // Generous for a loaded 2-core box; what it bounds is a hang.
    assert!(started.elapsed() < Duration::from_secs(300));
}

/// A shard count far past the cap is refused before anything is read or
/// allocated, the same way however it is spelt, under a 2 GiB address
/// space (a cut of all its parts would need several).
#[tokio::test]
async fn a_huge_shard_count_is_refused_at_once_in_bounded_memory() {
    let conn = connection();
    events(&conn, 10).await;
    let audit = ["audit", "events", "-f", "raw", "-p", "one-second"];
    for spelling in [
        &["--shard", "1/999999999"][..],
        &["--parts", "999999999", "--part", "1"],
    ] {
        let mut args = audit.to_vec();
        args.extend_from_slice(spelling);
        let started = Instant::now();
        let output = Command::new("prlimit")
            .arg(format!("--as={}", 2u64 << 30))
            .arg("--")
            .arg(BIN)
            .args(argv(&conn, &args))
            .env_remove("BIGTABLE_EMULATOR_HOST")
            .output()
            .unwrap_or_else(|e| panic!("this test needs `prlimit` (util-linux): {e}"));
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(exit::USAGE),
            "{spelling:?}: {err}"
        );
        assert!(
            err.contains("over the limit of 1024"),
            "{spelling:?}: {err}"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "{spelling:?}");
    }
}

/// Run `bigtable-ttl ARGS…` in-process: (status, stdout, stderr).
async fn cli(conn: &Connection, args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once("bigtable-ttl".to_owned()).chain(argv(conn, args));
    let code = run_with(argv, &mut out, &mut err).await;
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// One bad shard spec, whatever its spelling, is a usage error (exit 2).
#[tokio::test]
async fn a_bad_shard_is_a_usage_error_however_it_is_spelt() {
    let conn = connection();
    let audit = ["audit", "events", "-f", "raw", "-p", "one-second"];
    for (spelling, says) in [
        (&["--shard", "0/0"][..], "at least 1"),
        (&["--parts", "0", "--part", "0"], "at least 1"),
        (&["--shard", "4/4"], "0 to 3"),
        (&["--parts", "4", "--part", "4"], "0 to 3"),
        (&["--cut", "cut.json"], "--shard I/N"),
    ] {
        let mut args = audit.to_vec();
        args.extend_from_slice(spelling);
        let (code, _, err) = cli(&conn, &args).await;
        assert_eq!(code, exit::USAGE, "{spelling:?}: {err}");
        assert!(err.contains(says), "{spelling:?}: {err}");
    }
}

/// Auditing a family the table does not have is an error naming the ones
/// it has, not "would delete nothing".
#[tokio::test]
async fn an_unknown_family_is_an_error_listing_the_tables_families() {
    let conn = connection();
    events(&conn, 3).await;
    let (code, out, err) = cli(
        &conn,
        &["audit", "events", "-f", "nosuchfamily", "-p", "one-second"],
    )
    .await;
    assert_eq!(code, exit::ERROR, "{out}{err}");
    assert!(
        err.contains("table `events` has no family `nosuchfamily`; its families are: other, raw"),
        "{err}"
    );
    let (code, _, err) = cli(&conn, &["inspect", "events", "--family", "nosuch"]).await;
    assert_eq!(code, exit::ERROR, "{err}");
    assert!(err.contains("its families are: other, raw"), "{err}");
}

/// Shards of one audit whose cut file lists its parts backwards still
/// work on their own parts, and their reports merge to the whole audit.
#[tokio::test]
async fn a_cut_file_listed_backwards_gives_each_shard_its_own_part() {
    let conn = connection();
    events(&conn, 60).await;
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.json");
    let parts = bigtable_ttl::ops::cut(
        &[
            b"ev-0010-".to_vec(),
            b"ev-0030-".to_vec(),
            b"ev-0050-".to_vec(),
        ],
        4,
    );
    let part_json = |p: &bigtable_ttl::ops::Part| {
        serde_json::json!({
            "index": p.index, "count": p.count,
            "start_hex": hex::encode(&p.start), "end_hex": p.end.as_deref().map(hex::encode),
        })
    };
    let listed: Vec<Value> = parts.iter().rev().map(part_json).collect();
    let file = serde_json::json!({ "table": "events", "count": 4, "parts": listed });
    std::fs::write(&cut, file.to_string()).unwrap();
    let mut rows = 0;
    for (i, part) in parts.iter().enumerate() {
        let shard = format!("{i}/4");
        let (code, out, err) = cli(
            &conn,
            &[
                "audit",
                "events",
                "-f",
                "raw",
                "-p",
                "default=30d",
                "--shard",
                &shard,
                "--cut",
                cut.to_str().unwrap(),
                "--json",
            ],
        )
        .await;
        assert_eq!(code, exit::OK, "{err}");
        let report: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["shard"]["index"], i, "{report:#}");
        assert_eq!(report["shard"]["start_hex"], hex::encode(&part.start));
        assert_eq!(report["rows"], [10, 20, 20, 10][i], "{report:#}");
        rows += report["rows"].as_u64().unwrap();
    }
    assert_eq!(rows, 60);
}
