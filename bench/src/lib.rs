//! Shared pieces of the benchmarks (`bench/run.sh`, `BENCHMARKS.md`): the
//! workload, its hand-written baseline (protobuf built and decoded by hand:
//! what the derive must match), the clients and servers every command
//! starts, and process CPU, memory and load readings.

// The library serves this crate's commands and benches, which use every
// result: no `#[must_use]` marks. Counts become ratios and rates: precision
// past 2^52 does not matter there.
#![allow(clippy::must_use_candidate, clippy::cast_precision_loss)]

pub mod csv_rows;
pub mod stats;

use bigtable_rs::bigtable::{BigTable, BigTableConnection, RowCell};
use bigtable_rs::google::bigtable::v2::{
    column_range, mutate_rows_request::Entry, mutation, row_filter, value_range,
    CheckAndMutateRowRequest, ColumnRange, MutateRowsRequest, Mutation, RowFilter, TimestampRange,
    ValueRange,
};
use bigtable_ttl::data::Cell;
use bigtable_ttl::BigtableRow;
use chrono::{DateTime, TimeDelta, Utc};

/// Every command's error.
pub type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The project every client names.
pub const PROJECT: &str = "bench";

/// The workload: one-second expiration, every row with its own expiry. It
/// owns its family, so a whole-row write clears it with one
/// `DeleteFromFamily`.
#[derive(Debug, Clone, Default, PartialEq, BigtableRow)]
#[bigtable(table = "events", family = "e", owns_family)]
pub struct Event {
    /// Row key.
    #[bigtable(key)]
    pub id: String,
    /// Per-row expiry (the cell timestamp).
    #[ttl(expire_at)]
    pub expires_at: DateTime<Utc>,
    /// A short string.
    pub user: String,
    /// A longer string.
    pub url: String,
    /// A counter.
    pub clicks: i64,
}

/// [`Event`]'s twin without `owns_family`: a whole-row write clears each
/// column and the row marker with a `DeleteFromColumn` of its own.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "events", family = "e")]
pub struct EventByColumn {
    #[bigtable(key)]
    pub id: String,
    #[ttl(expire_at)]
    pub expires_at: DateTime<Utc>,
    pub user: String,
    pub url: String,
    pub clicks: i64,
}

impl From<Event> for EventByColumn {
    fn from(e: Event) -> Self {
        Self {
            id: e.id,
            expires_at: e.expires_at,
            user: e.user,
            url: e.url,
            clicks: e.clicks,
        }
    }
}

/// Family of [`Event`].
pub const FAMILY: &str = "e";

/// Row `i` of the workload written at `now`: expiries spread over
/// 1 h .. 1 h + 16 min 39 s (per-row TTLs), whole milliseconds or not.
pub fn event(i: usize, now: DateTime<Utc>) -> Event {
    let spread = i64::try_from(i % 1000).unwrap_or(0);
    Event {
        id: format!("ev{i:08}"),
        expires_at: now + TimeDelta::hours(1) + TimeDelta::seconds(spread),
        user: format!("user-{}", i % 5000),
        url: format!("https://example.com/page/{}/{}", i % 97, i),
        clicks: i64::try_from(i).unwrap_or(0) * 7,
    }
}

/// `n` rows of the workload.
pub fn events(n: usize, now: DateTime<Utc>) -> Vec<Event> {
    (0..n).map(|i| event(i, now)).collect()
}

// ----- the hand-written baseline --------------------------------------------

fn set(qualifier: &[u8], ts: i64, value: Vec<u8>) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: FAMILY.to_owned(),
            column_qualifier: qualifier.to_vec(),
            timestamp_micros: ts,
            value,
        })),
    }
}

/// The row marker's value, the struct's fingerprint (what the library
/// writes): a constant a hand-written client would spell out, made once.
static MARKER_VALUE: std::sync::LazyLock<Vec<u8>> =
    std::sync::LazyLock::new(|| Event::SCHEMA.marker_fingerprint());

/// What a careful programmer writes by hand with `bigtable_rs` for the same
/// whole-row write as the derive (every hand-written write, bulk,
/// single-row or conditional, takes it from here; the tests check it is the
/// derive's byte for byte): the expiry truncated to the millisecond and
/// checked to be in the future, the family cleared (the struct owns it),
/// each column set, and the row marker. The baseline has no error type.
pub fn hand_entry(e: &Event, now: DateTime<Utc>) -> Result<Entry, String> {
    let ts = e.expires_at.timestamp_micros();
    let ts = ts - ts.rem_euclid(1000);
    let now_us = now.timestamp_micros();
    if ts <= now_us - now_us.rem_euclid(1000) || e.id.is_empty() {
        return Err(format!("row {}: bad expiry or key", e.id));
    }
    let delete_family = mutation::Mutation::DeleteFromFamily(mutation::DeleteFromFamily {
        family_name: FAMILY.to_owned(),
    });
    let mutations = vec![
        Mutation {
            mutation: Some(delete_family),
        },
        set(b"user", ts, e.user.as_bytes().to_vec()),
        set(b"url", ts, e.url.as_bytes().to_vec()),
        set(b"clicks", ts, e.clicks.to_be_bytes().to_vec()),
        set(Event::SCHEMA.marker, ts, MARKER_VALUE.to_vec()),
    ];
    Ok(Entry {
        row_key: e.id.as_bytes().to_vec(),
        mutations,
        ..Entry::default()
    })
}

