//! The emulator dies in the middle of a bulk write: every row it had not
//! acknowledged is reported failed, none is reported written; once a new
//! emulator listens on the same port, the same `Table` writes again.

use crate::support;

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::{Clock, Code, Connection, Error, Scan, Table};
use bigtable_ttl_emulator::Emulator;
use chrono::{TimeDelta, Utc};
use support::rows::Event;

fn event(i: usize) -> Event {
    Event {
        id: format!("ev-{i:06}"),
        n: i64::try_from(i).unwrap(),
        body: String::new(),
    }
}

fn index_of(key: &[u8]) -> usize {
    let key = std::str::from_utf8(key).unwrap();
    key.trim_start_matches("ev-").parse().unwrap()
}

async fn start_on(port: Option<u16>) -> Emulator {
    tokio::task::spawn_blocking(move || match port {
        None => Emulator::start(),
        Some(port) => Emulator::start_on_port(port),
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("this test needs the Bigtable emulator: {e}"))
}

/// Wait until nothing accepts connections on `port` any more.
async fn wait_closed(port: u16) {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "the killed emulator still listens"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_emulator_fails_the_unacknowledged_rows_and_a_new_one_takes_writes() {
    const BEFORE_KILL: u64 = 3_000;
    const AFTER_KILL: usize = 1_500;
    let mut emulator = start_on(None).await;
    let port = emulator.port();
    let conn = Connection::emulator(emulator.host(), support::PROJECT, "kill").unwrap();
    let clock = Clock::manual(Utc::now());
    let table = Table::<Event>::new(conn)
        .with_clock(clock.clone())
        .with_write_options(
            WriteOptions::default()
                .with_max_rows_per_request(500)
                .with_max_in_flight(2)
                .with_retry(
                    RetryPolicy::default()
                        .with_max_attempts(100)
                        .with_initial_delay(Duration::from_millis(20))
                        .with_max_delay(Duration::from_millis(200))
                        .with_attempt_timeout(Duration::from_secs(1))
                        .with_deadline(Duration::from_millis(1_500)),
                ),
        );
    table.ensure_schema().await.unwrap();

    let mut writer = table.writer();
    let mut sent = 0usize;
    let mut queued_at_kill = None;
    let mut acked_at_kill = 0;
    while queued_at_kill.is_none_or(|k| sent < k + AFTER_KILL) {
        writer.send(&event(sent)).await.unwrap();
        sent += 1;
        let stats = writer.stats();
        if queued_at_kill.is_none() && stats.rows_written >= BEFORE_KILL {
            acked_at_kill = stats.rows_written;
            queued_at_kill = Some(sent);
            emulator.kill();
            wait_closed(port).await;
        }
    }
    let queued_at_kill = queued_at_kill.unwrap();
    let started = Instant::now();
    let err = writer.finish().await.unwrap_err();
    println!(
        "killed after {acked_at_kill} acknowledged of {queued_at_kill} queued rows; \
         {sent} sent; finish took {:?}: {err}",
        started.elapsed()
    );
    let Error::PartialWrite(e) = err else {
        panic!("expected a partial write, got {err}");
    };
    let bigtable_ttl::error::PartialWrite {
        table: name,
        written,
        failed,
        ..
    } = *e;
    assert_eq!(name, "events");
    assert_eq!(written + failed.len(), sent, "every row accounted for once");
    // Nothing is acknowledged by a dead emulator: only rows queued before
    // the kill can have been written, and at least those seen acknowledged were.
    assert!(written as u64 >= acked_at_kill && written <= queued_at_kill);
    let mut failed_index: Vec<usize> = failed.iter().map(|f| index_of(&f.row_key)).collect();
    failed_index.sort_unstable();
    failed_index.dedup();
    assert_eq!(failed_index.len(), failed.len(), "no row reported twice");
    assert!(
        (queued_at_kill..sent).all(|i| failed_index.binary_search(&i).is_ok()),
        "every row sent after the kill is reported failed"
    );
    for row in &failed {
        // Every way the writer documents for a row that got no answer: its
        // request refused or cut (UNAVAILABLE, timed out, outcome unknown),
        // or never sent because the write's deadline passed first, which a
        // loaded machine reaches while the test is still queueing rows.
        let why = &row.reason;
        assert!(
            why.contains("UNAVAILABLE")
                || why.contains("unknown")
                || why.contains("timed out")
                || why.starts_with("not sent: "),
            "{row}"
        );
        // No row got a final answer from a server that was not there.
        assert!(
            matches!(
                row.code,
                None | Some(Code::Unavailable | Code::DeadlineExceeded)
            ),
            "{row}"
        );
    }

    // A new emulator on the same port: the same table handle writes again.
    let _emulator = start_on(Some(port)).await;
    table.ensure_schema().await.unwrap();
    clock.advance(TimeDelta::seconds(1));
    let retry: Vec<Event> = failed_index.iter().map(|&i| event(i)).collect();
    let written_again = table.put_all(&retry).await.unwrap();
    assert_eq!(written_again.len(), retry.len());
    let mut writer = table.writer();
    for i in sent..sent + 1_000 {
        writer.send(&event(i)).await.unwrap();
    }
    assert_eq!(writer.finish().await.unwrap().rows_written, 1_000);
    let stored = table.scan(Scan::all()).await.unwrap();
    assert_eq!(stored.len(), retry.len() + 1_000);
    let stored_index: Vec<usize> = stored
        .iter()
        .map(|r| index_of(r.value.id.as_bytes()))
        .collect();
    let expected: Vec<usize> = failed_index.into_iter().chain(sent..sent + 1_000).collect();
    assert_eq!(stored_index, expected);
}
