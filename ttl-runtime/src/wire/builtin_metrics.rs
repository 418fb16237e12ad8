//! Google's built-in client-side metrics over OpenTelemetry (feature
//! `opentelemetry`; [`crate::telemetry::builtin`] lists them): an
//! [`Rpc`] per RPC the library sends (its retries and resumptions
//! included), its attempts timed and told apart by the front end's
//! response headers (see [`crate::wire::server_signals`]). Without the
//! feature, [`Rpc`] is empty and every call on it compiles to nothing.

use crate::model::error::Code;

/// The RPC an [`Rpc`] is, as the `method` attribute names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    ReadRows,
    ReadRow,
    MutateRow,
    MutateRows,
    CheckAndMutateRow,
    ReadModifyWriteRow,
    SampleRowKeys,
    PrepareQuery,
    ExecuteQuery,
}

impl Method {
    #[cfg_attr(not(feature = "opentelemetry"), allow(dead_code))]
    fn name(self) -> &'static str {
        match self {
            Method::ReadRows => "Bigtable.ReadRows",
            Method::ReadRow => "Bigtable.ReadRow",
            Method::MutateRow => "Bigtable.MutateRow",
            Method::MutateRows => "Bigtable.MutateRows",
            Method::CheckAndMutateRow => "Bigtable.CheckAndMutateRow",
            Method::ReadModifyWriteRow => "Bigtable.ReadModifyWriteRow",
            Method::SampleRowKeys => "Bigtable.SampleRowKeys",
            Method::PrepareQuery => "Bigtable.PrepareQuery",
            Method::ExecuteQuery => "Bigtable.ExecuteQuery",
        }
    }

    /// `ReadRows` for `request`: `ReadRow` (not streaming) for one row key,
    /// as Google's clients name a point read.
    pub(crate) fn of_read(request: &crate::model::proto::ReadRowsRequest) -> Self {
        let one_key = request
            .rows
            .as_ref()
            .is_some_and(|r| r.row_ranges.is_empty() && r.row_keys.len() == 1);
        if one_key {
            Method::ReadRow
        } else {
            Method::ReadRows
        }
    }
}

/// The `status` of an attempt or RPC that ended with `result`.
pub(crate) fn status_of<T>(result: &Result<T, tonic::Status>) -> Code {
    match result {
        Ok(_) => Code::Ok,
        Err(status) => crate::wire::status::code_of(status),
    }
}

#[cfg(feature = "opentelemetry")]
pub(crate) use enabled::{Instruments, Provider, Rpc};

#[cfg(not(feature = "opentelemetry"))]
pub(crate) use disabled::Rpc;

#[cfg(feature = "opentelemetry")]
mod enabled {
    use std::sync::{Arc, Mutex, OnceLock};
    use std::time::{Duration, Instant};

