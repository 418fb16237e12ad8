//! Reassembling `ReadRows` cell chunks into rows, across response messages.
//!
//! The merger is ours rather than `bigtable_rs`'s: `bigtable_rs` 0.4 decodes
//! each `ReadRowsResponse` message on its own, so a row whose chunks span two
//! messages (Cloud Bigtable splits large rows and large cells that way) is
//! reported as a chunk error. [`RowMerger`] keeps its state across messages,
//! as the `ReadRows` contract requires. It takes the zero-copy chunks of
//! [`super::chunk`].

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::model::limits::MAX_CELL_BYTES;
use crate::model::scan::RawCell;
use crate::model::view::CellRef;
use crate::wire::chunk::{Chunk, ChunkStatus, Response};
use crate::wire::read_error::ReadError;

impl From<Cell> for RawCell {
    fn from(cell: Cell) -> Self {
        Self {
            family: cell.family.as_ref().to_owned(),
            qualifier: cell.qualifier.into(),
            value: cell.value.into(),
            timestamp_micros: cell.timestamp_micros,
        }
    }
}

/// One cell as merged: a [`RawCell`] whose family name is shared by every
/// cell of the family (families are few; no allocation per cell) and whose
/// qualifier and value share the response's buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    pub(crate) family: Arc<str>,
    pub(crate) qualifier: Bytes,
    pub(crate) value: Bytes,
    pub(crate) timestamp_micros: i64,
}

impl Cell {
    /// The borrowed form the decoder reads.
    pub(crate) fn as_cell_ref(&self) -> CellRef<'_> {
        CellRef {
            family: &self.family,
            qualifier: &self.qualifier,
            value: &self.value,
            timestamp_micros: self.timestamp_micros,
        }
    }
}

/// A row as merged, in [`Cell`]s.
pub(crate) type MergedRow = (Vec<u8>, Vec<Cell>);

/// The most a split cell's buffer reserves before its parts arrive.
const MAX_RESERVED_BYTES: usize = 1 << 20;

/// Reassembles `ReadRows` cell chunks into rows, across response messages.
#[derive(Debug, Default)]
pub(crate) struct RowMerger {
    key: Option<Bytes>,
    cells: Vec<Cell>,
    /// The current family, shared by its cells.
    family: Option<Arc<str>>,
    /// A cell whose value continues in the next chunk.
    partial: Option<SplitCell>,
    /// Where a resumed read starts (after it, or before it when
    /// reversed): the last row committed, or a key the server said it
    /// scanned past since (`last_scanned_row_key`).
    pub(crate) last_key: Option<Bytes>,
    /// Rows committed so far.
    pub(crate) committed: u64,
    /// Rows come in descending key order (a reversed read).
    reversed: bool,
}

/// A cell whose value arrives in several chunks: its parts are
/// concatenated in `value`, and `cell.value` is set once the last arrives.
#[derive(Debug)]
struct SplitCell {
    cell: Cell,
    value: BytesMut,
}

fn protocol<T>(msg: &str) -> Result<T, ReadError> {
    Err(ReadError::Protocol(msg.to_owned()))
}

impl RowMerger {
    /// A merger for a read whose rows come in ascending key order, or in
    /// descending order when `reversed` (`ReadRowsRequest.reversed`).
    pub(crate) fn new(reversed: bool) -> Self {
        Self {
            reversed,
            ..Self::default()
        }
    }

    /// Whether `key` may follow the last committed row: after it, or
    /// before it in a reversed read.
    fn in_order(&self, key: &Bytes) -> bool {
        match &self.last_key {
            None => true,
            Some(last) if self.reversed => key < last,
            Some(last) => key > last,
        }
    }

    /// The error for `key` coming after the last key in the wrong order.
    fn out_of_order<T>(&self, key: &Bytes) -> Result<T, ReadError> {
        let last = self.last_key.as_deref().unwrap_or_default();
        let expected = if self.reversed {
            "strictly decreasing (a reversed read)"
        } else {
            "strictly increasing"
        };
        protocol(&format!(
            "row keys out of order: \"{}\" after \"{}\", expected {expected} keys",
            key.escape_ascii(),
            last.escape_ascii()
        ))
    }

