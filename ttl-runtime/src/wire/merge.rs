//! Reassembling `ReadRows` cell chunks into rows, across response messages.
//!
//! The merger is ours rather than `bigtable_rs`'s: `bigtable_rs` 0.4 decodes
//! each `ReadRowsResponse` message on its own, so a row whose chunks span two
//! messages (Cloud Bigtable splits large rows and large cells that way) is
//! reported as a chunk error. [`RowMerger`] keeps its state across messages,
//! as the `ReadRows` contract requires. It reads each message's chunks in
//! place ([`super::chunk`]) and shares with the message what a row keeps.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::model::limits::MAX_CELL_BYTES;
use crate::model::view::CellRef;
use crate::wire::chunk::{for_each_chunk, malformed, ChunkRef, ChunkStatus, Message, Stop};
#[cfg(test)]
use crate::wire::chunk::{Chunk, Response};
use crate::wire::read_error::ReadError;

impl From<Cell> for crate::model::cell::Cell {
    fn from(cell: Cell) -> Self {
        Self {
            family: cell.family.as_ref().to_owned(),
            qualifier: cell.qualifier.into(),
            value: cell.value.into(),
            timestamp_micros: cell.timestamp_micros,
        }
    }
}

/// One cell as merged: a [`crate::model::cell::Cell`] whose family name is shared by every
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
    /// `cell`, its bytes copied.
    fn copied(cell: CellRef<'_>) -> Self {
        Self {
            family: cell.family.into(),
            qualifier: Bytes::copy_from_slice(cell.qualifier),
            value: Bytes::copy_from_slice(cell.value),
            timestamp_micros: cell.timestamp_micros,
        }
    }

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
pub(crate) type MergedRow = (Bytes, Vec<Cell>);

/// What a reader makes of each row the merger commits, as it is handed
/// over ([`RowMerger::hand_over`]).
pub(crate) trait RowSink {
    type Row;
    /// A row as merged in [`Cell`]s.
    fn owned(&mut self, key: Bytes, cells: Vec<Cell>) -> Self::Row;
    /// A row whose cells borrow the message it lay whole in, as its key
    /// `row` does (`key` shares it).
    fn borrowed<'a>(
        &mut self,
        key: Bytes,
        row: &'a [u8],
        cells: impl Iterator<Item = CellRef<'a>> + Clone,
    ) -> Self::Row;
    /// The row's key and values, in bytes, for the read's metrics.
    fn bytes(row: &Self::Row) -> u64;
}

/// Rows as merged: what the raw data layer returns.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AsMerged;

impl RowSink for AsMerged {
    type Row = MergedRow;

    fn owned(&mut self, key: Bytes, cells: Vec<Cell>) -> MergedRow {
        (key, cells)
    }

    fn borrowed<'a>(
        &mut self,
        key: Bytes,
        _: &'a [u8],
        cells: impl Iterator<Item = CellRef<'a>> + Clone,
    ) -> MergedRow {
        (key, cells.map(Cell::copied).collect())
    }

    fn bytes((key, cells): &MergedRow) -> u64 {
        (key.len() + cells.iter().map(|c| c.value.len()).sum::<usize>()) as u64
    }
}

/// A committed row, not yet handed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Merged {
    /// In [`Cell`]s: a row spanning messages or holding a split value, or
    /// any row of a message fed without placing.
    Owned(MergedRow),
    /// A row lying whole in the last message fed: its key, where the key
    /// lies in the message, and its cells in `RowMerger::placed`.
    Placed {
        key: Bytes,
        at: [u32; 2],
        cells: [u32; 2],
    },
}

/// Where a placed cell lies: its family in `RowMerger::families`, its
/// qualifier and value in the message (start and end).
#[derive(Debug, Clone, Copy)]
struct Placed {
    family: u32,
    qualifier: [u32; 2],
    value: [u32; 2],
    timestamp_micros: i64,
}

