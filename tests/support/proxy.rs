//! A TCP proxy on loopback (127.0.0.1 only) between the client and the
//! emulator, for fault tests: it forwards bytes both ways and, when armed,
//! resets connections at random points, swallows the answer to a request
//! the emulator has already applied ("the response was lost"), possibly to
//! the n-th request exactly and with every later connection refused for a
//! while, or stops forwarding the server's answers while keeping the
//! connection open (a server that never answers, a stream that stalls).
//!
//! Faults are bounded in count and in time, and drawn from a seeded RNG so a
//! failing run can be replayed with its seed.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::loopback;

/// What the proxy does to the connections it accepts from now on.
#[derive(Debug, Clone, Copy)]
pub enum Faults {
    /// Forward everything.
    None,
    /// Reset each connection after a random number of bytes (both ways
    /// together) drawn uniformly from `min_bytes..max_bytes`, at most
    /// `max_resets` times in all and only until `until`.
    Reset {
        seed: u64,
        max_resets: usize,
        until: Instant,
        min_bytes: u64,
        max_bytes: u64,
    },
    /// Once a connection has carried more than `request_bytes` from the
    /// client, stop forwarding the server's answers, wait `hold` (the
    /// emulator applies the request meanwhile), then reset the connection.
    /// At most `times` times.
    LoseResponse {
        request_bytes: u64,
        hold: Duration,
        times: usize,
    },
    /// Once the server has sent more than `after_bytes` on a connection,
    /// stop forwarding what it sends, for good, and keep the connection
    /// open (what the client sends still goes through): with 0, a server
    /// that takes requests and never answers; with more, a stream that
    /// stalls in the middle.
    Stall { after_bytes: u64 },
    /// Hold what the client sends for `by` before forwarding it (answers
    /// pass at once): requests that reach the server late, after their
    /// deadline.
    Delay { by: Duration },
    /// Hold each chunk the client sends for a time drawn from `up`, and
    /// each chunk the server sends for one drawn from `down` (uniformly,
    /// seeded by `seed`), each direction keeping its order: a slow or
    /// congested link. `down: (d, d)` alone: every answer `d` late.
    Delays {
        up: (Duration, Duration),
        down: (Duration, Duration),
        seed: u64,
    },
    /// Faults drawn for each new connection (seeded by `seed` and the
    /// connection's number): with probability one half, each chunk held
    /// up to `max_delay` each way; then, after a number of bytes drawn in
    /// `cut_after` (both ways together), the connection reset, its streams
    /// with it, or (`lose_percent` of the time) the server's answers
    /// swallowed for `hold` first, the emulator having applied what it
    /// was sent. Each connection a client makes afresh draws again.
    Chaos {
        seed: u64,
        max_delay: Duration,
        cut_after: (u64, u64),
        lose_percent: u64,
        hold: Duration,
    },
    /// Lose the answer to the `nth` request sent from now on (1: the next
    /// one), counted over every connection by the HTTP/2 `HEADERS` frames
    /// clients send (one per gRPC request): stop forwarding the server's
    /// answers on its connection, wait `hold` (the emulator applies the
    /// request meanwhile), reset the connection; then reset every new
    /// connection for `refuse_for`, so that the requests that follow (a
    /// read that would settle what happened) fail too. Once.
    LoseNthThenRefuse {
        nth: u64,
        hold: Duration,
        refuse_for: Duration,
    },
}

struct Shared {
    upstream: Mutex<SocketAddr>,
    faults: Mutex<Faults>,
    rng: Mutex<u64>,
    resets: AtomicUsize,
    connections: AtomicU64,
    /// Bytes forwarded from clients to the server, over all connections.
    client_bytes: AtomicU64,
    /// Bytes the server sent clients, over all connections.
    server_bytes: AtomicU64,
    /// Bumped by every `arm`: open connections then plan again.
    generation: AtomicU64,
    /// Requests (HTTP/2 `HEADERS` frames from clients) since the last `arm`.
    requests: AtomicU64,
    /// New connections are reset until then.
    refuse_until: Mutex<Option<Instant>>,
}