/// The filter the library's typed reads of [`Event`] send at `now`
/// ([`bigtable_ttl::filter::read_filter`]), spelled out by hand: the family
/// (not on a table whose schema the library verified: it holds no other),
/// the cells visible at `now`, the newest per column.
pub fn read_filter(now: DateTime<Utc>, family: bool) -> RowFilter {
    use row_filter::Filter;
    let mut filters = Vec::with_capacity(3);
    if family {
        filters.push(family_filter());
    }
    filters.extend([
        row_filter(Filter::TimestampRangeFilter(TimestampRange {
            start_timestamp_micros: visible_from(now),
            end_timestamp_micros: 0,
        })),
        row_filter(Filter::CellsPerColumnLimitFilter(1)),
    ]);
    row_filter(Filter::Chain(row_filter::Chain { filters }))
}

/// What a careful programmer writes by hand with `bigtable_rs` for the
/// request `Table::insert_if_absent(e)` sends at `now`: [`hand_entry`]'s
/// mutations as the `false_mutations` of a `CheckAndMutateRow` whose
/// predicate matches a row of `Event` that exists at `now` (live or
/// incomplete, by the library's liveness rule) and carries no other
/// struct's marker without its own. `latency`'s tests compare it byte for
/// byte with the library's.
pub fn hand_insert(
    e: &Event,
    now: DateTime<Utc>,
    table_name: &str,
) -> Result<CheckAndMutateRowRequest, String> {
    use column_range::{EndQualifier, StartQualifier};
    use row_filter::{Condition, Filter};
    let entry = hand_entry(e, now)?;
    let visible_from = visible_from(now);
    let f = row_filter;
    let chain = |filters| f(Filter::Chain(row_filter::Chain { filters }));
    let interleave = |filters| f(Filter::Interleave(row_filter::Interleave { filters }));
    let branch = |predicate: RowFilter, then: RowFilter, otherwise: RowFilter| {
        f(Filter::Condition(Box::new(Condition {
            predicate_filter: Some(Box::new(predicate)),
            true_filter: Some(Box::new(then)),
            false_filter: Some(Box::new(otherwise)),
        })))
    };
    let pass = || f(Filter::PassAllFilter(true));
    let block = || f(Filter::BlockAllFilter(true));
    // `then` where `x` matches, else nothing; `x` negated.
    let and = |x, then| branch(x, then, block());
    let not = |x| branch(x, block(), pass());
    let columns = |start, end| {
        f(Filter::ColumnRangeFilter(ColumnRange {
            family_name: FAMILY.to_owned(),
            start_qualifier: Some(start),
            end_qualifier: Some(end),
        }))
    };
    let column = |q: &[u8]| {
        columns(
            StartQualifier::StartQualifierClosed(q.to_vec()),
            EndQualifier::EndQualifierClosed(q.to_vec()),
        )
    };
    let since = |from: i64, to: i64| {
        f(Filter::TimestampRangeFilter(TimestampRange {
            start_timestamp_micros: from,
            end_timestamp_micros: to,
        }))
    };
    let newest = || f(Filter::CellsPerColumnLimitFilter(1));
    let required: [&[u8]; 3] = [b"user", b"url", b"clicks"];
    let live = |q: &[u8]| chain(vec![column(q), since(visible_from, 0)]);
    // Every required column has a visible cell: nested conditions.
    let live_row = required
        .iter()
        .rev()
        .fold(pass(), |then, q| and(live(q), then));
    // Event owns its family: the one-byte marker of rows written before
    // per-struct markers is its own too.
    let own_markers = || interleave(vec![column(Event::SCHEMA.marker), column(&[0])]);
    let own_marker_visible = || chain(vec![own_markers(), since(visible_from, 0)]);
    // The marker's value is empty, the struct's fingerprint (above every
    // timestamp) or the row's expiry, big-endian.
    let row_not_expired = interleave(vec![
        f(Filter::ValueRangeFilter(ValueRange {
            start_value: Some(value_range::StartValue::StartValueClosed(Vec::new())),
            end_value: Some(value_range::EndValue::EndValueOpen(vec![0])),
        })),
        f(Filter::ValueRangeFilter(ValueRange {
            start_value: Some(value_range::StartValue::StartValueClosed(
                visible_from.to_be_bytes().to_vec(),
            )),
            end_value: None,
        })),
    ]);
    let incomplete = branch(
        own_marker_visible(),
        chain(vec![
            own_markers(),
            since(visible_from, 0),
            newest(),
            row_not_expired,
        ]),
        interleave(required.iter().map(|q| live(q)).collect()),
    );
    let proven_expired = interleave(
        required
            .iter()
            .map(|q| chain(vec![column(q), newest(), since(0, visible_from)]))
            .collect(),
    );
    let incomplete = and(not(proven_expired), and(incomplete, pass()));
    // Another struct's marker (a qualifier starting with two NUL bytes
    // other than Event's own) visible, and Event's own not.
    let own = Event::SCHEMA.marker.to_vec();
    let foreign_marker = chain(vec![
        interleave(vec![
            columns(
                StartQualifier::StartQualifierClosed(vec![0, 0]),
                EndQualifier::EndQualifierOpen(own.clone()),
            ),
            columns(
                StartQualifier::StartQualifierOpen(own),
                EndQualifier::EndQualifierOpen(vec![0, 1]),
            ),
        ]),
        since(visible_from, 0),
    ]);
    let another_structs_row = and(foreign_marker, and(not(own_marker_visible()), pass()));
    let present = interleave(vec![live_row, incomplete]);
    let predicate = and(not(another_structs_row), and(present, pass()));
    Ok(CheckAndMutateRowRequest {
        table_name: table_name.to_owned(),
        row_key: entry.row_key,
        predicate_filter: Some(predicate),
        false_mutations: entry.mutations,
        ..CheckAndMutateRowRequest::default()
    })
}

