//! The codec of unary answers: prost's, with a decoding failure marked as
//! such ([`crate::wire::status::undecodable`]). A unary call whose answer
//! arrived but does not decode was applied by the server: for a call that
//! is never re-sent (a conditional write, an increment) that is an unknown
//! outcome, not an error the server decided on.
//!
//! The request goes as an `Arc`: a request sent again (see
//! `DataChannel::unary`) shares the message rather than copying it, and the
//! first send copies nothing either (a conditional write's predicate is a
//! tree of boxed filters, whose copy and drop cost more than its encoding).

use std::marker::PhantomData;
use std::sync::Arc;

use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic_prost::{ProstCodec, ProstDecoder};

use crate::wire::status::undecodable;

/// [`ProstCodec`] whose decoding failures say so.
#[derive(Debug)]
pub(crate) struct AnswerCodec<Req, Resp> {
    inner: ProstCodec<Req, Resp>,
    _answer: PhantomData<fn() -> Resp>,
}

impl<Req, Resp> Default for AnswerCodec<Req, Resp> {
    fn default() -> Self {
        Self {
            inner: ProstCodec::default(),
            _answer: PhantomData,
        }
    }
}

impl<Req, Resp> Codec for AnswerCodec<Req, Resp>
where
    Req: prost::Message + Send + 'static,
    Resp: prost::Message + Default + Send + 'static,
{
    type Encode = Arc<Req>;
    type Decode = Resp;
    type Encoder = SharedEncoder<Req>;
    type Decoder = AnswerDecoder<Resp>;

    fn encoder(&mut self) -> Self::Encoder {
        SharedEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        AnswerDecoder(self.inner.decoder())
    }
}

/// Encodes a shared request message as prost does.
#[derive(Debug)]
pub(crate) struct SharedEncoder<Req>(PhantomData<fn(Req)>);

impl<Req: prost::Message> Encoder for SharedEncoder<Req> {
    type Item = Arc<Req>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Arc<Req>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        // The buffer grows as it is written: prost fails only on a full one.
        item.encode(dst)
            .map_err(|e| tonic::Status::internal(format!("encoding the request: {e}")))
    }
}

/// [`ProstDecoder`], its failures marked [`undecodable`].
#[derive(Debug)]
pub(crate) struct AnswerDecoder<Resp>(ProstDecoder<Resp>);

impl<Resp: prost::Message + Default> Decoder for AnswerDecoder<Resp> {
    type Item = Resp;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Resp>, tonic::Status> {
        self.0.decode(src).map_err(|status| undecodable(&status))
    }
}
