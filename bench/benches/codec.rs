//! Zero-cost builders and decoders: the derive against hand-written
//! protobuf code producing the same bytes (`ttl_bench`'s tests check), for
//! N rows.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use bigtable_ttl::__private::{cell_ref, decode_row};
use bigtable_ttl::BigtableRow as _;
use chrono::Utc;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ttl_bench::{events, hand_decode, hand_entry, raw_row, rs_row, Event};

const N: usize = 1_000;

/// The group `name`: `derive` against `hand`, each a pass over the N rows.
fn derive_against_hand<D, H>(
    c: &mut Criterion,
    name: &str,
    mut derive: impl FnMut() -> D,
    mut hand: impl FnMut() -> H,
) {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("derive", |b| b.iter(&mut derive));
    g.bench_function("hand", |b| b.iter(&mut hand));
    g.finish();
}

fn build(c: &mut Criterion) {
    let now = Utc::now();
    let rows = events(N, now);
    // The derive's build alone: the library's writes send what it builds
    // (the bulk writer encodes it straight to bytes), not a copy in
    // `bigtable_rs`'s messages as the tests make to compare bytes.
    let derive = || {
        let built = black_box(&rows).iter().map(|e| e.mutation().build(now));
        built.collect::<Result<Vec<_>, _>>().unwrap()
    };
    let hand = || {
        let built = black_box(&rows).iter().map(|e| hand_entry(e, now));
        built.collect::<Result<Vec<_>, _>>().unwrap()
    };
    derive_against_hand(c, "build", derive, hand);
}

fn decode(c: &mut Criterion) {
    let now = Utc::now();
    let rows = events(N, now);
    let lib_rows: Vec<_> = rows.iter().map(raw_row).collect();
    let rs_rows: Vec<_> = rows.iter().map(rs_row).collect();
    let derive = || {
        let decoded = black_box(&lib_rows).iter().map(|(key, cells)| {
            decode_row::<Event>(key, cells.iter().map(cell_ref), now).map(Option::unwrap)
        });
        decoded.collect::<Result<Vec<_>, _>>().unwrap()
    };
    let hand = || {
        let decoded = black_box(&rs_rows)
            .iter()
            .map(|(key, cells)| hand_decode(key, cells));
        decoded.collect::<Result<Vec<_>, _>>().unwrap()
    };
    derive_against_hand(c, "decode", derive, hand);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = build, decode
}
criterion_main!(benches);