/// A row as the library's reader holds it: the cells a read of `e`'s row
/// returns, in the server's order (by qualifier, the row marker `\0`
/// first), for the decode benchmark and the null server's `ReadRows`.
pub fn raw_row(e: &Event) -> (Vec<u8>, Vec<Cell>) {
    let ts = e.expires_at.timestamp_micros();
    let ts = ts - ts.rem_euclid(1000);
    let cell = |q: &str, value: Vec<u8>| Cell::new(FAMILY, q.as_bytes(), ts, value);
    let cells = vec![
        cell("\0", Vec::new()),
        cell("clicks", e.clicks.to_be_bytes().to_vec()),
        cell("url", e.url.as_bytes().to_vec()),
        cell("user", e.user.as_bytes().to_vec()),
    ];
    (e.id.as_bytes().to_vec(), cells)
}

/// The same row as `bigtable_rs` hands it to hand-written code.
pub fn rs_row(e: &Event) -> (Vec<u8>, Vec<RowCell>) {
    let (key, cells) = raw_row(e);
    let cells = cells.into_iter().map(|c| RowCell {
        family_name: c.family,
        qualifier: c.qualifier,
        value: c.value,
        timestamp_micros: c.timestamp_micros,
        labels: Vec::new(),
    });
    (key, cells.collect())
}

/// Hand-written decoding of a row read with the timestamp filter: match the
/// qualifiers, decode the values, the expiry from the cell timestamp.
pub fn hand_decode(key: &[u8], cells: &[RowCell]) -> Result<Event, String> {
    let (mut user, mut url, mut clicks, mut ts) = (None, None, None, None);
    for c in cells {
        if c.family_name != FAMILY {
            continue;
        }
        match c.qualifier.as_slice() {
            b"user" => user = Some(String::from_utf8(c.value.clone()).map_err(|e| e.to_string())?),
            b"url" => url = Some(String::from_utf8(c.value.clone()).map_err(|e| e.to_string())?),
            b"clicks" => {
                let bytes: [u8; 8] = c.value.as_slice().try_into().map_err(|_| "clicks width")?;
                clicks = Some(i64::from_be_bytes(bytes));
            }
            _ => continue,
        }
        ts = ts.max(Some(c.timestamp_micros));
    }
    let missing = |what: &str| format!("row {}: {what} missing", String::from_utf8_lossy(key));
    Ok(Event {
        id: String::from_utf8(key.to_vec()).map_err(|e| e.to_string())?,
        expires_at: DateTime::from_timestamp_micros(ts.ok_or_else(|| missing("cells"))?)
            .ok_or("timestamp out of range")?,
        user: user.ok_or_else(|| missing("user"))?,
        url: url.ok_or_else(|| missing("url"))?,
        clicks: clicks.ok_or_else(|| missing("clicks"))?,
    })
}

