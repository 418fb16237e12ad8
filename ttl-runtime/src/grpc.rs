//! The data calls the library makes (`MutateRow`, `MutateRows`, `ReadRows`)
//! on a gRPC channel of our own, with codecs of our own: one connection pool
//! for every read and write.
//!
//! `bigtable_rs` encodes a `MutateRowsRequest` from its `Entry` values at
//! send time and keeps its channel private. The bulk writer needs each
//! batch's encoding anyway (it is what retries re-send), so it encodes every
//! entry once, straight into the wire form, and sends those bytes: no
//! `Entry` list is kept, and no second encoding is made. The channel is
//! configured here (HTTP/2 windows sized for bulk reads and writes, keep-alive
//! as `bigtable_rs` sets it); every request carries the routing header and,
//! on Cloud Bigtable, a bearer token.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use bigtable_rs::google::bigtable::v2::{
    mutate_rows_request::Entry, MutateRowRequest, MutateRowResponse, MutateRowsResponse,
    ReadRowsRequest,
};
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::chunk::{Chunk, ReadRowsCodec};
use crate::scan::routing_header;

const DATA_ENDPOINT: &str = "https://bigtable.googleapis.com";
const DATA_SCOPE: &str = "https://www.googleapis.com/auth/bigtable.data";
const MUTATE_ROW: &str = "/google.bigtable.v2.Bigtable/MutateRow";
const MUTATE_ROWS: &str = "/google.bigtable.v2.Bigtable/MutateRows";
const READ_ROWS: &str = "/google.bigtable.v2.Bigtable/ReadRows";
/// The largest `ReadRowsResponse` message accepted: a bit over Bigtable's
/// 256 MiB row limit (tonic's default cap, 4 MiB, is below its 100 MiB
/// cells, and the emulator sends a whole row in one message).
const MAX_RESPONSE_MESSAGE_BYTES: usize = 260 * 1024 * 1024;
/// Connections to Cloud Bigtable, as `bigtable_rs` opens for this library.
const CLOUD_CONNECTIONS: usize = 4;
/// HTTP/2 flow-control windows. The protocol's default, 64 KiB, makes a bulk
/// read of small rows wait on window updates many times a second.
const STREAM_WINDOW_BYTES: u32 = 4 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 8 << 20;

/// A cheap-to-clone handle on the data channel.
#[derive(Clone)]
pub(crate) struct DataChannel {
    channel: Channel,
    tokens: Option<Arc<dyn gcp_auth::TokenProvider>>,
}

fn configure(endpoint: Endpoint) -> Endpoint {
    endpoint
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true)
}

impl DataChannel {
    /// Plain HTTP/2 to an emulator at `host` (`host:port`), connected on
    /// first use.
    pub(crate) fn emulator(host: &str) -> Result<Self, String> {
        let endpoint =
            Endpoint::from_shared(format!("http://{host}")).map_err(|e| e.to_string())?;
        Ok(Self {
            channel: configure(endpoint).connect_lazy(),
            tokens: None,
        })
    }

    /// TLS to Cloud Bigtable over a few connections, with tokens from
    /// `tokens`. Must be called within a Tokio runtime.
    pub(crate) fn cloud(tokens: Arc<dyn gcp_auth::TokenProvider>) -> Result<Self, String> {
        let endpoint = configure(
            Endpoint::from_static(DATA_ENDPOINT)
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .map_err(|e| e.to_string())?,
        );
        let (channel, connections) = Channel::balance_channel(CLOUD_CONNECTIONS);
        for key in 0..CLOUD_CONNECTIONS {
            // Distinct keys: one HTTP/2 connection each.
            connections
                .try_send(tonic::transport::channel::Change::Insert(
                    key,
                    endpoint.clone(),
                ))
                .map_err(|e| e.to_string())?;
        }
        Ok(Self {
            channel,
            tokens: Some(tokens),
        })
    }

