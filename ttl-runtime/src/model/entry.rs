//! A whole-row write encoded straight into its wire form: one entry of a
//! `MutateRowsRequest` (field 2, length-delimited), its mutations written
//! as they come, with no `Mutation` value built, kept or freed. The bulk
//! writer encodes its rows this way, into the request it sends.
//!
//! The bytes are the ones prost writes for the same `Entry` (proto3: a
//! field holding its default value is left out; a oneof's message is
//! written even when empty), which the tests below check against prost
//! for every kind of mutation the library writes.

/// A field's key byte: field number and wire type (numbers below 16).
const fn key(field: u8, wire_type: u8) -> u8 {
    (field << 3) | wire_type
}
const VARINT: u8 = 0;
const LEN: u8 = 2;

/// `MutateRowsRequest.entries`.
const REQUEST_ENTRY: u8 = key(2, LEN);
/// `Entry.row_key`, `Entry.mutations`.
const ENTRY_ROW_KEY: u8 = key(1, LEN);
const ENTRY_MUTATION: u8 = key(2, LEN);
/// `Mutation.set_cell`, `.delete_from_column`, `.delete_from_family` (a
/// oneof).
const SET_CELL: u8 = key(1, LEN);
const DELETE_FROM_COLUMN: u8 = key(2, LEN);
const DELETE_FROM_FAMILY: u8 = key(3, LEN);
/// `family_name` and `column_qualifier` of `SetCell` and
/// `DeleteFromColumn`, `family_name` of `DeleteFromFamily`;
/// `SetCell.timestamp_micros` and `SetCell.value`.
const FAMILY_NAME: u8 = key(1, LEN);
const QUALIFIER: u8 = key(2, LEN);
const TIMESTAMP: u8 = key(3, VARINT);
const VALUE: u8 = key(4, LEN);
/// `DeleteFromColumn.time_range`, and `TimestampRange`'s
/// `start_timestamp_micros` and `end_timestamp_micros`.
const TIME_RANGE: u8 = key(3, LEN);
const RANGE_START: u8 = key(1, VARINT);
const RANGE_END: u8 = key(2, VARINT);

/// The bytes a length prefix takes while an entry is written: its length
/// is known only at the end, when the prefix is fixed up (two bytes hold
/// entries of up to 16 KiB, most rows).
const LENGTH_RESERVED: usize = 2;

/// The protobuf varint length of `n`.
#[inline]
pub(crate) fn varint_len(n: u64) -> usize {
    // One byte per 7 bits, at least one. (prost's own helpers sit in its
    // `encoding` module, which it keeps out of its public API.)
    let bits = 64 - (n | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        // The low 7 bits, with the "more follows" bit.
        #[allow(clippy::cast_possible_truncation)]
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)]
    out.push(n as u8);
}

/// A length-delimited field's length, key and prefix included; nothing for
/// an empty one (proto3 leaves it out).
#[inline]
fn bytes_field_len(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        1 + varint_len(len as u64) + len
    }
}

#[inline]
fn put_bytes_field(out: &mut Vec<u8>, key: u8, bytes: &[u8]) {
    if !bytes.is_empty() {
        out.push(key);
        put_varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }
}

/// An `int64` field's length, key included; nothing for 0 (proto3 leaves
/// it out). A negative one is a varint of its two's complement (ten
/// bytes), as prost writes it.
#[inline]
#[allow(clippy::cast_sign_loss)]
fn int_field_len(n: i64) -> usize {
    if n == 0 {
        0
    } else {
        1 + varint_len(n as u64)
    }
}

#[inline]
#[allow(clippy::cast_sign_loss)]
fn put_int_field(out: &mut Vec<u8>, key: u8, n: i64) {
    if n != 0 {
        out.push(key);
        put_varint(out, n as u64);
    }
}

/// A message field (`key`, then the length of a body of `len` bytes).
#[inline]
fn put_message_header(out: &mut Vec<u8>, key: u8, len: usize) {
    out.push(key);
    put_varint(out, len as u64);
}

