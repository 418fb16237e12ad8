//! The tables of `BENCHMARKS.md`'s "Parallel scan" (`parallel`'s JSON),
//! "Single-row latency" (`latency`'s) and "Point calls under concurrency"
//! (`concurrency`'s), each drawn from its columns.

use serde_json::{json, Value};

use super::markdown::{table, Column};
use super::{fixed, num, run_on, Generated};
use crate::calls::{OPS, WHO};

pub(super) fn parallel(report: &Value) -> Vec<Generated> {
    let rows = num(&report["rows"]);
    let wall = |r: &Value| num(&r["wall_s"]);
    // Other processes' share is a difference of tick counts (10 ms): shown
    // no lower than nothing.
    let busy = |r: &Value| {
        ["emulator_cpu_s", "client_cpu_s", "others_cpu_s"].map(|k| (num(&r[k]) / wall(r)).max(0.0))
    };
    let columns: [Column<&Value>; 7] = [
        ("read", &|r| match r["concurrency"].as_u64() {
            None => "`stream`, one stream".to_owned(),
            Some(n) => format!("`scan_parallel`, {n} at once ({} parts)", r["parts"]),
        }),
        ("wall", &|r| format!("{:.3} s", wall(r))),
        ("rows/s", &|r| format!("{:.0}", rows / wall(r))),
        ("single stream / this, wall", &|r| fixed(&r["speedup"], 2)),
        ("client CPU", &|r| {
            format!("{} s", fixed(&r["client_cpu_s"], 3))
        }),
        ("emulator CPU", &|r| {
            format!("{} s", fixed(&r["emulator_cpu_s"], 3))
        }),
        ("cores busy: emulator + client + other processes", &|r| {
            let [emulator, client, others] = busy(r);
            let all = emulator + client + others;
            format!("{emulator:.2} + {client:.2} + {others:.2} = {all:.2}")
        }),
    ];
    let order = report["order"].as_array().into_iter().flatten();
    let reads = order.map(|name| &report["contenders"][name.as_str().unwrap_or_default()]);
    vec![(
        "parallel",
        format!("{}\n\n{}", run_on(report), table(&columns, reads)),
    )]
}

