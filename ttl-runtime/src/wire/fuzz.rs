//! Bounded fuzzing of what a server sends, run with the unit tests: arbitrary
//! chunk sequences fed to the [`RowMerger`], arbitrary bytes fed to the
//! `ReadRows` decoder and then to the merger. Whatever comes, nothing
//! panics, rows come out in key order and within the limit, and what comes
//! out is never more than what came in (no amplification, so memory stays
//! bounded by the input). Cases per property: `PROPTEST_CASES`, 256 by
//! default, which keeps the run to seconds on a loaded machine.

use std::collections::VecDeque;

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use prost::Message as _;

use crate::model::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
use crate::model::proto::ReadRowsResponse;
use crate::wire::chunk::{decode_response_into, Chunk, ChunkStatus, Message, Response};
use crate::wire::merge::{MergedRow, RowMerger};

fn small_bytes(max: usize) -> impl Strategy<Value = Bytes> {
    vec(
        prop_oneof![Just(b'a'), Just(b'b'), Just(b'c'), any::<u8>()],
        0..max,
    )
    .prop_map(Bytes::from)
}

/// Chunks drawn near the contract's edges: few keys and names, so that
/// rows, columns and split values do form, alongside every kind of breach.
fn chunk() -> impl Strategy<Value = Chunk> {
    (
        prop_oneof![3 => Just(Bytes::new()), 2 => small_bytes(2)],
        proptest::option::of(small_bytes(2)),
        proptest::option::of(small_bytes(2)),
        prop_oneof![4 => Just(0i64), 1 => any::<i64>()],
        small_bytes(8),
        prop_oneof![4 => Just(0i32), 2 => 0i32..12, 1 => any::<i32>()],
        any::<bool>(),
        prop_oneof![
            Just(ChunkStatus::None),
            Just(ChunkStatus::Commit),
            Just(ChunkStatus::Reset)
        ],
    )
        .prop_map(
            |(row_key, family, qualifier, timestamp_micros, value, value_size, labels, status)| {
                Chunk {
                    row_key,
                    family,
                    qualifier,
                    timestamp_micros,
                    value,
                    value_size,
                    labels,
                    status,
                }
            },
        )
}

/// What `rows` hold, in key and value bytes.
fn bytes_of(rows: &VecDeque<MergedRow>) -> usize {
    rows.iter()
        .map(|(key, cells)| key.len() + cells.iter().map(|c| c.value.len()).sum::<usize>())
        .sum()
}

/// Rows come in strictly increasing key order (decreasing when reversed).
fn in_order(rows: &VecDeque<MergedRow>, reversed: bool) -> bool {
    rows.iter().zip(rows.iter().skip(1)).all(
        |((a, _), (b, _))| {
            if reversed {
                b < a
            } else {
                b > a
            }
        },
    )
}

/// `chunks` encoded as one `ReadRowsResponse`, each `(at, xor)` of
/// `flips` applied to its bytes.
fn damaged(chunks: Vec<CellChunk>, flips: &[(prop::sample::Index, u8)]) -> Vec<u8> {
    let mut message = ReadRowsResponse {
        chunks,
        ..ReadRowsResponse::default()
    }
    .encode_to_vec();
    if !message.is_empty() {
        for (at, xor) in flips {
            let at = at.index(message.len());
            message[at] ^= xor;
        }
    }
    message
}