/// An entry being written at the end of a request's bytes: where its body
/// starts, and what it holds so far. [`PendingEntry::begin`] writes its
/// header and row key, an [`EntryEncoder`] its mutations,
/// [`PendingEntry::finish`] its length.
#[derive(Debug)]
pub(crate) struct PendingEntry {
    /// Where the entry's body starts (after its key and the reserved
    /// length prefix).
    body: usize,
    /// Mutations written.
    pub(crate) mutations: usize,
    /// The bytes of the cells' values and qualifiers written (Bigtable's
    /// row limit counts these).
    pub(crate) cell_bytes: usize,
    /// The timestamp field most of the entry's cells share (the row's),
    /// made once: see [`Stamp`].
    pub(crate) stamp: Stamp,
}

/// A cell's `timestamp_micros` field (key and varint) followed by its
/// value's key and a placeholder length, made once a row: every cell of a
/// row but a column's with a TTL shorter than the row's carries the
/// row's timestamp, whose varint took a cell a tenth of its encoding when
/// made at every cell.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamp {
    ts: i64,
    /// The bytes, then zeros up to [`STAMP_BYTES`]: copied whole (a
    /// constant length, no call), the part past `len` cut off after.
    bytes: [u8; STAMP_BYTES],
    /// The bytes that count: the timestamp field (none for 0, as proto3
    /// leaves it out), the value's key and its length's byte.
    len: usize,
}

/// A timestamp field of at most 11 bytes, the value's key and a length.
const STAMP_BYTES: usize = 16;

/// The longest cell header [`EntryEncoder::set_encoded`] makes on the
/// stack (a family and qualifier of up to 40 bytes together); a longer one
/// is made in place.
const HEAD_ROOM: usize = 64;

impl Stamp {
    /// The stamp of cells at `ts`.
    #[inline]
    pub(crate) fn new(ts: i64) -> Self {
        let mut bytes = [0; STAMP_BYTES];
        let mut room = Room {
            buf: &mut bytes,
            at: 0,
        };
        if ts != 0 {
            room.byte(TIMESTAMP);
            // An i64 is a varint of its two's complement (ten bytes when
            // negative), as prost writes it.
            #[allow(clippy::cast_sign_loss)]
            room.varint(ts as u64);
        }
        room.byte(VALUE);
        room.byte(0);
        let len = room.at;
        Self { ts, bytes, len }
    }

    /// The stamp of the cells at `ts`: this one, or one made for it.
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn at(&self, ts: i64) -> Self {
        if ts == self.ts {
            *self
        } else {
            Self::new(ts)
        }
    }
}

/// An entry written whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EncodedEntry {
    /// Its size in the request, key and length prefix included.
    pub(crate) len: usize,
    /// Its mutations.
    pub(crate) mutations: usize,
}

impl PendingEntry {
    /// Start an entry for `row_key` at the end of `out`.
    pub(crate) fn begin(out: &mut Vec<u8>, row_key: &[u8]) -> Self {
        out.reserve(1 + LENGTH_RESERVED + bytes_field_len(row_key.len()));
        out.push(REQUEST_ENTRY);
        out.extend_from_slice(&[0; LENGTH_RESERVED]);
        let body = out.len();
        put_bytes_field(out, ENTRY_ROW_KEY, row_key);
        Self {
            body,
            mutations: 0,
            cell_bytes: 0,
            stamp: Stamp::new(0),
        }
    }

