//! Every call ends on time: against a server that takes requests and never
//! answers, and against a stream that stalls in the middle, reads, writes
//! and admin calls return `Code::DeadlineExceeded` within their deadline
//! plus a margin, instead of waiting for HTTP/2 keep-alive (about 40 s) or
//! forever. A loopback proxy in front of the real emulator stops forwarding
//! the emulator's answers while keeping the connection open.

use crate::raw_rows::RawRows as _;
use crate::support;

use std::future::Future;
use std::time::{Duration, Instant};

use bigtable_ttl::admin::{ensure_schema, verify_schema, EnsureOptions};
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{BigtableRow, Clock, Code, Connection, Error, Scan, Table};
use chrono::Utc;
use futures_util::StreamExt as _;
use support::proxy::{Faults, Proxy};
use support::rows::Event;

fn event(i: usize) -> Event {
    Event {
        id: format!("ev-{i:06}"),
        n: i64::try_from(i).unwrap(),
        body: "x".repeat(200),
    }
}

/// Attempts of 1 s, 3 s in all: what the calls below must end within.
fn impatient() -> RetryPolicy {
    RetryPolicy::default()
        .with_initial_delay(Duration::from_millis(50))
        .with_max_delay(Duration::from_millis(200))
        .with_attempt_timeout(Duration::from_secs(1))
        .with_deadline(Duration::from_secs(3))
}

const DEADLINE: Duration = Duration::from_secs(3);
/// Scheduling on a loaded 2-core machine; far below the ~40 s keep-alive.
const MARGIN: Duration = Duration::from_secs(4);

/// The events table with `rows` rows, and a handle on it through a proxy,
/// on impatient timeouts.
async fn setup(rows: usize) -> (Proxy, Connection, Table<Event>) {
    let direct = support::connection();
    let clock = Clock::manual(Utc::now());
    let table = Table::<Event>::new(direct.clone()).with_clock(clock.clone());
    table.ensure_schema().await.unwrap();
    let batch: Vec<Event> = (0..rows).map(event).collect();
    table.put_all(&batch).await.unwrap();
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::emulator(&proxy.host(), direct.project(), direct.instance())
        .unwrap()
        .with_admin_retry(impatient());
    let table = Table::<Event>::new(conn.clone())
        .with_clock(clock)
        .with_read_options(
            ReadOptions::default()
                .with_retry(impatient())
                .with_idle_timeout(Duration::from_secs(1)),
        )
        .with_write_options(WriteOptions::default().with_retry(impatient()));
    (proxy, conn, table)
}

/// `call` fails with `DEADLINE_EXCEEDED` within the deadline and the margin.
async fn ends_in_time<T: std::fmt::Debug>(
    what: &str,
    call: impl Future<Output = Result<T, Error>>,
) {
    let started = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .unwrap_or_else(|_| panic!("{what}: still waiting after 60 s"));
    let took = started.elapsed();
    let err = result.expect_err(what);
    assert!(
        matches!(&err,
            Error::Server(e) if e.code == Code::DeadlineExceeded),
        "{what}: expected DEADLINE_EXCEEDED, got {err:?}"
    );
    assert!(
        took <= DEADLINE + MARGIN,
        "{what}: took {took:?}, over {DEADLINE:?} + {MARGIN:?}: {err}"
    );
    println!("{what}: {took:?}: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_ends_by_its_deadline_against_a_server_that_never_answers() {
    let (proxy, conn, table) = setup(10).await;
    proxy.arm(Faults::Stall { after_bytes: 0 });

    ends_in_time("get", table.get(&"ev-000001".to_owned())).await;
    ends_in_time("scan", table.scan(Scan::all())).await;
    ends_in_time("stream", async {
        let mut rows = std::pin::pin!(table.stream(Scan::all()));
        rows.next().await.expect("an item")
    })
    .await;
    ends_in_time("raw_rows", table.raw_rows(Scan::all())).await;
    ends_in_time("put", table.put(&event(99))).await;
    ends_in_time("delete", table.delete(&"ev-000001".to_owned())).await;
    ends_in_time("table.ensure_schema", table.ensure_schema()).await;
    ends_in_time("table.verify_schema", table.verify_schema()).await;
    ends_in_time(
        "admin::ensure_schema",
        ensure_schema(&conn, "events", Event::SCHEMA, EnsureOptions::new()),
    )
    .await;
    ends_in_time(
        "admin::verify_schema",
        verify_schema(&conn, "events", Event::SCHEMA),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_stalled_mid_stream_ends_by_its_deadline() {
    const ROWS: usize = 3_000;
    let (proxy, _conn, table) = setup(ROWS).await;
    // Rows of about 230 bytes: the stall comes after a few hundred rows.
    proxy.arm(Faults::Stall {
        after_bytes: 100_000,
    });
    let started = Instant::now();
    let mut rows = std::pin::pin!(table.stream(Scan::all()));
    let mut received = 0usize;
    let mut last_row_at = started;
    let err = loop {
        let next = tokio::time::timeout(Duration::from_secs(60), rows.next())
            .await
            .unwrap_or_else(|_| panic!("still waiting after 60 s, {received} rows in"));
        match next {
            None => panic!("the scan ended though the stream stalled"),
            Some(Ok(_)) => {
                received += 1;
                last_row_at = Instant::now();
            }
            Some(Err(e)) => break e,
        }
    };
    let since_last_row = last_row_at.elapsed();
    println!("{received} rows, then after {since_last_row:?}: {err}");
    assert!(received > 0 && received < ROWS, "{received} rows");
    assert!(
        matches!(&err,
            Error::Server(e) if e.code == Code::DeadlineExceeded && e.retries_exhausted),
        "{err:?}"
    );
    assert!(
        since_last_row <= DEADLINE + MARGIN,
        "the last row came {since_last_row:?} before the error"
    );
}

/// What "the value read back is the last one written" means under
/// retries. A write attempt the client gave up on (its timeout passed, its
/// outcome unknown) may still reach the server, and is applied when it does:
/// every attempt carries a `grpc-timeout`, but gRPC deadlines travel as a
/// duration the server counts from its own receipt, so a request held in
/// the network is not refused for having been held. Through a proxy that
/// holds what the client sends for 1.5 s, a put whose only attempt times
/// out at 300 ms fails with `DEADLINE_EXCEEDED`, and the emulator stores the
/// row anyway once the request arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_given_up_on_is_applied_when_it_arrives() {
    let (proxy, conn, table) = setup(1).await;
    let direct =
        Table::<Event>::new(support::connection_to(&conn)).with_clock(table.clock().clone());
    let once = RetryPolicy::none().with_attempt_timeout(Duration::from_millis(300));
    let table = table.with_write_options(WriteOptions::default().with_retry(once));
    // Connections made from now on hold what the client sends.
    proxy.arm(Faults::Delay {
        by: Duration::from_millis(1_500),
    });
    let late = Event {
        id: "late".into(),
        n: 0,
        body: "held past its deadline".into(),
    };
    let err = table.put(&late).await.unwrap_err();
    assert!(
        matches!(&err,
            Error::Server(e) if e.code == Code::DeadlineExceeded),
        "{err:?}"
    );

    assert_eq!(
        direct.get(&"late".to_owned()).await.unwrap(),
        None,
        "not yet"
    );
    // The held request reaches the emulator 1.5 s after it was sent.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stored = direct.get(&"late".to_owned()).await.unwrap();
    assert_eq!(stored.map(|r| r.value), Some(late));
}
