//! What a read asks for ([`Scan`]), what an unfiltered read returns
//! ([`RawCell`]), and the merging of `ReadRows` cell chunks into rows.
//!
//! The merger is ours rather than `bigtable_rs`'s: `bigtable_rs` 0.4 decodes
//! each `ReadRowsResponse` message on its own, so a row whose chunks span two
//! messages (Cloud Bigtable splits large rows and large cells that way) is
//! reported as a chunk error. [`RowMerger`] keeps its state across messages,
//! as the `ReadRows` contract requires. It takes the zero-copy chunks of
//! [`crate::chunk`], read over [`crate::grpc::DataChannel`].

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bigtable_rs::google::bigtable::v2::{
    row_range::{EndKey, StartKey},
    ReadRowsRequest, RowRange, RowSet,
};
use bytes::{Bytes, BytesMut};
use futures_util::Stream;

use crate::chunk::{Chunk, ChunkStatus};
use crate::grpc::DataChannel;
use crate::retry::{retryable_status, Budget, RetryPolicy};
use crate::row::CellRef;

/// Which rows a read covers, by raw row key, and how many at most.
///
/// ```
/// use bigtable_ttl::Scan;
///
/// let everything = Scan::all();
/// let one_customer = Scan::prefix("customer-3#").limit(100);
/// let a_range = Scan::range("a".."m");
/// let some_keys = Scan::keys(["k1", "k7"]);
/// # let _ = (everything, one_customer, a_range, some_keys);
/// ```
///
/// Keys are the encoded row keys (`T::encode_key`), in Bigtable's byte order.
/// A [`Scan::limit`] counts rows the server returns. The server's timestamp
/// filter already drops every expired cell, so a row it returns is almost
/// always one the typed reader shows; the reader hides a returned row only
/// when none of its visible cells is a declared column (cells of columns the
/// struct does not know), so a limited scan can then yield fewer rows than
/// the limit although more exist.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[must_use]
pub struct Scan {
    selection: Selection,
    limit: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Selection {
    #[default]
    All,
    Prefix(Vec<u8>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Keys(Vec<Vec<u8>>),
}

impl Scan {
    /// Every row of the table.
    pub fn all() -> Self {
        Self::default()
    }

    /// The rows whose key starts with `prefix` (every row for an empty prefix).
    pub fn prefix(prefix: impl AsRef<[u8]>) -> Self {
        Self {
            selection: Selection::Prefix(prefix.as_ref().to_vec()),
            limit: None,
        }
    }

    /// The rows whose key lies in `range` (`"a".."m"`, `start..=end`, `start..`).
    pub fn range<K: AsRef<[u8]>>(range: impl RangeBounds<K>) -> Self {
        let own = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Self {
            selection: Selection::Range(own(range.start_bound()), own(range.end_bound())),
            limit: None,
        }
    }

    /// Exactly these row keys (those that exist), in key order.
    pub fn keys<K: AsRef<[u8]>>(keys: impl IntoIterator<Item = K>) -> Self {
        Self {
            selection: Selection::Keys(keys.into_iter().map(|k| k.as_ref().to_vec()).collect()),
            limit: None,
        }
    }

    /// At most `rows` rows (as counted by the server; see the type's docs).
    /// A limit of zero means no limit, as in Bigtable's API.
    pub fn limit(mut self, rows: u64) -> Self {
        self.limit = (rows > 0).then_some(rows);
        self
    }

    /// The limit, if any.
    #[must_use]
    pub fn row_limit(&self) -> Option<u64> {
        self.limit
    }

    /// The `RowSet` and `rows_limit` of a `ReadRowsRequest` for this scan.
    /// `None` means "no row can match" (an empty key list), which Bigtable
    /// would otherwise read as "every row".
    pub(crate) fn into_request(self, table_name: String) -> Option<ReadRowsRequest> {
        let rows = match self.selection {
            Selection::All => None,
            Selection::Prefix(prefix) => Some(RowSet {
                row_keys: vec![],
                row_ranges: vec![prefix_range(&prefix)],
            }),
            Selection::Range(start, end) => Some(RowSet {
                row_keys: vec![],
                row_ranges: vec![RowRange {
                    start_key: match start {
                        Bound::Included(k) => Some(StartKey::StartKeyClosed(k)),
                        Bound::Excluded(k) => Some(StartKey::StartKeyOpen(k)),
                        Bound::Unbounded => None,
                    },
                    end_key: match end {
                        Bound::Included(k) => Some(EndKey::EndKeyClosed(k)),
                        Bound::Excluded(k) => Some(EndKey::EndKeyOpen(k)),
                        Bound::Unbounded => None,
                    },
                }],
            }),
            Selection::Keys(keys) if keys.is_empty() => return None,
            Selection::Keys(keys) => Some(RowSet {
                row_keys: keys,
                row_ranges: vec![],
            }),
        };
        Some(ReadRowsRequest {
            table_name,
            rows,
            rows_limit: self
                .limit
                .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX)),
            ..ReadRowsRequest::default()
        })
    }
}

