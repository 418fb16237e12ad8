//! Observability: every `Table` operation is a `tracing` span with its
//! table, operation, rows, attempts and outcome, each retry an event in it
//! with its reason; with the `metrics` feature, the client-side metrics
//! (operation and attempt latency, retries, rows and bytes read and
//! written, the reaper's rows and rate) reach the installed recorder.
//! Against the real emulator; the retries come from a loopback proxy that
//! stops answering.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{Connection, Insert, Scan, Table};
use support::proxy::{Faults, Proxy};
use support::rows::{click, Click};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

type Fields = BTreeMap<String, String>;

/// Spans (with their fields once closed) and events (with their span's
/// fields) as a subscriber saw them.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Captured>>);

#[derive(Default)]
struct Captured {
    open: HashMap<u64, Fields>,
    closed: Vec<Fields>,
    events: Vec<(Fields, Fields)>,
}

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut fields = Fields::new();
        fields.insert("span".into(), attrs.metadata().name().into());
        attrs.record(&mut Visitor(&mut fields));
        self.0.lock().unwrap().open.insert(id.into_u64(), fields);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(fields) = self.0.lock().unwrap().open.get_mut(&id.into_u64()) {
            values.record(&mut Visitor(fields));
        }
    }
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        event.record(&mut Visitor(&mut fields));
        let mut captured = self.0.lock().unwrap();
        let span = ctx
            .event_span(event)
            .and_then(|s| captured.open.get(&s.id().into_u64()).cloned())
            .unwrap_or_default();
        captured.events.push((span, fields));
    }
    fn on_close(&self, id: Id, _: Context<'_, S>) {
        let mut captured = self.0.lock().unwrap();
        if let Some(fields) = captured.open.remove(&id.into_u64()) {
            captured.closed.push(fields);
        }
    }
}

fn field<'a>(fields: &'a Fields, name: &str) -> &'a str {
    fields.get(name).map_or("", String::as_str)
}

/// Attempts of 300 ms, 1.5 s in all: a stalled call retries a few times.
fn impatient() -> RetryPolicy {
    RetryPolicy::default()
        .with_initial_delay(Duration::from_millis(20))
        .with_max_delay(Duration::from_millis(50))
        .with_attempt_timeout(Duration::from_millis(300))
        .with_deadline(Duration::from_millis(1_500))
}

/// The clicks table, named `name`, on a fresh instance, and a handle on it
/// through a proxy with impatient timeouts.
async fn setup(name: &str) -> (Table<Click>, Proxy, Table<Click>) {
    let direct = Table::<Click>::new(support::connection()).with_name(name);
    direct.ensure_schema().await.unwrap();
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::builder(
        direct.connection().project(),
        direct.connection().instance(),
    )
    .emulator(proxy.host())
    .retry(impatient())
    .connect()
    .await
    .unwrap();
    (direct, proxy, Table::new(conn).with_name(name))
}

