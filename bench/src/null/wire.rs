//! What the null server reads and writes on the wire, as plain functions
//! over bytes: the `ReadRows` answer for the workload's first `n` rows,
//! encoded once in gRPC frames; the count of a `MutateRowsRequest`'s
//! entries, found by skipping over them (never decoding one); the success
//! answer for that many entries; a request's table name.

use bigtable_rs::google::bigtable::v2::{
    mutate_rows_response, read_rows_response::cell_chunk::RowStatus, read_rows_response::CellChunk,
    MutateRowsResponse, ReadRowsResponse,
};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use prost::encoding::{decode_varint, WireType};
use prost::Message as _;
use ttl_bench::{event, raw_row};

/// `MutateRowsRequest.entries` and `ReadRowsRequest.table_name` /
/// `MutateRowsRequest.table_name`.
const ENTRIES_FIELD: u64 = 2;
const TABLE_NAME_FIELD: u64 = 1;

/// A message in its gRPC frame: not compressed, its length, the bytes.
#[must_use]
pub fn grpc_frame(message: &[u8]) -> Bytes {
    let mut frame = Vec::with_capacity(5 + message.len());
    frame.push(0);
    frame.extend_from_slice(
        &u32::try_from(message.len())
            .expect("a message under 4 GiB")
            .to_be_bytes(),
    );
    frame.extend_from_slice(message);
    frame.into()
}

/// The first message of a gRPC request body (one message: every call the
/// null server answers is unary or server-streaming).
///
/// # Errors
/// A frame cut short or compressed (no client here compresses requests).
pub fn first_message(body: &[u8]) -> Result<&[u8], String> {
    let (&flag, rest) = body.split_first().ok_or("empty request body")?;
    if flag != 0 {
        return Err("compressed request: not supported by the null server".into());
    }
    let len = rest
        .get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or("request frame cut short")?;
    rest.get(4..4 + len)
        .ok_or_else(|| "request message cut short".to_owned())
}

/// Walk the top-level fields of a protobuf message, calling `f(field,
/// bytes)` for each length-delimited one and skipping the rest.
fn each_delimited(mut msg: &[u8], mut f: impl FnMut(u64, &[u8])) -> Result<(), String> {
    while !msg.is_empty() {
        let key = decode_varint(&mut msg).map_err(|e| e.to_string())?;
        let field = key >> 3;
        match WireType::try_from(key & 7).map_err(|e| e.to_string())? {
            WireType::Varint => {
                decode_varint(&mut msg).map_err(|e| e.to_string())?;
            }
            WireType::SixtyFourBit => msg = msg.get(8..).ok_or("fixed64 cut short")?,
            WireType::ThirtyTwoBit => msg = msg.get(4..).ok_or("fixed32 cut short")?,
            WireType::LengthDelimited => {
                let len = usize::try_from(decode_varint(&mut msg).map_err(|e| e.to_string())?)
                    .map_err(|e| e.to_string())?;
                let value = msg.get(..len).ok_or("field cut short")?;
                f(field, value);
                msg = &msg[len..];
            }
            WireType::StartGroup | WireType::EndGroup => return Err("groups: not Bigtable".into()),
        }
    }
    Ok(())
}

/// How many entries a `MutateRowsRequest` holds, and its table name.
///
/// # Errors
/// A malformed message.
pub fn count_entries(request: &[u8]) -> Result<(usize, String), String> {
    let (mut entries, mut table) = (0, String::new());
    each_delimited(request, |field, value| match field {
        ENTRIES_FIELD => entries += 1,
        TABLE_NAME_FIELD => table = String::from_utf8_lossy(value).into_owned(),
        _ => {}
    })?;
    Ok((entries, table))
}

/// The table name of a request whose field 1 is it (`ReadRows`,
/// `MutateRows`, `MutateRow`, `SampleRowKeys`, …).
///
/// # Errors
/// A malformed message.
pub fn table_name(request: &[u8]) -> Result<String, String> {
    let mut table = String::new();
    each_delimited(request, |field, value| {
        if field == TABLE_NAME_FIELD {
            table = String::from_utf8_lossy(value).into_owned();
        }
    })?;
    Ok(table)
}

