//! The contenders' single-row calls, shared by `latency` and
//! `concurrency`: the library's, and hand-written `bigtable_rs` sending the
//! same requests ([`call`]), `get` of a stored row, `put` of a whole row,
//! `insert_if_absent` on a fresh key; and their clients on a fresh emulator
//! or a null server.

use std::time::Duration;

use bigtable_rs::bigtable::read_rows::decode_read_rows_response;
use bigtable_rs::bigtable::{BigTable, BigTableConnection};
use bigtable_rs::google::bigtable::v2::{MutateRowRequest, ReadRowsRequest, RowSet};
use bigtable_ttl::{BigtableRow, Clock, Connection, Insert, Table};
use chrono::{DateTime, Utc};
use clap::ValueEnum as _;
use serde_json::{json, Value};
use ttl_bench::{events, hand_decode, hand_entry, hand_insert, load_average, read_filter, Event};

use crate::{Res, PROJECT};

/// Rows stored in the emulator before the rounds, read by the `get`s in
/// turn (the null server answers the first row to any `get`).
pub(crate) const STORED: usize = 1_000;
pub(crate) const OPS: [&str; 3] = ["get", "put", "insert_if_absent"];
/// The library; hand-written `bigtable_rs` through its API (`raw`: its
/// routing header only, no bound on a call's wait); the same requests
/// through its tonic client with the library's headers but `user-agent`,
/// each wait bounded by the library's attempt timeout (`raw_headers`).
pub(crate) const WHO: [&str; 3] = ["lib", "raw", "raw_headers"];
/// The table the null server answers a one-row read of.
pub(crate) const NULL_TABLE: &str = "events_1";
/// Failed calls a contender may have, per call made, before the run stops:
/// over many calls the machine can stall one past its deadline, a figure
/// to show, not a reason to lose the run.
pub(crate) const FAILED_AT_MOST: f64 = 1e-3;
const MISSING: &str = "a stored row is missing";
const TAKEN: &str = "a fresh key was taken";

/// The contenders' clients on one server.
#[derive(Clone)]
pub(crate) struct Clients {
    pub(crate) lib: Table<Event>,
    raw: BigTable,
    /// `raw_headers`'s: each wait bounded by the library's write attempt
    /// timeout (`bigtable_rs`'s own option).
    raw_bounded: BigTable,
    table_name: String,
    /// The library's routing header for the table.
    routing: tonic::metadata::AsciiMetadataValue,
    /// The library's write attempt timeout (the default write policy's).
    write_attempt: Duration,
    /// Whether the library's reads select the family: not once the schema
    /// was checked (the emulator's table; the null server has no admin API).
    pub(crate) family_selector: bool,
}

impl Clients {
    fn connect(host: &str, instance: &str, table: &str, clock: Clock) -> Res<Self> {
        let lib = Table::<Event>::new(Connection::emulator(host, PROJECT, instance)?)
            .with_name(table)
            .with_clock(clock);
        let write_attempt = lib.write_options().retry.attempt_timeout;
        let connect = |timeout| {
            BigTableConnection::new_with_emulator(host, PROJECT, instance, false, 1, timeout)
        };
        let raw = connect(None)?.client();
        let table_name = raw.get_full_table_name(table);
        Ok(Self {
            routing: routing(&table_name)?,
            write_attempt,
            lib,
            raw,
            raw_bounded: connect(Some(write_attempt))?.client(),
            table_name,
            family_selector: true,
        })
    }
}

/// Where the calls go, named in the JSON as on the command line.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum Target {
    Emulator,
    Null,
}

/// `measure` against each of `targets`, its load average beside: the
/// `targets` object of `latency`'s and `concurrency`'s JSON.
pub(crate) async fn each_target(
    targets: &[Target],
    mut measure: impl AsyncFnMut(Target) -> Res<Value>,
) -> Res<Value> {
    let mut measured = serde_json::Map::new();
    for &target in targets {
        let load_start = load_average();
        let mut results = measure(target).await?;
        results["load_average"] = json!([load_start, load_average()]);
        let name = target.to_possible_value().ok_or("a target named")?;
        measured.insert(name.get_name().to_owned(), results);
    }
    Ok(Value::Object(measured))
}

