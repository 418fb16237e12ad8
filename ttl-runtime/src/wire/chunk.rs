//! `ReadRows` responses decoded in place: each cell chunk's row key, family,
//! qualifier and value are slices of the received message, not copies.
//!
//! prost decodes a `CellChunk` into a fresh `Vec<u8>` or `String` per field,
//! so a scan of small cells spends its time in malloc, memmove and free.
//! Here a chunk is read as a [`ChunkRef`] borrowing the message and handed
//! straight to the merger ([`for_each_chunk`]): no chunk list is made, and
//! the merger shares with the message only what it keeps (a row's key, a
//! cell's qualifier and value). Only a split cell value (one spread over
//! several chunks) is ever copied, by the merger.

use std::ops::Range;

#[cfg(test)]
use crate::model::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
use crate::model::proto::ReadRowsRequest;
use bytes::{Buf, Bytes};
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic_prost::ProstEncoder;

use crate::wire::protobuf::{
    check_wire_type, decode_key, decode_varint, skip_field, wire_type, DecodeError, WireType,
};
use crate::wire::read_error::ReadError;

/// Whether a chunk ends its row (`row_status`; a `false` flag is no status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ChunkStatus {
    #[default]
    None,
    Reset,
    Commit,
}

/// One `ReadRowsResponse.CellChunk` as read, its byte fields borrowing the
/// message. Labels are not kept (no reader uses them), only whether there
/// were any: where the contract allows none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ChunkRef<'a> {
    /// Empty when not set.
    pub(crate) row_key: &'a [u8],
    /// The `StringValue`'s bytes. Not yet checked as UTF-8: the merger checks
    /// a name only when it starts a new family, once per family and row.
    pub(crate) family: Option<&'a [u8]>,
    pub(crate) qualifier: Option<&'a [u8]>,
    pub(crate) timestamp_micros: i64,
    pub(crate) value: &'a [u8],
    pub(crate) value_size: i32,
    pub(crate) labels: bool,
    pub(crate) status: ChunkStatus,
}

/// A [`ChunkRef`] that owns its bytes: what the tests build chunks from
/// and compare decoded chunks with.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Chunk {
    pub(crate) row_key: Bytes,
    pub(crate) family: Option<Bytes>,
    pub(crate) qualifier: Option<Bytes>,
    pub(crate) timestamp_micros: i64,
    pub(crate) value: Bytes,
    pub(crate) value_size: i32,
    pub(crate) labels: bool,
    pub(crate) status: ChunkStatus,
}

#[cfg(test)]
impl Chunk {
    /// The chunk as the merger reads it.
    pub(crate) fn as_ref(&self) -> ChunkRef<'_> {
        ChunkRef {
            row_key: &self.row_key,
            family: self.family.as_deref(),
            qualifier: self.qualifier.as_deref(),
            timestamp_micros: self.timestamp_micros,
            value: &self.value,
            value_size: self.value_size,
            labels: self.labels,
            status: self.status,
        }
    }

    /// `chunk`, its bytes shared with `message`, which holds them.
    fn sharing(message: &Bytes, chunk: ChunkRef<'_>) -> Self {
        Self {
            row_key: message.slice_ref(chunk.row_key),
            family: chunk.family.map(|f| message.slice_ref(f)),
            qualifier: chunk.qualifier.map(|q| message.slice_ref(q)),
            timestamp_micros: chunk.timestamp_micros,
            value: message.slice_ref(chunk.value),
            value_size: chunk.value_size,
            labels: chunk.labels,
            status: chunk.status,
        }
    }
}

/// prost's chunk as the merger's tests write them.
#[cfg(test)]
impl From<CellChunk> for Chunk {
    fn from(chunk: CellChunk) -> Self {
        Self {
            row_key: chunk.row_key.into(),
            family: chunk.family_name.map(Bytes::from),
            qualifier: chunk.qualifier.map(Bytes::from),
            timestamp_micros: chunk.timestamp_micros,
            value: chunk.value.into(),
            value_size: chunk.value_size,
            labels: !chunk.labels.is_empty(),
            status: match chunk.row_status {
                Some(RowStatus::ResetRow(true)) => ChunkStatus::Reset,
                Some(RowStatus::CommitRow(true)) => ChunkStatus::Commit,
                _ => ChunkStatus::None,
            },
        }
    }
}

