//! Google's built-in client-side metrics (feature `opentelemetry`), as
//! Google's Java, Go, Node and Python clients export them: the same
//! meter, names, units, attributes and histogram buckets, so that Cloud
//! Monitoring's client-side dashboards (and a runbook written for a Java
//! service) read a Rust service's as they read theirs. Recorded through the
//! [`opentelemetry`](https://docs.rs/opentelemetry) metrics API, on the
//! meter provider given to `ConnectionBuilder::meter_provider` (the
//! global one by default; both exist with the feature only), for every RPC the library sends: each
//! call of the raw layer ([`crate::data::RawTable`], [`crate::data::Sql`])
//! and every request a typed table, an operation or the bulk writer makes
//! through it.
//!
//! | metric | kind, unit | attributes besides the common ones | per |
//! |---|---|---|---|
//! | `operation_latencies` | histogram, `ms` | `status`, `streaming` | RPC, its retries and delays included |
//! | `attempt_latencies` | histogram, `ms` | `status`, `streaming` | attempt |
//! | `server_latencies` | histogram, `ms` | `status` | attempt that brought `server-timing` |
//! | `first_response_latencies` | histogram, `ms` | `status` | `ReadRows` RPC: until its first response |
//! | `application_latencies` | histogram, `ms` | | RPC: time the caller held a stream between rows |
//! | `throttling_latencies` | histogram, `ms` | | attempt: time before its request left for the connection |
//! | `retry_count` | counter, `1` | `status` | RPC with retries: the attempts after the first |
//! | `connectivity_error_count` | counter, `1` | `status` | attempt: 1 without Google's response headers, else 0 |
//!
//! The common attributes ([`COMMON_ATTRIBUTES`]) are `project_id`,
//! `instance`, `table`, `app_profile`, `cluster`, `zone`, `method`,
//! `client_name` and `client_uid`. Their values: `method` is the RPC
//! (`Bigtable.ReadRows`, `Bigtable.ReadRow` for a read of one row key,
//! `Bigtable.MutateRow`, `Bigtable.MutateRows`, `Bigtable.CheckAndMutateRow`,
//! `Bigtable.ReadModifyWriteRow`, `Bigtable.SampleRowKeys`, and GoogleSQL's
//! `Bigtable.PrepareQuery` and `Bigtable.ExecuteQuery`); `status` the
//! gRPC code's name (`OK`, `UNAVAILABLE`, …; `CANCELLED` for an RPC whose
//! caller dropped it); `streaming` is `true` for a `ReadRows` of more than
//! one row key or of ranges, and for `ExecuteQuery`; `table` is
//! [`UNSPECIFIED_TABLE`] for the GoogleSQL calls, which name an instance;
//! `cluster` and `zone` come from the last
//! attempt's `x-goog-ext-425905942-bin` header (`unspecified` and `global`
//! without it, as on the emulator); `client_name` is [`CLIENT_NAME`];
//! `client_uid` is `rust-<random UUID>@<host name>`, one per process.
//! `server_latencies` is the `gfet4t7` duration of the `server-timing`
//! header. Histograms use [`LATENCY_BUCKETS_MS`].
//!
//! The metric `throttling_latencies` is the one Cloud Monitoring shows as
//! client blocking latencies (Google's clients record it under this name).

/// The name of the meter (instrumentation scope) every built-in metric is
/// recorded under; Google's exporter names a metric by this prefix and the
/// instrument's name.
pub const METER_NAME: &str = "bigtable.googleapis.com/internal/client/";

/// The value of `client_name`.
pub const CLIENT_NAME: &str = concat!("bigtable-ttl-rust/", env!("CARGO_PKG_VERSION"));

