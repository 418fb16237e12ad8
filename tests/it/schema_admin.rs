//! Schema management against Google's Bigtable emulator: `ensure_schema`,
//! `verify_schema` and `live_rules`, checked through the admin API and with
//! `cbt`. Each test runs on its own instance of the shared emulator.

use crate::support;

use std::time::{Duration, Instant};

use bigtable_ttl::admin::{
    describe_rule, ensure_schema, gc_rule, live_rules, rule_matches, verify_schema, EnsureOptions,
};
use bigtable_ttl::data::{Mutation, RawTable};
use bigtable_ttl::{Connection, Error, Policy, Schema};
use chrono::{TimeDelta, Utc};
use support::{cbt, connection};

/// Sessions under the one-second policy.
static ONE_SECOND: Schema = Schema {
    table: "sessions",
    policy: Policy::CellExpiry,
    families: &["s"],
    owns_family: false,
    columns: &[],
    maps: &[],
    written_at: None,
    marker: b"\0\0Row",
    key_fields: &["id"],
    key_separator: "",
};

/// Clicks under a two-day default, in two families.
static TWO_DAYS: Schema = Schema {
    table: "clicks",
    policy: Policy::DefaultTtl {
        ttl: TimeDelta::days(2),
    },
    families: &["c", "d"],
    owns_family: false,
    columns: &[],
    maps: &[],
    written_at: None,
    marker: b"\0\0Row",
    key_fields: &["id"],
    key_separator: "",
};

/// The same table as `TWO_DAYS`, with a family the live table lacks.
static TWO_DAYS_PLUS: Schema = Schema {
    families: &["c", "d", "x"],
    owns_family: false,
    ..TWO_DAYS
};

/// Family `s` of table `sessions` under two days: data written the ordinary way.
static SESSIONS_TWO_DAYS: Schema = Schema {
    policy: Policy::DefaultTtl {
        ttl: TimeDelta::days(2),
    },
    ..ONE_SECOND
};

/// The one-second schema of `sessions` with one more family, to show that a
/// refused call creates nothing either.
static ONE_SECOND_PLUS: Schema = Schema {
    families: &["s", "t"],
    owns_family: false,
    ..ONE_SECOND
};

/// The GC policy column of family `family` in `cbt ls TABLE`.
fn cbt_policy(conn: &Connection, table: &str, family: &str) -> Option<String> {
    let listing = cbt(conn, &["ls", table]);
    listing.lines().find_map(|line| {
        let mut columns = line.split('\t').filter(|c| !c.is_empty());
        (columns.next() == Some(family)).then(|| {
            // Family, policy, value type: the policy is everything between.
            let rest: Vec<&str> = columns.collect();
            rest[..rest.len().saturating_sub(1)].join(" ")
        })
    })
}

fn now_millis() -> i64 {
    let micros = Utc::now().timestamp_micros();
    micros - micros % 1_000
}

async fn write_raw(conn: &Connection, table: &str, row: &str, family: &str, column: &str, ts: i64) {
    let set = Mutation::set_cell(family, column, ts, "v");
    RawTable::new(conn, table)
        .mutate_row(row, vec![set])
        .await
        .unwrap_or_else(|e| panic!("raw write to {table}/{row}: {e}"));
}

/// Every stored cell of `row` as `(family:qualifier, timestamp)`, unfiltered.
async fn raw_cells(conn: &Connection, table: &str, row: &str) -> Vec<(String, i64)> {
    RawTable::new(conn, table)
        .read_row(row, None)
        .await
        .unwrap_or_else(|e| panic!("raw read of {table}/{row}: {e}"))
        .map(|row| row.cells)
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            (
                format!("{}:{}", c.family, String::from_utf8_lossy(&c.qualifier)),
                c.timestamp_micros,
            )
        })
        .collect()
}

#[tokio::test]
async fn ensure_creates_a_one_second_table() {
    let conn = connection();
    let report = ensure_schema(&conn, "sessions", &ONE_SECOND, EnsureOptions::default())
        .await
        .unwrap();
    assert!(report.table_created);
    assert_eq!(report.families.len(), 1);
    assert_eq!(report.families[0].family, "s");
    assert_eq!(report.families[0].before, None);
    assert_eq!(
        report.to_string(),
        "table `sessions`: created\n  family `s`: created with max_age = 1s"
    );

    let live = live_rules(&conn, "sessions").await.unwrap();
    assert_eq!(live.keys().collect::<Vec<_>>(), ["s"]);
    assert!(rule_matches(&live["s"], &gc_rule(TimeDelta::seconds(1))));
    assert_eq!(describe_rule(&live["s"]), "max_age = 1s");
    // cbt writes ages under a minute in microseconds.
    assert_eq!(
        cbt_policy(&conn, "sessions", "s").as_deref(),
        Some("age() > 1000000")
    );
}