/// The key range of every key starting with `prefix`.
///
/// The end is the prefix with trailing `0xFF` bytes dropped and the last
/// byte incremented (`b"a\xff"` ends before `b"b"`), open-ended when the
/// prefix is all `0xFF`. (`bigtable_rs::util::get_row_range_from_prefix`
/// keeps the length instead and ends `b"a\xff"` at `b"b\0"`, which lets the
/// key `b"b"` in.)
fn prefix_range(prefix: &[u8]) -> RowRange {
    let mut end = prefix.to_vec();
    while end.last() == Some(&0xFF) {
        end.pop();
    }
    let end_key = match end.last_mut() {
        Some(last) => {
            *last += 1;
            Some(EndKey::EndKeyOpen(end))
        }
        None => None,
    };
    RowRange {
        start_key: Some(StartKey::StartKeyClosed(prefix.to_vec())),
        end_key,
    }
}

/// One stored cell, owned, as an unfiltered read returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawCell {
    /// Column family.
    pub family: String,
    /// Column qualifier.
    pub qualifier: Vec<u8>,
    /// Value bytes.
    pub value: Vec<u8>,
    /// Cell timestamp (µs since the epoch).
    pub timestamp_micros: i64,
}

impl RawCell {
    /// The borrowed form the decoder reads.
    #[must_use]
    pub fn as_cell_ref(&self) -> CellRef<'_> {
        CellRef {
            family: &self.family,
            qualifier: &self.qualifier,
            value: &self.value,
            timestamp_micros: self.timestamp_micros,
        }
    }
}

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

/// One row as read: its key and its cells in the order the server sent them
/// (family, then qualifier, then newest first).
pub(crate) type RawRow = (Vec<u8>, Vec<RawCell>);

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

/// Why a read failed: the server's status, or a response breaking the
/// `ReadRows` chunk protocol.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("{0}")]
    Status(#[from] tonic::Status),
    #[error("malformed ReadRows response: {0}")]
    Protocol(String),
}

