//! Protobuf's wire format, the few primitives the hand-written codecs need:
//! varints, field keys, skipping an unknown field, a message as a field.
//!
//! prost has these in `prost::encoding`, but that module is
//! `#[doc(hidden)]` (generated code's door, with no semver promise), so a
//! patch release of prost could break this crate's build. These are the
//! same rules, written down once: a varint is at most ten bytes, the tenth
//! carrying one bit; a key is a `u32` varint, field number above zero, wire
//! type 0 to 5; groups nest at most 100 deep (prost's recursion limit).
//! The tests check each against prost's public `Message` encoding and
//! decoding.

use bytes::BufMut;

/// The wire type of a field: how its value is laid out after its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint = 0,
    Fixed64 = 1,
    LengthDelimited = 2,
    StartGroup = 3,
    EndGroup = 4,
    Fixed32 = 5,
}

/// Bytes that are not a well-formed protobuf message; says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError(&'static str);

impl DecodeError {
    pub(crate) const fn new(what: &'static str) -> Self {
        Self(what)
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// How deep groups may nest inside a skipped field, as in prost.
const RECURSION_LIMIT: u32 = 100;

/// The bytes `n` takes as a varint (1 to 10).
pub(crate) const fn encoded_len_varint(n: u64) -> usize {
    // Each byte carries 7 bits; zero still takes one byte.
    let bits = 64 - (n | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

pub(crate) fn encode_varint(mut n: u64, buf: &mut impl BufMut) {
    while n >= 0x80 {
        // The low 7 bits, with the continuation bit set.
        #[allow(clippy::cast_possible_truncation)]
        buf.put_u8((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)]
    buf.put_u8(n as u8);
}

/// The varint at the start of `buf`, which moves past it.
#[inline]
pub(crate) fn decode_varint(buf: &mut &[u8]) -> Result<u64, DecodeError> {
    // With ten bytes at hand the loop runs over an array, unrolled and
    // without a bound check a byte: a scan reads a timestamp of eight
    // bytes in every cell.
    if let Some((head, _)) = buf.split_first_chunk::<10>() {
        // Up to eight bytes at once: the first byte without its high bit
        // ends the varint, and the 7-bit groups before it are packed.
        let (word, _) = head.split_first_chunk::<8>().expect("ten bytes hold eight");
        let word = u64::from_le_bytes(*word);
        let ends = !word & 0x8080_8080_8080_8080;
        if ends != 0 {
            let len = (ends.trailing_zeros() / 8 + 1) as usize;
            let bits = if len == 8 {
                word
            } else {
                word & ((1u64 << (8 * len)) - 1)
            };
            // Pairs of groups, then fours, then the eight: 7, 14, 28, 56 bits.
            let x = bits & 0x7F7F_7F7F_7F7F_7F7F;
            let x = (x & 0x007F_007F_007F_007F) | ((x & 0x7F00_7F00_7F00_7F00) >> 1);
            let x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x3FFF_0000_3FFF_0000) >> 2);
            let value = (x & 0x0FFF_FFFF) | ((x & 0x0FFF_FFFF_0000_0000) >> 4);
            *buf = &buf[len..];
            return Ok(value);
        }
        let mut value = 0u64;
        for (i, &byte) in head.iter().enumerate() {
            value |= u64::from(byte & 0x7F) << (7 * i);
            if byte < 0x80 {
                if i == 9 && byte > 1 {
                    break;
                }
                *buf = &buf[i + 1..];
                return Ok(value);
            }
        }
        return Err(DecodeError("invalid varint"));
    }
    decode_short_varint(buf)
}

/// [`decode_varint`] near the end of a buffer.
fn decode_short_varint(buf: &mut &[u8]) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    for (i, &byte) in buf.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7F) << (7 * i);
        if byte < 0x80 {
            // The tenth byte holds bit 63 only.
            if i == 9 && byte > 1 {
                break;
            }
            *buf = &buf[i + 1..];
            return Ok(value);
        }
    }
    Err(DecodeError("invalid varint"))
}

pub(crate) fn encode_key(tag: u32, wire_type: WireType, buf: &mut impl BufMut) {
    encode_varint(u64::from(tag << 3 | wire_type as u32), buf);
}

/// The bytes the key of field `tag` takes.
pub(crate) const fn key_len(tag: u32) -> usize {
    encoded_len_varint((tag << 3) as u64)
}