    /// The server scanned up to `key` without a row to send
    /// (`last_scanned_row_key`): a resumed read starts past it.
    fn scanned_past(&mut self, key: Bytes) -> Result<(), ReadError> {
        if self.key.is_some() {
            return protocol("a last scanned row key inside a row");
        }
        if !self.in_order(&key) {
            return self.out_of_order(&key);
        }
        self.last_key = Some(key);
        Ok(())
    }

    /// Feed one chunk; a committed row comes out.
    pub(crate) fn push(&mut self, chunk: Chunk) -> Result<Option<MergedRow>, ReadError> {
        let Chunk {
            row_key,
            family,
            qualifier,
            timestamp_micros,
            value,
            value_size,
            status,
        } = chunk;
        if status == ChunkStatus::Reset {
            self.reset();
            return Ok(None);
        }
        if !row_key.is_empty() {
            match &self.key {
                Some(key) if *key != row_key => {
                    return protocol("a new row key before the previous row was committed")
                }
                Some(_) => {}
                None => {
                    if !self.in_order(&row_key) {
                        return self.out_of_order(&row_key);
                    }
                    self.key = Some(row_key);
                }
            }
        } else if self.key.is_none() {
            return protocol("a chunk without a row key outside a row");
        }
        if let Some(split) = self.partial.take() {
            if family.is_some() || qualifier.is_some() {
                return protocol("a new column inside a split cell value");
            }
            self.continue_cell(split, &value, value_size);
        } else {
            if let Some(family) = family {
                if qualifier.is_none() {
                    return protocol("a new family without a qualifier");
                }
                self.enter_family(&family)?;
            }
            let Some(family) = &self.family else {
                return protocol("a cell without a family or qualifier");
            };
            // A chunk without a qualifier is another version of the previous
            // cell's column.
            let qualifier = match (qualifier, self.cells.last()) {
                (Some(qualifier), _) => qualifier,
                (None, Some(previous)) => previous.qualifier.clone(),
                (None, None) => return protocol("a cell without a family or qualifier"),
            };
            let cell = Cell {
                family: family.clone(),
                qualifier,
                value,
                timestamp_micros,
            };
            self.start_cell(cell, value_size)?;
        }
        if status == ChunkStatus::Commit {
            if self.partial.is_some() {
                return protocol("row committed inside a split cell value");
            }
            let key = self.key.take().unwrap_or_default();
            let cells = std::mem::take(&mut self.cells);
            self.reset();
            let row = (key.to_vec(), cells);
            self.last_key = Some(key);
            self.committed += 1;
            return Ok(Some(row));
        }
        Ok(None)
    }

    /// Make `name` the current family, unless it already is.
    fn enter_family(&mut self, name: &[u8]) -> Result<(), ReadError> {
        if self.family.as_deref().map(str::as_bytes) == Some(name) {
            return Ok(());
        }
        let Ok(name) = std::str::from_utf8(name) else {
            return protocol("a family name that is not UTF-8");
        };
        self.family = Some(name.into());
        Ok(())
    }

    /// A new cell: complete, or the first part of a split value.
    fn start_cell(&mut self, mut cell: Cell, value_size: i32) -> Result<(), ReadError> {
        match usize::try_from(value_size) {
            Ok(size) if size > MAX_CELL_BYTES => protocol(&format!(
                "a cell value of {size} bytes announced, over Bigtable's limit of {MAX_CELL_BYTES}"
            )),
            Ok(size) if size > 0 => {
                let first = std::mem::take(&mut cell.value);
                // The announced size is the server's word: reserve no more
                // than a bounded part of it up front, grow as parts arrive.
                let reserve = size.min(MAX_RESERVED_BYTES).max(first.len());
                let mut value = BytesMut::with_capacity(reserve);
                value.extend_from_slice(&first);
                self.partial = Some(SplitCell { cell, value });
                Ok(())
            }
            _ => {
                self.cells.push(cell);
                Ok(())
            }
        }
    }

    /// The next part of a split value; `value_size` is zero on the last.
    fn continue_cell(&mut self, mut split: SplitCell, part: &[u8], value_size: i32) {
        split.value.extend_from_slice(part);
        if value_size > 0 {
            self.partial = Some(split);
        } else {
            split.cell.value = split.value.freeze();
            self.cells.push(split.cell);
        }
    }

    pub(crate) fn reset(&mut self) {
        self.key = None;
        self.cells.clear();
        self.family = None;
        self.partial = None;
    }

