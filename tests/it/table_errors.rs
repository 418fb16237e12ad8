//! `Table<T>` refuses bad writes before sending anything, against Google's
//! Bigtable emulator: after each refusal, an unfiltered read shows the table
//! is still empty. Server-side failures come back as errors naming the table
//! and the row; cells that do not decode, as errors naming table, row and
//! column. Each refusal is checked through `put`, and where it can differ,
//! through `put_all` and the bulk writer too.

use crate::raw_rows::RawRows as _;
use crate::support;

use bigtable_ttl::data;
use bigtable_ttl::{BigtableRow, Clock, Code, Error, Scan, Table};
use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use support::connection;
use support::rows::{Click, Session};

fn session(id: &str, expires_at: DateTime<Utc>) -> Session {
    Session {
        id: id.into(),
        expires_at,
        user: "ann".into(),
    }
}

fn click(id: &str) -> Click {
    support::rows::click(id, "/")
}

async fn assert_empty<T: BigtableRow>(table: &Table<T>) {
    let raw = table.raw_rows(Scan::all()).await.unwrap();
    assert!(raw.is_empty(), "nothing should be written: {raw:?}");
}

#[tokio::test]
async fn one_second_expiry_at_or_before_now_is_refused() {
    let clock = Clock::manual_at_now();
    let table = support::table::<Session>(&clock).await;
    let now = clock.now();
    for at in [
        now,
        now - TimeDelta::seconds(1),
        // Same millisecond: truncated, the expiry is not after now.
        DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap()
            + TimeDelta::microseconds(999),
    ] {
        let err = table.put(&session("s", at)).await.unwrap_err();
        assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err}");
    }
    let err = table
        .put_with(
            session("s", now + TimeDelta::hours(1))
                .mutation()
                .expire_at(now),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err}");
    assert_empty(&table).await;
}

#[tokio::test]
async fn zero_and_negative_ttls_are_refused() {
    let clock = Clock::manual_at_now();
    let table = support::table::<Click>(&clock).await;
    for ttl in [TimeDelta::zero(), TimeDelta::seconds(-5)] {
        let c = click("k");
        let err = table.put_with(c.mutation().ttl(ttl)).await.unwrap_err();
        assert!(matches!(err, Error::NonPositiveTtl { .. }), "{err}");
    }
    let sessions = Table::<Session>::new(table.connection().clone()).with_clock(clock.clone());
    sessions.ensure_schema().await.unwrap();
    let s = session("s", clock.now() + TimeDelta::hours(1));
    let err = sessions
        .put_with(s.mutation().ttl(TimeDelta::milliseconds(-1)))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NonPositiveTtl { .. }), "{err}");
    assert_empty(&table).await;
    assert_empty(&sessions).await;
}

#[tokio::test]
async fn expiries_outside_the_representable_range_are_refused() {
    let clock = Clock::manual_at_now();
    let table = support::table::<Click>(&clock).await;

    let err = table
        .put_with(click("k").mutation().ttl(TimeDelta::MAX))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ExpiryOutOfRange { .. }), "{err}");

    let mut c = click("k");
    c.expires = Some(Utc.with_ymd_and_hms(1960, 1, 1, 0, 0, 0).unwrap());
    let err = table.put(&c).await.unwrap_err();
    assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err}");

    // A clock before the epoch: the cell timestamp would be negative.
    clock.set(Utc.with_ymd_and_hms(1969, 12, 31, 0, 0, 0).unwrap());
    let err = table.put(&click("k")).await.unwrap_err();
    assert!(matches!(err, Error::TimestampBeforeEpoch { .. }), "{err}");
    assert_empty(&table).await;
}

