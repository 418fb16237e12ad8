//! The Rust contenders against the null server, one phase a process:
//! `ttl-bench null-client lib|raw PHASE --host H --table T --rows N --csv F`,
//! the library's (`write`, `read`, `put` one row at a time, `csv` the CSV
//! reading alone) and hand-written `bigtable_rs`'s (`write`, `read`), each
//! write reading its rows from the CSV file (see `ttl_bench::csv_rows`).
//! `--tls CA_FILE --token SECRET`: the library over TLS, as on Cloud
//! Bigtable. Prints one JSON line: wall and CPU time, allocations (the
//! binary's counting allocator) and peak RSS (`VmHWM`, which, unlike
//! `wait4`'s, counts nothing from before `exec`).

use std::sync::Arc;
use std::time::Instant;

use bigtable_ttl::{AccessToken, Connection, Credentials, Scan, Table, TokenSource};
use chrono::Utc;
use futures_util::future::{self, BoxFuture, FutureExt as _};
use futures_util::TryStreamExt as _;
use serde_json::json;
use ttl_bench::csv_rows::CsvRows;
use ttl_bench::{cpu_seconds, peak_rss_kib, Event};

use crate::e2e::{raw_scan, raw_write};
use crate::{Res, GLOBAL, PROJECT};

/// The instance every contender names (the null server ignores it).
pub(crate) const INSTANCE: &str = "null";

/// TLS and a token, as on Cloud Bigtable.
pub(crate) struct Secure {
    /// The PEM of the CA the server's certificate is signed by.
    pub(crate) ca_pem: Vec<u8>,
    pub(crate) token: String,
}

/// One token, good for an hour from each asking: the library's cache
/// keeps it, as it keeps a real one.
struct FixedToken(String);

impl TokenSource for FixedToken {
    fn token<'a>(&'a self, _scopes: &'a [&'a str]) -> BoxFuture<'a, Res<AccessToken>> {
        let expiry = Utc::now() + chrono::TimeDelta::hours(1);
        future::ok(AccessToken::new(self.0.clone()).expiring_at(expiry)).boxed()
    }
}

/// The library's connection to the null server at `host`.
pub(crate) async fn connection(host: &str, secure: Option<&Secure>) -> Res<Connection> {
    let Some(secure) = secure else {
        return Ok(Connection::emulator(host, PROJECT, INSTANCE)?);
    };
    // The certificate names `localhost`; the port is the server's.
    let port = host.rsplit(':').next().ok_or("--host HOST:PORT")?;
    let token = Arc::new(FixedToken(secure.token.clone()));
    Ok(Connection::builder(PROJECT, INSTANCE)
        .data_endpoint(format!("https://localhost:{port}"))
        .tls_root_certificate(secure.ca_pem.clone())
        .credentials(Credentials::token_source(token))
        .connect()
        .await?)
}

/// `ttl-bench null-client`'s arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    who: String,
    phase: String,
    #[arg(long)]
    host: String,
    #[arg(long)]
    table: String,
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// TLS, trusting this CA (with `--token`).
    #[arg(long, requires = "token")]
    tls: Option<std::path::PathBuf>,
    #[arg(long, requires = "tls")]
    token: Option<String>,
}

/// `null-client`: one phase, its figures printed as one line.
pub(crate) async fn main(a: Args) -> Res<()> {
    let (who, phase, rows) = (a.who.as_str(), a.phase.as_str(), a.rows);
    let secure = match (a.tls, a.token) {
        (Some(ca), Some(token)) => Some(Secure {
            ca_pem: std::fs::read(ca)?,
            token,
        }),
        _ => None,
    };
    let now = Utc::now();
    // Connections are made before the clock starts, as an application
    // makes them once; the first call still pays for the handshake.
    let lib = Table::<Event>::new(connection(&a.host, secure.as_ref()).await?).with_name(&a.table);
    let raw = ttl_bench::rs_client(&a.host, INSTANCE, false)?;
    let raw_table = raw.get_full_table_name(&a.table);
    let csv = || CsvRows::open(a.csv.as_deref().ok_or("--csv FILE")?);

    let allocated = GLOBAL.stats();
    let cpu = cpu_seconds();
    let start = Instant::now();
    let (mut row, mut n, mut clicks) = (Event::default(), 0, None);
    match (who, phase) {
        ("lib", "write") => {
            let (mut source, mut writer) = (csv()?, lib.writer());
            while source.next_into(&mut row)? {
                writer.send(&row).await?;
                n += 1;
            }
            writer.finish().await?;
        }
        ("lib", "put") => {
            let mut source = csv()?;
            while source.next_into(&mut row)? {
                lib.put(&row).await?;
                n += 1;
            }
        }
        ("lib", "csv") => {
            let (mut source, mut sum) = (csv()?, 0);
            while source.next_into(&mut row)? {
                sum += std::hint::black_box(&row).clicks;
                n += 1;
            }
            clicks = Some(sum);
        }
        ("lib", "read") => {
            let rows = lib.stream(Scan::all());
            let add = rows.try_fold((0, 0), |(n, sum), e| future::ok((n + 1, sum + e.clicks)));
            let (read, sum) = add.await?;
            (n, clicks) = (read, Some(sum));
        }
        ("raw", "write") => {
            let mut source = csv()?;
            n = raw_write(&raw, &raw_table, |row| source.next_into(row), now).await?;
        }
        ("raw", "read") => n = raw_scan(&raw, &raw_table).await?,
        other => return Err(format!("null-client: no contender {other:?}").into()),
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    let allocated = GLOBAL.stats() - allocated;
    if n != rows {
        return Err(format!("{who} {phase}: {n} rows, expected {rows}").into());
    }
    // Row i's `clicks` is 7 i: every row read once, decoded right.
    let rows = i64::try_from(rows)?;
    if let Some(clicks) = clicks.filter(|&c| c != 7 * rows * (rows - 1) / 2) {
        return Err(format!("{who} {phase}: clicks add up to {clicks}").into());
    }
    let line = json!({
        "wall_s": wall,
        "cpu_s": cpu,
        "allocations": allocated.allocations + allocated.reallocations,
        "bytes_allocated": allocated.bytes_allocated + allocated.bytes_reallocated.unsigned_abs(),
        "peak_rss_kib": peak_rss_kib(),
    });
    println!("{line}");
    Ok(())
}