    /// Start an entry at the end of `out` whose row key `write_key`
    /// appends there; where the key lies in `out` comes back. The key's
    /// length is given a byte, moved up in the rare key of 128 bytes or
    /// more. Nothing is left written when `write_key` fails.
    pub(crate) fn begin_with<E>(
        out: &mut Vec<u8>,
        write_key: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(Self, std::ops::Range<usize>), E> {
        let start = out.len();
        out.extend_from_slice(&[REQUEST_ENTRY, 0, 0, ENTRY_ROW_KEY, 0]);
        let body = start + 1 + LENGTH_RESERVED;
        let mut key_at = out.len();
        if let Err(e) = write_key(out) {
            out.truncate(start);
            return Err(e);
        }
        let len = out.len() - key_at;
        let len_bytes = varint_len(len as u64);
        if len == 0 {
            // proto3 leaves an empty key out, key byte and length too.
            out.truncate(body);
        } else if len_bytes == 1 {
            #[allow(clippy::cast_possible_truncation)]
            {
                out[key_at - 1] = len as u8;
            }
        } else {
            let extra = len_bytes - 1;
            out.resize(out.len() + extra, 0);
            out.copy_within(key_at..key_at + len, key_at + extra);
            let mut n = len as u64;
            for byte in &mut out[key_at - 1..key_at + extra] {
                #[allow(clippy::cast_possible_truncation)]
                let low = (n as u8) & 0x7f;
                n >>= 7;
                *byte = if n == 0 { low } else { low | 0x80 };
            }
            key_at += extra;
        }
        let entry = Self {
            body,
            mutations: 0,
            cell_bytes: 0,
            stamp: Stamp::new(0),
        };
        Ok((entry, key_at..key_at + len))
    }

    /// The entry, whose mutations are all written at the end of `out`, is
    /// complete: its length prefix is fixed up.
    pub(crate) fn finish(self, out: &mut Vec<u8>) -> EncodedEntry {
        let Self {
            body, mutations, ..
        } = self;
        let len = out.len() - body;
        let prefix = varint_len(len as u64);
        let prefix_at = body - LENGTH_RESERVED;
        if prefix != LENGTH_RESERVED {
            // Move the body to right after a prefix of the right size.
            let to = prefix_at + prefix;
            if to > body {
                out.resize(out.len() + (to - body), 0);
                out.copy_within(body..body + len, to);
            } else {
                out.copy_within(body..body + len, to);
                out.truncate(to + len);
            }
        }
        if prefix == LENGTH_RESERVED {
            // Most rows: two bytes, the low 7 bits with "more follows".
            #[allow(clippy::cast_possible_truncation)]
            out[prefix_at..body].copy_from_slice(&[(len as u8) | 0x80, (len >> 7) as u8]);
            return EncodedEntry {
                len: 1 + prefix + len,
                mutations,
            };
        }
        let mut n = len as u64;
        for byte in &mut out[prefix_at..prefix_at + prefix] {
            // The low 7 bits, with the "more follows" bit but on the last.
            #[allow(clippy::cast_possible_truncation)]
            let low = (n as u8) & 0x7f;
            n >>= 7;
            *byte = if n == 0 { low } else { low | 0x80 };
        }
        EncodedEntry {
            len: 1 + prefix + len,
            mutations,
        }
    }
}

/// Writes the mutations of a [`PendingEntry`] at the end of `out`.
#[derive(Debug)]
pub(crate) struct EntryEncoder<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    /// The value of the next map entry, encoded by [`EntryEncoder::stage`],
    /// and where a value too long to stay in place moves through
    /// ([`EntryEncoder::set_encoded`]): a buffer reused from row to row.
    pub(crate) staged: &'a mut Vec<u8>,
    pub(crate) entry: &'a mut PendingEntry,
}

