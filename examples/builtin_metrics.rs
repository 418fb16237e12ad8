//! Google's built-in client-side metrics over OpenTelemetry, exposed for
//! Prometheus: write and read a few clicks, then print the text a
//! Prometheus server would scrape from the service's `/metrics`.
//!
//! ```sh
//! cargo run --example builtin_metrics --features opentelemetry
//! ```
//!
//! It starts Google's Bigtable emulator on a free loopback port, or uses the
//! one at `BIGTABLE_EMULATOR_HOST`. The emulator sends no `server-timing`
//! nor location header: `cluster` is `unspecified`, `zone` `global`,
//! `server_latencies` absent and every attempt counted in
//! `connectivity_error_count`, as Google's clients report the emulator.

use std::sync::Arc;

use bigtable_ttl::{BigtableRow, Connection, Scan, Table};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use prometheus::{Encoder as _, TextEncoder};

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
    // The exporter is a reader of the meter provider: Prometheus pulls.
    let registry = prometheus::Registry::new();
    let exporter = opentelemetry_prometheus::exporter()
        .with_registry(registry.clone())
        .build()?;
    let provider = SdkMeterProvider::builder().with_reader(exporter).build();

    let host = bigtable_ttl_emulator::shared_host()?;
    let conn = Connection::builder("demo-project", "metrics")
        .emulator(&host)
        .meter_provider(Arc::new(provider.clone()))
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

    let mut text = Vec::new();
    TextEncoder::new().encode(&registry.gather(), &mut text)?;
    // The counts and sums, not every bucket, to keep the output short.
    for line in String::from_utf8(text)?.lines() {
        if !line.contains("_bucket{") {
            println!("{line}");
        }
    }
    provider.shutdown()?;
    Ok(())
}
