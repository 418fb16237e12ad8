//! The `bigtable-ttl` command against Google's Bigtable emulator, run
//! in-process through `run_with`: audit, apply (refused, then forced, with
//! real garbage collection watched through a raw read), inspect checked
//! against `cbt`, and migrate interrupted half-way and resumed. Each test
//! runs on its own instance of the shared emulator.

use crate::cli;
use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bigtable_ttl::admin::{ensure_schema, EnsureOptions};
use bigtable_ttl::data::Mutation;
use bigtable_ttl::data::{RawTable, ReadRows, Row};
use bigtable_ttl::{ops, BigtableRow, CellCodec, Clock, Connection, Policy, Schema, Table};
use bigtable_ttl_cli::exit;
use chrono::{DateTime, Local, TimeDelta, Utc};
use futures_util::TryStreamExt as _;
use serde_json::Value;
use support::rows::Click;
use support::{cbt, connection, emulator_host};

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn now_ms() -> i64 {
    let micros = Utc::now().timestamp_micros();
    micros - micros % 1_000
}

/// A table with `families`, each with `max_age = default`, created the way
/// the library does (families through `ModifyColumnFamilies`).
async fn table(
    conn: &Connection,
    name: &'static str,
    families: &'static [&'static str],
    default: TimeDelta,
) {
    let schema: &'static Schema = Box::leak(Box::new(Schema {
        table: name,
        policy: Policy::default_ttl(default),
        families,
        owns_family: false,
        columns: &[],
        maps: &[],
        written_at: None,
        marker: b"\0\0Row",
        key_fields: &["id"],
        key_separator: "",
    }));
    ensure_schema(conn, name, schema, EnsureOptions::default())
        .await
        .unwrap();
}

async fn write(conn: &Connection, table: &str, row: &str, cells: &[(&str, &str, i64, &[u8])]) {
    let mutations = cells
        .iter()
        .map(|(family, column, ts, value)| {
            Mutation::set_cell(
                (*family).to_owned(),
                column.as_bytes().to_vec(),
                *ts,
                value.to_vec(),
            )
        })
        .collect();
    RawTable::new(conn, table)
        .mutate_row(row, mutations)
        .await
        .unwrap_or_else(|e| panic!("raw write of {table}/{row}: {e}"));
}

/// Every stored cell of `table`, unfiltered: row -> [(family:qualifier, ts, value)].
type Cells = BTreeMap<String, Vec<(String, i64, Vec<u8>)>>;