impl EntryEncoder<'_> {
    /// Encode the next cell's value with `encode`; its length comes back.
    /// The cell itself is written by [`EntryEncoder::set_staged`].
    #[inline]
    pub(crate) fn stage<E>(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<usize, E> {
        self.staged.clear();
        encode(self.staged)?;
        Ok(self.staged.len())
    }

    /// `Mutation { delete_from_column { family_name, column_qualifier } }`.
    #[inline]
    pub(crate) fn delete_column(&mut self, family: &str, qualifier: &[u8]) {
        self.delete_column_in(family, qualifier, None);
    }

    /// `Mutation { delete_from_column { family_name, column_qualifier,
    /// time_range } }`: with `range`, only the cells whose timestamp is in
    /// `[start, end)` (the reaper's conditional-by-range deletes).
    #[inline]
    pub(crate) fn delete_column_in(
        &mut self,
        family: &str,
        qualifier: &[u8],
        range: Option<(i64, i64)>,
    ) {
        let range_len = range.map(|(start, end)| int_field_len(start) + int_field_len(end));
        let body = bytes_field_len(family.len())
            + bytes_field_len(qualifier.len())
            + range_len.map_or(0, |len| 1 + varint_len(len as u64) + len);
        self.mutation(DELETE_FROM_COLUMN, body);
        put_bytes_field(self.out, FAMILY_NAME, family.as_bytes());
        put_bytes_field(self.out, QUALIFIER, qualifier);
        if let (Some((start, end)), Some(len)) = (range, range_len) {
            // A message field is written even when empty (both ends 0).
            put_message_header(self.out, TIME_RANGE, len);
            put_int_field(self.out, RANGE_START, start);
            put_int_field(self.out, RANGE_END, end);
        }
    }

    /// `Mutation { delete_from_family { family_name } }`.
    #[inline]
    pub(crate) fn delete_family(&mut self, family: &str) {
        self.mutation(DELETE_FROM_FAMILY, bytes_field_len(family.len()));
        put_bytes_field(self.out, FAMILY_NAME, family.as_bytes());
    }

    /// `Mutation { set_cell { … } }` holding `value`.
    ///
    /// Always inlined in optimized builds, as [`EntryEncoder::set_encoded`].
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    #[allow(clippy::inline_always)]
    pub(crate) fn set_cell(&mut self, family: &str, qualifier: &[u8], ts: i64, value: &[u8]) {
        // Lengths of a byte each: written as an encoded value is, with
        // the row's stamp (a longer cell is written at once).
        if family.len() + qualifier.len() + value.len() < 0x40 {
            let Ok(_) = self.set_encoded(family, qualifier, ts, |out| {
                out.extend_from_slice(value);
                Ok::<(), std::convert::Infallible>(())
            });
        } else {
            put_set_cell(self.out, self.entry, family, qualifier, ts, value);
        }
    }

    /// `Mutation { set_cell { … } }` holding the value last staged.
    #[inline]
    pub(crate) fn set_staged(&mut self, family: &str, qualifier: &[u8], ts: i64) {
        put_set_cell(self.out, self.entry, family, qualifier, ts, self.staged);
    }

    /// `Mutation { set_cell { … } }` holding the value `encode` writes, in
    /// its place: no copy of the value is made when its lengths fit a
    /// byte each (values up to about a hundred bytes); a longer one is
    /// moved once, as a staged value is. The value's length comes back;
    /// nothing is left written when `encode` fails.
    ///
    /// Always inlined in optimized builds: a derived struct's columns call
    /// it with their family and qualifier as constants, and so the cell's
    /// header is written in stores of a known length (measured: a call a
    /// column, each copying its names and timestamp byte by byte, cost the
    /// bulk writer a fifth of its encoding). Only a hint in debug builds,
    /// where nothing folds: always inlined there, a derived struct's
    /// column came to about 30 KB of code (the 50 structs of
    /// `bench/gen_compile.sh`: a 29 MB library against 6 MB).
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    #[allow(clippy::inline_always)]
    pub(crate) fn set_encoded<E>(
        &mut self,
        family: &str,
        qualifier: &[u8],
        ts: i64,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<usize, E> {
        let stamp = self.entry.stamp.at(ts);
        // The cell's fields before its value, then the value's key and
        // length.
        let names = bytes_field_len(family.len()) + bytes_field_len(qualifier.len());
        let start = self.out.len();
        // The three lengths (mutation, set_cell, value) one byte each, for
        // now; the stamp copied whole and its tail cut off.
        let head = 4 + names + STAMP_BYTES;
        if head <= HEAD_ROOM {
            // Made on the stack and copied at once: with a column's names
            // as constants, every byte's place is one and so are the
            // copy's length and bounds (in the request's bytes, each
            // byte's bounds were checked).
            let mut bytes = [0; HEAD_ROOM];
            let mut room = Room {
                buf: &mut bytes,
                at: 0,
            };
            room.cell_head(family, qualifier, &stamp);
            self.out.extend_from_slice(&bytes[..head]);
        } else {
            Room::at_end(self.out, head).cell_head(family, qualifier, &stamp);
        }
        let value_at = start + 4 + names + stamp.len;
        self.out.truncate(value_at);
        if let Err(e) = encode(self.out) {
            self.out.truncate(start);
            return Err(e);
        }
        let len = self.out.len() - value_at;
        // proto3 leaves an empty value out, key and length too.
        let value_field = if len == 0 { 0 } else { 2 + len };
        let body = names + stamp.len - 2 + value_field;
        let set_cell = 2 + body;
        if len < 0x80 && set_cell < 0x80 {
            #[allow(clippy::cast_possible_truncation)]
            {
                self.out[start + 1] = set_cell as u8;
                self.out[start + 3] = body as u8;
                self.out[value_at - 1] = len as u8;
            }
            if len == 0 {
                self.out.truncate(value_at - 2);
            }
            self.entry.mutations += 1;
            self.entry.cell_bytes += qualifier.len() + len;
        } else {
            self.move_long_value(start, value_at, family, qualifier, ts);
        }
        Ok(len)
    }

    /// The cell begun at `start` whose value, at `value_at`, is too long
    /// for lengths of a byte: written again from its value moved aside.
    #[cold]
    #[inline(never)]
    fn move_long_value(
        &mut self,
        start: usize,
        value_at: usize,
        family: &str,
        qualifier: &[u8],
        ts: i64,
    ) {
        self.staged.clear();
        self.staged.extend_from_slice(&self.out[value_at..]);
        self.out.truncate(start);
        put_set_cell(self.out, self.entry, family, qualifier, ts, self.staged);
    }

    /// The headers of a mutation whose oneof field `field` has a body of
    /// `body` bytes, to be written next.
    #[inline]
    fn mutation(&mut self, field: u8, body: usize) {
        let mutation = 1 + varint_len(body as u64) + body;
        self.out.reserve(1 + varint_len(mutation as u64) + mutation);
        put_message_header(self.out, ENTRY_MUTATION, mutation);
        put_message_header(self.out, field, body);
        self.entry.mutations += 1;
    }
}

#[inline]
fn put_set_cell(
    out: &mut Vec<u8>,
    entry: &mut PendingEntry,
    family: &str,
    qualifier: &[u8],
    ts: i64,
    value: &[u8],
) {
    // An i64 is a varint of its two's complement (ten bytes when
    // negative), as prost writes it.
    #[allow(clippy::cast_sign_loss)]
    let ts_bits = ts as u64;
    let ts_len = if ts == 0 { 0 } else { 1 + varint_len(ts_bits) };
    let body = bytes_field_len(family.len())
        + bytes_field_len(qualifier.len())
        + ts_len
        + bytes_field_len(value.len());
    let set_cell = 1 + varint_len(body as u64) + body;
    let mut room = Room::at_end(out, 1 + varint_len(set_cell as u64) + set_cell);
    room.byte(ENTRY_MUTATION);
    room.varint(set_cell as u64);
    room.byte(SET_CELL);
    room.varint(body as u64);
    room.bytes_field(FAMILY_NAME, family.as_bytes());
    room.bytes_field(QUALIFIER, qualifier);
    if ts != 0 {
        room.byte(TIMESTAMP);
        room.varint(ts_bits);
    }
    room.bytes_field(VALUE, value);
    debug_assert!(room.is_full());
    entry.mutations += 1;
    entry.cell_bytes += qualifier.len() + value.len();
}

/// Room made at the end of a buffer for bytes of a known length, written
/// by index: a cell's dozen bytes of keys, lengths and timestamp were as
/// many `push`es, each checking the buffer's capacity.
struct Room<'a> {
    buf: &'a mut [u8],
    at: usize,
}