    /// The response ended: an uncommitted row means it was cut short.
    pub(crate) fn finish(&self) -> Result<(), ReadError> {
        if self.key.is_some() {
            protocol("the response ended inside a row")
        } else {
            Ok(())
        }
    }

    /// Feed one response message's chunks; committed rows go to `out`.
    pub(crate) fn feed(
        &mut self,
        chunks: Vec<Chunk>,
        out: &mut VecDeque<MergedRow>,
    ) -> Result<(), ReadError> {
        for chunk in chunks {
            if let Some(row) = self.push(chunk)? {
                out.push_back(row);
            }
        }
        Ok(())
    }

    /// Feed one whole response: its chunks, then its last scanned row key.
    /// Whether the read moved on: a row committed, or a key scanned past.
    pub(crate) fn feed_response(
        &mut self,
        response: Response,
        out: &mut VecDeque<MergedRow>,
    ) -> Result<bool, ReadError> {
        let rows = self.committed;
        self.feed(response.chunks, out)?;
        if response.last_scanned_row_key.is_empty() {
            Ok(self.committed > rows)
        } else {
            self.scanned_past(response.last_scanned_row_key)?;
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
    use crate::proto::ReadRowsResponse;

    fn chunk(key: &str, fam: Option<&str>, q: Option<&str>, ts: i64, v: &str) -> Chunk {
        CellChunk {
            row_key: key.as_bytes().to_vec(),
            family_name: fam.map(str::to_owned),
            qualifier: q.map(|q| q.as_bytes().to_vec()),
            timestamp_micros: ts,
            value: v.as_bytes().to_vec(),
            ..CellChunk::default()
        }
        .into()
    }

    fn commit(mut c: Chunk) -> Chunk {
        c.status = ChunkStatus::Commit;
        c
    }

    #[test]
    fn a_row_split_across_messages_and_a_split_value_merge() {
        let mut m = RowMerger::default();
        assert!(m
            .push(chunk("r1", Some("c"), Some("a"), 1000, "x"))
            .unwrap()
            .is_none());
        let mut split = chunk("", None, Some("b"), 2000, "he");
        split.value_size = 5;
        assert!(m.push(split).unwrap().is_none());
        // next message
        assert!(m.push(chunk("", None, None, 0, "llo")).unwrap().is_none());
        let (key, cells) = m
            .push(commit(chunk("", None, None, 1000, "y")))
            .unwrap()
            .unwrap();
        assert_eq!(key, b"r1");
        let got: Vec<_> = cells
            .iter()
            .map(|c| (c.qualifier.to_vec(), c.value.to_vec(), c.timestamp_micros))
            .collect();
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), b"x".to_vec(), 1000),
                (b"b".to_vec(), b"hello".to_vec(), 2000),
                (b"b".to_vec(), b"y".to_vec(), 1000),
            ]
        );
        m.finish().unwrap();
        let (key, _) = m
            .push(commit(chunk("r2", Some("d"), Some("z"), 0, "")))
            .unwrap()
            .unwrap();
        assert_eq!(key, b"r2");
    }

    #[test]
    fn reset_drops_the_row_and_truncation_is_an_error() {
        let mut m = RowMerger::default();
        m.push(chunk("r1", Some("c"), Some("a"), 1000, "x"))
            .unwrap();
        let reset = CellChunk {
            row_status: Some(RowStatus::ResetRow(true)),
            ..CellChunk::default()
        };
        assert!(m.push(reset.into()).unwrap().is_none());
        m.finish().unwrap();
        let (_, cells) = m
            .push(commit(chunk("r1", Some("c"), Some("a"), 5000, "v")))
            .unwrap()
            .unwrap();
        assert_eq!(cells.len(), 1);
        m.push(chunk("r2", Some("c"), Some("a"), 1000, "x"))
            .unwrap();
        assert!(m.finish().is_err());
    }

    #[test]
    fn protocol_violations_are_errors() {
        let mut m = RowMerger::default();
        assert!(m.push(chunk("", Some("c"), Some("a"), 0, "")).is_err());
        let mut m = RowMerger::default();
        assert!(m.push(chunk("r", Some("c"), None, 0, "")).is_err());
        let mut m = RowMerger::default();
        m.push(commit(chunk("b", Some("c"), Some("a"), 0, "")))
            .unwrap();
        assert!(m
            .push(commit(chunk("a", Some("c"), Some("a"), 0, "")))
            .is_err());
    }

    #[test]
    fn a_reversed_read_takes_descending_keys_only() {
        let mut m = RowMerger::new(true);
        for key in ["c", "b"] {
            m.push(commit(chunk(key, Some("c"), Some("a"), 0, "")))
                .unwrap()
                .unwrap();
        }
        let err = m
            .push(commit(chunk("b2", Some("c"), Some("a"), 0, "")))
            .unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");
        assert!(err.to_string().contains("decreasing"), "{err}");
        // The same key twice is out of order either way.
        let mut m = RowMerger::new(true);
        m.push(commit(chunk("b", Some("c"), Some("a"), 0, "")))
            .unwrap();
        assert!(m
            .push(commit(chunk("b", Some("c"), Some("a"), 0, "")))
            .is_err());
        // A reset keeps the direction.
        m.reset();
        assert!(m
            .push(commit(chunk("a", Some("c"), Some("a"), 0, "")))
            .unwrap()
            .is_some());
    }

    #[test]
    fn a_last_scanned_key_moves_the_resumption_point_and_keeps_the_order() {
        let mut m = RowMerger::default();
        let mut rows = VecDeque::new();
        m.feed(
            vec![commit(chunk("a", Some("c"), Some("q"), 0, ""))],
            &mut rows,
        )
        .unwrap();
        let scanned = Response {
            chunks: Vec::new(),
            last_scanned_row_key: Bytes::from_static(b"q"),
        };
        assert!(m.feed_response(scanned, &mut rows).unwrap());
        assert_eq!(m.last_key.as_deref(), Some(&b"q"[..]));
        assert_eq!(m.committed, 1);
        let err = m
            .push(commit(chunk("b", Some("c"), Some("q"), 0, "")))
            .unwrap_err();
        assert!(err.to_string().contains("increasing"), "{err}");
    }

    #[test]
    fn an_announced_value_size_is_capped() {
        let mut big = chunk("r", Some("c"), Some("q"), 0, "a");
        big.value_size = i32::MAX;
        let err = RowMerger::default().push(big).unwrap_err();
        assert!(err.to_string().contains("over Bigtable's limit"), "{err}");

        let mut m = RowMerger::default();
        let mut split = chunk("r", Some("c"), Some("q"), 0, "a");
        split.value_size = 90 * 1024 * 1024;
        assert!(m.push(split).unwrap().is_none());
        let reserved = m.partial.as_ref().map(|p| p.value.capacity()).unwrap();
        assert!(reserved <= MAX_RESERVED_BYTES, "{reserved}");
        let (_, cells) = m
            .push(commit(chunk("", None, None, 0, "b")))
            .unwrap()
            .unwrap();
        assert_eq!(cells[0].value, "ab");
    }

    #[test]
    fn a_family_name_that_is_not_utf8_is_an_error() {
        let mut bad = commit(chunk("r", None, Some("a"), 0, ""));
        bad.family = Some(Bytes::from_static(b"\xff"));
        assert!(RowMerger::default().push(bad).is_err());
    }

    #[test]
    fn merged_cells_share_the_response_buffer() {
        use prost::Message as _;
        let first = CellChunk {
            row_key: b"r".to_vec(),
            family_name: Some("c".into()),
            qualifier: Some(b"q".to_vec()),
            value: b"v1".to_vec(),
            ..CellChunk::default()
        };
        let second = CellChunk {
            value: b"v2".to_vec(),
            row_status: Some(RowStatus::CommitRow(true)),
            ..CellChunk::default()
        };
        let message = Bytes::from(
            ReadRowsResponse {
                chunks: vec![first, second],
                ..ReadRowsResponse::default()
            }
            .encode_to_vec(),
        );
        let mut chunks = Vec::new();
        crate::wire::chunk::decode_response(&message, &mut chunks).unwrap();
        let mut rows = VecDeque::new();
        RowMerger::default().feed(chunks, &mut rows).unwrap();
        let (key, cells) = rows.pop_front().unwrap();
        assert_eq!(key, b"r");
        let within = |part: &Bytes| {
            let whole = message.as_ptr_range();
            whole.start <= part.as_ptr() && part.as_ptr_range().end <= whole.end
        };
        for (cell, value) in cells.iter().zip(["v1", "v2"]) {
            assert_eq!(cell.qualifier, "q");
            assert_eq!(cell.value, value);
            assert!(within(&cell.qualifier) && within(&cell.value));
        }
    }
}