#[tokio::test]
async fn bad_keys_are_refused() {
    let clock = Clock::manual_at_now();
    let table = support::table::<Session>(&clock).await;
    let later = clock.now() + TimeDelta::hours(1);

    let err = table.put(&session("", later)).await.unwrap_err();
    assert!(matches!(err, Error::EmptyRowKey { .. }), "{err}");
    let err = table.get(&String::new()).await.unwrap_err();
    assert!(matches!(err, Error::EmptyRowKey { .. }), "{err}");
    let err = table.delete(&String::new()).await.unwrap_err();
    assert!(matches!(err, Error::EmptyRowKey { .. }), "{err}");

    let long = "x".repeat(4097);
    let err = table.put(&session(&long, later)).await.unwrap_err();
    assert!(
        matches!(&err,
            Error::RowKeyTooLong(e) if e.len == 4097 && e.max == 4096),
        "{err}"
    );
    // 4096 bytes exactly is fine.
    table.put(&session(&long[1..], later)).await.unwrap();
    assert_eq!(table.scan(Scan::all()).await.unwrap().len(), 1);
    table.delete(&long[1..].to_owned()).await.unwrap();
    assert_empty(&table).await;
}

#[tokio::test]
async fn put_all_with_one_bad_row_writes_none() {
    let clock = Clock::manual_at_now();
    let table = support::table::<Session>(&clock).await;
    let now = clock.now();
    let mut rows: Vec<Session> = (0..5)
        .map(|i| session(&format!("s{i}"), now + TimeDelta::hours(1)))
        .collect();
    rows[2].expires_at = now - TimeDelta::minutes(1);
    let err = table.put_all(&rows).await.unwrap_err();
    assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err}");
    assert_empty(&table).await;

    rows[2].expires_at = now + TimeDelta::hours(1);
    rows[2].id = String::new();
    let err = table.put_all(&rows).await.unwrap_err();
    assert!(matches!(err, Error::EmptyRowKey { .. }), "{err}");
    assert_empty(&table).await;

    rows[2].id = "s2".into();
    assert_eq!(table.put_all(&rows).await.unwrap().len(), 5);
    assert_eq!(table.scan(Scan::all()).await.unwrap().len(), 5);
}

#[tokio::test]
async fn server_errors_name_the_table_and_row() {
    let table = Table::<Click>::new(connection()).with_name("missing");
    let err = table.put(&click("k1")).await.unwrap_err();
    match &err {
        Error::Server(e) => {
            let bigtable_ttl::error::Server {
                table,
                row_key,
                code,
                attempts,
                retries_exhausted,
                ..
            } = &**e;
            assert_eq!(table, "missing");
            assert_eq!(row_key.as_deref(), Some(&b"k1"[..]));
            // Final at once: a missing table is not worth retrying.
            assert_eq!(*code, Code::NotFound);
            assert_eq!(*attempts, 1);
            assert!(!retries_exhausted);
        }
        other => panic!("expected a server error, got {other}"),
    }
    assert!(err.to_string().contains("missing"), "{err}");

    // A batch that cannot be written at all is one server error, not a
    // partial write.
    let err = table.put_all(&[click("a"), click("b")]).await.unwrap_err();
    assert!(
        matches!(&err, Error::Server(e) if e.row_key.is_none()),
        "{err}"
    );

    let err = table.get(&"k1".to_owned()).await.unwrap_err();
    match &err {
        Error::Server(e) => {
            let bigtable_ttl::error::Server { row_key, code, .. } = &**e;
            assert_eq!(row_key.as_deref(), Some(&b"k1"[..]));
            assert_eq!(*code, Code::NotFound);
        }
        other => panic!("expected a server error, got {other}"),
    }
    // The same, asked rather than matched.
    assert!(err.is_not_found() && !err.is_retryable() && !err.is_exhausted());
    assert_eq!(
        (err.table(), err.row_key()),
        (Some("missing"), Some(&b"k1"[..]))
    );
    let err = table.scan(Scan::all()).await.unwrap_err();
    assert!(matches!(err, Error::Server { .. }), "{err}");
}