/// Where `part`, a slice of `message`, lies in it.
#[allow(clippy::cast_possible_truncation)] // a placing message is under 4 GiB
fn place(message: &[u8], part: &[u8]) -> [u32; 2] {
    // An empty field may be a constant's, not the message's.
    if part.is_empty() {
        return [0, 0];
    }
    let start = (part.as_ptr() as usize).wrapping_sub(message.as_ptr() as usize);
    debug_assert!(start <= message.len() && part.len() <= message.len() - start);
    [start as u32, (start + part.len()) as u32]
}

fn range([start, end]: [u32; 2]) -> std::ops::Range<usize> {
    start as usize..end as usize
}

/// The most a split cell's buffer reserves before its parts arrive.
const MAX_RESERVED_BYTES: usize = 1 << 20;

/// Reassembles `ReadRows` cell chunks into rows, across response messages.
#[derive(Debug, Default)]
pub(crate) struct RowMerger {
    key: Option<Bytes>,
    cells: Vec<Cell>,
    /// The current family, shared by its cells.
    family: Option<Arc<str>>,
    /// The last family entered, kept past the row: the next row names its
    /// family again, and rows of one family need not each make its name.
    last_family: Option<Arc<str>>,
    /// A cell whose value continues in the next chunk.
    partial: Option<SplitCell>,
    /// The cells of the rows placed in the last message fed (see
    /// [`Merged::Placed`]), and of the row being placed.
    placed: Vec<Placed>,
    /// The families of `placed`.
    families: Vec<Arc<str>>,
    /// The last message fed, when it placed rows.
    placed_in: Bytes,
    /// The row under way lies in the message being fed so far, without a
    /// split value: its cells are placed from this index of `placed` on,
    /// not made in `cells`.
    placing: Option<usize>,
    /// The current family's index in `families`, while placing.
    family_at: u32,
    /// Where a resumed read starts (after it, or before it when
    /// reversed): the last row committed, or a key the server said it
    /// scanned past since (`last_scanned_row_key`).
    pub(crate) last_key: Option<Bytes>,
    /// Rows committed so far.
    pub(crate) committed: u64,
    /// Rows come in descending key order (a reversed read).
    reversed: bool,
    /// The most rows the read asked for (zero: no limit).
    limit: u64,
}

/// A cell whose value arrives in several chunks: its parts are
/// concatenated in `value`, and `cell.value` is set once the last arrives.
#[derive(Debug)]
struct SplitCell {
    cell: Cell,
    value: BytesMut,
    /// The value's size, as its first chunk announced it.
    announced: usize,
}

fn protocol<T>(msg: &str) -> Result<T, ReadError> {
    Err(ReadError::Protocol(msg.to_owned()))
}

/// The size a cell's first chunk announces for its value (zero: the value
/// is whole in that chunk), within Bigtable's limit.
fn checked_size(first: &[u8], value_size: i32) -> Result<usize, ReadError> {
    let Ok(size) = usize::try_from(value_size) else {
        return protocol(&format!("a negative value_size, {value_size}"));
    };
    if size.max(first.len()) > MAX_CELL_BYTES {
        return protocol(&format!(
            "a cell value of {} bytes, over Bigtable's limit of {MAX_CELL_BYTES}",
            size.max(first.len())
        ));
    }
    Ok(size)
}