/// Reassembles `ReadRows` cell chunks into rows, across response messages.
#[derive(Debug, Default)]
pub(crate) struct RowMerger {
    key: Option<Bytes>,
    cells: Vec<Cell>,
    /// The current family, shared by its cells.
    family: Option<Arc<str>>,
    /// A cell whose value continues in the next chunk.
    partial: Option<SplitCell>,
    last_committed: Option<Bytes>,
    /// Rows committed so far.
    committed: u64,
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
                    if self
                        .last_committed
                        .as_ref()
                        .is_some_and(|last| row_key <= *last)
                    {
                        return protocol("row keys out of order");
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
            self.start_cell(cell, value_size);
        }
        if status == ChunkStatus::Commit {
            if self.partial.is_some() {
                return protocol("row committed inside a split cell value");
            }
            let key = self.key.take().unwrap_or_default();
            let cells = std::mem::take(&mut self.cells);
            self.reset();
            let row = (key.to_vec(), cells);
            self.last_committed = Some(key);
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
    fn start_cell(&mut self, mut cell: Cell, value_size: i32) {
        match usize::try_from(value_size) {
            Ok(size) if size > 0 => {
                let first = std::mem::take(&mut cell.value);
                let mut value = BytesMut::with_capacity(size.max(first.len()));
                value.extend_from_slice(&first);
                self.partial = Some(SplitCell { cell, value });
            }
            _ => self.cells.push(cell),
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

    fn reset(&mut self) {
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
    fn feed(&mut self, chunks: Vec<Chunk>, out: &mut VecDeque<MergedRow>) -> Result<(), ReadError> {
        for chunk in chunks {
            if let Some(row) = self.push(chunk)? {
                out.push_back(row);
            }
        }
        Ok(())
    }
}

/// `x-goog-request-params` for a table request, as Google's clients send it
/// (routes the request to the right backend on Cloud Bigtable).
pub(crate) fn routing_header(table_name: &str) -> String {
    let mut out = String::from("table_name=");
    for b in table_name.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out.push_str("&app_profile_id=");
    out
}

struct ReadState {
    channel: DataChannel,
    /// The request as first made, for resuming.
    base: ReadRowsRequest,
    request: Option<ReadRowsRequest>,
    response: Option<tonic::Streaming<Vec<Chunk>>>,
    merger: RowMerger,
    ready: VecDeque<MergedRow>,
    done: bool,
    policy: RetryPolicy,
    budget: Option<Budget>,
    resumes: Arc<AtomicU64>,
}

impl ReadState {
    /// After a retryable failure, and within the retry budget: set up the
    /// request for the rows not yet committed. Rows committed but not yet
    /// delivered stay queued; a half-received row is dropped and read again.
    async fn resume(&mut self, error: &ReadError) -> bool {
        let ReadError::Status(status) = error else {
            return false;
        };
        if !retryable_status(status) {
            return false;
        }
        let policy = self.policy;
        if !self
            .budget
            .get_or_insert_with(|| policy.start())
            .wait()
            .await
        {
            return false;
        }
        tracing::debug!(%status, committed = self.merger.committed, "resuming ReadRows");
        self.resumes.fetch_add(1, Ordering::Relaxed);
        self.merger.reset();
        self.response = None;
        match &self.merger.last_committed {
            None => self.request = Some(self.base.clone()),
            Some(last) => match resume_request(self.base.clone(), last, self.merger.committed) {
                Some(request) => self.request = Some(request),
                None => self.done = true,
            },
        }
        true
    }
}

/// `request` narrowed to the rows after `last_key`, with `delivered` rows
/// taken off its limit; `None` when nothing is left to read.
pub(crate) fn resume_request(
    mut request: ReadRowsRequest,
    last_key: &[u8],
    delivered: u64,
) -> Option<ReadRowsRequest> {
    if request.rows_limit > 0 {
        let left = request
            .rows_limit
            .saturating_sub(i64::try_from(delivered).unwrap_or(i64::MAX));
        if left <= 0 {
            return None;
        }
        request.rows_limit = left;
    }
    let after = || Some(StartKey::StartKeyOpen(last_key.to_vec()));
    let rows = match request.rows.take() {
        None => RowSet {
            row_keys: vec![],
            row_ranges: vec![RowRange {
                start_key: after(),
                end_key: None,
            }],
        },
        Some(mut set) if set.row_keys.is_empty() && set.row_ranges.is_empty() => {
            set.row_ranges.push(RowRange {
                start_key: after(),
                end_key: None,
            });
            set
        }
        Some(mut set) => {
            set.row_keys.retain(|k| k.as_slice() > last_key);
            set.row_ranges.retain_mut(|range| {
                let ends_before = match &range.end_key {
                    Some(EndKey::EndKeyOpen(e) | EndKey::EndKeyClosed(e)) if !e.is_empty() => {
                        e.as_slice() <= last_key
                    }
                    _ => false,
                };
                let starts_at_or_before = match &range.start_key {
                    Some(StartKey::StartKeyClosed(s)) => s.as_slice() <= last_key,
                    Some(StartKey::StartKeyOpen(s)) => s.as_slice() < last_key,
                    None => true,
                };
                if starts_at_or_before {
                    range.start_key = after();
                }
                !ends_before
            });
            if set.row_keys.is_empty() && set.row_ranges.is_empty() {
                // An empty set would mean every row.
                return None;
            }
            set
        }
    };
    request.rows = Some(rows);
    Some(request)
}

/// The rows `request` reads, merged, as a stream; lazily sent on first poll;
/// resumed after a break within [`RetryPolicy::default`] (see [`read_rows_with`]).
pub(crate) fn read_rows(
    channel: DataChannel,
    request: ReadRowsRequest,
) -> impl Stream<Item = Result<RawRow, ReadError>> + Send + 'static {
    use futures_util::TryStreamExt as _;
    read_rows_with(channel, request, RetryPolicy::default(), Arc::default())
        .map_ok(|(key, cells)| (key, cells.into_iter().map(RawCell::from).collect()))
}

/// The rows `request` reads, merged, as a stream; lazily sent on first poll.
/// A stream that breaks with a retryable error (see [`crate::retry`]) is
/// resumed after the last row it committed, within `policy`; each resume is
/// counted in `resumes`.
pub(crate) fn read_rows_with(
    channel: DataChannel,
    request: ReadRowsRequest,
    policy: RetryPolicy,
    resumes: Arc<AtomicU64>,
) -> impl Stream<Item = Result<MergedRow, ReadError>> + Send + 'static {
    let state = ReadState {
        channel,
        base: request.clone(),
        request: Some(request),
        response: None,
        merger: RowMerger::default(),
        ready: VecDeque::new(),
        done: false,
        policy,
        budget: None,
        resumes,
    };
    // Boxed: the state moves into and out of the stream's future at every
    // row, and a pointer is cheaper to move than the state.
    futures_util::stream::unfold(Box::new(state), |mut st| async move {
        loop {
            if let Some(row) = st.ready.pop_front() {
                return Some((Ok(row), st));
            }
            if st.done {
                return None;
            }
            if let Some(request) = st.request.take() {
                match st.channel.read_rows(request).await {
                    Ok(response) => st.response = Some(response),
                    Err(status) => {
                        let error = ReadError::from(status);
                        if st.resume(&error).await {
                            continue;
                        }
                        st.done = true;
                        return Some((Err(error), st));
                    }
                }
            }
            let response = st.response.as_mut()?;
            let step = match response.message().await {
                Ok(Some(message)) => {
                    let ReadState { merger, ready, .. } = &mut *st;
                    merger.feed(message, ready)
                }
                Ok(None) => {
                    st.done = true;
                    st.merger.finish()
                }
                Err(status) => Err(status.into()),
            };
            if let Err(e) = step {
                if st.resume(&e).await {
                    continue;
                }
                st.done = true;
                st.ready.clear();
                return Some((Err(e), st));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigtable_rs::google::bigtable::v2::read_rows_response::{cell_chunk::RowStatus, CellChunk};
    use bigtable_rs::google::bigtable::v2::ReadRowsResponse;

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
        crate::chunk::decode_response(&message, &mut chunks).unwrap();
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

    #[test]
    fn prefix_ranges_end_right_after_the_prefix() {
        let end = |p: &[u8]| prefix_range(p).end_key;
        assert_eq!(end(b"ab"), Some(EndKey::EndKeyOpen(b"ac".to_vec())));
        assert_eq!(end(b"a\xff"), Some(EndKey::EndKeyOpen(b"b".to_vec())));
        assert_eq!(end(b"\xff\xff"), None);
        assert_eq!(end(b""), None);
    }

    #[test]
    fn an_empty_key_list_reads_nothing() {
        assert!(Scan::keys(Vec::<Vec<u8>>::new())
            .into_request("t".into())
            .is_none());
        assert_eq!(Scan::all().limit(0).row_limit(), None);
    }

    fn resumed(scan: Scan, last: &str, delivered: u64) -> Option<ReadRowsRequest> {
        resume_request(scan.into_request("t".into())?, last.as_bytes(), delivered)
    }

    #[test]
    fn a_resumed_read_starts_after_the_last_row_and_keeps_the_rest_of_the_limit() {
        let open = |k: &str| Some(StartKey::StartKeyOpen(k.as_bytes().to_vec()));
        let r = resumed(Scan::all().limit(10), "k5", 4).unwrap();
        assert_eq!(r.rows_limit, 6);
        let ranges = r.rows.unwrap().row_ranges;
        assert_eq!(ranges.len(), 1);
        assert_eq!(ranges[0].start_key, open("k5"));
        assert_eq!(ranges[0].end_key, None);
        // The limit used up: nothing left.
        assert!(resumed(Scan::all().limit(4), "k5", 4).is_none());

        let r = resumed(Scan::range("b".."m"), "d", 3).unwrap();
        let range = &r.rows.unwrap().row_ranges[0];
        assert_eq!(range.start_key, open("d"));
        assert_eq!(range.end_key, Some(EndKey::EndKeyOpen(b"m".to_vec())));
        // A range starting after the last key is kept as it is.
        let r = resumed(Scan::range("e"..), "d", 0).unwrap();
        assert_eq!(
            r.rows.unwrap().row_ranges[0].start_key,
            Some(StartKey::StartKeyClosed(b"e".to_vec()))
        );
        // The last row closed the range.
        assert!(resumed(Scan::range("b"..="d"), "d", 3).is_none());
        assert!(resumed(Scan::prefix("ab"), "abz", 1).is_some());

        let r = resumed(Scan::keys(["a", "c", "e"]), "c", 2).unwrap();
        assert_eq!(r.rows.unwrap().row_keys, vec![b"e".to_vec()]);
        assert!(resumed(Scan::keys(["a", "c"]), "c", 2).is_none());
    }

    #[test]
    fn routing_header_is_percent_encoded() {
        assert_eq!(
            routing_header("projects/p/instances/i/tables/t"),
            "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id="
        );
    }
}