#[tokio::test]
async fn ensure_creates_two_day_families() {
    let conn = connection();
    let report = ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    assert!(report.table_created);
    let created: Vec<_> = report.families.iter().map(|c| c.family.as_str()).collect();
    assert_eq!(created, ["c", "d"]);

    let live = live_rules(&conn, "clicks").await.unwrap();
    assert_eq!(live.keys().collect::<Vec<_>>(), ["c", "d"]);
    for family in ["c", "d"] {
        assert_eq!(describe_rule(&live[family]), "max_age = 2d");
        assert_eq!(
            cbt_policy(&conn, "clicks", family).as_deref(),
            Some("age() > 2d"),
            "family {family}"
        );
    }
}

#[tokio::test]
async fn ensure_is_idempotent() {
    let conn = connection();
    let first = ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    assert!(!first.is_unchanged());
    let second = ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    assert!(second.is_unchanged(), "{second}");
    assert_eq!(second.to_string(), "table `clicks`: up to date");
}

#[tokio::test]
async fn ensure_adds_a_missing_family_to_an_existing_table() {
    let conn = connection();
    ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    let report = ensure_schema(&conn, "clicks", &TWO_DAYS_PLUS, EnsureOptions::default())
        .await
        .unwrap();
    assert!(!report.table_created);
    assert_eq!(
        report.to_string(),
        "table `clicks`: updated\n  family `x`: created with max_age = 2d"
    );
    verify_schema(&conn, "clicks", &TWO_DAYS_PLUS)
        .await
        .unwrap();
}

#[tokio::test]
async fn verify_reports_drift_made_by_hand_and_ensure_repairs_it() {
    let conn = connection();
    ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    verify_schema(&conn, "clicks", &TWO_DAYS).await.unwrap();

    cbt(&conn, &["setgcpolicy", "clicks", "d", "maxage=1h"]);
    match verify_schema(&conn, "clicks", &TWO_DAYS).await {
        Err(Error::SchemaDrift(e)) => {
            let bigtable_ttl::error::SchemaDrift {
                table,
                family,
                expected,
                live,
                ..
            } = *e;
            assert_eq!(table, "clicks");
            assert_eq!(family, "d");
            assert_eq!(expected, "max_age = 2d");
            assert_eq!(live, "max_age = 1h");
        }
        other => panic!("expected drift on family d, got {other:?}"),
    }

    cbt(
        &conn,
        &["setgcpolicy", "clicks", "c", "maxage=2d or maxversions=1"],
    );
    let err = verify_schema(&conn, "clicks", &TWO_DAYS).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "schema drift in table `clicks`, family `c`: expected max_age = 2d, \
         live union(max_age = 2d, max_versions = 1); run ensure_schema or fix the struct"
    );

    let report = ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    assert_eq!(
        report.to_string(),
        "table `clicks`: updated\n  family `c`: union(max_age = 2d, max_versions = 1) -> max_age = 2d\n  family `d`: max_age = 1h -> max_age = 2d"
    );
    verify_schema(&conn, "clicks", &TWO_DAYS).await.unwrap();
    assert_eq!(
        cbt_policy(&conn, "clicks", "d").as_deref(),
        Some("age() > 2d")
    );
}