    /// `message` as a request on `table_name`: routing header, deadline,
    /// and a bearer token on Cloud Bigtable.
    async fn request<T>(
        &self,
        message: T,
        table_name: &str,
        timeout: Option<Duration>,
    ) -> Result<tonic::Request<T>, tonic::Status> {
        let mut request = tonic::Request::new(message);
        if let Ok(value) = routing_header(table_name).parse() {
            request
                .metadata_mut()
                .insert("x-goog-request-params", value);
        }
        if let Some(timeout) = timeout {
            request.set_timeout(timeout);
        }
        if let Some(tokens) = &self.tokens {
            let token = tokens.token(&[DATA_SCOPE]).await.map_err(|e| {
                tonic::Status::unauthenticated(format!("no access token for Cloud Bigtable: {e}"))
            })?;
            let value = format!("Bearer {}", token.as_str())
                .parse()
                .map_err(|_| tonic::Status::unauthenticated("the access token is not a header"))?;
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }

    /// A tonic client on the channel, once it can take a request.
    async fn ready(&self) -> Result<tonic::client::Grpc<Channel>, tonic::Status> {
        let mut grpc = tonic::client::Grpc::new(self.channel.clone());
        grpc.ready()
            .await
            .map_err(|e| tonic::Status::unavailable(format!("data channel not ready: {e}")))?;
        Ok(grpc)
    }

    /// One `ReadRows` call; each response message comes as the cell chunks
    /// it holds, sharing its buffer (see [`crate::chunk`]).
    pub(crate) async fn read_rows(
        &self,
        request: ReadRowsRequest,
    ) -> Result<tonic::Streaming<Vec<Chunk>>, tonic::Status> {
        let table_name = request.table_name.clone();
        let request = self.request(request, &table_name, None).await?;
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(READ_ROWS);
        let response = self
            .ready()
            .await?
            .max_decoding_message_size(MAX_RESPONSE_MESSAGE_BYTES)
            .server_streaming(request, path, ReadRowsCodec)
            .await?;
        Ok(response.into_inner())
    }

    /// One `MutateRow` call (one row's mutations, applied atomically).
    pub(crate) async fn mutate_row(
        &self,
        request: MutateRowRequest,
        timeout: Duration,
    ) -> Result<MutateRowResponse, tonic::Status> {
        let table_name = request.table_name.clone();
        let request = self.request(request, &table_name, Some(timeout)).await?;
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(MUTATE_ROW);
        let response = self
            .ready()
            .await?
            .unary(request, path, ProstCodec::default())
            .await?;
        Ok(response.into_inner())
    }

    /// One `MutateRows` call sending `batch`'s entries `selected` (all when
    /// `None`), as already encoded.
    pub(crate) async fn mutate_rows(
        &self,
        table_name: Arc<str>,
        batch: Arc<EncodedBatch>,
        selected: Option<Vec<usize>>,
        timeout: Duration,
    ) -> Result<tonic::Streaming<MutateRowsResponse>, tonic::Status> {
        let body = MutateRowsBody {
            table_name: table_name.clone(),
            batch,
            selected,
        };
        let request = self.request(body, &table_name, Some(timeout)).await?;
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(MUTATE_ROWS);
        let response = self
            .ready()
            .await?
            .server_streaming(request, path, MutateRowsCodec)
            .await?;
        Ok(response.into_inner())
    }
}

/// Entries of one `MutateRowsRequest`, each encoded once in its wire form
/// (field 2, length-delimited), back to back: the request body and the
/// batch's retry material at once.
#[derive(Debug, Default)]
pub(crate) struct EncodedBatch {
    bytes: Vec<u8>,
    /// Where each entry ends in `bytes`.
    ends: Vec<usize>,
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
        }
    }

    /// Append `entry`; its encoded size (with its field header) comes back.
    pub(crate) fn push(&mut self, entry: &Entry) -> usize {
        let start = self.bytes.len();
        prost::encoding::message::encode(ENTRIES_FIELD, entry, &mut self.bytes);
        self.ends.push(self.bytes.len());
        self.bytes.len() - start
    }

    /// The encoded size `entry` would take in a batch.
    pub(crate) fn size_of(entry: &Entry) -> usize {
        prost::encoding::message::encoded_len(ENTRIES_FIELD, entry)
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Entry `i` in its wire form (field header included).
    fn wire(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Entry `i`'s body, without the field header.
    fn body(&self, i: usize) -> &[u8] {
        let mut rest = self.wire(i);
        // The field header: one key byte, then the length varint.
        rest = rest.get(1..).unwrap_or_default();
        match prost::encoding::decode_varint(&mut rest) {
            Ok(_) => rest,
            Err(_) => &[],
        }
    }

    /// Entry `i` decoded again.
    #[cfg(test)]
    fn entry(&self, i: usize) -> Result<Entry, prost::DecodeError> {
        Entry::decode(self.body(i))
    }

    /// Entry `i`'s row key.
    pub(crate) fn key(&self, i: usize) -> Vec<u8> {
        let mut rest = self.body(i);
        if rest.first() != Some(&ROW_KEY_KEY) {
            return Vec::new();
        }
        rest = &rest[1..];
        prost::encoding::decode_varint(&mut rest)
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
struct MutateRowsBody {
    table_name: Arc<str>,
    batch: Arc<EncodedBatch>,
    selected: Option<Vec<usize>>,
}

/// `MutateRowsRequest.table_name`.
const TABLE_NAME_FIELD: u32 = 1;

impl MutateRowsBody {
    fn encoded_len(&self) -> usize {
        let entries = match &self.selected {
            None => self.batch.bytes.len(),
            Some(selected) => selected.iter().map(|&i| self.batch.wire(i).len()).sum(),
        };
        let name = self.table_name.len();
        prost::encoding::key_len(TABLE_NAME_FIELD)
            + prost::encoding::encoded_len_varint(name as u64)
            + name
            + entries
    }

    fn encode(&self, dst: &mut impl bytes::BufMut) {
        prost::encoding::encode_key(
            TABLE_NAME_FIELD,
            prost::encoding::WireType::LengthDelimited,
            dst,
        );
        prost::encoding::encode_varint(self.table_name.len() as u64, dst);
        dst.put_slice(self.table_name.as_bytes());
        match &self.selected {
            None => dst.put_slice(&self.batch.bytes),
            Some(selected) => {
                for &i in selected {
                    dst.put_slice(self.batch.wire(i));
                }
            }
        }
    }
}

/// Pre-encoded `MutateRowsRequest` out, prost-decoded responses in.
struct MutateRowsCodec;

impl Codec for MutateRowsCodec {
    type Encode = MutateRowsBody;
    type Decode = MutateRowsResponse;
    type Encoder = BodyEncoder;
    type Decoder = ProstDecoder<MutateRowsResponse>;

    fn encoder(&mut self) -> Self::Encoder {
        BodyEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder(PhantomData)
    }
}

struct BodyEncoder;

impl Encoder for BodyEncoder {
    type Item = MutateRowsBody;
    type Error = tonic::Status;

    fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
        dst.reserve(item.encoded_len());
        item.encode(dst);
        Ok(())
    }
}

/// Requests of type `E` and responses of type `D`, both through prost.
struct ProstCodec<E, D>(PhantomData<fn(E) -> D>);

impl<E, D> Default for ProstCodec<E, D> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<E, D> Codec for ProstCodec<E, D>
where
    E: Message + Send + 'static,
    D: Message + Default + Send + 'static,
{
    type Encode = E;
    type Decode = D;
    type Encoder = ProstEncoder<E>;
    type Decoder = ProstDecoder<D>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder(PhantomData)
    }
}

/// A request message encoded by prost.
pub(crate) struct ProstEncoder<T>(PhantomData<fn(T)>);

impl<T> Default for ProstEncoder<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T: Message> Encoder for ProstEncoder<T> {
    type Item = T;
    type Error = tonic::Status;

    fn encode(&mut self, item: T, dst: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
        // `EncodeBuf` grows as needed, so prost's only error (no room) cannot happen.
        item.encode(dst)
            .map_err(|e| tonic::Status::internal(format!("unencodable request: {e}")))
    }
}

/// A response message decoded by prost.
pub(crate) struct ProstDecoder<T>(PhantomData<fn() -> T>);

impl<T: Message + Default> Decoder for ProstDecoder<T> {
    type Item = T;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<T>, Self::Error> {
        T::decode(src)
            .map(Some)
            .map_err(|e| tonic::Status::internal(format!("undecodable response: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigtable_rs::google::bigtable::v2::{mutation, MutateRowsRequest, Mutation};

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
        let body = MutateRowsBody {
            table_name: "projects/p/instances/i/tables/t".into(),
            batch: batch(&entries),
            selected: None,
        };
        let expected = MutateRowsRequest {
            table_name: "projects/p/instances/i/tables/t".into(),
            entries: entries.clone(),
            ..MutateRowsRequest::default()
        };
        assert_eq!(body_bytes(&body), expected.encode_to_vec());
    }

    #[test]
    fn a_retry_body_holds_only_the_selected_entries() {
        let entries: Vec<Entry> = (0..10).map(|i| entry(&format!("k{i}"), b"v")).collect();
        let body = MutateRowsBody {
            table_name: "t".into(),
            batch: batch(&entries),
            selected: Some(vec![1, 4, 9]),
        };
        let decoded = MutateRowsRequest::decode(body_bytes(&body).as_slice()).unwrap();
        assert_eq!(decoded.table_name, "t");
        assert_eq!(
            decoded.entries,
            vec![entries[1].clone(), entries[4].clone(), entries[9].clone()]
        );
    }

    /// Hands out one token and records the scopes asked for.
    #[derive(Default)]
    struct FixedToken(std::sync::Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl gcp_auth::TokenProvider for FixedToken {
        async fn token(&self, scopes: &[&str]) -> Result<Arc<gcp_auth::Token>, gcp_auth::Error> {
            self.0
                .lock()
                .unwrap()
                .extend(scopes.iter().map(|s| (*s).to_owned()));
            let token = r#"{"access_token": "t0ken", "expires_in": 3600}"#;
            Ok(Arc::new(serde_json::from_str(token).unwrap()))
        }

        async fn project_id(&self) -> Result<Arc<str>, gcp_auth::Error> {
            Ok("p".into())
        }
    }

    #[tokio::test]
    async fn a_cloud_request_carries_token_routing_and_deadline() {
        let tokens = Arc::new(FixedToken::default());
        let channel = DataChannel {
            channel: Endpoint::from_static("http://127.0.0.1:9").connect_lazy(),
            tokens: Some(tokens.clone()),
        };
        let table = "projects/p/instances/i/tables/t";
        let request = channel
            .request((), table, Some(Duration::from_secs(7)))
            .await
            .unwrap();
        let headers = request.metadata().clone().into_headers();
        assert_eq!(headers["authorization"], "Bearer t0ken");
        assert_eq!(
            headers["x-goog-request-params"],
            routing_header(table).as_str()
        );
        assert_eq!(headers["grpc-timeout"], "7000000u");
        assert_eq!(*tokens.0.lock().unwrap(), [DATA_SCOPE]);

        let emulator = DataChannel {
            tokens: None,
            ..channel
        };
        let request = emulator.request((), table, None).await.unwrap();
        assert!(request.metadata().get("authorization").is_none());
        assert!(request.metadata().get("grpc-timeout").is_none());
    }

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