/// The wire type in a key's low three bits, when it is one (0 to 5).
#[inline]
pub(crate) fn wire_type(key: u32) -> Option<WireType> {
    Some(match key & 0x07 {
        0 => WireType::Varint,
        1 => WireType::Fixed64,
        2 => WireType::LengthDelimited,
        3 => WireType::StartGroup,
        4 => WireType::EndGroup,
        5 => WireType::Fixed32,
        _ => return None,
    })
}

/// The field number and wire type at the start of `buf`, which moves past them.
pub(crate) fn decode_key(buf: &mut &[u8]) -> Result<(u32, WireType), DecodeError> {
    let key = u32::try_from(decode_varint(buf)?).map_err(|_| DecodeError("invalid key value"))?;
    let wire_type = wire_type(key).ok_or(DecodeError("invalid wire type value"))?;
    let tag = key >> 3;
    if tag == 0 {
        return Err(DecodeError("invalid tag value: 0"));
    }
    Ok((tag, wire_type))
}

/// A known field came with `actual` where its type needs `expected`.
pub(crate) fn check_wire_type(expected: WireType, actual: WireType) -> Result<(), DecodeError> {
    if expected == actual {
        Ok(())
    } else {
        Err(DecodeError("invalid wire type"))
    }
}

/// Move `buf` past the value of field `tag`, whose key was just read.
pub(crate) fn skip_field(
    tag: u32,
    wire_type: WireType,
    buf: &mut &[u8],
) -> Result<(), DecodeError> {
    skip_nested(tag, wire_type, buf, RECURSION_LIMIT)
}

fn skip_nested(
    tag: u32,
    wire_type: WireType,
    buf: &mut &[u8],
    depth_left: u32,
) -> Result<(), DecodeError> {
    if depth_left == 0 {
        return Err(DecodeError("recursion limit reached"));
    }
    let len = match wire_type {
        WireType::Varint => decode_varint(buf).map(|_| 0)?,
        WireType::Fixed32 => 4,
        WireType::Fixed64 => 8,
        WireType::LengthDelimited => decode_varint(buf)?,
        WireType::StartGroup => loop {
            let (inner_tag, inner_type) = decode_key(buf)?;
            if inner_type == WireType::EndGroup {
                if inner_tag != tag {
                    return Err(DecodeError("unexpected end group tag"));
                }
                break 0;
            }
            skip_nested(inner_tag, inner_type, buf, depth_left - 1)?;
        },
        WireType::EndGroup => return Err(DecodeError("unexpected end group tag")),
    };
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= buf.len())
        .ok_or(DecodeError("buffer underflow"))?;
    *buf = &buf[len..];
    Ok(())
}

/// `message` as field `tag` of the message being written: key, length, body.
pub(crate) fn encode_message(tag: u32, message: &impl prost::Message, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    // prost's public length-delimited encoding: the length as a varint, then
    // the body. It fails only on a buffer without room, and a `Vec` grows.
    message
        .encode_length_delimited(buf)
        .expect("a Vec grows to hold the message");
}

