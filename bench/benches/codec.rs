//! Zero-cost builders and decoders: the derive versus hand-written protobuf
//! code producing the same bytes (asserted once), for N rows.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use bigtable_ttl::__private::{cell_ref, decode_row};
use bigtable_ttl::data::Cell;
use bigtable_ttl::BigtableRow as _;
use chrono::Utc;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message as _;
use ttl_bench::{derive_entry, events, hand_decode, hand_entry, raw_row, rs_row, Event};

const N: usize = 1_000;

fn build(c: &mut Criterion) {
    let now = Utc::now();
    let rows = events(N, now);
    // Same bytes, once.
    for e in &rows {
        assert_eq!(
            derive_entry(e, now).unwrap().encode_to_vec(),
            hand_entry(e, now).unwrap().encode_to_vec()
        );
    }
    let mut g = c.benchmark_group("build");
    g.throughput(Throughput::Elements(N as u64));
    // The derive's build alone: the library's writes send what it builds
    // (the bulk writer encodes it straight to bytes), not a copy in another
    // crate's messages as `derive_entry` makes for the check above.
    g.bench_function("derive", |b| {
        b.iter(|| {
            black_box(&rows)
                .iter()
                .map(|e| e.mutation().build(now))
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        });
    });
    g.bench_function("hand", |b| {
        b.iter(|| {
            black_box(&rows)
                .iter()
                .map(|e| hand_entry(e, now))
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        });
    });
    g.finish();
}

fn decode(c: &mut Criterion) {
    let now = Utc::now();
    let rows = events(N, now);
    let lib_rows: Vec<(Vec<u8>, Vec<Cell>)> = rows.iter().map(raw_row).collect();
    let rs_rows: Vec<_> = rows.iter().map(rs_row).collect();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("derive", |b| {
        b.iter(|| {
            black_box(&lib_rows)
                .iter()
                .map(|(key, cells)| {
                    decode_row::<Event>(key, cells.iter().map(cell_ref), now).map(Option::unwrap)
                })
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        });
    });
    g.bench_function("hand", |b| {
        b.iter(|| {
            black_box(&rs_rows)
                .iter()
                .map(|(key, cells)| hand_decode(key, cells))
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        });
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = build, decode
}
criterion_main!(benches);