/// `ReadRowsResponse` field numbers.
mod response {
    pub(super) const CHUNKS: u32 = 1;
    pub(super) const LAST_SCANNED_ROW_KEY: u32 = 2;
    pub(super) const REQUEST_STATS: u32 = 3;
}

/// `CellChunk` field numbers.
mod cell_chunk {
    pub(super) const ROW_KEY: u32 = 1;
    pub(super) const FAMILY_NAME: u32 = 2;
    pub(super) const QUALIFIER: u32 = 3;
    pub(super) const TIMESTAMP_MICROS: u32 = 4;
    pub(super) const LABELS: u32 = 5;
    pub(super) const VALUE: u32 = 6;
    pub(super) const VALUE_SIZE: u32 = 7;
    pub(super) const RESET_ROW: u32 = 8;
    pub(super) const COMMIT_ROW: u32 = 9;
}

/// `google.protobuf.StringValue.value` and `BytesValue.value`.
const WRAPPED_VALUE: u32 = 1;
/// Its key: field 1, length-delimited.
const WRAPPED_VALUE_KEY: u8 = 0x0A;

/// One `ReadRowsResponse` message as received, whole: the merger reads
/// its chunks in place ([`crate::wire::merge::RowMerger::feed_message`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Message(pub(crate) Bytes);

/// One `ReadRowsResponse` decoded into owned chunks, and the key the
/// server scanned up to without a row to send (`last_scanned_row_key`,
/// empty when not set): what the merger's tests feed it.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Response {
    pub(crate) chunks: Vec<Chunk>,
    pub(crate) last_scanned_row_key: Bytes,
}

/// Why reading a message's chunks stopped.
#[derive(Debug)]
pub(crate) enum Stop<E> {
    /// The message is not a `ReadRowsResponse`.
    Malformed(DecodeError),
    /// The chunk's reader refused it.
    Chunk(E),
}

/// Hand each chunk of one encoded `ReadRowsResponse` to `each`, in order,
/// as it is read; the message's `last_scanned_row_key` comes back (empty
/// when it has none).
///
/// Decodes as prost would (unknown fields skipped, the last of a repeated
/// scalar field wins, a repeated wrapper message merged into the first),
/// except that the family name's UTF-8 is left to the merger and the
/// skipped fields (labels, request stats) are not decoded. A malformed
/// message stops where it breaks: the chunks before it were handed over,
/// and the message as a whole is invalid.
pub(crate) fn for_each_chunk<'a, E>(
    message: &'a [u8],
    mut each: impl FnMut(ChunkRef<'a>) -> Result<(), E>,
) -> Result<&'a [u8], Stop<E>> {
    let mut last_scanned: &[u8] = &[];
    let mut fields = Fields::new(message, 0..message.len());
    while let Some((tag, wire_type)) = fields.key().map_err(Stop::Malformed)? {
        match tag {
            response::CHUNKS => {
                let body = fields.delimited(wire_type).map_err(Stop::Malformed)?;
                let chunk = decode_chunk(message, body).map_err(Stop::Malformed)?;
                each(chunk).map_err(Stop::Chunk)?;
            }
            response::LAST_SCANNED_ROW_KEY => {
                last_scanned = fields.bytes(wire_type).map_err(Stop::Malformed)?;
            }
            response::REQUEST_STATS => {
                fields.delimited(wire_type).map_err(Stop::Malformed)?;
            }
            _ => fields.skip(tag, wire_type).map_err(Stop::Malformed)?,
        }
    }
    Ok(last_scanned)
}

/// Append the chunks of one encoded `ReadRowsResponse` to `out`, sharing
/// its bytes ([`for_each_chunk`]).
#[cfg(test)]
pub(crate) fn decode_response(message: &Bytes, out: &mut Vec<Chunk>) -> Result<(), ReadError> {
    decode_response_into(message, out, &mut Bytes::new())
}