async fn raw(conn: &Connection, table: &str) -> Cells {
    let rows: Vec<_> = RawTable::new(conn, table)
        .read_rows(ReadRows::all())
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("raw read of {table}: {e}"));
    rows.into_iter()
        .map(|Row { key, cells, .. }| {
            (
                String::from_utf8(key).unwrap(),
                cells
                    .into_iter()
                    .map(|c| {
                        (
                            format!("{}:{}", c.family, String::from_utf8_lossy(&c.qualifier)),
                            c.timestamp_micros,
                            c.value,
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

fn family_only(cells: &Cells, family: &str) -> Cells {
    let prefix = format!("{family}:");
    cells
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.iter()
                    .filter(|c| c.0.starts_with(&prefix))
                    .cloned()
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

#[tokio::test]
async fn audit_finds_server_timestamps_and_apply_refuses_then_forces_one_second() {
    let conn = connection();
    table(&conn, "sessions", &["s"], TimeDelta::days(2)).await;
    // Five rows the ordinary way: the server stamps them (-1).
    for i in 0..5 {
        write(
            &conn,
            "sessions",
            &format!("row-{i}"),
            &[("s", "user", -1, b"ann")],
        )
        .await;
    }
    // One artificial timestamp: expires in an hour under one-second expiration.
    let future = now_ms() + 3_600_000_000;
    write(
        &conn,
        "sessions",
        "row-ttl",
        &[("s", "user", future, b"bob")],
    )
    .await;

    let (code, out, err) = cli(
        &conn,
        &[
            "audit",
            "sessions",
            "--family",
            "s",
            "--policy",
            "one-second",
            "--json",
        ],
    )
    .await;
    assert_eq!(code, exit::WOULD_DELETE, "{out}{err}");
    let report = json(&out);
    assert_eq!(report["rows"], 6, "{report:#}");
    assert_eq!(report["cells"], 6);
    assert_eq!(report["cells_deleted"], 5);
    assert_eq!(report["rows_deleted"], 5);
    assert_eq!(report["rows_losing_cells"], 5);
    assert_eq!(report["real_cells"], 5);
    assert_eq!(report["artificial_cells"], 1);
    assert_eq!(report["newest_micros"], future);
    assert!(report["oldest_micros"].as_i64().unwrap() <= now_ms());
    assert_eq!(report["would_delete_data"], true);
    assert_eq!(report["rows_mixed_expiry"], 0, "one cell per row");

    // Under the family's own two days nothing would go.
    let (code, out, _) = cli(
        &conn,
        &[
            "audit",
            "sessions",
            "--family",
            "s",
            "--policy",
            "default=2d",
        ],
    )
    .await;
    assert_eq!(code, exit::OK, "{out}");
    assert!(
        out.contains("applying default=2d would delete nothing"),
        "{out}"
    );

    // Refused, with the numbers; nothing changed.
    let (code, out, _) = cli(
        &conn,
        &[
            "apply",
            "sessions",
            "--family",
            "s",
            "--policy",
            "one-second",
        ],
    )
    .await;
    assert_eq!(code, exit::WOULD_DELETE, "{out}");
    assert!(out.contains("rule before: max_age = 2d"), "{out}");
    assert!(
        out.contains("refused: applying one-second would delete 5 of 6 cells at once"),
        "{out}"
    );
    assert_eq!(raw(&conn, "sessions").await.len(), 6);
    let listing = cbt(&conn, &["ls", "sessions"]);
    assert!(listing.contains("age() > 2d"), "{listing}");

    // Forced: the rule changes and the emulator's GC removes the five rows.
    let (code, out, _) = cli(
        &conn,
        &[
            "apply",
            "sessions",
            "--family",
            "s",
            "--policy",
            "one-second",
            "--force",
        ],
    )
    .await;
    assert_eq!(code, exit::OK, "{out}");
    assert!(out.contains("rule before: max_age = 2d"), "{out}");
    assert!(out.contains("rule after:  max_age = 1s"), "{out}");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let cells = raw(&conn, "sessions").await;
        if cells.keys().collect::<Vec<_>>() == ["row-ttl"] {
            assert_eq!(
                cells["row-ttl"],
                [("s:user".to_owned(), future, b"bob".to_vec())]
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "server-stamped cells still there after 15 s: {cells:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Now the family is clean: the audit passes and a second apply is a no-op.
    let (code, out, _) = cli(
        &conn,
        &[
            "apply",
            "sessions",
            "--family",
            "s",
            "--policy",
            "one-second",
            "--json",
        ],
    )
    .await;
    assert_eq!(code, exit::OK, "{out}");
    let outcome = json(&out);
    assert_eq!(outcome["outcome"], "unchanged");
    assert_eq!(outcome["audit"]["cells_deleted"], 0);
}

#[tokio::test]
async fn audit_of_a_missing_table_is_an_error() {
    let conn = connection();
    let (code, _, err) = cli(
        &conn,
        &["audit", "nope", "--family", "s", "--policy", "one-second"],
    )
    .await;
    assert_eq!(code, exit::ERROR);
    assert!(err.contains("nope"), "{err}");
}

/// cbt's `lookup` as [(family:qualifier, local timestamp to the µs, value line)].
fn cbt_cells(out: &str) -> Vec<(String, String, String)> {
    let lines: Vec<&str> = out.lines().collect();
    let mut cells = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some((column, ts)) = line.split_once(" @ ") {
            let value = lines.get(i + 1).map_or("", |v| v.trim()).to_owned();
            cells.push((column.trim().to_owned(), ts.trim().to_owned(), value));
        }
    }
    cells
}

#[tokio::test]
async fn inspect_shows_what_cbt_shows_with_expiry_and_write_time() {
    let conn = connection();
    let clock = Clock::manual(Utc::now());
    let clicks = Table::<Click>::new(conn.clone()).with_clock(clock.clone());
    clicks.ensure_schema().await.unwrap();
    let click = Click {
        referrer: Some("/ref".into()),
        ..support::rows::click("c1", "/old")
    };
    clicks.put(&click).await.unwrap();
    // Rewritten a minute later with a 1-hour TTL: the old versions go.
    clock.advance(TimeDelta::minutes(1));
    let written = clicks
        .put_with(
            Click {
                url: "/home".into(),
                ..click.clone()
            }
            .mutation()
            .ttl(TimeDelta::hours(1)),
        )
        .await
        .unwrap();
    // An older version written by hand, outside the library: still alive
    // (its two days are not over), shown with its own expiry.
    let older = written.timestamp_micros - 3_600_000_000;
    write(&conn, "clicks", "c1", &[("c", "url", older, b"/older")]).await;

    let (code, out, err) = cli(&conn, &["inspect", "clicks", "c1", "--json"]).await;
    assert_eq!(code, exit::OK, "{out}{err}");
    let report = json(&out);
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(report["families"]["c"]["gc_rule"], "max_age = 2d");
    assert_eq!(report["families"]["c"]["policy"], "default=2d");

    // The same cells, timestamps and values as cbt shows.
    let shown = cbt_cells(&cbt(&conn, &["lookup", "clicks", "c1"]));
    let ours: Vec<(String, String, String)> = cells
        .iter()
        .map(|c| {
            let ts =
                DateTime::<Utc>::from_timestamp_micros(c["timestamp_micros"].as_i64().unwrap())
                    .unwrap()
                    .with_timezone(&Local)
                    .format("%Y/%m/%d-%H:%M:%S%.6f")
                    .to_string();
            let value = format!("{:?}", c["value"].as_str().unwrap());
            (
                format!(
                    "{}:{}",
                    c["family"].as_str().unwrap(),
                    c["qualifier"].as_str().unwrap()
                ),
                ts,
                value,
            )
        })
        .collect();
    assert_eq!(ours.len(), shown.len(), "ours {ours:?}\ncbt {shown:?}");
    for (o, s) in ours.iter().zip(&shown) {
        assert_eq!((&o.0, &o.1), (&s.0, &s.1));
        // Binary values (the write time, the marker's fingerprint) are
        // quoted differently; the marker's is checked by its hex below.
        if o.0 != "c:written_at" && !o.0.starts_with("c:\0\0") {
            assert_eq!(o.2, s.2, "value of {}", o.0);
        }
    }
    let marker = cells.iter().find(|c| c["marker"] == true).unwrap();
    assert_eq!(
        marker["value_hex"].as_str().unwrap(),
        hex::encode(Click::SCHEMA.marker_fingerprint())
    );

    // TTL() and WRITETIME(): the live url expires in an hour from its write,
    // and was written at the clock's time of the second put.
    let find = |q: &str, ts: i64| {
        cells
            .iter()
            .find(|c| c["qualifier"] == q && c["timestamp_micros"] == ts)
            .unwrap_or_else(|| panic!("no {q} @ {ts} in {report:#}"))
    };
    let url = find("url", written.timestamp_micros);
    let fmt = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    assert_eq!(url["alive"], true);
    assert_eq!(url["expires_at"], fmt(written.expires_at));
    assert_eq!(url["written_at"], fmt(written.written_at));
    assert_eq!(written.expires_at, written.written_at + TimeDelta::hours(1));
    let left = url["time_left_ms"].as_i64().unwrap();
    let expected_left = (written.expires_at - Utc::now()).num_milliseconds();
    assert!(
        (left - expected_left).abs() < 60_000 + 5_000,
        "{left} vs {expected_left}"
    );
    let shadow = find("written_at", written.timestamp_micros);
    assert_eq!(shadow["shadow"], true);
    assert_eq!(
        shadow["value_hex"],
        hex(&written.written_at.encode().unwrap())
    );
    let older = find("url", older);
    assert_eq!(older["alive"], true);
    assert_eq!(
        older["expires_at"],
        fmt(written.expires_at - TimeDelta::hours(1))
    );
    // No shadow version at its timestamp: the newest write time.
    assert_eq!(older["written_at"], fmt(written.written_at));

    // The readable table names the same things.
    let (code, text, _) = cli(&conn, &["inspect", "clicks", "c1", "--family", "c"]).await;
    assert_eq!(code, exit::OK);
    assert!(
        text.contains("family `c`: max_age = 2d (default=2d)"),
        "{text}"
    );
    assert!(text.contains("COLUMN"), "{text}");
    assert!(text.contains("c:written_at (shadow)"), "{text}");
    assert!(text.contains("\"/home\""), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("c:")).count(),
        cells.len(),
        "{text}"
    );

    let (code, text, _) = cli(&conn, &["inspect", "clicks", "nobody"]).await;
    assert_eq!(code, exit::ERROR);
    assert!(text.contains("no cells"), "{text}");
}

/// `cbt` prints a marker's qualifier as raw NUL bytes, which a terminal
/// does not show: `inspect` escapes them and says which marker it is.
#[tokio::test]
async fn inspect_labels_the_row_markers() {
    let conn = connection();
    table(&conn, "memos", &["m"], TimeDelta::days(2)).await;
    let ts = now_ms();
    write(
        &conn,
        "memos",
        "r1",
        &[
            ("m", "\0\0Memo", ts, b""),
            ("m", "\0", ts, b""),
            ("m", "body", ts, b"hi"),
        ],
    )
    .await;
    let (code, text, err) = cli(&conn, &["inspect", "memos", "r1"]).await;
    assert_eq!(code, exit::OK, "{text}{err}");
    assert!(
        text.contains("m:\\x00\\x00Memo (row marker of `Memo`)"),
        "{text}"
    );
    assert!(text.contains("m:\\x00 (row marker, legacy)"), "{text}");
    assert!(!text.contains('\0'), "{text:?}");
    let (code, out, _) = cli(&conn, &["inspect", "memos", "r1", "--json"]).await;
    assert_eq!(code, exit::OK);
    let report = json(&out);
    let markers: Vec<bool> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["marker"].as_bool().unwrap())
        .collect();
    assert_eq!(markers.iter().filter(|m| **m).count(), 2, "{report:#}");
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[tokio::test]
async fn migrate_interrupted_half_way_and_resumed_copies_every_row_once() {
    let conn = connection();
    // The source keeps cells forever (a long rule); the target gets 2 days.
    table(&conn, "events", &["raw"], TimeDelta::days(3650)).await;
    let now = now_ms();
    for i in 0..25 {
        let ts = now - i64::from(i) * 60_000_000; // i minutes ago
        write(
            &conn,
            "events",
            &format!("ev-{i:02}"),
            &[
                ("raw", "url", ts, format!("/page/{i}").as_bytes()),
                ("raw", "user", ts - 1_000, b"ann"),
            ],
        )
        .await;
    }
    // Ten days old: already expired under a 2-day TTL, skipped and counted.
    write(
        &conn,
        "events",
        "ev-old",
        &[("raw", "url", now - 10 * 86_400_000_000, b"/old")],
    )
    .await;
    let source_before = raw(&conn, "events").await;

    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("migrate.json");
    let checkpoint = checkpoint.to_str().unwrap();
    let migrate = |extra: &'static [&'static str]| {
        let conn = conn.clone();
        let checkpoint = checkpoint.to_owned();
        async move {
            let mut args = vec![
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
                "--checkpoint",
            ];
            args.push(&checkpoint);
            args.extend_from_slice(extra);
            cli(&conn, &args).await
        }
    };

    let (code, out, err) = migrate(&["--stop-after", "10"]).await;
    assert_eq!(code, exit::STOPPED, "{out}{err}");
    assert!(out.contains("stopped after 12 rows"), "{out}");
    let saved = json(&std::fs::read_to_string(checkpoint).unwrap());
    assert_eq!(saved["rows_read"], 12);
    assert_eq!(saved["last_row_key"], "ev-11");
    assert_eq!(saved["done"], false);
    let half = family_only(&raw(&conn, "events").await, "ttl");
    assert_eq!(half.len(), 12, "{half:?}");

    // A second run without --resume does not silently start over.
    let (code, _, err) = migrate(&[]).await;
    assert_eq!(code, exit::ERROR);
    assert!(err.contains("pass --resume"), "{err}");
    // Nor does a resume with another plan.
    let (code, _, err) = {
        let args = [
            "migrate",
            "events",
            "--from",
            "raw",
            "--to",
            "ttl",
            "--policy",
            "default=3d",
            "--checkpoint",
            checkpoint,
            "--resume",
        ];
        cli(&conn, &args).await
    };
    assert_eq!(code, exit::ERROR);
    assert!(err.contains("another migration"), "{err}");

    let (code, out, err) = migrate(&["--resume", "--json"]).await;
    assert_eq!(code, exit::OK, "{out}{err}");
    let done = json(&out);
    assert_eq!(done["status"], "done");
    assert_eq!(done["rows_read"], 26);
    assert_eq!(done["rows_copied"], 25);
    assert_eq!(done["cells_copied"], 50);
    assert_eq!(done["cells_skipped_expired"], 1);
    assert_eq!(done["rows_skipped_expired"], 1);
    assert_eq!(done["verification"]["matches"], true);
    assert_eq!(done["verification"]["target_rows"], 25);
    assert_eq!(done["verification"]["target_cells"], 50);
    assert_eq!(
        json(&std::fs::read_to_string(checkpoint).unwrap())["done"],
        true
    );

    // Every row exactly once, each cell once at its real timestamp (TTL =
    // the default: the timestamp stays the write time), the real time in the
    // shadow column; the old row absent; the source untouched.
    let after = raw(&conn, "events").await;
    let target = family_only(&after, "ttl");
    assert_eq!(target.len(), 25);
    assert!(!target.contains_key("ev-old"));
    for (row, cells) in &target {
        let source = &source_before[row];
        let url = source.iter().find(|c| c.0 == "raw:url").unwrap();
        let user = source.iter().find(|c| c.0 == "raw:user").unwrap();
        let shadow = |ts: i64| {
            (
                "ttl:written_at".to_owned(),
                ts,
                DateTime::<Utc>::from_timestamp_micros(ts)
                    .unwrap()
                    .encode()
                    .unwrap(),
            )
        };
        // One expiry per row (the default): both columns at the row's
        // newest write, one shadow version holding it.
        let newest = url.1.max(user.1);
        let mut expected = vec![
            ("ttl:url".to_owned(), newest, url.2.clone()),
            ("ttl:user".to_owned(), newest, user.2.clone()),
            shadow(newest),
        ];
        expected.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        assert_eq!(cells, &expected, "row {row}");
    }
    assert_eq!(family_only(&after, "raw"), source_before);
    let listing = cbt(&conn, &["ls", "events"]);
    assert!(listing.contains("age() > 2d"), "{listing}");
}

#[tokio::test]
async fn migrate_into_one_second_expiration_stamps_expiries() {
    let conn = connection();
    table(&conn, "events", &["raw"], TimeDelta::days(3650)).await;
    let now = now_ms();
    write(
        &conn,
        "events",
        "a",
        &[("raw", "url", now - 60_000_000, b"/a")],
    )
    .await;
    write(
        &conn,
        "events",
        "b",
        &[("raw", "url", now - 7_200_000_000, b"/b")],
    )
    .await;

    // One-second expiration needs a TTL.
    let (code, _, err) = cli(
        &conn,
        &[
            "migrate",
            "events",
            "--from",
            "raw",
            "--to",
            "s",
            "--policy",
            "one-second",
        ],
    )
    .await;
    assert_eq!(code, exit::ERROR);
    assert!(err.contains("--ttl"), "{err}");

    let (code, out, err) = cli(
        &conn,
        &[
            "migrate",
            "events",
            "--from",
            "raw",
            "--to",
            "s",
            "--policy",
            "one-second",
            "--ttl",
            "1h",
        ],
    )
    .await;
    assert_eq!(code, exit::OK, "{out}{err}");
    assert!(out.contains("copied:   1 rows, 1 cells"), "{out}");
    assert!(
        out.contains("skipped:  1 cells already expired (1 rows entirely)"),
        "{out}"
    );
    let target = family_only(&raw(&conn, "events").await, "s");
    let expiry = now - 60_000_000 + 3_600_000_000;
    assert_eq!(target.keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(target["a"][0], ("s:url".to_owned(), expiry, b"/a".to_vec()));

    // The target already has a policy: migrating into it under another is refused.
    let (code, _, err) = cli(
        &conn,
        &[
            "migrate",
            "events",
            "--from",
            "raw",
            "--to",
            "s",
            "--policy",
            "default=2d",
        ],
    )
    .await;
    assert_eq!(code, exit::ERROR);
    assert!(err.contains("apply the policy to it first"), "{err}");
}

/// The target row of a migration, read through a struct.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "events", family = "ttl")]
#[ttl(default = "2d")]
struct Migrated {
    #[bigtable(key)]
    id: String,
    url: String,
    user: String,
}

/// A row whose `url` was written five days ago and `user` today, migrated
/// under a 2-day default with a 1-day TTL: by default it gets one expiry
/// (the newest write's) and reads back whole through a struct; per cell the
/// old `url` is skipped as expired. Both runs verify their counts.
#[tokio::test]
async fn migrate_gives_a_row_written_over_time_one_expiry_by_default() {
    let now = now_ms();
    for (expiry, copied) in [
        (None, "1 rows, 2 cells"),
        (Some("per-cell"), "1 rows, 1 cells"),
    ] {
        let conn = connection();
        table(&conn, "events", &["raw"], TimeDelta::days(3650)).await;
        write(
            &conn,
            "events",
            "mixed",
            &[
                ("raw", "url", now - 5 * 86_400_000_000, b"/home"),
                ("raw", "user", now - 60_000_000, b"ann"),
            ],
        )
        .await;
        // The audit sees the row whose columns would expire 5 days apart.
        let (_, out, _) = cli(
            &conn,
            &["audit", "events", "-f", "raw", "-p", "default=2d", "--json"],
        )
        .await;
        let audit = json(&out);
        assert_eq!(audit["rows_mixed_expiry"], 1, "{audit:#}");
        assert_eq!(
            audit["widest_expiry_spread_ms"],
            5 * 86_400_000 - 60_000,
            "{audit:#}"
        );
        let mut args = vec![
            "migrate",
            "events",
            "--from",
            "raw",
            "--to",
            "ttl",
            "--policy",
            "default=2d",
            "--ttl",
            "1d",
        ];
        args.extend(expiry.map(|e| ["--expiry", e]).into_iter().flatten());
        let (code, out, err) = cli(&conn, &args).await;
        assert_eq!(code, exit::OK, "{expiry:?}: {out}{err}");
        assert!(out.contains(&format!("copied:   {copied}")), "{out}");
        assert!(out.contains("target 1 rows"), "{out}");

        let table = Table::<Migrated>::new(conn);
        let read = table.get(&"mixed".to_owned()).await;
        if expiry.is_none() {
            let row = read.unwrap().expect("the migrated row");
            assert_eq!((row.url.as_str(), row.user.as_str()), ("/home", "ann"));
            // Both columns live a day from the newest write.
            let day_after = now - 60_000_000 + 86_400_000_000;
            assert_eq!(row.expires_at.timestamp_micros(), day_after);
        } else {
            // Per cell, `url` (expired) was not copied, and nothing in
            // the target shows it ever was there: the row is incomplete,
            // an error naming the column, never silently absent.
            assert!(
                matches!(
                    &read,
                    Err(bigtable_ttl::Error::Decode(e))
                        if e.source == bigtable_ttl::CodecError::Missing && e.column == "ttl:url"
                ),
                "{read:?}"
            );
        }
    }
}

/// A row to write: its key and its cells (family, column, timestamp, value).
type RowCells = (String, Vec<(&'static str, &'static str, i64, Vec<u8>)>);

/// Many rows, in `MutateRows` requests of 500.
async fn write_many(conn: &Connection, table: &str, rows: &[RowCells]) {
    use bigtable_ttl::data::{Entry, Mutation};
    let raw = RawTable::new(conn, table);
    for chunk in rows.chunks(500) {
        let entries = chunk
            .iter()
            .map(|(key, cells)| {
                Entry::new(
                    key.as_bytes().to_vec(),
                    cells
                        .iter()
                        .map(|(family, column, ts, value)| {
                            Mutation::set_cell(
                                (*family).to_owned(),
                                column.as_bytes().to_vec(),
                                *ts,
                                value.clone(),
                            )
                        })
                        .collect(),
                )
            })
            .collect();
        for answer in raw.mutate_rows(entries).await.unwrap() {
            if let Err(entry) = answer {
                panic!("row {} of {table} not written: {entry:?}", entry.index);
            }
        }
    }
}

/// The `bigtable-ttl` binary against `conn`'s instance, as a process.
fn command(conn: &Connection, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_bigtable-ttl"));
    command
        .args(["--project", conn.project(), "--instance", conn.instance()])
        .args(["--emulator-host", &emulator_host()])
        .args(args)
        .env_remove("BIGTABLE_EMULATOR_HOST")
        .stdin(std::process::Stdio::null());
    command
}

/// Run `bigtable-ttl ARGS…` as a process to its end: (status, stdout, stderr).
fn run(conn: &Connection, args: &[&str]) -> (i32, String, String) {
    let output = command(conn, args).output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// Four shard processes of `migrate` started at once on one emulator copy a
/// table whose rows were written at different times (some rows over two
/// writes); one shard is killed after its first batch and resumed, after
/// the shared cut was deleted (it keeps its range from its checkpoint).
/// The merged verification equals a single process's, `cbt` counts the
/// rows, and a full comparison finds every live row copied once, as one
/// version per column, none missed, none of the expired ones.
#[tokio::test]
async fn four_shard_processes_migrate_a_table_once_and_their_reports_merge() {
    const ROWS: usize = 4_000;
    let conn = connection();
    table(&conn, "events", &["raw"], TimeDelta::days(3650)).await;
    // Ages of whole hours and a half, 0.5 h to 71.5 h: under a two-day
    // TTL rows older than 48 h are expired, and no expiry (nor bucket
    // boundary) is within half an hour of the runs below.
    let now = now_ms();
    let hour = 3_600_000_000_i64;
    let rows: Vec<RowCells> = (0..ROWS)
        .map(|i| {
            let age = (i64::try_from(i * 37 % 72).unwrap() * 2 + 1) * hour / 2;
            let ts = now - age;
            let mut cells = vec![("raw", "url", ts, format!("/page/{i}").into_bytes())];
            // Every third row was built by two writes, an hour apart.
            let user_ts = if i % 3 == 0 { ts - hour } else { ts };
            cells.push(("raw", "user", user_ts, format!("u{}", i % 10).into_bytes()));
            (format!("ev-{i:05}"), cells)
        })
        .collect();
    write_many(&conn, "events", &rows).await;

    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let cut = path("cut.json");
    let shard_args = |i: usize| -> Vec<String> {
        [
            "migrate",
            "events",
            "--from",
            "raw",
            "--to",
            "ttl",
            "--policy",
            "default=2d",
            "--json",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .chain([
            // Shard 1, to be killed half-way, writes a row per batch: a
            // thousand batches leave time to see its first checkpoint and
            // kill it before it ends.
            "--batch-rows".to_owned(),
            if i == 1 { "1" } else { "20" }.to_owned(),
            "--shard".to_owned(),
            format!("{i}/4"),
            "--cut".to_owned(),
            cut.clone(),
            "--checkpoint".to_owned(),
            path(&format!("shard-{i}.json")),
        ])
        .collect()
    };
    let start = |i: usize, extra: &[&str]| {
        let mut args = shard_args(i);
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        command(&conn, &args)
            .stdout(std::fs::File::create(path(&format!("report-{i}.json"))).unwrap())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut shards: Vec<std::process::Child> = (0..4).map(|i| start(i, &[])).collect();

    // Shard 1 is killed once its first batch is checkpointed.
    let killed = path("shard-1.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(&killed) {
            if let Ok(cp) = serde_json::from_str::<Value>(&text) {
                if cp["rows_read"].as_u64() > Some(0) {
                    break;
                }
            }
        }
        assert!(
            shards[1].try_wait().unwrap().is_none(),
            "shard 1 ended before it could be killed"
        );
        assert!(
            Instant::now() < deadline,
            "shard 1 wrote no checkpoint in 60 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    shards[1].kill().unwrap();
    let status = shards[1].wait().unwrap();
    assert!(!status.success(), "{status}");
    let interrupted = json(&std::fs::read_to_string(&killed).unwrap());
    assert_eq!(interrupted["done"], false, "{interrupted:#}");

    for (i, shard) in shards.iter_mut().enumerate().filter(|(i, _)| *i != 1) {
        let out = shard.wait_with_output_ref();
        assert_eq!(out.0, 0, "shard {i}: {}", out.1);
    }
    let shared_cut = json(&std::fs::read_to_string(&cut).unwrap());
    let parts = shared_cut["parts"].as_array().unwrap().clone();
    assert_eq!(parts.len(), 4);
    assert_eq!(interrupted["shard"], parts[1], "the killed shard's range");

    // Resumed without the shared cut: the checkpoint holds its range.
    std::fs::remove_file(&cut).unwrap();
    let mut resumed = start(1, &["--resume"]);
    let out = resumed.wait_with_output_ref();
    assert_eq!(out.0, 0, "resumed shard 1: {}", out.1);
    let reports: Vec<Value> = (0..4)
        .map(|i| json(&std::fs::read_to_string(path(&format!("report-{i}.json"))).unwrap()))
        .collect();
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(r["status"], "done", "shard {i}: {r:#}");
        assert_eq!(r["shard"], parts[i], "shard {i}");
        assert_eq!(r["verification"]["matches"], true, "shard {i}: {r:#}");
    }
    assert!(
        reports[1]["rows_read"].as_u64().unwrap() > interrupted["rows_read"].as_u64().unwrap(),
        "the resumed shard went on from its checkpoint"
    );

    // The shards' verifications merged equal one process's.
    let report_paths: Vec<String> = (0..4).map(|i| path(&format!("report-{i}.json"))).collect();
    let mut merge = vec![
        "migrate",
        "events",
        "--from",
        "raw",
        "--to",
        "ttl",
        "--policy",
        "default=2d",
        "--verify",
        "--json",
        "--merge",
    ];
    merge.extend(report_paths.iter().map(String::as_str));
    let (code, out, err) = run(&conn, &merge);
    assert_eq!(code, exit::OK, "{out}{err}");
    let merged = json(&out);
    let (code, out, err) = run(
        &conn,
        &[
            "migrate",
            "events",
            "--from",
            "raw",
            "--to",
            "ttl",
            "--policy",
            "default=2d",
            "--verify",
            "--json",
        ],
    );
    assert_eq!(code, exit::OK, "{out}{err}");
    let single = json(&out);
    assert_eq!(merged["verification"], single["verification"]);
    assert_eq!(merged["verification"]["source_rows"], ROWS);
    // Every row read once: the shards' rows add up to the table's
    // (the killed shard's first batch counted once: its resume continues
    // the checkpoint's totals).
    assert_eq!(merged["rows_read"], ROWS, "{merged:#}");

    // What is really stored: every source row once, the live ones copied
    // once, each column as one version at the row's newest write.
    let stored = raw(&conn, "events").await;
    let target = family_only(&stored, "ttl");
    let expected_rows = single["verification"]["expected_rows"].as_u64().unwrap();
    assert_eq!(target.len() as u64, expected_rows);
    assert!(expected_rows > 0 && expected_rows < ROWS as u64);
    let listed = cbt(&conn, &["count", "events"]);
    assert!(listed.contains(&ROWS.to_string()), "cbt count: {listed}");
    let target_listing = cbt(&conn, &["read", "events", "columns=ttl:url"]);
    assert_eq!(
        target_listing.matches("\nev-").count() + usize::from(target_listing.starts_with("ev-")),
        target.len(),
        "cbt's rows with ttl:url"
    );
    let cutoff = Utc::now().timestamp_micros() - 2 * 24 * hour;
    for (key, cells) in &rows {
        let newest = cells.iter().map(|c| c.2).max().unwrap();
        let copied = target.get(key);
        if newest <= cutoff {
            assert!(
                copied.is_none(),
                "{key} had expired, yet copied: {copied:?}"
            );
            continue;
        }
        let copied = copied.unwrap_or_else(|| panic!("{key} missed"));
        let shadow = DateTime::<Utc>::from_timestamp_micros(newest)
            .unwrap()
            .encode()
            .unwrap();
        let mut expected = vec![
            ("ttl:url".to_owned(), newest, cells[0].3.clone()),
            ("ttl:user".to_owned(), newest, cells[1].3.clone()),
            ("ttl:written_at".to_owned(), newest, shadow),
        ];
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(copied, &expected, "row {key}");
    }
    assert_eq!(
        family_only(&stored, "raw").len(),
        ROWS,
        "the source is untouched"
    );
}

/// Waiting for a child whose standard error is piped, by reference.
trait WaitOutput {
    /// (exit status, standard error).
    fn wait_with_output_ref(&mut self) -> (i32, String);
}

impl WaitOutput for std::process::Child {
    fn wait_with_output_ref(&mut self) -> (i32, String) {
        use std::io::Read as _;
        let mut err = String::new();
        if let Some(mut stderr) = self.stderr.take() {
            let _ = stderr.read_to_string(&mut err);
        }
        let status = self.wait().unwrap();
        (status.code().unwrap_or(-1), err)
    }
}

/// When the cells expire: `audit` and `inspect` of a family draw the same
/// buckets (under the live rule and the proposed policy) in `--json`, as
/// text and as an SVG file; two audit shards merged equal one whole audit.
#[tokio::test]
async fn audit_and_inspect_draw_when_cells_expire_and_shard_audits_merge() {
    let conn = connection();
    table(&conn, "events", &["raw"], TimeDelta::days(3650)).await;
    let now = now_ms();
    let hour = 3_600_000_000_i64;
    // Under a two-day policy: 3 d old expired, 47.5 h within the hour,
    // 30 h within a day, 1 h within a week (47 h left).
    let ages = [(72, 2), (47, 3), (30, 4), (1, 5)];
    let mut rows = Vec::new();
    for (age_hours, count) in ages {
        for k in 0..count {
            let ts = now - age_hours * hour - if age_hours == 47 { hour / 2 } else { 0 };
            rows.push((
                format!("r{age_hours:02}-{k}"),
                vec![("raw", "url", ts, b"/x".to_vec())],
            ));
        }
    }
    write_many(&conn, "events", &rows).await;
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("expiry.svg");
    let svg = svg.to_str().unwrap();

    let audit_args = ["audit", "events", "-f", "raw", "-p", "default=2d"];
    let mut args = audit_args.to_vec();
    args.extend(["--json", "--svg", svg]);
    let (code, out, err) = cli(&conn, &args).await;
    assert_eq!(code, exit::WOULD_DELETE, "{out}{err}");
    let whole = json(&out);
    let proposed = &whole["expiry"]["proposed"];
    assert_eq!(proposed["policy"], "default=2d");
    let buckets = &proposed["buckets"];
    assert_eq!(
        [
            &buckets["expired"],
            &buckets["within_hour"],
            &buckets["within_day"],
            &buckets["within_week"],
            &buckets["later"],
            &buckets["never"],
        ],
        [2, 3, 4, 5, 0, 0]
    );
    let current = &whole["expiry"]["current"];
    assert_eq!(current["policy"], "default=3650d");
    assert_eq!(current["buckets"]["later"], 14);
    // Per day over the two-day horizon: today, tomorrow, the day after.
    let days = proposed["days"].as_array().unwrap();
    assert!(days.len() >= 3, "{days:?}");
    let per_day: u64 = days.iter().map(|d| d["cells"].as_u64().unwrap()).sum();
    assert_eq!(per_day, 12, "every cell not yet expired, on its day");
    let drawn = std::fs::read_to_string(svg).unwrap();
    assert!(drawn.starts_with("<svg"), "{}", &drawn[..80]);
    for text in [
        "When the cells of `events`, family `raw`, expire",
        "proposed policy: default=2d (max_age = 2d)",
        "live rule: default=3650d",
        "expired",
        "cells expiring per day (UTC)",
    ] {
        assert!(drawn.contains(text), "the SVG lacks {text:?}");
    }

    // On a terminal: the buckets as a table, the days as bars.
    let (_, text, _) = cli(&conn, &audit_args).await;
    assert!(text.contains("when the cells expire"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("within a day") && l.ends_with(" 4")),
        "{text}"
    );
    assert!(
        text.contains("cells expiring per day (UTC), proposed policy"),
        "{text}"
    );
    assert!(text.contains('█'), "{text}");

    // Two shards of one cut, merged: the whole audit's counts.
    let cut = dir.path().join("cut.json");
    let mut reports = Vec::new();
    for i in 0..2 {
        let shard = format!("{i}/2");
        let mut args = audit_args.to_vec();
        args.extend(["--json", "--shard", &shard, "--cut", cut.to_str().unwrap()]);
        let (_, out, err) = cli(&conn, &args).await;
        let report = json(&out);
        assert_eq!(report["shard"]["index"], i, "{err}");
        let path = dir.path().join(format!("audit-{i}.json"));
        std::fs::write(&path, out).unwrap();
        reports.push(path.to_str().unwrap().to_owned());
    }
    let mut args = vec!["audit", "--json", "--merge"];
    args.extend(reports.iter().map(String::as_str));
    let (code, out, err) = cli(&conn, &args).await;
    assert_eq!(code, exit::WOULD_DELETE, "{out}{err}");
    let merged = json(&out);
    for field in [
        "rows",
        "cells",
        "cells_deleted",
        "rows_deleted",
        "oldest_micros",
        "newest_micros",
    ] {
        assert_eq!(merged[field], whole[field], "{field}");
    }
    assert_eq!(merged["expiry"]["proposed"]["buckets"], *buckets);
    assert_eq!(merged["expiry"]["current"]["buckets"], current["buckets"]);
    assert_eq!(merged.get("shard"), None, "the whole table");
    // One shard alone does not make the table.
    let (code, _, err) = cli(&conn, &["audit", "--merge", &reports[0]]).await;
    assert_eq!(code, exit::ERROR);
    assert!(err.contains("missing part 1/2"), "{err}");

    // inspect of the family: the same buckets.
    let (code, out, err) = cli(
        &conn,
        &[
            "inspect",
            "events",
            "-f",
            "raw",
            "-p",
            "default=2d",
            "--json",
        ],
    )
    .await;
    assert_eq!(code, exit::OK, "{out}{err}");
    let inspected = json(&out);
    assert_eq!(inspected["rows"], 14);
    assert_eq!(inspected["expiry"]["proposed"]["buckets"], *buckets);
    assert_eq!(
        inspected["expiry"]["current"]["buckets"],
        current["buckets"]
    );
    let (_, text, _) = cli(&conn, &["inspect", "events", "-f", "raw"]).await;
    assert!(
        text.contains("table `events`, family `raw`: 14 rows, 14 cells"),
        "{text}"
    );
    assert!(text.contains("live rule: default=3650d"), "{text}");
}

/// Progress and time left show on a terminal (a pseudo-terminal from
/// util-linux's `script`), never with `--json`.
#[tokio::test]
async fn progress_shows_on_a_terminal_only() {
    let conn = connection();
    table(&conn, "events", &["raw"], TimeDelta::days(3650)).await;
    let now = now_ms();
    let rows: Vec<RowCells> = (0..300)
        .map(|i| {
            (
                format!("ev-{i:04}"),
                vec![("raw", "url", now, b"/x".to_vec())],
            )
        })
        .collect();
    write_many(&conn, "events", &rows).await;
    let on_terminal = |extra: &str| {
        let line = format!(
            "{} --project {} --instance {} --emulator-host {} migrate events --from raw --to ttl \
             --policy default=2d --batch-rows 1 {extra}",
            env!("CARGO_BIN_EXE_bigtable-ttl"),
            conn.project(),
            conn.instance(),
            emulator_host()
        );
        let output = std::process::Command::new("script")
            .args(["-qefc", &line, "/dev/null"])
            .env("COLUMNS", "160")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("util-linux's `script` (apt-get install bsdutils)");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let shown = on_terminal("");
    assert!(shown.contains("migrating"), "{shown}");
    assert!(shown.contains("rows/s"), "{shown}");
    assert!(shown.contains(" left"), "{shown}");
    assert!(shown.contains("migrated table `events`"), "{shown}");
    let quiet = on_terminal("--json --verify");
    assert!(!quiet.contains("rows/s"), "{quiet}");
    assert!(quiet.contains("\"matches\": true"), "{quiet}");
}

/// A struct whose map lives in family `items`.
#[derive(BigtableRow, Debug)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "30d")]
struct Cart {
    #[bigtable(key)]
    user: String,
    currency: String,
    #[bigtable(map, family = "items")]
    items: BTreeMap<String, u64>,
}

/// Migrating into a map's family is refused with a typed error naming the
/// family and the field, before anything is written (copied columns and
/// their shadow column would read back as map entries).
#[tokio::test]
async fn migrate_refuses_a_maps_family_as_target() {
    let conn = connection();
    table(&conn, "carts", &["raw"], TimeDelta::days(3650)).await;
    let carts = Table::<Cart>::new(conn.clone());
    carts.ensure_schema().await.unwrap();
    write(&conn, "carts", "ann", &[("raw", "sku-1", now_ms(), b"2")]).await;
    let plan = ops::MigratePlan::new(
        "carts",
        "raw",
        "items",
        Policy::default_ttl(TimeDelta::days(30)),
    )
    .with_schema(Cart::SCHEMA);
    let err = ops::migrate(&conn, &plan, None, &Clock::system(), |_| {
        std::ops::ControlFlow::Continue(())
    })
    .await
    .unwrap_err();
    match &err {
        bigtable_ttl::Error::MigrateIntoMap(e) => {
            let bigtable_ttl::error::MigrateIntoMap {
                table,
                family,
                field,
                ..
            } = &**e;
            assert_eq!(
                (table.as_str(), family.as_str(), field.as_str()),
                ("carts", "items", "items")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("family `items`"), "{err}");
    assert!(family_only(&raw(&conn, "carts").await, "items").is_empty());
    // Into the struct's own family it goes.
    let plan = ops::MigratePlan::new(
        "carts",
        "raw",
        "c",
        Policy::default_ttl(TimeDelta::days(30)),
    )
    .with_schema(Cart::SCHEMA);
    let done = ops::migrate(&conn, &plan, None, &Clock::system(), |_| {
        std::ops::ControlFlow::Continue(())
    })
    .await
    .unwrap();
    assert!(matches!(done, ops::MigrateStatus::Done(_)), "{done:?}");
}

/// A checkpoint or a cut records the instance it was taken in, and a
/// checkpoint's last row must lie in its part: a resume connected to
/// another instance, or from a checkpoint whose last key is before or
/// past its part, is refused before anything is read or written, saying
/// what to do (it used to copy the part twice, fail with Bigtable's
/// `start_key_open must be less than end_key_open`, or fail the final
/// check and tell to run again).
#[tokio::test]
async fn migrate_refuses_checkpoints_and_cuts_of_another_instance_or_part() {
    let conn = connection();
    let elsewhere = connection();
    table(&conn, "moved", &["raw"], TimeDelta::days(3650)).await;
    table(&elsewhere, "moved", &["raw"], TimeDelta::days(3650)).await;
    let now = now_ms();
    for i in 0..20 {
        write(
            &conn,
            "moved",
            &format!("ev-{i:02}"),
            &[("raw", "url", now, b"/")],
        )
        .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (cut, checkpoint) = (path("cut.json"), path("cp.json"));
    // Three parts: ev-00..ev-04, ev-05..ev-14, ev-15.. (shard 1 in the middle).
    let part = |index: usize, start: &str, end: Option<&str>| {
        serde_json::json!({
            "index": index, "count": 3, "start_hex": hex(start.as_bytes()),
            "end_hex": end.map(|e| hex(e.as_bytes())),
        })
    };
    let cut_doc = serde_json::json!({
        "project": conn.project(), "instance": conn.instance(), "table": "moved", "count": 3,
        "parts": [part(0, "", Some("ev-05")), part(1, "ev-05", Some("ev-15")), part(2, "ev-15", None)],
    });
    std::fs::write(&cut, cut_doc.to_string()).unwrap();
    let args = |extra: &[&str]| {
        let mut args = vec![
            "migrate",
            "moved",
            "--from",
            "raw",
            "--to",
            "ttl",
            "--policy",
            "default=2d",
            "--shard",
            "1/3",
            "--cut",
            &cut,
            "--checkpoint",
            &checkpoint,
            "--batch-rows",
            "2",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    let run = |on: Connection, extra: &'static [&'static str]| {
        let args = args(extra);
        async move { cli(&on, &args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };
    let (code, out, err) = run(conn.clone(), &["--stop-after", "2"]).await;
    assert_eq!(code, exit::STOPPED, "{out}{err}");
    let saved = json(&std::fs::read_to_string(&checkpoint).unwrap());
    assert_eq!(saved["last_row_key"], "ev-06");
    assert_eq!(saved["project"], conn.project());
    assert_eq!(saved["instance"], conn.instance());

    // The cut, then the checkpoint, of another instance.
    let (code, _, err) = cli(
        &elsewhere,
        &[
            "audit",
            "moved",
            "-f",
            "raw",
            "-p",
            "default=2d",
            "--shard",
            "1/3",
            "--cut",
            &cut,
        ],
    )
    .await;
    assert_eq!(code, exit::ERROR, "{err}");
    assert!(
        err.contains(&format!(
            "cut in `projects/{}/instances/{}`",
            conn.project(),
            conn.instance()
        )) && err.contains("a cut file of their own"),
        "{err}"
    );
    let (code, _, err) = run(elsewhere.clone(), &["--resume"]).await;
    assert_eq!(code, exit::ERROR, "{err}");
    assert!(
        err.contains(&format!(
            "taken in `projects/{}/instances/{}`",
            conn.project(),
            conn.instance()
        )) && err.contains("--instance"),
        "{err}"
    );

    // A last key before the part, then past it.
    for (key, said) in [("ev-02", "before"), ("ev-17", "past")] {
        let mut edited = saved.clone();
        edited["last_row_key_hex"] = hex(key.as_bytes()).into();
        std::fs::write(&checkpoint, edited.to_string()).unwrap();
        let (code, _, err) = run(conn.clone(), &["--resume"]).await;
        assert_eq!(code, exit::ERROR, "{err}");
        assert!(
            err.contains(&format!("last row \"{key}\" lies {said} its part 1/3"))
                && err.contains("without --resume"),
            "{err}"
        );
    }
    assert_eq!(family_only(&raw(&elsewhere, "moved").await, "ttl").len(), 0);

    // The checkpoint as written resumes, and the part is copied once.
    std::fs::write(&checkpoint, saved.to_string()).unwrap();
    let (code, out, err) = run(conn.clone(), &["--resume", "--json"]).await;
    assert_eq!(code, exit::OK, "{out}{err}");
    let done = json(&out);
    assert_eq!(done["rows_read"], 10);
    assert_eq!(done["verification"]["matches"], true);
}