/// `operation_latencies`: one RPC from its start to its end, every attempt
/// and delay included.
pub const OPERATION_LATENCIES: &str = "operation_latencies";
/// `attempt_latencies`: one attempt of an RPC.
pub const ATTEMPT_LATENCIES: &str = "attempt_latencies";
/// `server_latencies`: the front end's own latency (`server-timing`).
pub const SERVER_LATENCIES: &str = "server_latencies";
/// `first_response_latencies`: a `ReadRows` RPC until its first response.
pub const FIRST_RESPONSE_LATENCIES: &str = "first_response_latencies";
/// `application_latencies`: the time the caller held a stream between rows.
pub const APPLICATION_LATENCIES: &str = "application_latencies";
/// `throttling_latencies`: the time before an attempt's request left for
/// its connection (access token, a connection ready to take it).
pub const THROTTLING_LATENCIES: &str = "throttling_latencies";
/// `retry_count`: the attempts of an RPC after its first.
pub const RETRY_COUNT: &str = "retry_count";
/// `connectivity_error_count`: attempts that got no response headers from
/// Google's front end.
pub const CONNECTIVITY_ERROR_COUNT: &str = "connectivity_error_count";

/// The attributes every built-in metric carries.
pub const COMMON_ATTRIBUTES: [&str; 9] = [
    "project_id",
    "instance",
    "table",
    "app_profile",
    "cluster",
    "zone",
    "method",
    "client_name",
    "client_uid",
];

/// One built-in metric: its name, kind, unit and the attributes it carries
/// besides [`COMMON_ATTRIBUTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuiltinMetric {
    /// The instrument's name.
    pub name: &'static str,
    /// `histogram` (of `f64`) or `counter` (of `u64`).
    pub kind: &'static str,
    /// `ms` or `1`.
    pub unit: &'static str,
    /// `status`, `streaming`, or none.
    pub attributes: &'static [&'static str],
}

/// Every built-in metric, as the table above lists them.
pub const BUILTIN_METRICS: [BuiltinMetric; 8] = [
    metric(
        OPERATION_LATENCIES,
        "histogram",
        "ms",
        &["status", "streaming"],
    ),
    metric(
        ATTEMPT_LATENCIES,
        "histogram",
        "ms",
        &["status", "streaming"],
    ),
    metric(SERVER_LATENCIES, "histogram", "ms", &["status"]),
    metric(FIRST_RESPONSE_LATENCIES, "histogram", "ms", &["status"]),
    metric(APPLICATION_LATENCIES, "histogram", "ms", &[]),
    metric(THROTTLING_LATENCIES, "histogram", "ms", &[]),
    metric(RETRY_COUNT, "counter", "1", &["status"]),
    metric(CONNECTIVITY_ERROR_COUNT, "counter", "1", &["status"]),
];

const fn metric(
    name: &'static str,
    kind: &'static str,
    unit: &'static str,
    attributes: &'static [&'static str],
) -> BuiltinMetric {
    BuiltinMetric {
        name,
        kind,
        unit,
        attributes,
    }
}

/// The bucket boundaries of every latency histogram, in milliseconds (up
/// to 53 minutes), as Google's clients and Bigtable's server-side
/// latency metrics use them.
pub const LATENCY_BUCKETS_MS: [f64; 40] = [
    0.0,
    1.0,
    2.0,
    3.0,
    4.0,
    5.0,
    6.0,
    8.0,
    10.0,
    13.0,
    16.0,
    20.0,
    25.0,
    30.0,
    40.0,
    50.0,
    65.0,
    80.0,
    100.0,
    130.0,
    160.0,
    200.0,
    250.0,
    300.0,
    400.0,
    500.0,
    650.0,
    800.0,
    1000.0,
    2000.0,
    5000.0,
    10_000.0,
    20_000.0,
    50_000.0,
    100_000.0,
    200_000.0,
    400_000.0,
    800_000.0,
    1_600_000.0,
    3_200_000.0,
];

/// `cluster` of an attempt that did not say where it ran, as Google's Go and
/// Java clients send it.
pub const UNSPECIFIED_CLUSTER: &str = "<unspecified>";
/// `zone` of an attempt that did not say where it ran.
pub const UNSPECIFIED_ZONE: &str = "global";
/// `table` of a call on an instance rather than a table (`PrepareQuery`,
/// `ExecuteQuery`), as Google's Java client names it.
pub const UNSPECIFIED_TABLE: &str = "<unspecified>";