#[tokio::test]
async fn rows_failing_on_the_server_are_reported_not_counted() {
    // The table exists but lacks family `c` for these rows: every entry fails
    // on its own (the emulator answers each with INTERNAL "unknown family"),
    // and none is reported written.
    let conn = connection();
    let sessions = Table::<Session>::new(conn.clone()).with_name("shared");
    sessions.ensure_schema().await.unwrap();
    let clicks = Table::<Click>::new(conn).with_name("shared");
    let err = clicks
        .put_all(&[click("a"), click("b"), click("c")])
        .await
        .unwrap_err();
    match &err {
        Error::PartialWrite(e) => {
            let bigtable_ttl::error::PartialWrite {
                table,
                written,
                failed,
                ..
            } = &**e;
            assert_eq!(table, "shared");
            assert_eq!(*written, 0);
            let keys: Vec<&[u8]> = failed.iter().map(|f| f.row_key.as_slice()).collect();
            assert_eq!(keys, [b"a", b"b", b"c"]);
            // Each row has the server's final answer, not an unknown outcome.
            assert!(
                failed.iter().all(|f| f.code == Some(Code::Internal)),
                "{err}"
            );
        }
        other => panic!("expected a partial write, got {other}"),
    }
    assert_empty(&clicks).await;
}

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "visits", family = "v", key_separator = "#")]
#[ttl(default = "1h")]
struct Visit {
    #[bigtable(key)]
    customer: String,
    #[bigtable(key)]
    seq: u64,
    page: String,
}

/// Three cells that together exceed Bigtable's 256 MiB per row.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "blobs", family = "b")]
#[ttl(default = "1h")]
struct Blob {
    #[bigtable(key)]
    id: String,
    a: Vec<u8>,
    b: Option<Vec<u8>>,
    c: Option<Vec<u8>>,
}

#[tokio::test]
async fn a_separator_inside_a_key_part_is_refused_by_every_write_path() {
    let table = Table::<Visit>::new(connection());
    table.ensure_schema().await.unwrap();
    let bad = Visit {
        customer: "c#3".into(),
        seq: 1,
        page: "/".into(),
    };
    let check = |err: Error| {
        assert!(
            matches!(&err,
                Error::KeySeparatorInPart(e) if e.field == "customer" && e.separator == "#"),
            "{err}"
        );
    };
    check(table.put(&bad).await.unwrap_err());
    check(table.put_all([&bad]).await.unwrap_err());
    let mut writer = table.writer();
    check(writer.send(&bad).await.unwrap_err());
    assert_eq!(writer.finish().await.unwrap().rows_queued, 0);
    assert_empty(&table).await;
}

#[tokio::test]
async fn oversized_values_and_rows_are_refused_before_sending() {
    const MIB: usize = 1024 * 1024;
    let table = Table::<Blob>::new(connection());
    table.ensure_schema().await.unwrap();

    // One cell over 100 MiB.
    let cell = Blob {
        id: "cell".into(),
        a: vec![7; 100 * MIB + 1],
        b: None,
        c: None,
    };
    let err = table.put(&cell).await.unwrap_err();
    assert!(
        matches!(&err, Error::ValueTooLarge(e) if e.field == "a" && e.len == 100 * MIB + 1 && e.max == 100 * MIB),
        "{err}"
    );
    drop(cell);

    // Three cells within the cell limit, over the row limit together.
    let row = Blob {
        id: "row".into(),
        a: vec![1; 90 * MIB],
        b: Some(vec![2; 90 * MIB]),
        c: Some(vec![3; 90 * MIB]),
    };
    let check = |err: Error| {
        assert!(
            matches!(&err, Error::RowTooLarge(e) if e.table == "blobs" && e.row_key == b"row"),
            "{err}"
        );
    };
    check(table.put(&row).await.unwrap_err());
    check(table.put_all([&row]).await.unwrap_err());
    let mut writer = table.writer();
    check(writer.send(&row).await.unwrap_err());
    writer.finish().await.unwrap();
    assert_empty(&table).await;
}

