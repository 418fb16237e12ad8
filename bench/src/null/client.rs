//! The Rust contenders against the null server, one phase per process:
//! `ttl-bench null-client lib|raw write|read --host H --table T --rows N`.
//!
//! * `lib write`: the library's bulk writer (`Table::writer`), the rows read
//!   from the CSV file `--csv` one at a time into one `Event` and streamed in
//!   (every contender reads that file: see `ttl_bench::csv_rows`);
//! * `lib read`: the library's typed stream (`Table::stream(Scan::all())`),
//!   filtered and decoded into `Event`s;
//! * `raw write` / `raw read`: hand-written `bigtable_rs`, the same batching
//!   and a hand-written filter and decoder (as the end-to-end bench's `raw`).
//!
//! * `lib put`: the same rows, one `Table::put` each, one at a time (a
//!   call's own cost);
//! * `lib csv`: the write's reading of the CSV file alone, nothing sent
//!   (the CSV's cost, shown beside the write's).
//!
//! With `--tls CA_FILE --token SECRET` the library connects over TLS,
//! trusting that CA, and sends that bearer token with every call (from a
//! token source, as on Cloud Bigtable); `raw` has no such mode here.
//!
//! Prints one JSON line: the phase's wall and CPU time (this process's
//! threads, from `/proc/self/task/*/schedstat`), its allocations, counted
//! by the bench binary's global allocator, and the process's peak RSS
//! (`VmHWM`, which, unlike `wait4`'s, counts nothing from before `exec`).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bigtable_rs::bigtable::BigTableConnection;
use bigtable_ttl::{AccessToken, Connection, Credentials, Scan, Table, TokenSource};
use chrono::Utc;
use futures_util::TryStreamExt as _;
use serde_json::{json, Value};
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

/// Where the contender connects.
pub(crate) struct Target<'a> {
    pub(crate) host: &'a str,
    pub(crate) secure: Option<&'a Secure>,
}

/// One token for every call, good for an hour from each asking: the
/// library's cache keeps it, as it keeps a real one.
struct FixedToken(String);

impl TokenSource for FixedToken {
    fn token<'a>(
        &'a self,
        _scopes: &'a [&'a str],
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<AccessToken, Box<dyn std::error::Error + Send + Sync>>,
                > + Send
                + 'a,
        >,
    > {
        let token =
            AccessToken::new(self.0.clone()).expiring_at(Utc::now() + chrono::TimeDelta::hours(1));
        Box::pin(async move { Ok(token) })
    }
}

/// The library's connection to `target`.
pub(crate) async fn connection(target: &Target<'_>) -> Res<Connection> {
    let Some(secure) = target.secure else {
        return Ok(Connection::emulator(target.host, PROJECT, INSTANCE)?);
    };
    // The certificate names `localhost`; the port is the server's.
    let port = target.host.rsplit(':').next().ok_or("--host HOST:PORT")?;
    Ok(Connection::builder(PROJECT, INSTANCE)
        .data_endpoint(format!("https://localhost:{port}"))
        .tls_root_certificate(secure.ca_pem.clone())
        .credentials(Credentials::token_source(Arc::new(FixedToken(
            secure.token.clone(),
        ))))
        .connect()
        .await?)
}

/// Run `who`'s `phase` of `rows` rows on `table` at `target`; the JSON line.
pub(crate) async fn run(
    who: &str,
    phase: &str,
    target: &Target<'_>,
    table: &str,
    rows: usize,
    csv: Option<&Path>,
) -> Res<Value> {
    let now = Utc::now();
    let host = target.host;
    // Connections are made before the clock starts, as an application
    // makes them once; the first call still pays for the handshake.
    let lib = Table::<Event>::new(connection(target).await?).with_name(table);
    let rs = BigTableConnection::new_with_emulator(host, PROJECT, INSTANCE, false, 1, None)?;
    let raw = rs.client();
    let raw_table = raw.get_full_table_name(table);

    let allocated = GLOBAL.stats();
    let cpu = cpu_seconds();
    let start = Instant::now();
    let (read, clicks) = match (who, phase) {
        ("lib", "write") => {
            let mut source = CsvRows::open(csv.ok_or("--csv FILE")?)?;
            let mut row = Event::default();
            let mut writer = lib.writer();
            let mut n = 0;
            while source.next_into(&mut row)? {
                writer.send(&row).await?;
                n += 1;
            }
            writer.finish().await?;
            (n, None)
        }
        ("lib", "read") => {
            let (n, clicks) = lib
                .stream(Scan::all())
                .try_fold((0usize, 0i64), |(n, sum), e| {
                    futures_util::future::ready(Ok((n + 1, sum + e.clicks)))
                })
                .await?;
            (n, Some(clicks))
        }
        ("raw", "write") => {
            let mut source = CsvRows::open(csv.ok_or("--csv FILE")?)?;
            let n = raw_write(&raw, &raw_table, |row| source.next_into(row), now).await?;
            (n, None)
        }
        ("raw", "read") => (raw_scan(&raw, &raw_table).await?, None),
        ("lib", "put") => {
            let mut source = CsvRows::open(csv.ok_or("--csv FILE")?)?;
            let mut row = Event::default();
            let mut n = 0;
            while source.next_into(&mut row)? {
                lib.put(&row).await?;
                n += 1;
            }
            (n, None)
        }
        ("lib", "csv") => {
            let mut source = CsvRows::open(csv.ok_or("--csv FILE")?)?;
            let mut row = Event::default();
            let (mut n, mut clicks) = (0, 0);
            while source.next_into(&mut row)? {
                clicks += std::hint::black_box(&row).clicks;
                n += 1;
            }
            (n, Some(clicks))
        }
        other => return Err(format!("null-client: no contender {other:?}").into()),
    };
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    let allocated = GLOBAL.stats() - allocated;
    if read != rows {
        return Err(format!("{who} {phase}: {read} rows, expected {rows}").into());
    }
    // Row i's `clicks` is 7 i: every row read once, decoded right.
    let rows_i64 = i64::try_from(rows)?;
    if let Some(clicks) = clicks.filter(|&c| c != 7 * rows_i64 * (rows_i64 - 1) / 2) {
        return Err(format!("{who} {phase}: clicks add up to {clicks}").into());
    }
    Ok(json!({
        "wall_s": wall,
        "cpu_s": cpu,
        "allocations": allocated.allocations + allocated.reallocations,
        "bytes_allocated": allocated.bytes_allocated + allocated.bytes_reallocated.unsigned_abs(),
        "peak_rss_kib": peak_rss_kib(),
    }))
}
