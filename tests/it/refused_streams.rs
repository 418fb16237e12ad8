//! A request the server refused before processing it is not applied, and
//! never reported as an unknown outcome (issue 41): HTTP/2 guarantees that
//! a stream reset with `REFUSED_STREAM`, or above the last stream id of a
//! `GOAWAY`, was not processed. A hand-written HTTP/2 server (raw frames,
//! HPACK literals) refuses the first requests as scripted, then answers.
//! Neither the emulator nor hyper's server can be made to refuse a stream
//! on cue.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use bigtable_ttl::data::{Mutation, RawTable};
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{Connection, Error};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one request.
#[derive(Debug, Clone, Copy)]
enum Act {
    /// `RST_STREAM REFUSED_STREAM` on its stream.
    Refuse,
    /// `GOAWAY` whose last stream id is below the request's, then the
    /// connection is closed.
    GoAway,
    /// Answer `OK` with this protobuf body (`CheckAndMutateRowResponse`,
    /// `MutateRowResponse`).
    Answer(&'static [u8]),
}

const MATCHED: &[u8] = &[0x08, 0x01];
const EMPTY: &[u8] = &[];

struct Script {
    acts: Mutex<VecDeque<Act>>,
    /// Requests received, in all.
    requests: Mutex<u32>,
}

/// A loopback server acting out `acts`, one per request (then answering
/// with an empty `OK`).
async fn server(acts: &[Act]) -> (String, Arc<Script>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let script = Arc::new(Script {
        acts: Mutex::new(acts.iter().copied().collect()),
        requests: Mutex::new(0),
    });
    let shared = script.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(connection(socket, shared.clone()));
        }
    });
    (host, script)
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK literal header field without indexing, new name, no Huffman.
fn literal(block: &mut Vec<u8>, name: &str, value: &str) {
    block.push(0);
    block.push(u8::try_from(name.len()).unwrap());
    block.extend_from_slice(name.as_bytes());
    block.push(u8::try_from(value.len()).unwrap());
    block.extend_from_slice(value.as_bytes());
}

fn answer(stream: u32, body: &[u8]) -> Vec<u8> {
    const END_STREAM: u8 = 0x1;
    const END_HEADERS: u8 = 0x4;
    // `:status: 200` is entry 8 of HPACK's static table.
    let mut head = vec![0x88];
    literal(&mut head, "content-type", "application/grpc");
    let mut message = vec![0];
    message.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    message.extend_from_slice(body);
    let mut trailers = Vec::new();
    literal(&mut trailers, "grpc-status", "0");
    let mut out = frame(1, END_HEADERS, stream, &head);
    out.extend(frame(0, 0, stream, &message));
    out.extend(frame(1, END_HEADERS | END_STREAM, stream, &trailers));
    out
}