#[tokio::test]
async fn invalid_utf8_read_into_a_string_names_table_row_and_column() {
    // (A cell of the wrong width for an integer field: tests/field_types.rs.)
    let clock = Clock::manual_at_now();
    let table = support::table::<Session>(&clock).await;
    let expires = clock.now() + TimeDelta::hours(1);
    table.put(&session("s1", expires)).await.unwrap();
    // Invalid UTF-8 in `user`, behind the library's back, at the row's timestamp.
    let invalid_user = data::Mutation::set_cell(
        "s",
        b"user".to_vec(),
        expires.timestamp_millis() * 1000,
        vec![b'a', 0xFF, 0xFE],
    );
    bigtable_ttl::data::RawTable::new(table.connection(), table.name())
        .mutate_row("s1", vec![invalid_user])
        .await
        .unwrap();
    for err in [
        table.get(&"s1".to_owned()).await.unwrap_err(),
        table.scan(Scan::all()).await.unwrap_err(),
    ] {
        let message = err.to_string();
        assert!(
            matches!(
                &err,
                Error::Decode(e) if matches!(e.source, bigtable_ttl::CodecError::InvalidUtf8(_)) && e.table == "sessions" && e.row_key == b"s1" && e.column == "s:user"
            ),
            "{message}"
        );
        assert!(
            message.contains("sessions") && message.contains("s1") && message.contains("s:user"),
            "{message}"
        );
    }
}

/// The `Click` of `tests/support/rows.rs` read with `url` as an integer:
/// the same table and column, another codec (a version of it: its marker).
#[derive(Debug, BigtableRow)]
#[bigtable(table = "clicks", family = "c", marker = "Click")]
#[ttl(default = "2d", written_at)]
struct ClickUrlAsNumber {
    #[bigtable(key)]
    id: String,
    url: i64,
}

#[tokio::test]
async fn errors_from_a_renamed_handle_name_the_handle_s_table() {
    let clock = Clock::manual_at_now();
    let conn = connection();
    let staging = Table::<Click>::new(conn.clone())
        .with_name("staging")
        .with_clock(clock.clone());
    staging.ensure_schema().await.unwrap();
    staging.put(&click("k1")).await.unwrap();
    let names_staging = |what: &str, err: &Error| {
        let message = err.to_string();
        assert!(
            message.contains("`staging`") && !message.contains("`clicks`"),
            "{what}: {message}"
        );
    };

    // A cell that does not decode into the field: get, scan, and the
    // resolve-on-missing path all name the handle's table.
    let as_number = Table::<ClickUrlAsNumber>::new(support::connection_to(&conn))
        .with_name("staging")
        .with_clock(clock.clone());
    for err in [
        as_number.get("k1").await.unwrap_err(),
        as_number.scan(Scan::all()).await.unwrap_err(),
    ] {
        assert!(
            matches!(&err, Error::Decode(e) if e.table == "staging" && e.column == "c:url"),
            "{err:?}"
        );
        names_staging("decode", &err);
    }

    // Key errors, on reads and on writes.
    let err = staging.get("").await.unwrap_err();
    assert!(
        matches!(&err, Error::EmptyRowKey(e) if e.table == "staging"),
        "{err:?}"
    );
    names_staging("empty key", &err);
    let err = staging.delete("").await.unwrap_err();
    names_staging("empty key on delete", &err);
    let err = staging.put(&click(&"k".repeat(5_000))).await.unwrap_err();
    assert!(
        matches!(&err, Error::RowKeyTooLong(e) if e.table == "staging"),
        "{err:?}"
    );
    names_staging("long key", &err);
    let err = staging
        .put_all(&[click("ok"), click("")])
        .await
        .unwrap_err();
    names_staging("empty key in a batch", &err);

    // A partial update clearing a required field.
    let err = staging
        .update("k1")
        .clear(Click::URL)
        .apply()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::RequiredField(e) if e.table == "staging"),
        "{err:?}"
    );
    names_staging("required field", &err);
}

