//! The codec of unary answers: prost's, with a decoding failure marked as
//! such ([`crate::wire::status::undecodable`]). A unary call whose answer
//! arrived but does not decode was applied by the server: for a call that
//! is never re-sent (a conditional write, an increment) that is an unknown
//! outcome, not an error the server decided on.

use std::marker::PhantomData;

use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

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
    type Encode = Req;
    type Decode = Resp;
    type Encoder = ProstEncoder<Req>;
    type Decoder = AnswerDecoder<Resp>;

    fn encoder(&mut self) -> Self::Encoder {
        self.inner.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        AnswerDecoder(self.inner.decoder())
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