/// The bytes [`encode_message`] writes.
pub(crate) fn message_len(tag: u32, message: &impl prost::Message) -> usize {
    let len = message.encoded_len();
    key_len(tag) + encoded_len_varint(len as u64) + len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::{read_rows_response::CellChunk, ReadRowsResponse};
    use proptest::prelude::*;
    use prost::Message as _;

    /// Skip every field of `message`, as decoding into a message that knows
    /// none of them does.
    fn skip_all(mut message: &[u8]) -> Result<(), DecodeError> {
        while !message.is_empty() {
            let (tag, wire_type) = decode_key(&mut message)?;
            skip_field(tag, wire_type, &mut message)?;
        }
        Ok(())
    }

    /// `n` as prost encodes a `UInt64Value` (its `u64`) holding it, key byte dropped.
    fn prost_varint(n: u64) -> Vec<u8> {
        let encoded = n.encode_to_vec();
        if n == 0 {
            vec![0]
        } else {
            encoded[1..].to_vec()
        }
    }

    #[test]
    fn varints_at_every_width_match_prost() {
        for bits in 0..64 {
            for n in [1u64 << bits, (1u64 << bits) - 1, u64::MAX >> bits] {
                let mut ours = Vec::new();
                encode_varint(n, &mut ours);
                assert_eq!(ours, prost_varint(n), "{n}");
                assert_eq!(encoded_len_varint(n), ours.len(), "{n}");
                let mut rest = &ours[..];
                assert_eq!(decode_varint(&mut rest), Ok(n));
                assert!(rest.is_empty());
                // With bytes after it (the wide path reads ten at once),
                // it ends where it ends, whatever follows.
                for after in [0x00, 0x7F, 0x80, 0xFF] {
                    let mut longer = ours.clone();
                    longer.extend([after; 10]);
                    let mut rest = &longer[..];
                    assert_eq!(decode_varint(&mut rest), Ok(n), "{n} then {after:#x}");
                    assert_eq!(rest.len(), 10, "{n} then {after:#x}");
                }
            }
        }
    }

    #[test]
    fn bad_varints_are_errors() {
        let eleven = [0xFF; 11];
        let tenth_too_big = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02];
        for bytes in [&[][..], &[0x80], &eleven, &tenth_too_big] {
            assert!(decode_varint(&mut &bytes[..]).is_err(), "{bytes:?}");
        }
        let max = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
        assert_eq!(decode_varint(&mut &max[..]), Ok(u64::MAX));
        for padded in [
            [&eleven[..], &[0; 4]].concat(),
            [&tenth_too_big[..], &[0; 4]].concat(),
        ] {
            assert!(decode_varint(&mut &padded[..]).is_err(), "{padded:?}");
        }
    }

    #[test]
    fn keys_round_trip_and_bad_keys_are_errors() {
        for tag in [1, 15, 16, 2047, 2048, (1 << 29) - 1] {
            let mut buf = Vec::new();
            encode_key(tag, WireType::Fixed32, &mut buf);
            assert_eq!(buf.len(), key_len(tag));
            assert_eq!(decode_key(&mut &buf[..]), Ok((tag, WireType::Fixed32)));
        }
        // Field number zero, wire types 6 and 7, a key over 32 bits.
        for bytes in [
            &[0x00][..],
            &[0x0E],
            &[0x0F],
            &[0x80, 0x80, 0x80, 0x80, 0x10],
        ] {
            assert!(decode_key(&mut &bytes[..]).is_err(), "{bytes:?}");
        }
    }

    #[test]
    fn a_message_field_is_encoded_as_prost_encodes_it() {
        let chunk = CellChunk {
            row_key: b"row".to_vec(),
            value: vec![7; 300],
            ..CellChunk::default()
        };
        let mut ours = Vec::new();
        encode_message(1, &chunk, &mut ours);
        let response = ReadRowsResponse {
            chunks: vec![chunk.clone()],
            ..ReadRowsResponse::default()
        };
        assert_eq!(ours, response.encode_to_vec());
        assert_eq!(message_len(1, &chunk), ours.len());
    }

    #[test]
    fn groups_nest_up_to_prosts_limit() {
        let nested = |depth: usize| {
            let mut buf = Vec::new();
            for _ in 0..depth {
                encode_key(1, WireType::StartGroup, &mut buf);
            }
            for _ in 0..depth {
                encode_key(1, WireType::EndGroup, &mut buf);
            }
            buf
        };
        for depth in [1, 99, 100, 101] {
            let bytes = nested(depth);
            assert_eq!(
                skip_all(&bytes).is_ok(),
                <()>::decode(&bytes[..]).is_ok(),
                "{depth}"
            );
        }
        assert!(skip_all(&nested(100)).is_ok());
        assert!(skip_all(&nested(101)).is_err());
    }

    proptest! {
        #[test]
        fn any_varint_round_trips_as_prost_writes_it(n in any::<u64>()) {
            let mut ours = Vec::new();
            encode_varint(n, &mut ours);
            prop_assert_eq!(&ours, &prost_varint(n));
            prop_assert_eq!(decode_varint(&mut &ours[..]), Ok(n));
        }

        /// Skipping every field fails exactly when prost fails to decode the
        /// bytes into a message that knows no field (`Empty`, its `()`).
        #[test]
        fn skipping_fields_agrees_with_prost(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(
                skip_all(&bytes).is_ok(),
                <()>::decode(&bytes[..]).is_ok()
            );
        }
    }
}
