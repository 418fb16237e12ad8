//! The `MutateRows` codec: requests whose entries are encoded once
//! ([`EncodedBatch`]) and sent as those bytes, a retry sending a subset;
//! responses as prost decodes them, the plain ones read directly
//! ([`crate::wire::mutate_answer`]).
//!
//! `bigtable_rs` encodes a `MutateRowsRequest` from its `Entry` values at
//! send time. The bulk writer needs each batch's encoding anyway (it is what
//! retries re-send), so it encodes every entry once, straight into the wire
//! form: no `Entry` list is kept, and no second encoding is made.

use std::sync::Arc;

use tonic::codec::{Codec, EncodeBuf, Encoder};

use crate::model::idempotent::idempotent;
use crate::model::proto::{mutate_rows_request::Entry, MutateRowsResponse};
use crate::wire::mutate_answer::MutateRowsDecoder;
use crate::wire::protobuf::{
    decode_varint, encode_key, encode_message, encode_varint, encoded_len_varint, key_len,
    message_len, WireType,
};

/// Entries of one `MutateRowsRequest`, each encoded once in its wire form
/// (field 2, length-delimited), back to back: the request body and the
/// batch's retry material at once.
#[derive(Debug, Default)]
pub(crate) struct EncodedBatch {
    bytes: Vec<u8>,
    /// Where each entry ends in `bytes`.
    ends: Vec<usize>,
    /// The entries, in order, that must not be sent twice (see
    /// [`idempotent`]): a retry leaves them out.
    once: Vec<usize>,
}

/// `MutateRowsRequest.entries`.
const ENTRIES_FIELD: u32 = 2;
/// `Entry.row_key`, the first field an entry is encoded with.
const ROW_KEY_KEY: u8 = 0x0A;