#[tokio::test]
async fn typed_scans_on_a_renamed_handle_name_the_handle_s_table() {
    use futures_util::TryStreamExt as _;
    let visits = Table::<Visit>::new(connection()).with_name("visits_staging");
    let clicks = Table::<Click>::new(connection()).with_name("clicks_staging");
    let long = "v".repeat(5_000);
    let start = (long.clone(), 0);
    let empty = String::new();
    let scans = || {
        [
            (
                "a prefix over the limit",
                Scan::key_prefix::<Visit>(&(long.clone(),)).unwrap(),
            ),
            (
                "a range bound over the limit",
                Scan::key_range::<Visit>(&start..).unwrap(),
            ),
        ]
    };
    for (what, scan) in scans() {
        for err in [
            visits.scan(scan.clone()).await.unwrap_err(),
            visits
                .stream(scan.clone())
                .try_collect::<Vec<_>>()
                .await
                .unwrap_err(),
            visits
                .scan_parallel(scan.clone(), 2)
                .try_collect::<Vec<_>>()
                .await
                .unwrap_err(),
            visits.split_scan(scan, 4).await.unwrap_err(),
        ] {
            assert!(
                matches!(&err, Error::RowKeyTooLong(e) if matches!(e.len, 5_001..) && e.table == "visits_staging"),
                "{what}: {err:?}"
            );
            assert!(!err.to_string().contains("`visits`"), "{what}: {err}");
        }
    }
    let err = clicks
        .scan(Scan::key_range::<Click>(&empty..).unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::EmptyRowKey(e) if e.table == "clicks_staging"),
        "{err:?}"
    );
    // Errors that name no table are still raised at once.
    assert!(matches!(
        Scan::key_prefix::<Visit>(&("ac#me".to_owned(),)),
        Err(Error::KeySeparatorInPart { .. })
    ));
}

#[tokio::test]
async fn a_ttl_under_a_millisecond_is_an_error_about_the_ttl() {
    let clock = Clock::manual_at_now();
    let table = support::table::<Click>(&clock).await;
    for ttl in [TimeDelta::microseconds(500), TimeDelta::microseconds(999)] {
        let err = table
            .put_with(click("k").mutation().ttl(ttl))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::TtlUnderMillisecond { ttl: t , .. } if t == ttl),
            "{err}"
        );
        assert!(err.to_string().contains("millisecond"), "{err}");
    }
    // One millisecond is the shortest TTL, and it is accepted.
    table
        .put_with(click("k").mutation().ttl(TimeDelta::milliseconds(1)))
        .await
        .unwrap();
}

#[tokio::test]
async fn reading_a_table_that_does_not_exist_points_at_ensure_schema() {
    let table = Table::<Click>::new(connection()).with_name("never_created");
    for err in [
        table.get("k1").await.unwrap_err(),
        table.scan(Scan::all()).await.unwrap_err(),
    ] {
        assert!(
            matches!(
                &err,
                Error::Server(e) if e.code == Code::NotFound),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains("never_created") && message.contains("ensure_schema"),
            "{message}"
        );
    }
}

/// A write to a table without the struct's family: the message says
/// what Bigtable answered and why (the emulator's `unknown family "c"`),
/// once, and no level of the chain repeats it.
#[tokio::test]
async fn a_servers_reason_is_part_of_the_message() {
    let conn = connection();
    Table::<Session>::new(conn.clone())
        .with_name("nofamily_t")
        .ensure_schema()
        .await
        .unwrap();
    let clicks = Table::<Click>::new(conn).with_name("nofamily_t");
    let err = clicks.put(&click("c1")).await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("Bigtable answered ")
            && message.contains("for table `nofamily_t`, row \"c1\": ")
            && message.contains("unknown family \"c\""),
        "{message}"
    );
    let levels: Vec<String> =
        std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
            .map(ToString::to_string)
            .collect();
    assert_eq!(
        levels.join(": ").matches("unknown family").count(),
        1,
        "{levels:?}"
    );
}
