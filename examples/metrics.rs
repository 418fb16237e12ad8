//! Client-side metrics: write and read a few clicks, then print every
//! metric the library recorded (operation and attempt latencies, retries,
//! rows and bytes read and written).
//!
//! ```sh
//! cargo run --example metrics --features metrics
//! ```
//!
//! It starts Google's Bigtable emulator on a free loopback port, or uses the
//! one at `BIGTABLE_EMULATOR_HOST`. The recorder here is the `metrics`
//! crate's in-memory one, to print; a service installs an exporter instead
//! (`metrics-exporter-prometheus`, an OpenTelemetry bridge, …).

use bigtable_ttl::{BigtableRow, Connection, Scan, Table};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[derive(Debug, BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d")]
struct Click {
    #[bigtable(key)]
    id: String,
    url: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install()?;

    let host = bigtable_ttl_emulator::shared_host()?;
    let conn = Connection::builder("demo-project", "metrics")
        .emulator(&host)
        .connect()
        .await?;
    let clicks = Table::<Click>::new(conn);
    clicks.ensure_schema().await?;

    let batch: Vec<Click> = (0..100)
        .map(|i| Click {
            id: format!("c{i:03}"),
            url: format!("/page/{}", i % 7),
        })
        .collect();
    clicks.put_all(&batch).await?;
    clicks.put(&batch[0]).await?;
    let _ = clicks.get(&"c042".to_owned()).await?;
    let rows = clicks.scan(Scan::prefix("c0").limit(50)).await?;
    println!("read {} rows\n", rows.len());

    let mut lines: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let value = match value {
                DebugValue::Counter(n) => n.to_string(),
                DebugValue::Gauge(g) => g.to_string(),
                DebugValue::Histogram(values) => {
                    let total: f64 = values.iter().map(|v| v.into_inner()).sum();
                    let mean = 1e3 * total
                        / f64::from(u32::try_from(values.len()).unwrap_or(u32::MAX).max(1));
                    format!("{} samples, mean {mean:.2} ms", values.len())
                }
            };
            format!("{:<32} {:<45} {value}", key.name(), labels.join(","))
        })
        .collect();
    lines.sort();
    for line in lines {
        println!("{line}");
    }
    Ok(())
}