    use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider};
    use opentelemetry::{InstrumentationScope, KeyValue};

    use super::Method;
    use crate::model::error::Code;
    use crate::model::telemetry::builtin as names;
    use crate::wire::server_signals::{ServerSignals, ATTEMPT};

    /// The meter provider the built-in metrics go to.
    #[derive(Clone)]
    pub(crate) struct Provider(pub(crate) Arc<dyn MeterProvider + Send + Sync>);

    impl std::fmt::Debug for Provider {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("MeterProvider")
        }
    }

    /// The instruments of one connection.
    pub(crate) struct Instruments {
        operation_latencies: Histogram<f64>,
        attempt_latencies: Histogram<f64>,
        server_latencies: Histogram<f64>,
        first_response_latencies: Histogram<f64>,
        application_latencies: Histogram<f64>,
        throttling_latencies: Histogram<f64>,
        retry_count: Counter<u64>,
        connectivity_error_count: Counter<u64>,
    }

    impl Instruments {
        /// The instruments on `provider` (the global provider when `None`,
        /// as it is when the connection is made).
        pub(crate) fn new(provider: Option<&Provider>) -> Arc<Self> {
            let scope = InstrumentationScope::builder(names::METER_NAME)
                .with_version(env!("CARGO_PKG_VERSION"))
                .build();
            let meter = match provider {
                Some(p) => p.0.meter_with_scope(scope),
                None => opentelemetry::global::meter_provider().meter_with_scope(scope),
            };
            let histogram = |meter: &Meter, name: &'static str, what: &'static str| {
                meter
                    .f64_histogram(name)
                    .with_unit("ms")
                    .with_description(what)
                    .with_boundaries(names::LATENCY_BUCKETS_MS.to_vec())
                    .build()
            };
            let counter = |meter: &Meter, name: &'static str, what: &'static str| {
                meter
                    .u64_counter(name)
                    .with_unit("1")
                    .with_description(what)
                    .build()
            };
            Arc::new(Self {
                operation_latencies: histogram(
                    &meter,
                    names::OPERATION_LATENCIES,
                    "Total time until final operation success or failure, including retries and backoff.",
                ),
                attempt_latencies: histogram(
                    &meter,
                    names::ATTEMPT_LATENCIES,
                    "Client observed latency per RPC attempt.",
                ),
                server_latencies: histogram(
                    &meter,
                    names::SERVER_LATENCIES,
                    "The latency measured from the moment that the RPC entered the Google data center until the RPC was completed.",
                ),
                first_response_latencies: histogram(
                    &meter,
                    names::FIRST_RESPONSE_LATENCIES,
                    "Latency from operation start until the first response was received.",
                ),
                application_latencies: histogram(
                    &meter,
                    names::APPLICATION_LATENCIES,
                    "The latency of the client application consuming available response data.",
                ),
                throttling_latencies: histogram(
                    &meter,
                    names::THROTTLING_LATENCIES,
                    "The latencies of requests queued on gRPC channels.",
                ),
                retry_count: counter(
                    &meter,
                    names::RETRY_COUNT,
                    "The number of additional RPCs sent after the initial attempt.",
                ),
                connectivity_error_count: counter(
                    &meter,
                    names::CONNECTIVITY_ERROR_COUNT,
                    "Number of requests that failed to reach the Google datacenter (requests without Google response headers).",
                ),
            })
        }
    }

    /// `rust-<random UUID>@<host name>`, one per process, as Google's
    /// clients make theirs (`java-…@host`, `go-…@host`).
    fn client_uid() -> &'static str {
        static UID: OnceLock<String> = OnceLock::new();
        UID.get_or_init(|| {
            let host = gethostname::gethostname();
            format!("rust-{}@{}", uuid::Uuid::new_v4(), host.to_string_lossy())
        })
    }

    /// One RPC under way: its attempts, what the front end said of the
    /// last one, and the time the caller held its stream. Records its
    /// metrics when it ends ([`RpcState::ended`]) or, ended by nobody, when
    /// it is dropped (`CANCELLED`). Boxed: it lives across the awaits of
    /// every call's future, which would otherwise grow by its size.
    pub(crate) struct Rpc(Box<RpcState>);

    impl std::ops::Deref for Rpc {
        type Target = RpcState;
        fn deref(&self) -> &RpcState {
            &self.0
        }
    }

    impl std::ops::DerefMut for Rpc {
        fn deref_mut(&mut self) -> &mut RpcState {
            &mut self.0
        }
    }

    pub(crate) struct RpcState {
        instruments: Arc<Instruments>,
        /// `project_id`, `instance`, `table`, `app_profile`, `method`,
        /// `client_name`, `client_uid`.
        base: Vec<KeyValue>,
        streaming: bool,
        method: Method,
        started: Instant,
        attempts: u64,
        attempt: Option<Attempt>,
        /// The last finished attempt's cluster and zone.
        location: Option<(String, String)>,
        first_response: Option<Duration>,
        application: Duration,
        held_since: Option<Instant>,
        ended: bool,
    }

    struct Attempt {
        started: Instant,
        signals: Arc<Mutex<ServerSignals>>,
    }

    impl Rpc {
        /// The RPC `method` on `table_name` (`projects/…/tables/…`, or
        /// `projects/…/instances/…` for a call on the instance), starting now, on a channel of `app_profile` recording into
        /// `instruments`.
        pub(crate) fn start(
            instruments: &Arc<Instruments>,
            app_profile: &str,
            table_name: &str,
            method: Method,
        ) -> Self {
            Rpc(Box::new(RpcState::start(
                instruments,
                app_profile,
                table_name,
                method,
            )))
        }
    }

    impl RpcState {
        fn start(
            instruments: &Arc<Instruments>,
            app_profile: &str,
            table_name: &str,
            method: Method,
        ) -> Self {
            let (project, instance, table) = parts_of(table_name);
            let base = vec![
                KeyValue::new("project_id", project.to_owned()),
                KeyValue::new("instance", instance.to_owned()),
                KeyValue::new("table", table.to_owned()),
                KeyValue::new("app_profile", app_profile.to_owned()),
                KeyValue::new("method", method.name()),
                KeyValue::new("client_name", names::CLIENT_NAME),
                KeyValue::new("client_uid", client_uid()),
            ];
            Self {
                instruments: instruments.clone(),
                base,
                // As Google's Java client says it: the server-streaming
                // calls, a point read being unary there.
                streaming: matches!(method, Method::ReadRows | Method::ExecuteQuery),
                method,
                started: Instant::now(),
                attempts: 0,
                attempt: None,
                location: None,
                first_response: None,
                application: Duration::ZERO,
                held_since: None,
                ended: false,
            }
        }

        /// An attempt starts now (the one under way, if any, having ended).
        pub(crate) fn attempt_started(&mut self) {
            self.attempts += 1;
            self.attempt = Some(Attempt {
                started: Instant::now(),
                signals: Arc::default(),
            });
        }

        /// `call`, run as (part of) the attempt under way: what the channel
        /// sees of the front end's headers is noted into it.
        pub(crate) fn within<F: std::future::Future>(
            &self,
            call: F,
        ) -> impl std::future::Future<Output = F::Output> {
            scoped(self.attempt.as_ref().map(|a| a.signals.clone()), call)
        }

        /// The slot of the attempt under way, for [`scoped`] when `self`
        /// cannot be borrowed across the call.
        pub(crate) fn slot(&self) -> Option<Arc<Mutex<ServerSignals>>> {
            self.attempt.as_ref().map(|a| a.signals.clone())
        }

        /// The RPC's first response came now.
        pub(crate) fn first_response(&mut self) {
            self.first_response
                .get_or_insert_with(|| self.started.elapsed());
        }

        /// The caller was handed a row now.
        pub(crate) fn handed_over(&mut self) {
            self.held_since = Some(Instant::now());
        }

        /// The caller asks for more now.
        pub(crate) fn asked_again(&mut self) {
            if let Some(since) = self.held_since.take() {
                self.application += since.elapsed();
            }
        }

        /// The attempt under way ended with `status`.
        pub(crate) fn attempt_ended(&mut self, status: Code) {
            let Some(attempt) = self.attempt.take() else {
                return;
            };
            let took = attempt.started.elapsed();
            let signals = attempt
                .signals
                .lock()
                .map(|s| s.clone())
                .unwrap_or_default();
            self.location.clone_from(&signals.location);
            let i = &self.instruments;
            let with_status = self.attributes(Some(status), false);
            let with_streaming = self.attributes(Some(status), true);
            let plain = self.attributes(None, false);
            i.attempt_latencies.record(ms(took), &with_streaming);
            let blocked = signals.sent_at.map_or(Duration::ZERO, |at| {
                at.saturating_duration_since(attempt.started)
            });
            i.throttling_latencies.record(ms(blocked), &plain);
            if let Some(server) = signals.server_latency_ms {
                i.server_latencies.record(server, &with_status);
            }
            i.connectivity_error_count
                .add(u64::from(!signals.reached_google()), &with_status);
        }

        /// The RPC ended with `status` (its last attempt with it, if under
        /// way).
        pub(crate) fn ended(&mut self, status: Code) {
            if self.ended {
                return;
            }
            self.attempt_ended(status);
            self.asked_again();
            self.ended = true;
            let took = self.started.elapsed();
            let i = &self.instruments;
            let with_status = self.attributes(Some(status), false);
            i.operation_latencies
                .record(ms(took), &self.attributes(Some(status), true));
            if self.attempts > 1 {
                i.retry_count.add(self.attempts - 1, &with_status);
            }
            if matches!(self.method, Method::ReadRows | Method::ReadRow) {
                let first = self.first_response.unwrap_or(took);
                i.first_response_latencies.record(ms(first), &with_status);
            }
            i.application_latencies
                .record(ms(self.application), &self.attributes(None, false));
        }

        fn attributes(&self, status: Option<Code>, streaming: bool) -> Vec<KeyValue> {
            let mut out = Vec::with_capacity(self.base.len() + 4);
            out.extend_from_slice(&self.base);
            let (cluster, zone) = match &self.location {
                Some((cluster, zone)) => (cluster.clone(), zone.clone()),
                None => (
                    names::UNSPECIFIED_CLUSTER.to_owned(),
                    names::UNSPECIFIED_ZONE.to_owned(),
                ),
            };
            out.push(KeyValue::new("cluster", cluster));
            out.push(KeyValue::new("zone", zone));
            if let Some(status) = status {
                out.push(KeyValue::new("status", status.as_str()));
            }
            if streaming {
                out.push(KeyValue::new("streaming", self.streaming));
            }
            out
        }
    }

    impl Drop for RpcState {
        fn drop(&mut self) {
            self.ended(Code::Cancelled);
        }
    }

    /// `call` with `slot` as the attempt under way (a slot nobody reads
    /// when there is none). Not an `async fn`: its state would hold `call`
    /// twice, as the argument and in the scope.
    pub(crate) fn scoped<F: std::future::Future>(
        slot: Option<Arc<Mutex<ServerSignals>>>,
        call: F,
    ) -> impl std::future::Future<Output = F::Output> {
        ATTEMPT.scope(slot.unwrap_or_default(), call)
    }

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    /// The project, instance and table ids of `projects/{p}/instances/{i}/tables/{t}`;
    /// of `projects/{p}/instances/{i}` (a GoogleSQL call, on no one table),
    /// [`names::UNSPECIFIED_TABLE`] as the table, as Google's Java client
    /// names it.
    fn parts_of(table_name: &str) -> (&str, &str, &str) {
        let mut parts = table_name.split('/');
        match (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) {
            (Some("projects"), Some(p), Some("instances"), Some(i), Some("tables"), Some(t)) => {
                (p, i, t)
            }
            (Some("projects"), Some(p), Some("instances"), Some(i), None, None) => {
                (p, i, names::UNSPECIFIED_TABLE)
            }
            _ => ("", "", table_name),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn ids_from_a_table_name() {
            assert_eq!(parts_of("projects/p/instances/i/tables/t"), ("p", "i", "t"));
            assert_eq!(parts_of("t"), ("", "", "t"));
            assert_eq!(
                parts_of("projects/p/instances/i"),
                ("p", "i", names::UNSPECIFIED_TABLE)
            );
        }

        #[test]
        fn the_client_uid_names_the_language_and_host() {
            let uid = client_uid();
            assert!(uid.starts_with("rust-") && uid.contains('@'), "{uid}");
            assert_eq!(uid, client_uid());
        }
    }
}