impl EncodedBatch {
    pub(crate) fn with_capacity(entries: usize, bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(entries),
            once: Vec::new(),
        }
    }

    /// Append `entry`; its encoded size (with its field header) comes back.
    pub(crate) fn push(&mut self, entry: &Entry) -> usize {
        if !idempotent(&entry.mutations) {
            self.once.push(self.ends.len());
        }
        let start = self.bytes.len();
        encode_message(ENTRIES_FIELD, entry, &mut self.bytes);
        self.ends.push(self.bytes.len());
        self.bytes.len() - start
    }

    /// Whether entry `i` may be sent again after an attempt that carried
    /// it got no answer for it.
    pub(crate) fn repeatable(&self, i: usize) -> bool {
        self.once.binary_search(&i).is_err()
    }

    /// Append the entry `write` appends to the bytes (its whole field,
    /// header and length prefix included; the library's rows are written
    /// so, by `MutationBuilder::encode_checked`, every cell at an explicit
    /// timestamp: idempotent), with what `write` says of it; nothing is appended when `write` fails (it leaves the bytes
    /// as they were).
    pub(crate) fn push_with<R, E>(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<R, E>,
    ) -> Result<R, E> {
        let written = write(&mut self.bytes)?;
        self.ends.push(self.bytes.len());
        Ok(written)
    }

    /// Room for `entries` entries and `bytes` bytes in all.
    pub(crate) fn reserve_total(&mut self, entries: usize, bytes: usize) {
        self.ends.reserve(entries.saturating_sub(self.ends.len()));
        self.bytes.reserve(bytes.saturating_sub(self.bytes.len()));
    }

    /// The last entry taken out, as the first of a new batch with room for
    /// `entries` entries and `bytes` bytes.
    pub(crate) fn split_last(&mut self, entries: usize, bytes: usize) -> EncodedBatch {
        let mut next = EncodedBatch::with_capacity(entries, bytes);
        if let Some(last) = self.ends.pop() {
            if self.once.last() == Some(&self.ends.len()) {
                self.once.pop();
                next.once.push(0);
            }
            let start = self.ends.last().copied().unwrap_or(0);
            next.bytes.extend_from_slice(&self.bytes[start..last]);
            next.ends.push(next.bytes.len());
            self.bytes.truncate(start);
        }
        next
    }

    /// The encoded size `entry` would take in a batch.
    pub(crate) fn size_of(entry: &Entry) -> usize {
        message_len(ENTRIES_FIELD, entry)
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Entry `i` in its wire form (field header included).
    pub(crate) fn wire(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Entry `i`'s body, without the field header.
    fn body(&self, i: usize) -> &[u8] {
        let mut rest = self.wire(i);
        // The field header: one key byte, then the length varint.
        rest = rest.get(1..).unwrap_or_default();
        match decode_varint(&mut rest) {
            Ok(_) => rest,
            Err(_) => &[],
        }
    }

    /// Entry `i` decoded again.
    #[cfg(test)]
    fn entry(&self, i: usize) -> Result<Entry, prost::DecodeError> {
        prost::Message::decode(self.body(i))
    }

    /// Entry `i`'s row key.
    pub(crate) fn key(&self, i: usize) -> Vec<u8> {
        let mut rest = self.body(i);
        if rest.first() != Some(&ROW_KEY_KEY) {
            return Vec::new();
        }
        rest = &rest[1..];
        decode_varint(&mut rest)
            .ok()
            .and_then(|len| usize::try_from(len).ok())
            .and_then(|len| rest.get(..len))
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        (0..self.len()).map(|i| self.key(i))
    }
}

/// A `MutateRowsRequest` whose entries are already encoded.
pub(crate) struct MutateRowsBody {
    pub(crate) table_name: Arc<str>,
    /// Empty: the instance's default profile (and no field on the wire).
    pub(crate) app_profile: Arc<str>,
    pub(crate) batch: Arc<EncodedBatch>,
    pub(crate) selected: Option<Vec<usize>>,
}

/// `MutateRowsRequest.table_name`.
const TABLE_NAME_FIELD: u32 = 1;
/// `MutateRowsRequest.app_profile_id`.
const APP_PROFILE_FIELD: u32 = 3;

/// The length of a string field, as prost encodes it (nothing when empty).
fn string_field_len(tag: u32, text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    key_len(tag) + encoded_len_varint(text.len() as u64) + text.len()
}

/// A string field, as prost encodes it (nothing when empty).
fn encode_string_field(tag: u32, text: &str, dst: &mut impl bytes::BufMut) {
    if text.is_empty() {
        return;
    }
    encode_key(tag, WireType::LengthDelimited, dst);
    encode_varint(text.len() as u64, dst);
    dst.put_slice(text.as_bytes());
}

impl MutateRowsBody {
    fn encoded_len(&self) -> usize {
        let entries = match &self.selected {
            None => self.batch.bytes.len(),
            Some(selected) => selected.iter().map(|&i| self.batch.wire(i).len()).sum(),
        };
        string_field_len(TABLE_NAME_FIELD, &self.table_name)
            + string_field_len(APP_PROFILE_FIELD, &self.app_profile)
            + entries
    }

    /// In prost's order (by tag): table name, entries, app profile.
    fn encode(&self, dst: &mut impl bytes::BufMut) {
        encode_string_field(TABLE_NAME_FIELD, &self.table_name, dst);
        match &self.selected {
            None => dst.put_slice(&self.batch.bytes),
            Some(selected) => {
                for &i in selected {
                    dst.put_slice(self.batch.wire(i));
                }
            }
        }
        encode_string_field(APP_PROFILE_FIELD, &self.app_profile, dst);
    }
}

/// Pre-encoded `MutateRowsRequest` out, responses in as prost decodes them
/// ([`crate::wire::mutate_answer`]).
pub(crate) struct MutateRowsCodec;

impl Codec for MutateRowsCodec {
    type Encode = MutateRowsBody;
    type Decode = MutateRowsResponse;
    type Encoder = BodyEncoder;
    type Decoder = MutateRowsDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        BodyEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        MutateRowsDecoder
    }
}

pub(crate) struct BodyEncoder;

impl Encoder for BodyEncoder {
    type Item = MutateRowsBody;
    type Error = tonic::Status;

    fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
        dst.reserve(item.encoded_len());
        item.encode(dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::{mutation, MutateRowsRequest, Mutation};
    use prost::Message as _;

    fn entry(key: &str, value: &[u8]) -> Entry {
        Entry {
            row_key: key.as_bytes().to_vec(),
            mutations: vec![Mutation {
                mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
                    family_name: "e".into(),
                    column_qualifier: b"q".to_vec(),
                    timestamp_micros: 1_000,
                    value: value.to_vec(),
                })),
            }],
            ..Entry::default()
        }
    }

    fn batch(entries: &[Entry]) -> Arc<EncodedBatch> {
        let mut batch = EncodedBatch::default();
        for e in entries {
            assert_eq!(batch.push(e), EncodedBatch::size_of(e));
        }
        Arc::new(batch)
    }

    fn body_bytes(body: &MutateRowsBody) -> Vec<u8> {
        let mut out = Vec::new();
        body.encode(&mut out);
        assert_eq!(out.len(), body.encoded_len());
        out
    }

    #[test]
    fn a_body_is_the_request_prost_would_encode() {
        let entries: Vec<Entry> = (0..50)
            .map(|i| entry(&format!("row-{i}"), &vec![7; i * 37]))
            .collect();
        for profile in ["", "batch"] {
            let body = MutateRowsBody {
                table_name: "projects/p/instances/i/tables/t".into(),
                app_profile: profile.into(),
                batch: batch(&entries),
                selected: None,
            };
            let expected = MutateRowsRequest {
                table_name: "projects/p/instances/i/tables/t".into(),
                app_profile_id: profile.into(),
                entries: entries.clone(),
                ..MutateRowsRequest::default()
            };
            assert!(
                body_bytes(&body) == expected.encode_to_vec(),
                "profile {profile:?}"
            );
        }
    }

    #[test]
    fn entries_pushed_as_bytes_and_split_off_read_back() {
        let entries: Vec<Entry> = (0..4).map(|i| entry(&format!("k{i}"), b"v")).collect();
        let mut batch = EncodedBatch::default();
        for e in &entries {
            let size = batch
                .push_with(|bytes| {
                    let start = bytes.len();
                    encode_message(ENTRIES_FIELD, e, bytes);
                    Ok::<usize, ()>(bytes.len() - start)
                })
                .unwrap();
            assert_eq!(size, EncodedBatch::size_of(e));
        }
        // A failed write leaves nothing.
        assert!(batch.push_with(|_| Err::<(), &str>("bad row")).is_err());
        assert_eq!(batch.len(), 4);
        let next = batch.split_last(10, 1_000);
        assert_eq!(batch.len(), 3);
        assert_eq!(next.len(), 1);
        assert_eq!(next.entry(0).unwrap(), entries[3]);
        let whole = entries[..3].to_vec();
        for (i, e) in whole.iter().enumerate() {
            assert_eq!(&batch.entry(i).unwrap(), e);
        }
        let body = MutateRowsBody {
            table_name: "t".into(),
            app_profile: "".into(),
            batch: Arc::new(batch),
            selected: None,
        };
        let expected = MutateRowsRequest {
            table_name: "t".into(),
            entries: whole,
            ..MutateRowsRequest::default()
        };
        assert!(body_bytes(&body) == expected.encode_to_vec());
    }

    #[test]
    fn a_retry_body_holds_only_the_selected_entries() {
        let entries: Vec<Entry> = (0..10).map(|i| entry(&format!("k{i}"), b"v")).collect();
        let body = MutateRowsBody {
            table_name: "t".into(),
            app_profile: "p".into(),
            batch: batch(&entries),
            selected: Some(vec![1, 4, 9]),
        };
        let decoded = MutateRowsRequest::decode(body_bytes(&body).as_slice()).unwrap();
        assert_eq!(decoded.table_name, "t");
        assert_eq!(decoded.app_profile_id, "p");
        assert_eq!(
            decoded.entries,
            vec![entries[1].clone(), entries[4].clone(), entries[9].clone()]
        );
    }

    /// Hands out one token and records the scopes asked for.
    #[test]
    fn entries_and_keys_read_back_from_the_batch() {
        let long_key = "x".repeat(300);
        let entries = vec![
            entry("a", b""),
            entry(&long_key, &[1; 200]),
            entry("", b"z"),
        ];
        let batch = batch(&entries);
        assert_eq!(batch.len(), 3);
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(&batch.entry(i).unwrap(), e);
            assert_eq!(batch.key(i), e.row_key);
        }
        let keys: Vec<Vec<u8>> = batch.keys().collect();
        assert_eq!(keys[1], long_key.as_bytes());
    }
}
