//! Response bodies held to gRPC's framing: every message whole before the
//! stream ends.
//!
//! tonic 0.14's decoder checks for a message left incomplete only when the
//! body ends without trailers; a server (or a proxy) that sends part of a
//! message, then trailers with `grpc-status: 0`, has its answer taken as
//! complete and the rest silently dropped: a read returns fewer rows, and
//! `Ok`. [`Checked`] wraps the data channel so that such a body ends with
//! an `INTERNAL` error instead, as gRPC's Go and Java implementations
//! report a stream that ends mid-frame, whatever tonic does.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf as _, Bytes};
use futures_util::TryFutureExt as _;
use http_body::{Body, Frame, SizeHint};

/// The gRPC frame header: a compression flag, then the length (big-endian).
const HEADER_BYTES: usize = 5;

/// A service whose response bodies are [`Framed`].
#[derive(Debug, Clone)]
pub(crate) struct Checked<S>(pub(crate) S);

type Wrap<B> = fn(http::Response<B>) -> http::Response<Framed<B>>;

impl<S, ReqBody, B> tower_service::Service<http::Request<ReqBody>> for Checked<S>
where
    S: tower_service::Service<http::Request<ReqBody>, Response = http::Response<B>>,
{
    type Response = http::Response<Framed<B>>;
    type Error = S::Error;
    type Future = futures_util::future::MapOk<S::Future, Wrap<B>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let wrap: Wrap<B> = |response| response.map(Framed::new);
        self.0.call(request).map_ok(wrap)
    }
}

/// A response body passed through as it is, its gRPC frames counted: one
/// that ends (trailers, or no more data) inside a frame is an error.
#[derive(Debug)]
pub(crate) struct Framed<B> {
    inner: B,
    frames: Frames,
}

impl<B> Framed<B> {
    fn new(inner: B) -> Self {
        Self {
            inner,
            frames: Frames::default(),
        }
    }
}

/// Where a stream of gRPC frames stands.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Frames {
    /// Header bytes of the next frame received so far.
    header: [u8; HEADER_BYTES],
    header_len: usize,
    /// The length the frame under way announced, and what is still due.
    announced: usize,
    due: usize,
}

impl Frames {
    /// Count `data`, the next bytes of the body.
    pub(crate) fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.due > 0 {
                let n = self.due.min(data.len());
                self.due -= n;
                data = &data[n..];
                continue;
            }
            let n = (HEADER_BYTES - self.header_len).min(data.len());
            self.header[self.header_len..self.header_len + n].copy_from_slice(&data[..n]);
            self.header_len += n;
            data = &data[n..];
            if self.header_len == HEADER_BYTES {
                let mut len = [0; 4];
                len.copy_from_slice(&self.header[1..]);
                self.announced = u32::from_be_bytes(len) as usize;
                self.due = self.announced;
                self.header_len = 0;
            }
        }
    }

    /// Why the body may not end here: a frame begun and not finished.
    pub(crate) fn cut_short(&self) -> Option<String> {
        if self.header_len > 0 {
            Some(format!(
                "the response was cut short: it ended inside a message header ({} of {HEADER_BYTES} bytes)",
                self.header_len
            ))
        } else if self.due > 0 {
            Some(format!(
                "the response was cut short: a message announced {} bytes and {} came",
                self.announced,
                self.announced - self.due
            ))
        } else {
            None
        }
    }
}

impl<B> Body for Framed<B>
where
    B: Body<Data = Bytes, Error = tonic::Status> + Unpin,
{
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        let frame = std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx));
        let ending = match &frame {
            Some(Ok(frame)) => match frame.data_ref() {
                Some(data) => {
                    this.frames.feed(data.chunk());
                    false
                }
                None => frame.is_trailers(),
            },
            Some(Err(_)) => false,
            None => true,
        };
        if ending {
            if let Some(why) = this.frames.cut_short() {
                // Once: the next poll sees the body as it stands.
                this.frames = Frames::default();
                return Poll::Ready(Some(Err(tonic::Status::internal(why))));
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(len: u32, sent: usize) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(&len.to_be_bytes());
        out.extend(std::iter::repeat_n(7, sent));
        out
    }

    #[test]
    fn a_frame_cut_short_is_seen_wherever_the_body_splits() {
        let mut body = frame(3, 3);
        body.extend(frame(0, 0));
        body.extend(frame(1000, 10));
        for split in 0..=body.len() {
            let mut frames = Frames::default();
            frames.feed(&body[..split]);
            frames.feed(&body[split..]);
            let why = frames.cut_short().unwrap();
            assert!(why.contains("1000 bytes and 10 came"), "{why}");
        }
        let mut whole = Frames::default();
        whole.feed(&body[..body.len() - 10 - 5]);
        assert_eq!(whole.cut_short(), None);
        whole.feed(&body[body.len() - 15..body.len() - 12]);
        assert!(whole.cut_short().unwrap().contains("header"));
    }

    proptest! {
        #[test]
        fn whole_frames_in_any_pieces_are_complete(
            lens in proptest::collection::vec(0u32..300, 0..8),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let body: Vec<u8> = lens.iter().flat_map(|&l| frame(l, l as usize)).collect();
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
            at.sort_unstable();
            let mut frames = Frames::default();
            let mut start = 0;
            for cut in at.into_iter().chain([body.len()]) {
                frames.feed(&body[start..cut]);
                start = cut;
            }
            prop_assert_eq!(frames.cut_short(), None);
        }
    }
}
