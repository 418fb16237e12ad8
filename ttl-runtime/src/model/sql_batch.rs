//! The bytes of an `ExecuteQuery` stream made into values: `ProtoRows`
//! batches arrive in pieces (`PartialResultSet`s), each batch closed by a
//! CRC32C checksum of its bytes, and values become final only when a
//! resume token covers them. What comes after the last token is held back:
//! a stream that breaks is resumed from that token, and the server sends
//! the rest again.

use prost::Message as _;

use crate::model::limits::MAX_ROW_BYTES;
use crate::model::proto::{partial_result_set::PartialRows, PartialResultSet, ProtoRows, Value};

/// The most bytes a batch may reach before a checksum closes it: as much
/// as Bigtable's largest row ([`MAX_ROW_BYTES`], 256 MiB). A server that
/// never closes its batch would otherwise have them all held in memory.
pub(crate) const MAX_BATCH_BYTES: usize = MAX_ROW_BYTES;

/// The state of one query's result stream, across its attempts.
#[derive(Debug)]
pub(crate) struct BatchMerger {
    /// Bytes of the batch in progress (no checksum yet).
    buffer: Vec<u8>,
    /// The most bytes `buffer` may hold ([`MAX_BATCH_BYTES`]).
    max_batch: usize,
    /// Values of checksummed batches that no resume token covers yet.
    pending: Vec<Value>,
    /// The last resume token: what a new attempt resumes from.
    token: Option<Vec<u8>>,
}

impl Default for BatchMerger {
    fn default() -> Self {
        Self::with_max_batch(MAX_BATCH_BYTES)
    }
}

impl BatchMerger {
    /// A merger refusing batches over `max_batch` bytes.
    pub(crate) fn with_max_batch(max_batch: usize) -> Self {
        Self {
            buffer: Vec::new(),
            max_batch,
            pending: Vec::new(),
            token: None,
        }
    }

    /// Take in one part of the stream. When it carries a resume token, the
    /// values it makes final (possibly none), in order.
    ///
    /// # Errors
    /// Why the stream cannot be read: a checksum that does not match the
    /// batch's bytes, bytes that are not `ProtoRows`, a token that comes
    /// with a batch not closed by a checksum, a batch growing past
    /// [`MAX_BATCH_BYTES`] without one.
    pub(crate) fn push(&mut self, part: PartialResultSet) -> Result<Option<Vec<Value>>, String> {
        if part.reset {
            self.buffer.clear();
            self.pending.clear();
        }
        if let Some(PartialRows::ProtoRowsBatch(batch)) = part.partial_rows {
            let size = self.buffer.len().saturating_add(batch.batch_data.len());
            if size > self.max_batch {
                return Err(format!(
                    "a result batch reached {size} bytes without a checksum closing it, over the {} bytes a batch may hold",
                    self.max_batch
                ));
            }
            self.buffer.extend_from_slice(&batch.batch_data);
        }
        if let Some(expected) = part.batch_checksum {
            let actual = crc32c::crc32c(&self.buffer);
            if actual != expected {
                return Err(format!(
                    "Unexpected checksum mismatch: the batch's CRC32C is {actual:#010x}, the server's {expected:#010x}"
                ));
            }
            let rows = ProtoRows::decode(self.buffer.as_slice())
                .map_err(|e| format!("a batch is not ProtoRows: {e}"))?;
            self.pending.extend(rows.values);
            self.buffer.clear();
        }
        if part.resume_token.is_empty() {
            return Ok(None);
        }
        if !self.buffer.is_empty() {
            return Err("a resume token came with a batch not closed by a checksum".to_owned());
        }
        self.token = Some(part.resume_token);
        Ok(Some(std::mem::take(&mut self.pending)))
    }

    /// A new attempt begins: drop what came after the last resume token
    /// (the server sends it again).
    pub(crate) fn restart(&mut self) {
        self.buffer.clear();
        self.pending.clear();
    }