/// The proxy; it stops with the test's runtime.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Proxy {
    /// A proxy on a free loopback port forwarding to `upstream`
    /// (`HOST:PORT`, loopback). Call inside a tokio runtime.
    pub async fn start(upstream: &str) -> Self {
        let upstream = loopback::upstream(upstream, "proxy");
        let (listener, addr) = loopback::listen().await;
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            faults: Mutex::new(Faults::None),
            rng: Mutex::new(0),
            resets: AtomicUsize::new(0),
            connections: AtomicU64::new(0),
            client_bytes: AtomicU64::new(0),
            server_bytes: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            refuse_until: Mutex::new(None),
        });
        let accept = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let shared = accept.clone();
                tokio::spawn(async move { shared.serve(client).await });
            }
        });
        Self { addr, shared }
    }

    /// `127.0.0.1:PORT`, for `Connection::emulator`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Apply `faults` from now on, to open connections too (their byte
    /// counts start again), and seed the RNG of a `Reset`; the reset count
    /// starts again at zero.
    pub fn arm(&self, faults: Faults) {
        if let Faults::Reset { seed, .. } = faults {
            *self.shared.rng.lock().unwrap() = seed;
        }
        self.shared.resets.store(0, Ordering::SeqCst);
        self.shared.requests.store(0, Ordering::SeqCst);
        *self.shared.refuse_until.lock().unwrap() = None;
        *self.shared.faults.lock().unwrap() = faults;
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Forward new connections to `upstream` from now on.
    #[allow(dead_code)]
    pub fn point_to(&self, upstream: &str) {
        *self.shared.upstream.lock().unwrap() = upstream.parse().expect("HOST:PORT");
    }

    /// Connections reset (or cut after a swallowed answer) since the last `arm`.
    pub fn resets(&self) -> usize {
        self.shared.resets.load(Ordering::SeqCst)
    }

    /// Bytes clients have sent through the proxy, in all: to size a fault
    /// to one request of a sequence.
    #[allow(dead_code)]
    pub fn client_bytes(&self) -> u64 {
        self.shared.client_bytes.load(Ordering::SeqCst)
    }

    /// Bytes the server has sent clients through the proxy, in all (not
    /// counted on connections under `Delay`, `Delays` or `Chaos`): what a
    /// read received.
    #[allow(dead_code)]
    pub fn server_bytes(&self) -> u64 {
        self.shared.server_bytes.load(Ordering::SeqCst)
    }

    /// Connections accepted in all.
    #[allow(dead_code)]
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

/// `SplitMix64`: small, seedable, good enough to pick fault points.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What to do to one connection.
enum Plan {
    Pass,
    ResetAfter(u64),
    LoseAfter(u64, Duration),
    StallAfter(u64),
    Delay(Duration),
    Delays((Duration, Duration), (Duration, Duration), u64),
    Chaos(ChaosPlan),
    LoseNth(u64, Duration, Duration),
}

/// What [`Faults::Chaos`] drew for one connection.
#[derive(Debug, Clone, Copy)]
struct ChaosPlan {
    delay: Duration,
    seed: u64,
    cut_after: u64,
    lose: bool,
    hold: Duration,
}

impl Shared {
    fn plan(&self) -> Plan {
        match *self.faults.lock().unwrap() {
            Faults::None => Plan::Pass,
            Faults::Reset {
                max_resets,
                until,
                min_bytes,
                max_bytes,
                ..
            } => {
                if Instant::now() >= until || self.resets.load(Ordering::SeqCst) >= max_resets {
                    return Plan::Pass;
                }
                let mut rng = self.rng.lock().unwrap();
                let span = max_bytes.saturating_sub(min_bytes).max(1);
                Plan::ResetAfter(min_bytes + next(&mut rng) % span)
            }
            Faults::LoseResponse {
                request_bytes,
                hold,
                times,
            } => {
                if self.resets.load(Ordering::SeqCst) >= times {
                    Plan::Pass
                } else {
                    Plan::LoseAfter(request_bytes, hold)
                }
            }
            Faults::Stall { after_bytes } => Plan::StallAfter(after_bytes),
            Faults::Delay { by } => Plan::Delay(by),
            Faults::Chaos {
                seed,
                max_delay,
                cut_after: (min, max),
                lose_percent,
                hold,
            } => {
                let n = self.connections.load(Ordering::SeqCst);
                let mut rng = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let delay = if next(&mut rng).is_multiple_of(2) {
                    max_delay
                } else {
                    Duration::ZERO
                };
                let cut_after = min + next(&mut rng) % max.saturating_sub(min).max(1);
                let lose = next(&mut rng) % 100 < lose_percent;
                Plan::Chaos(ChaosPlan {
                    delay,
                    seed: next(&mut rng),
                    cut_after,
                    lose,
                    hold,
                })
            }
            Faults::Delays { up, down, seed } => {
                let n = self.connections.load(Ordering::SeqCst);
                Plan::Delays(up, down, seed ^ n.wrapping_mul(0x9E37_79B9))
            }
            Faults::LoseNthThenRefuse {
                nth,
                hold,
                refuse_for,
            } => Plan::LoseNth(nth, hold, refuse_for),
        }
    }

    /// Whether one more fault is allowed now (and count it).
    fn take_fault(&self) -> bool {
        let (max, until) = match *self.faults.lock().unwrap() {
            Faults::None
            | Faults::Stall { .. }
            | Faults::Delay { .. }
            | Faults::Delays { .. }
            | Faults::Chaos { .. }
            | Faults::LoseNthThenRefuse { .. } => return false,
            Faults::Reset {
                max_resets, until, ..
            } => (max_resets, Some(until)),
            Faults::LoseResponse { times, .. } => (times, None),
        };
        if until.is_some_and(|u| Instant::now() >= u) {
            return false;
        }
        self.resets
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Whether the one loss of a `LoseNthThenRefuse` is still to come (and
    /// count it).
    fn take_nth(&self) -> bool {
        self.resets
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    async fn serve(&self, mut client: TcpStream) {
        self.connections.fetch_add(1, Ordering::SeqCst);
        if self
            .refuse_until
            .lock()
            .unwrap()
            .is_some_and(|until| Instant::now() < until)
        {
            let _ = client.set_zero_linger();
            return;
        }
        let upstream = *self.upstream.lock().unwrap();
        let Ok(mut server) = TcpStream::connect(upstream).await else {
            // Nothing listens (the emulator is down): refuse by resetting.
            let _ = client.set_zero_linger();
            return;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let mut generation = self.generation.load(Ordering::SeqCst);
        let mut plan = self.plan();
        if let Plan::Delay(by) = plan {
            delay_requests(client, server, by).await;
            return;
        }
        if let Plan::Delays(up, down, seed) = plan {
            delay_both(client, server, up, down, seed).await;
            return;
        }
        if let Plan::Chaos(chaos) = plan {
            if chaos_connection(client, server, chaos).await {
                self.resets.fetch_add(1, Ordering::SeqCst);
            }
            return;
        }
        let (mut up, mut down) = (0u64, 0u64);
        // Bytes of the last read (client to server, server to client).
        let mut last = (0u64, 0u64);
        let (mut client_open, mut server_open) = (true, true);
        let mut swallowing: Option<Instant> = None;
        let mut requests = RequestCounter::default();
        let (mut a, mut b) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
        while client_open || server_open {
            let hold_until =
                swallowing.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                n = client.read(&mut a), if client_open => match n {
                    Ok(0) | Err(_) => { client_open = false; let _ = server.shutdown().await; }
                    Ok(n) => {
                        // Bytes read after `arm` count under its faults.
                        let now_generation = self.generation.load(Ordering::SeqCst);
                        if now_generation != generation {
                            generation = now_generation;
                            plan = self.plan();
                            (up, down) = (0, 0);
                        }
                        up += n as u64;
                        self.client_bytes.fetch_add(n as u64, Ordering::SeqCst);
                        last = (n as u64, 0);
                        let sent = requests.feed(&a[..n]);
                        if sent > 0 {
                            let before = self.requests.fetch_add(sent, Ordering::SeqCst);
                            if let Plan::LoseNth(nth, hold, refuse_for) = plan {
                                if swallowing.is_none() && before < nth && nth <= before + sent && self.take_nth() {
                                    let now = Instant::now();
                                    swallowing = Some(now + hold);
                                    *self.refuse_until.lock().unwrap() = Some(now + hold + refuse_for);
                                }
                            }
                        }
                        if server.write_all(&a[..n]).await.is_err() { break; }
                    }
                },
                n = server.read(&mut b), if server_open => match n {
                    Ok(0) | Err(_) => { server_open = false; let _ = client.shutdown().await; }
                    Ok(n) => {
                        let stalled = matches!(plan, Plan::StallAfter(limit) if down >= limit);
                        down += n as u64;
                        self.server_bytes.fetch_add(n as u64, Ordering::SeqCst);
                        last = (0, n as u64);
                        if swallowing.is_none() && !stalled && client.write_all(&b[..n]).await.is_err() { break; }
                    }
                },
                () = tokio::time::sleep_until(hold_until.into()), if swallowing.is_some() => {
                    reset(&client, &server);
                    return;
                }
            }
            let now_generation = self.generation.load(Ordering::SeqCst);
            if now_generation != generation {
                generation = now_generation;
                plan = self.plan();
                // What was just read was read after `arm`: it counts (a
                // request on a connection idle since then is the one to hit).
                (up, down) = last;
            }
            match plan {
                Plan::Pass
                | Plan::StallAfter(_)
                | Plan::Delay(_)
                | Plan::Delays(..)
                | Plan::Chaos(_)
                | Plan::LoseNth(..) => {}
                Plan::ResetAfter(limit) => {
                    if up + down >= limit && self.take_fault() {
                        reset(&client, &server);
                        return;
                    }
                }
                Plan::LoseAfter(limit, hold) => {
                    if swallowing.is_none() && up >= limit && self.take_fault() {
                        swallowing = Some(Instant::now() + hold);
                    }
                }
            }
        }
    }
}

/// Counts the requests a client sends on one HTTP/2 connection: its
/// `HEADERS` frames, read from the frame headers after the connection
/// preface (a gRPC client sends no trailers, so each starts a request).
struct RequestCounter {
    /// Bytes of the client's connection preface still to skip.
    preface_left: usize,
    /// The frame header being read.
    header: Vec<u8>,
    /// Bytes of the current frame's payload still to skip.
    payload_left: usize,
}

impl Default for RequestCounter {
    fn default() -> Self {
        Self {
            preface_left: b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".len(),
            header: Vec::with_capacity(9),
            payload_left: 0,
        }
    }
}

impl RequestCounter {
    /// The requests that start in `bytes`, the next bytes the client sent.
    fn feed(&mut self, mut bytes: &[u8]) -> u64 {
        const HEADERS: u8 = 0x1;
        let mut started = 0;
        while !bytes.is_empty() {
            let skip = if self.preface_left > 0 {
                let n = self.preface_left.min(bytes.len());
                self.preface_left -= n;
                n
            } else if self.payload_left > 0 {
                let n = self.payload_left.min(bytes.len());
                self.payload_left -= n;
                n
            } else {
                let n = (9 - self.header.len()).min(bytes.len());
                self.header.extend_from_slice(&bytes[..n]);
                if self.header.len() == 9 {
                    let h = &self.header;
                    self.payload_left =
                        (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                    if h[3] == HEADERS {
                        started += 1;
                    }
                    self.header.clear();
                }
                n
            };
            bytes = &bytes[skip..];
        }
        started
    }
}

/// Close both sockets with a TCP RST (linger zero), as a crashed peer or a
/// middlebox would.
fn reset(client: &TcpStream, server: &TcpStream) {
    let _ = client.set_zero_linger();
    let _ = server.set_zero_linger();
}

/// Forward what the client sends `by` late, each chunk at its own time of
/// arrival plus `by` and in order (a request and what follows it, a
/// cancellation say, keep their spacing), and what the server sends at once.
async fn delay_requests(client: TcpStream, server: TcpStream, by: Duration) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let (queue, mut due) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let upstream = tokio::spawn(async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at.into()).await;
            if server_write.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = server_write.shutdown().await;
    });
    let downstream = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = client_read.read(&mut buf).await {
        if n == 0
            || queue
                .send((Instant::now() + by, buf[..n].to_vec()))
                .is_err()
        {
            break;
        }
    }
    drop(queue);
    let _ = upstream.await;
    downstream.abort();
}

/// Forward both ways, each chunk held for a time drawn from its
/// direction's range, in order.
async fn delay_both(
    client: TcpStream,
    server: TcpStream,
    up: (Duration, Duration),
    down: (Duration, Duration),
    seed: u64,
) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let cut = Arc::new(Cut::default());
    let upstream = tokio::spawn(delayed_pipe(
        client_read,
        server_write,
        up,
        seed,
        cut.clone(),
        false,
    ));
    let downstream = tokio::spawn(delayed_pipe(
        server_read,
        client_write,
        down,
        !seed,
        cut,
        true,
    ));
    let _ = tokio::join!(upstream, downstream);
}

/// What the two pipes of one connection share.
#[derive(Default)]
struct Cut {
    /// Bytes forwarded both ways.
    bytes: AtomicU64,
    /// Past this many bytes (0: never), `passed` is woken.
    limit: AtomicU64,
    passed: tokio::sync::Notify,
    /// The server's answers are swallowed.
    swallow: std::sync::atomic::AtomicBool,
    /// The connection is cut: nothing more is written.
    done: std::sync::atomic::AtomicBool,
}

/// Forward one connection under `plan`; whether it was cut.
async fn chaos_connection(client: TcpStream, server: TcpStream, plan: ChaosPlan) -> bool {
    // Dropping a socket now resets it.
    let _ = client.set_zero_linger();
    let _ = server.set_zero_linger();
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let cut = Arc::new(Cut::default());
    cut.limit.store(plan.cut_after, Ordering::SeqCst);
    let range = (Duration::ZERO, plan.delay);
    let mut upstream = tokio::spawn(delayed_pipe(
        client_read,
        server_write,
        range,
        plan.seed,
        cut.clone(),
        false,
    ));
    let downstream = tokio::spawn(delayed_pipe(
        server_read,
        client_write,
        range,
        !plan.seed,
        cut.clone(),
        true,
    ));
    tokio::select! {
        _ = &mut upstream => {
            let _ = downstream.await;
            false
        }
        () = cut.passed.notified() => {
            if plan.lose {
                cut.swallow.store(true, Ordering::SeqCst);
                tokio::time::sleep(plan.hold).await;
            }
            cut.done.store(true, Ordering::SeqCst);
            upstream.abort();
            downstream.abort();
            true
        }
    }
}

/// Copy `from` to `to`, each chunk `range` late (drawn per chunk), never
/// before the chunk before it.
async fn delayed_pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    (min, max): (Duration, Duration),
    seed: u64,
    cut: Arc<Cut>,
    answers: bool,
) {
    let (queue, mut due) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writing = cut.clone();
    let writer = tokio::spawn(async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at.into()).await;
            if writing.done.load(Ordering::SeqCst) || to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    // The writer ends with the pipe (its socket half dropped: reset).
    let _stop = AbortOnDrop(writer.abort_handle());
    let mut rng = seed;
    let mut last = Instant::now();
    let span = u64::try_from(max.saturating_sub(min).as_micros()).unwrap_or(u64::MAX);
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let total = cut.bytes.fetch_add(n as u64, Ordering::SeqCst) + n as u64;
        let limit = cut.limit.load(Ordering::SeqCst);
        if limit > 0 && total >= limit && total - (n as u64) < limit {
            cut.passed.notify_one();
        }
        if answers && cut.swallow.load(Ordering::SeqCst) {
            continue;
        }
        let extra = if span == 0 {
            0
        } else {
            next(&mut rng) % (span + 1)
        };
        let at = (Instant::now() + min + Duration::from_micros(extra)).max(last);
        last = at;
        if queue.send((at, buf[..n].to_vec())).is_err() {
            break;
        }
    }
    drop(queue);
    let _ = writer.await;
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