/// [`decode_response`], and the message's `last_scanned_row_key` into
/// `last_scanned` (left as it is when the message has none).
#[cfg(test)]
pub(crate) fn decode_response_into(
    message: &Bytes,
    out: &mut Vec<Chunk>,
    last_scanned: &mut Bytes,
) -> Result<(), ReadError> {
    let scanned = for_each_chunk(message, |chunk| {
        out.push(Chunk::sharing(message, chunk));
        Ok::<(), ReadError>(())
    })
    .map_err(|stop| match stop {
        Stop::Malformed(e) => malformed(e),
        Stop::Chunk(e) => e,
    })?;
    if !scanned.is_empty() {
        *last_scanned = message.slice_ref(scanned);
    }
    Ok(())
}

fn decode_chunk(message: &[u8], body: Range<usize>) -> Result<ChunkRef<'_>, DecodeError> {
    let mut chunk = ChunkRef::default();
    let mut fields = Fields::new(message, body);
    while let Some((tag, wire_type)) = fields.key()? {
        match tag {
            cell_chunk::ROW_KEY => chunk.row_key = fields.bytes(wire_type)?,
            cell_chunk::FAMILY_NAME => {
                chunk.family = Some(fields.wrapped(wire_type, chunk.family)?);
            }
            cell_chunk::QUALIFIER => {
                chunk.qualifier = Some(fields.wrapped(wire_type, chunk.qualifier)?);
            }
            cell_chunk::TIMESTAMP_MICROS => {
                chunk.timestamp_micros = int64(fields.varint(wire_type)?);
            }
            cell_chunk::LABELS => {
                fields.delimited(wire_type)?;
                chunk.labels = true;
            }
            cell_chunk::VALUE => chunk.value = fields.bytes(wire_type)?,
            cell_chunk::VALUE_SIZE => chunk.value_size = int32(fields.varint(wire_type)?),
            cell_chunk::RESET_ROW => {
                chunk.status = flag(&mut fields, wire_type, ChunkStatus::Reset)?;
            }
            cell_chunk::COMMIT_ROW => {
                chunk.status = flag(&mut fields, wire_type, ChunkStatus::Commit)?;
            }
            _ => fields.skip(tag, wire_type)?,
        }
    }
    Ok(chunk)
}

/// A `row_status` flag: the oneof's last member wins, and a `false` flag
/// leaves no status.
fn flag(
    fields: &mut Fields<'_>,
    wire_type: WireType,
    set: ChunkStatus,
) -> Result<ChunkStatus, DecodeError> {
    Ok(if fields.varint(wire_type)? == 0 {
        ChunkStatus::None
    } else {
        set
    })
}

// Protobuf's `int64` and `int32` are the varint's low bits, two's complement
// (a negative `int32` is sent as a 10-byte varint).
#[allow(clippy::cast_possible_wrap)]
fn int64(varint: u64) -> i64 {
    varint as i64
}

#[allow(clippy::cast_possible_truncation)]
fn int32(varint: u64) -> i32 {
    varint as i32
}

/// A message that does not decode, as the read reports it.
pub(crate) fn malformed(error: impl std::fmt::Display) -> ReadError {
    ReadError::Protocol(error.to_string())
}