/// A filter of `bigtable_rs`'s messages.
pub fn row_filter(filter: row_filter::Filter) -> RowFilter {
    RowFilter {
        filter: Some(filter),
    }
}

/// Every column of [`FAMILY`].
pub fn family_filter() -> RowFilter {
    row_filter(row_filter::Filter::ColumnRangeFilter(ColumnRange {
        family_name: FAMILY.to_owned(),
        start_qualifier: None,
        end_qualifier: None,
    }))
}

/// The first cell timestamp visible at `now` under the one-second policy:
/// a cell lives while now, to the millisecond, is before its timestamp.
pub fn visible_from(now: DateTime<Utc>) -> i64 {
    let now = now.timestamp_micros();
    now - now.rem_euclid(1000) + 1000
}

// ----- clients and servers ---------------------------------------------------

/// A fresh emulator (running while it is held), and its process.
pub fn emulator() -> Res<(bigtable_ttl_emulator::Emulator, u32)> {
    let emulator = bigtable_ttl_emulator::Emulator::start()?;
    let pid = pid_listening_on(emulator.port())
        .ok_or("no process found with the emulator's `-port` argument")?;
    Ok((emulator, pid))
}

/// A hand-written client (`bigtable_rs`) of `instance` on the emulator at
/// `host`, one connection.
pub fn rs_client(host: &str, instance: &str, read_only: bool) -> Res<BigTable> {
    let rs = BigTableConnection::new_with_emulator(host, PROJECT, instance, read_only, 1, None)?;
    Ok(rs.client())
}

/// One `MutateRows` of `entries`, every entry's status checked.
pub async fn mutate_rows(client: &mut BigTable, table_name: &str, entries: Vec<Entry>) -> Res<()> {
    let request = MutateRowsRequest {
        table_name: table_name.to_owned(),
        entries,
        ..MutateRowsRequest::default()
    };
    let mut answers = client.mutate_rows(request).await?;
    while let Some(answer) = answers.message().await? {
        let mut entries = answer.entries.iter();
        if let Some(bad) = entries.find(|e| e.status.as_ref().is_some_and(|s| s.code != 0)) {
            return Err(format!("entry {} failed: {:?}", bad.index, bad.status).into());
        }
    }
    Ok(())
}

// ----- measurement helpers ---------------------------------------------------

/// CPU time (s) this process's threads have run so far, user and kernel,
/// whatever else the machine runs at the time.
pub fn cpu_seconds() -> f64 {
    process_cpu_seconds(std::process::id())
}

/// CPU time (s) the process `pid` has run so far, from the scheduler's
/// nanosecond counters (`/proc/PID/task/*/schedstat`); NaN once it is gone.
pub fn process_cpu_seconds(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return f64::NAN;
    };
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

/// The process whose command line holds `-port PORT`: the emulator
/// listening on `PORT` (its watchdog shell passes the port alone).
pub fn pid_listening_on(port: u16) -> Option<u32> {
    let port = port.to_string();
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        args.windows(2)
            .any(|w| w[0] == b"-port" && w[1] == port.as_bytes())
            .then_some(pid)
    })
}

/// CPU time (s) all the machine's cores have been busy so far (every
/// process and the kernel; not idle or I/O wait), from `/proc/stat` in
/// Linux's 100 ticks a second: what ran besides the processes watched.
pub fn machine_busy_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return f64::NAN;
    };
    let first_line = stat.lines().next().unwrap_or_default();
    let ticks: Vec<u64> = first_line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest and guest_nice
    // after them are already in user and nice).
    let busy: u64 = ticks.iter().take(8).sum::<u64>()
        - ticks.get(3).copied().unwrap_or(0)
        - ticks.get(4).copied().unwrap_or(0);
    busy as f64 / 100.0
}

/// The machine's load average over the last minute: how much else ran
/// beside a bench.
pub fn load_average() -> Option<f64> {
    let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
    loadavg.split_whitespace().next()?.parse().ok()
}

/// The process's peak resident set size (`VmHWM`), in KiB; 0 when unknown.
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status.lines().find_map(|l| l.strip_prefix("VmHWM:"));
    kib.and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigtable_ttl::__private::{cell_ref, decode_row};

    // The hand-written requests are compared byte for byte with the
    // library's in `latency`'s tests, through a null server.

    #[test]
    fn both_decoders_agree() {
        let now = Utc::now();
        for e in events(50, now) {
            let (key, cells) = raw_row(&e);
            let a = decode_row::<Event>(&key, cells.iter().map(cell_ref), now)
                .unwrap()
                .unwrap();
            let (key, cells) = rs_row(&e);
            let b = hand_decode(&key, &cells).unwrap();
            assert_eq!(a.value, b);
            assert_eq!(a.expires_at, b.expires_at);
        }
    }
}