    /// The stream ended without an error.
    ///
    /// # Errors
    /// When values or bytes came after the last resume token: the server
    /// never made them final.
    pub(crate) fn finish(&self) -> Result<(), String> {
        if self.buffer.is_empty() && self.pending.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "Incomplete stream received: the stream ended with {} values and {} bytes after its last resume token",
                self.pending.len(),
                self.buffer.len()
            ))
        }
    }

    /// The last resume token received, if any.
    pub(crate) fn resume_token(&self) -> Option<&[u8]> {
        self.token.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::ProtoRowsBatch;
    use crate::model::sql_value::SqlValue;

    fn values(n: i64) -> Vec<Value> {
        (0..n).map(|i| SqlValue::Int64(i).to_proto()).collect()
    }

    fn bytes_of(values: Vec<Value>) -> Vec<u8> {
        ProtoRows { values }.encode_to_vec()
    }

    fn part(data: &[u8], reset: bool, token: &str, checksum: Option<u32>) -> PartialResultSet {
        PartialResultSet {
            partial_rows: Some(PartialRows::ProtoRowsBatch(ProtoRowsBatch {
                batch_data: data.to_vec(),
            })),
            resume_token: token.as_bytes().to_vec(),
            batch_checksum: checksum,
            reset,
            ..PartialResultSet::default()
        }
    }

    #[test]
    fn a_batch_in_pieces_is_final_at_its_token() {
        let data = bytes_of(values(3));
        let (a, b) = data.split_at(data.len() / 2);
        let mut merger = BatchMerger::default();
        assert_eq!(merger.push(part(a, true, "", None)), Ok(None));
        let done = merger.push(part(b, false, "t1", Some(crc32c::crc32c(&data))));
        assert_eq!(done, Ok(Some(values(3))));
        assert_eq!(merger.resume_token(), Some(b"t1".as_slice()));
        assert_eq!(merger.finish(), Ok(()));
    }

    #[test]
    fn a_wrong_checksum_is_refused() {
        let data = bytes_of(values(2));
        let mut merger = BatchMerger::default();
        let error = merger.push(part(&data, true, "t", Some(1234))).unwrap_err();
        assert!(error.starts_with("Unexpected checksum mismatch"), "{error}");
    }

    #[test]
    fn reset_and_restart_drop_what_no_token_covers() {
        let data = bytes_of(values(2));
        let sum = crc32c::crc32c(&data);
        let mut merger = BatchMerger::default();
        // A whole batch, checksummed but with no token: not final.
        assert_eq!(merger.push(part(&data, true, "", Some(sum))), Ok(None));
        // The server starts the batch over: the first copy is dropped.
        assert_eq!(
            merger.push(part(&data, true, "t", Some(sum))),
            Ok(Some(values(2)))
        );
        // After the token, a piece of the next batch, then the stream breaks.
        assert_eq!(merger.push(part(&data[..3], false, "", None)), Ok(None));
        assert!(merger
            .finish()
            .unwrap_err()
            .starts_with("Incomplete stream"));
        merger.restart();
        assert_eq!(merger.finish(), Ok(()));
        assert_eq!(merger.resume_token(), Some(b"t".as_slice()));
    }

    #[test]
    fn a_token_without_data_moves_the_resume_point() {
        let mut merger = BatchMerger::default();
        let empty = PartialResultSet {
            resume_token: b"t2".to_vec(),
            ..PartialResultSet::default()
        };
        assert_eq!(merger.push(empty), Ok(Some(Vec::new())));
        assert_eq!(merger.resume_token(), Some(b"t2".as_slice()));
    }

    /// A server that never closes its batch with a checksum fills no
    /// more than the bound: the stream is refused there, with what
    /// happened.
    #[test]
    fn a_batch_never_closed_is_refused_at_its_bound() {
        assert_eq!(BatchMerger::default().max_batch, 256 * 1024 * 1024);
        let mut merger = BatchMerger::with_max_batch(1_000);
        for _ in 0..3 {
            assert_eq!(merger.push(part(&[7; 300], false, "", None)), Ok(None));
        }
        let error = merger.push(part(&[7; 300], false, "", None)).unwrap_err();
        assert!(
            error.contains("reached 1200 bytes without a checksum closing it, over the 1000 bytes"),
            "{error}"
        );
        // A reset starts the count again.
        assert_eq!(merger.push(part(&[7; 300], true, "", None)), Ok(None));
    }

    #[test]
    fn a_token_over_an_unclosed_batch_is_refused() {
        let mut merger = BatchMerger::default();
        assert!(merger.push(part(b"\x12", true, "t", None)).is_err());
    }
}