/// The fields of one (sub)message of `message`, read from `pos` up to
/// `end`; a field's bytes come out as slices of `message`, so nothing is
/// copied. `pos <= end <= message.len()` always.
///
/// Its steps fail with the small [`DecodeError`], not [`ReadError`]: a
/// scan calls them a few dozen times a row, and a result the size of
/// `tonic::Status` is moved through memory at every call. Varints of one
/// byte (almost every key and length of a chunk) are read in place; the
/// general rule is [`decode_varint`]'s.
struct Fields<'a> {
    message: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Fields<'a> {
    fn new(message: &'a [u8], range: Range<usize>) -> Self {
        Self {
            message,
            pos: range.start,
            end: range.end,
        }
    }

    /// Run a decoding step on the unread bytes and move past what it read.
    fn read<T>(
        &mut self,
        step: impl FnOnce(&mut &'a [u8]) -> Result<T, DecodeError>,
    ) -> Result<T, DecodeError> {
        let mut rest: &'a [u8] = &self.message[self.pos..self.end];
        let out = step(&mut rest)?;
        self.pos = self.end - rest.len();
        Ok(out)
    }

    /// The unread byte at `pos`, when it is a whole varint.
    #[inline]
    fn one_byte_varint(&mut self) -> Option<u8> {
        let byte = *self.message.get(self.pos).filter(|_| self.pos < self.end)?;
        (byte < 0x80).then(|| {
            self.pos += 1;
            byte
        })
    }

    /// The next field's number and wire type; `None` at the end.
    #[inline]
    fn key(&mut self) -> Result<Option<(u32, WireType)>, DecodeError> {
        if self.pos == self.end {
            return Ok(None);
        }
        let start = self.pos;
        if let Some(byte) = self.one_byte_varint() {
            if let Some(key) = one_byte_key(byte) {
                return Ok(Some(key));
            }
            self.pos = start;
        }
        self.read(decode_key).map(Some)
    }

    #[inline]
    fn varint(&mut self, wire_type: WireType) -> Result<u64, DecodeError> {
        check_wire_type(WireType::Varint, wire_type)?;
        self.any_varint()
    }

    #[inline]
    fn any_varint(&mut self) -> Result<u64, DecodeError> {
        match self.one_byte_varint() {
            Some(byte) => Ok(u64::from(byte)),
            None => self.read(decode_varint),
        }
    }

    /// A length-delimited field's position in the message.
    #[inline]
    fn delimited(&mut self, wire_type: WireType) -> Result<Range<usize>, DecodeError> {
        check_wire_type(WireType::LengthDelimited, wire_type)?;
        let len = self.any_varint()?;
        let start = self.pos;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .filter(|&end| end <= self.end)
            .ok_or(DecodeError::new(
                "a field longer than the message holding it",
            ))?;
        self.pos = end;
        Ok(start..end)
    }

    #[inline]
    fn bytes(&mut self, wire_type: WireType) -> Result<&'a [u8], DecodeError> {
        let range = self.delimited(wire_type)?;
        Ok(&self.message[range])
    }

    /// A `StringValue` or `BytesValue`'s value. A wrapper sent twice is one
    /// message merged: a second one without a value keeps the first's.
    fn wrapped(
        &mut self,
        wire_type: WireType,
        merged: Option<&'a [u8]>,
    ) -> Result<&'a [u8], DecodeError> {
        let body = self.delimited(wire_type)?;
        let message = self.message;
        // What a server sends: the value alone, its key and length one
        // byte each.
        if let [WRAPPED_VALUE_KEY, len, ..] = message[body.clone()] {
            if usize::from(len) + 2 == body.len() {
                return Ok(&message[body.start + 2..body.end]);
            }
        }
        let mut value = merged;
        let mut inner = Fields::new(message, body);
        while let Some((tag, wire_type)) = inner.key()? {
            if tag == WRAPPED_VALUE {
                value = Some(inner.bytes(wire_type)?);
            } else {
                inner.skip(tag, wire_type)?;
            }
        }
        Ok(value.unwrap_or_default())
    }

    fn skip(&mut self, tag: u32, wire_type: WireType) -> Result<(), DecodeError> {
        self.read(|rest| skip_field(tag, wire_type, rest))
    }
}

/// The key a one-byte varint holds, when it is a valid one: wire types 0
/// to 5, field numbers 1 to 15.
#[inline]
fn one_byte_key(byte: u8) -> Option<(u32, WireType)> {
    let wire_type = wire_type(u32::from(byte))?;
    let tag = u32::from(byte >> 3);
    (tag != 0).then_some((tag, wire_type))
}