proptest! {
    #[test]
    fn any_chunk_sequence_merges_or_fails_without_harm(
        messages in vec(vec(chunk(), 0..8), 0..6),
        scanned in vec(proptest::option::of(small_bytes(2)), 0..6),
        reversed in any::<bool>(),
        limit in 0i64..4,
    ) {
        let mut merger = RowMerger::new(reversed).with_limit(limit);
        let mut rows = VecDeque::new();
        let mut input = 0;
        for (i, chunks) in messages.into_iter().enumerate() {
            input += chunks.iter().map(|c| c.row_key.len() + c.value.len()).sum::<usize>();
            let response = Response {
                chunks,
                last_scanned_row_key: scanned.get(i).cloned().flatten().unwrap_or_default(),
            };
            if merger.feed_response(response, &mut rows).is_err() {
                break;
            }
        }
        let _ = merger.finish();
        prop_assert!(in_order(&rows, reversed));
        if limit > 0 {
            prop_assert!(i64::try_from(rows.len()).unwrap() <= limit);
        }
        // Keys may repeat the input's (a key is given once per row, its
        // cells reuse it), values never: each value byte came once.
        let values: usize = rows.iter().flat_map(|(_, c)| c.iter().map(|c| c.value.len())).sum();
        prop_assert!(values <= input);
    }

    #[test]
    fn any_bytes_decode_and_merge_or_fail_without_harm(
        messages in vec(vec(any::<u8>(), 0..200), 0..6),
    ) {
        let mut merger = RowMerger::new(false);
        let mut rows = VecDeque::new();
        let total: usize = messages.iter().map(Vec::len).sum();
        for message in messages {
            let message = Bytes::from(message);
            let mut response = Response::default();
            let decoded = decode_response_into(
                &message,
                &mut response.chunks,
                &mut response.last_scanned_row_key,
            );
            if decoded.is_err() || merger.feed_response(response, &mut rows).is_err() {
                break;
            }
        }
        prop_assert!(in_order(&rows, false));
        prop_assert!(bytes_of(&rows) <= total * 2);
    }

    #[test]
    fn damaged_valid_responses_decode_and_merge_or_fail_without_harm(
        keys in vec(small_bytes(3), 1..5),
        split in 0usize..6,
        flips in vec((any::<prop::sample::Index>(), 1..=u8::MAX), 1..4),
    ) {
        let chunks: Vec<CellChunk> = keys
            .iter()
            .filter(|k| !k.is_empty())
            .map(|k| CellChunk {
                row_key: k.to_vec(),
                family_name: Some("f".into()),
                qualifier: Some(b"q".to_vec()),
                value: b"value".to_vec(),
                row_status: Some(RowStatus::CommitRow(true)),
                ..CellChunk::default()
            })
            .collect();
        let message = damaged(chunks, &flips);
        let cut = split.min(message.len());
        let mut merger = RowMerger::new(false);
        let mut rows = VecDeque::new();
        for part in [&message[..cut], &message[cut..]] {
            let part = Bytes::copy_from_slice(part);
            let mut response = Response::default();
            let ok = decode_response_into(&part, &mut response.chunks, &mut response.last_scanned_row_key).is_ok()
                && merger.feed_response(response, &mut rows).is_ok();
            if !ok {
                break;
            }
        }
        prop_assert!(in_order(&rows, false));
        prop_assert!(bytes_of(&rows) <= message.len() * 2);
    }

    /// The merger reading a message in place (what a read does) agrees
    /// with decoding the whole message first and merging its chunks after
    /// (what the tests above check): the same rows, and an error exactly
    /// when that path has one, for damaged and undamaged responses cut
    /// anywhere. Only the rows of a message that fails may differ (read in
    /// place, those before the break were merged): a read drops them with
    /// the failure.
    #[test]
    fn reading_in_place_agrees_with_decoding_first(
        keys in vec(small_bytes(3), 1..6),
        cuts in vec(any::<prop::sample::Index>(), 0..3),
        flips in vec((any::<prop::sample::Index>(), 0..=u8::MAX), 0..3),
        split_values in any::<bool>(),
    ) {
        let chunks: Vec<CellChunk> = keys
            .iter()
            .filter(|k| !k.is_empty())
            .flat_map(|k| {
                let first = CellChunk {
                    row_key: k.to_vec(),
                    family_name: Some("f".into()),
                    qualifier: Some(b"q".to_vec()),
                    timestamp_micros: 1_000,
                    value: b"val".to_vec(),
                    value_size: if split_values { 6 } else { 0 },
                    ..CellChunk::default()
                };
                let last = CellChunk {
                    value: if split_values { b"ue!".to_vec() } else { b"v2".to_vec() },
                    qualifier: (!split_values).then(|| b"r".to_vec()),
                    row_status: Some(RowStatus::CommitRow(true)),
                    ..CellChunk::default()
                };
                [first, last]
            })
            .collect();
        let message = damaged(chunks, &flips);
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(message.len() + 1)).collect();
        at.sort_unstable();
        let mut parts = Vec::new();
        let mut start = 0;
        for cut in at.into_iter().chain([message.len()]) {
            parts.push(Bytes::copy_from_slice(&message[start..cut]));
            start = cut;
        }
        let (mut in_place, mut first) = (RowMerger::new(false), RowMerger::new(false));
        let (mut rows_in_place, mut rows_first) = (VecDeque::new(), VecDeque::new());
        let (mut borrowing, mut rows_borrowed) = (RowMerger::new(false), VecDeque::new());
        for part in parts {
            let before = (rows_in_place.len(), rows_first.len(), rows_borrowed.len());
            let read = in_place.feed_merged(&Message(part.clone()), &mut rows_in_place);
            let lent = borrowing.feed_handing_over(&Message(part.clone()), true, &mut rows_borrowed);
            prop_assert_eq!(format!("{read:?}"), format!("{lent:?}"));
            prop_assert_eq!(&rows_in_place, &rows_borrowed);
            let mut response = Response::default();
            let decoded =
                decode_response_into(&part, &mut response.chunks, &mut response.last_scanned_row_key);
            let merged = decoded.and_then(|()| first.feed_response(response, &mut rows_first));
            prop_assert_eq!(read.is_ok(), merged.is_ok(), "{:?} against {:?}", read, merged);
            if let Ok(moved) = read {
                prop_assert_eq!(moved, merged.unwrap());
            } else {
                rows_in_place.truncate(before.0);
                rows_first.truncate(before.1);
                rows_borrowed.truncate(before.2);
                break;
            }
        }
        prop_assert_eq!(rows_in_place, rows_first);
    }
}