/// A table per target of `report` (`targets.NAME`) that was measured,
/// `render`ed under the line saying when and at what load.
fn per_target(
    report: &Value,
    names: [(&str, &'static str); 2],
    render: fn(&Value) -> String,
) -> Vec<Generated> {
    let measured = names
        .into_iter()
        .filter(|(t, _)| !report["targets"][t].is_null());
    let table = |(target, name): (&str, &'static str)| {
        let measured = &report["targets"][target];
        let run = json!({"date": report["date"], "cores": report["cores"],
                         "load_average": measured["load_average"]});
        (name, format!("{}\n\n{}", run_on(&run), render(measured)))
    };
    measured.map(table).collect()
}

/// A ratio with its interval, `[value, low, high]`, as `v (low–high)`.
fn interval(v: &Value, [value, low, high]: [usize; 3]) -> String {
    let at = |i: usize| num(&v[i]);
    format!("{:.2} ({:.2}–{:.2})", at(value), at(low), at(high))
}

/// A figure in whole microseconds.
fn micros(v: &Value) -> String {
    format!("{:.0} µs", num(v))
}

pub(super) fn latency(report: &Value) -> Vec<Generated> {
    let names = [("emulator", "latency-emulator"), ("null", "latency-null")];
    per_target(report, names, latency_table)
}

/// One target's table: a row per operation and contender measured.
fn latency_table(measured: &Value) -> String {
    type Row<'a> = (&'a str, &'a str, &'a Value);
    // The library's ratio to the contender; none on the library's own row.
    let ratio = |(_, who, c): &Row, q: &str| {
        (*who != "lib").then(|| interval(&c["library_ratio"][q], [0, 1, 2]))
    };
    let columns: [Column<Row>; 8] = [
        ("call", &|(op, ..)| format!("`{op}`")),
        ("contender", &|(op, who, c)| {
            let name = match *who {
                "lib" => format!("library (`Table::{op}`)"),
                "raw" => "hand-written `bigtable_rs`".to_owned(),
                _ => "hand-written, the library's headers and attempt timeout".to_owned(),
            };
            match c["failed"].as_u64() {
                None | Some(0) => name,
                Some(1) => format!("{name}; 1 call failed"),
                Some(n) => format!("{name}; {n} calls failed"),
            }
        }),
        ("p50", &|(.., c)| micros(&c["p50_us"])),
        ("p99", &|(.., c)| micros(&c["p99_us"])),
        ("library / this contender: p50, p99 (95 % interval)", &|r| {
            let both = ratio(r, "p50").zip(ratio(r, "p99"));
            both.map(|(p50, p99)| format!("{p50}, {p99}")).unwrap_or_default()
        }),
        ("first call after the other client's block, p50: this contender's, the library's; library / this contender", &|r| {
            let c = r.2;
            ratio(r, "switch_p50").map_or(String::new(), |switch| {
                let (this, library) = (&c["first_after_library_p50_us"], &c["library_first_after_p50_us"]);
                format!("{:.0} µs, {:.0} µs; {switch}", num(this), num(library))
            })
        }),
        ("client CPU a call", &|(.., c)| micros(&c["client_cpu_us"])),
        ("server CPU a call", &|(.., c)| micros(&c["server_cpu_us"])),
    ];
    let results = &measured["results"];
    let rows = OPS
        .iter()
        .flat_map(|op| WHO.iter().map(move |who| (*op, *who, &results[op][who])));
    table(&columns, rows.filter(|(.., c)| !c.is_null()))
}

pub(super) fn concurrency(report: &Value) -> Vec<Generated> {
    let names = [
        ("emulator", "concurrency-emulator"),
        ("null", "concurrency-null"),
    ];
    per_target(report, names, concurrency_table)
}

/// One target's table: a row per contender, operation and concurrency.
fn concurrency_table(measured: &Value) -> String {
    // A paired ratio's median and quartiles, `[q1, median, q3]`.
    let ratio = |r: &Value| {
        if r.is_array() {
            interval(r, [1, 0, 2])
        } else {
            String::new()
        }
    };
    let columns: [Column<&Value>; 9] = [
        ("call", &|r| {
            format!("`{}`", r["op"].as_str().unwrap_or("?"))
        }),
        ("in flight", &|r| r["in_flight"].to_string()),
        ("contender", &|r| {
            let name = match r["who"].as_str().unwrap_or("?") {
                "lib" => "library".to_owned(),
                "hand" => "hand-written, the library's requests and headers".to_owned(),
                "node" => "Google's Node.js client".to_owned(),
                "python" => "Google's Python client (asyncio)".to_owned(),
                pool => format!("library, pool of {}", pool.trim_start_matches("lib_pool")),
            };
            match r["failed"].as_u64().filter(|&f| f > 0) {
                Some(failed) => format!("{name}; {failed} failed"),
                None => name,
            }
        }),
        ("calls/s", &|r| fixed(&r["calls_per_s"], 0)),
        ("calls/s per client core", &|r| fixed(&r["per_core"], 0)),
        ("p50", &|r| micros(&r["p50_us"])),
        ("p99", &|r| micros(&r["p99_us"])),
        (
            "library / hand-written, per core (median of the rounds, quartiles)",
            &|r| ratio(&r["vs_hand"]),
        ),
        ("library / Node at its best concurrency, per core", &|r| {
            ratio(&r["vs_node"])
        }),
    ];
    table(&columns, measured["rows"].as_array().into_iter().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each contender's figures and the library's ratios to it with their
    /// intervals; failures said; a contender not measured has no row.
    #[test]
    fn latency_shows_ratios_with_their_intervals() {
        let lib = json!({"p50_us": 110.0, "p99_us": 2.0, "client_cpu_us": 3.0,
                         "server_cpu_us": 4.0});
        let mut hand = lib.clone();
        hand["failed"] = json!(2);
        hand["first_after_library_p50_us"] = json!(9.0);
        hand["library_first_after_p50_us"] = json!(8.0);
        hand["library_ratio"] = json!({"p50": [1.1, 1.05, 1.12], "p99": [1.5, 1.25, 1.75],
                                       "switch_p50": [1.2, 1.0, 1.4]});
        let results = json!({"get": {"lib": lib, "raw_headers": hand}});
        let report = json!({"cores": 2, "date": "d", "targets":
                            {"null": {"load_average": [1.0, 2.0], "results": results}}});
        let [("latency-null", text)] = &latency(&report)[..] else {
            panic!("one target, one table");
        };
        assert!(text.starts_with("Run on d (2 cores, a load average of 1.0 at the start and 2.0"));
        for line in [
            "| `get` | library (`Table::get`) | 110 µs | 2 µs |  |  | 3 µs | 4 µs |\n",
            "| `get` | hand-written, the library's headers and attempt timeout; 2 calls failed | \
             110 µs | 2 µs | 1.10 (1.05–1.12), 1.50 (1.25–1.75) | 9 µs, 8 µs; 1.20 (1.00–1.40) |",
        ] {
            assert!(text.contains(line), "{line}\nnot in\n{text}");
        }
        assert!(
            !text.contains("`put`") && !text.contains("`bigtable_rs`"),
            "{text}"
        );
    }

    /// The library's ratios to the others as the median with its quartiles;
    /// failures said; a pool named by its size.
    #[test]
    fn concurrency_shows_each_row_and_the_paired_ratio() {
        let rows = json!([
            {"op": "get", "in_flight": 16, "who": "lib", "failed": 0, "calls_per_s": 1000.4,
             "per_core": 2000.0, "p50_us": 10.0, "p99_us": 30.0, "vs_hand": [1.1, 1.2, 1.3],
             "vs_node": [7.0, 8.0, 9.0]},
            {"op": "mixed", "in_flight": 256, "who": "lib_pool4", "failed": 2,
             "calls_per_s": 5.0, "per_core": 6.0, "p50_us": 7.0, "p99_us": 8.0},
        ]);
        let text = concurrency_table(&json!({ "rows": rows }));
        for line in [
            "| `get` | 16 | library | 1000 | 2000 | 10 µs | 30 µs | 1.20 (1.10–1.30) | 8.00 (7.00–9.00) |",
            "| `mixed` | 256 | library, pool of 4; 2 failed | 5 | 6 | 7 µs | 8 µs |  |  |",
        ] {
            assert!(text.contains(line), "{line}\nnot in\n{text}");
        }
    }
}