/// The `ReadRows` codec: requests encoded by prost, each response taken
/// whole, as the [`Message`] the merger reads in place.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReadRowsCodec;

impl Codec for ReadRowsCodec {
    type Encode = ReadRowsRequest;
    type Decode = Message;
    type Encoder = ProstEncoder<ReadRowsRequest>;
    type Decoder = MessageDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        MessageDecoder
    }
}

/// Takes each response message off tonic's buffer.
#[derive(Debug, Default)]
pub(crate) struct MessageDecoder;

impl Decoder for MessageDecoder {
    type Item = Message;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Self::Error> {
        // `src` is one whole message; taking it off tonic's buffer is a split,
        // not a copy, and lets the rows keep slices of it.
        Ok(Some(Message(src.copy_to_bytes(src.remaining()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::{ReadRowsResponse, RequestStats};
    use crate::wire::protobuf::{encode_key, encode_message, encode_varint};
    use proptest::collection::vec;
    use proptest::prelude::*;
    use prost::Message as _;

    /// Fields written as prost's generated code writes them (every value,
    /// defaults included), for messages no generated type describes.
    mod field {
        use super::{encode_key, encode_varint, WireType};
        use bytes::BufMut as _;

        pub(super) fn uint64(tag: u32, v: u64, buf: &mut Vec<u8>) {
            encode_key(tag, WireType::Varint, buf);
            encode_varint(v, buf);
        }

        #[allow(clippy::cast_sign_loss)]
        pub(super) fn int64(tag: u32, v: i64, buf: &mut Vec<u8>) {
            uint64(tag, v as u64, buf);
        }

        pub(super) fn int32(tag: u32, v: i32, buf: &mut Vec<u8>) {
            int64(tag, i64::from(v), buf);
        }

        pub(super) fn bool(tag: u32, v: bool, buf: &mut Vec<u8>) {
            uint64(tag, u64::from(v), buf);
        }

        pub(super) fn fixed32(tag: u32, v: u32, buf: &mut Vec<u8>) {
            encode_key(tag, WireType::Fixed32, buf);
            buf.put_u32_le(v);
        }

        pub(super) fn fixed64(tag: u32, v: u64, buf: &mut Vec<u8>) {
            encode_key(tag, WireType::Fixed64, buf);
            buf.put_u64_le(v);
        }

        pub(super) fn bytes(tag: u32, v: &[u8], buf: &mut Vec<u8>) {
            encode_key(tag, WireType::LengthDelimited, buf);
            encode_varint(v.len() as u64, buf);
            buf.extend_from_slice(v);
        }
    }

    /// A field appended to a chunk's prost encoding: a known field again
    /// (the last wins, a wrapper merges) or an unknown one.
    #[derive(Debug, Clone)]
    enum Extra {
        RowKey(Vec<u8>),
        /// The wrapper's value, if any, and whether an unknown field follows it.
        Family(Option<String>, bool),
        Qualifier(Option<Vec<u8>>, bool),
        Timestamp(i64),
        Label(String),
        Value(Vec<u8>),
        ValueSize(i32),
        Reset(bool),
        Commit(bool),
        Unknown(u32, Unknown),
    }

    #[derive(Debug, Clone)]
    enum Unknown {
        Varint(u64),
        Fixed32(u32),
        Fixed64(u64),
        Delimited(Vec<u8>),
        Group(u64),
    }

    /// One field of a `ReadRowsResponse`.
    #[derive(Debug, Clone)]
    enum Top {
        Chunk(CellChunk, Vec<Extra>),
        LastScanned(Vec<u8>),
        Stats,
        Unknown(u32, Unknown),
    }

    fn unknown_tag(first: u32) -> impl Strategy<Value = u32> {
        prop_oneof![first..first + 20, first..(1 << 29)]
    }

    fn unknown() -> impl Strategy<Value = Unknown> {
        prop_oneof![
            any::<u64>().prop_map(Unknown::Varint),
            any::<u32>().prop_map(Unknown::Fixed32),
            any::<u64>().prop_map(Unknown::Fixed64),
            vec(any::<u8>(), 0..8).prop_map(Unknown::Delimited),
            any::<u64>().prop_map(Unknown::Group),
        ]
    }

    fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
        vec(any::<u8>(), 0..max)
    }

    fn cell_chunk() -> impl Strategy<Value = CellChunk> {
        let status = prop_oneof![
            Just(None),
            any::<bool>().prop_map(|b| Some(RowStatus::ResetRow(b))),
            any::<bool>().prop_map(|b| Some(RowStatus::CommitRow(b))),
        ];
        (
            bytes(8),
            proptest::option::of(".{0,6}"),
            proptest::option::of(bytes(6)),
            any::<i64>(),
            vec(".{0,4}", 0..3),
            bytes(16),
            any::<i32>(),
            status,
        )
            .prop_map(
                |(
                    row_key,
                    family_name,
                    qualifier,
                    timestamp_micros,
                    labels,
                    value,
                    value_size,
                    row_status,
                )| {
                    CellChunk {
                        row_key,
                        family_name,
                        qualifier,
                        timestamp_micros,
                        labels,
                        value,
                        value_size,
                        row_status,
                    }
                },
            )
    }

    fn extra() -> impl Strategy<Value = Extra> {
        prop_oneof![
            bytes(8).prop_map(Extra::RowKey),
            (proptest::option::of(".{0,6}"), any::<bool>()).prop_map(|(v, u)| Extra::Family(v, u)),
            (proptest::option::of(bytes(6)), any::<bool>())
                .prop_map(|(v, u)| Extra::Qualifier(v, u)),
            any::<i64>().prop_map(Extra::Timestamp),
            ".{0,4}".prop_map(Extra::Label),
            bytes(16).prop_map(Extra::Value),
            any::<i32>().prop_map(Extra::ValueSize),
            any::<bool>().prop_map(Extra::Reset),
            any::<bool>().prop_map(Extra::Commit),
            (unknown_tag(10), unknown()).prop_map(|(t, u)| Extra::Unknown(t, u)),
        ]
    }

    fn top() -> impl Strategy<Value = Top> {
        prop_oneof![
            6 => (cell_chunk(), vec(extra(), 0..4)).prop_map(|(c, e)| Top::Chunk(c, e)),
            1 => bytes(8).prop_map(Top::LastScanned),
            1 => Just(Top::Stats),
            1 => (unknown_tag(4), unknown()).prop_map(|(t, u)| Top::Unknown(t, u)),
        ]
    }

    fn encode_unknown(tag: u32, field: &Unknown, buf: &mut Vec<u8>) {
        match field {
            Unknown::Varint(v) => field::uint64(tag, *v, buf),
            Unknown::Fixed32(v) => field::fixed32(tag, *v, buf),
            Unknown::Fixed64(v) => field::fixed64(tag, *v, buf),
            Unknown::Delimited(v) => field::bytes(tag, v, buf),
            Unknown::Group(v) => {
                encode_key(tag, WireType::StartGroup, buf);
                field::uint64(1, *v, buf);
                encode_key(tag, WireType::EndGroup, buf);
            }
        }
    }

    /// A `StringValue` or `BytesValue` field, its value optional.
    fn encode_wrapper(tag: u32, value: Option<&[u8]>, unknown_after: bool, buf: &mut Vec<u8>) {
        let mut body = Vec::new();
        if let Some(value) = value {
            field::bytes(WRAPPED_VALUE, value, &mut body);
        }
        if unknown_after {
            encode_unknown(2, &Unknown::Varint(7), &mut body);
        }
        field::bytes(tag, &body, buf);
    }

    fn encode_extra(extra: &Extra, buf: &mut Vec<u8>) {
        match extra {
            Extra::RowKey(v) => field::bytes(cell_chunk::ROW_KEY, v, buf),
            Extra::Family(v, u) => {
                encode_wrapper(
                    cell_chunk::FAMILY_NAME,
                    v.as_deref().map(str::as_bytes),
                    *u,
                    buf,
                );
            }
            Extra::Qualifier(v, u) => encode_wrapper(cell_chunk::QUALIFIER, v.as_deref(), *u, buf),
            Extra::Timestamp(v) => field::int64(cell_chunk::TIMESTAMP_MICROS, *v, buf),
            Extra::Label(v) => field::bytes(cell_chunk::LABELS, v.as_bytes(), buf),
            Extra::Value(v) => field::bytes(cell_chunk::VALUE, v, buf),
            Extra::ValueSize(v) => field::int32(cell_chunk::VALUE_SIZE, *v, buf),
            Extra::Reset(v) => field::bool(cell_chunk::RESET_ROW, *v, buf),
            Extra::Commit(v) => field::bool(cell_chunk::COMMIT_ROW, *v, buf),
            Extra::Unknown(tag, field) => encode_unknown(*tag, field, buf),
        }
    }

    fn encode_response(fields: &[Top]) -> Vec<u8> {
        let mut buf = Vec::new();
        for field in fields {
            match field {
                Top::Chunk(chunk, extras) => {
                    let mut body = chunk.encode_to_vec();
                    for extra in extras {
                        encode_extra(extra, &mut body);
                    }
                    field::bytes(response::CHUNKS, &body, &mut buf);
                }
                Top::LastScanned(key) => {
                    field::bytes(response::LAST_SCANNED_ROW_KEY, key, &mut buf);
                }
                Top::Stats => {
                    encode_message(response::REQUEST_STATS, &RequestStats::default(), &mut buf);
                }
                Top::Unknown(tag, field) => encode_unknown(*tag, field, &mut buf),
            }
        }
        buf
    }

    fn decode(message: &Bytes) -> Result<Vec<Chunk>, ReadError> {
        let mut out = Vec::new();
        decode_response(message, &mut out).map(|()| out)
    }

    /// `part` is a slice of `message`'s buffer, not a copy.
    fn shares(message: &Bytes, part: &Bytes) -> bool {
        let whole = message.as_ptr_range();
        let part_range = part.as_ptr_range();
        part.is_empty() || (whole.start <= part_range.start && part_range.end <= whole.end)
    }

    /// `ours` holds what prost decoded from `message`, in slices of it.
    fn assert_same(
        message: &Bytes,
        ours: &[Chunk],
        theirs: &ReadRowsResponse,
    ) -> Result<(), TestCaseError> {
        prop_assert_eq!(ours.len(), theirs.chunks.len());
        for (ours, theirs) in ours.iter().zip(&theirs.chunks) {
            prop_assert_eq!(&ours.row_key, &theirs.row_key);
            prop_assert_eq!(
                ours.family.as_deref(),
                theirs.family_name.as_deref().map(str::as_bytes)
            );
            prop_assert_eq!(ours.qualifier.as_deref(), theirs.qualifier.as_deref());
            prop_assert_eq!(ours.timestamp_micros, theirs.timestamp_micros);
            prop_assert_eq!(&ours.value, &theirs.value);
            prop_assert_eq!(ours.value_size, theirs.value_size);
            prop_assert_eq!(ours.labels, !theirs.labels.is_empty());
            let status = match theirs.row_status {
                Some(RowStatus::ResetRow(true)) => ChunkStatus::Reset,
                Some(RowStatus::CommitRow(true)) => ChunkStatus::Commit,
                _ => ChunkStatus::None,
            };
            prop_assert_eq!(ours.status, status);
            let parts = [
                Some(&ours.row_key),
                ours.family.as_ref(),
                ours.qualifier.as_ref(),
                Some(&ours.value),
            ];
            prop_assert!(parts
                .into_iter()
                .flatten()
                .all(|part| shares(message, part)));
        }
        Ok(())
    }

    /// Where prost decodes `message`, so do we, to the same chunks.
    fn agrees_with_prost(message: &[u8]) -> Result<(), TestCaseError> {
        let message = Bytes::copy_from_slice(message);
        let ours = decode(&message);
        if let Ok(theirs) = ReadRowsResponse::decode(message.clone()) {
            let ours =
                ours.map_err(|e| TestCaseError::fail(format!("prost decodes it, we fail: {e}")))?;
            assert_same(&message, &ours, &theirs)?;
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn decodes_as_prost_does(fields in vec(top(), 0..6)) {
            let message = Bytes::from(encode_response(&fields));
            let theirs = ReadRowsResponse::decode(message.clone()).unwrap();
            let ours = decode(&message).unwrap();
            assert_same(&message, &ours, &theirs)?;
        }

        #[test]
        fn damaged_messages_fail_or_agree_with_prost(
            fields in vec(top(), 1..4),
            cut in any::<prop::sample::Index>(),
            flip in any::<prop::sample::Index>(),
            xor in 1..=u8::MAX,
        ) {
            let mut message = encode_response(&fields);
            if !message.is_empty() {
                let at = flip.index(message.len());
                message[at] ^= xor;
                agrees_with_prost(&message)?;
                message.truncate(cut.index(message.len()));
            }
            agrees_with_prost(&message)?;
        }

        #[test]
        fn random_bytes_fail_or_agree_with_prost(message in vec(any::<u8>(), 0..256)) {
            agrees_with_prost(&message)?;
        }
    }

    fn message(chunk_fields: &[u8]) -> Bytes {
        let mut buf = Vec::new();
        field::bytes(response::CHUNKS, chunk_fields, &mut buf);
        Bytes::from(buf)
    }

    #[test]
    fn an_empty_wrapper_is_a_present_empty_value() {
        let mut fields = Vec::new();
        encode_wrapper(cell_chunk::FAMILY_NAME, None, false, &mut fields);
        encode_wrapper(cell_chunk::QUALIFIER, None, false, &mut fields);
        let chunks = decode(&message(&fields)).unwrap();
        assert_eq!(chunks[0].family.as_deref(), Some(&b""[..]));
        assert_eq!(chunks[0].qualifier.as_deref(), Some(&b""[..]));
        assert_eq!(chunks[0].row_key, Bytes::new());
        assert_eq!(decode(&message(b"")).unwrap(), vec![Chunk::default()]);
    }

    #[test]
    fn the_last_scanned_row_key_is_kept() {
        let message = Bytes::from(
            ReadRowsResponse {
                last_scanned_row_key: b"qfoo".to_vec(),
                ..ReadRowsResponse::default()
            }
            .encode_to_vec(),
        );
        let (mut chunks, mut last) = (Vec::new(), Bytes::new());
        decode_response_into(&message, &mut chunks, &mut last).unwrap();
        assert!(chunks.is_empty());
        assert_eq!(last, "qfoo");
        assert!(shares(&message, &last));
    }

    #[test]
    fn a_negative_value_size_is_a_ten_byte_varint() {
        let mut fields = Vec::new();
        field::int32(cell_chunk::VALUE_SIZE, -1, &mut fields);
        assert_eq!(fields.len(), 11);
        assert_eq!(decode(&message(&fields)).unwrap()[0].value_size, -1);
    }

    #[test]
    fn malformed_messages_are_errors() {
        // A value longer than its chunk.
        let mut fields = Vec::new();
        encode_key(cell_chunk::VALUE, WireType::LengthDelimited, &mut fields);
        encode_varint(100, &mut fields);
        fields.extend_from_slice(b"short");
        assert!(decode(&message(&fields)).is_err());
        // A chunk longer than the message.
        assert!(decode(&Bytes::from_static(&[0x0A, 0x05, 0x00])).is_err());
        // A known field with the wrong wire type.
        let mut fields = Vec::new();
        encode_key(
            cell_chunk::TIMESTAMP_MICROS,
            WireType::LengthDelimited,
            &mut fields,
        );
        encode_varint(0, &mut fields);
        assert!(decode(&message(&fields)).is_err());
        // A field number of zero, an end-group with no group, a cut varint.
        for fields in [&[0x00, 0x00][..], &[0x54], &[0x20, 0x80]] {
            assert!(decode(&message(fields)).is_err(), "{fields:?}");
        }
    }
}