#[tokio::test]
async fn a_family_without_a_rule_is_drift() {
    let conn = connection();
    ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    // A family created by hand keeps every cell: no rule at all.
    cbt(&conn, &["createfamily", "clicks", "x"]);
    let err = verify_schema(&conn, "clicks", &TWO_DAYS_PLUS)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::SchemaDrift(e) if e.family == "x" && e.live == "none"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_missing_family_is_drift_with_live_missing() {
    let conn = connection();
    ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    match verify_schema(&conn, "clicks", &TWO_DAYS_PLUS).await {
        Err(Error::SchemaDrift(e)) => {
            let bigtable_ttl::error::SchemaDrift {
                family,
                expected,
                live,
                ..
            } = *e;
            assert_eq!(family, "x");
            assert_eq!(expected, "max_age = 2d");
            assert_eq!(live, "missing");
        }
        other => panic!("expected drift on family x, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_table_is_table_not_found() {
    let conn = connection();
    let err = verify_schema(&conn, "clicks", &TWO_DAYS).await.unwrap_err();
    assert!(
        matches!(&err, Error::TableNotFound(e) if e.table == "clicks"),
        "{err:?}"
    );
    let err = live_rules(&conn, "clicks").await.unwrap_err();
    assert!(matches!(err, Error::TableNotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn switching_a_family_with_cells_to_one_second_is_refused_unless_forced() {
    let conn = connection();
    ensure_schema(
        &conn,
        "sessions",
        &SESSIONS_TWO_DAYS,
        EnsureOptions::default(),
    )
    .await
    .unwrap();
    write_raw(&conn, "sessions", "row-1", "s", "user", now_millis()).await;

    let err = ensure_schema(
        &conn,
        "sessions",
        &ONE_SECOND_PLUS,
        EnsureOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, Error::WouldDeleteData(e) if e.table == "sessions" && e.family == "s"),
        "{err:?}"
    );
    // Nothing changed: not the rule, and the missing family was not created.
    let live = live_rules(&conn, "sessions").await.unwrap();
    assert_eq!(live.keys().collect::<Vec<_>>(), ["s"]);
    assert_eq!(describe_rule(&live["s"]), "max_age = 2d");
    assert_eq!(
        cbt_policy(&conn, "sessions", "s").as_deref(),
        Some("age() > 2d")
    );
    assert_eq!(raw_cells(&conn, "sessions", "row-1").await.len(), 1);

    let report = ensure_schema(
        &conn,
        "sessions",
        &ONE_SECOND_PLUS,
        EnsureOptions::new().with_force_one_second(true),
    )
    .await
    .unwrap();
    assert_eq!(
        report.to_string(),
        "table `sessions`: updated\n  family `s`: max_age = 2d -> max_age = 1s\n  family `t`: created with max_age = 1s"
    );
    verify_schema(&conn, "sessions", &ONE_SECOND_PLUS)
        .await
        .unwrap();
    assert_eq!(
        cbt_policy(&conn, "sessions", "s").as_deref(),
        Some("age() > 1000000")
    );
}

#[tokio::test]
async fn switching_an_empty_family_to_one_second_needs_no_force() {
    let conn = connection();
    ensure_schema(
        &conn,
        "sessions",
        &SESSIONS_TWO_DAYS,
        EnsureOptions::default(),
    )
    .await
    .unwrap();
    // Cells in another table do not count.
    ensure_schema(&conn, "clicks", &TWO_DAYS, EnsureOptions::default())
        .await
        .unwrap();
    write_raw(&conn, "clicks", "row-1", "c", "url", now_millis()).await;

    let report = ensure_schema(&conn, "sessions", &ONE_SECOND, EnsureOptions::default())
        .await
        .unwrap();
    assert_eq!(
        report.to_string(),
        "table `sessions`: updated\n  family `s`: max_age = 2d -> max_age = 1s"
    );
}

#[tokio::test]
async fn the_emulator_collects_expired_cells_in_a_family_ensure_created() {
    let conn = connection();
    ensure_schema(&conn, "sessions", &ONE_SECOND, EnsureOptions::default())
        .await
        .unwrap();
    let now = now_millis();
    write_raw(&conn, "sessions", "row-1", "s", "expired", now - 10_000_000).await;
    write_raw(&conn, "sessions", "row-1", "s", "alive", now + 60_000_000).await;

    let deadline = Instant::now() + Duration::from_secs(10);
    let cells = loop {
        let cells = raw_cells(&conn, "sessions", "row-1").await;
        if cells.iter().all(|(column, _)| column != "s:expired") {
            break cells;
        }
        assert!(
            Instant::now() < deadline,
            "the expired cell was not collected within 10 s: {cells:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(cells, [("s:alive".to_owned(), now + 60_000_000)]);
}

/// Eight replicas starting at once on a fresh table: every `ensure_schema`
/// succeeds (one creates the table and the families, the others find them
/// or lose a race and plan again), ten rounds over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_replicas_ensure_the_same_fresh_table_at_once() {
    let first = connection();
    let host = support::emulator_host();
    for round in 0..10 {
        let table = format!("replicas{round}");
        let calls: Vec<_> = (0..8)
            .map(|_| {
                let conn = Connection::emulator(&host, first.project(), first.instance()).unwrap();
                let table = table.clone();
                tokio::spawn(async move {
                    ensure_schema(&conn, &table, &TWO_DAYS_PLUS, EnsureOptions::new()).await
                })
            })
            .collect();
        for call in calls {
            let report = call.await.unwrap();
            assert!(report.is_ok(), "round {round}: {report:?}");
        }
        verify_schema(&first, &table, &TWO_DAYS_PLUS).await.unwrap();
    }
}
