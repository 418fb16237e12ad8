//! `MutateRowsResponse`s decoded without prost when they hold what a server
//! sends for a batch: entries of an index and a status code alone.
//!
//! A batch of 10,000 rows is answered with 10,000 entries. prost decodes
//! each through `Buf` calls, byte by byte on tonic's buffer; it cost the
//! bulk writer about a tenth of its client CPU per row. Here an entry of
//! the plain shapes (an index of any width; no status, an empty one, or a
//! code of one byte) is read off the message's bytes; any other message
//! (a status with a message or details, rate-limit information, an
//! unknown field, anything malformed) is decoded by prost, whole, so the
//! result and every error are prost's.

use bytes::{Buf as _, Bytes};
use prost::Message as _;
use tonic::codec::{DecodeBuf, Decoder};

use crate::model::proto::{mutate_rows_response::Entry, MutateRowsResponse};
use crate::wire::protobuf::decode_varint;

use googleapis_tonic_google_bigtable_v2::google::rpc::Status;

/// `MutateRowsResponse.entries`, `Entry.index` and `Entry.status`, and
/// `Status.code`: their key bytes.
const ENTRY: u8 = 0x0A;
const INDEX: u8 = 0x08;
const STATUS: u8 = 0x12;
const CODE: u8 = 0x08;

/// The fewest bytes an entry takes (an index of one byte and an empty
/// status, with their keys and the entry's own key and length).
const SMALLEST_ENTRY: usize = 6;

/// Decodes one stream's `MutateRowsResponse`s.
#[derive(Debug, Default)]
pub(crate) struct MutateRowsDecoder;

impl Decoder for MutateRowsDecoder {
    type Item = MutateRowsResponse;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Self::Error> {
        // One whole message; taking it is a split of tonic's buffer.
        let message = src.copy_to_bytes(src.remaining());
        decode(message).map(Some)
    }
}

/// `message` as prost decodes it, read directly when it is plain.
pub(crate) fn decode(message: Bytes) -> Result<MutateRowsResponse, tonic::Status> {
    if let Some(plain) = plain(&message) {
        return Ok(plain);
    }
    // As `tonic_prost::ProstDecoder` reports a message it cannot decode.
    MutateRowsResponse::decode(message).map_err(|e| tonic::Status::internal(e.to_string()))
}

/// The response, when every field of `message` is an entry of a plain
/// shape; `None` sends it to prost.
fn plain(message: &[u8]) -> Option<MutateRowsResponse> {
    let mut entries = Vec::with_capacity(message.len() / SMALLEST_ENTRY);
    let mut rest = message;
    while let Some((&key, after)) = rest.split_first() {
        if key != ENTRY {
            return None;
        }
        rest = after;
        let len = usize::try_from(decode_varint(&mut rest).ok()?).ok()?;
        let body = rest.get(..len)?;
        rest = &rest[len..];
        entries.push(plain_entry(body)?);
    }
    Some(MutateRowsResponse {
        entries,
        rate_limit_info: None,
    })
}

fn plain_entry(mut body: &[u8]) -> Option<Entry> {
    let mut index = 0;
    if let Some((&INDEX, after)) = body.split_first() {
        body = after;
        // An `int64`: the varint's bits, two's complement.
        #[allow(clippy::cast_possible_wrap)]
        {
            index = decode_varint(&mut body).ok()? as i64;
        }
    }
    let status = match *body {
        [] => None,
        [STATUS, 0] => Some(Status::default()),
        [STATUS, 2, CODE, code] if code < 0x80 => Some(Status {
            code: i32::from(code),
            ..Status::default()
        }),
        _ => return None,
    };
    Some(Entry { index, status })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::RateLimitInfo;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn prost(message: &[u8]) -> Result<MutateRowsResponse, String> {
        MutateRowsResponse::decode(message)
            .map_err(|e| tonic::Status::internal(e.to_string()).to_string())
    }

    fn ours(message: &[u8]) -> Result<MutateRowsResponse, String> {
        decode(Bytes::copy_from_slice(message)).map_err(|e| e.to_string())
    }

    fn status() -> impl Strategy<Value = Option<Status>> {
        prop_oneof![
            Just(None),
            (-2..300i32).prop_map(|code| Some(Status {
                code,
                ..Status::default()
            })),
            ("[a-z]{0,8}", 0..20i32).prop_map(|(message, code)| Some(Status {
                code,
                message,
                details: Vec::new(),
            })),
        ]
    }

    fn response() -> impl Strategy<Value = MutateRowsResponse> {
        let entry = (prop_oneof![0..200i64, any::<i64>()], status())
            .prop_map(|(index, status)| Entry { index, status });
        (vec(entry, 0..40), any::<bool>()).prop_map(|(entries, limited)| MutateRowsResponse {
            entries,
            rate_limit_info: limited.then_some(RateLimitInfo {
                period: None,
                factor: 0.5,
            }),
        })
    }

    proptest! {
        #[test]
        fn decodes_as_prost_does(response in response()) {
            let message = response.encode_to_vec();
            prop_assert_eq!(ours(&message), Ok(response));
        }

        #[test]
        fn damaged_and_random_messages_fail_or_agree_with_prost(
            response in response(),
            cut in any::<prop::sample::Index>(),
            flip in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            random in vec(any::<u8>(), 0..64),
        ) {
            let mut message = response.encode_to_vec();
            if !message.is_empty() {
                message.truncate(cut.index(message.len() + 1));
            }
            if !message.is_empty() {
                let at = flip.index(message.len());
                message[at] = byte;
            }
            prop_assert_eq!(ours(&message), prost(&message));
            prop_assert_eq!(ours(&random), prost(&random));
        }
    }

    #[test]
    fn a_server_s_plain_answer_is_read_without_prost() {
        let response = MutateRowsResponse {
            entries: (0..300)
                .map(|index| Entry {
                    index,
                    status: Some(Status::default()),
                })
                .collect(),
            rate_limit_info: None,
        };
        let message = response.encode_to_vec();
        assert_eq!(plain(&message), Some(response));
        let with_message = MutateRowsResponse {
            entries: vec![Entry {
                index: 1,
                status: Some(Status {
                    code: 10,
                    message: "aborted".into(),
                    details: Vec::new(),
                }),
            }],
            rate_limit_info: None,
        };
        assert_eq!(plain(&with_message.encode_to_vec()), None);
    }
}