/// Success for entries `0..n`, in one `MutateRowsResponse` frame. Every
/// entry carries an `OK` status message (empty on the wire), as Cloud
/// Bigtable sends it.
#[must_use]
pub fn mutate_rows_success(n: usize) -> Bytes {
    let response = MutateRowsResponse {
        entries: (0..n)
            .map(|i| mutate_rows_response::Entry {
                index: i64::try_from(i).unwrap_or(i64::MAX),
                // `google.rpc.Status`, whose crate bigtable_rs does not re-export.
                #[allow(clippy::default_trait_access)]
                status: Some(Default::default()),
            })
            .collect(),
        ..MutateRowsResponse::default()
    };
    grpc_frame(&response.encode_to_vec())
}

/// The workload's rows `0..n` written at `written`, as a filtered read
/// returns them, in `ReadRowsResponse` frames of about `message_bytes`
/// each: every row's cells ([`ttl_bench::raw_row`]) in chunks as Cloud
/// Bigtable cuts them (the family named when it changes, the qualifier on
/// each new column, the last chunk committing the row).
#[must_use]
pub fn read_rows_frames(n: usize, written: DateTime<Utc>, message_bytes: usize) -> Vec<Bytes> {
    let mut frames = Vec::new();
    let mut chunks: Vec<CellChunk> = Vec::new();
    let mut size = 0;
    for i in 0..n {
        let (key, cells) = raw_row(&event(i, written));
        let last = cells.len().saturating_sub(1);
        let mut family: Option<&str> = None;
        for (j, cell) in cells.iter().enumerate() {
            let chunk = CellChunk {
                row_key: if j == 0 { key.clone() } else { Vec::new() },
                family_name: (family != Some(cell.family.as_str())).then(|| cell.family.clone()),
                qualifier: Some(cell.qualifier.clone()),
                timestamp_micros: cell.timestamp_micros,
                value: cell.value.clone(),
                row_status: (j == last).then_some(RowStatus::CommitRow(true)),
                ..CellChunk::default()
            };
            family = Some(cell.family.as_str());
            size += chunk.encoded_len() + 3;
            chunks.push(chunk);
        }
        if size >= message_bytes || i + 1 == n {
            let response = ReadRowsResponse {
                chunks: std::mem::take(&mut chunks),
                ..ReadRowsResponse::default()
            };
            frames.push(grpc_frame(&response.encode_to_vec()));
            size = 0;
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use ttl_bench::{hand_decode, rs_row};

    fn unframe(frame: &[u8]) -> &[u8] {
        first_message(frame).unwrap()
    }

    // Counting a request's entries, naming its table and answering it are
    // tested end to end, through the library, by the server's tests.

    /// The frames merge back into the workload's rows, each decoded by the
    /// hand-written decoder into the row that was encoded.
    #[test]
    fn read_frames_hold_the_workload_rows() {
        let written = Utc::now();
        let n = 250;
        let frames = read_rows_frames(n, written, 4096);
        assert!(frames.len() > 3, "rows spread over several messages");
        let mut rows: Vec<(Vec<u8>, Vec<bigtable_rs::bigtable::RowCell>)> = Vec::new();
        let mut family = String::new();
        let mut qualifier = Vec::new();
        for frame in &frames {
            let response = ReadRowsResponse::decode(unframe(frame)).unwrap();
            for chunk in response.chunks {
                if !chunk.row_key.is_empty() {
                    rows.push((chunk.row_key.clone(), Vec::new()));
                }
                if let Some(f) = chunk.family_name {
                    family = f;
                }
                if let Some(q) = chunk.qualifier {
                    qualifier = q;
                }
                rows.last_mut()
                    .unwrap()
                    .1
                    .push(bigtable_rs::bigtable::RowCell {
                        family_name: family.clone(),
                        qualifier: qualifier.clone(),
                        value: chunk.value.clone(),
                        timestamp_micros: chunk.timestamp_micros,
                        labels: Vec::new(),
                    });
            }
        }
        assert_eq!(rows.len(), n);
        for (i, (key, cells)) in rows.iter().enumerate() {
            let expected = event(i, written);
            let (want_key, want_cells) = rs_row(&expected);
            assert_eq!(key, &want_key);
            let fields = |c: &bigtable_rs::bigtable::RowCell| {
                (
                    c.family_name.clone(),
                    c.qualifier.clone(),
                    c.value.clone(),
                    c.timestamp_micros,
                )
            };
            assert_eq!(
                cells.iter().map(fields).collect::<Vec<_>>(),
                want_cells.iter().map(fields).collect::<Vec<_>>()
            );
            let decoded = hand_decode(key, cells).unwrap();
            assert_eq!(decoded.id, expected.id);
            assert_eq!(decoded.clicks, expected.clicks);
        }
    }
}