async fn connection(mut socket: TcpStream, script: Arc<Script>) {
    let mut preface = [0u8; 24];
    if socket.read_exact(&mut preface).await.is_err() {
        return;
    }
    let _ = socket.write_all(&frame(4, 0, 0, &[])).await;
    // Requests whose answer waits for the end of their body.
    let mut pending: Vec<(u32, &'static [u8])> = Vec::new();
    loop {
        let mut header = [0u8; 9];
        if socket.read_exact(&mut header).await.is_err() {
            return;
        }
        let len =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        let (kind, flags) = (header[3], header[4]);
        let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; len];
        if socket.read_exact(&mut payload).await.is_err() {
            return;
        }
        let end_stream = flags & 0x1 != 0;
        let out = match kind {
            // SETTINGS: acknowledged.
            4 if flags & 0x1 == 0 => frame(4, 0x1, 0, &[]),
            // PING: answered.
            6 if flags & 0x1 == 0 => frame(6, 0x1, 0, &payload),
            // HEADERS: a request.
            1 => {
                *script.requests.lock().unwrap() += 1;
                let act = script
                    .acts
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or(Act::Answer(EMPTY));
                match act {
                    // REFUSED_STREAM is 0x7.
                    Act::Refuse => frame(3, 0, stream, &7u32.to_be_bytes()),
                    Act::GoAway => {
                        let mut goaway = stream.saturating_sub(2).to_be_bytes().to_vec();
                        goaway.extend_from_slice(&0u32.to_be_bytes());
                        let _ = socket.write_all(&frame(7, 0, 0, &goaway)).await;
                        let _ = socket.flush().await;
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        return;
                    }
                    Act::Answer(body) if end_stream => answer(stream, body),
                    Act::Answer(body) => {
                        pending.push((stream, body));
                        Vec::new()
                    }
                }
            }
            // DATA: the answer once the body ends.
            0 if end_stream => match pending.iter().position(|(s, _)| *s == stream) {
                Some(i) => answer(stream, pending.remove(i).1),
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        if !out.is_empty() && socket.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn raw(host: &str, attempts: u32) -> RawTable {
    let conn = Connection::emulator(host, "p", "i").unwrap();
    RawTable::new(&conn, "t").with_write_retry(
        RetryPolicy::default()
            .with_max_attempts(attempts)
            .with_initial_delay(std::time::Duration::from_millis(1)),
    )
}

/// A `SetCell` at the server's time: not idempotent, sent once.
fn server_time_set() -> Vec<Mutation> {
    vec![Mutation::set_cell("f", b"q".to_vec(), -1, b"v".to_vec())]
}

/// A conditional write whose stream is refused, or falls past a
/// `GOAWAY`'s last stream, is sent again (it was not applied), and the
/// answer that follows is the call's.
#[tokio::test]
async fn a_refused_conditional_write_is_sent_again_and_answered() {
    for acts in [
        vec![Act::Refuse, Act::Answer(MATCHED)],
        vec![Act::GoAway, Act::Answer(MATCHED)],
        vec![Act::Refuse, Act::GoAway, Act::Answer(MATCHED)],
    ] {
        let (host, script) = server(&acts).await;
        let matched = raw(&host, 1)
            .check_and_mutate_row("k", None, server_time_set(), Vec::new())
            .await;
        assert!(matches!(matched, Ok(true)), "{acts:?}: {matched:?}");
        assert_eq!(
            *script.requests.lock().unwrap(),
            u32::try_from(acts.len()).unwrap()
        );
    }
}

/// A server-time `SetCell` (sent once for want of idempotence) whose
/// stream is refused is sent again, not reported as an unknown outcome.
#[tokio::test]
async fn a_refused_server_time_write_is_sent_again() {
    let (host, script) = server(&[Act::Refuse, Act::Answer(EMPTY)]).await;
    let written = raw(&host, 1).mutate_row("k", server_time_set()).await;
    assert!(written.is_ok(), "{written:?}");
    assert_eq!(*script.requests.lock().unwrap(), 2);
}

/// Refused every time: a refusal, never `OutcomeUnknown`, saying it was
/// not applied; where the retry policy allows, sent again after the
/// transparent sends.
#[tokio::test]
async fn a_write_refused_every_time_is_not_applied_and_says_so() {
    let refusals = [Act::Refuse; 12];
    let (host, _) = server(&refusals).await;
    let err = raw(&host, 1)
        .check_and_mutate_row("k", None, server_time_set(), Vec::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Server { .. }) && !err.is_outcome_unknown(),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("refused by Bigtable before processing, not applied"),
        "{err}"
    );
    // Three refused sends, then the policy's second attempt is answered.
    let (host, script) = server(&[Act::Refuse, Act::Refuse, Act::Refuse, Act::Answer(EMPTY)]).await;
    let written = raw(&host, 2).mutate_row("k", server_time_set()).await;
    assert!(written.is_ok(), "{written:?}");
    assert_eq!(*script.requests.lock().unwrap(), 4);
}