/// A fresh emulator, its process, the clients on `instance` with
/// [`STORED`] rows stored.
pub(crate) async fn emulator_clients(
    instance: &str,
) -> Res<(bigtable_ttl_emulator::Emulator, u32, Clients)> {
    let (emulator, pid) = ttl_bench::emulator()?;
    let table = Event::SCHEMA.table;
    let mut clients = Clients::connect(emulator.host(), instance, table, Clock::system())?;
    clients.lib.ensure_schema().await?;
    clients.family_selector = false;
    clients.lib.put_all(&events(STORED, Utc::now())).await?;
    Ok((emulator, pid, clients))
}

/// A null server and the clients on it (its `get`s all read the one row
/// it serves).
pub(crate) fn null_clients() -> Res<(crate::null::NullServer, Clients)> {
    let server = crate::null::NullServer::start(&std::env::current_exe()?, &[1], None)?;
    let clients = Clients::connect(&server.host, "null", NULL_TABLE, Clock::system())?;
    Ok((server, clients))
}

/// One call of `op` by contender `who`, its outcome checked; the
/// hand-written contenders' at `now` (the library reads its own clock).
pub(crate) async fn call(
    clients: &Clients,
    op: &str,
    who: &str,
    row: &Event,
    now: DateTime<Utc>,
) -> Res<()> {
    match (op, who) {
        ("get", "lib") => {
            let got = clients.lib.get(&row.id).await?.ok_or(MISSING)?;
            std::hint::black_box(got);
        }
        ("get", "raw" | "raw_headers") => {
            let request = hand_read(clients, row, now);
            let rows = if who == "raw" {
                clients.raw.clone().read_rows(request).await?
            } else {
                let mut raw = clients.raw_bounded.clone();
                let request = with_library_headers(clients, request, true)?;
                let stream = raw.get_client().read_rows(request).await?.into_inner();
                decode_read_rows_response(&None, stream).await?
            };
            let (key, cells) = rows.first().ok_or(MISSING)?;
            std::hint::black_box(hand_decode(key, cells)?);
        }
        ("put", "lib") => {
            clients.lib.put(row).await?;
        }
        ("put", "raw" | "raw_headers") => {
            let request = hand_write(clients, row, now)?;
            if who == "raw" {
                clients.raw.clone().mutate_row(request).await?;
            } else {
                let request = with_library_headers(clients, request, false)?;
                let mut raw = clients.raw_bounded.clone();
                raw.get_client().mutate_row(request).await?;
            }
        }
        ("insert_if_absent", "lib") => {
            let outcome = clients.lib.insert_if_absent(row).await?;
            if !matches!(outcome, Insert::Inserted(_)) {
                return Err(TAKEN.into());
            }
        }
        ("insert_if_absent", "raw" | "raw_headers") => {
            let request = hand_insert(row, now, &clients.table_name)?;
            let answer = if who == "raw" {
                clients.raw.clone().check_and_mutate_row(request).await?
            } else {
                let request = with_library_headers(clients, request, false)?;
                let mut raw = clients.raw_bounded.clone();
                let answer = raw.get_client().check_and_mutate_row(request).await?;
                answer.into_inner()
            };
            if answer.predicate_matched {
                return Err(TAKEN.into());
            }
        }
        other => return Err(format!("latency: no call {other:?}").into()),
    }
    Ok(())
}

/// The `ReadRows` of `row`'s key with the typed reader's filter at `now`.
fn hand_read(clients: &Clients, row: &Event, now: DateTime<Utc>) -> ReadRowsRequest {
    ReadRowsRequest {
        table_name: clients.table_name.clone(),
        rows: Some(RowSet {
            row_keys: vec![row.id.as_bytes().to_vec()],
            row_ranges: Vec::new(),
        }),
        filter: Some(read_filter(now, clients.family_selector)),
        rows_limit: 1,
        ..ReadRowsRequest::default()
    }
}

/// The `MutateRow` writing `row` whole at `now`.
fn hand_write(clients: &Clients, row: &Event, now: DateTime<Utc>) -> Res<MutateRowRequest> {
    let entry = hand_entry(row, now)?;
    Ok(MutateRowRequest {
        table_name: clients.table_name.clone(),
        row_key: entry.row_key,
        mutations: entry.mutations,
        ..MutateRowRequest::default()
    })
}