/// Zeros that make a cell's room in one copy: `resize` stores them a byte
/// at a time.
const ZEROS: [u8; 128] = [0; 128];

// Always inlined: measured, `varint` left out of line cost the encoder more
// than it saved (callgrind, the bulk writer's 20000 rows).
#[allow(clippy::inline_always)]
impl<'a> Room<'a> {
    #[inline(always)]
    fn at_end(out: &'a mut Vec<u8>, len: usize) -> Self {
        let start = out.len();
        match ZEROS.get(..len) {
            Some(zeros) => out.extend_from_slice(zeros),
            None => out.resize(start + len, 0),
        }
        Self {
            buf: &mut out[start..],
            at: 0,
        }
    }

    #[inline(always)]
    fn byte(&mut self, byte: u8) {
        self.buf[self.at] = byte;
        self.at += 1;
    }

    #[inline(always)]
    fn bytes(&mut self, bytes: &[u8]) {
        self.buf[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }

    #[inline(always)]
    fn bytes_field(&mut self, key: u8, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.byte(key);
            self.varint(bytes.len() as u64);
            self.bytes(bytes);
        }
    }

    /// `n` as a varint. One of up to eight bytes (every timestamp of this
    /// century) is spread into one word and stored at once where eight
    /// bytes of room are left; the bytes past its end are written again
    /// by what follows.
    #[inline(always)]
    fn varint(&mut self, n: u64) {
        if n < 0x80 {
            #[allow(clippy::cast_possible_truncation)]
            self.byte(n as u8);
            return;
        }
        if n < 1 << 56 {
            if let Some(word) = self.buf.get_mut(self.at..self.at + 8) {
                let len = varint_len(n);
                // 56 bits into 7-bit groups, one a byte: halves, quarters, eighths.
                let x = (n & 0x0FFF_FFFF) | ((n & 0x00FF_FFFF_F000_0000) << 4);
                let x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x0FFF_C000_0FFF_C000) << 2);
                let x = (x & 0x007F_007F_007F_007F) | ((x & 0x3F80_3F80_3F80_3F80) << 1);
                // "More follows" on every byte but the last.
                let more = 0x8080_8080_8080_8080 & ((1u64 << (8 * (len - 1))) - 1);
                word.copy_from_slice(&(x | more).to_le_bytes());
                self.at += len;
                return;
            }
        }
        let mut n = n;
        while n >= 0x80 {
            // The low 7 bits, with the "more follows" bit.
            #[allow(clippy::cast_possible_truncation)]
            self.byte((n as u8) | 0x80);
            n >>= 7;
        }
        #[allow(clippy::cast_possible_truncation)]
        self.byte(n as u8);
    }

    /// A cell's header: the mutation's and `SetCell`'s keys with lengths
    /// of a byte to fix up, its names, and `stamp` copied whole.
    #[inline(always)]
    fn cell_head(&mut self, family: &str, qualifier: &[u8], stamp: &Stamp) {
        self.byte(ENTRY_MUTATION);
        self.byte(0);
        self.byte(SET_CELL);
        self.byte(0);
        self.bytes_field(FAMILY_NAME, family.as_bytes());
        self.bytes_field(QUALIFIER, qualifier);
        self.bytes(&stamp.bytes);
    }

    fn is_full(&self) -> bool {
        self.at == self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::{mutate_rows_request::Entry, mutation, MutateRowsRequest, Mutation};
    use prost::Message as _;

    fn m(m: mutation::Mutation) -> Mutation {
        Mutation { mutation: Some(m) }
    }

    fn set(family: &str, qualifier: &[u8], ts: i64, value: &[u8]) -> Mutation {
        m(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: family.into(),
            column_qualifier: qualifier.to_vec(),
            timestamp_micros: ts,
            value: value.to_vec(),
        }))
    }

    fn range_delete(family: &str, qualifier: &[u8], start: i64, end: i64) -> Mutation {
        m(mutation::Mutation::DeleteFromColumn(
            mutation::DeleteFromColumn {
                family_name: family.into(),
                column_qualifier: qualifier.to_vec(),
                time_range: Some(crate::model::proto::TimestampRange {
                    start_timestamp_micros: start,
                    end_timestamp_micros: end,
                }),
            },
        ))
    }

    /// `entry` written by the encoder, its mutations from `entry` itself,
    /// set cells in turn staged, encoded in place and given; a key of odd
    /// length written in place, one of even length given. The row's stamp
    /// is its first cell's timestamp, as a derived struct's write makes it:
    /// cells at another timestamp make their own.
    fn encode(entry: &Entry) -> (Vec<u8>, EncodedEntry, usize) {
        let (mut out, mut staged) = (b"before".to_vec(), Vec::new());
        let mut pending = if entry.row_key.len() % 2 == 1 {
            let (pending, key) = PendingEntry::begin_with(&mut out, |out| {
                out.extend_from_slice(&entry.row_key);
                Ok::<(), ()>(())
            })
            .unwrap();
            assert_eq!(out[key], entry.row_key);
            pending
        } else {
            PendingEntry::begin(&mut out, &entry.row_key)
        };
        let first_cell = entry.mutations.iter().find_map(|m| match &m.mutation {
            Some(mutation::Mutation::SetCell(c)) => Some(c.timestamp_micros),
            _ => None,
        });
        if let Some(ts) = first_cell {
            pending.stamp = Stamp::new(ts);
        }
        let mut e = EntryEncoder {
            out: &mut out,
            staged: &mut staged,
            entry: &mut pending,
        };
        for (i, mutation) in entry.mutations.iter().enumerate() {
            match mutation.mutation.as_ref().unwrap() {
                mutation::Mutation::SetCell(c) if i % 3 == 0 => {
                    let len = e
                        .stage(|b| {
                            b.extend_from_slice(&c.value);
                            Ok::<(), ()>(())
                        })
                        .unwrap();
                    assert_eq!(len, c.value.len());
                    e.set_staged(&c.family_name, &c.column_qualifier, c.timestamp_micros);
                }
                mutation::Mutation::SetCell(c) if i % 3 == 1 => {
                    let len = e
                        .set_encoded(
                            &c.family_name,
                            &c.column_qualifier,
                            c.timestamp_micros,
                            |b| {
                                b.extend_from_slice(&c.value);
                                Ok::<(), ()>(())
                            },
                        )
                        .unwrap();
                    assert_eq!(len, c.value.len());
                }
                mutation::Mutation::SetCell(c) => {
                    e.set_cell(
                        &c.family_name,
                        &c.column_qualifier,
                        c.timestamp_micros,
                        &c.value,
                    );
                }
                mutation::Mutation::DeleteFromColumn(d) => match &d.time_range {
                    None => e.delete_column(&d.family_name, &d.column_qualifier),
                    Some(r) => e.delete_column_in(
                        &d.family_name,
                        &d.column_qualifier,
                        Some((r.start_timestamp_micros, r.end_timestamp_micros)),
                    ),
                },
                mutation::Mutation::DeleteFromFamily(d) => e.delete_family(&d.family_name),
                other => panic!("not written by the library: {other:?}"),
            }
        }
        let cell_bytes = pending.cell_bytes;
        let done = pending.finish(&mut out);
        assert_eq!(&out[..6], b"before");
        (out[6..].to_vec(), done, cell_bytes)
    }

    /// The entry as a field of a request, as prost encodes it.
    fn prost_bytes(entry: &Entry) -> Vec<u8> {
        MutateRowsRequest {
            entries: vec![entry.clone()],
            ..MutateRowsRequest::default()
        }
        .encode_to_vec()
    }

    fn check(entry: &Entry) {
        let (bytes, done, cell_bytes) = encode(entry);
        assert!(bytes == prost_bytes(entry), "{entry:?}");
        assert_eq!(done.len, bytes.len());
        assert_eq!(done.mutations, entry.mutations.len());
        let cells: usize = entry
            .mutations
            .iter()
            .map(|m| match &m.mutation {
                Some(mutation::Mutation::SetCell(c)) => c.value.len() + c.column_qualifier.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(cell_bytes, cells);
    }

    #[test]
    fn every_mutation_kind_is_encoded_as_prost_encodes_it() {
        let mutations = vec![
            m(mutation::Mutation::DeleteFromFamily(
                mutation::DeleteFromFamily {
                    family_name: "fam".into(),
                },
            )),
            m(mutation::Mutation::DeleteFromColumn(
                mutation::DeleteFromColumn {
                    family_name: "e".into(),
                    column_qualifier: b"user".to_vec(),
                    time_range: None,
                },
            )),
            set("e", b"user", 1_700_000_000_000_000, b"ann"),
            // The row marker: an empty value (left out on the wire).
            set("e", b"\0", 1_700_000_000_000_000, b""),
            // Defaults left out: timestamp 0, empty qualifier, empty family.
            set("e", b"", 0, b"v"),
            set("", b"q", -1_000, b""),
            m(mutation::Mutation::DeleteFromColumn(
                mutation::DeleteFromColumn::default(),
            )),
            // The reaper's deletes by time range: an end only, both ends,
            // an empty range (written, as prost writes an empty message),
            // a negative end.
            range_delete("e", b"user", 0, 1_700_000_000_000_000),
            range_delete("e", b"", 5, 1_000),
            range_delete("e", b"q", 0, 0),
            range_delete("", b"q", -1, i64::MAX),
            m(mutation::Mutation::DeleteFromFamily(
                mutation::DeleteFromFamily::default(),
            )),
        ];
        check(&Entry {
            row_key: b"row-1".to_vec(),
            mutations,
            ..Entry::default()
        });
    }

    #[test]
    fn lengths_at_every_varint_width_are_encoded_as_prost_encodes_them() {
        // Values, qualifiers and whole entries across the 1-, 2- and 3-byte
        // length prefixes (127, 128, 16383, 16384 bytes), timestamps across
        // varint widths and negative.
        let sizes = [0, 1, 100, 127, 128, 129, 16_250, 16_383, 16_384, 70_000];
        let timestamps = [0, 1, 127, 128, i64::MAX, -1, i64::MIN];
        for (i, &size) in sizes.iter().enumerate() {
            let ts = timestamps[i % timestamps.len()];
            for mutations in [0, 1, 3] {
                let entry = Entry {
                    row_key: vec![b'k'; 1 + size % 300],
                    mutations: (0..mutations)
                        .map(|j| set("family", &vec![b'q'; size % 200 + j], ts, &vec![7; size]))
                        .collect(),
                    ..Entry::default()
                };
                check(&entry);
            }
        }
    }

    #[test]
    fn cells_around_the_largest_encoded_in_place_are_encoded_as_prost_encodes_them() {
        // A value is encoded in place while its cell's lengths take a byte
        // each: up to a `SetCell` of 127 bytes (a value of about 100).
        for value in 90..=130 {
            for qualifier in [0, 1, 20] {
                for ts in [0, 1_700_000_000_000_000] {
                    let cell = || set("e", &vec![b'q'; qualifier], ts, &vec![3; value]);
                    check(&Entry {
                        row_key: b"k".to_vec(),
                        mutations: vec![cell(), cell(), cell()],
                        ..Entry::default()
                    });
                }
            }
        }
    }

    #[test]
    fn keys_across_the_length_byte_are_encoded_in_place_as_prost_encodes_them() {
        for len in [1, 2, 126, 127, 128, 129, 255, 4_095, 4_096, 16_384, 16_385] {
            for key in [vec![b'k'; len], vec![b'k'; len + 1]] {
                check(&Entry {
                    row_key: key,
                    mutations: vec![set("e", b"q", 1_000, b"v")],
                    ..Entry::default()
                });
            }
        }
    }

    #[test]
    fn an_empty_key_written_in_place_is_left_out_as_prost_leaves_it_out() {
        let entry = Entry {
            row_key: Vec::new(),
            mutations: vec![set("e", b"q", 1_000, b"v")],
            ..Entry::default()
        };
        let mut out = Vec::new();
        let (mut pending, key) = PendingEntry::begin_with(&mut out, |_| Ok::<(), ()>(())).unwrap();
        assert!(key.is_empty());
        let mut staged = Vec::new();
        let mut e = EntryEncoder {
            out: &mut out,
            staged: &mut staged,
            entry: &mut pending,
        };
        e.set_cell("e", b"q", 1_000, b"v");
        pending.finish(&mut out);
        assert_eq!(out, prost_bytes(&entry));
    }

    #[test]
    fn a_key_that_fails_to_encode_in_place_leaves_nothing() {
        for written in [0, 5, 300] {
            let mut out = b"before".to_vec();
            let failed = PendingEntry::begin_with(&mut out, |out| {
                out.extend(std::iter::repeat_n(b'k', written));
                Err("no")
            });
            assert!(matches!(failed, Err("no")));
            assert_eq!(out, b"before", "{written} bytes written before failing");
        }
    }

    #[test]
    fn a_value_that_fails_to_encode_in_place_leaves_nothing() {
        for written in [0, 5, 300] {
            let mut out = b"before".to_vec();
            let mut staged = Vec::new();
            let mut pending = PendingEntry::begin(&mut out, b"k");
            let before = out.clone();
            let mut e = EntryEncoder {
                out: &mut out,
                staged: &mut staged,
                entry: &mut pending,
            };
            let failed = e.set_encoded("e", b"user", 1_000, |b| {
                b.extend(std::iter::repeat_n(9, written));
                Err("no")
            });
            assert_eq!(failed, Err("no"));
            assert_eq!(out, before, "{written} bytes written before failing");
            assert_eq!((pending.mutations, pending.cell_bytes), (0, 0));
        }
    }

    #[test]
    fn a_varint_in_room_is_the_varint_pushed() {
        for bits in 0..64 {
            for n in [1u64 << bits, (1u64 << bits) - 1, u64::MAX >> bits] {
                let mut pushed = Vec::new();
                put_varint(&mut pushed, n);
                // Exactly its room, and room to spare that a byte fills after.
                for spare in [0, 1, 9] {
                    let mut out = vec![7];
                    let mut room = Room::at_end(&mut out, pushed.len() + spare);
                    room.varint(n);
                    for _ in 0..spare {
                        room.byte(0xAB);
                    }
                    assert!(room.is_full());
                    let mut expected = vec![7];
                    expected.extend(&pushed);
                    expected.extend(std::iter::repeat_n(0xAB, spare));
                    assert_eq!(out, expected, "{n} with {spare} to spare");
                }
            }
        }
    }

    #[test]
    fn varint_lengths_match_prost() {
        for n in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            assert_eq!(out.len(), varint_len(n), "{n}");
            let mut expected = Vec::new();
            prost::encode_length_delimiter(usize::try_from(n).unwrap(), &mut expected).unwrap();
            assert_eq!(out, expected, "{n}");
        }
    }
}
