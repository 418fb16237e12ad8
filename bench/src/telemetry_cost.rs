//! `ttl-bench telemetry --rows N --rounds R`: what Google's built-in
//! metrics (OpenTelemetry) cost on a write+read workload (`put_all` of N
//! rows, a full scan, 500 `get`s) against the emulator. Without the feature
//! `opentelemetry` the recording is compiled out ("off"); with it, rounds
//! alternate between no meter provider installed (OpenTelemetry's no-op
//! meter) and an SDK provider exporting to memory, in an order rotated
//! from round to round.

use std::time::{Duration, Instant};

use bigtable_ttl::{Connection, ConnectionBuilder, Scan, Table};
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
    let builder = || Connection::builder("bench", "telemetry").emulator(&host);
    let conn = builder().connect().await?;
    // A warm-up round: connections, the emulator's first table.
    round(&conn, "warmup", rows.min(1_000)).await?;
    let mut modes = vec![(MODES[0], conn)];
    if let Some(sdk) = MODES.get(1) {
        let conn = with_sdk(builder()).connect().await?;
        round(&conn, "warmup_sdk", 1_000).await?;
        modes.push((sdk, conn));
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    for r in 0..rounds.max(1) {
        // Rotated from round to round, so no mode always runs first.
        for k in 0..modes.len() {
            let m = (k + r) % modes.len();
            times[m].push(round(&modes[m].1, &format!("t{r}_{m}"), rows).await?);
        }
    }
    println!("write+read of {rows} rows, median of {rounds} rounds");
    println!("{:<44} {:>12} {:>8}", "configuration", "median", "ratio");
    let median = |t: &[Duration]| median(t.iter().map(Duration::as_secs_f64));
    let base = median(&times[0]);
    for ((name, _), t) in modes.iter().zip(&times) {
        let m = median(t);
        println!("{name:<44} {:>9.1} ms {:>8.3}", m * 1e3, m / base);
    }
    Ok(())
}

/// The configurations measured: the first on the global meter provider,
/// the second (if any) on an SDK provider (see [`with_sdk`]).
#[cfg(feature = "opentelemetry")]
const MODES: &[&str] = &[
    "otel feature on, no meter provider",
    "otel feature on, SDK provider (in memory)",
];
#[cfg(not(feature = "opentelemetry"))]
const MODES: &[&str] = &["feature off (compiled out)"];

/// `builder` recording Google's built-in metrics on an SDK meter provider
/// exporting to memory.
#[cfg(feature = "opentelemetry")]
fn with_sdk(builder: ConnectionBuilder) -> ConnectionBuilder {
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(InMemoryMetricExporter::default()).build())
        .build();
    builder.meter_provider(std::sync::Arc::new(provider))
}

#[cfg(not(feature = "opentelemetry"))]
fn with_sdk(builder: ConnectionBuilder) -> ConnectionBuilder {
    builder
}