/// The capturing subscriber, global to this test binary: a thread's
/// default would miss what runs on the runtime's other threads, and share
/// the callsites' cached interest with tests that run without it.
fn capture() -> &'static Capture {
    static CAPTURE: std::sync::OnceLock<Capture> = std::sync::OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(capture.clone()),
        )
        .expect("the only subscriber of this test binary");
        capture
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_operation_is_a_span_and_each_retry_an_event_with_its_reason() {
    const TABLE: &str = "clicks_traced";
    let capture = capture();
    let (direct, proxy, table) = setup(TABLE).await;

    direct.put(&click("c1", "/a")).await.unwrap();
    direct
        .put_all(&[click("c2", "/b"), click("c3", "/c")])
        .await
        .unwrap();
    assert!(direct.get(&"c2".to_owned()).await.unwrap().is_some());
    assert_eq!(direct.scan(Scan::all()).await.unwrap().len(), 3);
    proxy.arm(Faults::Stall { after_bytes: 0 });
    assert!(table.get(&"c1".to_owned()).await.is_err());

    let captured = capture.0.lock().unwrap();
    let ops: Vec<&Fields> = captured
        .closed
        .iter()
        .filter(|s| field(s, "span") == "bigtable_ttl" && field(s, "table") == TABLE)
        .collect();
    let summary: Vec<String> = ops
        .iter()
        .map(|s| {
            format!(
                "{} {} rows={} attempts={} outcome={}",
                field(s, "table"),
                field(s, "operation"),
                field(s, "rows"),
                field(s, "attempts"),
                field(s, "outcome")
            )
        })
        .collect();
    println!("{summary:#?}");
    assert_eq!(
        summary[..summary.len() - 1],
        [
            "clicks_traced put rows=1 attempts=1 outcome=ok",
            "clicks_traced put_all rows=2 attempts=1 outcome=ok",
            "clicks_traced get rows=1 attempts=1 outcome=ok",
            "clicks_traced scan rows=3 attempts=1 outcome=ok",
        ]
    );
    // OpenTelemetry's database conventions, beside the library's fields.
    let host = support::emulator_host();
    let (address, port) = host.rsplit_once(':').unwrap();
    for span in &ops[..ops.len() - 1] {
        assert_eq!(
            (
                field(span, "db.system.name"),
                field(span, "db.operation.name"),
                field(span, "db.collection.name"),
                field(span, "server.address"),
                field(span, "server.port"),
            ),
            (
                "gcp.bigtable",
                field(span, "operation"),
                TABLE,
                address,
                port
            ),
            "{span:?}"
        );
    }
    let stalled = ops.last().unwrap();
    assert_eq!(field(stalled, "operation"), "get");
    assert_eq!(field(stalled, "outcome"), "DEADLINE_EXCEEDED");
    let attempts: usize = field(stalled, "attempts").parse().unwrap();
    assert!(attempts >= 2, "{stalled:?}");

    let retries: Vec<&(Fields, Fields)> = captured
        .events
        .iter()
        .filter(|(s, e)| field(e, "message") == "retrying" && field(s, "table") == TABLE)
        .collect();
    assert_eq!(retries.len(), attempts - 1, "{retries:#?}");
    for (span, event) in retries {
        assert_eq!(field(span, "operation"), "get");
        assert!(
            field(event, "reason").contains("DEADLINE_EXCEEDED"),
            "{event:?}"
        );
    }
}

/// A struct before its rename, and after it, its marker forgotten.
mod renamed {
    use bigtable_ttl::BigtableRow;

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "items_traced", family = "i")]
    #[ttl(default = "30d")]
    pub struct Item {
        #[bigtable(key)]
        pub id: String,
        pub label: String,
    }

    #[derive(Debug, Clone, PartialEq, BigtableRow)]
    #[bigtable(table = "items_traced", family = "i")]
    #[ttl(default = "30d")]
    pub struct Article {
        #[bigtable(key)]
        pub id: String,
        pub label: String,
    }
}