/// `part` of `message`, sharing its buffer; a copy when `part` lies
/// elsewhere (the tests' chunks, each field its own buffer).
fn share(message: &Bytes, part: &[u8]) -> Bytes {
    let start = (part.as_ptr() as usize).wrapping_sub(message.as_ptr() as usize);
    if part.is_empty() {
        Bytes::new()
    } else if start <= message.len() && part.len() <= message.len() - start {
        message.slice(start..start + part.len())
    } else {
        Bytes::copy_from_slice(part)
    }
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

    /// The same merger refusing a row past `rows_limit`
    /// (`ReadRowsRequest.rows_limit`; zero or less: no limit).
    pub(crate) fn with_limit(mut self, rows_limit: i64) -> Self {
        self.limit = u64::try_from(rows_limit).unwrap_or(0);
        self
    }

    /// Whether `key` may follow the last committed row: after it, or
    /// before it in a reversed read.
    fn in_order(&self, key: &[u8]) -> bool {
        match &self.last_key {
            None => true,
            Some(last) if self.reversed => key < &last[..],
            Some(last) => key > &last[..],
        }
    }

    /// The error for `key` coming after the last key in the wrong order.
    fn out_of_order<T>(&self, key: &[u8]) -> Result<T, ReadError> {
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

    /// Feed one chunk the tests built; a committed row comes out.
    #[cfg(test)]
    #[allow(clippy::needless_pass_by_value)] // the tests hand over what they build
    pub(crate) fn push(&mut self, chunk: Chunk) -> Result<Option<MergedRow>, ReadError> {
        let row = self.push_ref(chunk.as_ref(), &Bytes::new(), false)?;
        Ok(row.map(|row| self.hand_over(row, &mut AsMerged)))
    }

    /// Feed one chunk of `message`; a committed row comes out. A row
    /// starting here is placed when `places`. Every sequence the
    /// `ReadRows` contract forbids is an error, as Google's readers hold
    /// it (Java's `StateMachine`, Go's `chunkReader`).
    fn push_ref(
        &mut self,
        chunk: ChunkRef<'_>,
        message: &Bytes,
        places: bool,
    ) -> Result<Option<Merged>, ReadError> {
        if chunk.status == ChunkStatus::Reset {
            self.reset_row(&chunk)?;
            return Ok(None);
        }
        let commit = chunk.status == ChunkStatus::Commit;
        if let Some(split) = self.partial.take() {
            self.continue_cell(split, &chunk)?;
        } else {
            self.new_cell(&chunk, message, places)?;
        }
        if !commit {
            return Ok(None);
        }
        if self.partial.is_some() {
            return protocol("row committed inside a split cell value");
        }
        if self.limit > 0 && self.committed >= self.limit {
            return protocol(&format!(
                "more rows than the read's limit of {}",
                self.limit
            ));
        }
        let key = self.key.take().unwrap_or_default();
        let row = if let Some(from) = self.placing {
            #[allow(clippy::cast_possible_truncation)] // cells of a message's rows
            let cells = [from as u32, self.placed.len() as u32];
            Merged::Placed {
                key: key.clone(),
                at: place(message, &key),
                cells,
            }
        } else {
            // The next row's cells get the room this one's took: most rows
            // of a read hold as many cells, and the list is not grown cell
            // by cell.
            let room = self.cells.len();
            let cells = std::mem::replace(&mut self.cells, Vec::with_capacity(room));
            Merged::Owned((key.clone(), cells))
        };
        self.placing = None;
        self.reset();
        self.last_key = Some(key);
        self.committed += 1;
        Ok(Some(row))
    }

    /// `row` as `sink` makes it: a placed row's cells read where they lie
    /// in the last message fed.
    pub(crate) fn hand_over<R: RowSink>(&self, row: Merged, sink: &mut R) -> R::Row {
        match row {
            Merged::Owned((key, cells)) => sink.owned(key, cells),
            Merged::Placed { key, at, cells } => {
                let (message, families) = (&self.placed_in[..], &self.families);
                let cells = self.placed[range(cells)].iter().map(move |c| CellRef {
                    family: &families[c.family as usize],
                    qualifier: &message[range(c.qualifier)],
                    value: &message[range(c.value)],
                    timestamp_micros: c.timestamp_micros,
                });
                sink.borrowed(key, &message[range(at)], cells)
            }
        }
    }

    /// The row under way, placed so far, goes on in [`Cell`]s: its message
    /// ends, or a split value starts.
    fn own_placed(&mut self, message: &Bytes) {
        if let Some(from) = self.placing.take() {
            let families = &self.families;
            self.cells.extend(self.placed.drain(from..).map(|c| Cell {
                family: families[c.family as usize].clone(),
                qualifier: message.slice(range(c.qualifier)),
                value: message.slice(range(c.value)),
                timestamp_micros: c.timestamp_micros,
            }));
        }
    }

    /// A `reset_row` chunk: only inside a row, and carrying nothing else.
    fn reset_row(&mut self, chunk: &ChunkRef<'_>) -> Result<(), ReadError> {
        if self.key.is_none() {
            return protocol("a reset outside a row");
        }
        if !chunk.row_key.is_empty()
            || chunk.family.is_some()
            || chunk.qualifier.is_some()
            || chunk.timestamp_micros != 0
            || chunk.labels
            || chunk.value_size != 0
            || !chunk.value.is_empty()
        {
            return protocol(
                "a reset chunk carrying a key, a column, a timestamp, labels or a value",
            );
        }
        self.reset();
        Ok(())
    }

    /// A chunk of `message` starting a cell: the first of a row, or the
    /// next one. A row starting here is placed when `places`.
    fn new_cell(
        &mut self,
        chunk: &ChunkRef<'_>,
        message: &Bytes,
        places: bool,
    ) -> Result<(), ReadError> {
        let &ChunkRef {
            row_key,
            family,
            qualifier,
            timestamp_micros,
            value,
            value_size,
            ..
        } = chunk;
        if !row_key.is_empty() {
            match &self.key {
                Some(key) if key[..] != *row_key => {
                    return protocol("a new row key before the previous row was committed")
                }
                Some(_) => {}
                None => {
                    if !self.in_order(row_key) {
                        return self.out_of_order(row_key);
                    }
                    self.key = Some(share(message, row_key));
                    if places {
                        self.placing = Some(self.placed.len());
                    }
                }
            }
        } else if self.key.is_none() {
            return protocol("a chunk without a row key outside a row");
        }
        if let Some(family) = family {
            if qualifier.is_none() {
                return protocol("a new family without a qualifier");
            }
            self.enter_family(family)?;
            if self.placing.is_some() {
                self.family_at = self.placed_family();
            }
        }
        let Some(family) = &self.family else {
            return protocol("a cell without a family or qualifier");
        };
        if let Some(from) = self.placing {
            let qualifier = match (qualifier, self.placed[from..].last()) {
                (Some(qualifier), _) => place(message, qualifier),
                (None, Some(previous)) => previous.qualifier,
                (None, None) => return protocol("a cell without a family or qualifier"),
            };
            if checked_size(value, value_size)? == 0 {
                self.placed.push(Placed {
                    family: self.family_at,
                    qualifier,
                    value: place(message, value),
                    timestamp_micros,
                });
                return Ok(());
            }
            let cell = Cell {
                family: family.clone(),
                qualifier: message.slice(range(qualifier)),
                value: Bytes::new(),
                timestamp_micros,
            };
            self.own_placed(message);
            return self.start_cell(cell, value, value_size, message);
        }
        // A chunk without a qualifier is another version of the previous
        // cell's column.
        let qualifier = match (qualifier, self.cells.last()) {
            (Some(qualifier), _) => share(message, qualifier),
            (None, Some(previous)) => previous.qualifier.clone(),
            (None, None) => return protocol("a cell without a family or qualifier"),
        };
        let cell = Cell {
            family: family.clone(),
            qualifier,
            value: Bytes::new(),
            timestamp_micros,
        };
        self.start_cell(cell, value, value_size, message)
    }

    /// The current family's index in `families`, added when new.
    #[allow(clippy::cast_possible_truncation)] // families of a message's rows
    fn placed_family(&mut self) -> u32 {
        let Some(family) = &self.family else {
            return 0;
        };
        match self.families.last() {
            Some(last) if Arc::ptr_eq(last, family) => {}
            _ => self.families.push(family.clone()),
        }
        (self.families.len() - 1) as u32
    }

    /// Make `name` the current family, unless it already is.
    fn enter_family(&mut self, name: &[u8]) -> Result<(), ReadError> {
        if self.family.as_deref().map(str::as_bytes) == Some(name) {
            return Ok(());
        }
        if let Some(last) = self
            .last_family
            .as_ref()
            .filter(|last| last.as_bytes() == name)
        {
            self.family = Some(last.clone());
            return Ok(());
        }
        let Ok(name) = std::str::from_utf8(name) else {
            return protocol("a family name that is not UTF-8");
        };
        let name: Arc<str> = name.into();
        self.last_family = Some(name.clone());
        self.family = Some(name);
        Ok(())
    }

    /// A new cell whose value starts with `first` (of `message`):
    /// complete, or the first part of a split value.
    fn start_cell(
        &mut self,
        mut cell: Cell,
        first: &[u8],
        value_size: i32,
        message: &Bytes,
    ) -> Result<(), ReadError> {
        let size = checked_size(first, value_size)?;
        if size == 0 {
            cell.value = share(message, first);
            self.cells.push(cell);
            return Ok(());
        }
        if first.len() > size {
            return protocol(&format!(
                "a split cell value of {size} bytes announced, {} in its first chunk",
                first.len()
            ));
        }
        // The announced size is the server's word: reserve no more than a
        // bounded part of it up front, grow as parts arrive.
        let reserve = size.min(MAX_RESERVED_BYTES).max(first.len());
        let mut value = BytesMut::with_capacity(reserve);
        value.extend_from_slice(first);
        self.partial = Some(SplitCell {
            cell,
            value,
            announced: size,
        });
        Ok(())
    }

    /// The next part of a split value: a value alone, `value_size` the
    /// same announced size until the last part, which carries zero.
    fn continue_cell(
        &mut self,
        mut split: SplitCell,
        chunk: &ChunkRef<'_>,
    ) -> Result<(), ReadError> {
        if !chunk.row_key.is_empty()
            || chunk.family.is_some()
            || chunk.qualifier.is_some()
            || chunk.timestamp_micros != 0
            || chunk.labels
        {
            return protocol(
                "a split cell value continued by a chunk with a key, a column, a timestamp or labels",
            );
        }
        let total = split.value.len() + chunk.value.len();
        if total > split.announced {
            return protocol(&format!(
                "a split cell value over its announced size: {total} bytes of {}",
                split.announced
            ));
        }
        split.value.extend_from_slice(chunk.value);
        if chunk.value_size == 0 {
            if total != split.announced {
                return protocol(&format!(
                    "a split cell value of {total} bytes, {} announced",
                    split.announced
                ));
            }
            split.cell.value = split.value.freeze();
            self.cells.push(split.cell);
        } else if usize::try_from(chunk.value_size).ok() != Some(split.announced) {
            return protocol(&format!(
                "the value_size of a split cell changed from {} to {}",
                split.announced, chunk.value_size
            ));
        } else {
            self.partial = Some(split);
        }
        Ok(())
    }

    pub(crate) fn reset(&mut self) {
        if let Some(from) = self.placing.take() {
            self.placed.truncate(from);
        }
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

    /// Feed one response message's chunks the tests built; committed rows
    /// go to `out`.
    #[cfg(test)]
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

    /// Feed one whole message as received: its chunks, read in place,
    /// then its last scanned row key; committed rows go to `out`. Whether
    /// the read moved on: a row committed, or a key scanned past. A message
    /// that is not a `ReadRowsResponse` fails as a status of its own
    /// (`INTERNAL`).
    ///
    /// With `places`, a row lying whole in the message, without a split
    /// value, is placed ([`Merged::Placed`]): its cells are read where they
    /// lie when it is handed over, no cell list made and no share of the
    /// message taken a cell. Nothing is placed while `out` holds rows: the
    /// rows the previous message placed keep their places until handed
    /// over.
    pub(crate) fn feed_message(
        &mut self,
        message: &Message,
        places: bool,
        out: &mut VecDeque<Merged>,
    ) -> Result<bool, ReadError> {
        let Message(message) = message;
        // Rows still waiting in `out` may be the last message's placed
        // ones, which its places must outlive: this message's rows are
        // then merged into cells (a reader hands every row over before it
        // feeds the next message, so this does not happen).
        let places = places && out.is_empty() && u32::try_from(message.len()).is_ok();
        if places {
            self.placed.clear();
            self.families.clear();
            self.placed_in = message.clone();
        }
        let rows = self.committed;
        let scanned = for_each_chunk(message, |chunk| {
            if let Some(row) = self.push_ref(chunk, message, places)? {
                out.push_back(row);
            }
            Ok(())
        });
        self.own_placed(message);
        let scanned = scanned.map_err(|stop| match stop {
            Stop::Malformed(e) => {
                ReadError::Status(tonic::Status::internal(malformed(e).to_string()))
            }
            Stop::Chunk(e) => e,
        })?;
        let scanned = (!scanned.is_empty()).then(|| message.slice_ref(scanned));
        self.moved_on(rows, scanned)
    }

    /// [`RowMerger::feed_message`] without placing, each row handed over
    /// as merged.
    #[cfg(test)]
    pub(crate) fn feed_merged(
        &mut self,
        message: &Message,
        out: &mut VecDeque<MergedRow>,
    ) -> Result<bool, ReadError> {
        self.feed_handing_over(message, false, out)
    }

    /// [`RowMerger::feed_message`], each row committed handed over at once
    /// ([`AsMerged`]).
    #[cfg(test)]
    pub(crate) fn feed_handing_over(
        &mut self,
        message: &Message,
        places: bool,
        out: &mut VecDeque<MergedRow>,
    ) -> Result<bool, ReadError> {
        let mut rows = VecDeque::new();
        let read = self.feed_message(message, places, &mut rows);
        out.extend(
            rows.into_iter()
                .map(|row| self.hand_over(row, &mut AsMerged)),
        );
        read
    }

    /// Whether the read moved on since `rows` were committed: a row
    /// committed since, or a key the message says the server scanned past.
    fn moved_on(&mut self, rows: u64, scanned: Option<Bytes>) -> Result<bool, ReadError> {
        match scanned {
            None => Ok(self.committed > rows),
            Some(key) => {
                self.scanned_past(key)?;
                Ok(true)
            }
        }
    }

    /// Feed one whole response the tests built: its chunks, then its last
    /// scanned row key. Whether the read moved on, as
    /// [`RowMerger::feed_message`] says.
    #[cfg(test)]
    pub(crate) fn feed_response(
        &mut self,
        response: Response,
        out: &mut VecDeque<MergedRow>,
    ) -> Result<bool, ReadError> {
        let rows = self.committed;
        self.feed(response.chunks, out)?;
        let scanned = response.last_scanned_row_key;
        self.moved_on(rows, (!scanned.is_empty()).then_some(scanned))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::read_rows_response::{cell_chunk::RowStatus, CellChunk};
    use crate::model::proto::ReadRowsResponse;

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
        assert_eq!(key, &b"r1"[..]);
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
        assert_eq!(key, &b"r2"[..]);
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
        // The rest never comes: the last part must make the size announced.
        let err = m.push(commit(chunk("", None, None, 0, "b"))).unwrap_err();
        assert!(err.to_string().contains("announced"), "{err}");
    }

    /// The error `chunks` end with, fed to a fresh merger in order (every
    /// chunk before the last must be accepted).
    fn refused(chunks: Vec<Chunk>) -> String {
        let mut m = RowMerger::default();
        let last = chunks.len() - 1;
        for (i, c) in chunks.into_iter().enumerate() {
            match m.push(c) {
                Err(e) if i == last => return e.to_string(),
                Err(e) => panic!("chunk {i} refused: {e}"),
                Ok(_) => {}
            }
        }
        panic!("the last chunk was accepted")
    }

    fn reset_chunk() -> Chunk {
        Chunk {
            status: ChunkStatus::Reset,
            ..Chunk::default()
        }
    }

    fn split(c: Chunk, value_size: i32) -> Chunk {
        Chunk { value_size, ..c }
    }

    #[test]
    fn every_sequence_the_contract_forbids_is_refused() {
        let open = || chunk("r", Some("c"), Some("q"), 1000, "v");
        let part = |v: &str| chunk("", None, None, 0, v);
        let cases: Vec<(&str, Vec<Chunk>)> = vec![
            ("reset outside a row", vec![reset_chunk()]),
            ("reset after a commit", vec![commit(open()), reset_chunk()]),
            (
                "reset with a key",
                vec![
                    open(),
                    Chunk {
                        row_key: Bytes::from_static(b"r"),
                        ..reset_chunk()
                    },
                ],
            ),
            (
                "reset with a value",
                vec![
                    open(),
                    Chunk {
                        value: Bytes::from_static(b"x"),
                        ..reset_chunk()
                    },
                ],
            ),
            (
                "reset with a timestamp",
                vec![
                    open(),
                    Chunk {
                        timestamp_micros: 5,
                        ..reset_chunk()
                    },
                ],
            ),
            (
                "reset with a family",
                vec![
                    open(),
                    Chunk {
                        family: Some(Bytes::from_static(b"c")),
                        ..reset_chunk()
                    },
                ],
            ),
            (
                "reset with labels",
                vec![
                    open(),
                    Chunk {
                        labels: true,
                        ..reset_chunk()
                    },
                ],
            ),
            (
                "continuation with a timestamp",
                vec![split(open(), 3), chunk("", None, None, 7, "ab")],
            ),
            (
                "continuation with a family",
                vec![split(open(), 3), chunk("", Some("c"), Some("q"), 0, "ab")],
            ),
            (
                "continuation with a qualifier",
                vec![split(open(), 3), chunk("", None, Some("q"), 0, "ab")],
            ),
            (
                "continuation with a key",
                vec![split(open(), 3), chunk("r", None, None, 0, "ab")],
            ),
            (
                "continuation with labels",
                vec![
                    split(open(), 3),
                    Chunk {
                        labels: true,
                        ..part("ab")
                    },
                ],
            ),
            (
                "key going backwards",
                vec![
                    commit(chunk("b", Some("c"), Some("q"), 0, "")),
                    commit(chunk("a", Some("c"), Some("q"), 0, "")),
                ],
            ),
            ("commit without a row", vec![commit(part(""))]),
            (
                "new key inside a row",
                vec![open(), chunk("s", Some("c"), Some("q"), 0, "")],
            ),
            (
                "new row without a family",
                vec![chunk("r", None, Some("q"), 0, "")],
            ),
            (
                "family without a qualifier",
                vec![chunk("r", Some("c"), None, 0, "")],
            ),
            ("negative value_size", vec![split(open(), -1)]),
            (
                "first part over value_size",
                vec![split(chunk("r", Some("c"), Some("q"), 0, "abcd"), 2)],
            ),
            (
                "parts over value_size",
                vec![split(open(), 5), split(part("abcdef"), 5)],
            ),
            (
                "last part short of value_size",
                vec![split(open(), 5), part("ab")],
            ),
            (
                "value_size changing",
                vec![split(open(), 5), split(part("a"), 6)],
            ),
            (
                "commit inside a split value",
                vec![split(commit(open()), 5)],
            ),
            (
                "commit on a part that is not the last",
                vec![split(open(), 5), split(commit(part("a")), 5)],
            ),
        ];
        for (what, chunks) in cases {
            let err = std::panic::catch_unwind(|| refused(chunks))
                .unwrap_or_else(|_| panic!("{what}: not refused as the last chunk"));
            assert!(!err.is_empty(), "{what}");
        }
    }

    #[test]
    fn cell_sizes_are_bounded_across_continuations() {
        let mut big = chunk("r", Some("c"), Some("q"), 0, "");
        big.value = Bytes::from(vec![0u8; MAX_CELL_BYTES + 1]);
        let err = RowMerger::default().push(big).unwrap_err();
        assert!(err.to_string().contains("over Bigtable's limit"), "{err}");
        // A value_size of 5 followed by a mebibyte.
        let mut m = RowMerger::default();
        let mut first = chunk("r", Some("c"), Some("q"), 0, "ab");
        first.value_size = 5;
        m.push(first).unwrap();
        let mut rest = chunk("", None, None, 0, "");
        rest.value = Bytes::from(vec![0u8; 1 << 20]);
        let err = m.push(commit(rest)).unwrap_err();
        assert!(err.to_string().contains("announced size"), "{err}");
    }

    #[test]
    fn rows_past_the_limit_are_refused() {
        let mut m = RowMerger::new(false).with_limit(2);
        let mut rows = VecDeque::new();
        let five: Vec<Chunk> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|k| commit(chunk(k, Some("c"), Some("q"), 0, "")))
            .collect();
        let err = m.feed(five, &mut rows).unwrap_err();
        assert!(err.to_string().contains("limit of 2"), "{err}");
        assert_eq!(rows.len(), 2);
        // No limit, or a zero one: as many rows as come.
        let mut m = RowMerger::new(false).with_limit(0);
        for k in ["a", "b", "c"] {
            m.push(commit(chunk(k, Some("c"), Some("q"), 0, "")))
                .unwrap()
                .unwrap();
        }
    }

    /// A message read in place commits its rows and takes its last scanned
    /// key; one that breaks off fails as `INTERNAL`, saying the response is
    /// malformed, as a message tonic could not decode did.
    #[test]
    fn a_message_read_in_place_reports_what_breaks_it() {
        use prost::Message as _;
        let row = CellChunk {
            row_key: b"r".to_vec(),
            family_name: Some("c".into()),
            qualifier: Some(b"q".to_vec()),
            value: b"v".to_vec(),
            row_status: Some(RowStatus::CommitRow(true)),
            ..CellChunk::default()
        };
        let mut bytes = ReadRowsResponse {
            chunks: vec![row],
            last_scanned_row_key: b"s".to_vec(),
            ..ReadRowsResponse::default()
        }
        .encode_to_vec();
        let mut m = RowMerger::default();
        let mut rows = VecDeque::new();
        assert!(m
            .feed_merged(&Message(Bytes::from(bytes.clone())), &mut rows)
            .unwrap());
        assert_eq!(rows.len(), 1);
        assert_eq!(m.last_key.as_deref(), Some(&b"s"[..]));
        // A chunk field longer than what follows it.
        bytes.extend_from_slice(&[0x0A, 0x05, 0x00]);
        let err = RowMerger::default()
            .feed_merged(&Message(Bytes::from(bytes)), &mut VecDeque::new())
            .unwrap_err();
        let ReadError::Status(status) = err else {
            panic!("a status: {err:?}");
        };
        assert_eq!(status.code(), tonic::Code::Internal);
        assert!(
            status.message().starts_with("malformed ReadRows response"),
            "{status}"
        );
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
        let mut rows = VecDeque::new();
        let committed = RowMerger::default()
            .feed_merged(&Message(message.clone()), &mut rows)
            .unwrap();
        assert!(committed);
        let (key, cells) = rows.pop_front().unwrap();
        assert_eq!(key, &b"r"[..]);
        let within = |part: &Bytes| {
            let whole = message.as_ptr_range();
            whole.start <= part.as_ptr() && part.as_ptr_range().end <= whole.end
        };
        assert!(within(&key));
        for (cell, value) in cells.iter().zip(["v1", "v2"]) {
            assert_eq!(cell.qualifier, "q");
            assert_eq!(cell.value, value);
            assert!(within(&cell.qualifier) && within(&cell.value));
        }
    }

    #[test]
    fn rows_placed_and_not_handed_over_keep_their_places() {
        use prost::Message as _;
        let message = |key: &str, value: &str| {
            let chunk = CellChunk {
                row_key: key.as_bytes().to_vec(),
                family_name: Some("f".to_owned()),
                qualifier: Some(b"q".to_vec()),
                value: value.as_bytes().to_vec(),
                row_status: Some(RowStatus::CommitRow(true)),
                ..CellChunk::default()
            };
            let response = ReadRowsResponse {
                chunks: vec![chunk],
                ..ReadRowsResponse::default()
            };
            Message(Bytes::from(response.encode_to_vec()))
        };
        let mut merger = RowMerger::default();
        let mut waiting = VecDeque::new();
        merger
            .feed_message(&message("a", "one"), true, &mut waiting)
            .unwrap();
        assert!(matches!(waiting[0], Merged::Placed { .. }));
        // Fed before the first row is handed over: merged into cells, and
        // the first row still reads where it lies.
        merger
            .feed_message(&message("b", "two"), true, &mut waiting)
            .unwrap();
        assert!(matches!(waiting[1], Merged::Owned(_)));
        let rows: Vec<_> = waiting
            .into_iter()
            .map(|row| merger.hand_over(row, &mut AsMerged))
            .map(|(key, cells)| (key, cells[0].value.clone()))
            .collect();
        assert_eq!(
            rows,
            [
                (Bytes::from("a"), Bytes::from("one")),
                (Bytes::from("b"), Bytes::from("two"))
            ]
        );
    }
}