#[cfg(not(feature = "opentelemetry"))]
mod disabled {
    use super::Method;
    use crate::model::error::Code;

    /// Nothing: the feature is off.
    pub(crate) struct Rpc;

    // The same methods as with the feature, so that call sites need no
    // `cfg` of their own.
    #[allow(clippy::unused_self)]
    impl Rpc {
        #[inline]
        pub(crate) fn start(_: &str, _: Method) -> Self {
            Rpc
        }
        #[inline]
        pub(crate) fn attempt_started(&mut self) {}
        #[inline]
        pub(crate) fn within<F: std::future::Future>(&self, call: F) -> F {
            call
        }
        #[inline]
        pub(crate) fn slot(&self) -> Option<()> {
            None
        }
        #[inline]
        pub(crate) fn first_response(&mut self) {}
        #[inline]
        pub(crate) fn handed_over(&mut self) {}
        #[inline]
        pub(crate) fn asked_again(&mut self) {}
        #[inline]
        pub(crate) fn attempt_ended(&mut self, _: Code) {}
        #[inline]
        pub(crate) fn ended(&mut self, _: Code) {}
    }

    #[inline]
    pub(crate) fn scoped<F: std::future::Future>(_: Option<()>, call: F) -> F {
        call
    }
}

#[cfg(not(feature = "opentelemetry"))]
pub(crate) use disabled::scoped;
#[cfg(feature = "opentelemetry")]
pub(crate) use enabled::scoped;