/// The rows a renamed struct leaves out under its old marker log one
/// warning a connection (not one a row, nor one a handle) that names the
/// marker to keep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_struct_is_told_once_which_marker_to_keep() {
    use renamed::{Article, Item};
    let capture = capture();
    let old = Table::<Item>::new(support::connection());
    old.ensure_schema().await.unwrap();
    let item = |id: &str| Item {
        id: id.into(),
        label: "l".into(),
    };
    old.put_all(&[item("a"), item("b"), item("c")])
        .await
        .unwrap();
    let article = Table::<Article>::new(support::connection_to(old.connection()));
    drop(old);

    assert!(article.scan(Scan::all()).await.unwrap().is_empty());
    assert!(article.scan(Scan::all()).await.unwrap().is_empty());
    assert_eq!(article.read_stats().rows_under_unknown_marker, 6);
    // A handle made per request: counted on its own, warned of once a
    // connection.
    let again = Table::<Article>::new(article.connection().clone());
    assert!(again.scan(Scan::all()).await.unwrap().is_empty());
    assert_eq!(again.read_stats().rows_under_unknown_marker, 3);
    let captured = capture.0.lock().unwrap();
    let warnings: Vec<&Fields> = captured
        .events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| field(e, "table") == "items_traced" && field(e, "message").contains("marker"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let message = field(warnings[0], "message");
    assert!(
        message.contains("#[bigtable(marker = \"Item\")]") && message.contains("Article"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_writes_updates_and_retimes_are_spans_too() {
    const TABLE: &str = "clicks_traced_more";
    let capture = capture();
    let (direct, _proxy, _) = setup(TABLE).await;
    let key = "c1".to_owned();

    let inserted = direct.insert_if_absent(&click("c1", "/a")).await.unwrap();
    assert!(matches!(inserted, Insert::Inserted(_)));
    let replaced = direct
        .put_if(&click("c1", "/b"), Click::URL.equals(&"/a".to_owned()))
        .await
        .unwrap();
    assert!(replaced.is_some());
    let updated = direct
        .update(&key)
        .set(Click::URL, &"/c".to_owned())
        .apply();
    assert!(updated.await.unwrap().is_some());
    assert!(direct
        .set_ttl(&key, chrono::TimeDelta::hours(3))
        .await
        .unwrap()
        .is_some());
    let not_deleted = direct
        .delete_if(&key, Click::URL.equals(&"/other".to_owned()))
        .await
        .unwrap();
    assert!(!not_deleted);

    let captured = capture.0.lock().unwrap();
    let summary: Vec<String> = captured
        .closed
        .iter()
        .filter(|s| field(s, "span") == "bigtable_ttl" && field(s, "table") == TABLE)
        .map(|s| {
            format!(
                "{} rows={} outcome={}",
                field(s, "operation"),
                field(s, "rows"),
                field(s, "outcome")
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            "insert_if_absent rows=1 outcome=ok",
            "put_if rows=1 outcome=ok",
            "update rows=1 outcome=ok",
            "retime rows=1 outcome=ok",
            "delete_if rows=0 outcome=ok",
        ]
    );
}

/// `operation rows=… attempts=… outcome=…` of every operation span closed
/// on `table`, in the order they closed.
fn closed_operations(capture: &Capture, table: &str) -> Vec<String> {
    capture
        .0
        .lock()
        .unwrap()
        .closed
        .iter()
        .filter(|s| field(s, "span") == "bigtable_ttl" && field(s, "table") == table)
        .map(|s| {
            format!(
                "{} rows={} attempts={} outcome={}",
                field(s, "operation"),
                field(s, "rows"),
                field(s, "attempts"),
                field(s, "outcome")
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_writers_and_parallel_scans_are_spans_too() {
    use futures_util::{StreamExt as _, TryStreamExt as _};
    const TABLE: &str = "clicks_traced_streams";
    let capture = capture();
    let (direct, proxy, table) = setup(TABLE).await;

    let mut writer = direct.writer();
    for (id, url) in [("c1", "/a"), ("c2", "/b"), ("c3", "/c")] {
        writer.send(&click(id, url)).await.unwrap();
    }
    assert_eq!(writer.finish().await.unwrap().rows_written, 3);
    let all: Vec<_> = direct.stream(Scan::all()).try_collect().await.unwrap();
    assert_eq!(all.len(), 3);
    // Dropped after its first row: cancelled, one row.
    let mut rows = Box::pin(direct.stream(Scan::all()));
    assert!(rows.next().await.unwrap().is_ok());
    drop(rows);
    let parallel: Vec<_> = direct
        .scan_parallel(Scan::all(), 2)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(parallel.len(), 3);
    assert_eq!(
        closed_operations(capture, TABLE),
        [
            "writer rows=3 attempts=1 outcome=ok",
            "stream rows=3 attempts=1 outcome=ok",
            "stream rows=1 attempts=1 outcome=CANCELLED",
            "scan_parallel rows=3 attempts=1 outcome=ok",
        ]
    );

    // Their retries are theirs, the writer's spawned requests' too.
    proxy.arm(Faults::Stall { after_bytes: 0 });
    let stalled: Result<Vec<_>, _> = table.stream(Scan::all()).try_collect().await;
    assert!(stalled.is_err());
    let mut writer = table.writer();
    writer.send(&click("c4", "/d")).await.unwrap();
    assert!(writer.finish().await.is_err());

    let closed = closed_operations(capture, TABLE);
    let [.., stream, writer] = closed.as_slice() else {
        panic!("{closed:#?}");
    };
    assert!(
        stream.starts_with("stream rows=0 attempts=") && stream.ends_with("DEADLINE_EXCEEDED"),
        "{stream}"
    );
    assert!(
        writer.starts_with("writer rows=0 attempts=") && writer.ends_with("partial_write"),
        "{writer}"
    );
    let captured = capture.0.lock().unwrap();
    for operation in ["stream", "writer"] {
        let retries = captured
            .events
            .iter()
            .filter(|(s, e)| {
                field(e, "message") == "retrying"
                    && field(s, "table") == TABLE
                    && field(s, "operation") == operation
            })
            .count();
        let attempts: usize = closed
            .iter()
            .rev()
            .find(|s| s.starts_with(operation))
            .and_then(|s| s.split("attempts=").nth(1))
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(attempts >= 2, "{operation}: {closed:#?}");
        assert_eq!(retries, attempts - 1, "{operation}");
    }
}

#[cfg(feature = "metrics")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_reach_the_installed_recorder() {
    use bigtable_ttl::telemetry;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    // The only recorder of this test binary.
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();
    let (direct, proxy, table) = setup("clicks").await;

    direct.put(&click("c1", "/a")).await.unwrap();
    direct
        .put_all(&[click("c2", "/b"), click("c3", "/c")])
        .await
        .unwrap();
    assert!(direct.get(&"c2".to_owned()).await.unwrap().is_some());
    assert_eq!(direct.scan(Scan::all()).await.unwrap().len(), 3);
    proxy.arm(Faults::Stall { after_bytes: 0 });
    assert!(table.get(&"c1".to_owned()).await.is_err());
    reap_two_dead_rows(&direct).await;

    let mut counters: HashMap<String, u64> = HashMap::new();
    let mut histograms: HashMap<String, usize> = HashMap::new();
    let mut gauges: HashMap<String, f64> = HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        match value {
            DebugValue::Counter(n) => *counters.entry(name).or_default() += n,
            DebugValue::Histogram(values) => *histograms.entry(name).or_default() += values.len(),
            DebugValue::Gauge(g) => {
                gauges.insert(name, g.into_inner());
            }
        }
    }
    println!("{counters:#?}\n{histograms:#?}");
    let counter = |name: &str| counters.get(name).copied().unwrap_or_default();
    assert_eq!(
        counter(&format!("{}{{table=clicks}}", telemetry::ROWS_WRITTEN)),
        3
    );
    assert!(counter(&format!("{}{{table=clicks}}", telemetry::BYTES_WRITTEN)) > 3 * 10);
    assert_eq!(
        counter(&format!("{}{{table=clicks}}", telemetry::ROWS_READ)),
        4
    );
    assert!(counter(&format!("{}{{table=clicks}}", telemetry::BYTES_READ)) > 4 * 2);
    assert!(
        counter(&format!(
            "{}{{table=clicks,operation=get}}",
            telemetry::RETRIES
        )) >= 1
    );
    for operation in ["put", "put_all", "get", "scan"] {
        let name = format!(
            "{}{{table=clicks,operation={operation},outcome=ok}}",
            telemetry::OPERATION_LATENCY
        );
        assert!(
            histograms.get(&name).copied().unwrap_or_default() >= 1,
            "{name}"
        );
    }
    let stalled = format!(
        "{}{{table=clicks,operation=get,outcome=DEADLINE_EXCEEDED}}",
        telemetry::OPERATION_LATENCY
    );
    assert_eq!(histograms.get(&stalled), Some(&1));
    let attempts = format!(
        "{}{{table=clicks,operation=get}}",
        telemetry::ATTEMPT_LATENCY
    );
    assert!(histograms.get(&attempts).copied().unwrap_or_default() >= 3);
    // The reaper's: rows read, dead rows and their cells deleted, its rate.
    let reaped = |name: &str| counter(&format!("{name}{{table=reaped}}"));
    assert_eq!(reaped(telemetry::REAP_ROWS_SCANNED), 2);
    assert_eq!(reaped(telemetry::REAP_ROWS_REAPED), 2);
    assert!(reaped(telemetry::REAP_CELLS_REAPED) >= 2 * 3);
    let rate = format!("{}{{table=reaped}}", telemetry::REAP_RATE);
    assert!(gauges.get(&rate).is_some_and(|r| *r > 0.0), "{gauges:?}");
}

/// Two rows of table `reaped` on `direct`'s instance dead for a reaper
/// whose clock is an hour on (none collected: the emulator collects on
/// real time), reaped.
#[cfg(feature = "metrics")]
async fn reap_two_dead_rows(direct: &Table<Click>) {
    use bigtable_ttl::ops::{ReapOptions, ReapStatus};
    use bigtable_ttl::{BigtableRow as _, Clock};
    use chrono::TimeDelta;

    let clock = Clock::manual_at_now();
    let table = Table::<Click>::new(direct.connection().clone())
        .with_name("reaped")
        .with_clock(clock.clone());
    table.ensure_schema().await.unwrap();
    for id in ["r1", "r2"] {
        table
            .put_with(click(id, "/x").mutation().ttl(TimeDelta::minutes(10)))
            .await
            .unwrap();
    }
    clock.advance(TimeDelta::hours(1));
    let status = table
        .reap(&ReapOptions::new(), None, |_| {
            std::ops::ControlFlow::Continue(())
        })
        .await
        .unwrap();
    assert!(
        matches!(&status, ReapStatus::Done(p) if p.rows_reaped == 2),
        "{status:?}"
    );
}