/// `message` as a request with the headers the library sends besides
/// `user-agent`: its routing header, its name, and on a read the feature
/// flags, on a write (an insert too) the write attempt's deadline. The
/// tests check them against what the library sent.
fn with_library_headers<T>(clients: &Clients, message: T, read: bool) -> Res<tonic::Request<T>> {
    let mut request = tonic::Request::new(message);
    let headers = request.metadata_mut();
    headers.insert("x-goog-request-params", clients.routing.clone());
    headers.insert(
        "x-goog-api-client",
        tonic::metadata::AsciiMetadataValue::from_static(API_CLIENT),
    );
    if read {
        headers.insert(
            "bigtable-features",
            tonic::metadata::AsciiMetadataValue::from_static("CAE="),
        );
    } else {
        // Rounded down to milliseconds (microseconds under 100 ms), as the
        // library sends it.
        let timeout = clients.write_attempt;
        let value = if timeout < Duration::from_millis(100) {
            format!("{}u", timeout.as_micros().max(1))
        } else {
            format!("{}m", timeout.as_millis())
        };
        headers.insert("grpc-timeout", value.parse()?);
    }
    Ok(request)
}

/// What the library sends in `x-goog-api-client`.
const API_CLIENT: &str = concat!(
    "gl-rust/unknown gccl/",
    env!("CARGO_PKG_VERSION"),
    " grpc/tonic"
);

/// The library's routing header for `table_name` under the default app
/// profile: every `/` percent-encoded.
fn routing(table_name: &str) -> Res<tonic::metadata::AsciiMetadataValue> {
    Ok(format!(
        "table_name={}&app_profile_id=",
        table_name.replace('/', "%2F")
    )
    .parse()?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::null::server::{serve, State};
    use ttl_bench::event;

    /// For every operation, the hand-written calls send the request message
    /// the library sends, byte for byte, and the `raw_headers` ones its
    /// headers too (but `user-agent`; `grpc-timeout` in the same unit, as
    /// long or shorter): all go to a null server in this process, which
    /// keeps the last request of each method, with the library's clock
    /// stopped at the hand-written call's `now`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_hand_written_calls_send_the_library_s_requests() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let state = Arc::new(State::new(&[1], None).unwrap());
        tokio::spawn(serve(listener, state.clone(), None));
        let now = Utc::now();
        let clients = Clients::connect(&host, "null", NULL_TABLE, Clock::manual(now)).unwrap();
        for (op, method) in OPS
            .into_iter()
            .zip(["ReadRows", "MutateRow", "CheckAndMutateRow"])
        {
            let method = format!("/google.bigtable.v2.Bigtable/{method}");
            let mut headers = Vec::new();
            for row in [0, 7, 999].map(|i| event(i, now)) {
                let mut sent = Vec::new();
                for who in WHO {
                    call(&clients, op, who, &row, now).await.unwrap();
                    sent.push(state.last_request(&method).unwrap());
                    headers.push(state.last_headers(&method).unwrap());
                }
                for (who, body) in WHO.iter().zip(&sent).skip(1) {
                    let lib = &sent[0];
                    assert!(
                        lib == body,
                        "{op}: the library sent {lib:?}, {who} {body:?}"
                    );
                }
            }
            let (lib, hand) = (&headers[0], &headers[2]);
            let names = |h: &hyper::HeaderMap| {
                let mut names: Vec<String> = h.keys().map(ToString::to_string).collect();
                names.retain(|k| k != "user-agent");
                names.sort();
                names
            };
            assert_eq!(names(lib), names(hand), "{op}: {lib:?} against {hand:?}");
            for (name, value) in lib.iter().filter(|(name, _)| *name != "user-agent") {
                let (l, h) = (value.to_str().unwrap(), hand[name].to_str().unwrap());
                match name.as_str() {
                    "grpc-timeout" => {
                        let ((ld, lu), (hd, hu)) =
                            (l.split_at(l.len() - 1), h.split_at(h.len() - 1));
                        let (ld, hd): (u64, u64) = (ld.parse().unwrap(), hd.parse().unwrap());
                        assert!(
                            lu == hu && hd >= ld && hd - ld <= 50,
                            "{op}: {name} {l}, {h}"
                        );
                    }
                    _ => assert_eq!(l, h, "{op}: {name}"),
                }
            }
        }
    }
}
