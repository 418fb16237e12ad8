//! `ttl-bench telemetry --rows N --rounds R`: what the client-side metrics
//! cost on a write+read workload (`put_all` of N rows, a full scan, and 500
//! single-row `get`s) against the emulator.
//!
//! Built without the `metrics` feature (the default), the recording code is
//! compiled out: it measures the one configuration "off". Built with
//! `--features metrics`, one process alternates rounds with the recorder
//! switched off (the facade's no-recorder path: one check per recording)
//! and on (`metrics-util`'s in-memory `DebuggingRecorder`, a heavier
//! recorder than a real exporter's atomics), and prints both with their
//! ratio. Compare the "off" build's median with the feature build's
//! medians for the cost of the feature itself. Each round writes a fresh
//! table, and the order of the modes rotates from round to round so
//! neither always runs on a warmer emulator.
//!
//! Built with `--features opentelemetry` instead, the rounds alternate
//! between a connection recording Google's built-in metrics on the global
//! meter provider, none installed (OpenTelemetry's no-op meter), and one
//! recording them on an SDK meter provider exporting to memory.

use std::time::{Duration, Instant};

use bigtable_ttl::{Connection, Scan, Table};
use chrono::Utc;
use ttl_bench::stats::median;
use ttl_bench::{events, Event};

use crate::Res;

/// One round: the workload on a fresh table; its wall time.
async fn round(conn: &Connection, name: &str, rows: usize) -> Res<Duration> {
    let table = Table::<Event>::new(conn.clone()).with_name(name);
    table.ensure_schema().await?;
    let batch = events(rows, Utc::now());
    let started = Instant::now();
    table.put_all(&batch).await?;
    let read = table.scan(Scan::all()).await?;
    assert_eq!(read.len(), rows, "the scan reads back every row");
    for e in batch.iter().step_by((rows / 500).max(1)) {
        assert!(table.get(&e.id).await?.is_some());
    }
    Ok(started.elapsed())
}

pub(crate) async fn run(rows: usize, rounds: usize) -> Res<()> {
    let host = bigtable_ttl_emulator::shared_host()?;
    let conn = Connection::builder("bench", "telemetry")
        .emulator(&host)
        .connect()
        .await?;
    // A warm-up round: connections, the emulator's first table.
    round(&conn, "warmup", rows.min(1_000)).await?;
    let modes = modes();
    let conns = connections(&conn, &host, &modes).await?;
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    for r in 0..rounds.max(1) {
        // Rotated from round to round, so no mode always runs first.
        for k in 0..modes.len() {
            let m = (k + r) % modes.len();
            let mode = &modes[m];
            switch(mode.recorder);
            times[m].push(round(&conns[m], &format!("t{r}_{m}"), rows).await?);
        }
    }
    switch(false);
    println!("write+read of {rows} rows, median of {rounds} rounds");
    println!("{:<44} {:>12} {:>8}", "configuration", "median", "ratio");
    let median = |t: &[Duration]| median(t.iter().map(Duration::as_secs_f64));
    let base = median(&times[0]);
    for (mode, t) in modes.iter().zip(&times) {
        let m = median(t);
        println!("{:<44} {:>9.1} ms {:>8.3}", mode.name, m * 1e3, m / base);
    }
    Ok(())
}

struct Mode {
    name: &'static str,
    recorder: bool,
    /// Google's built-in metrics on an SDK meter provider.
    sdk: bool,
}

/// A connection per mode: `conn`, or one to `host` whose built-in metrics
/// go to an SDK meter provider (warmed up like `conn`).
async fn connections(conn: &Connection, host: &str, modes: &[Mode]) -> Res<Vec<Connection>> {
    let mut conns = Vec::new();
    for mode in modes {
        if mode.sdk {
            let sdk = with_sdk(Connection::builder("bench", "telemetry").emulator(host))
                .connect()
                .await?;
            round(&sdk, "warmup_sdk", 1_000).await?;
            conns.push(sdk);
        } else {
            conns.push(conn.clone());
        }
    }
    Ok(conns)
}

#[cfg(feature = "opentelemetry")]
fn with_sdk(builder: bigtable_ttl::ConnectionBuilder) -> bigtable_ttl::ConnectionBuilder {
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(InMemoryMetricExporter::default()).build())
        .build();
    builder.meter_provider(std::sync::Arc::new(provider))
}

#[cfg(not(feature = "opentelemetry"))]
fn with_sdk(builder: bigtable_ttl::ConnectionBuilder) -> bigtable_ttl::ConnectionBuilder {
    builder
}

#[cfg(feature = "opentelemetry")]
fn modes() -> Vec<Mode> {
    vec![
        Mode {
            name: "otel feature on, no meter provider",
            recorder: false,
            sdk: false,
        },
        Mode {
            name: "otel feature on, SDK provider (in memory)",
            recorder: false,
            sdk: true,
        },
    ]
}

#[cfg(not(any(feature = "metrics", feature = "opentelemetry")))]
fn modes() -> Vec<Mode> {
    vec![Mode {
        name: "feature off (compiled out)",
        recorder: false,
        sdk: false,
    }]
}

#[cfg(not(feature = "metrics"))]
fn switch(_: bool) {}

#[cfg(all(feature = "metrics", not(feature = "opentelemetry")))]
fn modes() -> Vec<Mode> {
    vec![
        Mode {
            name: "feature on, no recorder",
            recorder: false,
            sdk: false,
        },
        Mode {
            name: "feature on, DebuggingRecorder",
            recorder: true,
            sdk: false,
        },
    ]
}

/// The process's recorder: a switch in front of a `DebuggingRecorder`, off
/// giving the no-op handles the facade gives when no recorder is installed.
#[cfg(feature = "metrics")]
fn switch(on: bool) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;

    use metrics::{
        Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };
    use metrics_util::debugging::DebuggingRecorder;

    struct Switch {
        on: AtomicBool,
        inner: DebuggingRecorder,
    }

    impl Recorder for Switch {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, meta: &Metadata<'_>) -> Counter {
            if self.on.load(Ordering::Relaxed) {
                self.inner.register_counter(key, meta)
            } else {
                Counter::noop()
            }
        }
        fn register_gauge(&self, key: &Key, meta: &Metadata<'_>) -> Gauge {
            if self.on.load(Ordering::Relaxed) {
                self.inner.register_gauge(key, meta)
            } else {
                Gauge::noop()
            }
        }
        fn register_histogram(&self, key: &Key, meta: &Metadata<'_>) -> Histogram {
            if self.on.load(Ordering::Relaxed) {
                self.inner.register_histogram(key, meta)
            } else {
                Histogram::noop()
            }
        }
    }

    static SWITCH: OnceLock<&'static Switch> = OnceLock::new();
    let switch = SWITCH.get_or_init(|| {
        let switch: &'static Switch = Box::leak(Box::new(Switch {
            on: AtomicBool::new(false),
            inner: DebuggingRecorder::new(),
        }));
        metrics::set_global_recorder(switch).expect("the only recorder of ttl-bench");
        switch
    });
    switch.on.store(on, Ordering::Relaxed);
}
